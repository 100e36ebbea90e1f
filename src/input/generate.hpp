// `attntrace generate`: a complete single-sequence input of any size from the portable
// generator, for trying long inputs and for benchmarks. Same arguments, same bytes.
#pragma once

#include <cstdint>
#include <ostream>

namespace attntrace {

// Writes {"description", "mode", "tokens": t1…tN, "embeddings": N×D, "weights": D×D query, key,
// value} as JSON. One splitmix64 stream seeded with `seed` gives, in order, the embeddings
// (row by row, uniform in [-1, 1)) and then W_q, W_k, W_v (uniform in [-1/√D, 1/√D)); each
// value is rounded to 6 decimals, so it is written exactly in at most 9 characters.
void write_generated_input(std::ostream& out, std::int64_t tokens, std::int64_t dim, std::uint64_t seed);

// The same numbers as arrays: an .npz (stored) or a .safetensors file holding embeddings,
// query, key and value, as float64 (the very numbers of the JSON) or float32 (each rounded to
// the nearest float). The safetensors file says in its metadata that the weights are d_in ×
// d_out ("layout": "in_out"), so its square weights are read without --layout; an .npz has no
// place to say it, so it is read with --layout in_out. Refused (UsageError) beyond
// `max_bytes` of numbers, which are held in memory to be written.
enum class ArrayFormat { npz, safetensors };
void write_generated_arrays(std::ostream& out, std::int64_t tokens, std::int64_t dim, std::uint64_t seed,
                            ArrayFormat format, bool float32, std::uint64_t max_bytes);

}  // namespace attntrace
