#include "input/tokenize.hpp"

#include "util/utf8.hpp"

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

std::vector<std::string_view> characters(std::string_view text) {
    std::vector<std::string_view> out;
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t n = utf8_sequence_length(text.substr(i));
        const std::size_t step = n == 0 ? 1 : n;
        out.push_back(text.substr(i, step));
        i += step;
    }
    return out;
}

}  // namespace

std::vector<Word> split_sentence(std::string_view sentence) {
    const auto chars = characters(sentence);
    std::vector<Word> words;
    std::string current;
    const auto flush = [&] {
        if (!current.empty()) words.push_back({std::move(current), false});
        current.clear();
    };
    for (std::size_t i = 0; i < chars.size(); ++i) {
        const auto ch = chars[i];
        if (is_space(ch)) {
            flush();
            continue;
        }
        const bool joins = is_joiner(ch) && !current.empty() && i + 1 < chars.size() &&
                           !is_space(chars[i + 1]) && !is_punctuation(chars[i + 1]);
        if (is_punctuation(ch) && !joins) {
            flush();
            words.push_back({std::string(ch), true});
            continue;
        }
        current += ch;
    }
    flush();
    return words;
}

}  // namespace attntrace
