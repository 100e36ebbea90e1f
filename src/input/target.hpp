// The target of a backward pass's target loss (--backward target:FILE): a matrix of numbers,
// read from JSON (an array of rows, or an object {"target": rows}) or from a binary array
// (.npy; .npz or safetensors holding one array, or one named "target").
#pragma once

#include "core/matrix.hpp"

#include <cstdint>
#include <string>

namespace attntrace {

// Throws DataError "FILE: …" when the file cannot be read or holds no matrix of finite numbers.
Matrix read_target(const std::string& path, std::uint64_t max_bytes);

}  // namespace attntrace
