// What a request will cost, estimated from the loaded problem before anything large is made:
// the memory of each path (refused beyond --max-memory) and the time of the work (refused
// beyond --max-time), each with a message that says the estimate and what to do instead.
#pragma once

#include "attention/trace_options.hpp"
#include "core/problem.hpp"
#include "render/render.hpp"
#include "util/memory.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace attntrace {

// The sizes a request works with.
struct WorkShape {
    double rows = 0, cols = 0;           // the score matrices: queries × keys
    double d_in = 0, d_k = 0, d_v = 0;   // bahdanau: the widest state, d_a and d_h
    double label_bytes = 0;              // the text of the row and column labels
    bool causal = false;                 // only the keys up to each query are visited
    double heads = 1;                    // each head has its own score matrices (d_k, d_v: all heads')
    double kv_heads = 1;                 // key/value heads (grouped-query attention: fewer than heads)
    bool positions = false;              // position stages: embeddings and encodings, or angles and rotated Q, K

    double cells() const { return rows * cols * heads; }
    double visited() const { return causal ? cells() / 2 + rows : cells(); }
};

WorkShape work_shape(const Problem& problem, const TraceOptions& options);

// What a trace writes beside its main output: --svg FILE, --html FILE.
struct AlsoWritten {
    bool svg = false;
    bool page = false;
};

// The trace path at its peak: the stages (stored as double) and their working copies in the
// working precision, the masks, the weights, the labels, the text of the widest stage being
// rendered in `render`'s format and digits, the output held back before it is committed, and
// the SVG and the page's text when they are asked for.
std::uint64_t trace_bytes(const WorkShape& shape, Dtype dtype, const RenderOptions& render, AlsoWritten also);

// The backward pass of the full trace (--backward): the trace as trace_bytes counts it, and
// the gradients: its stages and working copies twice over (the gradients, and the backward
// pass's own copies; with --step-size the stepped trace's as well), with their text in the
// format and on the page.
std::uint64_t backward_bytes(const WorkShape& shape, Dtype dtype, const RenderOptions& render, AlsoWritten also,
                             bool step);

// The streaming path: X, Q, K, V, the per-query results, the context if asked for, the
// labels, and one block of scratch per thread.
std::uint64_t summary_bytes(const WorkShape& shape, Dtype dtype, bool context, std::size_t top);

// The streaming backward pass (--summary --backward): X, Q, K, V, dQ, the rows' log-sum-exp
// and D, a target and its dZ, each thread's tiles, the weights and their gradients, the labels
// and the norms' text.
std::uint64_t stream_backward_bytes(const WorkShape& shape, Dtype dtype, bool target);

// The full trace as it is held once computed, before anything is rendered: its stages, the
// working copies, the masks, the weights and the labels (trace_bytes less the text).
std::uint64_t trace_held_bytes(const WorkShape& shape, Dtype dtype);

// decode beside its full trace: which steps it shows.
struct DecodeSteps {
    double prefill = 1;                 // the steps are positions prefill + 1 … n
    std::optional<double> step;         // --step: that position's alone
};

// decode: the full trace, every step's vectors, the caches, and what the format holds while
// it writes (the text formats build every step's report, its tables and their labels, before
// the first is written; JSON and CSV write as they go), and the output held back.
std::uint64_t decode_bytes(const WorkShape& shape, Dtype dtype, const RenderOptions& render, const DecodeSteps& steps);

// attntrace rnn: the embeddings (as read, made whole and the report's copy), the hidden states
// and the report's copy, attention's keys and values, the d_h × d_h matrices of the chain back
// through the steps, the labels, and the report's text in `render`'s format with the output
// held back. `shape` is the self-attention work_shape of the input.
std::uint64_t rnn_bytes(const WorkShape& shape, double d_h, const RenderOptions& render);

// similarity: two words × words tables, their copies in the report, their text (each cell of
// both tables, or JSON's buffer of the whole document), the output held back, the vectors.
std::uint64_t similarity_bytes(std::size_t words, double d, const RenderOptions& render);

// similarity --svg: the plane of `words` vectors of d numbers (a scaled copy, the smaller Gram
// matrix and what its eigensolver holds) and the picture's text.
std::uint64_t plane_bytes(std::size_t words, double d);

// Seconds the work takes on this machine (rates measured on the project's 2-core machine,
// docs/robustness.md), shared out over the OpenMP threads where it runs in parallel.
double trace_seconds(const WorkShape& shape, Format format, AlsoWritten also = {});  // the page's writing too
// --check with --backward: four traces for each of `entries` moved (more where h is halved,
// which the estimate leaves out).
double gradient_check_seconds(const WorkShape& shape, double entries);
double rnn_seconds(const WorkShape& shape, double d_h, Format format);
double summary_seconds(const WorkShape& shape);
double stream_backward_seconds(const WorkShape& shape);
double decode_seconds(const WorkShape& shape, Format format, const DecodeSteps& steps);
double similarity_seconds(std::size_t words, double d, Format format);
double plane_seconds(std::size_t words, double d);

// Throws DataError "ORIGIN: WHAT needs about N, more than --max-memory M; HINT" when need > limit
// (an empty origin is left out).
void require_memory(std::uint64_t need, const MemoryLimit& limit, const std::string& origin, std::string_view what,
                    std::string_view hint);

// --max-time: seconds, 0 for no limit.
inline constexpr double default_max_seconds = 300;

// How the estimated work runs: on --threads' threads, or on one (the RNN's serial steps), which
// the refusal names.
enum class Threads { all, one };

// Throws DataError "ORIGIN: WHAT takes about T on N threads of this machine, more than
// --max-time L; HINT" when seconds > limit (and limit > 0); N is --threads' count, or 1 for
// Threads::one.
void require_time(double seconds, double limit, const std::string& origin, std::string_view what,
                  std::string_view hint, Threads on = Threads::all);

// Throws UsageError "--head H: this run has N heads" when --head names a head the run does not
// have (0, every head, always passes).
void require_head(int head, std::int64_t heads);

}  // namespace attntrace
