#include "input/json_hints.hpp"

#include "input/json_numbers.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace attntrace {
namespace {

bool is_word_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }

// 'journey' → write "journey": the text up to the closing single quote on the same line.
std::string single_quote_hint(std::string_view text, std::size_t at) {
    const std::size_t close = text.find_first_of("'\n", at + 1);
    if (close == std::string_view::npos || text[close] != '\'' || close - at > 41)
        return "JSON strings and keys use double quotes (\"), not single quotes";
    return fmt::format("JSON strings and keys use double quotes, as in \"{}\"", printable(text.substr(at + 1, close - at - 1)));
}

// A word where a value should be: a Python or JavaScript spelling, or text without quotes.
std::string bare_word_hint(std::string_view word) {
    const std::string lower = fold_case(word);
    if (lower == "true" || lower == "false" || lower == "null")
        return fmt::format("write {}, as JSON spells true, false and null in lower case", lower);
    if (lower == "none" || lower == "undefined" || lower == "nil")
        return "write null, JSON's word for no value";
    return fmt::format("JSON's only bare words are true, false and null; text needs double quotes, as in \"{}\"",
                       printable(word, 24));
}

}  // namespace

std::string_view json_word_at(std::string_view text, std::size_t at) {
    if (at >= text.size() || !is_word_start(text[at])) return {};
    std::size_t end = at;
    while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) ++end;
    return text.substr(at, end - at);
}

std::string_view number_text_at(std::string_view text, std::size_t at) {
    std::size_t end = at;
    while (end < text.size() && end - at < 24 && std::strchr("0123456789+-.eE", text[end]) && text[end] != '\0') ++end;
    return text.substr(at, end - at);
}

bool is_typographic_quote(std::string_view text) {
    return text.starts_with("\u2018") || text.starts_with("\u2019") || text.starts_with("\u201C") ||
           text.starts_with("\u201D") || text.starts_with("\u201E");
}

bool is_not_finite_word(std::string_view word) {
    const std::string lower = fold_case(word);
    return lower == "nan" || lower == "infinity" || lower == "inf";
}

std::string shown_at(std::string_view text, std::size_t at) {
    const std::string_view rest = text.substr(at);
    if (rest.front() == '\'') return "a single quote";
    if (rest.starts_with("//") || rest.starts_with("/*")) return fmt::format("'{}'", rest.substr(0, 2));
    if (const auto word = json_word_at(text, at); !word.empty()) return fmt::format("'{}'", printable(word, 24));
    if (std::strchr(".+", rest.front()) && rest.size() > 1 && is_ascii_digit(rest[1]))
        return fmt::format("'{}'", number_text_at(text, at));
    const std::size_t length = std::max<std::size_t>(utf8_sequence_length(rest), 1);
    return fmt::format("'{}'", printable(rest.substr(0, length), 1));
}

std::string hint_at(std::string_view text, std::size_t at, JsonSlot slot) {
    const std::string_view rest = text.substr(at);
    if (rest.starts_with("//") || rest.starts_with("/*"))
        return "JSON has no comments, so remove it (a note for the learner can go in \"description\")";
    if (rest.front() == '\'') return single_quote_hint(text, at);
    if (is_typographic_quote(rest))
        return "a typographic quote, as word processors write them; JSON needs straight double quotes (\")";
    const std::string_view word = json_word_at(text, at);
    switch (slot) {
    case JsonSlot::key:
        return word.empty() ? "" : fmt::format("keys need double quotes, as in \"{}\"", printable(word, 24));
    case JsonSlot::value:
        if (!word.empty()) return bare_word_hint(word);
        return number_hint(number_text_at(text, at));
    case JsonSlot::after_item:
        return word.empty() && !std::strchr("\"[{-0123456789", rest.front()) ? "" : "perhaps a ',' is missing before it";
    default: return "";
    }
}

std::string number_hint(std::string_view written) {
    if (written.find_first_of("0123456789") == std::string_view::npos) return "";
    std::string fixed;
    std::string_view reason;
    for (std::size_t i = 0; i < written.size(); ++i) {
        const char c = written[i];
        const bool sign_only = fixed.empty() || fixed == "-";
        if (c == '+' && i == 0) {
            reason = "a JSON number has no '+' sign";
            continue;
        }
        if (c == '0' && sign_only && i + 1 < written.size() && is_ascii_digit(written[i + 1])) {
            reason = "a JSON number does not start with a 0 followed by more digits";
            continue;
        }
        if (c == '.' && sign_only) reason = "a JSON number needs a digit on both sides of the point", fixed += '0';
        fixed += c;
        if (c == '.' && (i + 1 == written.size() || !is_ascii_digit(written[i + 1])))
            reason = "a JSON number needs a digit on both sides of the point", fixed += '0';
    }
    if (reason.empty() || !is_json_number(fixed)) return "";
    return fmt::format("write {} ({})", fixed, reason);
}

}  // namespace attntrace
