#include "input/load.hpp"

#include "core/error.hpp"
#include "input/aliases.hpp"
#include "input/arrays.hpp"
#include "input/json_text.hpp"
#include "input/limits.hpp"
#include "input/tokenize.hpp"
#include "util/hash_index.hpp"
#include "util/suggest.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

namespace attntrace {
namespace {

// What an object member costs once unpacked: its key and value node, and its vector's block.
constexpr std::uint64_t unpacked_member_bytes = 256;

std::string numbers(std::size_t count) { return fmt::format("{} number{}", count, count == 1 ? "" : "s"); }

// "/embeddings/1 (row 2)": a JSON pointer counts from 0, and a row in words from 1.
std::string row_place(std::string_view pointer, std::size_t row) {
    return fmt::format("{} (row {})", pointer_child(pointer, row), row + 1);
}

// Where we are while reading: the input's name, for every message.
class Reader {
public:
    Reader(std::string origin, MemoryBudget* budget) : origin_(std::move(origin)), budget_(budget) {}

    // Where numbers came from binary arrays (messages name the array; a square weight from one
    // needs a stated layout), and the layout the weight matrices are stored in.
    void set_arrays(const ArrayNames* arrays) { arrays_ = arrays; }
    void set_layout(WeightLayout layout, bool stated) {
        layout_ = layout;
        layout_stated_ = stated;
    }

    // Counts what the problem being built holds against --max-memory (MemoryBudget).
    void charge(std::uint64_t bytes) const {
        if (budget_) budget_->charge(bytes);
    }

    [[noreturn]] void fail(std::string_view pointer, const std::string& message) const {
        throw DataError(fmt::format("{}: {}: {}", origin_, place(pointer), message));
    }

    // The binary array at `pointer` (or holding it), when the numbers there came from one.
    const std::string* array_at(std::string_view pointer) const {
        if (!arrays_) return nullptr;
        for (const auto& [at, name] : *arrays_)
            if (pointer.starts_with(at) && (pointer.size() == at.size() || pointer[at.size()] == '/')) return &name;
        return nullptr;
    }

    // A JSON pointer as messages show it, or the array the numbers there came from.
    std::string place(std::string_view pointer) const {
        if (const std::string* name = array_at(pointer)) return *name;
        return show_pointer(pointer);
    }

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

    // Refuses keys we do not know, saying where the field is for a name learners try
    // (`aliases`), else suggesting the closest known one (typos like "embedings").
    void only_keys(const Json& object, std::string_view pointer, std::initializer_list<std::string_view> known,
                   const Aliases& aliases) const;

    double number(const Json& value, std::string_view pointer) const {
        if (!value.is_number()) fail(pointer, "expected a number, found " + describe(value));
        const double x = value.get<double>();
        if (!std::isfinite(x)) fail(pointer, "number out of range: it does not fit a double");
        return x;
    }

    // How many numbers a vector (an array, or the parser's packed form) holds; refuses
    // anything else, an empty one and one beyond the limit. Its numbers are checked by vector().
    std::size_t vector_length(const Json& value, std::string_view pointer) const {
        const bool packed = is_packed_numbers(value);  // the parser's fast form: only numbers, all finite
        if (!packed) {
            if (!value.is_array())
                fail(pointer, "expected an array of numbers (a vector), found " + describe(value));
            if (value.empty()) fail(pointer, "empty vector: a vector needs at least one number");
        }
        const std::size_t count = packed ? packed_size(value) : value.size();
        if (count > max_dimension) too_long(pointer, count);
        return count;
    }

    // A non-empty array of numbers; `expected` > 0 fixes its length.
    Vector vector(const Json& value, std::string_view pointer, Eigen::Index expected,
                  std::string_view expected_why) const {
        const auto size = static_cast<Eigen::Index>(vector_length(value, pointer));
        if (expected > 0 && size != expected)
            fail(pointer, fmt::format("vector of {} number{}, expected {} ({})", size,
                                      size == 1 ? "" : "s", expected, expected_why));
        Vector v(size);
        if (is_packed_numbers(value)) {
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
        std::vector<std::size_t> lengths;
        for (std::size_t r = 0; r < value.size(); ++r) lengths.push_back(vector_length(value[r], pointer_child(pointer, r)));
        const VectorNames rows{"row", [](std::size_t r) { return fmt::format("row {}", r + 1); },
                               [&](std::size_t r) { return row_place(pointer, r); }};
        const std::size_t width = common_length(pointer, lengths, rows);
        Matrix m(static_cast<Eigen::Index>(value.size()), static_cast<Eigen::Index>(width));
        for (std::size_t r = 0; r < value.size(); ++r)
            m.row(static_cast<Eigen::Index>(r)) = vector(value[r], pointer_child(pointer, r), 0, "");
        return m;
    }

    // How a message names the vectors of one matrix or one object of word vectors: `noun`
    // ("row", "vector"), one of them in a list (`name`: row 2, "journey"), and where one
    // stands (`place`: /embeddings/1 (row 2), /embeddings/journey).
    struct VectorNames {
        std::string_view noun;
        std::function<std::string(std::size_t)> name, place;
    };

    // The length that vectors meant to have one length have. When they disagree, the length
    // most of them have is taken as right and the others are refused by name; when no length
    // is the most common, every length is named with the vectors that have it.
    std::size_t common_length(std::string_view pointer, const std::vector<std::size_t>& lengths, const VectorNames& names) const;

    // A weight matrix meant to be rows × cols (either ≤ 0: any), stored in the input's layout:
    // an (out, in) one is transposed into d_in × d_out here, so the rest of attntrace sees X·W
    // only. A square matrix from a binary array fits both layouts, so without a stated layout
    // it is refused rather than guessed (nn.Linear keeps (out, in); we keep (in, out)).
    Matrix weight(const Json& value, std::string_view pointer, Eigen::Index rows, Eigen::Index cols,
                  std::string_view names) const {
        Matrix m = matrix(value, pointer);
        const bool out_in = layout_ == WeightLayout::out_in;
        if (out_in) m.transposeInPlace();
        const auto fits = [&](Eigen::Index r, Eigen::Index c) { return (rows <= 0 || r == rows) && (cols <= 0 || c == cols); };
        if (!fits(m.rows(), m.cols())) {
            const auto expected = fmt::format("{}×{}", rows > 0 ? std::to_string(rows) : std::string("…"),
                                              cols > 0 ? std::to_string(cols) : std::string("…"));
            const std::string given = out_in ? fmt::format("shape {}×{} (out × in), used transposed as {}×{},", m.cols(),
                                                           m.rows(), m.rows(), m.cols())
                                             : fmt::format("shape {}×{}", m.rows(), m.cols());
            std::string hint;
            if (fits(m.cols(), m.rows()))
                hint = out_in ? "; it fits as stored: its layout may be in_out (used as X·W)"
                              : "; it fits transposed: a weight taken from PyTorch's nn.Linear is stored (out, in), so "
                                "say --layout out_in (or \"layout\": \"out_in\" in a JSON input)";
            fail(pointer, fmt::format("{} does not fit: expected {} ({}){}", given, expected, names, hint));
        }
        if (m.rows() == m.cols() && !layout_stated_ && array_at(pointer))
            fail(pointer, fmt::format(
                              "a square weight ({0}×{0}) from a binary array, and no layout stated: PyTorch's nn.Linear "
                              "stores its weight as (out, in) and computes x·Wᵀ, attntrace's default is (in, out) used "
                              "as x·W, and a square matrix fits both, so attntrace does not guess; say --layout out_in "
                              "for a weight as nn.Linear holds it, or --layout in_out for one already d_in × d_out (or "
                              "\"layout\" in a JSON input)",
                              m.rows()));
        return m;
    }

    [[noreturn]] void too_long(std::string_view pointer, std::size_t size) const {
        fail(pointer, fmt::format("vector of {} numbers, more than the limit of {}", size, max_dimension));
    }

    void check_token_count(std::string_view pointer, std::size_t count) const {
        if (count > max_tokens)
            fail(pointer, fmt::format("{} tokens, more than the limit of {}", count, max_tokens));
    }

    std::string string(const Json& value, std::string_view pointer) const { return string_ref(value, pointer); }

    const std::string& string_ref(const Json& value, std::string_view pointer) const {
        if (!value.is_string()) fail(pointer, "expected a string, found " + describe(value));
        return value.get_ref<const std::string&>();
    }

    // A string shown in tables or headings: one line, no control characters.
    std::string label(const Json& value, std::string_view pointer) const {
        std::string text = string(value, pointer);
        plain_text(text, pointer);
        return text;
    }

    // A sentence may also hold the white space that splitting removes.
    void plain_text_in_sentence(std::string_view sentence, std::string_view pointer) const {
        for (std::size_t from = 0; from <= sentence.size();) {
            const std::size_t space = sentence.find_first_of("\t\n\r\f\v", from);
            plain_text(sentence.substr(from, space == std::string_view::npos ? space : space - from), pointer);
            if (space == std::string_view::npos) break;
            from = space + 1;
        }
    }

    // Text that attntrace prints (labels, words, descriptions) may not act on a terminal.
    void plain_text(std::string_view text, std::string_view pointer) const {
        if (const auto c = first_control_character(text))
            fail(pointer, fmt::format("control or formatting character U+{:04X} in the text: labels, "
                                      "words and descriptions are printed, so they must be plain text",
                                      static_cast<std::uint32_t>(*c)));
    }

private:
    std::string origin_;
    MemoryBudget* budget_;
    const ArrayNames* arrays_ = nullptr;
    WeightLayout layout_ = WeightLayout::in_out;
    bool layout_stated_ = false;
};

std::size_t Reader::common_length(std::string_view pointer, const std::vector<std::size_t>& lengths,
                                  const VectorNames& names) const {
    std::vector<std::pair<std::size_t, std::size_t>> counts;  // (length, how many), in order of first use
    for (const std::size_t length : lengths) {
        const auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == length; });
        if (it == counts.end()) counts.emplace_back(length, 1);
        else ++it->second;
    }
    if (counts.size() == 1) return counts.front().first;
    const auto most = std::max_element(counts.begin(), counts.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    const bool clear_majority = std::count_if(counts.begin(), counts.end(), [&](const auto& c) { return c.second == most->second; }) == 1;
    if (!clear_majority) {
        std::vector<std::string> groups;
        for (const auto& [length, count] : counts) {
            if (groups.size() == 8) break;
            std::vector<std::string> holders;
            for (std::size_t i = 0; i < lengths.size() && holders.size() < 3; ++i)
                if (lengths[i] == length) holders.push_back(names.name(i));
            groups.push_back(fmt::format("{} in {}", numbers(length), bounded_join(holders, count)));
        }
        fail(pointer, fmt::format("the {}s differ in length and no length is the most common, so none can be taken as "
                                  "right: {}",
                                  names.noun, bounded_join(groups, counts.size(), "; ")));
    }
    const std::size_t right = most->first;
    const std::size_t odd = lengths.size() - most->second;
    if (odd == 1) {
        const std::size_t i = static_cast<std::size_t>(std::find_if(lengths.begin(), lengths.end(), [&](std::size_t n) { return n != right; }) - lengths.begin());
        fail(names.place(i), fmt::format("vector of {}, expected {} like the other {} {}s", numbers(lengths[i]), right,
                                         most->second, names.noun));
    }
    std::vector<std::string> odd_ones;
    for (std::size_t i = 0; i < lengths.size() && odd_ones.size() < 8; ++i)
        if (lengths[i] != right) odd_ones.push_back(fmt::format("{} has {}", names.name(i), lengths[i]));
    fail(pointer, fmt::format("the most common length is {} ({} of {} {}s), and {} {}s differ: {}", numbers(right),
                              most->second, lengths.size(), names.noun, odd, names.noun, bounded_join(odd_ones, odd)));
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
    std::string out;
    for (const auto& item : items) {
        if (!out.empty()) out += separator;
        out += item;
    }
    return out;
}

void Reader::only_keys(const Json& object, std::string_view pointer, std::initializer_list<std::string_view> known,
                       const Aliases& aliases) const {
    const std::vector<std::string> names(known.begin(), known.end());
    for (const auto& [key, value] : object.items()) {
        if (std::find(names.begin(), names.end(), key) != names.end()) continue;
        if (const Alias* alias = find_alias(aliases, key))
            fail(pointer_child(pointer, key), fmt::format("unknown field \"{}\": {} (known fields: {})", printable(key),
                                                          alias->where, join(names, ", ")));
        const auto suggestion = closest_names(key, names, 1);  // none for a key too long to be a typo
        fail(pointer_child(pointer, key),
             fmt::format("unknown field \"{}\" ({}known fields: {})", printable(key),
                         suggestion.empty() ? "" : fmt::format("did you mean \"{}\"? ", suggestion.front()),
                         join(names, ", ")));
    }
}

// Word → vector, as given in an embeddings object: packed by the parser, or, for an object it
// could not pack, read member by member (which reports what is wrong with it). Looked up by
// exact spelling through a hash index, and case-insensitively through a second one that is
// built the first time an exact look-up misses.
class WordVectors {
public:
    WordVectors(const Reader& in, const Json& object, const std::string& pointer) {
        if (is_packed_words(object)) {
            words_ = packed_words(object);
            if (words_.width > max_dimension) in.too_long(pointer_child(pointer, words_.word(0)), words_.width);
            for (std::size_t i = 0; i < words_.count; ++i)
                in.plain_text(words_.word(i), pointer_child(pointer, words_.word(i)));
        } else {
            read_members(in, in.require_object(object, pointer), pointer);
        }
        exact_ = HashIndex(size(), [this](std::size_t i) { return word(i); });
        in.charge(size() * HashIndex::entry_bytes);
    }

    std::size_t size() const { return words_.count; }
    Eigen::Index width() const { return static_cast<Eigen::Index>(words_.width); }
    std::string_view word(std::size_t i) const { return words_.word(i); }
    void copy_vector(std::size_t i, double* out) const { words_.copy_row(i, out); }

    bool has_exactly(std::string_view text) const { return !find_exact(text).empty(); }

    // The entries spelled exactly `text`, else those equal to it ignoring case (file order).
    std::vector<std::size_t> find(const Reader& in, std::string_view text) const {
        auto found = find_exact(text);
        if (!found.empty()) return found;
        if (folded_ends_.empty()) fold_all(in);
        return folded_.find(fold_case(text), [this](std::size_t i) { return folded_word(i); });
    }

private:
    std::vector<std::size_t> find_exact(std::string_view text) const {
        return exact_.find(text, [this](std::size_t i) { return word(i); });
    }

    void read_members(const Reader& in, const Json& object, const std::string& pointer) {
        if (object.empty()) in.fail(pointer, "no word vectors: the object is empty");
        std::vector<std::string_view> keys;
        std::vector<std::size_t> lengths;
        for (const auto& [key, value] : object.items()) {
            const auto word_pointer = pointer_child(pointer, key);
            in.plain_text(key, word_pointer);
            keys.push_back(key);
            lengths.push_back(in.vector_length(value, word_pointer));
        }
        const Reader::VectorNames vectors{"vector", [&](std::size_t i) { return fmt::format("\"{}\"", printable(keys[i], 24)); },
                                          [&](std::size_t i) { return pointer_child(pointer, keys[i]); }};
        words_.width = in.common_length(pointer, lengths, vectors);
        for (const auto& [key, value] : object.items()) {
            const Vector v = in.vector(value, pointer_child(pointer, key), 0, "");
            own_keys_ += key;
            own_ends_.push_back(own_keys_.size());
            own_rows_.insert(own_rows_.end(), v.begin(), v.end());
        }
        words_.count = own_ends_.size();
        words_.rows = reinterpret_cast<const std::uint8_t*>(own_rows_.data());
        words_.ends = reinterpret_cast<const std::uint8_t*>(own_ends_.data());
        words_.keys = own_keys_.data();
    }

    std::string_view folded_word(std::size_t i) const {
        const std::size_t from = i == 0 ? 0 : folded_ends_[i - 1];
        return std::string_view(folded_keys_).substr(from, folded_ends_[i] - from);
    }

    void fold_all(const Reader& in) const {
        for (std::size_t i = 0; i < size(); ++i) {
            folded_keys_ += fold_case(word(i));
            folded_ends_.push_back(folded_keys_.size());
        }
        in.charge(folded_keys_.size() + size() * (sizeof(std::uint64_t) + HashIndex::entry_bytes));
        folded_ = HashIndex(size(), [this](std::size_t i) { return folded_word(i); });
    }

    PackedWords words_;
    HashIndex exact_;
    // Only for an object the parser did not pack: the same layout, held here.
    std::string own_keys_;
    std::vector<std::uint64_t> own_ends_;
    std::vector<double> own_rows_;
    // Case-folded keys, built on the first exact miss.
    mutable std::string folded_keys_;
    mutable std::vector<std::size_t> folded_ends_;
    mutable HashIndex folded_;
};

// What a list of words holds: each string, its text beyond the string's own small buffer,
// and a bit for whether it is punctuation.
std::uint64_t words_bytes(const SplitWords& words) {
    std::uint64_t bytes = words.size() * sizeof(std::string) + words.size() / 8;
    for (const auto& text : words.texts) bytes += text.size() > 15 ? text.size() + 17 : 0;
    return bytes;
}

struct InputLabels {
    SplitWords words;           // sentence words (with punctuation) or tokens
    std::string pointer;        // "/sentence" or "/tokens"
    bool from_sentence = false;
};

// Where token i (from 0) of `count` stands, as a message shows it: in a sentence, the
// pointer "/sentence" and " (token 2 of 6)" after the word; in an array, the place
// "/tokens/1 (token 2 of 6)", since a JSON pointer counts from 0 and a token in words from 1.
struct TokenPlace {
    std::string place, after_word;
};

TokenPlace token_place(const InputLabels& labels, std::size_t i, std::size_t count) {
    const auto token = fmt::format("(token {} of {})", i + 1, count);
    if (labels.from_sentence) return {labels.pointer, " " + token};
    return {fmt::format("{} {}", pointer_child(labels.pointer, i), token), ""};
}

// The row of `table` for `word`, by exact spelling first, then case-insensitively; none when
// the table has no vector for it. Refuses a word that matches several spellings.
std::optional<std::size_t> look_up(const Reader& in, const WordVectors& table, const std::string& word,
                                   const TokenPlace& where, std::string_view vectors_pointer) {
    const auto found = table.find(in, word);
    if (found.size() == 1) return found.front();
    if (found.empty()) return std::nullopt;
    std::vector<std::string> spellings;
    for (const auto index : found) spellings.emplace_back(table.word(index));
    in.fail(where.place, fmt::format("word \"{}\"{} matches several entries of {} that differ only in case: {}",
                                     printable(word), where.after_word, show_pointer(vectors_pointer),
                                     bounded_list(spellings)));
}

// The known words closest to `word`, at most `count`, within `pairs` steps of edit distance.
std::vector<std::string> closest_words(const WordVectors& table, std::string_view word, std::size_t count, std::size_t pairs) {
    std::vector<std::string> words;
    for (const auto index : closest(word, table.size(), [&](std::size_t i) { return table.word(i); }, count, pairs))
        words.emplace_back(table.word(index));
    return words;
}

// The distinct words at `positions` (in sentence order), each at the first position it has.
std::vector<std::size_t> first_occurrences(const std::vector<std::string>& texts, std::vector<std::size_t> positions) {
    std::stable_sort(positions.begin(), positions.end(), [&](std::size_t a, std::size_t b) { return texts[a] < texts[b]; });
    std::vector<std::size_t> firsts;
    for (std::size_t i = 0; i < positions.size(); ++i)
        if (i == 0 || texts[positions[i]] != texts[positions[i - 1]]) firsts.push_back(positions[i]);
    std::sort(firsts.begin(), firsts.end());
    return firsts;
}

// Refuses the tokens at `missing` (positions, in order), which have no vector: all their words
// in one message, each once, at most 8 of them with their closest known word.
[[noreturn]] void refuse_unknown_words(const Reader& in, const WordVectors& table, const InputLabels& labels,
                                       const std::vector<std::size_t>& missing, std::string_view vectors_pointer) {
    const auto& texts = labels.words.texts;
    const std::size_t count = texts.size();
    in.charge(2 * missing.size() * sizeof(std::size_t));
    const auto words = first_occurrences(texts, missing);
    if (words.size() == 1) {
        const auto where = token_place(labels, words.front(), count);
        const auto suggestions = closest_words(table, texts[words.front()], 3, suggestion_pairs);
        in.fail(where.place, fmt::format("unknown word \"{}\"{}: {} has no vector for it{}{}", printable(texts[words.front()]),
                                         where.after_word, show_pointer(vectors_pointer),
                                         suggestions.empty() ? "" : "; closest known words: ", bounded_list(suggestions)));
    }
    const std::size_t shown = std::min<std::size_t>(words.size(), 8);
    std::vector<std::string> items;
    for (std::size_t w = 0; w < shown; ++w) {
        const std::string& word = texts[words[w]];
        const auto suggestion = closest_words(table, word, 1, suggestion_pairs / shown);
        items.push_back(fmt::format("\"{}\" (token {}{})", printable(word, 24), words[w] + 1,
                                    suggestion.empty() ? "" : ", closest known word: " + printable(suggestion.front(), 24)));
    }
    in.fail(labels.pointer, fmt::format("{} unknown words: {} has no vector for {}", words.size(),
                                        show_pointer(vectors_pointer), bounded_join(items, words.size())));
}

InputLabels read_labels(const Reader& in, const Json& object, const std::string& pointer) {
    const bool has_sentence = object.contains("sentence");
    const bool has_tokens = object.contains("tokens");
    if (has_sentence && has_tokens)
        in.fail(pointer, "give either \"sentence\" or \"tokens\", not both");
    if (!has_sentence && !has_tokens)
        in.fail(pointer, "missing \"sentence\" (a string) or \"tokens\" (an array of strings)");
    InputLabels labels;
    if (has_sentence) {
        labels.pointer = pointer_child(pointer, "sentence");
        labels.from_sentence = true;
        const std::string& sentence = in.string_ref(object["sentence"], labels.pointer);
        in.plain_text_in_sentence(sentence, labels.pointer);
        // Split no further than one word past the limit: a long sentence of punctuation would
        // otherwise make millions of words before it is refused.
        labels.words = split_sentence(sentence, max_tokens + 1);
        if (labels.words.size() > max_tokens)
            in.fail(labels.pointer, fmt::format("more than {} tokens, the limit", max_tokens));
        if (labels.words.size() == 0) in.fail(labels.pointer, "the sentence has no words");
        in.charge(words_bytes(labels.words));
        return labels;
    }
    labels.pointer = pointer_child(pointer, "tokens");
    const Json& tokens = object["tokens"];
    const bool packed = is_packed_strings(tokens);  // the parser's form of an array of strings only
    if (!packed && !tokens.is_array()) in.fail(labels.pointer, "expected an array of strings, found " + describe(tokens));
    if (!packed && tokens.empty()) in.fail(labels.pointer, "no tokens: the array is empty");
    const std::size_t count = packed ? packed_strings(tokens).count : tokens.size();
    in.check_token_count(labels.pointer, count);
    labels.words.texts.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
        const auto token_pointer = pointer_child(labels.pointer, i);
        std::string text = packed ? std::string(packed_strings(tokens)[i]) : in.string(tokens[i], token_pointer);
        in.plain_text(text, token_pointer);
        if (text.find_first_not_of(" \t\r\n") == std::string::npos)
            in.fail(token_pointer, "empty token: a token needs at least one visible character");
        labels.words.texts.push_back(std::move(text));
    }
    labels.words.punctuation.assign(count, false);
    in.charge(words_bytes(labels.words));
    return labels;
}

// Every word of the table with its vector, in file order.
Vocabulary vocabulary_of(const Reader& in, const WordVectors& table) {
    Vocabulary vocabulary;
    in.charge(table.size() * (sizeof(std::string) + static_cast<std::size_t>(table.width()) * sizeof(double)));
    vocabulary.vectors.resize(static_cast<Eigen::Index>(table.size()), table.width());
    vocabulary.words.reserve(table.size());
    for (std::size_t i = 0; i < table.size(); ++i) {
        vocabulary.words.emplace_back(table.word(i));
        table.copy_vector(i, &vocabulary.vectors(static_cast<Eigen::Index>(i), 0));
    }
    return vocabulary;
}

// Tokens plus their vectors, from {"sentence"|"tokens", VECTORS_KEY: object | array}.
// An object maps words to vectors; an array is aligned with the tokens.
// The note for punctuation marks about to be dropped from a sentence (those `keep` refuses).
template <typename Keep>
void note_dropped(const InputLabels& labels, Keep&& keep, std::vector<std::string>& notes) {
    std::vector<std::string> marks;
    std::size_t count = 0;
    for (std::size_t i = 0; i < labels.words.size(); ++i) {
        if (keep(i)) continue;
        ++count;
        const std::string mark = fmt::format("\"{}\"", labels.words.texts[i]);
        if (std::find(marks.begin(), marks.end(), mark) == marks.end()) marks.push_back(mark);
    }
    if (count == 0) return;
    notes.push_back(fmt::format("{} dropped from {}: {} (punctuation without a vector of its own is left out; "
                                "give a mark a vector to keep it)",
                                count == 1 ? "a punctuation mark was" : fmt::format("{} punctuation marks were", count),
                                labels.pointer, bounded_list(marks)));
}

Sequence read_sequence(const Reader& in, const Json& object, const std::string& pointer,
                       std::string_view vectors_key, bool allow_word_map, Vocabulary* vocabulary,
                       std::vector<std::string>& notes) {
    InputLabels labels = read_labels(in, object, pointer);
    const auto vectors_pointer = pointer_child(pointer, vectors_key);
    if (!object.contains(vectors_key))
        in.fail(pointer, fmt::format("missing \"{}\" ({})", vectors_key,
                                     allow_word_map ? "an object word → vector, or an array of "
                                                      "vectors aligned with the tokens"
                                                    : "an array of vectors aligned with the tokens"));
    const Json& vectors = object[std::string(vectors_key)];

    Sequence seq;
    if ((vectors.is_object() || is_packed_words(vectors)) && allow_word_map) {
        const WordVectors table(in, vectors, vectors_pointer);
        // Punctuation stays only where the embeddings name it.
        auto& words = labels.words;
        const auto keep = [&](std::size_t i) { return !words.punctuation[i] || table.has_exactly(words.texts[i]); };
        note_dropped(labels, keep, notes);
        words.keep_if(keep);
        if (words.size() == 0) in.fail(labels.pointer, "no words left after dropping punctuation");
        const auto count = words.size();
        in.charge(count * static_cast<std::size_t>(table.width()) * sizeof(double));
        seq.vectors.resize(static_cast<Eigen::Index>(count), table.width());
        std::vector<std::size_t> missing;  // tokens without a vector, refused together
        for (std::size_t i = 0; i < count; ++i) {
            const auto row = look_up(in, table, words.texts[i], token_place(labels, i, count), vectors_pointer);
            if (row) table.copy_vector(*row, &seq.vectors(static_cast<Eigen::Index>(i), 0));
            else missing.push_back(i);
        }
        if (!missing.empty()) refuse_unknown_words(in, table, labels, missing, vectors_pointer);
        seq.tokens = std::move(words.texts);
        if (vocabulary) *vocabulary = vocabulary_of(in, table);
        return seq;
    }
    if (!vectors.is_array() && !is_packed_matrix(vectors) && !is_packed_float_rows(vectors))
        in.fail(vectors_pointer,
                fmt::format("expected {}, found {}",
                            allow_word_map ? "an object word → vector or an array of vectors"
                                           : "an array of vectors aligned with the tokens",
                            describe(vectors)));
    const auto keep = [&](std::size_t i) { return !labels.words.punctuation[i]; };
    note_dropped(labels, keep, notes);
    labels.words.keep_if(keep);
    if (labels.words.size() == 0) in.fail(labels.pointer, "no words left after dropping punctuation");
    if (rows_of(vectors) != labels.words.size())
        in.fail(vectors_pointer, fmt::format("{} vector{} for {} token{}: an array of vectors "
                                             "needs one vector per token, in order",
                                             rows_of(vectors), rows_of(vectors) == 1 ? "" : "s",
                                             labels.words.size(), labels.words.size() == 1 ? "" : "s"));
    if (is_packed_float_rows(vectors)) {  // a binary array's float32 rows, left in place (LoadOptions)
        const FloatRows rows = packed_float_rows_of(vectors);
        if (rows.columns > max_dimension) in.too_long(pointer_child(vectors_pointer, 0), rows.columns);
        seq.in_place = InPlaceRows{rows.data, static_cast<Eigen::Index>(rows.rows), static_cast<Eigen::Index>(rows.columns), {}};
        seq.vectors.resize(0, static_cast<Eigen::Index>(rows.columns));
    } else {
        seq.vectors = in.matrix(vectors, vectors_pointer);
    }
    seq.tokens = std::move(labels.words.texts);
    return seq;
}

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
    return input;
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

// The parser packs every object whose members are all vectors of one length, as it should an
// embeddings object; the input object, "weights", "source" and "target" are read member by
// member, so such an object is unpacked again there ({"v_a": [1, 2]} is an object, not a
// table of words).
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

// The document, read: every field checked against every other. Where numbers came from
// binary arrays the reader knows (Reader::set_arrays); `layout` is --layout.
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
                           "padding", "positions", "source", "target", "layout"},
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
    if (layout) {
        problem.layout = *layout;
        problem.layout_stated = true;
    }
    in.set_layout(problem.layout, problem.layout_stated);
    if (doc.contains("description")) problem.description = read_description(in, doc["description"]);
    if (doc.contains("mode")) {
        const auto name = in.string(doc["mode"], "/mode");
        problem.mode = parse_enum<Mode>(name);
        if (!problem.mode)
            in.fail("/mode", fmt::format("unknown mode \"{}\" (expected one of: {})",
                                         printable(name), enum_list<Mode>()));
    }

    const bool encoder_decoder = doc.contains("source") || doc.contains("target");
    if (encoder_decoder) {
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
        if (doc.contains("padding"))
            in.fail("/padding", "a source/target input marks what the decoder may not see with \"mask\" inside "
                                "\"source\" (one boolean per source token)");
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

}  // namespace

Problem load_problem(std::string_view json_text, const std::string& origin, MemoryBudget* budget,
                     const LoadOptions& options) {
    if (options.tokens)
        throw UsageError("--tokens labels the rows of a binary array (.npy, .npz, .safetensors); a JSON input names "
                         "its tokens in \"tokens\" or \"sentence\"");
    if (options.from)
        throw UsageError(fmt::format("--from {} reads a model's tensors from a .safetensors or .npz file, not JSON",
                                     to_string(*options.from)));
    Reader in(origin, budget);
    Json doc = parse_json(json_text, origin, budget);
    unpack_objects(in, doc);
    ArrayNames arrays;
    std::vector<std::string> notes;
    resolve_array_references(doc, origin, options, arrays, notes, budget);
    in.set_arrays(&arrays);
    Problem problem = read_document(in, doc, origin, options.layout, options.kv_heads_given);
    problem.notes.insert(problem.notes.begin(), notes.begin(), notes.end());
    return problem;
}

namespace {

// A .npy, .npz or safetensors input, through the same reading as JSON.
Problem load_arrays(const InputText& input, MemoryBudget& budget, const LoadOptions& options) {
    const TensorFile file = read_tensors(input.text, input.origin, input.storage, options.max_input, &budget);
    ArrayDocument arrays = array_document(file, options, &budget);
    Reader in(input.origin, &budget);
    in.set_arrays(&arrays.names);
    Problem problem = read_document(in, arrays.doc, input.origin, std::nullopt, options.kv_heads_given);
    problem.notes.insert(problem.notes.begin(), arrays.notes.begin(), arrays.notes.end());
    if (arrays.layernorm) std::get<SingleSequenceInput>(problem.input).layernorm = std::move(arrays.layernorm);
    if (auto* single = std::get_if<SingleSequenceInput>(&problem.input); single && single->sequence.in_place)
        single->sequence.in_place->storage = arrays.in_place_storage;  // the rows live as long as the problem
    return problem;
}

}  // namespace

Problem load_input(const InputText& input, const MemoryLimit& limit, const LoadOptions& options) {
    MemoryBudget budget(limit, input.origin);
    try {
        Problem problem = sniff_tensor_format(input.text) ? load_arrays(input, budget, options)
                                                          : load_problem(input.text, input.origin, &budget, options);
        input.require_unchanged();
        return problem;
    } catch (const DataError&) {
        input.require_unchanged();
        throw;
    }
}

}  // namespace attntrace
