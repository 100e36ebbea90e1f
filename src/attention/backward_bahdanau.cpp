// The backward pass of encoder–decoder attention: the shared chain from the context back to
// the alignment scores, then each score backwards (Bahdanau's additive through tanh, Luong's
// dot and general) into its parameters and both state sequences. The encoder states are the
// values too, so they also receive αᵀ·dc.
#include "attention/backward_chain.hpp"
#include "attention/backward_steps.hpp"

#include <fmt/format.h>

#include <string>

namespace attntrace::backward_detail {
namespace {

// What reaches the two state sequences through the scores.
struct StateGradients {
    Matrix decoder, encoder;
    std::string decoder_formula, encoder_formula;
};

StateGradients additive_states(GradientRecorder& out, const Trace& t, const Matrix& de) {
    const Stage& pd = t.at(StageId::projected_decoder);
    const Stage& pe = t.at(StageId::projected_encoder);
    const Matrix& w_a = t.parameter("W_a").data;
    const Matrix& u_a = t.parameter("U_a").data;
    const Vector v_a = t.parameter("v_a").data.row(0);
    const grad::AdditiveGradients d = grad::additive_backward(pd.data, pe.data, v_a, de);
    const std::string through = "(1 − tanh²(s_t·W_a + h_j·U_a))[a]";
    out.add(pe, "Gradient of the encoder states in the alignment space: through tanh",
            fmt::format("d(H·U_a)_ja = Σ_t de_tj·v_a[a]·{}", through), d.d_projected_encoder);
    out.add(pd, "Gradient of the decoder states in the alignment space: through tanh",
            fmt::format("d(S·W_a)_ta = Σ_j de_tj·v_a[a]·{}", through), d.d_projected_decoder);
    out.parameter("v_a", "dv_a[a] = Σ_tj de_tj·tanh(s_t·W_a + h_j·U_a)[a]", Matrix(d.d_v_a));
    out.parameter("U_a", "dU_a = Hᵀ·d(H·U_a)", t.at(StageId::encoder_states).data.transpose() * d.d_projected_encoder);
    out.parameter("W_a", "dW_a = Sᵀ·d(S·W_a)", t.at(StageId::decoder_states).data.transpose() * d.d_projected_decoder);
    return {d.d_projected_decoder * w_a.transpose(), d.d_projected_encoder * u_a.transpose(), "dS = d(S·W_a)·W_aᵀ",
            "d(H·U_a)·U_aᵀ"};
}

StateGradients dot_states(GradientRecorder& out, const Trace& t, const Matrix& de) {
    const Stage& s = t.at(StageId::decoder_states);
    const Stage& h = t.at(StageId::encoder_states);
    Matrix d_s = de * h.data, d_h = de.transpose() * s.data;
    out.pass(t.at(StageId::projected_encoder), "Gradient of the encoder states through the scores", "deᵀ·S", d_h,
             "no projection: the dot score compares s and h directly");
    out.pass(t.at(StageId::projected_decoder), "Gradient of the decoder states through the scores", "de·H", d_s,
             "no projection: the dot score compares s and h directly");
    return {std::move(d_s), std::move(d_h), "dS = de·H", "deᵀ·S"};
}

StateGradients general_states(GradientRecorder& out, const Trace& t, const Matrix& de) {
    const Stage& pd = t.at(StageId::projected_decoder);
    const Stage& h = t.at(StageId::encoder_states);
    const Matrix d_pd = de * h.data;
    Matrix d_h = de.transpose() * pd.data;
    out.pass(t.at(StageId::projected_encoder), "Gradient of the encoder states through the scores", "deᵀ·(S·W)", d_h,
             "no projection: the general score maps only the decoder side");
    out.add(pd, "Gradient of the decoder states mapped into the encoder's space", "d(S·W) = de·H", d_pd);
    out.parameter("W", "dW = Sᵀ·d(S·W)", t.at(StageId::decoder_states).data.transpose() * d_pd);
    return {d_pd * t.parameter("W").data.transpose(), std::move(d_h), "dS = d(S·W)·Wᵀ", "deᵀ·(S·W)"};
}

}  // namespace

void backward_encoder_decoder(const Trace& t, Gradients& gradients) {
    GradientRecorder out(gradients, t);
    const Loss& loss = gradients.loss;
    const CoreStages core{t.at(StageId::encoder_states), t.at(StageId::scores), t.at(StageId::scaled),
                          t.at(StageId::masked),         t.at(StageId::weights), t.at(StageId::context)};
    CoreGradients d;
    if (loss.kind == LossKind::focus) {
        const Matrix seed = focus_seed(core.weights, loss);
        d = core_backward(t, core, nullptr, &seed);
    } else {
        const Matrix seed = result_seed(core.context, loss);
        d = core_backward(t, core, &seed, nullptr);
    }
    record_core(out, core, d, encoder_decoder_symbols(),
                loss.kind == LossKind::sum ? "dc = 1 (every entry: L = Σ c)" : "dc = c − T");
    StateGradients states;
    switch (t.score) {
    case Score::additive: states = additive_states(out, t, d.scores); break;
    case Score::dot: states = dot_states(out, t, d.scores); break;
    case Score::general: states = general_states(out, t, d.scores); break;
    }
    out.add(t.at(StageId::decoder_states), "Gradient of the decoder states", states.decoder_formula, states.decoder);
    const bool values = d.values.size() > 0;
    if (values) states.encoder += d.values;
    out.add(t.at(StageId::encoder_states),
            values ? "Gradient of the encoder states: through the scores, and as the values the context mixes"
                   : "Gradient of the encoder states: through the scores",
            "dH = " + states.encoder_formula + (values ? " + αᵀ·dc" : ""), states.encoder);
}

}  // namespace attntrace::backward_detail
