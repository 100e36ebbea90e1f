#include "input/tokenize.hpp"

#include "util/utf8.hpp"

#include <cctype>

namespace attntrace {
namespace {

bool is_space(std::string_view ch) {
    return ch == " " || ch == "\t" || ch == "\n" || ch == "\r" || ch == "\f" || ch == "\v" ||
           ch == "\u00A0";
}

bool is_joiner(std::string_view ch) { return ch == "'" || ch == "-" || ch == "\u2019"; }

// ASCII punctuation and symbols, and the Unicode punctuation a typed sentence is likely to hold.
bool is_punctuation(std::string_view ch) {
    if (ch.size() == 1) {
        const char c = ch[0];
        return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') ||
               (c >= '{' && c <= '~');
    }
    static constexpr std::string_view unicode_punctuation[] = {
        "\u00A1", "\u00AB", "\u00BB", "\u00BF", "\u2010", "\u2011", "\u2012", "\u2013",
        "\u2014", "\u2015", "\u2018", "\u2019", "\u201C", "\u201D", "\u201E", "\u2026",
        "\u2039", "\u203A", "\u3001", "\u3002", "\uFF0C", "\uFF0E", "\uFF01", "\uFF1F"};
    for (const auto p : unicode_punctuation)
        if (ch == p) return true;
    return false;
}

// The character at `at` (an ill-formed byte counts as one).
std::string_view character_at(std::string_view text, std::size_t at) {
    const std::size_t n = utf8_sequence_length(text.substr(at));
    return text.substr(at, n == 0 ? 1 : n);
}

// A special token written in brackets: "<pad>", "</s>", "<|endoftext|>", "[CLS]". At `at`
// a '<' or '[', the length of the marker through its closing '>' or ']' when one follows
// before any white space or other bracket, with at least one letter or digit inside; else 0
// (then the bracket is punctuation like any other: "a < b", "<3").
std::size_t marker_length(std::string_view text, std::size_t at) {
    const char open = text[at];
    if (open != '<' && open != '[') return 0;
    const char close = open == '<' ? '>' : ']';
    bool alphanumeric = false;
    for (std::size_t i = at + 1; i < text.size();) {
        const auto ch = character_at(text, i);
        if (ch.size() == 1 && ch[0] == close) return alphanumeric ? i + 1 - at : 0;
        if (is_space(ch) || ch == "<" || ch == ">" || ch == "[" || ch == "]") return 0;
        alphanumeric = alphanumeric || ch.size() > 1 || std::isalnum(static_cast<unsigned char>(ch[0])) != 0;
        i += ch.size();
    }
    return 0;
}

// Calls emit(word, is_punctuation) for each word, at most `max_words` times. A word is a
// run of characters of the sentence, so it is passed as a view into it.
template <typename Emit>
void scan_words(std::string_view sentence, std::size_t max_words, Emit&& emit) {
    std::size_t count = 0, start = 0, end = 0;  // the current word: [start, end)
    const auto flush = [&] {
        if (end > start && count < max_words) emit(sentence.substr(start, end - start), false), ++count;
    };
    for (std::size_t i = 0; i < sentence.size() && count < max_words;) {
        if (const std::size_t marker = marker_length(sentence, i); marker > 0) {  // "<pad>": one word
            flush();
            if (count < max_words) emit(sentence.substr(i, marker), false), ++count;
            i += marker;
            start = end = i;
            continue;
        }
        const auto ch = character_at(sentence, i);
        const std::size_t at = i;
        i += ch.size();
        if (is_space(ch)) {
            flush();
            start = end = i;
            continue;
        }
        const std::string_view next = i < sentence.size() ? character_at(sentence, i) : std::string_view();
        const bool joins = is_joiner(ch) && end > start && !next.empty() && !is_space(next) && !is_punctuation(next);
        if (is_punctuation(ch) && !joins) {
            flush();
            if (count < max_words) emit(ch, true), ++count;
            start = end = i;
            continue;
        }
        if (end == start) start = at;
        end = i;
    }
    flush();
}

}  // namespace

SplitWords split_sentence(std::string_view sentence, std::size_t max_words) {
    std::size_t count = 0;
    scan_words(sentence, max_words, [&](std::string_view, bool) { ++count; });
    SplitWords words;
    words.texts.reserve(count);
    words.punctuation.reserve(count);
    scan_words(sentence, max_words, [&](std::string_view text, bool punctuation) {
        words.texts.emplace_back(text);
        words.punctuation.push_back(punctuation);
    });
    return words;
}

}  // namespace attntrace
