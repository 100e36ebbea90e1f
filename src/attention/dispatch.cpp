// The public names of the hot kernels (kernels.hpp, streaming.hpp), each forwarding to the
// copy compiled for this CPU: attention/isa.hpp says why there are two.
#include "attention/isa.hpp"
#include "attention/kernels.hpp"
#include "attention/streaming.hpp"

#include <cstdlib>
#include <cstring>
#include <string>

namespace attntrace {

// What each copy defines, in its own namespace.
#define ATTNTRACE_HOT_FUNCTIONS                                                                          \
    template <typename T> MatrixT<T> project(const MatrixT<T>&, const MatrixT<T>&);                     \
    template <typename T> MatrixT<T> dot_scores(const MatrixT<T>&, const MatrixT<T>&);                  \
    template <typename T> MatrixT<T> scale_scores(const MatrixT<T>&, T);                                \
    BoolMatrix causal_mask(Eigen::Index);                                                               \
    template <typename T> MatrixT<T> apply_mask(const MatrixT<T>&, const BoolMatrix&);                  \
    template <typename T> MatrixT<T> row_softmax(const MatrixT<T>&);                                    \
    template <typename T> Eigen::Index row_sum_normalize(const MatrixT<T>&, MatrixT<T>&);               \
    template <typename T> MatrixT<T> weighted_sum(const MatrixT<T>&, const MatrixT<T>&);                \
    template <typename T>                                                                               \
    StreamResult stream_attention(const MatrixT<T>&, const MatrixT<T>&, const MatrixT<T>&, const StreamOptions&);

namespace isa_baseline {
ATTNTRACE_HOT_FUNCTIONS
}

#ifdef ATTNTRACE_HAS_AVX2
namespace isa_avx2 {
ATTNTRACE_HOT_FUNCTIONS
}

namespace {
bool use_avx2() {
    static const bool chosen = [] {
        const char* forced = std::getenv("ATTNTRACE_KERNELS");
        if (forced && std::strcmp(forced, "baseline") == 0) return false;
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }();
    return chosen;
}
}  // namespace

const char* kernel_isa() { return use_avx2() ? "avx2" : "baseline"; }
std::string kernel_description() {
    if (use_avx2()) return "AVX2 with FMA, chosen at run time (the build also holds kernels for any x86-64 CPU)";
    const char* forced = std::getenv("ATTNTRACE_KERNELS");
    if (forced && std::strcmp(forced, "baseline") == 0)
        return "any x86-64 CPU, as ATTNTRACE_KERNELS=baseline asks (the build also holds AVX2 kernels)";
    return "any x86-64 CPU, chosen at run time: this CPU lacks AVX2 or FMA";
}
#define ATTNTRACE_CALL(call) (use_avx2() ? isa_avx2::call : isa_baseline::call)
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

#define ATTNTRACE_INSTANTIATE(T)                                                                         \
    template MatrixT<T> project<T>(const MatrixT<T>&, const MatrixT<T>&);                               \
    template MatrixT<T> dot_scores<T>(const MatrixT<T>&, const MatrixT<T>&);                            \
    template MatrixT<T> scale_scores<T>(const MatrixT<T>&, T);                                          \
    template MatrixT<T> apply_mask<T>(const MatrixT<T>&, const BoolMatrix&);                            \
    template MatrixT<T> row_softmax<T>(const MatrixT<T>&);                                              \
    template Eigen::Index row_sum_normalize<T>(const MatrixT<T>&, MatrixT<T>&);                         \
    template MatrixT<T> weighted_sum<T>(const MatrixT<T>&, const MatrixT<T>&);                          \
    template StreamResult stream_attention<T>(const MatrixT<T>&, const MatrixT<T>&, const MatrixT<T>&,  \
                                              const StreamOptions&);
ATTNTRACE_INSTANTIATE(float)
ATTNTRACE_INSTANTIATE(double)

}  // namespace attntrace
