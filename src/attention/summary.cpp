#include "attention/summary.hpp"

#include "attention/kernels.hpp"
#include "attention/modes.hpp"
#include "attention/overflow.hpp"
#include "attention/single.hpp"
#include "util/parallel.hpp"
#include "core/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

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
void require_finite_scores(const StreamResult& result, const MatrixT<T>& q, const MatrixT<T>& k, const Summary& summary,
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

// Q = X·W_q, K = X·W_k, V = X·W_v with X converted to T on the way, in one parallel pass
// over fixed blocks of rows (the kernels' blocks, so the bytes do not depend on the thread
// count): the conversion runs on every thread, and each block of X is still in cache for its
// three products. Returns whether every converted entry of X was finite.
template <typename T>
bool project_all(const Matrix& x, const Projections& w, MatrixT<T>& q, MatrixT<T>& k, MatrixT<T>& v) {
    const MatrixT<T> w_q = w.query.cast<T>(), w_k = w.key.cast<T>(), w_v = w.value.cast<T>();
    q.resize(x.rows(), w_q.cols());
    k.resize(x.rows(), w_k.cols());
    v.resize(x.rows(), w_v.cols());
    const Eigen::Index blocks = (x.rows() + kernel_row_block - 1) / kernel_row_block;
    bool finite = true;
    RegionErrors errors;  // the block copy and the products allocate
#pragma omp parallel for schedule(static) reduction(&& : finite)
    for (Eigen::Index block = 0; block < blocks; ++block)
        errors.run([&] {
            const Eigen::Index first = block * kernel_row_block;
            const Eigen::Index count = std::min(kernel_row_block, x.rows() - first);
            const MatrixT<T> x_block = x.middleRows(first, count).template cast<T>();
            finite = all_finite(x_block) && finite;
            q.middleRows(first, count).noalias() = x_block * w_q;
            k.middleRows(first, count).noalias() = x_block * w_k;
            v.middleRows(first, count).noalias() = x_block * w_v;
        });
    errors.rethrow();
    return finite;
}

template <typename T>
StreamResult stream(const Sequence& sequence, const std::optional<Projections>& w, const TraceOptions& trace_options,
                    const SummaryOptions& options, Summary& summary) {
    MatrixT<T> x, q, k, v;
    if (w) {
        if (!project_all<T>(sequence.vectors, *w, q, k, v))  // float32 overflows sooner: name the entry
            require_finite<T>(sequence.vectors.cast<T>(), StageId::inputs, summary.tokens, "x", summary.origin);
        require_finite<T>(q, StageId::queries, summary.tokens, "q", summary.origin);
        require_finite<T>(k, StageId::keys, summary.tokens, "k", summary.origin);
        require_finite<T>(v, StageId::values, summary.tokens, "v", summary.origin);
    } else {
        x = sequence.vectors.cast<T>();
        require_finite<T>(x, StageId::inputs, summary.tokens, "x", summary.origin);
    }
    const MatrixT<T>& queries = w ? q : x;
    const MatrixT<T>& keys = w ? k : x;
    const MatrixT<T>& values = w ? v : x;
    summary.dims = {{"d_in", sequence.vectors.cols()}, {"d_k", keys.cols()}, {"d_v", values.cols()}};
    StreamOptions stream_options;
    const ModeSpec& mode = mode_spec(trace_options.mode);
    summary.scale_rule = trace_options.scale.value_or(mode.default_scale());
    summary.scale = scale_divisor(summary.scale_rule, trace_options.scale_value, keys.cols());
    summary.temperature = trace_options.temperature;
    stream_options.causal = mode.causal;
    // softmax(S / (divisor · T)), as one factor on the scores
    stream_options.scale = 1.0 / summary.scale / summary.temperature;
    stream_options.top = options.top;
    stream_options.context = options.context;
    stream_options.progress = options.progress;
    StreamResult result = stream_attention<T>(queries, keys, values, stream_options);
    require_finite_scores<T>(result, queries, keys, summary, stream_options.scale, stream_options.causal);
    return result;
}

}  // namespace

Summary summarize(const Problem& problem, const TraceOptions& trace_options, const SummaryOptions& options) {
    check_options_for_mode(trace_options);
    const SingleSetup setup = setup_single(problem, trace_options);
    if (setup.weights.layout.heads > 1 || (setup.weights.projections && setup.weights.projections->output))
        throw UsageError("--summary follows one head without an output projection for now: run several heads, or W_o, "
                         "without --summary");
    if (setup.mask.window || std::find(setup.mask.padding.begin(), setup.mask.padding.end(), true) != setup.mask.padding.end() ||
        !trace_options.mask_method.standard())
        throw UsageError("--summary masks causally or not at all for now: run --window, padding tokens, --mask-fill and "
                         "--mask-after-softmax without --summary");
    Summary summary;
    summary.mode = trace_options.mode;
    summary.dtype = trace_options.dtype;
    summary.origin = problem.origin;

    summary.tokens = setup.sequence->tokens;
    summary.weights = setup.weights.origin;
    summary.seed = trace_options.seed;
    summary.notes = setup.weights.notes;
    describe_run(summary, problem);
    summary.top = options.top;
    const auto& w = setup.weights.projections;
    StreamResult result = trace_options.dtype == Dtype::float32
                              ? stream<float>(*setup.sequence, w, trace_options, options, summary)
                              : stream<double>(*setup.sequence, w, trace_options, options, summary);
    summary.queries = std::move(result.queries);
    if (options.context) summary.context = std::move(result.context);
    return summary;
}

Summary summarize_trace(const Trace& trace, const SummaryOptions& options) {
    Summary summary;
    static_cast<RunHeader&>(summary) = trace;
    summary.tokens = trace.tokens;
    summary.top = options.top;
    const Stage& weights_stage = trace.at(StageId::weights);
    const Matrix& weights = weights_stage.data;
    for (Eigen::Index i = 0; i < weights.rows(); ++i) {
        std::vector<Eigen::Index> order(static_cast<std::size_t>(weights.cols()));
        std::iota(order.begin(), order.end(), Eigen::Index{0});
        std::stable_sort(order.begin(), order.end(),
                         [&](Eigen::Index a, Eigen::Index b) { return weights(i, a) > weights(i, b); });
        QuerySummary q;
        const auto visible = [&](Eigen::Index j) { return weights(i, j) > 0 || !weights_stage.is_masked(i, j); };
        for (const Eigen::Index j : order)
            if (q.top.size() < options.top && visible(j)) q.top.push_back({j, weights(i, j)});
        q.max_weight = weights.row(i).maxCoeff();
        for (Eigen::Index j = 0; j < weights.cols(); ++j)
            if (weights(i, j) > 0) q.entropy -= weights(i, j) * std::log(weights(i, j));
        summary.queries.push_back(std::move(q));
    }
    if (options.context) summary.context = trace.at(StageId::context).data;
    return summary;
}

}  // namespace attntrace
