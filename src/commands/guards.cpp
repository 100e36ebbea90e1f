#include "commands/guards.hpp"

#include "attention/modes.hpp"
#include "attention/streaming.hpp"
#include "attention/streaming_backward.hpp"
#include "core/error.hpp"
#include "util/duration.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>

namespace attntrace {
namespace {

double element_size(Dtype dtype) { return dtype == Dtype::float32 ? 4 : 8; }

// What writing costs in a format: its renderer's own figures (render.hpp, RenderCost).
RenderCost cost_of(const RenderOptions& render) { return renderer(render.format).cost(render); }
RenderCost cost_of(Format format) {
    RenderOptions render;
    render.format = format;
    return cost_of(render);
}

constexpr double svg_per_cell = 400;  // a rectangle, a tooltip and a label
// Labels are held by the input text, its parsed document, the loaded problem and the trace,
// with a copy's worth of room for the bookkeeping around them.
constexpr double label_copies = 5;
constexpr double stages_with_labels = 9;
// What a standard output keeps before it is committed (util/output.hpp): up to 16 MiB, in a
// buffer that doubles from 64 KiB, so that while it grows to 16 MiB the 8 MiB it held are
// there too. `bytes` of output are held in at most three times their size, 24 MiB at most.
double held(double bytes) { return std::min(24.0 * (1 << 20), 3 * bytes); }

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
    switch (family_of(problem)) {
    case ModeFamily::single_sequence: {
        const auto* single = &std::get<SingleSequenceInput>(problem.input);
        s.rows = s.cols = static_cast<double>(single->sequence.tokens.size());
        s.d_in = static_cast<double>(single->sequence.vectors.cols());
        s.d_k = single->weights ? static_cast<double>(single->weights->query.cols())
                                : static_cast<double>(options.dim.value_or(single->sequence.vectors.cols()));
        s.d_v = single->weights ? static_cast<double>(single->weights->value.cols()) : s.d_k;
        if (!mode_spec(options.mode).learned_projections) s.d_k = s.d_v = s.d_in;
        s.label_bytes = labels(single->sequence.tokens);
        s.causal = mode_spec(options.mode).causal;
        if (mode_spec(options.mode).takes_heads) {
            s.heads = options.heads.value_or(single->heads.value_or(1));
            s.kv_heads = options.kv_heads.value_or(single->kv_heads.value_or(static_cast<int>(s.heads)));
        }
        if (mode_spec(options.mode).takes_positions())
            s.positions = options.positions.value_or(single->positions.value_or(PositionScheme::none)) != PositionScheme::none;
        return s;
    }
    case ModeFamily::encoder_decoder: {
        const auto& pair = std::get<EncoderDecoderInput>(problem.input);
        s.rows = static_cast<double>(pair.target.tokens.size());
        s.cols = static_cast<double>(pair.source.tokens.size());
        s.d_in = static_cast<double>(std::max(pair.source.vectors.cols(), pair.target.vectors.cols()));
        s.d_k = static_cast<double>(std::max(options.dim.value_or(0), pair.source.vectors.cols()));
        s.d_v = static_cast<double>(pair.source.vectors.cols());
        s.label_bytes = labels(pair.source.tokens) + labels(pair.target.tokens);
        return s;
    }
    }
    unknown_family();
}

std::uint64_t trace_held_bytes(const WorkShape& s, Dtype dtype) {
    const double cells = s.cells();
    const double stages = 4 * cells * 8 + matrix_bytes(s) * 8;                       // stored as double
    const double working = 3 * cells * element_size(dtype) + matrix_bytes(s) * element_size(dtype);
    const double masks = 4 * cells;  // allowed (built once, then the masked and weights stages' copies) and the reasons
    // W_q, W_k, W_v: generated or copied from the input, converted for the products, and kept
    // by the trace to show them
    const double weights = 3 * s.d_in * std::max(s.d_k, s.d_v) * 8 * 3;
    return static_cast<std::uint64_t>(stages + working + masks + weights + s.label_bytes * label_copies);
}

namespace {

// The text a format holds while it writes: the widest stage's numbers and the labels.
double text_bytes(const WorkShape& s, const RenderCost& cost) {
    const double widest = std::max({s.cells(), s.rows * s.d_in, s.rows * s.d_k, s.rows * s.d_v, s.cols * s.d_k});
    return widest * cost.cell_bytes + cost.label_copies * s.label_bytes;
}

// A full trace written: `copies` sets of stages (the forward stages; with --backward their
// gradients too), each with its text, in the output held back and on the page of --html FILE.
// That page goes to its file through a small buffer, so it adds its own text alone; it is
// counted as held beside the main output's, though it is written (and its text let go) first:
// at n = 1,000 (-f json beside it) the estimate is 2.2 times the peak.
double written_bytes(const WorkShape& s, const RenderOptions& render, AlsoWritten also, double copies) {
    const double cells = s.cells();
    const RenderCost cost = cost_of(render);
    const double output = (4 * cells + matrix_bytes(s) + 3 * s.d_in * std::max(s.d_k, s.d_v)) * 26 +
                          cost.written_label_copies * s.label_bytes * stages_with_labels;
    const double page = also.page ? text_bytes(s, cost_of(Format::html)) : 0;
    return copies * (text_bytes(s, cost) + page) + held(copies * output) + (also.svg ? cells * svg_per_cell : 0);
}

}  // namespace

std::uint64_t trace_bytes(const WorkShape& s, Dtype dtype, const RenderOptions& render, AlsoWritten also) {
    return trace_held_bytes(s, dtype) + static_cast<std::uint64_t>(written_bytes(s, render, also, 1));
}

// Measured (peak resident memory above the built-in example's), self, --backward sum: at
// n = 600, d = 8, JSON on standard output 64 MiB, the table 77, CSV 64, for estimates of 123,
// 131 and 109; at n = 200, d = 64, JSON 32 MiB for 39 (the output held back is most of it).
std::uint64_t backward_bytes(const WorkShape& s, Dtype dtype, const RenderOptions& render, AlsoWritten also, bool step) {
    const double gradients = static_cast<double>(trace_held_bytes(s, Dtype::float64)) * (step ? 3 : 2);
    return trace_held_bytes(s, dtype) + static_cast<std::uint64_t>(gradients + written_bytes(s, render, also, 2));
}

namespace {

// A string's own bytes and its heap block, for a cell of `length` characters.
double string_bytes(double length) { return 32 + (length > 15 ? length + 17 : 0); }

// The sizes of decode's steps: how many, and how many cached keys they score in all
// (position p scores p keys).
struct DecodeCounts {
    double steps = 0, keys = 0;
};
DecodeCounts decode_counts(const WorkShape& s, const DecodeSteps& d) {
    if (d.step) return {1, *d.step};
    const double n = s.rows, p = std::min(d.prefill, n);
    return {n - p, (n * (n + 1) - p * (p + 1)) / 2};
}

// A head's columns: d_k is every query head's, d_v every key/value head's (or, for generated
// weights, as wide as d_k).
double head_width(const WorkShape& s) { return s.d_k / std::max(s.heads, 1.0); }
double value_width(const WorkShape& s) { return s.d_v / std::max(std::min(s.kv_heads, s.heads), 1.0); }

// The numbers a decode writes in the text formats: per step the whole cache of every key/value
// head (keys and values) and each head's scores, scaled scores and weights, with a label per
// cached key in each table; and the step's vectors (x, q, k, v, z).
double decode_text_numbers(const WorkShape& s, const DecodeCounts& c) {
    const double dh = head_width(s), dv = value_width(s);
    return c.keys * (s.kv_heads * (dh + dv) + 3 * s.heads) + c.steps * (s.d_in + (s.heads + 2 * s.kv_heads) * (dh + dv));
}

}  // namespace

std::uint64_t decode_bytes(const WorkShape& s, Dtype dtype, const RenderOptions& render, const DecodeSteps& d) {
    const DecodeCounts c = decode_counts(s, d);
    const double H = s.heads, G = s.kv_heads, dh = head_width(s), dv = value_width(s), n = s.rows;
    const double label = s.label_bytes / std::max(n, 1.0);  // a token's label as a string, on average
    // Every step's vectors (x, and each head's q, context, scores, scaled scores and weights);
    // the caches, as the steps grow them row by row and as the result holds them.
    const double steps = c.steps * ((s.d_in + H * (dh + dv) + 2 * G * (dh + dv)) * 8 + (5 * H + 3) * 32) + c.keys * H * 3 * 8;
    const double caches = 2 * G * n * ((dh + dv) * 8 + 2 * 32);
    const double digits = render.digits + 8;  // a number as the text formats write it
    const RenderCost cost = cost_of(render);
    double text = 0, output = 0;
    switch (cost.decode) {
    case DecodeLayout::reports: {
        // Every step's report is made before the first is written: its cache tables (the rows
        // as doubles and a label per cached token) and each head's table of three rows.
        // Measured: 259 bytes a cached key (600 tokens of 8 numbers, one head) where this counts
        // 263; a fifth more leaves room for what else the reports hold.
        text = 1.2 * (c.keys * (G * ((dh + dv) * 8 + 2 * label) + H * (3 * 8 + label + 3)) +
                      c.steps * (s.d_in + (H + 2 * G) * (dh + dv)) * string_bytes(digits));
        // The cells of the largest report, while it is written.
        const double last = d.step ? *d.step : n;
        text += last * (G * 2 * (dh + dv) + 3 * H) * cost.cell_bytes + last * (2 * G + H) * label;
        output = decode_text_numbers(s, c) * (digits + 3);
        break;
    }
    case DecodeLayout::cache_lines: output = c.keys * H * (80 + 2 * label) + c.steps * H * dv * 26; break;
    case DecodeLayout::stream: output = decode_text_numbers(s, c) * 26; break;  // written a step at a time
    }
    return trace_held_bytes(s, dtype) + static_cast<std::uint64_t>(steps + caches + text + held(output));
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
    // Each thread after the first, once it starts: its stack and its allocator's arena. The
    // summary of 600 tokens of d = 8 peaked about 1 MiB higher on two threads than on one
    // (/usr/bin/time, eight runs each: medians 9.09 and 8.14 MiB).
    const double threads = static_cast<double>(omp_get_max_threads() - 1) * 1024 * 1024;
    return static_cast<std::uint64_t>(s.rows * (s.d_in * (8 + t) + (s.d_k * 2 + s.d_v) * t + copies + per_query) + scratch +
                                      key_panels + weights + threads + s.label_bytes * label_copies + held(text));
}

std::uint64_t stream_backward_bytes(const WorkShape& s, Dtype dtype, bool target) {
    // Per token (attention/streaming_backward.hpp): X as read (double) and in T with positions
    // or ln_1, Q, K, V and dQ, dX's block, ℓ and D per head, the norm and its text; a target's
    // T (double) and dZ (T). Per thread: two tiles of scores and their dK and dV sums, and the
    // queries of a block made again. The weights and their gradients, in double and in T.
    const double t = element_size(dtype), h = s.heads;
    const double tile = static_cast<double>(backward_tile);
    const double per_token = s.d_in * (8 + 2 * t) + (2 * s.d_k + s.d_v + s.d_k) * t + 2 * h * t + 8 + 32 +
                             (target ? s.d_v * (8 + t) : 0);
    const double scratch =
        static_cast<double>(omp_get_max_threads()) * (2 * tile * tile + tile * (3 * s.d_k + 2 * s.d_v)) * t;
    const double weights = 4 * s.d_in * std::max(s.d_k, s.d_v) * (8 + t) * 2;
    // Measured at n = 4000, d_in = 64, causal, sum: the peaks were 17.7 MiB (float64) and
    // 11.4 MiB (float32) above the built-in example's, against 18.8 and 11.2 estimated without
    // the quarter added here for what the terms leave out (the allocator's slack, the threads).
    return static_cast<std::uint64_t>(1.25 * (s.rows * per_token + scratch + weights) + s.label_bytes * label_copies +
                                      held(s.rows * 40));
}

std::uint64_t similarity_bytes(std::size_t words, double d, const RenderOptions& render) {
    const double n = static_cast<double>(words), pairs = n * n;
    // Both tables (dot products and cosines), as the format holds them while it writes them.
    const RenderCost cost = cost_of(render);
    const double output = 2 * pairs * cost.similarity_number_chars;
    return static_cast<std::uint64_t>(pairs * cost.similarity_pair_bytes + 3 * n * d * 8 + held(output));
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
// per number. Rendering runs on one thread, at each format's rate per number written (its
// renderer's RenderCost).
double summary_seconds(const WorkShape& s) {
    const double per_score = 2.0e-9 + 0.03e-9 * (s.d_k + s.d_v) / s.heads;  // a head's share of the columns
    return s.visited() * per_score / omp_get_max_threads();
}

// The backward pass's products are about 2.5 times the forward's, each score's exponential is
// computed again, and the forward pass runs first. Measured at n = 4000, d_in = 64, float64,
// one thread: 0.25 s of CPU time causal and 0.43 s self, 5.3 and 4.6 times summary_seconds;
// 7 leaves a third more.
double stream_backward_seconds(const WorkShape& s) { return 7 * summary_seconds(s); }

namespace {

double trace_compute_seconds(const WorkShape& s) {
    return s.visited() * (45e-9 + 0.45e-9 * (s.d_k + s.d_v)) / omp_get_max_threads();
}

}  // namespace

// Measured: 20,000 tokens of 64 numbers with d_h = 64 peaked at 130 MiB in the table (to a
// file; 155 to a pipe) and 150 in JSON, for estimates of 255 and 226.
std::uint64_t rnn_bytes(const WorkShape& s, double d_h, const RenderOptions& render) {
    const double numbers = s.rows * (3 * s.d_in + 2 * d_h + s.d_k + s.d_v + 4) + 6 * d_h * std::max(d_h, s.d_in);
    const double cells = s.rows * (s.d_in + d_h + 2);  // written: the embeddings, the states, the two influences
    const RenderCost cost = cost_of(render);
    return static_cast<std::uint64_t>(numbers * 8 + s.label_bytes * label_copies + cells * cost.cell_bytes +
                                      held(cells * 26));
}

// A step back through the RNN multiplies d_h × d_h by d_h × d_h and by d_h × d_in: 0.23 ns a
// multiply-add at d_h = 64 and 0.8 at d_h = 256 on one thread here (the steps are serial), 1 ns
// taken.
double rnn_seconds(const WorkShape& s, double d_h, Format format) {
    const double steps = s.rows * (d_h * d_h * (d_h + s.d_in) + d_h * (s.d_in + d_h));
    const double attention = s.rows * s.d_in * (s.d_k + 3 * s.d_v);
    return (steps + attention) * 1e-9 + s.rows * (s.d_in + d_h + 2) * cost_of(format).seconds_per_number;
}

// At n = 600, d = 8, self (4,992 entries): 188 s estimated, 117 s measured.
double gradient_check_seconds(const WorkShape& s, double entries) { return 4 * entries * trace_compute_seconds(s); }

double trace_seconds(const WorkShape& s, Format format, AlsoWritten also) {
    const double numbers = 4 * s.cells() + matrix_bytes(s);
    const double per_number = cost_of(format).seconds_per_number + (also.page ? cost_of(Format::html).seconds_per_number : 0);
    return trace_compute_seconds(s) + numbers * per_number;
}

// decode, measured the same way (1000 tokens of 8 numbers, one head: 9.5 million numbers in
// the text formats): the steps' own plain loops take about 2 ns per multiply-add, the
// rendering each format's rate (its RenderCost).
double decode_seconds(const WorkShape& s, Format format, const DecodeSteps& d) {
    const DecodeCounts c = decode_counts(s, d);
    const double dh = head_width(s), dv = value_width(s);
    const double steps = c.keys * s.heads * (dh + dv + 3) * 2e-9 + c.steps * s.d_in * (s.heads + 2 * s.kv_heads) * (dh + dv) * 2e-9;
    const RenderCost cost = cost_of(format);
    double render = 0;
    switch (cost.decode) {
    case DecodeLayout::reports: render = decode_text_numbers(s, c) * cost.decode_seconds_per_number; break;
    case DecodeLayout::cache_lines:
        render = c.keys * s.heads * cost.decode_seconds_per_line + c.steps * s.heads * dv * cost.decode_seconds_per_number;
        break;
    case DecodeLayout::stream:
        render = (c.keys * 3 * s.heads + c.steps * (s.d_in + (s.heads + 2 * s.kv_heads) * (dh + dv))) *
                 cost.decode_seconds_per_number;
        break;
    }
    return trace_compute_seconds(s) + steps + render;
}

// similarity, measured on 1500 words (two tables of 2.25 million numbers): each format's rate
// per number written (its RenderCost).
double similarity_seconds(std::size_t words, double d, Format format) {
    const double pairs = static_cast<double>(words) * static_cast<double>(words);
    const double per_number = cost_of(format).similarity_seconds_per_number;
    return pairs * (2 * 0.45e-9 * d / omp_get_max_threads() + 2 * per_number);
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
                  std::string_view hint, Threads on) {
    if (limit <= 0 || seconds <= limit) return;
    const int threads = on == Threads::one ? 1 : omp_get_max_threads();
    throw DataError(fmt::format("{}{}{} takes about {} on {} thread{} of this machine, more than --max-time {}; {}"
                                "--max-time 0 accepts long work",
                                origin, origin.empty() ? "" : ": ", what, format_duration(seconds), threads,
                                threads == 1 ? "" : "s", format_limit(limit), hint.empty() ? "" : fmt::format("{}, or ", hint)));
}

void require_head(int head, std::int64_t heads) {
    if (head <= heads) return;
    throw UsageError(fmt::format("--head {}: this run has {} head{}{}", head, heads, heads == 1 ? "" : "s",
                                 heads == 1 ? " (--heads H splits the projections into H)" : ""));
}

}  // namespace attntrace
