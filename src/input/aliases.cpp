#include "input/aliases.hpp"

#include "util/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>

namespace attntrace {
namespace {

void add(Aliases& aliases, const std::string& where, std::initializer_list<std::string_view> names) {
    for (const auto name : names) aliases.push_back({std::string(name), where});
}

// The self-attention projections, W_q, W_k and W_v, and the fields that hold them.
struct Projection {
    std::string_view letter, field;
};
constexpr Projection projections[] = {{"q", "query"}, {"k", "key"}, {"v", "value"}, {"o", "output"}};

// How papers, libraries and tutorials spell a projection: W_q, Wq, W_query, Q,
// query_weights, q_proj (and, compared in lower case, WQ, W_Q, …).
void add_projection(Aliases& aliases, const Projection& p, const std::string& where) {
    for (const auto& name : {fmt::format("w_{}", p.letter), fmt::format("w{}", p.letter), fmt::format("w_{}", p.field),
                             std::string(p.letter), fmt::format("{}_weights", p.field), fmt::format("{}_weight", p.field),
                             fmt::format("{}_matrix", p.field), fmt::format("{}_proj", p.letter),
                             fmt::format("{}_proj", p.field), fmt::format("{}_projection", p.field)})
        aliases.push_back({name, where});
}

void add_words(Aliases& aliases) {
    add(aliases, "the words go under \"sentence\" (one string) or \"tokens\" (an array of strings)", {"words", "text"});
}

// The fields of "source" or "target": its states (which the side's own names, such as
// encoder_states and h, stand for too) and its words.
Aliases side_aliases(const std::string& states, std::string_view side_states, std::string_view letter) {
    Aliases out;
    add(out, states, {"embeddings", "embedding", "vectors", "hidden", "hidden_states", side_states, letter});
    add_words(out);
    return out;
}

}  // namespace

const Aliases& top_level_aliases() {
    static const Aliases aliases = [] {
        Aliases out;
        add(out, "the word vectors go under \"embeddings\"",
            {"embedding", "vectors", "word_vectors", "word_embeddings", "inputs"});
        add_words(out);
        add(out, "a note for the learner goes under \"description\"", {"comment", "comments", "note", "notes", "_comment", "title"});
        add(out, "the encoder side (its tokens and states) goes under \"source\"", {"encoder", "encoder_states"});
        add(out, "the decoder side (its tokens and states) goes under \"target\"", {"decoder", "decoder_states"});
        for (const auto& p : projections) {
            const auto where = fmt::format("the {} projection W_{} goes inside \"weights\", under \"{}\"", p.field, p.letter, p.field);
            add_projection(out, p, where);
            out.push_back({std::string(p.field), where});
        }
        add(out, "the weights of mode bahdanau go inside \"weights\"", {"w_a", "u_a", "v_a"});
        add(out, "the number of attention heads goes under \"heads\"", {"num_heads", "n_heads", "n_head", "head_count"});
        add(out, "the number of key/value heads goes under \"kv_heads\"",
            {"num_kv_heads", "n_kv_heads", "num_key_value_heads", "kv_head_count"});
        add(out, "the position scheme (none, sinusoidal or rope) goes under \"positions\"",
            {"position", "position_encoding", "positional_encoding", "pos_encoding", "position_embedding",
             "positional_embedding", "rope"});
        add(out, "the tokens never attended to go under \"padding\" (a list such as [\"<pad>\"])",
            {"pad", "pad_token", "pad_tokens", "padding_tokens", "attention_mask"});
        return out;
    }();
    return aliases;
}

const Aliases& projection_aliases() {
    static const Aliases aliases = [] {
        Aliases out;
        for (const auto& p : projections) {
            add_projection(out, p, fmt::format("the {} projection W_{} goes under \"{}\"", p.field, p.letter, p.field));
            // PyTorch's nn.Linear calls it bias; papers write b_q.
            const std::string bias = fmt::format("{}_bias", p.field);
            add(out, fmt::format("the bias b_{} of the {} projection goes under \"{}\"", p.letter, p.field, bias),
                {fmt::format("b_{}", p.letter), fmt::format("b{}", p.letter), fmt::format("bias_{}", p.letter),
                 fmt::format("{}_bias", p.letter), fmt::format("{}_b", p.letter), fmt::format("bias_{}", p.field)});
        }
        return out;
    }();
    return aliases;
}

const Aliases& alignment_aliases() {
    static const Aliases aliases = [] {
        Aliases out;
        // W1, W2 and V are the names of TensorFlow's Bahdanau tutorial.
        add(out, "the decoder-side weight W_a (s_t·W_a) goes under \"W_a\"", {"w_a", "wa", "w1", "w_1"});
        add(out, "the encoder-side weight U_a (h_j·U_a) goes under \"U_a\"", {"u_a", "ua", "u", "w2", "w_2"});
        add(out, "the vector v_a goes under \"v_a\"", {"v_a", "va", "v"});
        add(out, "the weight W of the general score goes under \"W\"", {"w", "w_g", "w_general"});
        return out;
    }();
    return aliases;
}

const Aliases& source_aliases() {
    static const Aliases aliases = side_aliases("the encoder states h_j go under \"states\"", "encoder_states", "h");
    return aliases;
}

const Aliases& target_aliases() {
    static const Aliases aliases = [] {
        Aliases out = side_aliases("the decoder states s_t go under \"states\"", "decoder_states", "s");
        add(out, "a mask belongs in \"source\", where it hides encoder positions", {"mask"});
        return out;
    }();
    return aliases;
}

const Alias* find_alias(const Aliases& aliases, std::string_view key) {
    const std::string folded = fold_case(key);
    const auto it = std::find_if(aliases.begin(), aliases.end(), [&](const Alias& a) { return a.name == folded; });
    return it == aliases.end() ? nullptr : &*it;
}

}  // namespace attntrace
