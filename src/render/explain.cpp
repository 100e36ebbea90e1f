#include "render/explain.hpp"

#include "attention/masks.hpp"

#include "attention/modes.hpp"
#include "attention/positions.hpp"

#include <fmt/format.h>

namespace attntrace {
namespace {

std::string shape(const Stage& stage) { return fmt::format("{}×{}", stage.row_count(), stage.col_count()); }

std::string number(double value) { return fmt::format("{:.4g}", value); }

// Where the run's weight matrices came from, for the sentences that name them.
std::string weights_source(const Trace& trace) {
    switch (trace.weights) {
    case WeightsOrigin::file: return "given in the input";
    case WeightsOrigin::generated: return fmt::format("generated from seed {}, not learned", trace.seed);
    case WeightsOrigin::none: break;
    }
    return "none";
}

// "1 row", "6 rows".
std::string rows_text(std::size_t n) { return fmt::format("{} row{}", n, n == 1 ? "" : "s"); }

// "1 token", "6 tokens": a count of a shape, with its noun's number.
std::string counted(Eigen::Index n, std::string_view one, std::string_view many) {
    return fmt::format("{} {}", n, n == 1 ? one : many);
}

// The rows the comparison of softmax and the sum left out, and why, each kind counted: every
// row of the run is either compared or named here.
std::string left_out(const RunFacts& f) {
    std::vector<std::string> parts;
    if (f.negative_rows > 0)
        parts.push_back(fmt::format("{} with a negative score, where dividing gives no distribution",
                                    rows_text(f.negative_rows)));
    if (f.zero_rows > 0)
        parts.push_back(fmt::format("{} whose scores are all 0, where a sum of 0 cannot divide and softmax gives even "
                                    "weights",
                                    rows_text(f.zero_rows)));
    if (f.blind_rows > 0)
        parts.push_back(fmt::format("{} that see{} no key", rows_text(f.blind_rows), f.blind_rows == 1 ? "s" : ""));
    std::string text;
    for (std::size_t k = 0; k < parts.size(); ++k) text += (k == 0 ? "" : k + 1 == parts.size() ? " and " : ", ") + parts[k];
    return text;
}

// Softmax against dividing by the row sum, as measured on this run (RunFacts).
std::string normalisation_contrast(const Trace& trace, int head) {
    const RunFacts& f = trace.facts_of(head);
    const std::string softmax = trace.normalization == Normalization::softmax && trace.temperature != 1
                                    ? fmt::format("softmax at T = {}", trace.temperature)
                                    : std::string("softmax");
    const std::string others = left_out(f);
    if (f.compared_rows == 0)
        return fmt::format("Dividing by the row sum gives a distribution only for scores of 0 or more with a positive sum, "
                           "and no row here has them ({}), so the two cannot be compared on this run; softmax takes "
                           "scores of any sign.",
                           others);
    const std::size_t n = f.compared_rows, same = n - f.softmax_higher - f.softmax_lower;
    const bool all = others.empty();  // every row of the run is compared
    const std::string rows = n == 1 ? (all ? "the one row" : "the one row where both give weights")
                                    : (all ? fmt::format("all {} rows", n) : fmt::format("the {} rows where both give weights", n));
    std::string text;
    if (f.softmax_lower == n)
        text = fmt::format("On this run {} gives the top key less weight than dividing by the row sum, in {}: the scores "
                           "differ too little for it to sharpen",
                           softmax, rows);
    else if (f.softmax_higher == n)
        text = fmt::format("On this run {} gives the top key more weight than dividing by the row sum, in {}: the scores "
                           "differ enough for it to sharpen",
                           softmax, rows);
    else if (same == n)  // one key a row (a single token), or scores all equal
        text = fmt::format("On this run {} gives the top key the same weight as dividing by the row sum, in {}", softmax,
                           rows);
    else if (f.softmax_higher == 0 || f.softmax_lower == 0)  // one way in some rows, the same in the others
        text = fmt::format("On this run {} gives the top key {} weight than dividing by the row sum in {} of the {} rows "
                           "{}and the same in {}",
                           softmax, f.softmax_higher > 0 ? "more" : "less", f.softmax_higher + f.softmax_lower, n,
                           all ? "" : "where both give weights ", same);
    else
        text = fmt::format("On this run {} gives the top key more weight than dividing by the row sum in {} of the {} rows "
                           "{}and less in {}{}",
                           softmax, f.softmax_higher, n, all ? "" : "where both give weights ", f.softmax_lower,
                           same > 0 ? fmt::format(" (the same in {})", same) : "");
    if (f.example)
        text += fmt::format("; for \"{}\", {} by softmax against {} by the sum", f.example->label,
                            number(f.example->by_softmax), number(f.example->by_sum));
    if (!all) text += fmt::format(". Not compared: {}", others);
    return text + ".";
}

// inputs, queries, keys and values of a single-sequence mode.
std::vector<std::string> single_inputs(const Trace& trace, const Stage& stage) {
    const bool plain = !mode_spec(trace.mode).learned_projections;
    const auto& inputs = trace.at(StageId::inputs);
    const auto n = inputs.row_count();
    const auto d_in = inputs.col_count();
    // "Q_2 = X·W_q, columns 3–4: (6×3)·(3×2) → 6×2"; the stage's formula names a bias and ln_1.
    const auto projection = [&] {
        return fmt::format("{}: ({}×{})·({}×{}) → {}", stage.formula, n, d_in, d_in, stage.col_count(), shape(stage));
    };
    // What the weights multiply: the embeddings, or after ln_1 the normalised hidden states.
    const bool normed = trace.find(StageId::layernorm) != nullptr;
    const std::string rows = normed ? "normalised vector (LN(x), after the layer normalisation)" : "embedding";
    const auto bias_note = [&](std::string_view bias, std::string_view what) -> std::string {
        if (!trace.has_parameter(bias)) return "";
        return fmt::format(" Then the bias {} is added to every one of the {}: the same numbers whatever the token.",
                           bias, what);
    };
    // Several heads: a head's block of columns is its own projection.
    const auto heads_note = [&](std::string_view what, std::string_view weight) -> std::string {
        if (stage.head == 0) return "";
        const std::string owner = stage.kv_head > 0 && what != "queries" ? fmt::format("key/value head {}", stage.kv_head)
                                                                          : fmt::format("head {}", stage.head);
        std::string text = fmt::format(" With {} heads, these {} are {}'s block of columns of X·{}: multiplying X by "
                                       "that block of {} gives the same numbers, so one product makes every head's {} at once.",
                                       trace.heads, what, owner, weight, weight, what);
        if (stage.kv_head > 0)
            text += fmt::format(" Grouped-query attention: {} key/value head{} {} {} query heads, so this head reads "
                                "key/value head {}.",
                                trace.kv_heads, trace.kv_heads == 1 ? "" : "s", trace.kv_heads == 1 ? "serves" : "serve",
                                trace.heads, stage.kv_head);
        return text;
    };
    const StageId id = stage.id;
    if (id == StageId::inputs && trace.positions == PositionScheme::sinusoidal)
        return {"Each token enters as its embedding plus the encoding of its position. From here on the pipeline is "
                "the usual one, but the same word at two positions now enters as two different vectors, so its "
                "query, key and value depend on where it stands.",
                fmt::format("X = E + PE: ({}×{}) + ({}×{}) → {}×{}", n, d_in, n, d_in, n, d_in)};
    if (id == StageId::inputs && normed)
        return {"Each token enters as a row vector, its hidden state: what the model's earlier layers made of the "
                "token and of the tokens before it, read from the input; stacked, the rows form X. The layer first "
                "normalises each row (the layernorm stage) and projects what comes out.",
                fmt::format("X: {} × {}", counted(n, "token", "tokens"), counted(d_in, "number", "numbers"))};
    if (id == StageId::inputs)
        return {"Each token enters as a row vector, its embedding, taken from the input; stacked, the rows "
                "form X. In a trained model, words used alike get embeddings that point alike.",
                fmt::format("X: {} × {}", counted(n, "token", "tokens"), counted(d_in, "number", "numbers"))};
    if (plain && (id == StageId::queries || id == StageId::keys || id == StageId::values))
        return {"Plain attention has no weight matrices: each embedding serves directly as its "
                "own query, key and value. The lectures start here, before adding projections.",
                fmt::format("{} = X: {}", id == StageId::queries ? "Q" : id == StageId::keys ? "K" : "V", shape(stage))};
    if (id == StageId::queries)
        return {fmt::format("A query is what a token is looking for in the others, the question it asks of "
                            "the sentence. A matrix W_q turns each {} into its query: entry k of the query "
                            "is the {} times column k of W_q (shown under parameters; {}).",
                            normed ? "normalised vector" : "embedding", rows, weights_source(trace)) +
                    bias_note("b_q", "queries") + heads_note("queries", "W_q"),
                projection()};
    if (id == StageId::keys)
        return {fmt::format("A key is what a token offers to be found by: a query scores high against keys "
                            "that point the same way. W_k makes the keys from the same {}s.",
                            normed ? "normalised vector" : "embedding") +
                    bias_note("b_k", "keys") + heads_note("keys", "W_k"),
                projection()};
    return {"A value is the information a token hands on once it is attended to. The key "
            "decides how much is taken from a token; the value decides what is taken." +
                bias_note("b_v", "values") + heads_note("values", "W_v"),
            projection()};
}

// ln_1: the layer normalisation a GPT-2 layer applies before attention.
std::vector<std::string> layernorm_stage(const Trace& trace, const Stage& stage) {
    (void)trace;
    return {"Before attention, the layer normalises each token's vector on its own: it subtracts the vector's mean "
            "and divides by its standard deviation, with ε added to the variance under the square root, so the row "
            "has mean 0 and a variance just under 1; then it multiplies number k by γ_k and adds β_k, the layer's "
            "own parameters (gamma and beta under parameters).",
            fmt::format("{}: {} × {}", stage.formula, counted(stage.row_count(), "token", "tokens"),
                        counted(stage.col_count(), "number", "numbers"))};
}

// The weights stage of any mode: what the normalisation does, measured against the other on
// this run. `formula` holds "{}" for the normalisation's name.
// The rows of head `head`'s weights that see some key yet do not sum to 1, as this run left
// them: padding rows --normalize sum could not divide (all 0), rows --mask-after-softmax cut.
std::size_t short_rows(const Trace& trace, int head) {
    const Stage& weights = trace.at(StageId::weights, head);
    std::size_t count = 0;
    for (Eigen::Index r = 0; r < weights.row_count(); ++r) {
        bool visible = false;
        for (Eigen::Index c = 0; c < weights.col_count(); ++c) visible = visible || !weights.is_masked(r, c);
        if (visible && weights.row_sums && std::abs((*weights.row_sums)(r) - 1) > 1e-12 &&
            (*weights.row_sums)(r) < 1)
            ++count;
    }
    return count;
}

std::vector<std::string> weights_explanation(const Trace& trace, const std::string& formula, int head = 0) {
    const std::size_t short_count = short_rows(trace, head);
    if (trace.normalization == Normalization::sum)
        return {"Dividing each score by its row's sum gives weights that sum to 1, the first normalisation the "
                "lecture shows; negative scores give negative weights, which softmax never does. " +
                    (short_count > 0 ? fmt::format("Here {} padding row{} could not be divided (the scores do not sum to "
                                                   "a positive number) and {} left at 0. ",
                                                   short_count, short_count == 1 ? "" : "s",
                                                   short_count == 1 ? "is" : "are")
                                     : std::string()) +
                    normalisation_contrast(trace, head),
                fmt::vformat(formula, fmt::make_format_args("score / row sum"))};
    std::string text = "Softmax turns each row of scores into weights between 0 and 1 that sum to 1. It depends only "
                       "on the differences between scores (two weights are in the ratio e^(a − b) of their scores), "
                       "so it sharpens when the differences are large and evens out when they are small. ";
    if (trace.temperature != 1)
        text += fmt::format("At T = {} the differences are divided by T first, which {} them. ", trace.temperature,
                            trace.temperature < 1 ? "widens" : "narrows");
    if (trace.mask_after_softmax)
        text += short_count > 0 ? fmt::format("Here --mask-after-softmax then set the hidden keys' weights to 0 without "
                                              "dividing again, so {} sum{} to less than 1. ",
                                              rows_text(short_count), short_count == 1 ? "s" : "")
                                : "Here --mask-after-softmax then set the hidden keys' weights to 0 without dividing "
                                  "again; they were 0 already to the last digits, so every row still sums to 1. ";
    return {text + normalisation_contrast(trace, head) +
                " The weights say how the values are mixed; they do not prove that what is weighted most is what matters.",
            fmt::vformat(formula, fmt::make_format_args(trace.temperature != 1 ? "softmax of scores ÷ T" : "softmax"))};
}

// Whether some pair of head `head`'s masked stage is hidden for `reason`.
bool masked_for(const Trace& trace, int head, MaskReason reason) {
    const Stage& masked = trace.at(StageId::masked, head);
    return masked.mask_reasons && (masked.mask_reasons->unaryExpr([reason](std::uint8_t r) { return r & reason; }) != 0).any();
}

// The masked stage of a single-sequence mode: why each kind of hidden key is hidden, as this
// run hides them, and what its fill does.
std::vector<std::string> masked_explanation(const Trace& trace, const Stage& stage, const std::string& square) {
    if (!stage.applied) {
        if (trace.at(StageId::weights, stage.head).allowed)
            return {"The mask is not applied here: --mask-after-softmax runs softmax over every key and then sets the "
                    "hidden keys' weights to 0 without dividing again, so a row that hides a key sums to less than 1. "
                    "Putting −∞ here instead gives what zeroing and then dividing each row by what is left gives.",
                    fmt::format("S'' = S': {}", square)};
        return {"Bidirectional attention, as in an encoder, lets every token see the whole "
                "sentence, before and after it, so nothing is hidden.",
                fmt::format("S'' = S': {}", square)};
    }
    std::string why;
    if (masked_for(trace, stage.head, reason_causal))
        why += "A causal model learns to predict the next token, so position i must not see the positions after it. ";
    if (masked_for(trace, stage.head, reason_window))
        why += mode_spec(trace.mode).causal
                   ? "A sliding window lets each query see only itself and the few keys just before it, which bounds "
                     "the cost of attention on long inputs. "
                   : "A sliding window lets each query see only the keys near it, on either side, which bounds the "
                     "cost of attention on long inputs. ";
    if (masked_for(trace, stage.head, reason_padding))
        why += "Padding tokens only fill a sequence up to a length and stand for nothing, so no query may look at "
               "them. ";
    bool infinite = true;  // every hidden score is −∞ (else --mask-fill put a number there)
    Eigen::Index hidden = 0;
    for (Eigen::Index r = 0; r < stage.row_count(); ++r)
        for (Eigen::Index c = 0; c < stage.col_count(); ++c)
            if (stage.is_masked(r, c)) ++hidden, infinite = infinite && std::isinf(stage.data(r, c));
    if (hidden == 0)  // a causal run of one token, a window wider than the input: no key is hidden
        return {"The mask hides nothing on this run: every query may see every key it meets, so the scores pass "
                "through unchanged.",
                fmt::format("{}: {} (0 entries hidden)", stage.formula, square)};
    why += infinite ? "Their scores become −∞, which softmax turns into weight exactly 0: hidden keys are cut off, not "
                      "merely turned down."
                    : "Here their scores become a finite number (--mask-fill) rather than −∞: to softmax it is an "
                      "ordinary score, so a hidden key keeps the weight e^(fill − max)/Σ, which is 0 only when it "
                      "underflows.";
    return {why, fmt::format("{}: {} ({} entr{} hidden)", stage.formula, square, hidden, hidden == 1 ? "y" : "ies")};
}

// The scaled scores: why √d_k, and how it narrowed the scores' spread here.
std::vector<std::string> scaled_explanation(const Trace& trace, const Stage& stage, const std::string& square) {
    const auto d_k = trace.at(StageId::queries, stage.head).col_count();
    const std::string why = fmt::format(
        "A dot product adds d_k terms: when they are independent, its variance is d_k times theirs, so "
        "its spread grows like √d_k, and softmax of widely spread scores hands nearly all the weight to "
        "one key. Dividing by √d_k keeps the spread about that of a single term. Here the scores "
        "spread with a standard deviation of {}",
        number(trace.facts_of(stage.head).score_spread));
    if (!stage.applied)
        return {why + (mode_spec(trace.mode).scaled
                           ? "; --scale none leaves them so (without it they would be divided by √" +
                                 std::to_string(d_k) + ")."
                           : "; plain attention, the lecture's first version, uses them as they are."),
                fmt::format("S' = S: {}", square)};
    const std::string divisor = trace.scale_rule == ScaleRule::sqrt ? fmt::format("√{}", d_k) : number(trace.scale);
    const std::string per_head =
        stage.head > 0 ? fmt::format(" With heads, each score is a dot product of one head's d_head = {} numbers, not "
                                     "of all d_model = {}: the other heads' columns never enter it, so √d_head is "
                                     "the right divisor.",
                                     d_k, d_k * trace.heads)
                       : "";
    return {fmt::format("{}, and {} after dividing by {}{}.{}", why, number(trace.facts_of(stage.head).scaled_spread),
                        divisor, trace.scale_rule == ScaleRule::value ? " (--scale)" : "", per_head),
            fmt::format("S' = S / {}: {} → {}", divisor, square, square)};
}

// The output: W_o applied to the context, or mixing the heads' contexts.
std::vector<std::string> output_explanation(const Trace& trace, const Stage& stage, const std::string& square,
                                            Eigen::Index n) {
    const auto rows = trace.parameter("W_o").data.rows();
    if (trace.heads == 1)
        return {"W_o maps each context vector to the output, as the output projection of a Transformer layer does.",
                fmt::format("output = Z·W_o: ({}×{})·({}×{}) → {}", n, rows, rows, stage.col_count(), square)};
    return {fmt::format("W_o mixes the heads: every output number is a weighted sum of all {} numbers of the "
                        "concatenation. Its rows fall into {} blocks, one per head, so the output is the sum of each "
                        "head's context times its own block (head_contributions shows each).",
                        rows, trace.heads),
            fmt::format("output = concat·W_o: ({}×{})·({}×{}) → {}", n, rows, rows, stage.col_count(), square)};
}

// The context: the weighted sum of the values, and where word order enters it (or does not).
std::vector<std::string> context_explanation(const Trace& trace, const Stage& stage, Eigen::Index n, bool plain) {
    const auto d_v = trace.at(StageId::values, stage.head).col_count();
    const bool order_mask = mode_spec(trace.mode).causal || masked_for(trace, stage.head, reason_window);
    const std::string mask = order_mask ? " and through the mask" : "";
    const std::string order =
        trace.positions == PositionScheme::sinusoidal
            ? "Word order enters through the position encodings added to the embeddings" + mask +
                  ": a shuffled sentence gives its words other positions, so their context vectors may change, not "
                  "only their rows."
        : trace.positions == PositionScheme::rope
            ? "Word order enters through the rotations of the queries and keys" + mask +
                  ": a score depends on how far apart two tokens stand, so a shuffled sentence may give its words other "
                  "context vectors, not only other rows."
        : order_mask
            ? "Word order enters only through the mask: without it, shuffling the sentence would permute the rows "
              "and give each token the same context vector as before."
            : "Nothing here depends on word order: shuffling the sentence permutes the rows and columns, and each "
              "token keeps its context vector. (Transformers add position information to the embeddings for that.)";
    return {"Each token's context vector is the weighted sum of the values: a weight of 0.3 "
            "means 30% of that token's value flows in. " + order,
            fmt::format("Z = A·{}: ({}×{})·({}×{}) → {}", plain ? "X" : "V", n, n, n, d_v, shape(stage))};
}

// scores, scaled, masked, weights and context of a single-sequence mode.
std::vector<std::string> single_attention(const Trace& trace, const Stage& stage) {
    const bool plain = !mode_spec(trace.mode).learned_projections;
    const auto n = trace.at(StageId::inputs).row_count();
    const StageId id = stage.id;
    const std::string square = shape(stage);
    if (id == StageId::scores && trace.positions == PositionScheme::rope)
        return {"Each rotated query meets every rotated key in a dot product, which is large when the two vectors "
                "point the same way. Both were turned by their positions, so a score depends on how far apart the "
                "two tokens stand as well as on what they hold. Row i holds how well token i's query matches each key.",
                fmt::format("{}: ({}×{})·({}×{}) → {}", stage.formula, n, trace.at(StageId::queries, stage.head).col_count(),
                            trace.at(StageId::keys, stage.head).col_count(), n, square)};
    if (id == StageId::scores)
        return {"Each query meets every key in a dot product, which is large when the two vectors "
                "point the same way. Row i holds how well token i's query matches each key.",
                fmt::format("{}: ({}×{})·({}×{}) → {}", stage.formula, n, trace.at(StageId::queries, stage.head).col_count(),
                            trace.at(StageId::keys, stage.head).col_count(), n, square)};
    if (id == StageId::scaled) return scaled_explanation(trace, stage, square);
    if (id == StageId::masked) return masked_explanation(trace, stage, square);
    if (id == StageId::weights)
        return weights_explanation(trace, fmt::format("A = {{}} per row: {} → {}", square, square), stage.head);
    if (id == StageId::concat)
        return {fmt::format("Each of the {} heads gave every token a context vector of {} numbers. Put side by side they "
                            "make one vector of {} per token: head 1's numbers first.",
                            trace.heads, stage.col_count() / trace.heads, stage.col_count()),
                fmt::format("concat = [Z_1 … Z_{}]: {} × ({} × {}) → {}", trace.heads, trace.heads, n,
                            stage.col_count() / trace.heads, square)};
    if (id == StageId::output) return output_explanation(trace, stage, square, n);
    if (id == StageId::head_contributions)
        return {fmt::format("What head {} adds to the output: its context times its rows of W_o. Adding the {} "
                            "contributions gives the output (up to rounding), so each number can be traced to the heads that "
                            "moved it.",
                            stage.head, trace.heads),
                fmt::format("{}: ({}×{})·({}×{}) → {}", stage.formula, n, trace.at(StageId::context, stage.head).col_count(),
                            trace.at(StageId::context, stage.head).col_count(), stage.col_count(), square)};
    return context_explanation(trace, stage, n, plain);
}

// embeddings, positions, queries_rotated and keys_rotated: the position information.
std::vector<std::string> position_stages(const Trace& trace, const Stage& stage) {
    const auto n = stage.row_count();
    const std::string from =
        trace.first_position == 0 ? "0" : fmt::format("{} (--position-offset)", trace.first_position);
    if (stage.id == StageId::embeddings)
        return {"Each token's embedding as the input gives it: the same vector wherever the word stands. Attention "
                "compares every query with every key whatever their places, so on its own it cannot tell one word "
                "order from another; the encodings of the positions are added next.",
                fmt::format("E: {} × {}", counted(n, "token", "tokens"), counted(stage.col_count(), "number", "numbers"))};
    if (stage.id == StageId::positions && trace.positions == PositionScheme::sinusoidal)
        return {fmt::format("Sinusoidal encodings (Vaswani et al., 2017) give each position a vector of its own, counted "
                            "from {}. The odd columns (pe1, pe3, …) hold sin(p·ω_i) and the even ones cos(p·ω_i), "
                            "each pair turning at its own speed ω_i = 10000^(−2i/d_in): 1 radian per position for the "
                            "first pair, ever more slowly after it, like the hands of a clock. Moving k positions on "
                            "turns each (sin, cos) pair by the same angle k·ω_i wherever it starts, which lets a "
                            "trained model read how far apart two tokens are.",
                            from),
                fmt::format("PE: {} × d_in = {}", counted(n, "position", "positions"),
                            counted(stage.col_count(), "number", "numbers"))};
    const auto half = trace.at(StageId::positions).col_count();
    if (stage.id == StageId::positions)
        return {fmt::format("RoPE (Su et al., 2021) adds nothing to the embeddings. After the projections it turns "
                            "each query and key of each head two numbers at a time: numbers k and k + {} form pair k, "
                            "which the token at position p (counted from {}) turns by the angle φk = p·θ_k. θ_1 is 1 "
                            "radian per position and each later pair turns more slowly, down to θ_{} = {}. These are "
                            "the angles, the same in every head and for queries and keys.",
                            half, from, half, number(rotary_frequency(half - 1, 2 * half))),
                fmt::format("φ: {} × d_head/2 = {}", counted(n, "position", "positions"), counted(half, "pair", "pairs"))};
    const std::string symbol = fmt::format("{}{}", stage.id == StageId::queries_rotated ? "Q" : "K",
                                           stage.head > 0 ? fmt::format("_{}", stage.head) : "");
    const std::string shapes = fmt::format("RoPE({}): {}×{}, each row turned by its row of φ ({}×{}) → {}×{}", symbol, n,
                                           stage.col_count(), n, half, n, stage.col_count());
    if (stage.id == StageId::queries_rotated)
        return {fmt::format("Each query turned by the angles of its position. A rotation keeps a vector's length and "
                            "changes only its direction{}. Turning the "
                            "query at position p by p·θ and the key at position r by r·θ gives the same dot product as "
                            "turning the key alone by (r − p)·θ, so the scores depend on the two positions only "
                            "through their distance. This is the \"rotate half\" pairing of GPT-NeoX and LLaMA "
                            "(number k with k + {}); the interleaved pairing of the RoFormer paper and GPT-J takes "
                            "neighbours instead (numbers 1 and 2, 3 and 4, …). That is the same rotation on the "
                            "numbers taken in another order, so "
                            "weights trained for one pairing give the same scores under the other only after the "
                            "columns of W_q and W_k are reordered to match.",
                            trace.first_position == 0 ? "; the first token, at position 0, is not turned at all" : "",
                            half),
                shapes};
    const std::string shared =
        stage.kv_head > 0 ? fmt::format(" This head reads key/value head {}: its rotated keys are the same for every "
                                        "query head that shares it.",
                                        stage.kv_head)
                          : "";
    return {"Each key turned the same way, by the angles of its own position, so that a query meets a key with the "
            "distance between the two built into their directions." +
                shared,
            shapes};
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
                fmt::format("H: {} × d_h = {}", counted(n_src, "source token", "source tokens"), d_h)};
    if (id == StageId::decoder_states)
        return {"Before emitting each target word the decoder holds a state s_t: what it has "
                "produced so far, and so what it needs from the source next.",
                fmt::format("S: {} × d_s = {}", counted(n_tgt, "target step", "target steps"), d_s)};
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
    if (id == StageId::weights) {
        auto lines = weights_explanation(trace, fmt::format("α = {{}} per row: {}", grid));
        lines.front() = "Each row α_t says how much of each source word the decoder reads at step t; read as a "
                        "table, α is the alignment between the two sentences. " + lines.front();
        return lines;
    }
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
    case StageId::layernorm: return layernorm_stage(trace, stage);
    case StageId::embeddings:
    case StageId::positions:
    case StageId::queries_rotated:
    case StageId::keys_rotated: return position_stages(trace, stage);
    case StageId::encoder_states:
    case StageId::decoder_states:
    case StageId::projected_decoder:
    case StageId::projected_encoder: return bahdanau_states(trace, stage);
    default: break;
    }
    switch (family_of(trace.mode)) {
    case ModeFamily::single_sequence: return single_attention(trace, stage);
    case ModeFamily::encoder_decoder: return bahdanau_attention(trace, stage);
    }
    unknown_family();
}

std::vector<std::string> parameters_explanation(const Trace& trace) {
    if (trace.parameters.empty()) return {};
    const std::string source =
        trace.weights == WeightsOrigin::generated
            ? fmt::format("Here they are generated from seed {}, not learned, so the weights they give show the "
                          "mechanics, not meaning.",
                          trace.seed)
            : "Here they are given in the input.";
    switch (family_of(trace.mode)) {
    case ModeFamily::single_sequence:
        return {"W_q, W_k and W_v are what a model learns: one row per number of an embedding (d_in rows), one column "
                "per number of a query, key or value. Multiplying by them turns each embedding into its query, key and "
                "value. " + source};
    case ModeFamily::encoder_decoder:
        if (trace.score == Score::general)
            return {"W relates the two kinds of state: the score of decoder state s and encoder state h is s·W·hᵀ, one "
                    "row of W per number of s and one column per number of h. " + source};
        return {"W_a and U_a map decoder and encoder states into one space of d_a numbers, where they are added and "
                "squashed by tanh; v_a weighs the d_a results into one score. Together they are the small network of "
                "the additive score. " + source};
    }
    unknown_family();
}

}  // namespace attntrace
