#include "input/load.hpp"

#include "error.hpp"
#include "input/json_text.hpp"
#include "input/limits.hpp"
#include "input/tokenize.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

namespace attntrace {
namespace {

// Where we are while reading: the input's name, for every message.
class Reader {
public:
    explicit Reader(std::string origin) : origin_(std::move(origin)) {}

    [[noreturn]] void fail(std::string_view pointer, const std::string& message) const {
        throw DataError(fmt::format("{}: {}: {}", origin_, show_pointer(pointer), message));
    }

    const std::string& origin() const { return origin_; }

    const Json& require_object(const Json& value, std::string_view pointer) const {
        if (!value.is_object()) fail(pointer, "expected an object, found " + describe(value));
        return value;
    }

    // Weights come as a set: all of `names`, or none (then they are generated).
    void require_all(const Json& object, std::string_view pointer, std::initializer_list<std::string_view> names) const {
        for (const auto name : names)
            if (!object.contains(name))
                fail(pointer, fmt::format("missing \"{}\": give all three of {} (or none, to have them generated)", name,
                                          fmt::join(names, ", ")));
    }

    // Refuses keys we do not know, suggesting the closest known one (typos like "embedings").
    void only_keys(const Json& object, std::string_view pointer,
                   std::initializer_list<std::string_view> known) const;

    double number(const Json& value, std::string_view pointer) const {
        if (!value.is_number()) fail(pointer, "expected a number, found " + describe(value));
        const double x = value.get<double>();
        if (!std::isfinite(x)) fail(pointer, "number out of range: it does not fit a double");
        return x;
    }

    // A non-empty array of numbers; `expected` > 0 fixes its length.
    Vector vector(const Json& value, std::string_view pointer, Eigen::Index expected,
                  std::string_view expected_why) const {
        const bool packed = is_packed_numbers(value);  // the parser's fast form: only numbers, all finite
        if (!packed) {
            if (!value.is_array())
                fail(pointer, "expected an array of numbers (a vector), found " + describe(value));
            if (value.empty()) fail(pointer, "empty vector: a vector needs at least one number");
        }
        const std::size_t count = packed ? packed_size(value) : value.size();
        if (count > max_dimension) too_long(pointer, count);
        const auto size = static_cast<Eigen::Index>(count);
        if (expected > 0 && size != expected)
            fail(pointer, fmt::format("vector of {} number{}, expected {} ({})", size,
                                      size == 1 ? "" : "s", expected, expected_why));
        Vector v(size);
        if (packed) {
            copy_packed(value, v.data());
        } else {
            for (Eigen::Index i = 0; i < size; ++i)
                v(i) = number(value[static_cast<std::size_t>(i)],
                              pointer_child(pointer, static_cast<std::size_t>(i)));
        }
        return v;
    }

    // An array of rows, all of one length.
    Matrix matrix(const Json& value, std::string_view pointer) const {
        if (is_packed_matrix(value)) {  // the parser's fast form: rows of finite numbers, one length
            if (packed_columns(value) > max_dimension) too_long(pointer_child(pointer, 0), packed_columns(value));
            Matrix m(static_cast<Eigen::Index>(rows_of(value)), static_cast<Eigen::Index>(packed_columns(value)));
            copy_packed(value, m.data());  // row-major: the same order
            return m;
        }
        if (!value.is_array() || value.empty())
            fail(pointer, "expected a matrix (an array of rows), found " + describe(value));
        Matrix m;
        for (std::size_t r = 0; r < value.size(); ++r) {
            const auto row_pointer = pointer_child(pointer, r);
            const Vector row = vector(value[r], row_pointer, r == 0 ? 0 : m.cols(), "like row 0");
            if (r == 0) m.resize(static_cast<Eigen::Index>(value.size()), row.size());
            m.row(static_cast<Eigen::Index>(r)) = row;
        }
        return m;
    }

    // A matrix of exactly rows × cols (cols ≤ 0: any); `names` reads like "d_in × d_k".
    Matrix matrix_of_shape(const Json& value, std::string_view pointer, Eigen::Index rows,
                           Eigen::Index cols, std::string_view names) const {
        const Matrix m = matrix(value, pointer);
        if (m.rows() != rows || (cols > 0 && m.cols() != cols)) {
            const auto expected = cols > 0 ? fmt::format("{}×{}", rows, cols)
                                           : fmt::format("{}×…", rows);
            fail(pointer, fmt::format("shape {}×{} does not fit: expected {} ({})", m.rows(),
                                      m.cols(), expected, names));
        }
        return m;
    }

    [[noreturn]] void too_long(std::string_view pointer, std::size_t size) const {
        fail(pointer, fmt::format("vector of {} numbers, more than the limit of {}", size, max_dimension));
    }

    void check_token_count(std::string_view pointer, std::size_t count) const {
        if (count > max_tokens)
            fail(pointer, fmt::format("{} tokens, more than the limit of {}", count, max_tokens));
    }

    std::string string(const Json& value, std::string_view pointer) const {
        if (!value.is_string()) fail(pointer, "expected a string, found " + describe(value));
        return value.get<std::string>();
    }

    // A string shown in tables: one line, no control characters (the sentence may hold white
    // space, which splitting removes).
    std::string label(const Json& value, std::string_view pointer, bool allow_white_space) const {
        std::string text = string(value, pointer);
        if (allow_white_space)
            for (char& c : text)
                if (c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') c = ' ';
        if (const auto c = first_control_character(text))
            fail(pointer, fmt::format("control character U+{:04X} in the text: labels and "
                                      "descriptions are printed, so they must be plain text",
                                      static_cast<std::uint32_t>(*c)));
        return text;
    }

private:
    std::string origin_;
};

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> previous(b.size() + 1), current(b.size() + 1);
    std::iota(previous.begin(), previous.end(), std::size_t{0});
    for (std::size_t i = 1; i <= a.size(); ++i) {
        current[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t substitute = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
            current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitute});
        }
        std::swap(previous, current);
    }
    return previous[b.size()];
}

// Up to `count` candidates closest to `word` (case-insensitive edit distance), closest first.
std::vector<std::string> closest(std::string_view word, const std::vector<std::string>& candidates,
                                 std::size_t count) {
    const std::string folded = fold_case(word);
    std::vector<std::pair<std::size_t, std::size_t>> ranked;  // (distance, index)
    for (std::size_t i = 0; i < candidates.size(); ++i)
        ranked.emplace_back(edit_distance(folded, fold_case(candidates[i])), i);
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::string> out;
    for (std::size_t i = 0; i < ranked.size() && i < count; ++i)
        out.push_back(candidates[ranked[i].second]);
    return out;
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
    std::string out;
    for (const auto& item : items) {
        if (!out.empty()) out += separator;
        out += item;
    }
    return out;
}

void Reader::only_keys(const Json& object, std::string_view pointer,
                       std::initializer_list<std::string_view> known) const {
    const std::vector<std::string> names(known.begin(), known.end());
    for (const auto& [key, value] : object.items()) {
        if (std::find(names.begin(), names.end(), key) != names.end()) continue;
        fail(pointer_child(pointer, key),
             fmt::format("unknown field \"{}\" (did you mean \"{}\"? known fields: {})",
                         printable(key), closest(key, names, 1).front(), join(names, ", ")));
    }
}

// Word → vector, as given in an embeddings (or states) object.
struct WordVectors {
    std::vector<std::pair<std::string, Vector>> entries;  // file order
    std::unordered_map<std::string, std::size_t> exact;
    std::unordered_map<std::string, std::vector<std::size_t>> folded;

    std::vector<std::string> words() const {
        std::vector<std::string> out;
        for (const auto& entry : entries) out.push_back(entry.first);
        return out;
    }
};

WordVectors read_word_vectors(const Reader& in, const Json& object, const std::string& pointer) {
    if (object.empty()) in.fail(pointer, "no word vectors: the object is empty");
    WordVectors table;
    Eigen::Index dim = 0;
    std::string first_word;
    for (const auto& [word, value] : object.items()) {
        const auto word_pointer = pointer_child(pointer, word);
        const auto why = fmt::format("like \"{}\"", printable(first_word));
        Vector v = in.vector(value, word_pointer, dim, why);
        if (dim == 0) dim = v.size(), first_word = word;
        table.exact.emplace(word, table.entries.size());
        table.folded[fold_case(word)].push_back(table.entries.size());
        table.entries.emplace_back(word, std::move(v));
    }
    return table;
}

// The vector for `word`: exact spelling first, then case-insensitive.
const Vector& look_up(const Reader& in, const WordVectors& table, const std::string& word,
                      std::string_view where_pointer, std::size_t position, std::size_t count,
                      std::string_view vectors_pointer) {
    if (const auto it = table.exact.find(word); it != table.exact.end())
        return table.entries[it->second].second;
    if (const auto it = table.folded.find(fold_case(word)); it != table.folded.end()) {
        if (it->second.size() == 1) return table.entries[it->second.front()].second;
        std::vector<std::string> spellings;
        for (const auto index : it->second) spellings.push_back(table.entries[index].first);
        in.fail(where_pointer,
                fmt::format("word \"{}\" (token {} of {}) matches several entries of {} that "
                            "differ only in case: {}",
                            printable(word), position, count, show_pointer(vectors_pointer),
                            join(spellings, ", ")));
    }
    in.fail(where_pointer, fmt::format("unknown word \"{}\" (token {} of {}): {} has no vector "
                                       "for it; closest known words: {}",
                                       printable(word), position, count,
                                       show_pointer(vectors_pointer),
                                       join(closest(word, table.words(), 3), ", ")));
}

struct Labels {
    std::vector<Word> words;    // sentence words (with punctuation) or tokens
    std::string pointer;        // "/sentence" or "/tokens"
    bool from_sentence = false;
};

Labels read_labels(const Reader& in, const Json& object, const std::string& pointer) {
    const bool has_sentence = object.contains("sentence");
    const bool has_tokens = object.contains("tokens");
    if (has_sentence && has_tokens)
        in.fail(pointer, "give either \"sentence\" or \"tokens\", not both");
    if (!has_sentence && !has_tokens)
        in.fail(pointer, "missing \"sentence\" (a string) or \"tokens\" (an array of strings)");
    Labels labels;
    if (has_sentence) {
        labels.pointer = pointer_child(pointer, "sentence");
        labels.from_sentence = true;
        const auto sentence = in.label(object["sentence"], labels.pointer, true);
        labels.words = split_sentence(sentence);
        if (labels.words.empty()) in.fail(labels.pointer, "the sentence has no words");
        in.check_token_count(labels.pointer, labels.words.size());
        return labels;
    }
    labels.pointer = pointer_child(pointer, "tokens");
    const Json& tokens = object["tokens"];
    if (!tokens.is_array()) in.fail(labels.pointer, "expected an array of strings, found " + describe(tokens));
    if (tokens.empty()) in.fail(labels.pointer, "no tokens: the array is empty");
    in.check_token_count(labels.pointer, tokens.size());
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        const auto token_pointer = pointer_child(labels.pointer, i);
        auto text = in.label(tokens[i], token_pointer, false);
        if (text.find_first_not_of(" \t\r\n") == std::string::npos)
            in.fail(token_pointer, "empty token: a token needs at least one visible character");
        labels.words.push_back({std::move(text), false});
    }
    return labels;
}

// Tokens plus their vectors, from {"sentence"|"tokens", VECTORS_KEY: object | array}.
// An object maps words to vectors; an array is aligned with the tokens.
Sequence read_sequence(const Reader& in, const Json& object, const std::string& pointer,
                       std::string_view vectors_key, bool allow_word_map,
                       std::vector<std::pair<std::string, Vector>>* vocabulary) {
    Labels labels = read_labels(in, object, pointer);
    const auto vectors_pointer = pointer_child(pointer, vectors_key);
    if (!object.contains(vectors_key))
        in.fail(pointer, fmt::format("missing \"{}\" ({})", vectors_key,
                                     allow_word_map ? "an object word → vector, or an array of "
                                                      "vectors aligned with the tokens"
                                                    : "an array of vectors aligned with the tokens"));
    const Json& vectors = object[std::string(vectors_key)];

    Sequence seq;
    if (vectors.is_object() && allow_word_map) {
        WordVectors table = read_word_vectors(in, vectors, vectors_pointer);
        // Punctuation stays only where the embeddings name it.
        std::erase_if(labels.words, [&](const Word& w) {
            return w.punctuation && !table.exact.contains(w.text);
        });
        if (labels.words.empty()) in.fail(labels.pointer, "no words left after dropping punctuation");
        const auto count = labels.words.size();
        seq.vectors.resize(static_cast<Eigen::Index>(count), table.entries.front().second.size());
        for (std::size_t i = 0; i < count; ++i) {
            const auto where = labels.from_sentence ? labels.pointer : pointer_child(labels.pointer, i);
            seq.vectors.row(static_cast<Eigen::Index>(i)) =
                look_up(in, table, labels.words[i].text, where, i + 1, count, vectors_pointer);
            seq.tokens.push_back(labels.words[i].text);
        }
        if (vocabulary) *vocabulary = std::move(table.entries);
        return seq;
    }
    if (!vectors.is_array() && !is_packed_matrix(vectors))
        in.fail(vectors_pointer,
                fmt::format("expected {}, found {}",
                            allow_word_map ? "an object word → vector or an array of vectors"
                                           : "an array of vectors aligned with the tokens",
                            describe(vectors)));
    std::erase_if(labels.words, [](const Word& w) { return w.punctuation; });
    if (labels.words.empty()) in.fail(labels.pointer, "no words left after dropping punctuation");
    if (rows_of(vectors) != labels.words.size())
        in.fail(vectors_pointer, fmt::format("{} vector{} for {} token{}: an array of vectors "
                                             "needs one vector per token, in order",
                                             rows_of(vectors), rows_of(vectors) == 1 ? "" : "s",
                                             labels.words.size(), labels.words.size() == 1 ? "" : "s"));
    seq.vectors = in.matrix(vectors, vectors_pointer);
    for (auto& w : labels.words) seq.tokens.push_back(std::move(w.text));
    return seq;
}

Projections read_projections(const Reader& in, const Json& weights, Eigen::Index d_in) {
    const std::string pointer = "/weights";
    in.require_object(weights, pointer);
    in.only_keys(weights, pointer, {"query", "key", "value"});
    in.require_all(weights, pointer, {"query", "key", "value"});
    Projections p;
    const auto d_in_why = fmt::format("d_in = {} from the embeddings", d_in);
    p.query = in.matrix_of_shape(weights["query"], "/weights/query", d_in, 0,
                                 fmt::format("d_in × d_k, {}", d_in_why));
    p.key = in.matrix_of_shape(weights["key"], "/weights/key", d_in, p.query.cols(),
                               fmt::format("d_in × d_k, like /weights/query; {}", d_in_why));
    p.value = in.matrix_of_shape(weights["value"], "/weights/value", d_in, 0,
                                 fmt::format("d_in × d_v, {}", d_in_why));
    return p;
}

// {"W_a", "U_a", "v_a"} for the additive score (all three or none) and "W" for Luong's
// general score; whatever is missing is generated when a score needs it.
void read_alignment_weights(const Reader& in, const Json& weights, EncoderDecoderInput& input) {
    const std::string pointer = "/weights";
    in.require_object(weights, pointer);
    in.only_keys(weights, pointer, {"W_a", "U_a", "v_a", "W"});
    const Eigen::Index d_s = input.target.vectors.cols();
    const Eigen::Index d_h = input.source.vectors.cols();
    const int additive_parts = weights.contains("W_a") + weights.contains("U_a") + weights.contains("v_a");
    if (additive_parts > 0) {
        in.require_all(weights, pointer, {"W_a", "U_a", "v_a"});
        AdditiveWeights w;
        w.W_a = in.matrix_of_shape(weights["W_a"], "/weights/W_a", d_s, 0,
                                   fmt::format("d_s × d_a, d_s = {} from /target/states", d_s));
        w.U_a = in.matrix_of_shape(weights["U_a"], "/weights/U_a", d_h, w.W_a.cols(),
                                   fmt::format("d_h × d_a, d_h = {} from /source/states, d_a = {} "
                                               "from /weights/W_a",
                                               d_h, w.W_a.cols()));
        w.v_a = in.vector(weights["v_a"], "/weights/v_a", w.W_a.cols(),
                          fmt::format("d_a = {}, the columns of /weights/W_a", w.W_a.cols()));
        input.weights = std::move(w);
    }
    if (weights.contains("W"))
        input.general_weight = in.matrix_of_shape(
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

SingleSequenceInput read_single(const Reader& in, const Json& doc, Problem& problem) {
    SingleSequenceInput input;
    input.sequence = read_sequence(in, doc, "", "embeddings", true, &problem.vocabulary);
    if (doc.contains("weights"))
        input.weights = read_projections(in, doc["weights"], input.sequence.vectors.cols());
    return input;
}

EncoderDecoderInput read_encoder_decoder(const Reader& in, const Json& doc) {
    for (const char* part : {"source", "target"})
        if (!doc.contains(part))
            in.fail("", fmt::format("missing \"{}\": bahdanau attention needs a source "
                                    "(encoder states) and a target (decoder states)",
                                    part));
    const Json& source = in.require_object(doc["source"], "/source");
    const Json& target = in.require_object(doc["target"], "/target");
    in.only_keys(source, "/source", {"sentence", "tokens", "states", "mask"});
    in.only_keys(target, "/target", {"sentence", "tokens", "states"});

    EncoderDecoderInput input;
    input.source = read_sequence(in, source, "/source", "states", true, nullptr);
    input.target = read_sequence(in, target, "/target", "states", false, nullptr);
    if (source.contains("mask"))
        input.source_mask = read_mask(in, source["mask"], input.source.tokens.size());
    if (doc.contains("weights")) read_alignment_weights(in, doc["weights"], input);
    return input;
}

}  // namespace

Problem load_problem(std::string_view json_text, const std::string& origin) {
    const Reader in(origin);
    const Json doc = parse_json(json_text, origin);
    in.require_object(doc, "");
    in.only_keys(doc, "", {"description", "mode", "sentence", "tokens", "embeddings", "weights",
                           "source", "target"});

    Problem problem;
    problem.origin = origin;
    if (doc.contains("description")) {
        problem.description = in.label(doc["description"], "/description", false);
    }
    if (doc.contains("mode")) {
        const auto name = in.string(doc["mode"], "/mode");
        problem.mode = parse_mode(name);
        if (!problem.mode)
            in.fail("/mode", fmt::format("unknown mode \"{}\" (expected one of: {})",
                                         printable(name), mode_names()));
    }

    const bool encoder_decoder = doc.contains("source") || doc.contains("target");
    if (encoder_decoder) {
        for (const char* single : {"sentence", "tokens", "embeddings"})
            if (doc.contains(single))
                in.fail(pointer_child("", single),
                        "a source/target input has no top-level sentence, tokens or embeddings: "
                        "they go inside \"source\" and \"target\"");
        if (problem.mode && *problem.mode != Mode::bahdanau)
            in.fail("/mode", fmt::format("mode {} reads one sentence (\"sentence\" or \"tokens\" "
                                         "with \"embeddings\"), but this file has a source and a "
                                         "target; use mode bahdanau",
                                         to_string(*problem.mode)));
        problem.input = read_encoder_decoder(in, doc);
    } else {
        if (problem.mode == Mode::bahdanau)
            in.fail("/mode", "mode bahdanau needs \"source\" (encoder states) and \"target\" "
                             "(decoder states), but this file has one sentence");
        problem.input = read_single(in, doc, problem);
    }
    return problem;
}

}  // namespace attntrace
