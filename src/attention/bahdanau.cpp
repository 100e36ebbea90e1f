#include "attention/bahdanau.hpp"

#include "attention/kernels.hpp"
#include "attention/modes.hpp"
#include "attention/overflow.hpp"
#include "attention/stage_builder.hpp"
#include "attention/weights_stage.hpp"
#include "attention/worked.hpp"
#include "core/error.hpp"
#include "core/generator.hpp"
#include "util/parallel.hpp"

#include <fmt/format.h>

#include <limits>
#include <optional>
#include <utility>

namespace attntrace {
namespace {

// e(t, j) = v_a · tanh(PS(t, ·) + PH(j, ·)).
// PS = S·W_a: n_tgt×d_a, PH = H·U_a: n_src×d_a, v_a: 1×d_a → e: n_tgt×n_src.
// `overflow` receives the first (t, j), in row order, whose PS + PH is not finite: tanh would
// hide the overflow behind a finite score.
template <typename T>
MatrixT<T> additive_scores(const MatrixT<T>& projected_decoder, const MatrixT<T>& projected_encoder,
                           const MatrixT<T>& v_a, std::optional<std::pair<Eigen::Index, Eigen::Index>>& overflow) {
    const Eigen::Index n_tgt = projected_decoder.rows();
    const Eigen::Index n_src = projected_encoder.rows();
    const Eigen::Index d_a = v_a.cols();
    MatrixT<T> scores(n_tgt, n_src);
    Eigen::Index first_bad = n_tgt * n_src;
    const double work = 10.0 * static_cast<double>(n_tgt) * static_cast<double>(n_src) * static_cast<double>(d_a);
#pragma omp parallel for schedule(static) reduction(min : first_bad) if (worth_threads(work))
    for (Eigen::Index t = 0; t < n_tgt; ++t)
        for (Eigen::Index j = 0; j < n_src; ++j) {
            T e = 0;
            for (Eigen::Index a = 0; a < d_a; ++a) {
                const T sum = projected_decoder(t, a) + projected_encoder(j, a);
                if (!std::isfinite(sum)) first_bad = std::min(first_bad, t * n_src + j);
                e += v_a(0, a) * std::tanh(sum);
            }
            scores(t, j) = e;
        }
    if (first_bad < n_tgt * n_src) overflow = std::pair{first_bad / n_src, first_bad % n_src};
    return scores;
}

// allowed(t, j) = mask[j]: the same source positions are hidden from every target step.
BoolMatrix source_mask(const std::vector<bool>& mask, Eigen::Index n_tgt) {
    BoolMatrix allowed(n_tgt, static_cast<Eigen::Index>(mask.size()));
    for (Eigen::Index t = 0; t < n_tgt; ++t)
        for (std::size_t j = 0; j < mask.size(); ++j) allowed(t, static_cast<Eigen::Index>(j)) = mask[j];
    return allowed;
}

// The parameters a score uses, taken from the input or generated (and said so).
struct ScoreParameters {
    AdditiveWeights additive;  // Score::additive
    Matrix general;            // Score::general: W, d_s × d_h
};

// Every matrix of encoder–decoder attention, in pipeline order, in the working precision T.
template <typename T>
struct BahdanauPass {
    MatrixT<T> h, s;                      // encoder states (source rows), decoder states (target rows)
    MatrixT<T> projected_decoder;         // S·W_a (additive), S·W (general), S (dot)
    MatrixT<T> projected_encoder;         // H·U_a (additive), H otherwise
    MatrixT<T> scores, masked, context;
    Normalized<T> weights;
    std::optional<BoolMatrix> mask;
    std::optional<std::pair<Eigen::Index, Eigen::Index>> overflow;  // where s·W_a + h·U_a is not finite
};

// The decoder looking back: score every (target step, source word) pair, exclude what the
// source mask hides, softmax over the source, mix the encoder states.
template <typename T>
BahdanauPass<T> attend(const EncoderDecoderInput& input, Score score, const ScoreParameters& w, Normalization normalization,
                       double temperature) {
    BahdanauPass<T> p;
    p.h = input.source.vectors.cast<T>();
    p.s = input.target.vectors.cast<T>();
    switch (score) {
    case Score::additive:
        p.projected_decoder = project<T>(p.s, w.additive.W_a.cast<T>());  // S·W_a
        p.projected_encoder = project<T>(p.h, w.additive.U_a.cast<T>());  // H·U_a
        p.scores = additive_scores<T>(p.projected_decoder, p.projected_encoder, MatrixT<T>(w.additive.v_a.cast<T>()),
                                      p.overflow);                       // e = v_a·tanh(…)
        break;
    case Score::dot:
        p.projected_decoder = p.s;
        p.projected_encoder = p.h;
        p.scores = dot_scores<T>(p.s, p.h);  // e = S·Hᵀ
        break;
    case Score::general:
        p.projected_decoder = project<T>(p.s, w.general.cast<T>());  // S·W
        p.projected_encoder = p.h;
        p.scores = dot_scores<T>(p.projected_decoder, p.h);          // e = (S·W)·Hᵀ
        break;
    }
    if (input.source_mask) p.mask = source_mask(*input.source_mask, p.s.rows());
    p.masked = p.mask ? apply_mask<T>(p.scores, *p.mask) : p.scores;
    p.weights = normalize_rows<T>(p.masked, normalization, temperature);  // α = softmax(e'' / T)
    p.context = weighted_sum<T>(p.weights.weights, p.h);     // c_t = Σ_j α_tj h_j
    return p;
}

// The stages of a pass, each with its title and formula, in pipeline order.
template <typename T>
class BahdanauStages {
public:
    BahdanauStages(Trace& trace, Score score)
        : trace_(trace), score_(score), stages_(trace), src_(trace.source_tokens), tgt_(trace.target_tokens) {}

    void record(BahdanauPass<T> p) {
        stages_.add(StageId::encoder_states, "Encoder states: one per source token", "H", src_, numbered("h", p.h.cols()), p.h);
        stages_.add(StageId::decoder_states, "Decoder states: one per target step", "S", tgt_, numbered("s", p.s.cols()), p.s);
        record_projections(p);
        record_scores(p);
        const MatrixT<T> masked = p.masked;  // the weights' message quotes it
        record_mask(std::move(p.masked), p.mask);
        record_weights<T>(stages_, trace_, std::move(p.weights), masked, p.mask ? &*p.mask : nullptr,
                          {"α", p.mask ? "e''" : "e", "the alignment matrix (target rows, source columns)"}, tgt_, src_);
        stages_.add(StageId::context, "Context vectors: weighted sum of the encoder states", "c_t = Σ_j α_tj h_j", tgt_,
                    numbered("c", p.context.cols()), std::move(p.context));
    }

private:
    void record_projections(BahdanauPass<T>& p) {
        switch (score_) {
        case Score::additive:
            stages_.add(StageId::projected_decoder, "Decoder states in the alignment space", "S·W_a", tgt_,
                        numbered("a", p.projected_decoder.cols()), std::move(p.projected_decoder));
            stages_.add(StageId::projected_encoder, "Encoder states in the alignment space", "H·U_a", src_,
                        numbered("a", p.projected_encoder.cols()), std::move(p.projected_encoder));
            return;
        case Score::dot:
            stages_.skip(StageId::projected_decoder, "Decoder states in the alignment space", "S", tgt_,
                         numbered("s", p.s.cols()), std::move(p.projected_decoder),
                         "no projection: the dot score compares s and h directly");
            stages_.skip(StageId::projected_encoder, "Encoder states in the alignment space", "H", src_,
                         numbered("h", p.h.cols()), std::move(p.projected_encoder),
                         "no projection: the dot score compares s and h directly");
            return;
        case Score::general:
            stages_.add(StageId::projected_decoder, "Decoder states mapped into the encoder's space", "S·W", tgt_,
                        numbered("h", p.projected_decoder.cols()), std::move(p.projected_decoder));
            stages_.skip(StageId::projected_encoder, "Encoder states in the alignment space", "H", src_,
                         numbered("h", p.h.cols()), std::move(p.projected_encoder),
                         "no projection: the general score maps only the decoder side");
            return;
        }
    }

    void record_scores(BahdanauPass<T>& p) {
        if (p.overflow)
            throw_overflow(trace_.origin, StageId::scores, tgt_[static_cast<std::size_t>(p.overflow->first)],
                           p.overflow->first, src_[static_cast<std::size_t>(p.overflow->second)], p.overflow->second,
                           std::numeric_limits<double>::infinity(), "s·W_a + h·U_a");  // tanh would hide it
        const MatrixT<T> scores = p.scores;
        switch (score_) {
        case Score::additive:
            stages_.add(StageId::scores, "Alignment scores: how well each source word fits this target step",
                        "e_tj = v_a · tanh(s_t·W_a + h_j·U_a)", tgt_, src_, std::move(p.scores));
            break;
        case Score::dot:
            stages_.add(StageId::scores, "Alignment scores: decoder state · encoder state (Luong's dot)",
                        "e_tj = s_t · h_j", tgt_, src_, std::move(p.scores));
            break;
        case Score::general:
            stages_.add(StageId::scores, "Alignment scores: (decoder state · W) · encoder state (Luong's general)",
                        "e_tj = s_t·W·h_jᵀ", tgt_, src_, std::move(p.scores));
            break;
        }
        stages_.skip(StageId::scaled, "Scaled scores", "e' = e", tgt_, src_, scores,
                     score_ == Score::additive
                         ? "no scaling: additive scores pass through tanh and are not scaled"
                         : "no scaling: Luong's scores are used as they are (the Transformer adds ÷ √d_k)");
    }

    void record_mask(MatrixT<T> masked, const std::optional<BoolMatrix>& mask) {
        if (mask)
            stages_.add(StageId::masked, "Masked scores: source positions the mask hides",
                        "e'' = e with −∞ where source.mask is false", tgt_, src_, std::move(masked), &*mask);
        else
            stages_.skip(StageId::masked, "Masked scores", "e'' = e", tgt_, src_, std::move(masked),
                         "no mask: the input has no source.mask, so every target step sees every source position");
    }

    Trace& trace_;
    Score score_;
    StageBuilder stages_;
    const Labels src_, tgt_;  // shared by every stage
};

// The weights a score uses: the input's, or generated from the seed (said so on the trace).
ScoreParameters parameters_for(const EncoderDecoderInput& input, const TraceOptions& options, Trace& trace) {
    const Eigen::Index d_h = input.source.vectors.cols();
    const Eigen::Index d_s = input.target.vectors.cols();
    ScoreParameters w;
    const auto generated = [&] {
        trace.weights = WeightsOrigin::generated;
        trace.seed = options.seed;
    };
    switch (options.score) {
    case Score::additive:
        if (input.weights) {
            w.additive = *input.weights;
            trace.weights = WeightsOrigin::file;
        } else {
            w.additive = generate_additive_weights(options.seed, d_s, d_h, options.dim.value_or(std::max(d_s, d_h)));
            generated();
        }
        trace.dims.emplace_back("d_a", w.additive.W_a.cols());
        break;
    case Score::dot:
        if (d_s != d_h)
            throw DataError(fmt::format("{}: the dot score needs decoder and encoder states of one size, but "
                                        "/target/states has d_s = {} and /source/states has d_h = {}; use --score "
                                        "general or additive",
                                        trace.origin, d_s, d_h));
        break;
    case Score::general:
        if (input.general_weight) {
            w.general = *input.general_weight;
            trace.weights = WeightsOrigin::file;
        } else {
            w.general = generate_general_weight(options.seed, d_s, d_h);
            generated();
        }
        break;
    }
    return w;
}

// The weights of the score, as the trace shows them (Luong's dot has none).
void record_parameters(Trace& trace, Score score, const ScoreParameters& w) {
    switch (score) {
    case Score::additive: {
        trace.parameters = {
            {"W_a", "S·W_a", "s", "a", w.additive.W_a},
            {"U_a", "H·U_a", "h", "a", w.additive.U_a},
            {"v_a", "e = v_a · tanh(s·W_a + h·U_a)", "v_a", "a", Matrix(w.additive.v_a), true},
        };
        return;
    }
    case Score::general:
        trace.parameters = {{"W", "e = s·W·hᵀ", "s", "h", w.general}};
        return;
    case Score::dot: return;
    }
}

// --dim only sizes the additive score's generated weights.
void check_dim(const EncoderDecoderInput& pair, const TraceOptions& options, const std::string& origin) {
    if (!options.dim) return;
    if (options.score != Score::additive)
        throw UsageError(fmt::format("--dim sets d_a of the additive score; the {} score has no free dimension",
                                     to_string(options.score)));
    if (pair.weights)
        throw UsageError(fmt::format("--dim sets the size of generated weights, but {} gives its own weights (d_a = {})",
                                     origin, pair.weights->W_a.cols()));
}

}  // namespace

Trace trace_bahdanau(const EncoderDecoderInput& input, const TraceOptions& options, const std::string& origin) {
    Trace trace;
    trace.mode = Mode::bahdanau;
    trace.score = options.score;
    trace.normalization = options.normalization;
    trace.dtype = options.dtype;
    trace.origin = origin;
    trace.source_tokens = input.source.tokens;
    trace.target_tokens = input.target.tokens;
    trace.dims = {{"d_h", input.source.vectors.cols()}, {"d_s", input.target.vectors.cols()}};
    const ScoreParameters w = parameters_for(input, options, trace);
    trace.temperature = options.temperature;
    record_parameters(trace, options.score, w);
    if (options.dtype == Dtype::float32)
        BahdanauStages<float>(trace, options.score)
            .record(attend<float>(input, options.score, w, options.normalization, options.temperature));
    else
        BahdanauStages<double>(trace, options.score)
            .record(attend<double>(input, options.score, w, options.normalization, options.temperature));
    if (options.query)
        trace.worked = work_through(trace, find_query_row(trace.target_tokens, *options.query));
    return trace;
}

Trace trace_bahdanau_problem(const Problem& problem, const TraceOptions& options) {
    const auto* pair = std::get_if<EncoderDecoderInput>(&problem.input);
    if (!pair) refuse_mode_for_input(problem, mode_spec(options.mode));
    check_dim(*pair, options, problem.origin);
    return trace_bahdanau(*pair, options, problem.origin);
}

}  // namespace attntrace
