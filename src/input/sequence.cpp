#include "input/sequence.hpp"

#include "input/limits.hpp"
#include "input/tokenize.hpp"
#include "util/hash_index.hpp"
#include "util/suggest.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace attntrace {
namespace {

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

}  // namespace

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

}  // namespace attntrace
