// Passes 2 to 4 of kernels.hpp, the kernels of the trace path (the full n × n stages it shows):
// compiled once, for any x86-64 CPU. Their time goes into writing n × n matrices of doubles
// more than into arithmetic, so they have no copies for wider instruction sets; pass 1, the
// projections, and the streaming path have (projections.cpp, streaming.cpp: attention/isa.hpp).
#include "attention/kernels.hpp"

#include "attention/row_blocks.hpp"
#include "util/parallel.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attntrace {

// S = Q·Kᵀ. Q: n_q×d, K: n_k×d → n_q×n_k; S(i, j) = q_i · k_j.
template <typename T>
MatrixT<T> dot_scores(const MatrixT<T>& q, const MatrixT<T>& k) {
    return ATTNTRACE_ISA::multiply_by_row_blocks<T>(q, k.transpose());
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
MatrixT<T> apply_mask(const MatrixT<T>& scores, const BoolMatrix& allowed, T fill) {
    return allowed.select(scores.array(), fill).matrix();
}

template <typename T>
MatrixT<T> apply_mask(const MatrixT<T>& scores, const BoolMatrix& allowed) {
    return apply_mask<T>(scores, allowed, -std::numeric_limits<T>::infinity());
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
    return ATTNTRACE_ISA::multiply_by_row_blocks<T>(weights, values);
}

#define ATTNTRACE_TRACE_KERNELS(T)                                                             \
    template MatrixT<T> dot_scores<T>(const MatrixT<T>&, const MatrixT<T>&);                   \
    template MatrixT<T> scale_scores<T>(const MatrixT<T>&, T);                                 \
    template MatrixT<T> apply_mask<T>(const MatrixT<T>&, const BoolMatrix&);                   \
    template MatrixT<T> apply_mask<T>(const MatrixT<T>&, const BoolMatrix&, T);                \
    template MatrixT<T> row_softmax<T>(const MatrixT<T>&);                                      \
    template Eigen::Index row_sum_normalize<T>(const MatrixT<T>&, MatrixT<T>&);                \
    template MatrixT<T> weighted_sum<T>(const MatrixT<T>&, const MatrixT<T>&);
ATTNTRACE_TRACE_KERNELS(float)
ATTNTRACE_TRACE_KERNELS(double)
#undef ATTNTRACE_TRACE_KERNELS

}  // namespace attntrace
