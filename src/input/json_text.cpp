#include "input/json_text.hpp"

#include "error.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>
#include <vector>

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

// Builds the document through nlohmann's DOM builder while keeping what that builder does not:
// the JSON pointer of the current value (for duplicate keys, which nlohmann would silently
// merge) and the exact position of a number beyond the double range.
class LocatingBuilder {
public:
    LocatingBuilder(Json& root, std::string_view text, const std::string& origin)
        : dom_(root), text_(text), origin_(origin) {}

    bool null() { return value(), dom_.null(); }
    bool boolean(bool b) { return value(), dom_.boolean(b); }
    bool number_integer(Json::number_integer_t n) { return value(), dom_.number_integer(n); }
    bool number_unsigned(Json::number_unsigned_t n) { return value(), dom_.number_unsigned(n); }
    bool number_float(Json::number_float_t n, const std::string& text) {
        return value(), dom_.number_float(n, text);
    }
    bool string(std::string& s) { return value(), dom_.string(s); }
    bool binary(Json::binary_t& b) { return value(), dom_.binary(b); }
    bool start_object(std::size_t n) {
        value();
        frames_.push_back({true, {}, {}, 0});
        return dom_.start_object(n);
    }
    bool key(std::string& k) {
        Frame& frame = frames_.back();
        frame.current = k;
        if (!frame.keys.insert(k).second)
            throw DataError(fmt::format("{}: {}: duplicate key \"{}\": a key may appear once in an "
                                        "object",
                                        origin_, pointer(), printable(k)));
        return dom_.key(k);
    }
    bool end_object() {
        frames_.pop_back();
        return dom_.end_object();
    }
    bool start_array(std::size_t n) {
        value();
        frames_.push_back({false, {}, {}, 0});
        return dom_.start_array(n);
    }
    bool end_array() {
        frames_.pop_back();
        return dom_.end_array();
    }
    bool parse_error(std::size_t position, const std::string& token,
                     const nlohmann::detail::exception& e) {
        if (e.id == 406) {  // a number literal beyond the double range, such as 1e400
            const auto where = locate(text_, position - std::min(position, token.size()));
            throw DataError(fmt::format("{}:{}:{}: number out of range: {} does not fit a double",
                                        origin_, where.line, where.column, printable(token)));
        }
        // position counts the bytes read, including the one the parser stopped at.
        const auto where = locate(text_, position == 0 ? 0 : position - 1);
        throw DataError(fmt::format("{}:{}:{}: invalid JSON: {}", origin_, where.line,
                                    where.column, printable(parse_reason(e.what()), 120)));
    }

private:
    struct Frame {
        bool object = false;
        std::unordered_set<std::string> keys;  // objects: the keys seen so far
        std::string current;                   // objects: the key of the current value
        std::size_t count = 0;                 // arrays: values seen so far
    };

    // Every value advances the index of the array it sits in.
    void value() {
        if (!frames_.empty() && !frames_.back().object) ++frames_.back().count;
    }

    std::string pointer() const {
        std::string out;
        for (const auto& frame : frames_)
            out = frame.object ? pointer_child(out, frame.current)
                               : pointer_child(out, frame.count - 1);
        return show_pointer(out);
    }

    nlohmann::detail::json_sax_dom_parser<Json> dom_;
    std::string_view text_;
    const std::string& origin_;
    std::vector<Frame> frames_;
};

}  // namespace

Json parse_json(std::string_view text, const std::string& origin) {
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
        throw DataError(fmt::format("{}: empty input: expected a JSON object", origin));
    if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
        const auto where = locate(text, nul);
        throw DataError(fmt::format("{}:{}:{}: invalid JSON: a NUL byte, which JSON text cannot contain", origin,
                                    where.line, where.column));
    }
    if (const auto at = too_deep_at(text); at != std::string_view::npos) {
        const auto where = locate(text, at);
        throw DataError(fmt::format("{}:{}:{}: JSON nested deeper than {} levels", origin,
                                    where.line, where.column, max_json_depth));
    }
    Json doc;
    LocatingBuilder builder(doc, text, origin);
    Json::sax_parse(text.begin(), text.end(), &builder);
    return doc;
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
