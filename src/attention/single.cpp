#include "attention/single.hpp"

#include "attention/kernels.hpp"
#include "attention/modes.hpp"
#include "attention/stage_builder.hpp"
#include "attention/weights_stage.hpp"
#include "attention/worked.hpp"
#include "core/error.hpp"
#include "core/generator.hpp"

#include <fmt/format.h>

#include <cmath>

namespace attntrace {
namespace {

struct ScaleSetting {
    ScaleRule rule;
    double value;  // the divisor of ScaleRule::value
};

// Every matrix of single-sequence attention, in pipeline order, in the working precision T.
template <typename T>
struct SinglePass {
    MatrixT<T> x, q, k, v;  // without learned projections, Q = K = V = X
    MatrixT<T> scores, scaled, masked, context;
    Normalized<T> weights;
    std::optional<BoolMatrix> mask;
};

// What the scores are divided by, in the working precision (the square root rounded once:
// double rounding of a square root to float is exact).
template <typename T>
T divisor_for(const ScaleSetting& scale, Eigen::Index d_k) {
    return static_cast<T>(scale_divisor(scale.rule, scale.value, d_k));
}

// Attention itself, as the second lecture lists it: project, score, scale, exclude, softmax,
// mix. (attention/reference.hpp says the same in plain loops; kernels.hpp holds each step.)
template <typename T>
SinglePass<T> attend(const Matrix& embeddings, const Projections* w, const ModeSpec& mode, const ScaleSetting& scale,
                     Normalization normalization, double temperature) {
    SinglePass<T> p;
    p.x = embeddings.cast<T>();
    p.q = w ? project<T>(p.x, w->query.cast<T>()) : p.x;  // Q = X·W_q
    p.k = w ? project<T>(p.x, w->key.cast<T>()) : p.x;    // K = X·W_k
    p.v = w ? project<T>(p.x, w->value.cast<T>()) : p.x;  // V = X·W_v
    p.scores = dot_scores<T>(p.q, p.k);                   // S = Q·Kᵀ
    p.scaled = scale.rule == ScaleRule::none ? p.scores : scale_scores<T>(p.scores, divisor_for<T>(scale, p.q.cols()));  // S' = S / √d_k
    if (mode.causal) p.mask = causal_mask(p.x.rows());
    p.masked = p.mask ? apply_mask<T>(p.scaled, *p.mask) : p.scaled;     // −∞ where hidden
    p.weights = normalize_rows<T>(p.masked, normalization, temperature);  // A = softmax(S'' / T)
    p.context = weighted_sum<T>(p.weights.weights, p.v);                 // Z = A·V
    return p;
}

// The stages of a pass, each with its title and formula, in pipeline order.
template <typename T>
class SingleStages {
public:
    SingleStages(Trace& trace, const ModeSpec& mode, const ScaleSetting& scale)
        : trace_(trace), mode_(mode), scale_(scale), stages_(trace), tokens_(trace.tokens) {}

    // `w`, when the mode has weights, moves into the trace's parameters.
    void record(SinglePass<T> p, Projections* w) {
        const Eigen::Index d_in = p.x.cols();
        trace_.dims = {{"d_in", d_in}, {"d_k", p.q.cols()}, {"d_v", p.v.cols()}};
        trace_.scale_rule = scale_.rule;
        trace_.scale = static_cast<double>(divisor_for<T>(scale_, p.q.cols()));
        stages_.add(StageId::inputs, "Inputs: one embedding per token", "X", tokens_, numbered("x", d_in), p.x);
        if (w) record_parameters(std::move(*w));
        record_projections(p);
        record_scores(p);
        const std::string_view scores_name = scale_.rule == ScaleRule::none ? "S" : "S'";
        const MatrixT<T> masked = p.masked;  // the weights' message quotes it
        record_mask(std::move(p.masked), p.mask, scores_name);
        record_weights<T>(stages_, trace_, std::move(p.weights), masked, p.mask ? &*p.mask : nullptr,
                          {"A", p.mask ? "S''" : scores_name, ""}, tokens_, tokens_);
        stages_.add(StageId::context, "Context vectors: weighted sum of the values",
                    mode_.learned_projections ? "Z = A·V" : "Z = A·X", tokens_, numbered("z", p.context.cols()),
                    std::move(p.context));
    }

private:
    void record_parameters(Projections&& w) {
        trace_.parameters.reserve(3);
        trace_.parameters.push_back({"W_q", "Q = X·W_q", "x", "q", std::move(w.query)});
        trace_.parameters.push_back({"W_k", "K = X·W_k", "x", "k", std::move(w.key)});
        trace_.parameters.push_back({"W_v", "V = X·W_v", "x", "v", std::move(w.value)});
    }

    void record_projections(SinglePass<T>& p) {
        if (!mode_.learned_projections) {
            const auto same = [&](StageId id, std::string_view title, std::string_view formula, std::string_view role) {
                stages_.skip(id, std::string(title), std::string(formula), tokens_, numbered("x", p.x.cols()), p.x,
                             fmt::format("no projection: plain attention has no trainable weights, so the "
                                         "embeddings themselves are the {}",
                                         role));
            };
            same(StageId::queries, "Queries", "Q = X", "queries");
            same(StageId::keys, "Keys", "K = X", "keys");
            same(StageId::values, "Values", "V = X", "values");
            return;
        }
        stages_.add(StageId::queries, "Queries: what each token is looking for", "Q = X·W_q", tokens_,
                    numbered("q", p.q.cols()), p.q);
        stages_.add(StageId::keys, "Keys: what each token offers", "K = X·W_k", tokens_, numbered("k", p.k.cols()), p.k);
        stages_.add(StageId::values, "Values: what each token passes on", "V = X·W_v", tokens_, numbered("v", p.v.cols()),
                    p.v);
    }

    void record_scores(SinglePass<T>& p) {
        const Eigen::Index d_k = p.q.cols();
        stages_.add(StageId::scores, "Attention scores: query · key",
                    mode_.learned_projections ? "S = Q·Kᵀ" : "S = X·Xᵀ", tokens_, tokens_, std::move(p.scores));
        switch (scale_.rule) {
        case ScaleRule::none:
            stages_.skip(StageId::scaled, "Scaled scores", "S' = S", tokens_, tokens_, std::move(p.scaled),
                         mode_.scaled ? "no scaling: --scale none leaves the scores as they are (the Transformer divides by √d_k)"
                                      : "no scaling: the simplified version uses raw dot products");
            return;
        case ScaleRule::sqrt:
            stages_.add(StageId::scaled, fmt::format("Scaled scores: divided by √d_k = √{}", d_k), "S' = S / √d_k",
                        tokens_, tokens_, std::move(p.scaled));
            return;
        case ScaleRule::value:
            stages_.add(StageId::scaled, fmt::format("Scaled scores: divided by {} (--scale)", scale_.value),
                        fmt::format("S' = S / {}", scale_.value), tokens_, tokens_, std::move(p.scaled));
            return;
        }
    }

    void record_mask(MatrixT<T> masked, const std::optional<BoolMatrix>& mask, std::string_view scores_name) {
        if (mask)
            stages_.add(StageId::masked, "Masked scores: later positions excluded",
                        "S'' = S' with −∞ where key j > query i", tokens_, tokens_, std::move(masked), &*mask);
        else
            stages_.skip(StageId::masked, "Masked scores", fmt::format("S'' = {}", scores_name), tokens_, tokens_,
                         std::move(masked), "no mask: bidirectional, every position sees every position");
    }

    Trace& trace_;
    const ModeSpec& mode_;
    const ScaleSetting& scale_;
    StageBuilder stages_;
    const Labels tokens_;  // shared by every stage
};

void refuse_dim(const std::string& origin, std::string_view own) {
    throw UsageError(fmt::format("--dim sets the size of generated weights, but {} gives its own weights ({})", origin,
                                 own));
}

// The one place single-sequence weights come from: the input, or the seed.
SingleWeights weights_for(const Sequence& sequence, const std::optional<Projections>& given, const TraceOptions& options,
                          const std::string& origin) {
    const ModeSpec& mode = mode_spec(options.mode);
    SingleWeights w;
    if (!mode.learned_projections) {
        if (options.dim) throw UsageError("--dim sets the size of generated weights, and plain mode has none");
        if (given) w.notes.push_back("the input's weights are not used: plain mode has no trainable weights (try --mode self)");
        return w;
    }
    if (given) {
        if (options.dim) refuse_dim(origin, fmt::format("d_k = {}", given->query.cols()));
        w.projections = *given;
        w.origin = WeightsOrigin::file;
        return w;
    }
    const Eigen::Index d_in = sequence.vectors.cols();
    w.projections = generate_projections(options.seed, d_in, options.dim.value_or(d_in));
    w.origin = WeightsOrigin::generated;
    return w;
}

// `w` moves into the trace.
Trace trace_with(const Sequence& sequence, SingleWeights w, const TraceOptions& options, const std::string& origin) {
    const ModeSpec& mode = mode_spec(options.mode);
    Trace trace;
    trace.origin = origin;
    trace.mode = options.mode;
    trace.normalization = options.normalization;
    trace.dtype = options.dtype;
    trace.weights = w.origin;
    trace.seed = options.seed;
    trace.notes = w.notes;
    trace.tokens = sequence.tokens;
    trace.temperature = options.temperature;
    Projections* p = w.projections ? &*w.projections : nullptr;
    const ScaleSetting scale{options.scale.value_or(mode.default_scale()), options.scale_value};
    if (options.dtype == Dtype::float32)
        SingleStages<float>(trace, mode, scale)
            .record(attend<float>(sequence.vectors, p, mode, scale, options.normalization, options.temperature), p);
    else
        SingleStages<double>(trace, mode, scale)
            .record(attend<double>(sequence.vectors, p, mode, scale, options.normalization, options.temperature), p);
    if (options.query) trace.worked = work_through(trace, find_query_row(trace.tokens, *options.query));
    return trace;
}

}  // namespace

SingleSetup setup_single(const Problem& problem, const TraceOptions& options) {
    const auto* single = std::get_if<SingleSequenceInput>(&problem.input);
    const ModeSpec& mode = mode_spec(options.mode);
    if (!single || mode.reads_pair) refuse_mode_for_input(problem, mode);
    if (options.score != Score::additive)
        throw UsageError(fmt::format("--score {} applies to mode bahdanau only", to_string(options.score)));
    return {&single->sequence, weights_for(single->sequence, single->weights, options, problem.origin)};
}

Trace trace_single_problem(const Problem& problem, const TraceOptions& options) {
    SingleSetup setup = setup_single(problem, options);
    return trace_with(*setup.sequence, std::move(setup.weights), options, problem.origin);
}

Trace trace_single(const Sequence& sequence, const Projections* weights, const TraceOptions& options,
                   const std::string& origin) {
    const std::optional<Projections> given = weights ? std::optional<Projections>(*weights) : std::nullopt;
    return trace_with(sequence, weights_for(sequence, given, options, origin), options, origin);
}

}  // namespace attntrace
