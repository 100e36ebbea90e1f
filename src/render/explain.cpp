#include "render/explain.hpp"

#include "attention/modes.hpp"

#include <fmt/format.h>

namespace attntrace {
namespace {

std::string shape(const Stage& stage) { return fmt::format("{}×{}", stage.row_count(), stage.col_count()); }

// inputs, queries, keys and values of a single-sequence mode.
std::vector<std::string> single_inputs(const Trace& trace, const Stage& stage) {
    const bool plain = !mode_spec(trace.mode).learned_projections;
    const auto& inputs = trace.at(StageId::inputs);
    const auto n = inputs.row_count();
    const auto d_in = inputs.col_count();
    const auto projection = [&](std::string_view symbol, std::string_view weight) {
        return fmt::format("{} = X·{}: ({}×{})·({}×{}) → {}", symbol, weight, n, d_in, d_in,
                           stage.col_count(), shape(stage));
    };
    const StageId id = stage.id;
    if (id == StageId::inputs)
        return {"Each token enters as a row vector, its embedding: numbers that place the word in a "
                "space where words used alike sit close together. Stacked, the rows form X.",
                fmt::format("X: {} tokens × {} numbers", n, d_in)};
    if (plain && (id == StageId::queries || id == StageId::keys || id == StageId::values))
        return {"Plain attention has no learned matrices: each embedding serves directly as its "
                "own query, key and value. The lectures start here, before adding projections.",
                fmt::format("{} = X: {}", id == StageId::queries ? "Q" : id == StageId::keys ? "K" : "V", shape(stage))};
    if (id == StageId::queries)
        return {"A query is what a token is looking for in the others, the question it asks of "
                "the sentence. A learned matrix W_q turns each embedding into its query.",
                projection("Q", "W_q")};
    if (id == StageId::keys)
        return {"A key is what a token offers to be found by: a query scores high against keys "
                "that point the same way. W_k makes the keys from the same embeddings.",
                projection("K", "W_k")};
    return {"A value is the information a token hands on once it is attended to. The key "
            "decides how much is taken from a token; the value decides what is taken.",
            projection("V", "W_v")};
}

// scores, scaled, masked, weights and context of a single-sequence mode.
std::vector<std::string> single_attention(const Trace& trace, const Stage& stage) {
    const bool plain = !mode_spec(trace.mode).learned_projections;
    const auto n = trace.at(StageId::inputs).row_count();
    const StageId id = stage.id;
    const std::string square = shape(stage);
    if (id == StageId::scores)
        return {"Each query meets every key in a dot product, which is large when the two vectors "
                "point the same way. Row i holds how well token i's query matches each key.",
                fmt::format("S = {}: ({}×{})·({}×{}) → {}", plain ? "X·Xᵀ" : "Q·Kᵀ", n,
                            trace.at(StageId::queries).col_count(), trace.at(StageId::keys).col_count(), n, square)};
    if (id == StageId::scaled) {
        if (!stage.applied)
            return {"The simplified version skips scaling: with a few dimensions the dot products "
                    "stay small anyway.",
                    fmt::format("S' = S: {}", square)};
        const auto d_k = trace.at(StageId::queries).col_count();
        return {"A dot product of d_k terms spreads wider as d_k grows; with wide scores softmax "
                "would hand nearly all the weight to one key and learning would stall. Dividing by "
                "√d_k keeps the spread about that of a single product, so the softmax stays soft.",
                fmt::format("S' = S / √{}: {} → {}", d_k, square, square)};
    }
    if (id == StageId::masked) {
        if (!stage.applied)
            return {"Bidirectional attention, as in an encoder, lets every token see the whole "
                    "sentence, before and after it, so nothing is hidden.",
                    fmt::format("S'' = S': {}", square)};
        return {"A causal model learns to predict the next token, so position i must not see the "
                "positions after it. Their scores become −∞, which softmax turns into weight "
                "exactly 0: the future is cut off, not merely turned down.",
                fmt::format("S'' = S' + M, M_ij = −∞ for j > i: {} ({} entries hidden)", square,
                            n * (n - 1) / 2)};
    }
    if (id == StageId::weights) {
        if (trace.normalization == Normalization::sum)
            return {"Dividing each score by its row's sum gives weights that sum to 1, the first "
                    "normalisation the lecture shows. It does not favour the largest score, and "
                    "negative scores would give negative weights, which is why softmax replaced it.",
                    fmt::format("A = S / rowsum(S): {}", square)};
        return {"Softmax turns each row of scores into weights that are positive and sum to 1, "
                "and it sharpens the differences: the largest score gets a bigger share than a "
                "plain division would give it. The weights say how the values will be mixed; they "
                "do not guarantee that what is weighted most is what matters.",
                fmt::format("A = softmax per row: {} → {}", square, square)};
    }
    // context
    const auto d_v = trace.at(StageId::values).col_count();
    return {"Each token's context vector is the weighted sum of all the values: a weight of 0.3 "
            "means 30% of that token's value flows in. One row per token, each now informed by "
            "the tokens it attended to.",
            fmt::format("Z = A·{}: ({}×{})·({}×{}) → {}", plain ? "X" : "V", n, n, n, d_v, shape(stage))};
}

// encoder states, decoder states and their projections.
std::vector<std::string> bahdanau_states(const Trace& trace, const Stage& stage) {
    const StageId id = stage.id;
    const auto n_src = trace.at(StageId::encoder_states).row_count();
    const auto n_tgt = trace.at(StageId::decoder_states).row_count();
    const auto d_h = trace.at(StageId::encoder_states).col_count();
    const auto d_s = trace.at(StageId::decoder_states).col_count();
    if (id == StageId::encoder_states)
        return {"The encoder has read the source sentence and left one hidden state per word: h_j "
                "sums up word j in its context. The decoder may look back at all of them.",
                fmt::format("H: {} source tokens × d_h = {}", n_src, d_h)};
    if (id == StageId::decoder_states)
        return {"Before emitting each target word the decoder holds a state s_t: what it has "
                "produced so far, and so what it needs from the source next.",
                fmt::format("S: {} target steps × d_s = {}", n_tgt, d_s)};
    if (id == StageId::projected_decoder) {
        if (!stage.applied)
            return {"The dot score compares decoder and encoder states as they are, so there is "
                    "nothing to project.",
                    fmt::format("S: {}", shape(stage))};
        return {trace.score == Score::general
                    ? "The general score maps each decoder state with W into the encoder's space, "
                      "where a dot product with each h_j scores the pair."
                    : "W_a maps each decoder state into the alignment space, where it meets the "
                      "encoder states.",
                fmt::format("{}: ({}×{})·({}×{}) → {}", trace.score == Score::general ? "S·W" : "S·W_a",
                            n_tgt, d_s, d_s, stage.col_count(), shape(stage))};
    }
    if (!stage.applied)  // projected_encoder
        return {"Luong's scores leave the encoder states as they are.", fmt::format("H: {}", shape(stage))};
    return {"U_a maps each encoder state into the same alignment space. It does not depend on "
            "the target step, so it is computed once for the whole sentence.",
            fmt::format("H·U_a: ({}×{})·({}×{}) → {}", n_src, d_h, d_h, stage.col_count(), shape(stage))};
}

// scores, scaled, masked, weights and context of bahdanau mode.
std::vector<std::string> bahdanau_attention(const Trace& trace, const Stage& stage) {
    const StageId id = stage.id;
    const auto n_src = trace.at(StageId::encoder_states).row_count();
    const auto n_tgt = trace.at(StageId::decoder_states).row_count();
    const auto d_h = trace.at(StageId::encoder_states).col_count();
    const std::string grid = fmt::format("{}×{}", n_tgt, n_src);
    if (id == StageId::scores) {
        if (trace.score == Score::additive)
            return {"For each target step and source word the two projections are added, squashed "
                    "by tanh and weighed by v_a: a small learned network that says how well source "
                    "word j fits target step t. Unlike a dot product it can compare states of "
                    "different sizes.",
                    fmt::format("e_tj = v_a · tanh(s_t·W_a + h_j·U_a): {}", grid)};
        return {"A dot product between (projected) decoder state and encoder state scores each "
                "pair: large when they point the same way.",
                fmt::format("e = {}·Hᵀ: {}", trace.score == Score::general ? "(S·W)" : "S", grid)};
    }
    if (id == StageId::scaled)
        return {"These scores are used as they are: tanh already bounds the additive ones, and "
                "Luong's variants were defined without the Transformer's ÷ √d_k.",
                fmt::format("e' = e: {}", grid)};
    if (id == StageId::masked) {
        if (!stage.applied)
            return {"Without a source mask every target step may look at every source position.",
                    fmt::format("e'' = e: {}", grid)};
        return {"Positions the source mask hides (padding in a batch, say) get −∞ and so weight "
                "exactly 0, whatever their states would score.",
                fmt::format("e'' = e with −∞ where source.mask is false: {}", grid)};
    }
    if (id == StageId::weights)
        return {"Softmax over the source words gives α_t: how much of each source word the decoder "
                "reads at step t. Read as a table, α is the alignment between the two sentences; "
                "like all attention weights it shows how information is mixed, not proof of "
                "what the model understood.",
                fmt::format("α = softmax per row: {}", grid)};
    return {"c_t = Σ_j α_tj h_j: the decoder's view of the source for this step. It is mixed "
            "afresh at every step instead of one compressed vector for the whole sentence.",
            fmt::format("C = α·H: ({})·({}×{}) → {}", grid, n_src, d_h, shape(stage))};
}

}  // namespace

std::vector<std::string> explanation(const Trace& trace, const Stage& stage) {
    switch (stage.id) {
    case StageId::inputs:
    case StageId::queries:
    case StageId::keys:
    case StageId::values: return single_inputs(trace, stage);
    case StageId::encoder_states:
    case StageId::decoder_states:
    case StageId::projected_decoder:
    case StageId::projected_encoder: return bahdanau_states(trace, stage);
    default: break;
    }
    return mode_spec(trace.mode).reads_pair ? bahdanau_attention(trace, stage) : single_attention(trace, stage);
}

}  // namespace attntrace
