#include "attention/bahdanau.hpp"

#include "attention/kernels.hpp"
#include "attention/stage_builder.hpp"
#include "attention/weights_stage.hpp"
#include "error.hpp"
#include "input/generator.hpp"

#include <fmt/format.h>

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
#pragma omp parallel for schedule(static) reduction(min : first_bad)
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
        for (std::size_t j = 0; j < mask.size(); ++j)
            allowed(t, static_cast<Eigen::Index>(j)) = mask[j];
    return allowed;
}

// The parameters a score uses, taken from the input or generated (and said so).
struct ScoreParameters {
    AdditiveWeights additive;  // Score::additive
    Matrix general;            // Score::general: W, d_s × d_h
};

template <typename T>
void add_bahdanau_stages(Trace& trace, const EncoderDecoderInput& input, Score score,
                         const ScoreParameters& w) {
    const Labels src = trace.source_tokens, tgt = trace.target_tokens;  // shared by every stage
    const MatrixT<T> h = input.source.vectors.cast<T>();
    const MatrixT<T> s = input.target.vectors.cast<T>();
    StageBuilder stages(trace);

    stages.add("encoder_states", "Encoder states: one per source token", "H", src,
               numbered("h", h.cols()), h);
    stages.add("decoder_states", "Decoder states: one per target step", "S", tgt,
               numbered("s", s.cols()), s);

    MatrixT<T> scores;
    switch (score) {
    case Score::additive: {
        const MatrixT<T> ps = project<T>(s, w.additive.W_a.cast<T>());
        const MatrixT<T> ph = project<T>(h, w.additive.U_a.cast<T>());
        stages.add("projected_decoder", "Decoder states in the alignment space", "S·W_a", tgt,
                   numbered("a", ps.cols()), ps);
        stages.add("projected_encoder", "Encoder states in the alignment space", "H·U_a", src,
                   numbered("a", ph.cols()), ph);
        std::optional<std::pair<Eigen::Index, Eigen::Index>> overflow;
        scores = additive_scores<T>(ps, ph, MatrixT<T>(w.additive.v_a.cast<T>()), overflow);
        if (overflow)
            throw DataError(fmt::format(
                "{}: the scores stage overflows: s·W_a + h·U_a for \"{}\" (row {}) and \"{}\" (column {}) is "
                "not finite; the input numbers are too large",
                trace.origin, tgt[static_cast<std::size_t>(overflow->first)], overflow->first + 1,
                src[static_cast<std::size_t>(overflow->second)], overflow->second + 1));
        stages.add("scores", "Alignment scores: how well each source word fits this target step",
                   "e_tj = v_a · tanh(s_t·W_a + h_j·U_a)", tgt, src, scores);
        break;
    }
    case Score::dot:
        stages.skip("projected_decoder", "Decoder states in the alignment space", "S", tgt,
                    numbered("s", s.cols()), s, "no projection: the dot score compares s and h directly");
        stages.skip("projected_encoder", "Encoder states in the alignment space", "H", src,
                    numbered("h", h.cols()), h, "no projection: the dot score compares s and h directly");
        scores = dot_scores<T>(s, h);
        stages.add("scores", "Alignment scores: decoder state · encoder state (Luong's dot)",
                   "e_tj = s_t · h_j", tgt, src, scores);
        break;
    case Score::general: {
        const MatrixT<T> sw = project<T>(s, w.general.cast<T>());
        stages.add("projected_decoder", "Decoder states mapped into the encoder's space", "S·W",
                   tgt, numbered("h", sw.cols()), sw);
        stages.skip("projected_encoder", "Encoder states in the alignment space", "H", src,
                    numbered("h", h.cols()), h, "no projection: the general score maps only the decoder side");
        scores = dot_scores<T>(sw, h);
        stages.add("scores", "Alignment scores: (decoder state · W) · encoder state (Luong's general)",
                   "e_tj = s_t·W·h_jᵀ", tgt, src, scores);
        break;
    }
    }
    stages.skip("scaled", "Scaled scores", "e' = e", tgt, src, scores,
                score == Score::additive
                    ? "no scaling: additive scores pass through tanh and are not scaled"
                    : "no scaling: Luong's scores are used as they are (the Transformer adds ÷ √d_k)");

    std::optional<BoolMatrix> mask;
    if (input.source_mask) {
        mask = source_mask(*input.source_mask, s.rows());
        scores = apply_mask<T>(scores, *mask);
        stages.add("masked", "Masked scores: source positions the mask hides",
                   "e'' = e with −∞ where source.mask is false", tgt, src, scores, &*mask);
    } else {
        stages.skip("masked", "Masked scores", "e'' = e", tgt, src, scores,
                    "no mask: the input has no source.mask, so every target step sees every "
                    "source position");
    }
    const MatrixT<T> alpha = add_weights_stage<T>(
        stages, trace, scores, mask ? &*mask : nullptr, "α", mask ? "e''" : "e",
        "the alignment matrix (target rows, source columns)", tgt, src);

    const MatrixT<T> context = weighted_sum<T>(alpha, h);
    stages.add("context", "Context vectors: weighted sum of the encoder states", "c_t = Σ_j α_tj h_j",
               tgt, numbered("c", context.cols()), context);
}

}  // namespace

Trace trace_bahdanau(const EncoderDecoderInput& input, const TraceOptions& options,
                     const std::string& origin) {
    Trace trace;
    trace.mode = Mode::bahdanau;
    trace.score = options.score;
    trace.normalization = options.normalization;
    trace.dtype = options.dtype;
    trace.origin = origin;
    trace.source_tokens = input.source.tokens;
    trace.target_tokens = input.target.tokens;

    const Eigen::Index d_h = input.source.vectors.cols();
    const Eigen::Index d_s = input.target.vectors.cols();
    trace.dims = {{"d_h", d_h}, {"d_s", d_s}};
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
            w.additive = generate_additive_weights(options.seed, d_s, d_h,
                                                   options.dim.value_or(std::max(d_s, d_h)));
            generated();
        }
        trace.dims.emplace_back("d_a", w.additive.W_a.cols());
        break;
    case Score::dot:
        if (d_s != d_h)
            throw DataError(fmt::format(
                "{}: the dot score needs decoder and encoder states of one size, but /target/states "
                "has d_s = {} and /source/states has d_h = {}; use --score general or additive",
                origin, d_s, d_h));
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

    if (options.dtype == Dtype::float32)
        add_bahdanau_stages<float>(trace, input, options.score, w);
    else
        add_bahdanau_stages<double>(trace, input, options.score, w);
    if (options.query)
        trace.worked = work_through(trace, find_query_row(trace.target_tokens, *options.query), &w.additive);
    return trace;
}

}  // namespace attntrace
