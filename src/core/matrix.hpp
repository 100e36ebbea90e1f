// Matrices, row vectors and masks: the numbers of attention.
#pragma once

#include <Eigen/Core>

#include <cstdint>

namespace attntrace {

// Row vectors everywhere: one token per row, so a projection is X·W with W of shape d_in × d_out.
template <typename T>
using MatrixT = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Matrix = MatrixT<double>;
using Vector = Eigen::Matrix<double, 1, Eigen::Dynamic>;  // one row
// allowed(i, j): may query i attend to key j.
using BoolMatrix = Eigen::Array<bool, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
// reasons(i, j): why key j is hidden from query i, as bits (attention/masks.hpp).
using ReasonMatrix = Eigen::Array<std::uint8_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

}  // namespace attntrace
