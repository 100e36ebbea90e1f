#include "attention/summary.hpp"

#include "attention/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace attntrace {
namespace {

template <typename T>
StreamResult stream(const Sequence& sequence, const std::optional<Projections>& w, const TraceOptions& trace_options,
                    const SummaryOptions& options, Summary& summary) {
    const MatrixT<T> x = sequence.vectors.cast<T>();
    MatrixT<T> q, k, v;
    if (w) {
        q = project<T>(x, w->query.cast<T>());
        k = project<T>(x, w->key.cast<T>());
        v = project<T>(x, w->value.cast<T>());
    }
    const MatrixT<T>& queries = w ? q : x;
    const MatrixT<T>& keys = w ? k : x;
    const MatrixT<T>& values = w ? v : x;
    summary.dims = {{"d_in", x.cols()}, {"d_k", keys.cols()}, {"d_v", values.cols()}};
    StreamOptions stream_options;
    stream_options.causal = trace_options.mode == Mode::causal;
    stream_options.scale = trace_options.mode == Mode::plain ? 1.0 : 1.0 / std::sqrt(static_cast<double>(keys.cols()));
    stream_options.top = options.top;
    stream_options.context = options.context;
    stream_options.progress = options.progress;
    return stream_attention<T>(queries, keys, values, stream_options);
}

}  // namespace

Summary summarize(const Problem& problem, const TraceOptions& trace_options, const SummaryOptions& options) {
    const SingleSetup setup = setup_single(problem, trace_options);
    Summary summary;
    summary.mode = trace_options.mode;
    summary.dtype = trace_options.dtype;
    summary.origin = problem.origin;
    summary.description = problem.description;
    summary.tokens = setup.sequence->tokens;
    summary.weights = setup.origin;
    summary.seed = trace_options.seed;
    summary.notes = setup.notes;
    summary.top = options.top;
    StreamResult result = trace_options.dtype == Dtype::float32
                              ? stream<float>(*setup.sequence, setup.weights, trace_options, options, summary)
                              : stream<double>(*setup.sequence, setup.weights, trace_options, options, summary);
    summary.queries = std::move(result.queries);
    if (options.context) summary.context = std::move(result.context);
    return summary;
}

Summary summarize_trace(const Trace& trace, const SummaryOptions& options) {
    Summary summary;
    summary.mode = trace.mode;
    summary.dtype = trace.dtype;
    summary.origin = trace.origin;
    summary.description = trace.description;
    summary.tokens = trace.tokens;
    summary.dims = trace.dims;
    summary.weights = trace.weights;
    summary.seed = trace.seed;
    summary.notes = trace.notes;
    summary.top = options.top;
    const Matrix& weights = trace.find("weights")->data;
    for (Eigen::Index i = 0; i < weights.rows(); ++i) {
        std::vector<Eigen::Index> order(static_cast<std::size_t>(weights.cols()));
        std::iota(order.begin(), order.end(), Eigen::Index{0});
        std::stable_sort(order.begin(), order.end(),
                         [&](Eigen::Index a, Eigen::Index b) { return weights(i, a) > weights(i, b); });
        QuerySummary q;
        const auto visible = [&](Eigen::Index j) { return weights(i, j) > 0 || !trace.find("weights")->is_masked(i, j); };
        for (const Eigen::Index j : order)
            if (q.top.size() < options.top && visible(j)) q.top.push_back({j, weights(i, j)});
        q.max_weight = weights.row(i).maxCoeff();
        for (Eigen::Index j = 0; j < weights.cols(); ++j)
            if (weights(i, j) > 0) q.entropy -= weights(i, j) * std::log(weights(i, j));
        summary.queries.push_back(std::move(q));
    }
    if (options.context) summary.context = trace.find("context")->data;
    return summary;
}

}  // namespace attntrace
