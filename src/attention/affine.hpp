// The affine pieces of a real model's layer: biases added after a projection, and layer
// normalisation, as GPT-2 applies ln_1 before attention: each token's vector (a row)
// minus its mean, divided by √(variance + ε), times γ plus β, number by number. The
// variance is the mean of squared deviations (divided by d, not d − 1), as PyTorch's
// LayerNorm computes it.
#pragma once

#include "core/matrix.hpp"
#include "core/problem.hpp"

#include <cmath>

namespace attntrace {

// One row's mean and variance, summed in double whatever T is.
struct RowMoments {
    double mean = 0, variance = 0;
};

template <typename Row>
RowMoments row_moments(const Row& x) {
    RowMoments m;
    const auto d = static_cast<double>(x.size());
    for (Eigen::Index k = 0; k < x.size(); ++k) m.mean += static_cast<double>(x(k));
    m.mean /= d;
    for (Eigen::Index k = 0; k < x.size(); ++k) {
        const double deviation = static_cast<double>(x(k)) - m.mean;
        m.variance += deviation * deviation;
    }
    m.variance /= d;
    return m;
}

// LN(X), row by row, in T.
template <typename T>
MatrixT<T> layer_norm(const MatrixT<T>& x, const LayerNorm& ln) {
    MatrixT<T> out(x.rows(), x.cols());
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
        const RowMoments m = row_moments(x.row(i));
        const double scale = 1 / std::sqrt(m.variance + ln.epsilon);
        for (Eigen::Index k = 0; k < x.cols(); ++k)
            out(i, k) = static_cast<T>((static_cast<double>(x(i, k)) - m.mean) * scale * ln.gamma(k) + ln.beta(k));
    }
    return out;
}

// X·W + b: b added to every row (no bias: X·W alone); `product` may be some rows of it.
template <typename Derived>
void add_bias(Eigen::MatrixBase<Derived>& product, const std::optional<Vector>& bias) {
    if (bias) product.rowwise() += bias->template cast<typename Derived::Scalar>();
}

}  // namespace attntrace
