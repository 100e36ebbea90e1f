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

}  // namespace attntrace
