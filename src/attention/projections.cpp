// Pass 1 of kernels.hpp, the products by the weights (the query, key and value projections,
// W_o): the hot kernels of the long inputs' path besides the streaming one, compiled once per
// instruction set (attention/isa.hpp), as streaming.cpp is.
#include "attention/hot_functions.hpp"
#include "attention/isa.hpp"
#include "attention/row_blocks.hpp"

namespace attntrace {
namespace ATTNTRACE_ISA {  // one copy per instruction set: attention/isa.hpp

// Y = X·W. X: n×d_in, W: d_in×d_out → n×d_out (the query, key and value projections).
template <typename T>
MatrixT<T> project(const MatrixT<T>& x, const MatrixT<T>& w) {
    return multiply_by_row_blocks<T>(x, w);
}

// Y_i = X·W_i for each W_i, X's rows filled block by block by `fill` in the same region, and
// `done` told of each block of the Y_i.
// Each product keeps project()'s blocks and kernel; a block of the region is the largest of
// them (32 or 256 rows, the others divide it), so the numbers are project()'s.
template <typename T>
std::vector<MatrixT<T>> project_filled(MatrixT<T>& x, const std::vector<MatrixT<T>>& w, const RowFill& fill,
                                       const RowsDone<T>& done) {
    std::vector<MatrixT<T>> out;
    std::vector<RowBlocks> cuts;
    Eigen::Index rows = kernel_row_block;
    double work = 0;
    for (const MatrixT<T>& w_i : w) {
        out.emplace_back(x.rows(), w_i.cols());
        cuts.push_back(row_blocks_for<T>(x, w_i));
        rows = std::max(rows, cuts.back().rows);
        work += static_cast<double>(x.rows()) * static_cast<double>(x.cols()) * static_cast<double>(w_i.cols());
    }
    const Eigen::Index blocks = (x.rows() + rows - 1) / rows;
    RegionErrors errors;
#pragma omp parallel for schedule(static) if (worth_threads(work))
    for (Eigen::Index block = 0; block < blocks; ++block)
        errors.run([&] {
            const Eigen::Index first = block * rows, end = std::min(x.rows(), first + rows);
            fill(first, end - first);
            for (std::size_t i = 0; i < w.size(); ++i)
                for (Eigen::Index at = first; at < end; at += cuts[i].rows)
                    multiply_block<T>(x, w[i], out[i], cuts[i], at, std::min(cuts[i].rows, end - at));
            if (done) done(out, first, end - first);
        });
    errors.rethrow();
    return out;
}

ATTNTRACE_PROJECTION_FUNCTIONS(ATTNTRACE_INSTANTIATE, float)
ATTNTRACE_PROJECTION_FUNCTIONS(ATTNTRACE_INSTANTIATE, double)

}  // namespace ATTNTRACE_ISA
}  // namespace attntrace
