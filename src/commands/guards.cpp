#include "commands/guards.hpp"

#include "attention/modes.hpp"
#include "attention/streaming.hpp"
#include "core/error.hpp"
#include "util/duration.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>

namespace attntrace {
namespace {

double element_size(Dtype dtype) { return dtype == Dtype::float32 ? 4 : 8; }

// The text of one number in a rendered stage. JSON writes into a buffer that may be twice
// the text (it grows by doubling): up to 24 characters and a separator. Table, markdown and
// CSV hold each cell as a string (32 bytes, plus a heap block beyond 15 characters), and the
// table a second, padded copy of it.
double text_per_cell(const RenderOptions& render) {
    if (render.format == Format::json) return 2 * 26;
    const double length = render.digits + 8;  // sign, integer part, point, decimals
    const double cell = 32 + (length > 15 ? length + 17 : 0);
    return render.format == Format::table ? 2 * cell : cell;
}
constexpr double svg_per_cell = 400;  // a rectangle, a tooltip and a label
// Labels are held by the input text, its parsed document, the loaded problem and the trace,
// with a copy's worth of room for the bookkeeping around them.
constexpr double label_copies = 5;
// JSON writes every label of a stage in full, rows and columns, into a buffer that may be
// twice the text; the other formats copy a stage's labels into its cell model.
double rendered_label_bytes(const WorkShape& s, const RenderOptions& render) {
    return (render.format == Format::json ? 4 : 2) * s.label_bytes;
}
constexpr double stages_with_labels = 9;
// What a standard output keeps before it is committed (util/output.hpp).
constexpr double held_output = 16 << 20;

// The n × d stages: inputs, queries, keys, values, context; with positions, the embeddings
// and encodings (sinusoidal) or the angles and the rotated queries and keys (RoPE), whichever
// is larger.
double matrix_bytes(const WorkShape& s) {
    return s.rows * (s.d_in + 2 * s.d_k + 2 * s.d_v + (s.positions ? std::max(2 * s.d_in, 3 * s.d_k) : 0));
}

}  // namespace

WorkShape work_shape(const Problem& problem, const TraceOptions& options) {
    WorkShape s;
    const auto labels = [](const std::vector<std::string>& tokens) {
        double bytes = 0;
        for (const auto& token : tokens) bytes += static_cast<double>(token.size()) + 32;
        return bytes;
    };
    if (const auto* single = std::get_if<SingleSequenceInput>(&problem.input)) {
        s.rows = s.cols = static_cast<double>(single->sequence.tokens.size());
        s.d_in = static_cast<double>(single->sequence.vectors.cols());
        s.d_k = single->weights ? static_cast<double>(single->weights->query.cols())
                                : static_cast<double>(options.dim.value_or(single->sequence.vectors.cols()));
        s.d_v = single->weights ? static_cast<double>(single->weights->value.cols()) : s.d_k;
        if (!mode_spec(options.mode).learned_projections) s.d_k = s.d_v = s.d_in;
        s.label_bytes = labels(single->sequence.tokens);
        s.causal = mode_spec(options.mode).causal;
        if (mode_spec(options.mode).takes_heads) s.heads = options.heads.value_or(single->heads.value_or(1));
        if (mode_spec(options.mode).takes_positions())
            s.positions = options.positions.value_or(single->positions.value_or(PositionScheme::none)) != PositionScheme::none;
        return s;
    }
    const auto& pair = std::get<EncoderDecoderInput>(problem.input);
    s.rows = static_cast<double>(pair.target.tokens.size());
    s.cols = static_cast<double>(pair.source.tokens.size());
    s.d_in = static_cast<double>(std::max(pair.source.vectors.cols(), pair.target.vectors.cols()));
    s.d_k = static_cast<double>(std::max(options.dim.value_or(0), pair.source.vectors.cols()));
    s.d_v = static_cast<double>(pair.source.vectors.cols());
    s.label_bytes = labels(pair.source.tokens) + labels(pair.target.tokens);
    return s;
}

std::uint64_t trace_bytes(const WorkShape& s, Dtype dtype, const RenderOptions& render, bool svg) {
    const double cells = s.cells();
    const double widest = std::max({cells, s.rows * s.d_in, s.rows * s.d_k, s.rows * s.d_v, s.cols * s.d_k});
    const double stages = 4 * cells * 8 + matrix_bytes(s) * 8;                       // stored as double
    const double working = 3 * cells * element_size(dtype) + matrix_bytes(s) * element_size(dtype);
    const double masks = 4 * cells;  // allowed (built once, then the masked and weights stages' copies) and the reasons
    // W_q, W_k, W_v: generated or copied from the input, converted for the products, and kept
    // by the trace to show them
    const double weights = 3 * s.d_in * std::max(s.d_k, s.d_v) * 8 * 3;
    const double text = widest * text_per_cell(render) + rendered_label_bytes(s, render);
    const double output = (4 * cells + matrix_bytes(s) + 3 * s.d_in * std::max(s.d_k, s.d_v)) * 26 +
                          (render.format == Format::json ? 2 * s.label_bytes * stages_with_labels : 0);
    return static_cast<std::uint64_t>(stages + working + masks + weights + s.label_bytes * label_copies + text +
                                      std::min(held_output, output) + (svg ? cells * svg_per_cell : 0));
}

std::uint64_t summary_bytes(const WorkShape& s, Dtype dtype, bool context, std::size_t top) {
    // With several heads (d_k, d_v: all heads' columns) each value head's columns are copied
    // (the queries and keys are read in place; `copies` still counts all three, which keeps the
    // estimate above the peak measured for 8 heads of 64 at n = 8192: 193 MiB in float32, 200
    // estimated), each head has its own top keys, and the context is each head's, side by
    // side, and mixed by W_o.
    const double t = element_size(dtype), h = s.heads;
    const double per_query = h * (64 + static_cast<double>(top) * 16) + (context ? s.d_v * 8 * (h > 1 ? 3 : 1) : 0);
    const double block = static_cast<double>(stream_query_block), keys = static_cast<double>(stream_key_block);
    const double scratch = static_cast<double>(omp_get_max_threads()) * (2 * block * keys + block * s.d_v / h) * t;
    const double key_panels = (s.cols + keys) * s.d_k * t;  // K transposed by key block (streaming.cpp)
    const double weights = 4 * s.d_in * std::max(s.d_k, s.d_v) * 8 * 2;
    const double copies = h > 1 ? (s.d_k * 2 + s.d_v) * t : 0;
    const double text = s.rows * (h * (100 + static_cast<double>(top) * 40) + (context ? s.d_v * 26 : 0));
    return static_cast<std::uint64_t>(s.rows * (s.d_in * (8 + t) + (s.d_k * 2 + s.d_v) * t + copies + per_query) + scratch +
                                      key_panels + weights + s.label_bytes * label_copies + std::min(held_output, text));
}

std::uint64_t similarity_bytes(std::size_t words, double d, const RenderOptions& render) {
    const double n = static_cast<double>(words);
    return static_cast<std::uint64_t>(n * n * (2 * 8 + text_per_cell(render)) + 3 * n * d * 8 +
                                      std::min(held_output, 2 * n * n * 26));
}

// The Gram matrix is min(n, d)² (attention/similarity.cpp); the eigensolver keeps a copy and
// the eigenvectors beside it. Each word's arrow, label and tooltip take about 600 bytes of
// SVG, its label and word a copy or two more.
std::uint64_t plane_bytes(std::size_t words, double d) {
    const double n = static_cast<double>(words), m = std::min(n, d);
    return static_cast<std::uint64_t>(8 * (n * d + 3 * m * m + 4 * n) + n * (600 + 2 * 64) + 16384);
}

// The rates behind the estimates, per thread, measured with `attntrace --threads 1` on the
// project's machine (2-core Xeon, float64): the streaming path spends about 2 ns on each
// visited score plus 0.03 ns per number of d_k + d_v; the trace path about 45 ns plus 0.45 ns
// per number, and rendering (on one thread) about 100 ns per number written (250 ns in a
// table, which also measures and pads every cell).
double summary_seconds(const WorkShape& s) {
    const double per_score = 2.0e-9 + 0.03e-9 * (s.d_k + s.d_v) / s.heads;  // a head's share of the columns
    return s.visited() * per_score / omp_get_max_threads();
}

double trace_seconds(const WorkShape& s, Format format) {
    const double compute = s.visited() * (45e-9 + 0.45e-9 * (s.d_k + s.d_v)) / omp_get_max_threads();
    const double numbers = 4 * s.cells() + matrix_bytes(s);
    return compute + numbers * (format == Format::table ? 250e-9 : 100e-9);
}

double similarity_seconds(std::size_t words, double d) {
    const double pairs = static_cast<double>(words) * static_cast<double>(words);
    return pairs * (2 * 0.45e-9 * d / omp_get_max_threads() + 2 * 250e-9);
}

// Measured on the project's machine with `attntrace similarity --svg` on generated inputs
// (Eigen's products and eigensolver run on one thread here): the Gram matrix takes about
// 0.06 ns per multiply-add of its n·d·m, the eigensolver about 0.7 ns per m³ (2000 words of
// 2000 numbers: 6 s), and the picture about 2 µs per word; the rates below leave some room.
double plane_seconds(std::size_t words, double d) {
    const double n = static_cast<double>(words), m = std::min(n, d);
    return n * d * m * 0.1e-9 + m * m * m * 1e-9 + n * 2e-6;
}

void require_memory(std::uint64_t need, const MemoryLimit& limit, const std::string& origin, std::string_view what,
                    std::string_view hint) {
    if (need <= limit.bytes) return;
    throw DataError(fmt::format("{}{}{} needs about {}, more than {}{}{}", origin, origin.empty() ? "" : ": ", what,
                                format_size(need), limit.describe(), hint.empty() ? "" : "; ", hint));
}

void require_time(double seconds, double limit, const std::string& origin, std::string_view what,
                  std::string_view hint) {
    if (limit <= 0 || seconds <= limit) return;
    const int threads = omp_get_max_threads();
    throw DataError(fmt::format("{}{}{} takes about {} on {} thread{} of this machine, more than --max-time {}; {}"
                                "--max-time 0 accepts long work",
                                origin, origin.empty() ? "" : ": ", what, format_duration(seconds), threads,
                                threads == 1 ? "" : "s", format_limit(limit), hint.empty() ? "" : fmt::format("{}, or ", hint)));
}

}  // namespace attntrace
