// Lengths and angles of vectors that neither overflow nor underflow for any representable
// input: each vector is divided by its largest magnitude first, so the sums of squares and
// the dot product of the scaled vectors stay between 1 and d.
#pragma once

#include "core/matrix.hpp"
#include "core/types.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

namespace attntrace {

// max_k |x_k| (0 for an empty or zero vector).
template <typename Derived>
double max_magnitude(const Eigen::MatrixBase<Derived>& x) {
    return x.size() == 0 ? 0.0 : static_cast<double>(x.cwiseAbs().maxCoeff());
}

// |x| = m·|x/m| with m = max_k |x_k|. Infinite only when the length itself is beyond the
// double range (m > 1.8e308 / √d); exactly 0 for a zero vector.
template <typename Derived>
double scaled_norm(const Eigen::MatrixBase<Derived>& x) {
    const double m = max_magnitude(x);
    if (m == 0 || !std::isfinite(m)) return m;
    return m * (x.template cast<double>() / m).norm();
}

// cos(a, b) = (a/m_a)·(b/m_b) / (|a/m_a| |b/m_b|), clamped to [-1, 1] against rounding;
// nothing when either vector is zero (it has no direction).
template <typename A, typename B>
std::optional<double> scaled_cosine(const Eigen::MatrixBase<A>& a, const Eigen::MatrixBase<B>& b) {
    const double ma = max_magnitude(a), mb = max_magnitude(b);
    if (ma == 0 || mb == 0) return std::nullopt;
    const Vector x = a.template cast<double>() / ma, y = b.template cast<double>() / mb;
    return std::clamp(x.dot(y) / (x.norm() * y.norm()), -1.0, 1.0);
}

}  // namespace attntrace
