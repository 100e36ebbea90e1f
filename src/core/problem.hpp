// What `load` hands to `trace`: a validated problem. Every shape in here has been checked
// against every other, so nothing downstream validates again.
#pragma once

#include "core/matrix.hpp"
#include "core/rnn.hpp"
#include "core/types.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace attntrace {

// Float32 rows read in place from a mapped binary array (a long input for --summary --dtype
// float32): the numbers stay in the file's pages, kept alive by `storage`.
struct InPlaceRows {
    const float* data = nullptr;  // rows × cols, row-major
    Eigen::Index rows = 0, cols = 0;
    std::shared_ptr<const void> storage;

    Eigen::Map<const MatrixT<float>> view() const { return {data, rows, cols}; }
};

// Tokens as the user spelled them, and one row vector per token.
struct Sequence {
    std::vector<std::string> tokens;
    Matrix vectors;  // tokens.size() × d; with `in_place`, 0 × d (the columns alone)
    std::optional<InPlaceRows> in_place;  // the vectors as float32 in a mapped file (LoadOptions)

    // The vectors as doubles in `vectors`, for the paths that need them so (the full trace):
    // in-place rows are copied once; otherwise nothing changes.
    void materialise() {
        if (!in_place) return;
        vectors = in_place->view().cast<double>();
        in_place.reset();
    }
};

// Words and their vectors, one row per word.
struct Vocabulary {
    std::vector<std::string> words;
    Matrix vectors;  // words.size() × d
};

// The learned projections of self-attention, applied as X·W. With H heads the columns of each
// split into H blocks (K and V into G blocks for G key/value heads).
struct Projections {
    Matrix query;                 // d_in × d_model (d_k with one head)
    Matrix key;                   // d_in × d_model, or G·d_head
    Matrix value;                 // d_in × d_v·heads, or G·d_v
    std::optional<Matrix> output;  // W_o: H·d_v × d_out, mixing the heads' contexts
    // Biases, added to every row: Q = X·W_q + b_q (and so on). Absent: none (zero).
    std::optional<Vector> query_bias, key_bias, value_bias, output_bias;

    bool has_bias() const { return query_bias || key_bias || value_bias || output_bias; }
};

// Layer normalisation of each token's vector before attention (GPT-2's ln_1):
// LN(x) = (x − mean(x)) / √(var(x) + ε) · γ + β, the variance the mean of squares (not n − 1).
struct LayerNorm {
    Vector gamma, beta;  // 1 × d each
    double epsilon = 1e-5;
    std::string name;    // where the parameters came from ("h.3.ln_1")
};

// The learned parameters of Bahdanau's additive score e = v_a · tanh(s·W_a + h·U_a).
struct AdditiveWeights {
    Matrix W_a;  // d_s × d_a
    Matrix U_a;  // d_h × d_a
    Vector v_a;  // 1 × d_a
};

// One sentence attending to itself (plain, self, causal).
struct SingleSequenceInput {
    Sequence sequence;
    std::optional<Projections> weights;  // absent: generated from --seed when a mode needs them
    std::optional<int> heads;            // "heads": the number of attention heads
    std::optional<int> kv_heads;         // "kv_heads": key/value heads (grouped-query attention)
    std::optional<PositionScheme> positions;  // "positions": how token positions enter
    // "padding": the tokens that stand for nothing and are never attended to; absent: "<pad>"
    std::optional<std::vector<std::string>> padding;
    std::optional<LayerNorm> layernorm;  // --from gpt2: ln_1 before the projections
    std::optional<RnnWeights> rnn;       // "rnn": attntrace rnn's encoder (absent: drawn from --seed)
};

// A decoder looking back at an encoder (bahdanau).
struct EncoderDecoderInput {
    Sequence source;                            // encoder states H: n_src × d_h
    std::optional<std::vector<bool>> source_mask;  // true: the decoder may look at this position
    Sequence target;                            // decoder states S: n_tgt × d_s
    std::optional<AdditiveWeights> weights;     // for the additive score
    std::optional<Matrix> general_weight;       // W (d_s × d_h) for Luong's general score
};

// What an input says about itself: one text for every run (a string in the file), or one per
// use: a mode ("plain", "causal", …) or "similarity", since what the weights show depends on
// the mode (a key the causal mask hides cannot be favoured).
struct Description {
    std::string any;                                          // for every use
    std::vector<std::pair<std::string, std::string>> by_use;  // use → text, in file order

    // The text for `use`: `any`, else that use's own; "" when there is none.
    std::string for_use(std::string_view use) const {
        if (!any.empty()) return any;
        for (const auto& [name, text] : by_use)
            if (name == use) return text;
        return {};
    }
    // The uses it has a text for ("plain and self"): empty for a text for every use.
    std::vector<std::string> uses() const {
        std::vector<std::string> names;
        for (const auto& entry : by_use) names.push_back(entry.first);
        return names;
    }
    bool empty() const { return any.empty() && by_use.empty(); }
};

struct Problem {
    std::string origin;       // file path, "<stdin>" or "example:NAME", for messages
    Description description;  // what to look at (may be empty)
    // What loading changed that every output should say (punctuation dropped from a sentence).
    std::vector<std::string> notes;
    std::optional<Mode> mode;  // the file's default mode
    std::variant<SingleSequenceInput, EncoderDecoderInput> input;
    // Named vectors when the embeddings were given as a word → vector object, in file order.
    Vocabulary vocabulary;
    // How the input's weight matrices were stored (they are held as d_in × d_out either way),
    // and whether the input or --layout said so.
    WeightLayout layout = WeightLayout::in_out;
    bool layout_stated = false;
};

// "plain and self modes", "the similarity command": the uses a description is written for.
inline std::string uses_text(const std::vector<std::string>& uses) {
    std::vector<std::string> modes;
    bool similarity = false;
    for (const auto& use : uses) {
        if (use == "similarity") similarity = true;
        else modes.push_back(use);
    }
    std::string text;
    for (std::size_t i = 0; i < modes.size(); ++i)
        text += (i == 0 ? "" : i + 1 == modes.size() ? " and " : ", ") + modes[i];
    if (!modes.empty()) text += modes.size() == 1 ? " mode" : " modes";
    if (similarity) text += modes.empty() ? "the similarity command" : " and the similarity command";
    return text;
}

// The description of `problem` for `use` (a mode's name, or "similarity"). When the input
// describes other uses only, a note saying so joins `notes` instead: a description is a
// claim about what one mode shows, and may be false in another.
inline std::string description_for(const Problem& problem, std::string_view use, std::vector<std::string>& notes) {
    std::string text = problem.description.for_use(use);
    if (text.empty() && !problem.description.empty())
        notes.push_back("this input's description is written for " + uses_text(problem.description.uses()) +
                        ", so it is not shown for " + uses_text({std::string(use)}));
    return text;
}

}  // namespace attntrace
