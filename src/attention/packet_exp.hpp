// e^x for a vector register of doubles (an Eigen packet), for the streaming path's e^(s − m).
// Eigen's own pexp for doubles is the slow part of a float64 summary: it divides one
// polynomial by another and scales by 2^k through a generic ldexp. This one has no division
// and builds 2^k from k's bits with one shift: about 1.5 times Eigen's rate on this project's
// AVX-512 machine (docs/performance.md).
//
// The method: x = k·ln 2 + r with k = round(x / ln 2) and |r| ≤ ln(2)/2, where ln 2 is taken
// in two parts so that k·ln2_hi is exact; e^r by its Taylor series to r¹³ (the first term
// left out, r¹⁴/14!, is below 5e-18 of the result); then that sum times 2^k.
// Within 2 units in the last place of std::exp for −708.39 ≤ x ≤ 709 (tests/test_streaming.cpp
// checks a grid); exactly 0 below −708.39, where e^x would be subnormal (the streaming path
// flushes subnormal numbers to zero anyway), and e^709 above 709. The streaming path's x are
// s − m ≤ 0. x must not be NaN.
#pragma once

#include "attention/isa.hpp"

#include <Eigen/Core>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

// GCC 12 warns that AVX-512 intrinsics use an uninitialised value: their own placeholder
// (_mm512_undefined_pd), a false alarm (GCC bug 105593) that only shows where they are inlined
// outside a system header, as here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace attntrace {
namespace ATTNTRACE_ISA {  // one copy per instruction set (attention/isa.hpp)

// 2^k for whole numbers k in [−1022, 1023], held as doubles: adding 1023 + 1.5·2^52 puts
// k + 1023 in the low bits of the double's pattern, and a 52-bit shift moves it into the
// exponent field. One function per register width the CPU can shift; any other packet goes
// through Eigen's ldexp.
template <typename Packet>
Packet two_to_the(const Packet& k) {
    return Eigen::internal::pldexp(Eigen::internal::pset1<Packet>(1.0), k);
}
inline constexpr double exponent_shift = 1023.0 + 6755399441055744.0;  // 1023 + 1.5·2^52
#if defined(__SSE2__)
inline __m128d two_to_the(const __m128d& k) {
    return _mm_castsi128_pd(_mm_slli_epi64(_mm_castpd_si128(_mm_add_pd(k, _mm_set1_pd(exponent_shift))), 52));
}
#endif
#if defined(__AVX2__)
inline __m256d two_to_the(const __m256d& k) {
    return _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_castpd_si256(_mm256_add_pd(k, _mm256_set1_pd(exponent_shift))), 52));
}
#endif
#if defined(__AVX512F__)
inline __m512d two_to_the(const __m512d& k) {
    return _mm512_castsi512_pd(_mm512_slli_epi64(_mm512_castpd_si512(_mm512_add_pd(k, _mm512_set1_pd(exponent_shift))), 52));
}
#endif

template <typename Packet>
Packet exp_without_division(const Packet& x_in) {
    namespace ei = Eigen::internal;
    using T = typename ei::unpacket_traits<Packet>::type;
    static_assert(sizeof(T) == 8, "for doubles: Eigen's exp for floats has no division");
    const Packet lowest = ei::pset1<Packet>(T(-708.39));  // e^x ≥ the smallest normal double
    const Packet highest = ei::pset1<Packet>(T(709));  // k ≤ 1023: 2^k is a finite double
    const Packet x = ei::pmin(ei::pmax(x_in, lowest), highest);
    const Packet k = ei::pfloor(ei::pmadd(x, ei::pset1<Packet>(T(1.4426950408889634074)), ei::pset1<Packet>(T(0.5))));
    // ln 2 = ln2_hi + ln2_lo, ln2_hi with 32 significant bits, so k·ln2_hi is exact for |k| < 2^21
    Packet r = ei::pmadd(k, ei::pset1<Packet>(T(-6.93147180369123816490e-01)), x);
    r = ei::pmadd(k, ei::pset1<Packet>(T(-1.90821492927058770002e-10)), r);
    // 1/j! for j = 13 … 0, each correctly rounded (j! is exact in a double up to 18!)
    constexpr T inverse_factorials[] = {1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0,
                                        1.0 / 362880.0,     1.0 / 40320.0,     1.0 / 5040.0,      1.0 / 720.0,
                                        1.0 / 120.0,        1.0 / 24.0,        1.0 / 6.0,         0.5,
                                        1.0,                1.0};
    Packet sum = ei::pset1<Packet>(inverse_factorials[0]);
    for (int j = 1; j < 14; ++j) sum = ei::pmadd(sum, r, ei::pset1<Packet>(inverse_factorials[j]));
    const Packet result = ei::pmul(sum, two_to_the(k));
    return ei::pselect(ei::pcmp_lt(x_in, lowest), ei::pzero(result), result);
}

}  // namespace ATTNTRACE_ISA
}  // namespace attntrace

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
