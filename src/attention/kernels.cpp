#include "attention/kernels.hpp"

#include "attention/isa.hpp"
#include "attention/own_product.hpp"
#include "util/parallel.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

namespace attntrace {
namespace ATTNTRACE_ISA {  // one copy per instruction set: attention/isa.hpp
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
    if constexpr (std::is_same_v<Rhs, MatrixT<T>>)
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

// S = Q·Kᵀ. Q: n_q×d, K: n_k×d → n_q×n_k; S(i, j) = q_i · k_j.
template <typename T>
MatrixT<T> dot_scores(const MatrixT<T>& q, const MatrixT<T>& k) {
    return multiply_by_row_blocks<T>(q, k.transpose());
}

template <typename T>
MatrixT<T> scale_scores(const MatrixT<T>& scores, T divisor) {
    return scores / divisor;
}

// allowed(i, j) = (j ≤ i): position i sees itself and the positions before it.
BoolMatrix causal_mask(Eigen::Index n) {
    BoolMatrix allowed(n, n);
#pragma omp parallel for schedule(static) if (worth_threads(static_cast<double>(n) * static_cast<double>(n)))
    for (Eigen::Index i = 0; i < n; ++i)
        for (Eigen::Index j = 0; j < n; ++j) allowed(i, j) = j <= i;
    return allowed;
}

// Scores with −∞ wherever the mask forbids: softmax then gives those keys weight exactly 0.
template <typename T>
MatrixT<T> apply_mask(const MatrixT<T>& scores, const BoolMatrix& allowed, T fill);  // below, in this copy
template <typename T>
MatrixT<T> apply_mask(const MatrixT<T>& scores, const BoolMatrix& allowed) {
    return apply_mask<T>(scores, allowed, -std::numeric_limits<T>::infinity());
}

template <typename T>
MatrixT<T> apply_mask(const MatrixT<T>& scores, const BoolMatrix& allowed, T fill) {
    return allowed.select(scores.array(), fill).matrix();
}

// A(i, ·) = softmax(S(i, ·)) = exp(S(i, j) − max_j S(i, j)) / Σ_j exp(…).
// Subtracting the row max changes nothing mathematically and keeps exp from overflowing.
// −∞ entries get weight exactly 0; a row with no finite entry stays all 0.
template <typename T>
MatrixT<T> row_softmax(const MatrixT<T>& scores) {
    MatrixT<T> weights(scores.rows(), scores.cols());
#pragma omp parallel for schedule(static) if (worth_threads(10.0 * static_cast<double>(scores.size())))
    for (Eigen::Index i = 0; i < scores.rows(); ++i) {
        const T max = scores.row(i).maxCoeff();              // pass 1: the row max
        if (max == -std::numeric_limits<T>::infinity()) {    // every key masked
            weights.row(i).setZero();
            continue;
        }
        T sum = 0;
        for (Eigen::Index j = 0; j < scores.cols(); ++j) {   // pass 2: exp and their sum
            const T e = std::exp(scores(i, j) - max);
            weights(i, j) = e;
            sum += e;
        }
        weights.row(i) /= sum;                               // pass 3: normalise
    }
    return weights;
}

// A(i, j) = S(i, j) / Σ_j S(i, j): the first normalisation the lecture shows. −∞ entries
// count as 0, and a row with no finite entry (every key masked) stays all 0. Returns the
// first other row whose sum is not a finite positive number (it cannot divide), or -1 when
// every row was normalised.
template <typename T>
Eigen::Index row_sum_normalize(const MatrixT<T>& scores, MatrixT<T>& weights) {
    weights = MatrixT<T>::Zero(scores.rows(), scores.cols());
    Eigen::Index first_bad = scores.rows();
#pragma omp parallel for schedule(static) reduction(min : first_bad) if (worth_threads(2.0 * static_cast<double>(scores.size())))
    for (Eigen::Index i = 0; i < scores.rows(); ++i) {
        T sum = 0;
        bool any = false;
        for (Eigen::Index j = 0; j < scores.cols(); ++j)
            if (std::isfinite(scores(i, j))) sum += scores(i, j), any = true;
        if (!any) continue;
        if (!(sum > 0) || !std::isfinite(sum)) {
            first_bad = std::min(first_bad, i);
            continue;
        }
        for (Eigen::Index j = 0; j < scores.cols(); ++j)
            if (std::isfinite(scores(i, j))) weights(i, j) = scores(i, j) / sum;
    }
    return first_bad == scores.rows() ? -1 : first_bad;
}

// Z = A·V. A: n_q×n_k weights, V: n_k×d_v values → n_q×d_v; z_i = Σ_j A(i, j)·v_j.
template <typename T>
MatrixT<T> weighted_sum(const MatrixT<T>& weights, const MatrixT<T>& values) {
    return multiply_by_row_blocks<T>(weights, values);
}

#define ATTNTRACE_KERNELS(T)                                                                  \
    template MatrixT<T> project<T>(const MatrixT<T>&, const MatrixT<T>&);                      \
    template std::vector<MatrixT<T>> project_filled<T>(                                        \
        MatrixT<T>&, const std::vector<MatrixT<T>>&, const RowFill&, const RowsDone<T>&);      \
    template MatrixT<T> dot_scores<T>(const MatrixT<T>&, const MatrixT<T>&);                   \
    template MatrixT<T> scale_scores<T>(const MatrixT<T>&, T);                                 \
    template MatrixT<T> apply_mask<T>(const MatrixT<T>&, const BoolMatrix&);                   \
    template MatrixT<T> apply_mask<T>(const MatrixT<T>&, const BoolMatrix&, T);                \
    template MatrixT<T> row_softmax<T>(const MatrixT<T>&);                                      \
    template Eigen::Index row_sum_normalize<T>(const MatrixT<T>&, MatrixT<T>&);                \
    template MatrixT<T> weighted_sum<T>(const MatrixT<T>&, const MatrixT<T>&);
ATTNTRACE_KERNELS(float)
ATTNTRACE_KERNELS(double)
#undef ATTNTRACE_KERNELS

}  // namespace ATTNTRACE_ISA
}  // namespace attntrace
