// The products of the kernels, cut into fixed blocks of rows: what project() (projections.cpp,
// one copy per instruction set) and the trace path's kernels (kernels.cpp, one copy) share.
// Its functions are in the including copy's namespace (attention/isa.hpp), private to the file.
#pragma once

#include "attention/isa.hpp"
#include "attention/kernels.hpp"
#include "attention/own_product.hpp"
#include "util/parallel.hpp"

#include <algorithm>
#include <type_traits>

namespace attntrace {
namespace ATTNTRACE_ISA {
namespace {

// out(rows of A) = A·B for each fixed block of rows of A. A: m×k, B: k×n → m×n. A long A
// times a small matrix held row by row (a projection's W) goes through own_product.hpp's
// kernel where this copy has it: it reads all of B for every 6 rows, so B must stay in the
// core's cache (64K numbers at most); the rest goes through Eigen, which blocks for the cache.
// Eigen's product may allocate its packing buffers, so a failed allocation is carried out of
// the parallel region (RegionErrors) and thrown after it.
// How A·B is cut: whether own_product.hpp's kernel multiplies, and the rows of a block.
struct RowBlocks {
    bool own = false;
    Eigen::Index rows = kernel_row_block;
};
template <typename T, typename Rhs>
RowBlocks row_blocks_for(const MatrixT<T>& a, const Rhs& b) {
    RowBlocks cut;
    if constexpr (std::is_same_v<Rhs, MatrixT<T>>)
        cut.own = own_products_for<T>(a.rows()) && whole_registers<T>(b.cols()) && b.size() <= 65536;
    // Eigen packs all of B again for every block it is given: a long A (1024 rows or more)
    // goes to it 256 rows at a time, which packs B an eighth as often. The blocks still
    // depend on the shapes alone, never on the threads.
    if (!cut.own && a.rows() >= 1024) cut.rows = 8 * kernel_row_block;
    return cut;
}

// Rows [first, first + count) of out = A·B: one block.
template <typename T, typename Rhs>
void multiply_block(const MatrixT<T>& a, const Rhs& b, MatrixT<T>& out, const RowBlocks& cut, Eigen::Index first,
                    Eigen::Index count) {
    if constexpr (std::is_same_v<Rhs, MatrixT<T>> && own_products<T>)  // compiled only where it can run
        if (cut.own) {
            own_product<T, false>(a.data() + first * a.cols(), a.cols(), b.data(), b.cols(),
                                  out.data() + first * out.cols(), out.cols(), count, b.cols(), a.cols(), T(1));
            return;
        }
    out.middleRows(first, count).noalias() = a.middleRows(first, count) * b;
}

template <typename T, typename Rhs>
MatrixT<T> multiply_by_row_blocks(const MatrixT<T>& a, const Rhs& b) {
    MatrixT<T> out(a.rows(), b.cols());
    const RowBlocks cut = row_blocks_for<T>(a, b);
    const Eigen::Index blocks = (a.rows() + cut.rows - 1) / cut.rows;
    RegionErrors errors;
    const double work = static_cast<double>(a.rows()) * static_cast<double>(a.cols()) * static_cast<double>(b.cols());
#pragma omp parallel for schedule(static) if (worth_threads(work))
    for (Eigen::Index block = 0; block < blocks; ++block)
        errors.run([&] {
            const Eigen::Index first = block * cut.rows;
            multiply_block<T>(a, b, out, cut, first, std::min(cut.rows, a.rows() - first));
        });
    errors.rethrow();
    return out;
}

}  // namespace
}  // namespace ATTNTRACE_ISA
}  // namespace attntrace
