// The public names of the hot kernels (attention/hot_functions.hpp: the projections of
// kernels.hpp, the streaming path and its backward pass), each forwarding to the copy compiled for this CPU:
// attention/isa.hpp says why there are three.
#include "attention/hot_functions.hpp"
#include "attention/isa.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

namespace attntrace {

// What each copy defines, in its own namespace (attention/hot_functions.hpp's lists).
#define ATTNTRACE_HOT_FUNCTIONS                        \
    ATTNTRACE_PROJECTION_FUNCTIONS(ATTNTRACE_DECLARE, T) \
    ATTNTRACE_STREAMING_FUNCTIONS(ATTNTRACE_DECLARE, T) \
    ATTNTRACE_STREAMING_BACKWARD_FUNCTIONS(ATTNTRACE_DECLARE, T)

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

// Each public name calls the same function of the chosen copy.
#define ATTNTRACE_FORWARD(T, R, name, params, args) \
    template <typename T>                           \
    R name params {                                 \
        return ATTNTRACE_CALL(name<T> args);        \
    }
ATTNTRACE_PROJECTION_FUNCTIONS(ATTNTRACE_FORWARD, T)
ATTNTRACE_STREAMING_FUNCTIONS(ATTNTRACE_FORWARD, T)
ATTNTRACE_STREAMING_BACKWARD_FUNCTIONS(ATTNTRACE_FORWARD, T)

ATTNTRACE_PROJECTION_FUNCTIONS(ATTNTRACE_INSTANTIATE, float)
ATTNTRACE_PROJECTION_FUNCTIONS(ATTNTRACE_INSTANTIATE, double)
ATTNTRACE_STREAMING_FUNCTIONS(ATTNTRACE_INSTANTIATE, float)
ATTNTRACE_STREAMING_FUNCTIONS(ATTNTRACE_INSTANTIATE, double)
ATTNTRACE_STREAMING_BACKWARD_FUNCTIONS(ATTNTRACE_INSTANTIATE, float)
ATTNTRACE_STREAMING_BACKWARD_FUNCTIONS(ATTNTRACE_INSTANTIATE, double)

}  // namespace attntrace
