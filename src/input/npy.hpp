// NumPy's .npy: the magic string "\x93NUMPY", a version (major, minor byte), the header's
// length (2 bytes little-endian in version 1.0, 4 in 2.0 and 3.0), the header — a Python
// dictionary literal ending in '\n' — and then the data, nothing after it.
#pragma once

#include "input/tensor.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace attntrace {

inline constexpr std::string_view npy_magic = "\x93NUMPY";

// One .npy in `bytes`; `where` names it in messages (the path, or the archive and member).
// The header is checked whole before the data is looked at, and the data must be exactly
// what it announces. Throws DataError. The tensor's `storage` is left for the caller to set.
Tensor read_npy(std::string_view bytes, const std::string& where);

// The .npy header attntrace writes for an array of `shape` in dtype `descr` ("<f4", "<f8").
std::string npy_header(std::string_view descr, const std::vector<std::size_t>& shape);

// A whole .npy of `matrix` (little-endian float32 or float64, C order; 1-d when `vector`),
// for `attntrace generate` and for tests of the readers.
std::string write_npy(const Matrix& matrix, ElementType type, bool vector = false);

}  // namespace attntrace
