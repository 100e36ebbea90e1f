// The limits on what attntrace reads, so that no input can exhaust the machine: each is
// refused with a clear error (exit 1) instead. Documented in docs/input-format.md.
#pragma once

#include <cstddef>
#include <cstdint>

namespace attntrace {

// Default of --max-input: the largest input read, in bytes.
inline constexpr std::uint64_t default_max_input_bytes = std::uint64_t{1} << 30;  // 1 GiB
// JSON nested deeper than this is refused where the nesting goes too deep.
inline constexpr int max_json_depth = 64;
// Tokens in one sequence: beyond this, attention's n² work would take hours.
inline constexpr std::size_t max_tokens = std::size_t{1} << 20;  // 1,048,576
// Numbers in one vector (d_in, d_h, d_s) or in one row of a weight matrix.
inline constexpr std::size_t max_dimension = std::size_t{1} << 16;  // 65,536
inline constexpr int max_heads = 4096;  // attention heads, and key/value heads

}  // namespace attntrace
