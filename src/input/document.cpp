#include "input/document.hpp"

#include "input/aliases.hpp"
#include "input/limits.hpp"
#include "input/sequence.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace attntrace {
namespace {

// What an object member costs once unpacked: its key and value node, and its vector's block.
constexpr std::uint64_t unpacked_member_bytes = 256;

// W_q, W_k, W_v and the optional W_o. With key/value heads of their own ("kv_heads"), W_k and
// W_v are narrower than W_q, and how they split is checked with the heads (attention/heads).
Projections read_projections(const Reader& in, const Json& weights, Eigen::Index d_in, bool grouped) {
    const std::string pointer = "/weights";
    in.require_object(weights, pointer);
    in.only_keys(weights, pointer,
                 {"query", "key", "value", "output", "query_bias", "key_bias", "value_bias", "output_bias"},
                 projection_aliases());
    in.require_all(weights, pointer, {"query", "key", "value"});
    Projections p;
    const auto d_in_why = fmt::format("d_in = {} from the embeddings", d_in);
    p.query = in.weight(weights["query"], "/weights/query", d_in, 0, fmt::format("d_in × d_k, {}", d_in_why));
    p.key = in.weight(weights["key"], "/weights/key", d_in, grouped ? 0 : p.query.cols(),
                      grouped ? fmt::format("d_in × G·d_head, {}", d_in_why)
                              : fmt::format("d_in × d_k, like /weights/query; {}", d_in_why));
    p.value = in.weight(weights["value"], "/weights/value", d_in, 0, fmt::format("d_in × d_v, {}", d_in_why));
    // W_o has a row per number of all the heads' contexts side by side (H·d_v). With key/value
    // heads of their own, W_v holds only G·d_v columns, so the rows are checked with the heads.
    if (weights.contains("output"))
        p.output = in.weight(weights["output"], "/weights/output", grouped ? 0 : p.value.cols(), 0,
                             grouped ? std::string("rows: one per number of the heads' contexts put side by side")
                                     : fmt::format("rows: one per number of the heads' contexts put side by "
                                                   "side, {} like the columns of /weights/value",
                                                   p.value.cols()));
    // Biases: one number per column of their weight, added to every row of X·W.
    const auto bias = [&](const char* name, Eigen::Index width, std::string_view of) -> std::optional<Vector> {
        if (!weights.contains(name)) return std::nullopt;
        return in.vector(weights[name], pointer_child(pointer, name), width,
                         fmt::format("one per column of /weights/{}", of));
    };
    p.query_bias = bias("query_bias", p.query.cols(), "query");
    p.key_bias = bias("key_bias", p.key.cols(), "key");
    p.value_bias = bias("value_bias", p.value.cols(), "value");
    if (weights.contains("output_bias") && !p.output)
        in.fail("/weights/output_bias", "an output bias needs the output weight W_o (\"output\") it is added after");
    if (p.output) p.output_bias = bias("output_bias", p.output->cols(), "output");
    return p;
}

// "learned": where attntrace train's weights came from, said by every run of the model as a note.
std::string learned_note(const Reader& in, const Json& learned) {
    in.require_object(learned, "/learned");
    in.only_keys(learned, "/learned", {"task", "optimizer", "lr", "steps", "seed", "final_loss", "embeddings"}, Aliases{});
    for (const char* key : {"task", "optimizer", "lr", "steps", "seed", "final_loss"})
        if (!learned.contains(key)) in.fail("/learned", fmt::format("missing \"{}\"", key));
    const double steps = in.number(learned["steps"], "/learned/steps");
    const double seed = in.number(learned["seed"], "/learned/seed");
    if (learned.contains("embeddings") && !learned["embeddings"].is_boolean())
        in.fail("/learned/embeddings", "expected true or false, found " + describe(learned["embeddings"]));
    const bool embeddings = learned.contains("embeddings") && learned["embeddings"].get<bool>();
    return fmt::format("the weights{} were learned by attntrace train: task {}, {} steps of {} (lr {}), seed {}, final "
                       "loss {:.4g} over its training examples",
                       embeddings ? " and the embeddings" : "", printable(in.string(learned["task"], "/learned/task")), steps,
                       printable(in.string(learned["optimizer"], "/learned/optimizer")),
                       in.number(learned["lr"], "/learned/lr"), seed, in.number(learned["final_loss"], "/learned/final_loss"));
}

// "heads" or "kv_heads": a whole number from 1 to `most`.
int read_count(const Reader& in, const Json& value, std::string_view pointer, int most) {
    const double x = in.number(value, pointer);
    if (!(x >= 1 && x <= most && x == std::floor(x)))
        in.fail(pointer, fmt::format("expected a whole number from 1 to {}, found {}", most, describe(value)));
    return static_cast<int>(x);
}

// {"W_a", "U_a", "v_a"} for the additive score (all three or none) and "W" for Luong's
// general score; whatever is missing is generated when a score needs it.
void read_alignment_weights(const Reader& in, const Json& weights, EncoderDecoderInput& input) {
    const std::string pointer = "/weights";
    in.require_object(weights, pointer);
    in.only_keys(weights, pointer, {"W_a", "U_a", "v_a", "W"}, alignment_aliases());
    const Eigen::Index d_s = input.target.vectors.cols();
    const Eigen::Index d_h = input.source.vectors.cols();
    const int additive_parts = weights.contains("W_a") + weights.contains("U_a") + weights.contains("v_a");
    if (additive_parts > 0) {
        in.require_all(weights, pointer, {"W_a", "U_a", "v_a"});
        AdditiveWeights w;
        w.W_a = in.weight(weights["W_a"], "/weights/W_a", d_s, 0,
                          fmt::format("d_s × d_a, d_s = {} from /target/states", d_s));
        w.U_a = in.weight(weights["U_a"], "/weights/U_a", d_h, w.W_a.cols(),
                                   fmt::format("d_h × d_a, d_h = {} from /source/states, d_a = {} "
                                               "from /weights/W_a",
                                               d_h, w.W_a.cols()));
        w.v_a = in.vector(weights["v_a"], "/weights/v_a", w.W_a.cols(),
                          fmt::format("d_a = {}, the columns of /weights/W_a", w.W_a.cols()));
        input.weights = std::move(w);
    }
    if (weights.contains("W"))
        input.general_weight = in.weight(
            weights["W"], "/weights/W", d_s, d_h,
            fmt::format("d_s × d_h, d_s = {} from /target/states, d_h = {} from /source/states", d_s, d_h));
}

std::vector<bool> read_mask(const Reader& in, const Json& mask, std::size_t n) {
    const std::string pointer = "/source/mask";
    if (!mask.is_array()) in.fail(pointer, "expected an array of booleans, found " + describe(mask));
    if (mask.size() != n)
        in.fail(pointer, fmt::format("{} mask entr{} for {} source token{}: give one boolean per "
                                     "source token (true: the decoder may look there)",
                                     mask.size(), mask.size() == 1 ? "y" : "ies", n, n == 1 ? "" : "s"));
    std::vector<bool> allowed;
    for (std::size_t i = 0; i < n; ++i) {
        if (!mask[i].is_boolean())
            in.fail(pointer_child(pointer, i), "expected true or false, found " + describe(mask[i]));
        allowed.push_back(mask[i].get<bool>());
    }
    return allowed;
}

// "padding": the tokens that stand for nothing (["<pad>"], say), each a label.
std::vector<std::string> read_padding(const Reader& in, const Json& value) {
    const bool packed = is_packed_strings(value);  // the parser's form of an array of strings only
    if (!packed && !value.is_array())
        in.fail("/padding", "expected an array of tokens (e.g. [\"<pad>\"]), found " + describe(value));
    const std::size_t count = packed ? packed_strings(value).count : value.size();
    in.check_token_count("/padding", count);
    std::vector<std::string> tokens;
    for (std::size_t i = 0; i < count; ++i) {
        const auto pointer = pointer_child("/padding", i);
        std::string text = packed ? std::string(packed_strings(value)[i]) : in.string(value[i], pointer);
        in.plain_text(text, pointer);
        tokens.push_back(std::move(text));
    }
    return tokens;
}

// "rnn": the weights of attntrace rnn's encoder, W_x (d_in × d_h), W_h (d_h × d_h), b_h (d_h).
RnnWeights read_rnn(const Reader& in, const Json& rnn, Eigen::Index d_in) {
    in.require_object(rnn, "/rnn");
    in.only_keys(rnn, "/rnn", {"W_x", "W_h", "b_h"}, Aliases{});
    in.require_all(rnn, "/rnn", {"W_x", "W_h", "b_h"});
    RnnWeights w;
    w.W_x = in.weight(rnn["W_x"], "/rnn/W_x", d_in, 0, fmt::format("d_in × d_h, d_in = {} from the embeddings", d_in));
    const Eigen::Index d_h = w.W_x.cols();
    const auto why = fmt::format("d_h × d_h, d_h = {} from the columns of /rnn/W_x", d_h);
    w.W_h = in.weight(rnn["W_h"], "/rnn/W_h", d_h, d_h, why);
    w.b_h = in.vector(rnn["b_h"], "/rnn/b_h", d_h, fmt::format("d_h = {} from the columns of /rnn/W_x", d_h));
    return w;
}

// `kv_heads_given`: --kv-heads, which says what "kv_heads" says (W_k and W_v of G·d_head columns).
SingleSequenceInput read_single(const Reader& in, const Json& doc, Problem& problem, bool kv_heads_given) {
    SingleSequenceInput input;
    input.sequence = read_sequence(in, doc, "", "embeddings", true, &problem.vocabulary, problem.notes);
    if (doc.contains("heads")) input.heads = read_count(in, doc["heads"], "/heads", max_heads);
    if (doc.contains("kv_heads")) input.kv_heads = read_count(in, doc["kv_heads"], "/kv_heads", max_heads);
    if (doc.contains("positions")) {
        const auto name = in.string(doc["positions"], "/positions");
        input.positions = parse_enum<PositionScheme>(name);
        if (!input.positions)
            in.fail("/positions", fmt::format("unknown position scheme \"{}\" (expected one of: {})", printable(name),
                                              enum_list<PositionScheme>()));
    }
    if (doc.contains("padding")) input.padding = read_padding(in, doc["padding"]);
    if (doc.contains("weights"))
        input.weights = read_projections(in, doc["weights"], input.sequence.vectors.cols(),
                                         input.kv_heads.has_value() || kv_heads_given);
    if (doc.contains("rnn")) input.rnn = read_rnn(in, doc["rnn"], input.sequence.vectors.cols());
    return input;
}

// The fields of one sequence, which a source/target input holds inside "source" and "target"
// or not at all.
void refuse_single_sequence_fields(const Reader& in, const Json& doc) {
    for (const char* single : {"sentence", "tokens", "embeddings"})
        if (doc.contains(single))
            in.fail(pointer_child("", single),
                    "a source/target input has no top-level sentence, tokens or embeddings: "
                    "they go inside \"source\" and \"target\"");
    for (const char* heads : {"heads", "kv_heads"})
        if (doc.contains(heads))
            in.fail(pointer_child("", heads), "heads belong to self-attention (modes self and causal); a "
                                              "source/target input is traced by bahdanau mode, which has one");
    if (doc.contains("positions"))
        in.fail("/positions", "positions belong to self-attention (modes self and causal); a source/target input "
                              "is traced by bahdanau mode, which takes the encoder states as they are");
    if (doc.contains("rnn"))
        in.fail("/rnn", "an RNN encoder reads one sequence of embeddings (attntrace rnn); a source/target input "
                        "gives the encoder's states already");
    if (doc.contains("padding"))
        in.fail("/padding", "a source/target input marks what the decoder may not see with \"mask\" inside "
                            "\"source\" (one boolean per source token)");
}

EncoderDecoderInput read_encoder_decoder(const Reader& in, const Json& doc, std::vector<std::string>& notes) {
    for (const char* part : {"source", "target"})
        if (!doc.contains(part))
            in.fail("", fmt::format("missing \"{}\": bahdanau attention needs a source "
                                    "(encoder states) and a target (decoder states)",
                                    part));
    const Json& source = in.require_object(doc["source"], "/source");
    const Json& target = in.require_object(doc["target"], "/target");
    in.only_keys(source, "/source", {"sentence", "tokens", "states", "mask"}, source_aliases());
    in.only_keys(target, "/target", {"sentence", "tokens", "states"}, target_aliases());

    EncoderDecoderInput input;
    input.source = read_sequence(in, source, "/source", "states", true, nullptr, notes);
    input.target = read_sequence(in, target, "/target", "states", false, nullptr, notes);
    if (source.contains("mask"))
        input.source_mask = read_mask(in, source["mask"], input.source.tokens.size());
    if (doc.contains("weights")) read_alignment_weights(in, doc["weights"], input);
    return input;
}

// "description": one text, or an object of texts by use (a mode, or "similarity").
Description read_description(const Reader& in, const Json& value) {
    Description d;
    if (!value.is_object()) {
        d.any = in.label(value, "/description");
        return d;
    }
    std::vector<std::string> uses = enum_names<Mode>();
    uses.push_back("similarity");
    for (const auto& [use, text] : value.items()) {
        const std::string pointer = pointer_child("/description", use);
        if (std::find(uses.begin(), uses.end(), use) == uses.end())
            in.fail(pointer, fmt::format("\"{}\" is not a use a description can be for (expected a mode or similarity: {})",
                                         printable(use), join(uses, ", ")));
        d.by_use.emplace_back(use, in.label(text, pointer));
    }
    return d;
}

// Whether the problem holds weight matrices a layout applies to.
bool has_weight_matrices(const Problem& problem) {
    if (const auto* single = std::get_if<SingleSequenceInput>(&problem.input)) return single->weights.has_value();
    const auto& pair = std::get<EncoderDecoderInput>(problem.input);
    return pair.weights.has_value() || pair.general_weight.has_value();
}

}  // namespace

void unpack_objects(const Reader& in, Json& doc) {
    const auto unpack = [&in](Json& value) {
        if (!is_packed_words(value)) return;
        in.charge(packed_words(value).count * unpacked_member_bytes);
        value = unpack_words(value);
    };
    unpack(doc);
    if (!doc.is_object()) return;
    for (const char* key : {"weights", "source", "target"})
        if (const auto it = doc.find(key); it != doc.end()) unpack(*it);
}

Problem read_document(Reader& in, Json& doc, const std::string& origin, const std::optional<WeightLayout>& layout,
                      bool kv_heads_given) {
    in.require_object(doc, "");
    // "$schema": where an editor finds the input's JSON Schema (docs/schema/input.schema.json);
    // a string, and nothing to attntrace.
    if (doc.contains("$schema")) {
        (void)in.string(doc["$schema"], "/$schema");
        doc.erase("$schema");
    }
    in.only_keys(doc, "", {"description", "mode", "sentence", "tokens", "embeddings", "weights", "heads", "kv_heads",
                           "padding", "positions", "source", "target", "layout", "learned", "rnn"},
                 top_level_aliases());

    Problem problem;
    problem.origin = origin;
    // "layout": how the weight matrices are stored; --layout says it for the run instead.
    if (doc.contains("layout")) {
        const auto name = in.string(doc["layout"], "/layout");
        const auto stored = parse_enum<WeightLayout>(name);
        if (!stored)
            in.fail("/layout", fmt::format("unknown layout \"{}\" (expected in_out, our X·W with W of d_in × d_out, or "
                                           "out_in, PyTorch nn.Linear's (out, in) used as X·Wᵀ)",
                                           printable(name)));
        problem.layout = *stored;
        problem.layout_stated = true;
    }
    if (layout) problem.layout = *layout, problem.layout_stated = true;
    in.set_layout(problem.layout, problem.layout_stated);
    if (doc.contains("description")) problem.description = read_description(in, doc["description"]);
    if (doc.contains("learned")) problem.notes.push_back(learned_note(in, doc["learned"]));
    if (doc.contains("mode")) {
        const auto name = in.string(doc["mode"], "/mode");
        problem.mode = parse_enum<Mode>(name);
        if (!problem.mode)
            in.fail("/mode", fmt::format("unknown mode \"{}\" (expected one of: {})",
                                         printable(name), enum_list<Mode>()));
    }

    const bool encoder_decoder = doc.contains("source") || doc.contains("target");
    if (encoder_decoder) {
        refuse_single_sequence_fields(in, doc);
        problem.input = read_encoder_decoder(in, doc, problem.notes);
    } else {
        problem.input = read_single(in, doc, problem, kv_heads_given);
    }
    // Which layout the weights were read in, whenever it was stated (the default says nothing).
    if (problem.layout == WeightLayout::out_in && has_weight_matrices(problem))
        problem.notes.push_back("the weight matrices were stored (out, in), as PyTorch's nn.Linear keeps them, and are "
                                "used as X·Wᵀ: they are shown transposed, d_in × d_out, the way the formulas use them");
    else if (problem.layout_stated && has_weight_matrices(problem))
        problem.notes.push_back("the weight matrices were stored d_in × d_out (layout in_out) and are used as stored, "
                                "as X·W");
    return problem;
}

}  // namespace attntrace
