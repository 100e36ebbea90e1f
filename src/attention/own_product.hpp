// Matrix products by kernels of our own, for the hot paths on CPUs with 32 vector registers
// (AVX-512): the streaming path's two products per block pair (streaming.cpp), the streaming
// backward pass's per tile pair (streaming_backward_kernels.cpp) and, for long inputs,
// the projections X·W (projections.cpp; and the trace path's A·V, kernels.cpp, in a native
// build). Included through those files only (attention/row_blocks.hpp): one copy per
// instruction set (attention/isa.hpp); where it cannot run, it is not compiled (`if constexpr`).
//
#pragma once

#include "attention/isa.hpp"

#include <Eigen/Core>

#include <algorithm>

namespace attntrace {
namespace ATTNTRACE_ISA {

inline constexpr Eigen::Index own_products_from = 256;  // rows (tokens); one key block of the streaming path

// Eigen's product first copies ("packs") both operands into its own layout, every call: in the
// streaming path that is Q's and K's blocks for the scores, and P (as large as the scores)
// and V's block for the values, every block pair; in a projection, W for every 32 rows.
// These kernels read row-major operands where they are: out (rows × width) = or += alpha·A·B with A (rows ×
// depth) and B (depth × width), row strides ld_a, ld_b, ld_out. A tile of R rows × C vector
// registers of out stays in registers while the depth is walked: each step loads C registers
// of one row of B, broadcasts one number of A per row, and does R·C fused multiply-adds.
// R = 6 and C = 4 fill a CPU with 32 vector registers (AVX-512); with 16 (AVX2, SSE2) tiles
// that fit do not beat Eigen, which is used there. Each entry is summed over the depth in
// order, by one thread: the same bytes for any thread count. A score is its summed dot
// product times alpha = 1/√d_k, as Eigen's product scales it.
//
// With TransposeA, A is held transposed (depth × rows, row stride ld_a): the R numbers a step
// broadcasts are then side by side in one row of what is held (the backward pass's dSᵀ·Q and
// Pᵀ·dZ, attention/streaming_backward_kernels.cpp).
template <typename T, int R, int C, bool Accumulate, bool TransposeA = false>
void product_tile(const T* a, Eigen::Index ld_a, const T* b, Eigen::Index ld_b, T* out, Eigen::Index ld_out,
                  Eigen::Index depth, T alpha) {
    namespace ei = Eigen::internal;
    using Packet = typename ei::packet_traits<T>::type;
    constexpr Eigen::Index lanes = ei::packet_traits<T>::size;
    // The loops over r and c are unrolled whole at any optimisation level, so that sum[][] lives
    // in registers.
    Packet sum[R][C];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c)
            sum[r][c] = Accumulate ? ei::ploadu<Packet>(out + r * ld_out + c * lanes) : ei::pset1<Packet>(T(0));
    for (Eigen::Index j = 0; j < depth; ++j) {
        Packet row[C];
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) row[c] = ei::ploadu<Packet>(b + j * ld_b + c * lanes);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const Packet weight = ei::pset1<Packet>(TransposeA ? a[j * ld_a + r] : a[r * ld_a + j]);
#pragma GCC unroll 4
            for (int c = 0; c < C; ++c) sum[r][c] = ei::pmadd(weight, row[c], sum[r][c]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c)
            ei::pstoreu(out + r * ld_out + c * lanes, Accumulate ? sum[r][c] : ei::pmul(sum[r][c], ei::pset1<Packet>(alpha)));
}

// A causal block's triangle: row r of out needs only the columns (of the scores) or the
// depth (of P·V) up to r + diagonal, where diagonal = first query − first key; the rest is
// masked, or weighs 0. `anywhere` when there is no such limit.
inline constexpr Eigen::Index anywhere = Eigen::Index(1) << 60;

// Rows [from, rows) in tiles of 6, then the 1 to 5 left. With Accumulate (P·V), a tile's
// depth stops after the last key its rows may see: the weights after it are 0, so the sums
// are the same.
template <typename T, int C, bool Accumulate, bool TransposeA = false>
void product_rows(const T* a, Eigen::Index ld_a, const T* b, Eigen::Index ld_b, T* out, Eigen::Index ld_out,
                  Eigen::Index from, Eigen::Index rows, Eigen::Index depth, T alpha, Eigen::Index diagonal) {
    const auto tile_depth = [&](Eigen::Index r, Eigen::Index tile_rows) {
        return Accumulate && diagonal != anywhere ? std::clamp<Eigen::Index>(r + tile_rows + diagonal, 0, depth) : depth;
    };
    const Eigen::Index row_step = TransposeA ? 1 : ld_a;  // from one row of A to the next where A is held
    Eigen::Index r = from;
    for (; r + 6 <= rows; r += 6)
        product_tile<T, 6, C, Accumulate, TransposeA>(a + r * row_step, ld_a, b, ld_b, out + r * ld_out, ld_out,
                                                      tile_depth(r, 6), alpha);
    const Eigen::Index d = tile_depth(r, rows - r);
    a += r * row_step;
    out += r * ld_out;
    switch (rows - r) {
        case 5: product_tile<T, 5, C, Accumulate, TransposeA>(a, ld_a, b, ld_b, out, ld_out, d, alpha); break;
        case 4: product_tile<T, 4, C, Accumulate, TransposeA>(a, ld_a, b, ld_b, out, ld_out, d, alpha); break;
        case 3: product_tile<T, 3, C, Accumulate, TransposeA>(a, ld_a, b, ld_b, out, ld_out, d, alpha); break;
        case 2: product_tile<T, 2, C, Accumulate, TransposeA>(a, ld_a, b, ld_b, out, ld_out, d, alpha); break;
        case 1: product_tile<T, 1, C, Accumulate, TransposeA>(a, ld_a, b, ld_b, out, ld_out, d, alpha); break;
        default: break;
    }
}

// Whether this copy of the kernels has them, and for which widths: whole vector registers.
// They are for long inputs (own_products_for): below 256 rows (tokens) Eigen's products
// are kept. There the products take little of the time, and Eigen, which sums tiny products
// coefficient by coefficient, gives the numbers the docs show; the kernels' fused
// multiply-adds round some dot products differently, which can swap two keys whose weights
// are equal on paper (example:two_heads, in docs/multi-head.md).
template <typename T>
constexpr bool own_products = EIGEN_ARCH_DEFAULT_NUMBER_OF_REGISTERS >= 32 && Eigen::internal::packet_traits<T>::size > 1;
template <typename T>
bool whole_registers(Eigen::Index width) {
    return width % Eigen::internal::packet_traits<T>::size == 0;
}
template <typename T>
bool own_products_for(Eigen::Index rows) {
    return own_products<T> && rows >= own_products_from;
}

// The columns of out: 4 registers at a time, then 2, then 1 (width is whole registers).
// Without Accumulate (the scores) and with a diagonal, a group of columns skips the rows that
// see none of its columns: what they would hold is never read.
template <typename T, bool Accumulate, bool TransposeA = false>
void own_product(const T* a, Eigen::Index ld_a, const T* b, Eigen::Index ld_b, T* out, Eigen::Index ld_out,
                 Eigen::Index rows, Eigen::Index width, Eigen::Index depth, T alpha, Eigen::Index diagonal = anywhere) {
    constexpr Eigen::Index lanes = Eigen::internal::packet_traits<T>::size;
    const auto first_row = [&](Eigen::Index c) {
        return !Accumulate && diagonal != anywhere ? std::clamp<Eigen::Index>(c - diagonal, 0, rows) : 0;
    };
    Eigen::Index c = 0;
    for (; c + 4 * lanes <= width; c += 4 * lanes)
        product_rows<T, 4, Accumulate, TransposeA>(a, ld_a, b + c, ld_b, out + c, ld_out, first_row(c), rows, depth, alpha, diagonal);
    for (; c + 2 * lanes <= width; c += 2 * lanes)
        product_rows<T, 2, Accumulate, TransposeA>(a, ld_a, b + c, ld_b, out + c, ld_out, first_row(c), rows, depth, alpha, diagonal);
    for (; c < width; c += lanes)
        product_rows<T, 1, Accumulate, TransposeA>(a, ld_a, b + c, ld_b, out + c, ld_out, first_row(c), rows, depth, alpha, diagonal);
}

}  // namespace ATTNTRACE_ISA
}  // namespace attntrace
