#include "practice/answers.hpp"

#include "core/error.hpp"
#include "input/json_text.hpp"
#include "input/limits.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>

namespace attntrace {
namespace {

// The answers' JSON is read in one pass straight into the stages it gives: no document of
// nodes between (nlohmann's parser and a second scan took about 110 bytes a number, uncharged),
// each number's text kept as written (its decimals decide the tolerance), nesting no deeper
// than max_json_depth, every string well-formed UTF-8, every number a finite double. What is
// kept is charged to the budget as it grows. Syntax errors give the line and column; what
// does not fit the answers' shape gives the JSON pointer of the place.
class AnswersParser {
public:
    AnswersParser(std::string_view text, const std::string& origin, MemoryBudget* budget)
        : text_(text), origin_(origin), budget_(budget) {}

    std::vector<GivenStage> document() {
        skip_space();
        if (peek() != '{') {
            if (at_ >= text_.size()) syntax("unexpected end of input; expected an object");
            if (peek() == '[') shape("", "expected an object of stages, such as {\"weights\": [[...]]}");
            syntax(fmt::format("expected an object of stages, found {}", shown_here()));
        }
        std::optional<int> head;
        object("", [&](const std::string& key, const std::string& at) {
            if (key == "head") {
                head = head_number(at);
            } else if (key == "heads") {
                heads(at);
            } else if (key == "$schema" || key == "comment") {
                skip_value();
            } else {
                stage(key, 0, at);
            }
        });
        skip_space();
        if (at_ < text_.size()) syntax("text after the end of the JSON document");
        // "head" may come after the stages it names: it applies to every stage outside "heads".
        if (head)
            for (const std::size_t i : top_level_) {
                out_[i].head = *head;
                out_[i].head_where = fmt::format("{}: /head", origin_);
            }
        if (out_.empty()) shape("", "no stages given: name at least one, such as \"weights\"");
        return std::move(out_);
    }

private:
    // --- errors ----------------------------------------------------------------------------
    [[noreturn]] void syntax_at(std::size_t at, std::string_view what) const {
        const auto [line, column] = line_and_column(text_, at);
        throw DataError(fmt::format("{}:{}:{}: invalid JSON: {}", origin_, line, column, what));
    }
    [[noreturn]] void syntax(std::string_view what) const { syntax_at(at_, what); }
    // Valid JSON that is not what an answers file holds, at a JSON pointer.
    [[noreturn]] void shape(const std::string& where, std::string_view what) const {
        throw DataError(fmt::format("{}: {}: {}", origin_, where.empty() ? "/" : where, what));
    }

    std::string shown_here() const {
        if (at_ >= text_.size()) return "the end of the input";
        const std::size_t length = std::max<std::size_t>(1, utf8_sequence_length(text_.substr(at_)));
        return fmt::format("'{}'", printable(text_.substr(at_, length)));
    }

    void charge(std::uint64_t bytes) {
        if (budget_) budget_->charge(bytes);
    }
    // What a string holds beyond the object it sits in (none within the short-string buffer).
    static std::uint64_t heap_bytes(const std::string& text) { return text.size() > 15 ? text.size() + 17 : 0; }

    // --- lexing ----------------------------------------------------------------------------
    char peek() const { return at_ < text_.size() ? text_[at_] : '\0'; }
    void skip_space() {
        while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\n' || text_[at_] == '\r' || text_[at_] == '\t'))
            ++at_;
    }
    void expect(char c, std::string_view what) {
        skip_space();
        if (peek() != c) {
            if (at_ >= text_.size()) syntax(fmt::format("unexpected end of input; expected {}", what));
            syntax(fmt::format("expected {}, found {}", what, shown_here()));
        }
        ++at_;
    }

    // After an opening bracket: refused there, when it opens one level too many.
    void enter() {
        if (++depth_ > max_json_depth) syntax_at(at_ - 1, fmt::format("JSON nested deeper than {} levels", max_json_depth));
    }
    void leave() { --depth_; }

    // A string from its opening quote: escapes decoded, UTF-8 checked.
    std::string string() {
        const std::size_t opening = at_++;
        std::string out;
        while (true) {
            if (at_ >= text_.size()) syntax_at(opening, "unexpected end of input inside a string (a '\"' is missing)");
            const auto c = static_cast<unsigned char>(text_[at_]);
            if (c == '"') {
                ++at_;
                return out;
            }
            if (c < 0x20) syntax(fmt::format("control character U+{:04X} in a string", static_cast<unsigned>(c)));
            if (c == '\\') {
                escape(out);
                continue;
            }
            const std::size_t length = utf8_sequence_length(text_.substr(at_));
            if (length == 0) syntax(fmt::format("ill-formed UTF-8 byte 0x{:02x} in a string", static_cast<unsigned>(c)));
            out.append(text_.substr(at_, length));
            at_ += length;
        }
    }

    void escape(std::string& out) {
        const std::size_t start = at_++;
        const char c = peek();
        ++at_;
        switch (c) {
        case '"': out += '"'; return;
        case '\\': out += '\\'; return;
        case '/': out += '/'; return;
        case 'b': out += '\b'; return;
        case 'f': out += '\f'; return;
        case 'n': out += '\n'; return;
        case 'r': out += '\r'; return;
        case 't': out += '\t'; return;
        case 'u': break;
        default: syntax_at(start, "invalid escape in a string");
        }
        char32_t code = hex4(start);
        if (code >= 0xD800 && code <= 0xDBFF) {
            if (text_.substr(at_, 2) != "\\u") syntax_at(start, "a \\u escape for a lone surrogate: it needs its pair");
            at_ += 2;
            const char32_t low = hex4(start);
            if (low < 0xDC00 || low > 0xDFFF) syntax_at(start, "a \\u escape for a lone surrogate: it needs its pair");
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        } else if (code >= 0xDC00 && code <= 0xDFFF) {
            syntax_at(start, "a \\u escape for a lone surrogate: it needs its pair");
        }
        append_utf8(out, code);
    }

    char32_t hex4(std::size_t start) {
        char32_t code = 0;
        for (int i = 0; i < 4; ++i, ++at_) {
            const char h = peek();
            const int digit = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
            if (digit < 0) syntax_at(start, "invalid \\u escape: it needs four hexadecimal digits");
            code = code * 16 + static_cast<char32_t>(digit);
        }
        return code;
    }

    static bool is_digit(char c) { return c >= '0' && c <= '9'; }

    // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?: the number's text, checked.
    std::string_view number_text() {
        const std::size_t start = at_;
        const auto digits = [&] {
            const std::size_t from = at_;
            while (at_ < text_.size() && is_digit(text_[at_])) ++at_;
            return at_ > from;
        };
        const auto bad = [&] { syntax_at(start, "invalid number"); };
        if (peek() == '-') ++at_;
        if (peek() == '0') ++at_;
        else if (!digits()) bad();
        if (peek() == '.') {
            ++at_;
            if (!digits()) bad();
        }
        if (peek() == 'e' || peek() == 'E') {
            ++at_;
            if (peek() == '+' || peek() == '-') ++at_;
            if (!digits()) bad();
        }
        if (is_digit(peek())) bad();  // "01"
        return text_.substr(start, at_ - start);
    }

    // The text's value as a double: finite, or refused where it stands; below the smallest
    // double it is 0, as the input's parser reads it.
    double number_value(std::string_view text, std::size_t start) const {
        double value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error == std::errc::result_out_of_range) value = std::strtod(std::string(text).c_str(), nullptr);
        else if (error != std::errc() || end != text.data() + text.size()) syntax_at(start, "invalid number");
        if (!std::isfinite(value)) {
            const auto [line, column] = line_and_column(text_, start);
            throw DataError(fmt::format("{}:{}:{}: number out of range: {} does not fit a double", origin_, line, column,
                                        printable(text)));
        }
        return value;
    }

    // --- structure -------------------------------------------------------------------------
    // An object from its '{': `member(key, pointer)` reads each value. Keys appear once.
    template <typename Member>
    void object(const std::string& where, Member member) {
        expect('{', "'{'");
        enter();
        std::set<std::string> keys;  // a set: an object of many keys must not cost their square
        skip_space();
        if (peek() == '}') {
            ++at_;
            leave();
            return;
        }
        while (true) {
            skip_space();
            if (peek() != '"') {
                if (at_ >= text_.size()) syntax("unexpected end of input; expected a key in double quotes");
                syntax(fmt::format("expected a key in double quotes, found {}", shown_here()));
            }
            const std::size_t key_at = at_;
            std::string key = string();
            charge(64 + heap_bytes(key));  // the set's node
            if (!keys.insert(key).second)
                syntax_at(key_at, fmt::format("the key \"{}\" appears twice in one object", printable(key)));
            expect(':', "':' after the key");
            skip_space();
            member(key, where + "/" + key);
            skip_space();
            if (peek() == ',') {
                ++at_;
                continue;
            }
            if (peek() == '}') {
                ++at_;
                leave();
                return;
            }
            if (at_ >= text_.size()) syntax("unexpected end of input; expected ',' or '}'");
            syntax(fmt::format("expected ',' or '}}' after an object member, found {}", shown_here()));
        }
    }

    // An array from its '[': `item(index, pointer)` reads each element.
    template <typename Item>
    void array(const std::string& where, Item item) {
        expect('[', "'['");
        enter();
        skip_space();
        if (peek() == ']') {
            ++at_;
            leave();
            return;
        }
        for (std::size_t i = 0;; ++i) {
            skip_space();
            item(i, fmt::format("{}/{}", where, i));
            skip_space();
            if (peek() == ',') {
                ++at_;
                continue;
            }
            if (peek() == ']') {
                ++at_;
                leave();
                return;
            }
            if (at_ >= text_.size()) syntax("unexpected end of input; expected ',' or ']'");
            syntax(fmt::format("expected ',' or ']' after an array element, found {}", shown_here()));
        }
    }

    bool word(std::string_view w) {
        if (text_.substr(at_, w.size()) != w) return false;
        at_ += w.size();
        return true;
    }

    // Any value, read and dropped ("$schema", "comment").
    void skip_value() {
        skip_space();
        const char c = peek();
        if (c == '{') return object("", [&](const std::string&, const std::string&) { skip_value(); });
        if (c == '[') return array("", [&](std::size_t, const std::string&) { skip_value(); });
        if (c == '"') return (void)string();
        if (c == '-' || is_digit(c)) {
            const std::size_t start = at_;
            (void)number_value(number_text(), start);
            return;
        }
        if (word("true") || word("false") || word("null")) return;
        if (at_ >= text_.size()) syntax("unexpected end of input; expected a value");
        syntax(fmt::format("expected a value (object, array, string, number, true, false or null), found {}",
                           shown_here()));
    }

    // A number, or a marker of a hidden entry (null, "-inf", "masked").
    GivenNumber given_number(const std::string& where) {
        GivenNumber n;
        skip_space();
        const std::size_t start = at_;
        if (word("null")) {
            n.masked = true;
            n.value = -std::numeric_limits<double>::infinity();
            n.text = "null";
            return n;
        }
        if (peek() == '"') {
            std::string marker = string();
            if (marker == "-inf" || marker == "masked") {
                n.masked = true;
                n.value = -std::numeric_limits<double>::infinity();
                n.text = std::move(marker);
                return n;
            }
            shape(where, "expected a number (or null, \"-inf\" or \"masked\" for a hidden entry)");
        }
        if (peek() != '-' && !is_digit(peek())) {
            if (peek() == '{' || peek() == '[' || peek() == 't' || peek() == 'f')
                shape(where, "expected a number (or null, \"-inf\" or \"masked\" for a hidden entry)");
            skip_value();  // a syntax error, located
        }
        const std::string_view text = number_text();
        n.value = number_value(text, start);
        n.text = std::string(text);
        n.decimals = static_cast<std::int16_t>(decimals_of(text));
        return n;
    }

    // A whole number from 1 (rows, columns and heads count from 1), at most `largest`.
    std::int64_t index(const std::string& where, std::int64_t largest, std::string_view what) {
        skip_space();
        const std::size_t start = at_;
        if (peek() != '-' && !is_digit(peek())) shape(where, fmt::format("expected a whole number from 1 ({})", what));
        const std::string_view text = number_text();
        std::int64_t i = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), i);
        if (end != text.data() + text.size() && error == std::errc()) {  // "2.0", "1e3": not written as a whole number
            (void)number_value(text, start);
            shape(where, fmt::format("expected a whole number from 1 ({}), found {}", what, printable(text)));
        }
        if (error == std::errc::result_out_of_range || (error == std::errc() && i > largest))
            shape(where, fmt::format("{} is more than any trace has: at most {}", printable(text), largest));
        if (error != std::errc() || i < 1) shape(where, fmt::format("expected a whole number from 1 ({}), found {}", what, printable(text)));
        return i;
    }

    int head_number(const std::string& where) {
        return static_cast<int>(index(where, max_heads, "heads count from 1"));
    }

    // Appends to `numbers`, charging its growth: a vector's capacity doubles, and both the old
    // block and the new one are held while it moves.
    void keep(std::vector<GivenNumber>& numbers, GivenNumber n) {
        if (numbers.size() == numbers.capacity()) {
            const std::size_t grown = std::max<std::size_t>(16, 2 * numbers.capacity());
            charge(grown * sizeof(GivenNumber));
            numbers.reserve(grown);
        }
        charge(heap_bytes(n.text));
        numbers.push_back(std::move(n));
    }

    // A row of numbers: a non-empty array.
    void row_of(std::vector<GivenNumber>& numbers, Eigen::Index row, const std::string& where, std::size_t& count) {
        skip_space();
        if (peek() != '[') shape(where, "expected an array of numbers (a row)");
        count = 0;
        array(where, [&](std::size_t j, const std::string& at) {
            GivenNumber n = given_number(at);
            n.row = row;
            n.col = static_cast<Eigen::Index>(j);
            keep(numbers, std::move(n));
            ++count;
        });
        if (count == 0) shape(where, "expected an array of numbers (a row)");
    }

    // A stage: a matrix, {"row": R, "values": [...]} or {"cell": [R, C], "value": V}.
    void stage(const std::string& key, int head, const std::string& where) {
        const auto id = parse_enum<StageId>(key);
        if (!id || *id == StageId::parameters || *id == StageId::dot || *id == StageId::cosine)
            shape(where, fmt::format("\"{}\" is not a stage of the trace (scores, scaled, masked, weights, context, …)",
                                     printable(key)));
        charge(sizeof(GivenStage) + heap_bytes(where) + origin_.size());
        GivenStage s{*id, head, fmt::format("{}: {}", origin_, where), std::nullopt, std::nullopt, {}, false, {}};
        skip_space();
        if (peek() == '[') {
            std::size_t rows = 0, width = 0;
            array(where, [&](std::size_t i, const std::string& at) {
                std::size_t count = 0;
                row_of(s.numbers, static_cast<Eigen::Index>(i), at, count);
                if (i > 0 && count != width) shape(at, fmt::format("a row of {} numbers after rows of {}", count, width));
                width = count;
                ++rows;
            });
            if (rows == 0) shape(where, "expected an array of rows, found an empty array");
            s.rows = static_cast<Eigen::Index>(rows);
            s.cols = static_cast<Eigen::Index>(width);
        } else if (peek() == '{') {
            one_part(s, where);
        } else {
            if (peek() != '"' && peek() != 'n' && peek() != 't' && peek() != 'f' && peek() != '-' && !is_digit(peek()))
                skip_value();  // not a value at all: a syntax error, located
            shape(where, "expected a matrix (an array of rows), {\"row\": R, \"values\": [...]} or "
                         "{\"cell\": [R, C], \"value\": V}");
        }
        if (head == 0) top_level_.push_back(out_.size());
        out_.push_back(std::move(s));
    }

    // {"row": R, "values": [...]} or {"cell": [R, C], "value": V}, the members in any order.
    void one_part(GivenStage& s, const std::string& where) {
        std::optional<std::int64_t> row, cell_row, cell_col;
        bool values = false, value = false;
        const std::string either = "expected {\"row\": R, \"values\": [...]} or {\"cell\": [R, C], \"value\": V}, and nothing else";
        object(where, [&](const std::string& key, const std::string& at) {
            if (key == "row") {
                row = index(at, std::numeric_limits<std::int32_t>::max(), "rows count from 1");
            } else if (key == "values") {
                std::size_t count = 0;
                row_of(s.numbers, 0, at, count);
                values = true;
            } else if (key == "cell") {
                skip_space();
                if (peek() != '[') shape(at, "expected [row, column], each counted from 1");
                std::size_t parts = 0;
                array(at, [&](std::size_t i, const std::string& part) {
                    if (i >= 2) shape(at, "expected [row, column], each counted from 1");
                    (i == 0 ? cell_row : cell_col) = index(part, std::numeric_limits<std::int32_t>::max(),
                                                           "rows and columns count from 1");
                    ++parts;
                });
                if (parts != 2) shape(at, "expected [row, column], each counted from 1");
            } else if (key == "value") {
                GivenNumber n = given_number(at);
                keep(s.numbers, std::move(n));
                value = true;
            } else {
                shape(where, either);
            }
        });
        if (row && values && !cell_row && !value) {
            for (GivenNumber& n : s.numbers) n.row = static_cast<Eigen::Index>(*row - 1);
            return;
        }
        if (cell_row && value && !row && !values) {
            s.numbers.front().row = static_cast<Eigen::Index>(*cell_row - 1);
            s.numbers.front().col = static_cast<Eigen::Index>(*cell_col - 1);
            return;
        }
        shape(where, either);
    }

    // "heads": {"1": {stages}, "2": {...}}
    void heads(const std::string& where) {
        skip_space();
        if (peek() != '{') shape(where, "expected an object of heads: {\"1\": {...}}");
        object(where, [&](const std::string& key, const std::string& at) {
            std::int64_t h = 0;
            const auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), h);
            if (error == std::errc::result_out_of_range || (error == std::errc() && end == key.data() + key.size() && h > max_heads))
                shape(at, fmt::format("head {} is more than any trace has: at most {}", printable(key), max_heads));
            if (error != std::errc() || end != key.data() + key.size() || h < 1)
                shape(at, "a head is named by its number, from 1");
            skip_space();
            if (peek() != '{') shape(at, "expected an object of stages");
            object(at, [&](const std::string& name, const std::string& stage_at) {
                if (name == "heads" || name == "head" || name == "$schema" || name == "comment") return skip_value();
                stage(name, static_cast<int>(h), stage_at);
            });
        });
    }

    std::string_view text_;
    const std::string& origin_;
    MemoryBudget* budget_;
    std::size_t at_ = 0;
    int depth_ = 0;
    std::vector<GivenStage> out_;
    std::vector<std::size_t> top_level_;  // the stages outside "heads", which "head" names
};

// One CSV line's fields, quotes undone.
std::vector<std::string> csv_fields(std::string_view line) {
    std::vector<std::string> fields(1);
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quoted) {
            if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') fields.back() += '"', ++i;
            else if (c == '"') quoted = false;
            else fields.back() += c;
        } else if (c == '"') {
            quoted = true;
        } else if (c == ',') {
            fields.emplace_back();
        } else if (c != '\r') {
            fields.back() += c;
        }
    }
    return fields;
}

// Refuses a line of ill-formed UTF-8.
void require_utf8(std::string_view line, const std::string& origin, const std::string& where) {
    for (std::size_t at = 0; at < line.size();) {
        const std::size_t length = utf8_sequence_length(line.substr(at));
        if (length == 0)
            throw DataError(fmt::format("{}: {}: ill-formed UTF-8 byte 0x{:02x} (byte {} of the line)", origin, where,
                                        static_cast<unsigned>(static_cast<unsigned char>(line[at])), at + 1));
        at += length;
    }
}

// The header's columns by name, which must include those of --format csv --tidy.
std::map<std::string, std::size_t> csv_columns(const std::vector<std::string>& fields, const std::string& origin) {
    std::map<std::string, std::size_t> column;
    for (std::size_t i = 0; i < fields.size(); ++i) column[fields[i]] = i;
    for (const char* name : {"stage", "head", "row", "col", "value"})
        if (!column.contains(name))
            throw DataError(fmt::format("{}: line 1: the header has no column {} (stage,head,row,col,value as "
                                        "--format csv --tidy writes them)", origin, name));
    return column;
}

// A line's value: a finite number, or (empty, "-inf" or "masked") hidden.
GivenNumber csv_value(const std::string& value, const std::string& origin, const std::string& where) {
    GivenNumber n;
    if (value.empty() || value == "-inf" || value == "masked") {
        n.masked = true;
        n.value = -std::numeric_limits<double>::infinity();
        n.text = value.empty() ? "(empty)" : value;
        return n;
    }
    // The whole field, as a finite number: "0.5x" and "1e309" are not numbers here.
    const char* stop = value.data() + value.size();
    const auto [end_of_number, error] = std::from_chars(value.data(), stop, n.value);
    if (error == std::errc::result_out_of_range && end_of_number == stop)
        n.value = std::strtod(value.c_str(), nullptr);  // below the smallest double: 0; beyond the largest: inf
    else if (error != std::errc() || end_of_number != stop)
        n.value = std::numeric_limits<double>::quiet_NaN();
    if (!std::isfinite(n.value))
        throw DataError(fmt::format("{}: {}: value {} is not a finite number", origin, where, printable(value)));
    n.text = value;
    n.decimals = static_cast<std::int16_t>(decimals_of(value));
    return n;
}

// One line's number of a stage: its stage and head, and the number at its row and column.
struct CsvCell {
    StageId id;
    int head = 0;
    GivenNumber number;
};

// The line's number, or none for a line that is no answer (a parameter such as W_q).
std::optional<CsvCell> csv_cell(const std::vector<std::string>& fields, const std::map<std::string, std::size_t>& column,
                                const std::string& origin, const std::string& where) {
    auto field = [&](const char* name) -> const std::string& {
        const std::size_t i = column.at(name);
        if (i >= fields.size()) throw DataError(fmt::format("{}: {}: no {} field", origin, where, name));
        return fields[i];
    };
    const auto id = parse_enum<StageId>(field("stage"));
    if (!id || *id == StageId::parameters || *id == StageId::dot || *id == StageId::cosine) return std::nullopt;  // W_q …: not answers
    int head = 0;
    long long row = -1, col = -1;
    const auto whole = [](const std::string& s, auto& v) {
        const auto [stop, error] = std::from_chars(s.data(), s.data() + s.size(), v);
        return error == std::errc() && stop == s.data() + s.size() && !s.empty();
    };
    if (!field("head").empty() && (!whole(field("head"), head) || head < 1 || head > max_heads))
        throw DataError(fmt::format("{}: {}: head {} is not a head's number (from 1 to {})", origin, where,
                                    printable(field("head")), max_heads));
    // Within 32 bits, as the JSON reader's indices: no trace has more rows, and the
    // messages count from 1 (row + 1 must not overflow).
    constexpr long long largest = std::numeric_limits<std::int32_t>::max() - 1;
    if (!whole(field("row"), row) || !whole(field("col"), col) || row < 0 || col < 0 || row > largest || col > largest)
        throw DataError(fmt::format("{}: {}: row and col are whole numbers from 0 to {}", origin, where, largest));
    GivenNumber n = csv_value(field("value"), origin, where);
    n.row = row, n.col = col;
    return CsvCell{*id, head, std::move(n)};
}

// The tidy CSV of `--format csv --tidy`: rows and columns from 0, an empty value where hidden.
std::vector<GivenStage> read_csv(std::string_view text, const std::string& origin, MemoryBudget* budget) {
    std::vector<GivenStage> out;
    std::map<std::pair<StageId, int>, std::size_t> index;
    std::size_t line_no = 0;
    std::map<std::string, std::size_t> column;
    const auto charge = [&](std::uint64_t bytes) {
        if (budget) budget->charge(bytes);
    };
    for (std::size_t from = 0; from < text.size();) {
        const std::size_t end = std::min(text.find('\n', from), text.size());
        const std::string_view line = text.substr(from, end - from);
        from = end + 1;
        ++line_no;
        if (line.empty() || line == "\r") continue;
        const std::string where = fmt::format("line {}", line_no);
        require_utf8(line, origin, where);
        const auto fields = csv_fields(line);
        if (column.empty()) {
            column = csv_columns(fields, origin);
            continue;
        }
        std::optional<CsvCell> cell = csv_cell(fields, column, origin, where);
        if (!cell) continue;
        if (line_no <= std::numeric_limits<std::uint32_t>::max()) cell->number.line = static_cast<std::uint32_t>(line_no);
        const auto key = std::pair{cell->id, cell->head};
        if (!index.contains(key)) {
            index[key] = out.size();
            charge(sizeof(GivenStage) + 64 + origin.size());
            out.push_back({cell->id, cell->head, fmt::format("{}: {} (from {})", origin, to_string(cell->id), where),
                           std::nullopt, std::nullopt, {}, true, {}});
        }
        auto& numbers = out[index[key]].numbers;
        if (numbers.size() == numbers.capacity()) {  // charged as it grows, as the JSON reader charges it
            const std::size_t grown = std::max<std::size_t>(16, 2 * numbers.capacity());
            charge(grown * sizeof(GivenNumber));
            numbers.reserve(grown);
        }
        charge(cell->number.text.size() > 15 ? cell->number.text.size() + 17 : 0);
        numbers.push_back(std::move(cell->number));
    }
    if (out.empty()) throw DataError(fmt::format("{}: no stages given", origin));
    return out;
}

}  // namespace

int decimals_of(std::string_view text) {
    // Counted in 64 bits and kept within [0, max_decimals]: "0.0e-2147483647" must not wrap
    // round to a precision of none (±0.5), and no exponent can make an int overflow.
    constexpr std::int64_t cap = max_decimals;
    const std::size_t e = text.find_first_of("eE");
    const std::string_view mantissa = text.substr(0, e);
    const std::size_t point = mantissa.find('.');
    std::int64_t decimals = point == std::string_view::npos ? 0 : static_cast<std::int64_t>(mantissa.size() - point - 1);
    if (e != std::string_view::npos) {
        std::string_view rest = text.substr(e + 1);
        const bool negative = !rest.empty() && rest.front() == '-';
        if (!rest.empty() && (rest.front() == '+' || rest.front() == '-')) rest.remove_prefix(1);
        std::int64_t exponent = 0;  // saturates: past 2·cap it changes nothing
        for (const char c : rest) {
            if (c < '0' || c > '9') break;
            exponent = std::min<std::int64_t>(exponent * 10 + (c - '0'), 4 * cap + decimals);
        }
        decimals += negative ? exponent : -exponent;
    }
    return static_cast<int>(std::clamp<std::int64_t>(decimals, 0, cap));
}

std::vector<GivenStage> read_answers(std::string_view text, const std::string& origin, MemoryBudget* budget) {
    std::size_t first = 0;
    while (first < text.size() && (text[first] == ' ' || text[first] == '\n' || text[first] == '\t' || text[first] == '\r'))
        ++first;
    if (first < text.size() && (text[first] == '{' || text[first] == '['))
        return AnswersParser(text, origin, budget).document();
    return read_csv(text, origin, budget);
}

std::vector<GivenStage> read_answers(const InputText& input, MemoryBudget* budget) {
    try {
        std::vector<GivenStage> given = read_answers(input.text, input.origin, budget);
        input.require_unchanged();
        return given;
    } catch (const DataError&) {
        input.require_unchanged();  // a shortened file is what went wrong, if it was
        throw;
    }
}

}  // namespace attntrace
