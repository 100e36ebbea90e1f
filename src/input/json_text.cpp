#include "input/json_text.hpp"

#include "error.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace attntrace {
namespace {

struct Location {
    std::size_t line = 1;
    std::size_t column = 1;
};

// 1-based line and column (in characters) of byte `offset`.
Location locate(std::string_view text, std::size_t offset) {
    offset = std::min(offset, text.size());
    Location where;
    std::size_t line_start = 0;
    for (std::size_t i = 0; i < offset; ++i) {
        if (text[i] == '\n') {
            ++where.line;
            line_start = i + 1;
        }
    }
    where.column = 1 + utf8_length(text.substr(line_start, offset - line_start));
    return where;
}

// Byte offset where nesting first exceeds max_json_depth, or npos. Runs before the parser
// so that no recursion or allocation ever depends on an attacker's nesting depth.
std::size_t too_deep_at(std::string_view text) {
    int depth = 0;
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max_json_depth) return i;
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return std::string_view::npos;
}

// nlohmann's message without its "[json.exception…] parse error at line L, column C: " prefix.
std::string parse_reason(const std::string& what) {
    const auto at = what.find("parse error");
    if (at == std::string::npos) return what;
    const auto colon = what.find(": ", at);
    return colon == std::string::npos ? what : what.substr(colon + 2);
}

}  // namespace

Json parse_json(std::string_view text, const std::string& origin) {
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
        throw DataError(fmt::format("{}: empty input: expected a JSON object", origin));
    if (const auto at = too_deep_at(text); at != std::string_view::npos) {
        const auto where = locate(text, at);
        throw DataError(fmt::format("{}:{}:{}: JSON nested deeper than {} levels", origin,
                                    where.line, where.column, max_json_depth));
    }
    try {
        return Json::parse(text);
    } catch (const Json::parse_error& e) {
        // e.byte is 1-based: the byte the parser stopped at.
        const auto where = locate(text, e.byte == 0 ? 0 : e.byte - 1);
        throw DataError(fmt::format("{}:{}:{}: invalid JSON: {}", origin, where.line,
                                    where.column, printable(parse_reason(e.what()), 120)));
    } catch (const Json::out_of_range& e) {
        // A number literal beyond the double range (1e400); nlohmann does not say where, so
        // point at the literal it names.
        const std::string what = e.what();
        const auto quote = what.find('\'');
        const auto literal = quote == std::string::npos
                                 ? std::string()
                                 : what.substr(quote + 1, what.rfind('\'') - quote - 1);
        const auto where = locate(text, literal.empty() ? 0 : text.find(literal));
        throw DataError(fmt::format("{}:{}:{}: number out of range: {} does not fit a double",
                                    origin, where.line, where.column, printable(literal)));
    }
}

std::string pointer_child(std::string_view pointer, std::string_view key) {
    std::string out(pointer);
    out += '/';
    for (const char c : key) {
        if (c == '~') out += "~0";
        else if (c == '/') out += "~1";
        else out += c;
    }
    return out;
}

std::string pointer_child(std::string_view pointer, std::size_t index) {
    return fmt::format("{}/{}", pointer, index);
}

std::string show_pointer(std::string_view pointer) {
    return pointer.empty() ? std::string("/") : std::string(pointer);
}

std::string describe(const Json& value) {
    switch (value.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return fmt::format("boolean {}", value.get<bool>());
    case Json::value_t::string:
        return fmt::format("string \"{}\"", printable(value.get_ref<const std::string&>(), 24));
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float: return fmt::format("number {}", value.dump());
    case Json::value_t::array:
        return value.empty() ? "an empty array" : fmt::format("an array of {}", value.size());
    case Json::value_t::object: return value.empty() ? "an empty object" : "an object";
    default: return "a value of another kind";
    }
}

std::string printable(std::string_view text, std::size_t max_chars) {
    std::string out;
    std::size_t chars = 0;
    for (std::size_t i = 0; i < text.size();) {
        if (chars == max_chars) {
            out += "…";
            break;
        }
        const std::size_t n = utf8_sequence_length(text.substr(i));
        const auto byte = static_cast<unsigned char>(text[i]);
        if (n == 0 || (n == 1 && (byte < 0x20 || byte == 0x7f))) {
            out += fmt::format("\\x{:02x}", byte);
            ++i;
        } else {
            out.append(text.substr(i, n));
            i += n;
        }
        ++chars;
    }
    return out;
}

}  // namespace attntrace
