#include "attention/summary.hpp"

#include "attention/affine.hpp"
#include "attention/kernels.hpp"
#include "attention/modes.hpp"
#include "attention/overflow.hpp"
#include "attention/positions.hpp"
#include "attention/single.hpp"
#include "attention/trace.hpp"
#include "util/parallel.hpp"
#include "core/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <type_traits>

namespace attntrace {
namespace {

// True when no entry is infinite or NaN. One vectorised pass: the largest magnitude, with NaN
// propagated, is finite exactly then. (Eigen's allFinite() tests x − x == x − x one entry at
// a time, which cost 15 ms on the four 8192×64 matrices of a long input.)
template <typename Derived>
bool all_finite(const Eigen::MatrixBase<Derived>& m) {
    return m.size() == 0 || std::isfinite(m.cwiseAbs().template maxCoeff<Eigen::PropagateNaN>());
}

// The first entry of `m` that is not finite, named as the trace path names it.
template <typename T>
void require_finite(const MatrixT<T>& m, StageId stage, const Labels& tokens, std::string_view column,
                    const std::string& origin) {
    if (all_finite(m)) return;
    for (Eigen::Index r = 0; r < m.rows(); ++r)
        for (Eigen::Index c = 0; c < m.cols(); ++c)
            if (!std::isfinite(m(r, c)))
                throw_overflow(origin, stage, tokens[static_cast<std::size_t>(r)], r, fmt::format("{}{}", column, c + 1), c,
                               static_cast<double>(m(r, c)));
}

// A query row whose summary is not finite had a score that overflowed: find the first such
// key by recomputing that row's scores, and name the pair as the trace path would.
template <typename T>
void require_finite_scores(const StreamResult& result, const RowsView<T>& q, const RowsView<T>& k, const Summary& summary,
                           double scale, bool causal) {
    const Labels& tokens = summary.tokens;
    const std::string& origin = summary.origin;
    for (std::size_t i = 0; i < result.queries.size(); ++i) {
        const QuerySummary& s = result.queries[i];
        if (std::isfinite(s.max_weight) && std::isfinite(s.entropy) &&
            std::all_of(s.top.begin(), s.top.end(), [](const KeyWeight& w) { return std::isfinite(w.weight); }) &&
            (result.context.size() == 0 || all_finite(result.context.row(static_cast<Eigen::Index>(i)))))
            continue;
        const auto row = static_cast<Eigen::Index>(i);
        for (Eigen::Index j = 0; j < (causal ? row + 1 : k.rows()); ++j) {
            const double dot = static_cast<double>(q.row(row).dot(k.row(j)));
            if (!std::isfinite(dot * scale))
                throw_overflow(origin, StageId::scores, tokens[i], row, tokens[static_cast<std::size_t>(j)], j, dot * scale,
                               "the entry", std::isfinite(dot) ? division_overflow_cause(summary.scale, summary.temperature)
                                                               : std::string(input_too_large));
        }
        throw DataError(fmt::format("{}: the summary of \"{}\" (row {}) is not finite; the input numbers are too large",
                                    origin, printable(tokens[i]), i + 1));
    }
}

// The largest magnitude an entry of X·W + b can have, computed in double from X's largest
// magnitude and the largest column sum of |W| (W and b as T holds them):
// |Σ_k x_ik·w_kj + b_j| ≤ max|x|·Σ_k |w_kj| + max|b|.
template <typename T>
double projection_bound(double x_max, const MatrixT<T>& w, const std::optional<Vector>& bias) {
    double column_max = 0;
    for (Eigen::Index j = 0; j < w.cols(); ++j) {
        double column = 0;
        for (Eigen::Index k = 0; k < w.rows(); ++k) column += std::abs(static_cast<double>(w(k, j)));
        column_max = std::max(column_max, column);
    }
    const double bias_max = bias ? bias->cast<T>().template cast<double>().cwiseAbs().maxCoeff() : 0.0;
    return x_max * column_max + bias_max;
}

// Q = X·W_q, K = X·W_k, V = X·W_v (plus their biases) with X converted to T as the products
// read it, a block of rows at a time (project_filled). The products go through the kernels
// (projections.cpp), which run this CPU's widest copy and multiply by the same fixed blocks of
// rows as the trace: Q, K and V are the trace's numbers, whatever the thread count. (Done
// here, in a file compiled for any x86-64, Eigen's products ran on SSE2 at a fraction of the
// CPU's rate: 7 ms of a 90 ms summary of 8192 tokens.) With `value_heads`, each block of V is
// also copied into them, head g's d_v columns into value_heads[g], while it is in cache.
// An entry of X that T cannot hold (float32 overflows sooner) is named from the converted
// rows. A product that could overflow T is searched for the entry that did (require_finite);
// one whose bound is far below T's largest number (the rounding of a sum of d_in products
// cannot double it) need not be read again.
template <typename T, typename Rows>
void project_all(const Rows& x, const Projections& w, MatrixT<T>& q, MatrixT<T>& k, MatrixT<T>& v,
                 std::vector<MatrixT<T>>& value_heads, const Summary& summary) {
    MatrixT<T> x_t(x.rows(), x.cols());
    std::vector<T> row_max(static_cast<std::size_t>(x.rows()), T(0));  // |x| per row
    const std::vector<MatrixT<T>> w_t{w.query.cast<T>(), w.key.cast<T>(), w.value.cast<T>()};
    const std::optional<Vector>* biases[] = {&w.query_bias, &w.key_bias, &w.value_bias};
    std::vector<MatrixT<T>> products = project_filled<T>(
        x_t, w_t,
        [&](Eigen::Index first, Eigen::Index count) {
            x_t.middleRows(first, count) = x.middleRows(first, count).template cast<T>();
            if (x.cols() > 0)
                for (Eigen::Index r = first; r < first + count; ++r)
                    row_max[static_cast<std::size_t>(r)] =
                        x_t.row(r).cwiseAbs().template maxCoeff<Eigen::PropagateNaN>();
        },
        [&](std::vector<MatrixT<T>>& y, Eigen::Index first, Eigen::Index count) {
            for (std::size_t i = 0; i < y.size(); ++i) {
                auto rows = y[i].middleRows(first, count);
                add_bias(rows, *biases[i]);  // + b
            }
            for (std::size_t g = 0; g < value_heads.size(); ++g) {
                const Eigen::Index d_v = value_heads[g].cols();
                value_heads[g].middleRows(first, count) =
                    y[2].block(first, static_cast<Eigen::Index>(g) * d_v, count, d_v);
            }
        });
    double x_max = 0;
    bool finite = true;
    for (const T m : row_max) {
        finite = finite && std::isfinite(m);
        x_max = std::max(x_max, static_cast<double>(m));
    }
    if (!finite) require_finite<T>(x_t, StageId::inputs, summary.tokens, "x", summary.origin);
    const auto finish = [&](MatrixT<T>& out, MatrixT<T>& product, std::size_t i, StageId stage,
                            std::string_view column) {
        out = std::move(product);
        if (!(projection_bound(x_max, w_t[i], *biases[i]) < static_cast<double>(std::numeric_limits<T>::max()) / 2))
            require_finite<T>(out, stage, summary.tokens, column, summary.origin);
    };
    finish(q, products[0], 0, StageId::queries, "q");
    finish(k, products[1], 1, StageId::keys, "k");
    finish(v, products[2], 2, StageId::values, "v");
}

// Sinusoidal positions: the embeddings plus their encodings, added in T as the trace adds them
// (held as double, which holds a float exactly); then ln_1 when the layer has one. Without
// either, nothing: the embeddings are read as they are, not copied.
template <typename T>
std::optional<Matrix> prepared_inputs(const Matrix& embeddings, const PositionSetting& positions,
                                      const LayerNorm* layernorm) {
    if (positions.scheme != PositionScheme::sinusoidal && !layernorm) return std::nullopt;
    MatrixT<T> x = embeddings.cast<T>();
    if (positions.scheme == PositionScheme::sinusoidal)
        x += sinusoidal_encoding(embeddings.rows(), embeddings.cols(), positions.first).cast<T>();
    if (layernorm) x = layer_norm<T>(x, *layernorm);
    return x.template cast<double>();
}

// What the heads of a summary read, held while they stream: the inputs (left in the mapped
// file, or prepared as the trace prepares them), their projections, and RoPE's turned queries
// and keys. The heads' views point into it: it is not moved once they are made.
template <typename T>
struct StreamData {
    MatrixT<T> x, q, k, v;
    Matrix widened;                       // the in-place rows as doubles
    std::optional<Matrix> prepared;       // with positions or ln_1
    const Matrix* inputs = nullptr;       // what the products read: the embeddings, or `prepared`
    std::optional<RowsView<T>> mapped;    // float32 rows read where they are
    std::vector<MatrixT<T>> value_heads;  // a key/value head's values, copied out of a wider V
    std::vector<MatrixT<T>> turned;       // RoPE's turned queries and keys
};

// The rows the products read, then their queries, keys and values (plain mode: the rows
// themselves, checked finite).
template <typename T>
void project_rows(StreamData<T>& d, const Sequence& sequence, const std::optional<Projections>& w,
                  const HeadLayout& layout, const PositionSetting& positions, const LayerNorm* layernorm,
                  Summary& summary) {
    // Float32 rows left in the mapped file (Sequence::in_place) are read there when nothing
    // changes them before the products: no conversion, no copy. Otherwise the embeddings (the
    // in-place rows widened once) are prepared as the trace prepares them.
    const bool as_mapped = sequence.in_place && std::is_same_v<T, float> &&
                           positions.scheme != PositionScheme::sinusoidal && !layernorm;
    if (!as_mapped) {
        if (sequence.in_place) d.widened = sequence.in_place->view().cast<double>();
        const Matrix& embeddings = sequence.in_place ? d.widened : sequence.vectors;
        d.prepared = prepared_inputs<T>(embeddings, positions, layernorm);
        d.inputs = d.prepared ? &*d.prepared : &embeddings;
    }
    if constexpr (std::is_same_v<T, float>)
        if (as_mapped) {  // finite: the loader checked every number
            const InPlaceRows& rows = *sequence.in_place;
            d.mapped.emplace(rows_view(rows.data, rows.rows, rows.cols, rows.cols));
        }
    // A key/value head's values are copied out of a wider V: the values' product reads a block
    // of them for every six queries, and read in place, rows a whole V apart, they made 8 heads
    // of 64 about 5% slower (n = 8192).
    const Eigen::Index n = d.mapped ? d.mapped->rows() : d.inputs->rows();
    if (w && layout.several() && layout.d_v < w->value.cols())
        for (int g = 0; g < layout.kv_heads; ++g) d.value_heads.emplace_back(n, layout.d_v);
    if (w) {
        if (d.mapped) project_all<T>(*d.mapped, *w, d.q, d.k, d.v, d.value_heads, summary);
        else project_all<T>(*d.inputs, *w, d.q, d.k, d.v, d.value_heads, summary);
    } else if (!d.mapped) {
        d.x = d.inputs->template cast<T>();
        require_finite<T>(d.x, StageId::inputs, summary.tokens, "x", summary.origin);
    }
}

// Each head reads its columns where they are (one head: the matrices themselves);
// consecutive query heads share a key/value head in grouped-query attention. RoPE: every
// query head's queries and every key/value head's keys turned by their positions' angles
// before they are scored, into matrices of their own; the values stay as they are.
template <typename T>
std::vector<StreamHead<T>> heads_of(StreamData<T>& d, bool learned, const HeadLayout& layout,
                                    const PositionSetting& positions) {
    const RowsView<T> x_rows = d.mapped ? *d.mapped : rows_view(d.x);
    const RowsView<T> queries = learned ? rows_view(d.q) : x_rows;
    const RowsView<T> keys = learned ? rows_view(d.k) : x_rows;
    const RowsView<T> values = learned ? rows_view(d.v) : x_rows;
    const bool rope = positions.scheme == PositionScheme::rope;
    const Eigen::Index d_head = layout.several() ? layout.d_head : queries.cols();
    const Eigen::Index d_v = layout.several() ? layout.d_v : values.cols();
    const Matrix angles = rope ? rotary_angles(queries.rows(), d_head, positions.first) : Matrix();
    // reserved, so that the views of the turned matrices made first stay valid
    d.turned.reserve(static_cast<std::size_t>(layout.heads + layout.kv_heads));
    const auto head_columns = [&](const RowsView<T>& m, int head) {
        const RowsView<T> columns = column_view(m, (head - 1) * d_head, d_head);
        if (!rope) return columns;
        d.turned.push_back(rotate_half<T>(MatrixT<T>(columns), angles));
        return rows_view(d.turned.back());
    };
    std::vector<StreamHead<T>> heads;
    std::vector<RowsView<T>> kv_keys;
    for (int g = 1; g <= layout.kv_heads; ++g) kv_keys.push_back(head_columns(keys, g));
    for (int h = 1; h <= layout.heads; ++h) {
        const int g = layout.kv_head_of(h);
        heads.push_back({head_columns(queries, h), kv_keys[static_cast<std::size_t>(g - 1)],
                         d.value_heads.empty() ? column_view(values, (g - 1) * d_v, d_v)
                                               : rows_view(d.value_heads[static_cast<std::size_t>(g - 1)])});
    }
    return heads;
}

// The streaming path's options: the mask, one factor on the scores, what to keep; the scale
// recorded in the summary. `d_scaled`: d_k, or d_head.
StreamOptions stream_options_of(Eigen::Index d_scaled, const MaskSpec& mask, const TraceOptions& trace_options,
                                const SummaryOptions& options, Summary& summary) {
    StreamOptions stream_options;
    const ModeSpec& mode = mode_spec(trace_options.mode);
    summary.scale_rule = trace_options.scale.value_or(mode.default_scale());
    summary.scale = scale_divisor(summary.scale_rule, trace_options.scale_value, d_scaled);
    summary.temperature = trace_options.temperature;
    stream_options.causal = mode.causal;
    stream_options.window = mask.window.value_or(0);
    if (std::find(mask.padding.begin(), mask.padding.end(), true) != mask.padding.end()) stream_options.padding = &mask.padding;
    // softmax(S / (divisor · T)), as one factor on the scores
    stream_options.scale = 1.0 / summary.scale / summary.temperature;
    stream_options.top = options.top;
    stream_options.context = options.context;
    stream_options.progress = options.progress;
    return stream_options;
}

// options.rows_done for the rows the streaming path has finished: their heads' summaries, and
// with context the heads' rows side by side through W_o (as output_of() computes them), or
// the one head's context. `stopped`: an output row overflowed, so no later rows are reported.
template <typename T>
void report_rows(const std::vector<StreamResult>& partial, std::size_t first, std::size_t count,
                 const std::optional<Projections>& w, const HeadLayout& layout, const SummaryOptions& options,
                 Summary& summary, bool& stopped) {
    if (stopped) return;
    SummaryRows rows;
    rows.first = first;
    rows.count = count;
    for (std::size_t h = 0; h < partial.size(); ++h) {
        const int head = layout.several() ? static_cast<int>(h) + 1 : 0;
        rows.heads.push_back({head, layout.grouped() ? layout.kv_head_of(head) : 0, &partial[h].queries});
    }
    if (options.context) {
        const auto first_row = static_cast<Eigen::Index>(first), n = static_cast<Eigen::Index>(count);
        if (w && w->output) {  // the heads' rows side by side, through W_o, as output_of() does
            const Eigen::Index d_v = partial.front().context.cols();
            MatrixT<T> concat(n, d_v * static_cast<Eigen::Index>(partial.size()));
            for (std::size_t h = 0; h < partial.size(); ++h)
                concat.middleCols(static_cast<Eigen::Index>(h) * d_v, d_v) =
                    partial[h].context.middleRows(first_row, n).template cast<T>();
            MatrixT<T> output = project<T>(concat, w->output->cast<T>());
            add_bias(output, w->output_bias);
            if (!output.allFinite()) {  // output_of() names the entry once the run is over
                stopped = true;
                return;
            }
            rows.context = output.template cast<double>();
            rows.context_is_output = true;
        } else {
            rows.context = partial.front().context.middleRows(first_row, n);
        }
    }
    options.rows_done(summary, rows);
}

template <typename T>
std::vector<StreamResult> stream(const Sequence& sequence, const std::optional<Projections>& w, const HeadLayout& layout,
                                 const MaskSpec& mask, const PositionSetting& positions, const LayerNorm* layernorm,
                                 const TraceOptions& trace_options, const SummaryOptions& options, Summary& summary) {
    StreamData<T> data;
    project_rows<T>(data, sequence, w, layout, positions, layernorm, summary);
    const std::vector<StreamHead<T>> heads = heads_of<T>(data, w.has_value(), layout, positions);
    StreamOptions stream_options = stream_options_of(heads.front().q.cols(), mask, trace_options, options, summary);
    bool stopped = false;  // an output row overflowed: no later rows either
    if (options.rows_done)
        stream_options.rows_done = [&](const std::vector<StreamResult>& partial, std::size_t first, std::size_t count) {
            report_rows<T>(partial, first, count, w, layout, options, summary, stopped);
        };
    std::vector<StreamResult> results = stream_heads<T>(heads, stream_options);
    for (std::size_t h = 0; h < results.size(); ++h)
        require_finite_scores<T>(results[h], heads[h].q, heads[h].k, summary, stream_options.scale, stream_options.causal);
    return results;
}

// The heads' context vectors side by side and mixed by W_o (one head: Z·W_o), computed in T
// as the trace computes them.
template <typename T>
Matrix output_of(const std::vector<StreamResult>& results, const Matrix& w_o, const std::optional<Vector>& b_o,
                 const Summary& summary) {
    const Eigen::Index n = results.front().context.rows(), d_v = results.front().context.cols();
    MatrixT<T> concat(n, d_v * static_cast<Eigen::Index>(results.size()));
    for (std::size_t h = 0; h < results.size(); ++h)
        concat.middleCols(static_cast<Eigen::Index>(h) * d_v, d_v) = results[h].context.cast<T>();
    MatrixT<T> output = project<T>(concat, w_o.cast<T>());
    add_bias(output, b_o);
    require_finite<T>(output, StageId::output, summary.tokens, "o", summary.origin);
    return output.template cast<double>();
}

// One head's summary read off the trace's weights (head 0: the only one).
HeadSummary summarize_head(const Trace& trace, int head, std::size_t top) {
    const Stage& weights_stage = trace.at(StageId::weights, head);
    const Matrix& weights = weights_stage.data;
    HeadSummary out{head, weights_stage.kv_head, {}};
    for (Eigen::Index i = 0; i < weights.rows(); ++i) {
        std::vector<Eigen::Index> order(static_cast<std::size_t>(weights.cols()));
        std::iota(order.begin(), order.end(), Eigen::Index{0});
        std::stable_sort(order.begin(), order.end(),
                         [&](Eigen::Index a, Eigen::Index b) { return weights(i, a) > weights(i, b); });
        QuerySummary q;
        const auto visible = [&](Eigen::Index j) { return weights(i, j) > 0 || !weights_stage.is_masked(i, j); };
        for (const Eigen::Index j : order)
            if (q.top.size() < top && visible(j)) q.top.push_back({j, weights(i, j)});
        q.max_weight = weights.row(i).maxCoeff();
        for (Eigen::Index j = 0; j < weights.cols(); ++j)
            if (weights(i, j) > 0) q.entropy -= weights(i, j) * std::log(weights(i, j));
        out.queries.push_back(std::move(q));
    }
    return out;
}

}  // namespace

Summary summarize(const Problem& problem, const TraceOptions& trace_options, const SummaryOptions& options) {
    check_options_for_mode(trace_options);
    const SingleSetup setup = setup_single(problem, trace_options);
    if (!trace_options.mask_method.standard())
        throw UsageError("--mask-fill and --mask-after-softmax show a wrong way of masking in the full tables; --summary "
                         "masks the right way only");
    Summary summary;
    summary.mode = trace_options.mode;
    summary.dtype = trace_options.dtype;
    summary.origin = problem.origin;

    summary.tokens = setup.sequence->tokens;
    summary.weights = setup.weights.origin;
    summary.seed = trace_options.seed;
    summary.notes = setup.weights.notes;
    if (auto note = padding_note(setup.mask, summary.tokens)) summary.notes.push_back(std::move(*note));
    summary.window = setup.mask.window.has_value();
    summary.padding = std::find(setup.mask.padding.begin(), setup.mask.padding.end(), true) != setup.mask.padding.end();
    summary.top = options.top;
    const auto& w = setup.weights.projections;
    const HeadLayout& layout = setup.weights.layout;
    const Eigen::Index d_in = setup.sequence->vectors.cols();
    summary.dims = dims_of(layout, d_in, w ? w->query.cols() : d_in, w ? w->value.cols() : d_in);
    summary.heads = layout.heads;
    summary.kv_heads = layout.kv_heads;
    summary.positions = setup.positions.scheme;
    summary.first_position = setup.positions.first;
    describe_run(summary, problem, trace_options);
    std::vector<StreamResult> results =
        trace_options.dtype == Dtype::float32
            ? stream<float>(*setup.sequence, w, layout, setup.mask, setup.positions, setup.layernorm, trace_options,
                            options, summary)
            : stream<double>(*setup.sequence, w, layout, setup.mask, setup.positions, setup.layernorm, trace_options,
                             options, summary);
    for (std::size_t h = 0; h < results.size(); ++h) {
        const int head = layout.several() ? static_cast<int>(h) + 1 : 0;
        summary.per_head.push_back({head, layout.grouped() ? layout.kv_head_of(head) : 0, std::move(results[h].queries)});
    }
    if (options.context && w && w->output) {
        summary.context = trace_options.dtype == Dtype::float32 ? output_of<float>(results, *w->output, w->output_bias, summary)
                                                                : output_of<double>(results, *w->output, w->output_bias, summary);
        summary.context_is_output = true;
    } else if (options.context) {
        summary.context = std::move(results.front().context);
    }
    return summary;
}

Summary summarize_trace(const Trace& trace, const SummaryOptions& options) {
    Summary summary;
    static_cast<RunHeader&>(summary) = trace;
    summary.tokens = trace.tokens;
    summary.top = options.top;
    for (int head = trace.heads > 1 ? 1 : 0; head <= (trace.heads > 1 ? trace.heads : 0); ++head)
        summary.per_head.push_back(summarize_head(trace, head, options.top));
    if (const Stage* output = trace.find(StageId::output); options.context && output) {
        summary.context = output->data;
        summary.context_is_output = true;
    } else if (options.context) {
        summary.context = trace.at(StageId::context).data;
    }
    return summary;
}

}  // namespace attntrace
