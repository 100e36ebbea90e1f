#include "attention/trace.hpp"

#include "attention/bahdanau.hpp"
#include "attention/kernels.hpp"
#include "attention/stage_builder.hpp"
#include "attention/weights_stage.hpp"
#include "error.hpp"

#include <fmt/format.h>

namespace attntrace {
namespace {

void refuse_dim(const Problem& problem, std::string_view own) {
    throw UsageError(fmt::format("--dim sets the size of generated weights, but {} gives its own "
                                 "weights ({})",
                                 problem.origin, own));
}

[[noreturn]] void refuse_pair_for_single_mode(const Problem& problem, Mode mode) {
    throw DataError(fmt::format("{}: mode {} reads one sentence (\"sentence\" or \"tokens\" with \"embeddings\"), but "
                                "this input has a source and a target; use mode bahdanau",
                                problem.origin, to_string(mode)));
}

Trace trace_problem(const Problem& problem, const TraceOptions& options) {
    if (std::holds_alternative<SingleSequenceInput>(problem.input)) {
        const SingleSetup setup = setup_single(problem, options);
        Trace t = trace_single(*setup.sequence, setup.weights ? &*setup.weights : nullptr, options, problem.origin);
        t.weights = setup.origin;
        t.notes.insert(t.notes.begin(), setup.notes.begin(), setup.notes.end());
        return t;
    }
    if (options.score != Score::additive && options.mode != Mode::bahdanau)
        throw UsageError(fmt::format("--score {} applies to mode bahdanau only", to_string(options.score)));
    const auto& pair = std::get<EncoderDecoderInput>(problem.input);
    if (options.mode != Mode::bahdanau) refuse_pair_for_single_mode(problem, options.mode);
    if (options.dim && options.score != Score::additive)
        throw UsageError(fmt::format("--dim sets d_a of the additive score; the {} score has no "
                                     "free dimension",
                                     to_string(options.score)));
    if (options.dim && pair.weights) refuse_dim(problem, fmt::format("d_a = {}", pair.weights->W_a.cols()));
    return trace_bahdanau(pair, options, problem.origin);
}

template <typename T>
void add_single_sequence_stages(Trace& trace, const Sequence& sequence, const Projections* given,
                                const TraceOptions& options) {
    const Labels tokens = trace.tokens;  // shared by every stage
    const Eigen::Index d_in = sequence.vectors.cols();
    const bool plain = options.mode == Mode::plain;
    const MatrixT<T> x = sequence.vectors.cast<T>();
    StageBuilder stages(trace);

    stages.add("inputs", "Inputs: one embedding per token", "X", tokens, numbered("x", d_in), x);

    // Projections: plain attention has no trainable weights, so Q = K = V = X.
    const Projections* w = given;
    const auto no_projection = [](std::string_view role) {
        return fmt::format("no projection: plain attention has no trainable weights, so the "
                           "embeddings themselves are the {}", role);
    };
    MatrixT<T> q = x, k = x, v = x;
    if (plain) {
        stages.skip("queries", "Queries", "Q = X", tokens, numbered("x", d_in), x,
                    no_projection("queries"));
        stages.skip("keys", "Keys", "K = X", tokens, numbered("x", d_in), x, no_projection("keys"));
        stages.skip("values", "Values", "V = X", tokens, numbered("x", d_in), x,
                    no_projection("values"));
    } else {
        q = project<T>(x, w->query.cast<T>());
        k = project<T>(x, w->key.cast<T>());
        v = project<T>(x, w->value.cast<T>());
        stages.add("queries", "Queries: what each token is looking for", "Q = X·W_q", tokens,
                   numbered("q", q.cols()), q);
        stages.add("keys", "Keys: what each token offers", "K = X·W_k", tokens,
                   numbered("k", k.cols()), k);
        stages.add("values", "Values: what each token passes on", "V = X·W_v", tokens,
                   numbered("v", v.cols()), v);
    }
    const Eigen::Index d_k = q.cols();
    trace.dims = {{"d_in", d_in}, {"d_k", d_k}, {"d_v", v.cols()}};

    MatrixT<T> scores = dot_scores<T>(q, k);
    stages.add("scores", "Attention scores: query · key", plain ? "S = X·Xᵀ" : "S = Q·Kᵀ", tokens,
               tokens, scores);

    if (plain) {
        stages.skip("scaled", "Scaled scores", "S' = S", tokens, tokens, scores,
                    "no scaling: the simplified version uses raw dot products");
    } else {
        scores = scale_scores<T>(scores, d_k);
        stages.add("scaled", fmt::format("Scaled scores: divided by √d_k = √{}", d_k),
                   "S' = S / √d_k", tokens, tokens, scores);
    }

    const std::string_view scores_name = plain ? "S" : "S'";
    std::optional<BoolMatrix> mask;
    if (options.mode == Mode::causal) {
        mask = causal_mask(sequence.vectors.rows());
        scores = apply_mask<T>(scores, *mask);
        stages.add("masked", "Masked scores: later positions excluded",
                   "S'' = S' with −∞ where key j > query i", tokens, tokens, scores, &*mask);
    } else {
        stages.skip("masked", "Masked scores", fmt::format("S'' = {}", scores_name), tokens, tokens,
                    scores, "no mask: bidirectional, every position sees every position");
    }

    const std::string_view masked_name = mask ? "S''" : scores_name;
    const MatrixT<T> weights = add_weights_stage<T>(stages, trace, scores, mask ? &*mask : nullptr,
                                                    "A", masked_name, "", tokens, tokens);

    const MatrixT<T> context = weighted_sum<T>(weights, v);
    stages.add("context", "Context vectors: weighted sum of the values", plain ? "Z = A·X" : "Z = A·V",
               tokens, numbered("z", context.cols()), context);
}

}  // namespace

Mode resolve_mode(const Problem& problem, std::optional<Mode> requested) {
    if (requested) return *requested;
    if (problem.mode) return *problem.mode;
    return std::holds_alternative<EncoderDecoderInput>(problem.input) ? Mode::bahdanau : Mode::plain;
}

Trace trace(const Problem& problem, const TraceOptions& options) {
    Trace result = trace_problem(problem, options);
    result.description = problem.description;
    return result;
}

SingleSetup setup_single(const Problem& problem, const TraceOptions& options) {
    const auto* single = std::get_if<SingleSequenceInput>(&problem.input);
    if (!single) refuse_pair_for_single_mode(problem, options.mode);
    if (!is_single_sequence(options.mode))
        throw DataError(fmt::format(
            "{}: mode bahdanau needs a source and a target (\"source\" and \"target\" with "
            "their states), but this input has one sentence; use mode plain, self or causal",
            problem.origin));
    if (options.score != Score::additive)
        throw UsageError(fmt::format("--score {} applies to mode bahdanau only", to_string(options.score)));
    SingleSetup setup;
    setup.sequence = &single->sequence;
    if (options.mode == Mode::plain) {
        if (options.dim) throw UsageError("--dim sets the size of generated weights, and plain mode has none");
        if (single->weights)
            setup.notes.push_back("the input's weights are not used: plain mode has no trainable "
                                  "weights (try --mode self)");
        return setup;
    }
    if (single->weights) {
        if (options.dim) refuse_dim(problem, fmt::format("d_k = {}", single->weights->query.cols()));
        setup.weights = *single->weights;
        setup.origin = WeightsOrigin::file;
    } else {
        const Eigen::Index d_in = single->sequence.vectors.cols();
        setup.weights = generate_projections(options.seed, d_in, options.dim.value_or(d_in));
        setup.origin = WeightsOrigin::generated;
    }
    return setup;
}

Trace trace_single(const Sequence& sequence, const Projections* weights, const TraceOptions& options,
                   const std::string& origin) {
    Trace trace;
    trace.origin = origin;
    Projections generated;
    if (options.mode != Mode::plain) {
        trace.weights = weights ? WeightsOrigin::file : WeightsOrigin::generated;
        trace.seed = options.seed;
        if (!weights) {
            const Eigen::Index d_in = sequence.vectors.cols();
            generated = generate_projections(options.seed, d_in, options.dim.value_or(d_in));
            weights = &generated;
        }
    }
    trace.mode = options.mode;
    trace.normalization = options.normalization;
    trace.dtype = options.dtype;
    trace.tokens = sequence.tokens;
    if (options.dtype == Dtype::float32)
        add_single_sequence_stages<float>(trace, sequence, weights, options);
    else
        add_single_sequence_stages<double>(trace, sequence, weights, options);
    if (options.query) trace.worked = work_through(trace, find_query_row(trace.tokens, *options.query), nullptr);
    return trace;
}

}  // namespace attntrace
