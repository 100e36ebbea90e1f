// The arithmetic of attention, one small function per step: the second version of
// attention/reference.hpp's function, each pass a kernel. Row vectors throughout: a matrix
// holds one token per row. Every kernel is parallel over rows (OpenMP) in blocks of a fixed
// size, so each row is computed by the same instructions whatever the number of threads: the
// output bytes never depend on --threads. Eigen itself runs single-threaded
// (EIGEN_DONT_PARALLELIZE), so there is no nested parallelism. The kernels are compiled for
// float and double: pass 1 in projections.cpp, once per instruction set (attention/isa.hpp),
// as the long inputs' path needs it; passes 2 to 4, the trace path's, once, in kernels.cpp.
#pragma once

#include "core/matrix.hpp"

#include <functional>
#include <vector>

namespace attntrace {

inline constexpr Eigen::Index kernel_row_block = 32;

// pass 1. Y = X·W. X: n×d_in, W: d_in×d_out → n×d_out (the query, key and value
// projections; any product of two matrices).
template <typename T>
MatrixT<T> project(const MatrixT<T>& x, const MatrixT<T>& w);

// Y_i = X·W_i for several W_i at once (the query, key and value projections), in one
// parallel region: `fill(first, count)` first writes rows [first, first + count) of X (the
// input converted as it is read), then the block, still in cache, is multiplied by each W_i,
// and `done(Y, first, count)` (when given) may finish those rows of the Y_i (a bias) and read
// them while they are in cache too. Each Y_i holds project(X, W_i)'s numbers.
using RowFill = std::function<void(Eigen::Index first, Eigen::Index count)>;
template <typename T>
using RowsDone = std::function<void(std::vector<MatrixT<T>>& y, Eigen::Index first, Eigen::Index count)>;
template <typename T>
std::vector<MatrixT<T>> project_filled(MatrixT<T>& x, const std::vector<MatrixT<T>>& w, const RowFill& fill,
                                       const RowsDone<T>& done = {});

// pass 2. S = Q·Kᵀ. Q: n_q×d, K: n_k×d → n_q×n_k; S(i, j) = q_i · k_j.
template <typename T>
MatrixT<T> dot_scores(const MatrixT<T>& q, const MatrixT<T>& k);

// S / c, with c = √d_k by default: that keeps the scores' spread independent of the
// dimension, so softmax does not saturate as d_k grows. (c is --scale's, 1/T for a
// temperature T.)
template <typename T>
MatrixT<T> scale_scores(const MatrixT<T>& scores, T divisor);

// pass 3. allowed(i, j) = (j ≤ i): position i sees itself and the positions before it.
BoolMatrix causal_mask(Eigen::Index n);

// Scores with −∞ wherever the mask forbids: softmax then gives those keys weight exactly 0.
// (`fill`: another number there, as some code does; softmax then gives those keys a weight.)
template <typename T>
MatrixT<T> apply_mask(const MatrixT<T>& scores, const BoolMatrix& allowed);
template <typename T>
MatrixT<T> apply_mask(const MatrixT<T>& scores, const BoolMatrix& allowed, T fill);

// A(i, ·) = softmax(S(i, ·)) = exp(S(i, j) − max_j S(i, j)) / Σ_j exp(…).
// Subtracting the row max changes nothing mathematically and keeps exp from overflowing.
// −∞ entries get weight exactly 0; a row with no finite entry stays all 0.
template <typename T>
MatrixT<T> row_softmax(const MatrixT<T>& scores);

// A(i, j) = S(i, j) / Σ_j S(i, j): the first normalisation the lecture shows. −∞ entries
// count as 0, and a row with no finite entry (every key masked) stays all 0. Returns the
// first other row whose sum is not a finite positive number (it cannot divide), or -1 when
// every row was normalised.
template <typename T>
Eigen::Index row_sum_normalize(const MatrixT<T>& scores, MatrixT<T>& weights);

// pass 4. Z = A·V. A: n_q×n_k weights, V: n_k×d_v values → n_q×d_v; z_i = Σ_j A(i, j)·v_j.
template <typename T>
MatrixT<T> weighted_sum(const MatrixT<T>& weights, const MatrixT<T>& values);

}  // namespace attntrace
