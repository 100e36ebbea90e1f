// What `load` hands to `trace`: a validated problem. Every shape in here has been checked
// against every other, so nothing downstream validates again.
#pragma once

#include "core/matrix.hpp"
#include "core/types.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace attntrace {

// Tokens as the user spelled them, and one row vector per token.
struct Sequence {
    std::vector<std::string> tokens;
    Matrix vectors;  // tokens.size() × d
};

// Words and their vectors, one row per word.
struct Vocabulary {
    std::vector<std::string> words;
    Matrix vectors;  // words.size() × d
};

// The three learned projections of self-attention, applied as X·W.
struct Projections {
    Matrix query;  // d_in × d_k
    Matrix key;    // d_in × d_k
    Matrix value;  // d_in × d_v
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
};

// A decoder looking back at an encoder (bahdanau).
struct EncoderDecoderInput {
    Sequence source;                            // encoder states H: n_src × d_h
    std::optional<std::vector<bool>> source_mask;  // true: the decoder may look at this position
    Sequence target;                            // decoder states S: n_tgt × d_s
    std::optional<AdditiveWeights> weights;     // for the additive score
    std::optional<Matrix> general_weight;       // W (d_s × d_h) for Luong's general score
};

struct Problem {
    std::string origin;       // file path, "<stdin>" or "example:NAME", for messages
    std::string description;  // one line: what to look at (may be empty)
    std::optional<Mode> mode;  // the file's default mode
    std::variant<SingleSequenceInput, EncoderDecoderInput> input;
    // Named vectors when the embeddings were given as a word → vector object, in file order.
    Vocabulary vocabulary;
};

}  // namespace attntrace
