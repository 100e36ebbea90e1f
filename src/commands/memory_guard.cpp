#include "commands/memory_guard.hpp"

#include "error.hpp"
#include "util/memory.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>

namespace attntrace {
namespace {

double element_size(Dtype dtype) { return dtype == Dtype::float32 ? 4 : 8; }

// A rendered table cell: a number as text (JSON: ~20 bytes; table, markdown, CSV: a string
// object in the cell model, ~40 bytes). An SVG cell, with its rectangle, tooltip and label,
// is about 400 bytes of text.
double text_per_cell(Format format) { return format == Format::json ? 25 : 40; }
constexpr double svg_per_cell = 400;

// The shapes a single-sequence problem works with: n tokens, d_in, and d_k = d_v of the
// projections (the file's, or generated ones of --dim), which are held twice (double and
// the working precision) and generated as three d_in × d_k matrices.
struct Shapes {
    double n = 0, d_in = 0, d_k = 0;
    double weights() const { return 3 * d_in * d_k * 8 * 2; }
};

Shapes shapes(const SingleSequenceInput& single, const TraceOptions& options) {
    Shapes s;
    s.n = static_cast<double>(single.sequence.tokens.size());
    s.d_in = static_cast<double>(single.sequence.vectors.cols());
    s.d_k = single.weights ? static_cast<double>(single.weights->query.cols())
                           : static_cast<double>(options.dim.value_or(single.sequence.vectors.cols()));
    if (options.mode == Mode::plain) s.d_k = s.d_in;
    return s;
}

std::uint64_t trace_bytes_for(double rows, double cols, double vectors, double weights, Dtype dtype, Format format,
                              bool svg) {
    const double cells = rows * cols;
    // 4 stored n×n stages, 3 working copies, 3 boolean masks, the text of one stage.
    return static_cast<std::uint64_t>(cells * (4 * 8 + 3 * element_size(dtype) + 3 + text_per_cell(format) +
                                               (svg ? svg_per_cell : 0)) +
                                      vectors * (8 + element_size(dtype)) + weights);
}

}  // namespace

std::uint64_t single_trace_bytes(double n, double d_in, double d_k, Dtype dtype, Format format, bool svg) {
    const Shapes s{n, d_in, d_k};
    return trace_bytes_for(s.n, s.n, s.n * (s.d_in + 4 * s.d_k), s.weights(), dtype, format, svg);
}

std::uint64_t single_summary_bytes(double n, double d_in, double d_k, Dtype dtype, bool context, std::size_t top) {
    const double t = element_size(dtype);
    const double per_query = 64 + static_cast<double>(top) * 16 + (context ? d_k * 8 : 0);
    const double scratch = static_cast<double>(omp_get_max_threads()) * (2 * 64 * 256 + 64 * d_k) * t;
    return static_cast<std::uint64_t>(n * (d_in * (8 + t) + 3 * d_k * t + per_query) + scratch +
                                      Shapes{n, d_in, d_k}.weights());
}

std::uint64_t trace_bytes(const Problem& problem, const TraceOptions& options, Format format, bool svg) {
    if (const auto* single = std::get_if<SingleSequenceInput>(&problem.input)) {
        const Shapes s = shapes(*single, options);
        return single_trace_bytes(s.n, s.d_in, s.d_k, options.dtype, format, svg);
    }
    const auto& pair = std::get<EncoderDecoderInput>(problem.input);
    const double rows = static_cast<double>(pair.target.tokens.size());
    const double cols = static_cast<double>(pair.source.tokens.size());
    const double width = static_cast<double>(
        std::max({pair.source.vectors.cols(), pair.target.vectors.cols(), options.dim.value_or(0)}));
    return trace_bytes_for(rows, cols, (rows + cols) * 4 * width, 3 * width * width * 8, options.dtype, format, svg);
}

std::uint64_t summary_bytes(const Problem& problem, const TraceOptions& options, bool context, std::size_t top) {
    const auto* single = std::get_if<SingleSequenceInput>(&problem.input);
    if (!single) return 0;
    const Shapes s = shapes(*single, options);
    return single_summary_bytes(s.n, s.d_in, s.d_k, options.dtype, context, top);
}

std::uint64_t similarity_bytes(std::size_t words, Format format) {
    const double cells = static_cast<double>(words) * static_cast<double>(words);
    return static_cast<std::uint64_t>(cells * (2 * 8 + text_per_cell(format)));
}

void require_memory(std::uint64_t need, std::uint64_t limit, const std::string& origin, std::string_view what,
                    std::string_view hint) {
    if (need <= limit) return;
    throw DataError(fmt::format("{}{}{} needs about {}, more than --max-memory {}{}{}", origin, origin.empty() ? "" : ": ",
                                what, format_size(need), format_size(limit), hint.empty() ? "" : "; ", hint));
}

}  // namespace attntrace
