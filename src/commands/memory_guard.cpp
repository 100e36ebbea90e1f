#include "commands/memory_guard.hpp"

#include "error.hpp"
#include "util/memory.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>

namespace attntrace {
namespace {

double element_size(const TraceOptions& options) { return options.dtype == Dtype::float32 ? 4 : 8; }

// A rendered table cell: a number as text (JSON: ~20 bytes; table, markdown, CSV: a string
// object in the cell model, ~40 bytes).
double text_per_cell(Format format) { return format == Format::json ? 25 : 40; }

}  // namespace

std::uint64_t trace_bytes(const Problem& problem, const TraceOptions& options, Format format) {
    double rows = 0, cols = 0, vectors = 0;
    if (const auto* single = std::get_if<SingleSequenceInput>(&problem.input)) {
        rows = cols = static_cast<double>(single->sequence.tokens.size());
        const double d_in = static_cast<double>(single->sequence.vectors.cols());
        const double d_k = single->weights ? static_cast<double>(single->weights->query.cols())
                                           : static_cast<double>(options.dim.value_or(single->sequence.vectors.cols()));
        vectors = rows * (d_in + 4 * d_k);  // inputs, queries, keys, values, context
    } else {
        const auto& pair = std::get<EncoderDecoderInput>(problem.input);
        rows = static_cast<double>(pair.target.tokens.size());
        cols = static_cast<double>(pair.source.tokens.size());
        const double width = static_cast<double>(std::max(pair.source.vectors.cols(), pair.target.vectors.cols()));
        vectors = (rows + cols) * 4 * width;
    }
    const double cells = rows * cols;
    // 4 stored n×n stages, 3 working copies, 3 boolean masks, the text of one stage.
    return static_cast<std::uint64_t>(cells * (4 * 8 + 3 * element_size(options) + 3 + text_per_cell(format)) +
                                      vectors * (8 + element_size(options)));
}

std::uint64_t summary_bytes(const Problem& problem, const TraceOptions& options, bool context, std::size_t top) {
    const auto* single = std::get_if<SingleSequenceInput>(&problem.input);
    if (!single) return 0;
    const double n = static_cast<double>(single->sequence.tokens.size());
    const double d_in = static_cast<double>(single->sequence.vectors.cols());
    const double d = single->weights ? static_cast<double>(single->weights->value.cols())
                                     : static_cast<double>(options.dim.value_or(single->sequence.vectors.cols()));
    const double t = element_size(options);
    const double per_query = 64 + static_cast<double>(top) * 16 + (context ? d * 8 : 0);
    const double scratch = static_cast<double>(omp_get_max_threads()) * (2 * 64 * 256 + 64 * d) * t;
    return static_cast<std::uint64_t>(n * (d_in * (8 + t) + 3 * d * t + per_query) + scratch);
}

std::uint64_t similarity_bytes(std::size_t words, Format format) {
    const double cells = static_cast<double>(words) * static_cast<double>(words);
    return static_cast<std::uint64_t>(cells * (2 * 8 + text_per_cell(format)));
}

void require_memory(std::uint64_t need, std::uint64_t limit, const std::string& origin, std::string_view what,
                    std::string_view hint) {
    if (need <= limit) return;
    throw DataError(fmt::format("{}: {} needs about {}, more than --max-memory {}{}{}", origin, what, format_size(need),
                                format_size(limit), hint.empty() ? "" : "; ", hint));
}

}  // namespace attntrace
