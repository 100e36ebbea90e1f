#include "attention/single.hpp"

#include "attention/affine.hpp"
#include "attention/heads.hpp"
#include "attention/kernels.hpp"
#include "attention/modes.hpp"
#include "attention/positions.hpp"
#include "attention/stage_builder.hpp"
#include "attention/weights_stage.hpp"
#include "attention/worked.hpp"
#include "core/error.hpp"
#include "core/generator.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace attntrace {
namespace {

struct ScaleSetting {
    ScaleRule rule;
    double value;  // the divisor of ScaleRule::value
};

// The matrices of one head, in pipeline order, in the working precision T.
template <typename T>
struct HeadPass {
    MatrixT<T> q, k, v;  // this head's columns of Q, K and V (all of them with one head)
    MatrixT<T> q_rotated, k_rotated;  // RoPE: q and k turned by their positions
    MatrixT<T> scores, scaled, masked, context;
    Normalized<T> weights;
};

// Every matrix of single-sequence attention: the inputs, each head's pass, and with several
// heads (or a W_o) the heads' contexts side by side and their mix.
template <typename T>
struct SinglePass {
    MatrixT<T> x;
    MatrixT<T> embeddings, encoding;  // sinusoidal positions: x = embeddings + encoding
    MatrixT<T> normed;                // --from gpt2: LN(x), what the projections read
    Matrix angles;                    // RoPE: each position's angle per pair of a head's numbers
    std::optional<Mask> mask;
    std::vector<HeadPass<T>> heads;
    MatrixT<T> concat;                      // several heads: [Z_1 … Z_H]
    MatrixT<T> output;                      // concat·W_o (one head: Z·W_o), when there is a W_o
    std::vector<MatrixT<T>> contributions;  // several heads: Z_h · (head h's rows of W_o), summing to output
};

// What the scores are divided by, in the working precision (the square root rounded once:
// double rounding of a square root to float is exact).
template <typename T>
T divisor_for(const ScaleSetting& scale, Eigen::Index d_k) {
    return static_cast<T>(scale_divisor(scale.rule, scale.value, d_k));
}

// How the mask is applied, and what it needs: the fill of the hidden scores in type T.
struct Masking {
    const std::optional<Mask>& mask;
    MaskMethod method;

    template <typename T>
    T fill() const {
        switch (method.fill) {
        case MaskMethod::Fill::minus_infinity: return -std::numeric_limits<T>::infinity();
        case MaskMethod::Fill::lowest: return std::numeric_limits<T>::lowest();
        case MaskMethod::Fill::value: return static_cast<T>(method.value);
        }
        return -std::numeric_limits<T>::infinity();
    }
};

// One head, as the second lecture lists it: score, scale, exclude, softmax, mix.
// (--mask-fill and --mask-after-softmax trace the ways of masking that go wrong.)
template <typename T>
void attend_head(HeadPass<T>& h, const Masking& masking, const ScaleSetting& scale, Normalization normalization,
                 double temperature, const Matrix* angles = nullptr) {
    if (angles) {  // RoPE: turn each query and key by its position's angles
        h.q_rotated = rotate_half<T>(h.q, *angles);
        h.k_rotated = rotate_half<T>(h.k, *angles);
    }
    h.scores = angles ? dot_scores<T>(h.q_rotated, h.k_rotated) : dot_scores<T>(h.q, h.k);  // S = Q·Kᵀ
    h.scaled = scale.rule == ScaleRule::none ? h.scores : scale_scores<T>(h.scores, divisor_for<T>(scale, h.q.cols()));  // S' = S / √d_head
    const bool before = masking.mask && !masking.method.after_softmax;
    h.masked = before ? apply_mask<T>(h.scaled, masking.mask->allowed, masking.fill<T>()) : h.scaled;  // −∞ where hidden
    h.weights = normalize_rows<T>(h.masked, normalization, temperature);  // A = softmax(S'' / T)
    if (masking.mask && masking.method.after_softmax)  // the wrong way: zeroed, not divided again
        h.weights.weights = apply_mask<T>(h.weights.weights, masking.mask->allowed, T(0));
    h.context = weighted_sum<T>(h.weights.weights, h.v);  // Z = A·V
}

// Attention itself: project, then each head on its columns, then the heads mixed by W_o.
// Sinusoidal positions are added to the embeddings first; RoPE turns each head's queries and
// keys before they are scored (attention/positions.hpp).
// (attention/reference.hpp says one head in plain loops; kernels.hpp holds each step.)
template <typename T>
SinglePass<T> attend(const Matrix& embeddings, const LayerNorm* layernorm, const Projections* w,
                     const HeadLayout& layout, const MaskSpec& mask, const MaskMethod& method,
                     const ScaleSetting& scale, Normalization normalization, double temperature,
                     const PositionSetting& positions) {
    SinglePass<T> p;
    p.x = embeddings.cast<T>();
    if (positions.scheme == PositionScheme::sinusoidal) {  // X = E + PE
        p.embeddings = p.x;
        p.encoding = sinusoidal_encoding(p.x.rows(), p.x.cols(), positions.first).template cast<T>();
        p.x += p.encoding;
    }
    if (positions.scheme == PositionScheme::rope) p.angles = rotary_angles(p.x.rows(), layout.d_head, positions.first);
    const Matrix* angles = p.angles.size() > 0 ? &p.angles : nullptr;
    if (layernorm) p.normed = layer_norm<T>(p.x, *layernorm);  // ln_1 (GPT-2): LN(X)
    const MatrixT<T>& x = layernorm ? p.normed : p.x;
    p.mask = build_mask(mask, p.x.rows());  // causal, window, padding: none when nothing is hidden
    const Masking masking{p.mask, method};
    p.heads.resize(static_cast<std::size_t>(layout.heads));
    if (!w) {  // plain: Q = K = V = X
        HeadPass<T>& h = p.heads.front();
        h.q = h.k = h.v = x;
        attend_head(h, masking, scale, normalization, temperature);
        return p;
    }
    MatrixT<T> q = project<T>(x, w->query.cast<T>());  // Q = X·W_q (+ b_q)
    MatrixT<T> k = project<T>(x, w->key.cast<T>());    // K = X·W_k (+ b_k)
    MatrixT<T> v = project<T>(x, w->value.cast<T>());  // V = X·W_v (+ b_v)
    add_bias(q, w->query_bias);
    add_bias(k, w->key_bias);
    add_bias(v, w->value_bias);
    for (int head = 1; head <= layout.heads; ++head) {
        HeadPass<T>& h = p.heads[static_cast<std::size_t>(head - 1)];
        const int g = layout.kv_head_of(head);
        if (layout.heads == 1) {
            h.q = std::move(q), h.k = std::move(k), h.v = std::move(v);
        } else {  // head h's columns; key/value head g's
            h.q = q.middleCols((head - 1) * layout.d_head, layout.d_head);
            h.k = k.middleCols((g - 1) * layout.d_head, layout.d_head);
            h.v = v.middleCols((g - 1) * layout.d_v, layout.d_v);
        }
        attend_head(h, masking, scale, normalization, temperature, angles);
    }
    if (layout.several()) {
        p.concat.resize(p.x.rows(), layout.heads * layout.d_v);
        for (int head = 0; head < layout.heads; ++head)
            p.concat.middleCols(head * layout.d_v, layout.d_v) = p.heads[static_cast<std::size_t>(head)].context;
    }
    if (w->output) {
        const MatrixT<T> w_o = w->output->cast<T>();
        p.output = project<T>(layout.several() ? p.concat : p.heads.front().context, w_o);  // concat·W_o (+ b_o)
        add_bias(p.output, w->output_bias);
        if (layout.several())
            for (int head = 0; head < layout.heads; ++head)
                p.contributions.push_back(project<T>(p.heads[static_cast<std::size_t>(head)].context,
                                                     MatrixT<T>(w_o.middleRows(head * layout.d_v, layout.d_v))));
    }
    return p;
}

// "3–4": 1-based columns first … first + count − 1.
std::string column_span(Eigen::Index first, Eigen::Index count) {
    return count == 1 ? std::to_string(first + 1) : fmt::format("{}–{}", first + 1, first + count);
}

// The stages of a pass, each with its title and formula, in pipeline order: one head as
// always; several heads one after another, then their concatenation and output.
template <typename T>
class SingleStages {
public:
    SingleStages(Trace& trace, const ModeSpec& mode, const ScaleSetting& scale, const HeadLayout& layout,
                 const MaskSpec& mask, const MaskMethod& method, const LayerNorm* layernorm, const Projections* w)
        : trace_(trace), mode_(mode), scale_(scale), layout_(layout), mask_(mask), method_(method),
          layernorm_(layernorm), stages_(trace), tokens_(trace.tokens) {
        if (w) biases_ = {w->query_bias.has_value(), w->key_bias.has_value(), w->value_bias.has_value(),
                          w->output_bias.has_value()};
    }

    // `w`, when the mode has weights, moves into the trace's parameters.
    void record(SinglePass<T> p, Projections* w, bool output_generated) {
        const Eigen::Index d_in = p.x.cols();
        const HeadPass<T>& first = p.heads.front();
        trace_.dims = dims_of(layout_, d_in, first.q.cols(), first.v.cols());
        trace_.heads = layout_.heads;
        trace_.kv_heads = layout_.kv_heads;
        trace_.scale_rule = scale_.rule;
        trace_.scale = static_cast<double>(divisor_for<T>(scale_, first.q.cols()));
        const bool encoded = p.embeddings.size() > 0;
        if (encoded) record_encoding(p);
        stages_.add(StageId::inputs, encoded      ? "Inputs: each token's embedding plus its position's encoding"
                                     : layernorm_ ? "Inputs: each token's hidden state as it enters the layer"
                                                  : "Inputs: one embedding per token",
                    encoded ? "X = E + PE" : "X", tokens_, numbered("x", d_in), p.x);
        if (p.normed.size() > 0) record_layernorm(std::move(p.normed));
        if (p.angles.size() > 0) record_angles(p.angles);
        if (w) record_parameters(std::move(*w), output_generated);
        for (int head = 1; head <= layout_.heads; ++head) {
            if (layout_.several()) stages_.set_head(head, layout_.grouped() ? layout_.kv_head_of(head) : 0);
            record_head(std::move(p.heads[static_cast<std::size_t>(head - 1)]), p.mask, head);
        }
        stages_.set_head(0, 0);
        record_output(p);
        if (p.mask) note_mask(*p.mask);
        else if (!method_.standard())
            add_note(trace_, fmt::format("{} changes nothing here: nothing is masked in this run",
                                         method_.after_softmax ? "--mask-after-softmax" : "--mask-fill"));
    }

private:
    // ln_1: each token's vector normalised, with the layer's γ and β among the parameters.
    void record_layernorm(MatrixT<T> normed) {
        const Eigen::Index d = normed.cols();
        trace_.layernorm_epsilon = layernorm_->epsilon;
        stages_.add(StageId::layernorm,
                    fmt::format("Layer normalisation ({}): each token's vector minus its mean, divided by its standard "
                                "deviation, then scaled by γ and shifted by β",
                                layernorm_->name),
                    fmt::format("LN(x) = (x − mean(x)) / √(var(x) + {:g})·γ + β", layernorm_->epsilon), tokens_,
                    numbered("n", d), std::move(normed));
        trace_.parameters.push_back({"gamma", "LN(x) = (x − mean(x)) / √(var(x) + ε)·γ + β: γ scales", "", "n",
                                     layernorm_->gamma, true});
        trace_.parameters.push_back({"beta", "LN(x) = … + β: β shifts", "", "n", layernorm_->beta, true});
    }

    // "Q = X·W_q + b_q", its bias named when there is one; "LN(X)" for X after ln_1.
    std::string projected(std::string_view symbol, std::string_view weight, const std::optional<Vector>& bias,
                          std::string_view b) const {
        return fmt::format("{} = {}·{}{}", symbol, input_symbol(), weight, bias ? fmt::format(" + {}", b) : "");
    }
    std::string input_symbol() const { return layernorm_ ? "LN(X)" : "X"; }

    void record_parameters(Projections&& w, bool output_generated) {
        const std::string split =
            layout_.several() ? fmt::format(", its columns split into {} heads of {}", layout_.heads, layout_.d_head) : "";
        const std::string kv_split = layout_.grouped() ? fmt::format(", its columns split into {} key/value heads",
                                                                     layout_.kv_heads)
                                     : split;
        const std::string row = layernorm_ ? "n" : "x";
        trace_.parameters.reserve(trace_.parameters.size() + 8);
        trace_.parameters.push_back({"W_q", projected("Q", "W_q", w.query_bias, "b_q") + split, row, "q", std::move(w.query)});
        if (w.query_bias) trace_.parameters.push_back({"b_q", "added to every query", "", "q", *w.query_bias, true});
        trace_.parameters.push_back({"W_k", projected("K", "W_k", w.key_bias, "b_k") + kv_split, row, "k", std::move(w.key)});
        if (w.key_bias) trace_.parameters.push_back({"b_k", "added to every key", "", "k", *w.key_bias, true});
        trace_.parameters.push_back({"W_v", projected("V", "W_v", w.value_bias, "b_v") + kv_split, row, "v", std::move(w.value)});
        if (w.value_bias) trace_.parameters.push_back({"b_v", "added to every value", "", "v", *w.value_bias, true});
        if (w.output) {
            const std::string b_o = w.output_bias ? " + b_o" : "";
            Parameter o{"W_o", layout_.several() ? "output = concat·W_o" + b_o : "output = Z·W_o" + b_o,
                        layout_.several() ? "c" : "z", "o", std::move(*w.output)};
            o.generated = output_generated;
            trace_.parameters.push_back(std::move(o));
            if (w.output_bias)
                trace_.parameters.push_back({"b_o", "added to every row of the output", "", "o", *w.output_bias, true});
        }
    }

    // Sinusoidal positions: the embeddings as given, then the encodings added to them.
    void record_encoding(const SinglePass<T>& p) {
        const Eigen::Index d = p.x.cols();
        stages_.add(StageId::embeddings, "Embeddings: one vector per token, before position information", "E", tokens_,
                    numbered("e", d), p.embeddings);
        stages_.add(StageId::positions,
                    fmt::format("Position encodings: the token at position p (counted from {}) gets sin(p·ω_i) in "
                                "pe1, pe3, … and cos(p·ω_i) in pe2, pe4, …",
                                trace_.first_position),
                    fmt::format("PE(p, 2i) = sin(p·ω_i), PE(p, 2i+1) = cos(p·ω_i), ω_i = 10000^(−2i/{})", d), tokens_,
                    numbered("pe", d), p.encoding);
    }

    // RoPE: the angle each position turns each pair of a head's numbers by (the same in every head).
    void record_angles(const Matrix& angles) {
        const Eigen::Index half = angles.cols();
        stages_.add(StageId::positions,
                    fmt::format("Rotation angles in radians: the token at position p (counted from {}) turns numbers k "
                                "and k + {} of each head's query and key by φk",
                                trace_.first_position, half),
                    fmt::format("φk = p·θ_k, θ_k = 10000^(−2(k−1)/{})", 2 * half), tokens_, numbered("φ", half), angles);
    }

    // RoPE: this head's queries and keys turned by their positions' angles.
    void record_rotations(HeadPass<T>& h, int head) {
        const Eigen::Index half = h.q.cols() / 2;
        const auto rotation = [&](std::string_view symbol) {
            return fmt::format("RoPE({}): numbers (k, k + {}) as (a, b) → (a·cos φk − b·sin φk, b·cos φk + a·sin φk)",
                               symbol, half);
        };
        const std::string q = layout_.several() ? fmt::format("Q_{}", head) : "Q";
        const std::string k = layout_.several() ? fmt::format("K_{}", head) : "K";
        stages_.add(StageId::queries_rotated,
                    fmt::format("Rotated queries: numbers k and k + {} of each query turned together by φk", half),
                    rotation(q), tokens_, numbered("q", h.q.cols()), std::move(h.q_rotated));
        stages_.add(StageId::keys_rotated,
                    fmt::format("Rotated keys: numbers k and k + {} of each key turned together by φk", half),
                    rotation(k), tokens_, numbered("k", h.k.cols()), std::move(h.k_rotated));
    }

    // "Q_2 = X·W_q, columns 3–4" for head 2 of 2-number heads; "Q = X·W_q" with one head;
    // "Q = X·W_q + b_q" with a bias (the bias's same columns for a head).
    std::string projection_formula(std::string_view symbol, std::string_view weight, int head, Eigen::Index width,
                                   bool kv, bool bias) const {
        const std::string b = bias ? fmt::format(" + b_{}", weight.substr(2)) : "";
        if (!layout_.several()) return fmt::format("{} = {}·{}{}", symbol, input_symbol(), weight, b);
        const int block = kv ? layout_.kv_head_of(head) : head;
        return fmt::format("{}_{} = {}·{}{}, {}", symbol, head, input_symbol(), weight, b,
                           columns_text((block - 1) * width, width));
    }

    void record_head(HeadPass<T> h, const std::optional<Mask>& mask, int head) {
        record_projections(h, head);
        if (trace_.positions == PositionScheme::rope) record_rotations(h, head);
        record_scores(h, head);
        const std::string_view scores_name = scale_.rule == ScaleRule::none ? "S" : "S'";
        const MatrixT<T> masked = h.masked;  // the weights' message quotes it
        const bool masked_before = mask && !method_.after_softmax;
        if (h.weights.bad_row) excuse_padding_rows(h.weights, masked);
        record_mask(std::move(h.masked), mask, scores_name);
        record_weights<T>(stages_, trace_, std::move(h.weights), masked, mask ? &mask->allowed : nullptr,
                          {"A", masked_before ? "S''" : scores_name, ""},
                          tokens_, tokens_, layout_.several() ? head : 0);
        stages_.add(StageId::context, "Context vectors: weighted sum of the values",
                    mode_.learned_projections ? (layout_.several() ? fmt::format("Z_{} = A_{}·V_{}", head, head, head) : "Z = A·V")
                                              : "Z = A·X",
                    tokens_, numbered("z", h.context.cols()), std::move(h.context));
    }

    void record_projections(HeadPass<T>& h, int head) {
        if (!mode_.learned_projections) {
            const auto same = [&](StageId id, std::string_view title, std::string_view formula, std::string_view role) {
                stages_.skip(id, std::string(title), std::string(formula), tokens_, numbered("x", h.q.cols()), h.q,
                             fmt::format("no projection: plain attention has no trainable weights, so the "
                                         "embeddings themselves are the {}",
                                         role));
            };
            same(StageId::queries, "Queries", "Q = X", "queries");
            same(StageId::keys, "Keys", "K = X", "keys");
            same(StageId::values, "Values", "V = X", "values");
            return;
        }
        const std::string shared =
            layout_.grouped() ? fmt::format(" (key/value head {}, shared by heads {})", layout_.kv_head_of(head),
                                            shared_heads(layout_.kv_head_of(head)))
                              : "";
        stages_.add(StageId::queries, "Queries: what each token is looking for",
                    projection_formula("Q", "W_q", head, layout_.d_head, false, biases_.query), tokens_,
                    numbered("q", h.q.cols()), h.q);
        stages_.add(StageId::keys, "Keys: what each token offers" + shared,
                    projection_formula("K", "W_k", head, layout_.d_head, true, biases_.key), tokens_,
                    numbered("k", h.k.cols()), h.k);
        stages_.add(StageId::values, "Values: what each token passes on" + shared,
                    projection_formula("V", "W_v", head, layout_.d_v, true, biases_.value), tokens_,
                    numbered("v", h.v.cols()), h.v);
    }

    // --normalize sum: a row whose scores sum to 0 or less cannot be divided. A padding token's
    // row stands for nothing and a model ignores it (padding_note), so such a row is left at
    // weights 0, said in a note, rather than refusing the run; `bad_row` is then the first other
    // row that cannot divide, if any, which record_weights refuses.
    void excuse_padding_rows(Normalized<T>& weights, const MatrixT<T>& scores) {
        weights.bad_row.reset();
        std::vector<std::string> excused;  // the first few, named
        std::size_t count = 0;
        for (Eigen::Index r = 0; r < scores.rows(); ++r) {
            T sum = 0;
            bool any = false;
            for (Eigen::Index c = 0; c < scores.cols(); ++c)
                if (std::isfinite(scores(r, c))) sum += scores(r, c), any = true;
            if (!any || (sum > 0 && std::isfinite(sum))) continue;  // divided (or every key hidden: weights 0)
            const bool padding = static_cast<std::size_t>(r) < mask_.padding.size() && mask_.padding[static_cast<std::size_t>(r)];
            if (!padding) {
                weights.bad_row = r;
                return;
            }
            undivided_padding_ = true;
            if (excused.size() < 8) excused.push_back(fmt::format("{} (position {})", printable(tokens_[static_cast<std::size_t>(r)], 24), r + 1));
            ++count;
        }
        add_note(trace_, fmt::format("--normalize sum: the scores of the padding row{} {} do not sum to a positive "
                                     "number, so dividing by the sum gives no weights there; a model ignores padding "
                                     "rows, so {}, not divided",
                                     count == 1 ? "" : "s", bounded_join(excused, count),
                                     count == 1 ? "its weights are left 0 (and its context vector 0)"
                                                : "their weights are left 0 (and their context vectors 0)"));
    }

    // "1–2": the query heads that read key/value head g.
    std::string shared_heads(int g) const {
        const int per = layout_.heads / layout_.kv_heads;
        return column_span((g - 1) * per, per);
    }

    void record_scores(HeadPass<T>& h, int head) {
        const Eigen::Index d = h.q.cols();
        const std::string d_name = layout_.several() ? "d_head" : "d_k";
        const bool rotated = trace_.positions == PositionScheme::rope;
        stages_.add(StageId::scores, rotated ? "Attention scores: rotated query · rotated key" : "Attention scores: query · key",
                    !mode_.learned_projections ? std::string("S = X·Xᵀ")
                    : rotated ? (layout_.several() ? fmt::format("S_{} = RoPE(Q_{})·RoPE(K_{})ᵀ", head, head, head)
                                                   : std::string("S = RoPE(Q)·RoPE(K)ᵀ"))
                    : (layout_.several() ? fmt::format("S_{} = Q_{}·K_{}ᵀ", head, head, head) : std::string("S = Q·Kᵀ")),
                    tokens_, tokens_, std::move(h.scores));
        switch (scale_.rule) {
        case ScaleRule::none:
            stages_.skip(StageId::scaled, "Scaled scores", "S' = S", tokens_, tokens_, std::move(h.scaled),
                         mode_.scaled ? fmt::format("no scaling: --scale none leaves the scores as they are (the "
                                                    "Transformer divides by √{})",
                                                    d_name)
                                      : "no scaling: the simplified version uses raw dot products");
            return;
        case ScaleRule::sqrt:
            stages_.add(StageId::scaled, fmt::format("Scaled scores: divided by √{} = √{}", d_name, d),
                        fmt::format("S' = S / √{}", d_name), tokens_, tokens_, std::move(h.scaled));
            return;
        case ScaleRule::value:
            stages_.add(StageId::scaled, fmt::format("Scaled scores: divided by {} (--scale)", scale_.value),
                        fmt::format("S' = S / {}", scale_.value), tokens_, tokens_, std::move(h.scaled));
            return;
        }
    }

    void record_mask(MatrixT<T> masked, const std::optional<Mask>& mask, std::string_view scores_name) {
        if (!mask) {
            stages_.skip(StageId::masked, "Masked scores", fmt::format("S'' = {}", scores_name), tokens_, tokens_,
                         std::move(masked), "no mask: bidirectional, every position sees every position");
            return;
        }
        if (method_.after_softmax) {
            stages_.skip(StageId::masked, "Masked scores", fmt::format("S'' = {}", scores_name), tokens_, tokens_,
                         std::move(masked),
                         "not masked before softmax: --mask-after-softmax sets the hidden weights to 0 after it, "
                         "without dividing each row again");
            return;
        }
        Stage& stage = stages_.add(StageId::masked, mask_title(mask_), mask_formula(mask_, "S'", fill_text()), tokens_,
                                   tokens_, std::move(masked), &mask->allowed);
        stage.mask_reasons = mask->reasons;
    }

    // The fill of the hidden scores as the formula says it: −∞, or the number used instead.
    std::string fill_text() const {
        switch (method_.fill) {
        case MaskMethod::Fill::minus_infinity: return "−∞";
        case MaskMethod::Fill::lowest:
            return fmt::format("{} (the lowest {})", std::numeric_limits<T>::lowest(), std::is_same_v<T, float> ? "float32" : "float64");
        case MaskMethod::Fill::value: return fmt::format("{}", static_cast<T>(method_.value));
        }
        return "−∞";
    }

    // What the learner should know about the mask of this run: the padding tokens' own rows, and
    // what a way of masking other than −∞ before softmax did here, measured.
    void note_mask(const Mask& mask) {
        double padding_weight = 0;  // the largest weight a query gave a padding key (a finite --mask-fill)
        for (const Stage& stage : trace_.stages)
            if (stage.id == StageId::weights)
                for (Eigen::Index c = 0; c < stage.col_count(); ++c)
                    if (static_cast<std::size_t>(c) < mask_.padding.size() && mask_.padding[static_cast<std::size_t>(c)])
                        padding_weight = std::max(padding_weight, stage.data.col(c).cwiseAbs().maxCoeff());
        if (auto note = padding_note(mask_, trace_.tokens, padding_weight, undivided_padding_)) add_note(trace_, std::move(*note));
        if (method_.standard()) return;
        double leaked = 0, shortest = 1;  // the largest weight on a hidden key; the smallest row sum
        for (const Stage& stage : trace_.stages) {
            if (stage.id != StageId::weights) continue;
            for (Eigen::Index r = 0; r < stage.row_count(); ++r) {
                if (mask.allowed.row(r).any()) shortest = std::min(shortest, (*stage.row_sums)(r));
                for (Eigen::Index c = 0; c < stage.col_count(); ++c)
                    if (!mask.allowed(r, c)) leaked = std::max(leaked, stage.data(r, c));
            }
        }
        if (method_.after_softmax && shortest < 1 - 1e-12)
            add_note(trace_, fmt::format("--mask-after-softmax: softmax ran over every key, then the hidden keys' weights "
                                         "were set to 0 and the rows not divided again, so they no longer sum to 1 (the "
                                         "smallest sum of a row that sees any key is {:.6g}); −∞ before softmax is the "
                                         "same as zeroing and then dividing by what is left",
                                         shortest));
        else if (method_.after_softmax)  // the hidden keys' weights had underflowed to 0 already
            add_note(trace_, "--mask-after-softmax: softmax ran over every key, then the hidden keys' weights were set "
                             "to 0 and the rows not divided again; here the hidden keys' weights were already 0 to the "
                             "last digits, so every row still sums to 1");
        else
            add_note(trace_, fmt::format("--mask-fill: the hidden scores are {} instead of −∞, an ordinary number to "
                                         "softmax; the largest weight a hidden key got in this run is {}",
                                         fill_text(), leaked == 0 ? "0 (exactly)" : fmt::format("{:.6g}", leaked)));
    }

    // The heads side by side, the output and what each head adds to it.
    void record_output(SinglePass<T>& p) {
        if (layout_.several()) {
            std::vector<std::string> blocks;
            for (int head = 1; head <= layout_.heads; ++head)
                blocks.push_back(fmt::format("head {}: c{}", head, column_span((head - 1) * layout_.d_v, layout_.d_v)));
            stages_.add(StageId::concat, fmt::format("The heads' context vectors side by side ({})", fmt::join(blocks, "; ")),
                        "concat = [Z_1 … Z_H]", tokens_, numbered("c", p.concat.cols()), std::move(p.concat));
        }
        if (p.output.size() == 0) return;
        const std::string b_o = biases_.output ? " + b_o" : "";
        stages_.add(StageId::output,
                    layout_.several() ? "Output: the heads' contexts mixed by W_o" + std::string(biases_.output ? ", plus b_o" : "")
                                      : "Output: the context vectors mapped by W_o" + std::string(biases_.output ? ", plus b_o" : ""),
                    layout_.several() ? "output = concat·W_o" + b_o : "output = Z·W_o" + b_o, tokens_,
                    numbered("o", p.output.cols()), std::move(p.output));
        for (int head = 1; head <= static_cast<int>(p.contributions.size()); ++head) {
            stages_.set_head(head, 0);
            stages_.add(StageId::head_contributions,
                        fmt::format("What head {} adds to the output: its context times its rows c{} of W_o{}", head,
                                    column_span((head - 1) * layout_.d_v, layout_.d_v),
                                    biases_.output ? " (b_o, added once, belongs to no head)" : ""),
                        fmt::format("Z_{}·W_o[rows of head {}]", head, head), tokens_,
                        numbered("o", p.contributions[static_cast<std::size_t>(head - 1)].cols()),
                        std::move(p.contributions[static_cast<std::size_t>(head - 1)]));
        }
        stages_.set_head(0, 0);
    }

    Trace& trace_;
    const ModeSpec& mode_;
    const ScaleSetting& scale_;
    const HeadLayout& layout_;
    const MaskSpec& mask_;
    bool undivided_padding_ = false;  // --normalize sum left a padding row undivided (excuse_padding_rows)
    const MaskMethod& method_;
    const LayerNorm* layernorm_;  // ln_1 before the projections (--from gpt2)
    struct {
        bool query = false, key = false, value = false, output = false;
    } biases_;  // which projections add a bias
    StageBuilder stages_;
    const Labels tokens_;  // shared by every stage
};

void refuse_dim(const std::string& origin, std::string_view own) {
    throw UsageError(fmt::format("--dim sets the size of generated weights, but {} gives its own weights ({})", origin,
                                 own));
}

// The one place single-sequence weights come from: the input, or the seed. With several heads
// and no W_o in the input, W_o is generated (and said so).
SingleWeights weights_for(const Sequence& sequence, const std::optional<Projections>& given, const HeadCounts& counts,
                          const TraceOptions& options, const std::string& origin) {
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
        w.layout = head_layout(*w.projections, counts, origin);
        if (counts.heads > 1 && !w.projections->output) {
            const Eigen::Index width = w.layout.heads * w.layout.d_v;
            SplitMix64 rng(options.seed);
            w.projections->output = random_matrix(rng, width, width, 1.0 / std::sqrt(static_cast<double>(width)));
            w.layout.d_out = width;
            w.output_generated = true;
            w.notes.push_back(fmt::format("W_o generated from seed {} (splitmix64), not learned: the input gives W_q, "
                                          "W_k and W_v but no \"output\"",
                                          options.seed));
        }
        return w;
    }
    const Eigen::Index d_in = sequence.vectors.cols();
    const Eigen::Index d_model = generated_model_size(d_in, counts, options);
    const Eigen::Index d_kv = d_model / counts.heads * counts.kv_heads;
    w.projections = generate_projections(options.seed, d_in, d_model, d_kv, counts.heads > 1);
    w.origin = WeightsOrigin::generated;
    w.layout = head_layout(*w.projections, counts, origin);
    return w;
}

// The mask of a single-sequence run: the mode's causal one, --window, and the tokens the
// input names as padding ("<pad>" when it names none).
MaskSpec mask_for(const Sequence& sequence, const std::optional<std::vector<std::string>>& padding,
                  const TraceOptions& options) {
    MaskSpec spec;
    spec.causal = mode_spec(options.mode).causal;
    spec.window = options.window;
    const std::vector<std::string> pads = padding.value_or(std::vector<std::string>{"<pad>"});
    spec.padding.assign(sequence.tokens.size(), false);
    for (std::size_t i = 0; i < sequence.tokens.size(); ++i)
        spec.padding[i] = std::find(pads.begin(), pads.end(), sequence.tokens[i]) != pads.end();
    return spec;
}

// `w` moves into the trace.
Trace trace_with(const Sequence& sequence, SingleWeights w, const MaskSpec& mask, const PositionSetting& positions,
                 const LayerNorm* layernorm, const TraceOptions& options, const std::string& origin) {
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
    trace.positions = positions.scheme;
    trace.first_position = positions.first;
    Projections* p = w.projections ? &*w.projections : nullptr;
    const ScaleSetting scale{options.scale.value_or(mode.default_scale()), options.scale_value};
    const HeadLayout& layout = w.layout;
    const MaskMethod& method = options.mask_method;
    if (options.dtype == Dtype::float32)
        SingleStages<float>(trace, mode, scale, layout, mask, method, layernorm, p)
            .record(attend<float>(sequence.vectors, layernorm, p, layout, mask, method, scale, options.normalization,
                                  options.temperature, positions),
                    p, w.output_generated);
    else
        SingleStages<double>(trace, mode, scale, layout, mask, method, layernorm, p)
            .record(attend<double>(sequence.vectors, layernorm, p, layout, mask, method, scale, options.normalization,
                                   options.temperature, positions),
                    p, w.output_generated);
    if (options.query && !options.mask_method.standard() && mask.any())
        throw UsageError("--query works through the standard mask (−∞ before softmax); the weights table and the notes "
                         "show what --mask-fill and --mask-after-softmax do");
    if (options.query)
        trace.worked = work_through(trace, find_query_row(trace.tokens, *options.query), options.head.value_or(1));
    return trace;
}

}  // namespace

SingleSetup setup_single(const Problem& problem, const TraceOptions& options) {
    const auto* single = std::get_if<SingleSequenceInput>(&problem.input);
    const ModeSpec& mode = mode_spec(options.mode);
    if (!single || mode.reads_pair) refuse_mode_for_input(problem, mode);
    if (options.score != Score::additive)
        throw UsageError(fmt::format("--score {} applies to mode bahdanau only", to_string(options.score)));
    HeadCounts counts = head_counts(*single, options, problem.origin);
    PositionSetting positions = position_setting(*single, options);
    std::vector<std::string> notes;
    if (!mode.takes_heads) {  // --heads itself is refused with the other options (check_options_for_mode)
        if (counts.heads > 1 || counts.kv_heads > 1)
            notes.push_back(fmt::format("the input's {} heads are not used: {} mode has no projections to split (try "
                                        "--mode self)",
                                        counts.heads, mode.name()));
        counts = HeadCounts{};
    }
    if (!mode.takes_positions() && positions.any()) {  // --positions, likewise
        notes.push_back(fmt::format("the input's positions (\"{}\") are not used: {} mode has no position information "
                                    "(try --mode self)",
                                    to_string(positions.scheme), mode.name()));
        positions = PositionSetting{};
    }
    SingleSetup setup{&single->sequence, weights_for(single->sequence, single->weights, counts, options, problem.origin),
                      positions, mask_for(single->sequence, single->padding, options),
                      single->layernorm ? &*single->layernorm : nullptr};
    if (const HeadLayout& l = setup.weights.layout; l.grouped()) {
        const Eigen::Index cached = l.kv_heads * (l.d_head + l.d_v), full = l.heads * (l.d_head + l.d_v);
        notes.push_back(fmt::format("grouped-query attention: {} key/value head{} for {} query heads, {} query heads to "
                                    "each; the keys and values of one token are {} numbers, against {} with a key/value "
                                    "head per query head",
                                    l.kv_heads, l.kv_heads == 1 ? "" : "s", l.heads, l.heads / l.kv_heads, cached, full));
    }
    setup.weights.notes.insert(setup.weights.notes.begin(), notes.begin(), notes.end());
    require_even_head(positions, setup.weights.layout.d_head, counts.heads, counts.from_options,
                      single->weights.has_value(), problem.origin);
    return setup;
}

Trace trace_single_problem(const Problem& problem, const TraceOptions& options) {
    SingleSetup setup = setup_single(problem, options);
    return trace_with(*setup.sequence, std::move(setup.weights), setup.mask, setup.positions, setup.layernorm, options,
                      problem.origin);
}

Trace trace_single(const Sequence& sequence, const Projections* weights, const TraceOptions& options,
                   const std::string& origin) {
    const std::optional<Projections> given = weights ? std::optional<Projections>(*weights) : std::nullopt;
    const HeadCounts counts = head_counts(SingleSequenceInput{}, options, origin);
    const PositionSetting positions = position_setting(SingleSequenceInput{}, options);
    SingleWeights w = weights_for(sequence, given, counts, options, origin);
    require_even_head(positions, w.layout.d_head, counts.heads, counts.from_options, weights != nullptr, origin);
    return trace_with(sequence, std::move(w), mask_for(sequence, std::nullopt, options), positions, nullptr, options,
                      origin);
}

}  // namespace attntrace
