// The public names of the hot kernels (kernels.hpp, streaming.hpp), each forwarding to the
// copy compiled for this CPU: attention/isa.hpp says why there are three.
#include "attention/isa.hpp"
#include "attention/kernels.hpp"
#include "attention/streaming.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

namespace attntrace {

// What each copy defines, in its own namespace.
#define ATTNTRACE_HOT_FUNCTIONS                                                                          \
    template <typename T> MatrixT<T> project(const MatrixT<T>&, const MatrixT<T>&);                     \
    template <typename T>                                                                               \
    std::vector<MatrixT<T>> project_filled(MatrixT<T>&, const std::vector<MatrixT<T>>&, const RowFill&, \
                                           const RowsDone<T>&);                                         \
    template <typename T> MatrixT<T> dot_scores(const MatrixT<T>&, const MatrixT<T>&);                  \
    template <typename T> MatrixT<T> scale_scores(const MatrixT<T>&, T);                                \
    BoolMatrix causal_mask(Eigen::Index);                                                               \
    template <typename T> MatrixT<T> apply_mask(const MatrixT<T>&, const BoolMatrix&);                  \
    template <typename T> MatrixT<T> apply_mask(const MatrixT<T>&, const BoolMatrix&, T);               \
    template <typename T> MatrixT<T> row_softmax(const MatrixT<T>&);                                    \
    template <typename T> Eigen::Index row_sum_normalize(const MatrixT<T>&, MatrixT<T>&);               \
    template <typename T> MatrixT<T> weighted_sum(const MatrixT<T>&, const MatrixT<T>&);                \
    template <typename T>                                                                               \
    StreamResult stream_attention(const MatrixT<T>&, const MatrixT<T>&, const MatrixT<T>&, const StreamOptions&); \
    template <typename T>                                                                               \
    std::vector<StreamResult> stream_heads(const std::vector<StreamHead<T>>&, const StreamOptions&);             \
    template <typename T>                                                                               \
    double stream_exp_rate(int);

namespace isa_baseline {
ATTNTRACE_HOT_FUNCTIONS
}

#ifdef ATTNTRACE_HAS_COPIES
namespace isa_avx2 {
ATTNTRACE_HOT_FUNCTIONS
}
#ifndef ATTNTRACE_NO_AVX512_COPY
namespace isa_avx512 {
ATTNTRACE_HOT_FUNCTIONS
}
constexpr bool avx512_copy = true;
#else
constexpr bool avx512_copy = false;  // a sanitizer build on a CPU without AVX-512 (CMakeLists.txt)
#endif

namespace {
enum class Isa { baseline, avx2, avx512 };

bool has_avx2() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
bool has_avx512() {
    return has_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
}

// What ATTNTRACE_KERNELS asks for: a copy no wider than this (for comparing them).
std::optional<Isa> requested() {
    const char* asked = std::getenv("ATTNTRACE_KERNELS");
    if (!asked) return std::nullopt;
    if (std::strcmp(asked, "baseline") == 0) return Isa::baseline;
    if (std::strcmp(asked, "avx2") == 0) return Isa::avx2;
    if (std::strcmp(asked, "avx512") == 0) return Isa::avx512;
    return std::nullopt;
}

// The widest copy this CPU can run, of those the build holds.
Isa best_copy() { return avx512_copy && has_avx512() ? Isa::avx512 : has_avx2() ? Isa::avx2 : Isa::baseline; }

Isa chosen() {
    static const Isa isa = [] {
        const Isa best = best_copy();
        const auto asked = requested();
        return asked && *asked < best ? *asked : best;
    }();
    return isa;
}
}  // namespace

const char* kernel_isa() {
    switch (chosen()) {
    case Isa::avx512: return "avx512";
    case Isa::avx2: return "avx2";
    case Isa::baseline: break;
    }
    return "baseline";
}

std::string kernel_description() {
    const Isa best = best_copy();
    const char* names[] = {"any x86-64 CPU", "AVX2 with FMA", "AVX-512"};
    const std::string copy = names[static_cast<int>(chosen())];
    if (chosen() != best)
        return fmt::format("{}, as ATTNTRACE_KERNELS={} asks (this CPU could run {})", copy, kernel_isa(),
                           names[static_cast<int>(best)]);
    const char* why = best == Isa::avx512                ? "the widest this CPU has"
                      : best == Isa::avx2 && !has_avx512() ? "this CPU lacks AVX-512"
                      : best == Isa::avx2                  ? "the widest copy this build holds"
                                                           : "this CPU lacks AVX2 or FMA";
    return fmt::format("{}, chosen at run time: {} (the build holds kernels for any x86-64, AVX2{})", copy, why,
                       avx512_copy ? " and AVX-512" : "");
}

#ifndef ATTNTRACE_NO_AVX512_COPY
#define ATTNTRACE_CALL(call)                                                 \
    (chosen() == Isa::avx512 ? isa_avx512::call                              \
     : chosen() == Isa::avx2 ? isa_avx2::call                                \
                             : isa_baseline::call)
#else
#define ATTNTRACE_CALL(call) (chosen() == Isa::avx2 ? isa_avx2::call : isa_baseline::call)
#endif
#else
const char* kernel_isa() { return "baseline"; }
std::string kernel_description() {
#if defined(ATTNTRACE_NATIVE_BUILD)
    return "one copy, for the CPU of the machine that built it (-march=native)";
#else
    return "one copy, for the compiler's default target";
#endif
}
#define ATTNTRACE_CALL(call) isa_baseline::call
#endif

template <typename T>
MatrixT<T> project(const MatrixT<T>& x, const MatrixT<T>& w) {
    return ATTNTRACE_CALL(project<T>(x, w));
}
template <typename T>
std::vector<MatrixT<T>> project_filled(MatrixT<T>& x, const std::vector<MatrixT<T>>& w, const RowFill& fill,
                                       const RowsDone<T>& done) {
    return ATTNTRACE_CALL(project_filled<T>(x, w, fill, done));
}
template <typename T>
MatrixT<T> dot_scores(const MatrixT<T>& q, const MatrixT<T>& k) {
    return ATTNTRACE_CALL(dot_scores<T>(q, k));
}
template <typename T>
MatrixT<T> scale_scores(const MatrixT<T>& scores, T divisor) {
    return ATTNTRACE_CALL(scale_scores<T>(scores, divisor));
}
BoolMatrix causal_mask(Eigen::Index n) { return ATTNTRACE_CALL(causal_mask(n)); }
template <typename T>
MatrixT<T> apply_mask(const MatrixT<T>& scores, const BoolMatrix& allowed) {
    return ATTNTRACE_CALL(apply_mask<T>(scores, allowed));
}
template <typename T>
MatrixT<T> apply_mask(const MatrixT<T>& scores, const BoolMatrix& allowed, T fill) {
    return ATTNTRACE_CALL(apply_mask<T>(scores, allowed, fill));
}
template <typename T>
MatrixT<T> row_softmax(const MatrixT<T>& scores) {
    return ATTNTRACE_CALL(row_softmax<T>(scores));
}
template <typename T>
Eigen::Index row_sum_normalize(const MatrixT<T>& scores, MatrixT<T>& weights) {
    return ATTNTRACE_CALL(row_sum_normalize<T>(scores, weights));
}
template <typename T>
MatrixT<T> weighted_sum(const MatrixT<T>& weights, const MatrixT<T>& values) {
    return ATTNTRACE_CALL(weighted_sum<T>(weights, values));
}
template <typename T>
StreamResult stream_attention(const MatrixT<T>& q, const MatrixT<T>& k, const MatrixT<T>& v, const StreamOptions& options) {
    return ATTNTRACE_CALL(stream_attention<T>(q, k, v, options));
}
template <typename T>
std::vector<StreamResult> stream_heads(const std::vector<StreamHead<T>>& heads, const StreamOptions& options) {
    return ATTNTRACE_CALL(stream_heads<T>(heads, options));
}

template <typename T>
double stream_exp_rate(int threads) {
    return ATTNTRACE_CALL(stream_exp_rate<T>(threads));
}

#define ATTNTRACE_INSTANTIATE(T)                                                                         \
    template MatrixT<T> project<T>(const MatrixT<T>&, const MatrixT<T>&);                               \
    template std::vector<MatrixT<T>> project_filled<T>(MatrixT<T>&, const std::vector<MatrixT<T>>&,     \
                                                       const RowFill&, const RowsDone<T>&);             \
    template MatrixT<T> dot_scores<T>(const MatrixT<T>&, const MatrixT<T>&);                            \
    template MatrixT<T> scale_scores<T>(const MatrixT<T>&, T);                                          \
    template MatrixT<T> apply_mask<T>(const MatrixT<T>&, const BoolMatrix&);                            \
    template MatrixT<T> apply_mask<T>(const MatrixT<T>&, const BoolMatrix&, T);                         \
    template MatrixT<T> row_softmax<T>(const MatrixT<T>&);                                              \
    template Eigen::Index row_sum_normalize<T>(const MatrixT<T>&, MatrixT<T>&);                         \
    template MatrixT<T> weighted_sum<T>(const MatrixT<T>&, const MatrixT<T>&);                          \
    template StreamResult stream_attention<T>(const MatrixT<T>&, const MatrixT<T>&, const MatrixT<T>&,  \
                                              const StreamOptions&);                                    \
    template std::vector<StreamResult> stream_heads<T>(const std::vector<StreamHead<T>>&, const StreamOptions&); \
    template double stream_exp_rate<T>(int);
ATTNTRACE_INSTANTIATE(float)
ATTNTRACE_INSTANTIATE(double)

}  // namespace attntrace
