// Memory needed by a request, estimated before anything large is allocated, so that an input
// too big for --max-memory is refused at once with the size it would need.
#pragma once

#include "attention/trace.hpp"
#include "input/problem.hpp"
#include "render/render.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace attntrace {

// The trace path at its peak: the stages (stored as double), the working copies of the
// score-sized matrices, the masks, the weights, the text of the largest stage while it is
// rendered, and the SVG when one is asked for.
std::uint64_t trace_bytes(const Problem& problem, const TraceOptions& options, Format format, bool svg = false);
// The same for one sequence of n tokens of d_in numbers, projected to d_k (= d_v).
std::uint64_t single_trace_bytes(double n, double d_in, double d_k, Dtype dtype, Format format, bool svg);

// The streaming path: X, Q, K, V, the per-query results, the context if asked for, and one
// block of scratch per thread.
std::uint64_t summary_bytes(const Problem& problem, const TraceOptions& options, bool context, std::size_t top);

// The same for one sequence, as single_trace_bytes.
std::uint64_t single_summary_bytes(double n, double d_in, double d_k, Dtype dtype, bool context, std::size_t top);

// similarity: two words × words tables and their text.
std::uint64_t similarity_bytes(std::size_t words, Format format);

// Throws DataError "ORIGIN: WHAT needs about N, more than --max-memory M; HINT" when need > limit
// (an empty origin is left out).
void require_memory(std::uint64_t need, std::uint64_t limit, const std::string& origin, std::string_view what,
                    std::string_view hint);

}  // namespace attntrace
