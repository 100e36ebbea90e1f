#include "input/json_text.hpp"

#include "core/error.hpp"
#include "input/json_hints.hpp"
#include "input/json_numbers.hpp"
#include "util/hash_index.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <omp.h>
#include <optional>
#include <system_error>
#include <thread>
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

// A JSON parser written for this job (RFC 8259, strict): it builds the same document type
// nlohmann's parser would, with three differences that matter here. Arrays holding only
// numbers are stored packed, as one binary value of doubles (an N×64 embeddings array then
// costs 8 bytes a number instead of a 16-byte node each, and is read at from_chars speed).
// Duplicate keys are refused with their JSON pointer. Every error names line and column.
class Parser {
public:
    // `threads` > 1 lets a long array of rows be read in two halves at once. `budget`, when
    // given, is charged for what the document holds as it is built.
    Parser(std::string_view text, const std::string& origin, int threads, MemoryBudget* budget)
        : text_(text), origin_(origin), threads_(threads), budget_(budget) {}

    Json document() {
        if (text_.starts_with("\xEF\xBB\xBF")) pos_ = 3;  // a UTF-8 byte order mark
        skip_space();
        Json doc = value();
        skip_space();
        if (pos_ < text_.size()) {
            const std::string hint = hint_at(text_, pos_, JsonSlot::after_document);
            fail(pos_, fmt::format("text after the end of the JSON document{}{}", hint.empty() ? "" : ": ", hint));
        }
        return doc;
    }

private:
    struct Frame {
        bool object = false;
        std::string key;        // objects: the key of the value being read
        std::size_t index = 0;  // arrays: the index of the value being read
    };

    [[noreturn]] void fail(std::size_t at, std::string_view reason) const { refuse(at, fmt::format("invalid JSON: {}", reason)); }

    // Valid JSON that attntrace still cannot take (nesting, a number beyond double).
    [[noreturn]] void refuse(std::size_t at, std::string_view message) const {
        const auto where = locate(text_, at);
        throw DataError(fmt::format("{}:{}:{}: {}", origin_, where.line, where.column, message));
    }

    [[noreturn]] void unexpected(std::string_view expected, JsonSlot slot) const {
        if (pos_ >= text_.size()) fail(pos_, fmt::format("unexpected end of input; expected {}", expected));
        const std::string hint = hint_at(text_, pos_, slot);
        fail(pos_, fmt::format("expected {}, found {}{}{}", expected, shown_at(text_, pos_), hint.empty() ? "" : ": ", hint));
    }

    [[noreturn]] void trailing_comma(std::size_t comma, char closing) const {
        fail(comma, fmt::format("trailing comma: JSON allows no comma before the closing '{}', so remove this one", closing));
    }

    [[noreturn]] void not_finite(std::size_t at) const {
        fail(at, "NaN and Infinity are not JSON numbers: every number must be finite");
    }

    std::string pointer() const {
        std::string out;
        for (const auto& frame : frames_) out = frame.object ? pointer_child(out, frame.key) : pointer_child(out, frame.index);
        return out;
    }

    void skip_space() {
        while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t' || text_[pos_] == '\r'))
            ++pos_;
    }

    char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

    static bool is_digit(char c) { return c >= '0' && c <= '9'; }
    static bool starts_number(char c) { return c == '-' || is_digit(c); }

    void enter(std::size_t at, bool object) {
        if (frames_.size() >= static_cast<std::size_t>(max_json_depth))
            refuse(at, fmt::format("JSON nested deeper than {} levels", max_json_depth));
        frames_.push_back({object, {}, 0});
    }

    static constexpr std::string_view a_value = "a value (object, array, string, number, true, false or null)";

    Json value() {
        switch (peek()) {
        case '{': return object();
        case '[': return array();
        case '"': {
            std::string text = string();
            charge(node_bytes + heap_bytes(text));
            return Json(std::move(text));
        }
        default:
            if (starts_number(peek())) return number_value();
            if (const auto word = json_word_at(text_, pos_); !word.empty()) return literal(word);
            unexpected(a_value, JsonSlot::value);
        }
    }

    // true, false or null; any other bare word is refused with a hint.
    Json literal(std::string_view word) {
        if (word == "true" || word == "false" || word == "null") {
            pos_ += word.size();
            return word == "null" ? Json(nullptr) : Json(word == "true");
        }
        if (is_not_finite_word(word)) not_finite(pos_);
        unexpected(a_value, JsonSlot::value);
    }

    Json object() {
        const std::size_t start = pos_;
        enter(pos_, true);
        ++pos_;  // '{'
        charge(node_bytes);
        skip_space();
        // Most objects with many members map words to vectors: try reading them packed.
        if (peek() == '"') {
            Json words;
            if (word_table(words)) {
                frames_.pop_back();
                return words;
            }
            pos_ = start + 1;  // something else is in it: read it again, member by member
        }
        Json result = Json::object();
        // Gathered with plain keys first: the object's own vector holds pair<const string,
        // Json>, which its growth would copy rather than move (the const key's copy may throw),
        // and a member may be a matrix of megabytes.
        std::vector<std::pair<std::string, Json>> members;
        std::unordered_set<std::string> keys;
        skip_space();
        if (peek() == '}') {
            ++pos_;
            frames_.pop_back();
            return result;
        }
        while (true) {
            skip_space();
            if (peek() != '"') unexpected("a string key", JsonSlot::key);
            std::string key = string();
            frames_.back().key = key;
            if (!keys.insert(key).second) {
                throw DataError(fmt::format("{}: {}: duplicate key \"{}\": a key may appear once in an object",
                                            origin_, show_pointer(pointer()), printable(key)));
            }
            skip_space();
            if (peek() != ':') unexpected("':' after the key", JsonSlot::colon);
            ++pos_;
            skip_space();
            Json member = value();
            charge(member_bytes + heap_bytes(key));
            members.emplace_back(std::move(key), std::move(member));  // unique: checked above
            skip_space();
            if (peek() == ',') {
                const std::size_t comma = pos_++;
                skip_space();
                if (peek() == '}') trailing_comma(comma, '}');
                continue;
            }
            if (peek() == '}') break;
            unexpected("',' or '}' after an object member", JsonSlot::after_item);
        }
        ++pos_;
        frames_.pop_back();
        auto& object = static_cast<Json::object_t::Container&>(result.get_ref<Json::object_t&>());
        object.reserve(members.size());
        for (auto& [key, member] : members) object.emplace_back(std::move(key), std::move(member));
        return result;
    }


    Json array() {
        const std::size_t start = pos_;
        enter(pos_, false);
        ++pos_;  // '['
        skip_space();
        if (peek() == ']') {
            ++pos_;
            frames_.pop_back();
            return Json::array();
        }
        // Most arrays here are vectors: try reading only numbers, straight into packed form.
        if (starts_number(peek())) {
            if (numbers_only()) {
                frames_.pop_back();
                return pack(numbers_);
            }
            pos_ = start + 1;  // something else is in it: read it again, element by element
            skip_space();
        }
        // Tokens: strings only, packed into one block of text.
        if (peek() == '"') {
            Json strings;
            if (strings_only(strings)) {
                frames_.pop_back();
                return strings;
            }
            pos_ = start + 1;  // something else is in it: read it again, element by element
            skip_space();
        }
        // A matrix: rows holding only numbers, all of one length, packed into one block.
        if (peek() == '[' && frames_.size() < static_cast<std::size_t>(max_json_depth)) {
            Json matrix;
            if (matrix_rows(matrix)) {
                frames_.pop_back();
                return matrix;
            }
            pos_ = start + 1;  // not a matrix: read it again, element by element
            skip_space();
        }
        Json items = Json::array();
        charge(node_bytes);
        while (true) {
            skip_space();
            frames_.back().index = items.size();
            items.push_back(value());
            charge(element_bytes);
            skip_space();
            if (peek() == ',') {
                const std::size_t comma = pos_++;
                skip_space();
                if (peek() == ']') trailing_comma(comma, ']');
                continue;
            }
            if (peek() == ']') break;
            unexpected("',' or ']' after an array element", JsonSlot::after_item);
        }
        ++pos_;
        frames_.pop_back();
        return items;
    }

    // An object whose every member is a vector of numbers, all of one length (an embeddings
    // object), read into one packed value (layout: PackedWords). False, with pos_ somewhere
    // inside, at the first thing that does not fit: a value of another kind or length, a key
    // holding a NUL, or a syntax error, which the member-by-member reading then reports
    // where it is.
    bool word_table(Json& result) {
        std::string keys;
        std::vector<std::uint64_t> ends;
        std::vector<double> rows;
        std::size_t width = 0;
        while (true) {
            skip_space();
            if (peek() != '"') return false;
            std::string key = string();
            if (key.find('\0') != std::string::npos) return false;
            skip_space();
            if (peek() != ':') return false;
            ++pos_;
            skip_space();
            if (peek() != '[' || frames_.size() >= static_cast<std::size_t>(max_json_depth)) return false;
            ++pos_;
            skip_space();
            if (!starts_number(peek()) || !numbers_only()) return false;
            if (width == 0) width = numbers_.size();
            if (numbers_.size() != width) return false;
            charge(key.size() + sizeof(std::uint64_t) + width * sizeof(double) + HashIndex::entry_bytes);
            keys += key;
            ends.push_back(keys.size());
            rows.insert(rows.end(), numbers_.begin(), numbers_.end());
            skip_space();
            if (peek() == ',') {
                ++pos_;
                continue;
            }
            if (peek() != '}') return false;
            ++pos_;
            break;
        }
        const auto key_of = [&](std::size_t i) {
            const std::size_t from = i == 0 ? 0 : ends[i - 1];
            return std::string_view(keys).substr(from, ends[i] - from);
        };
        if (const auto repeat = HashIndex(ends.size(), key_of).first_repeat(key_of)) {
            frames_.back().key = std::string(key_of(*repeat));
            throw DataError(fmt::format("{}: {}: duplicate key \"{}\": a key may appear once in an object", origin_,
                                        show_pointer(pointer()), printable(key_of(*repeat))));
        }
        result = pack_words(keys, ends, rows, width);
        return true;
    }

    // [count][rows: count × width doubles][key ends: count × uint64][keys], subtype
    // words_flag | width.
    Json pack_words(const std::string& keys, const std::vector<std::uint64_t>& ends, const std::vector<double>& rows,
                    std::size_t width) {
        const std::uint64_t count = ends.size();
        std::vector<std::uint8_t> bytes(sizeof count + rows.size() * sizeof(double) + ends.size() * sizeof(std::uint64_t) +
                                        keys.size());
        std::uint8_t* at = bytes.data();
        const auto put = [&at](const void* data, std::size_t size) {
            if (size > 0) std::memcpy(at, data, size);
            at += size;
        };
        put(&count, sizeof count);
        put(rows.data(), rows.size() * sizeof(double));
        put(ends.data(), ends.size() * sizeof(std::uint64_t));
        put(keys.data(), keys.size());
        charge(node_bytes + container_bytes);
        return Json::binary(std::move(bytes), words_flag | width);
    }

    // The strings of an array up to its closing ']', packed as [count][ends: count × uint64]
    // [text] with subtype strings_flag; false at the first element that is not a string (or a
    // string holding a NUL), or at a syntax error, which the element-wise reading reports.
    bool strings_only(Json& result) {
        std::string text;
        std::vector<std::uint64_t> ends;
        while (true) {
            skip_space();
            if (peek() != '"') return false;
            const std::string item = string();
            if (item.find('\0') != std::string::npos) return false;
            charge(item.size() + sizeof(std::uint64_t));
            text += item;
            ends.push_back(text.size());
            skip_space();
            if (peek() == ',') {
                ++pos_;
                continue;
            }
            if (peek() != ']') return false;
            ++pos_;
            break;
        }
        const std::uint64_t count = ends.size();
        std::vector<std::uint8_t> bytes(sizeof count + ends.size() * sizeof(std::uint64_t) + text.size());
        std::memcpy(bytes.data(), &count, sizeof count);
        std::memcpy(bytes.data() + sizeof count, ends.data(), ends.size() * sizeof(std::uint64_t));
        if (!text.empty()) std::memcpy(bytes.data() + sizeof count + ends.size() * sizeof(std::uint64_t), text.data(), text.size());
        charge(node_bytes + container_bytes);
        result = Json::binary(std::move(bytes), strings_flag);
        return true;
    }

    enum class Rows { closed, reached, not_a_matrix };

    // Reads rows of numbers, each `width` long (0: the first row sets it), appending their
    // bytes to `out`: until the array's ']' (consumed: closed), until pos_ is at `stop` between
    // rows (reached), or until a row that is not numbers of that length (not_a_matrix). Syntax
    // errors inside the rows are raised where they are, as the element-wise reading would.
    Rows matrix_rows_until(std::size_t stop, std::vector<std::uint8_t>& out, std::size_t& width) {
        bool first_row = true;
        while (true) {
            if (pos_ == stop) return Rows::reached;
            if (peek() != '[') return Rows::not_a_matrix;
            const std::size_t row_start = pos_;
            ++pos_;
            skip_space();
            if (!starts_number(peek()) || !numbers_only()) return Rows::not_a_matrix;
            if (width == 0) width = numbers_.size();
            if (numbers_.size() != width) return Rows::not_a_matrix;
            if (first_row) {
                reserve_rows(out, width, pos_ - row_start);
                first_row = false;
            }
            const auto* bytes = reinterpret_cast<const std::uint8_t*>(numbers_.data());
            out.insert(out.end(), bytes, bytes + numbers_.size() * sizeof(double));
            charge(numbers_.size() * sizeof(double));
            skip_space();
            if (peek() == ',') {
                ++pos_;
                skip_space();
                continue;
            }
            if (peek() == ']') {
                ++pos_;
                return Rows::closed;
            }
            unexpected("',' or ']' after an array element", JsonSlot::after_item);
        }
    }

    // Room for rows like the first one up to the end of the text (the matrix is usually most
    // of it), so that a long matrix is written once, not copied at every doubling of its
    // buffer. Pages reserved and never written cost no memory. Capped: a short first row in
    // a huge text must not reserve gigabytes.
    void reserve_rows(std::vector<std::uint8_t>& out, std::size_t width, std::size_t row_chars) const {
        constexpr std::size_t cap = std::size_t{256} << 20;
        const std::size_t left = text_.size() - std::min(pos_, text_.size());
        const std::size_t rows = left / row_chars + left / (row_chars * 16) + 1;  // plus 1/16 for longer rows
        out.reserve(out.size() + std::min(cap, rows * width * sizeof(double)));
    }

    // The rows of a matrix, packed; false when the array is not one. A long one is read in two
    // halves at once: the second half starts at a guessed row boundary near the middle, and
    // its result is used only if this parser, reading from the start, arrives exactly there.
    // A wrong guess (inside a string, in another array) costs the helper's time, never
    // correctness, and errors are raised by the sequential reading, at their place.
    bool matrix_rows(Json& result) {
        std::vector<std::uint8_t> numbers;
        std::size_t width = 0;
        const std::size_t split = threads_ > 1 && text_.size() - pos_ >= halves_from
                                      ? row_start_after(pos_ + (text_.size() - pos_) / 2)
                                      : std::string_view::npos;
        if (split == std::string_view::npos) {
            if (matrix_rows_until(split, numbers, width) != Rows::closed) return false;
        } else {
            struct Half {
                std::vector<std::uint8_t> numbers;
                std::size_t width = 0;
                std::size_t end = 0;
                bool complete = false;
            } second;
            // Whatever stops the helper (a syntax error, even a failed allocation) only leaves
            // its half incomplete: the sequential reading then does the work and meets the
            // same problem, if there is one, where it is. Nothing may leave the thread, where
            // an exception would end the program.
            const auto read_second_half = [&second, split, this]() noexcept {
                try {
                    Parser other(text_, origin_, 1, nullptr);  // charged below, once joined
                    other.pos_ = split;
                    if (other.matrix_rows_until(std::string_view::npos, second.numbers, second.width) == Rows::closed) {
                        second.end = other.pos_;
                        second.complete = true;
                    }
                } catch (...) {
                    second.complete = false;
                }
            };
            std::optional<std::jthread> helper;
            try {
                helper.emplace(read_second_half);
            } catch (const std::system_error&) {
                // no thread to be had: the sequential reading below does all the rows
            }
            const Rows first = matrix_rows_until(split, numbers, width);
            if (helper) helper->join();
            if (first == Rows::not_a_matrix) return false;
            if (first == Rows::reached) {
                if (second.complete && second.width == width) {
                    charge(second.numbers.size());
                    numbers.insert(numbers.end(), second.numbers.begin(), second.numbers.end());
                    pos_ = second.end;
                } else if (matrix_rows_until(std::string_view::npos, numbers, width) != Rows::closed) {
                    return false;
                }
            }
        }
        charge(node_bytes + container_bytes);
        result = Json::binary(std::move(numbers), width);  // the subtype holds the row length
        return true;
    }

    // The position of the '[' in the first "] , [" at or after `from` (white space allowed
    // around the comma), or npos within the next MiB.
    std::size_t row_start_after(std::size_t from) const {
        const std::size_t limit = std::min(text_.size(), from + (std::size_t{1} << 20));
        for (std::size_t i = text_.find(',', from); i != std::string_view::npos && i < limit; i = text_.find(',', i + 1)) {
            std::size_t before = i, after = i + 1;
            while (before > 0 && std::strchr(" \t\r\n", text_[before - 1]) && text_[before - 1] != '\0') --before;
            while (after < text_.size() && std::strchr(" \t\r\n", text_[after]) && text_[after] != '\0') ++after;
            if (before > 0 && text_[before - 1] == ']' && after < text_.size() && text_[after] == '[') return after;
        }
        return std::string_view::npos;
    }

    // Reads numbers into numbers_ up to the closing ']' (true), or stops at the first element
    // that is not a number (false). Syntax errors are reported where they are.
    bool numbers_only() {
        numbers_.clear();
        while (true) {
            skip_space();
            if (!starts_number(peek())) return false;
            if (numbers_.size() == numbers_.capacity() && numbers_.capacity() > scratch_charged_) {
                charge((2 * numbers_.capacity() + 1 - scratch_charged_) * sizeof(double));  // the doubling to come
                scratch_charged_ = 2 * numbers_.capacity() + 1;
            }
            numbers_.push_back(number());
            skip_space();
            if (peek() == ',') {
                ++pos_;
                continue;
            }
            if (peek() == ']') {
                ++pos_;
                return true;
            }
            unexpected("',' or ']' after an array element", JsonSlot::after_item);
        }
    }

    Json pack(const std::vector<double>& numbers) {
        charge(node_bytes + container_bytes + numbers.size() * sizeof(double));
        Json::binary_t bytes(std::vector<std::uint8_t>(numbers.size() * sizeof(double)));
        std::memcpy(bytes.data(), numbers.data(), bytes.size());
        return Json::binary(std::move(bytes));
    }

    Json number_value() {
        const std::size_t at = pos_;
        const double value = number();
        const std::string_view literal = text_.substr(at, pos_ - at);
        if (literal.find_first_of(".eE") == std::string_view::npos) {  // integers stay exact where they fit
            std::int64_t i = 0;
            if (std::from_chars(text_.data() + at, text_.data() + pos_, i).ec == std::errc()) return Json(i);
            std::uint64_t u = 0;
            if (std::from_chars(text_.data() + at, text_.data() + pos_, u).ec == std::errc()) return Json(u);
        }
        return Json(value);
    }

    [[noreturn]] void bad_number(std::size_t start) const {
        if (text_[start] == '-' && is_not_finite_word(json_word_at(text_, start + 1))) not_finite(start);  // -Infinity
        const std::string_view written = number_text_at(text_, start);
        if (const std::string hint = number_hint(written); !hint.empty())
            fail(start, fmt::format("invalid number '{}': {}", printable(written), hint));
        std::size_t end = pos_;
        while (end < text_.size() && end - start < 24 && std::strchr("0123456789+-.eE", text_[end]) && text_[end] != '\0') ++end;
        fail(start, fmt::format("invalid number '{}'", printable(text_.substr(start, std::max(end, pos_ + 1) - start))));
    }

    // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, as a finite double, correctly rounded
    // (json_numbers.hpp); the usual short decimal inline.
    double number() {
        if (double value; read_simple_number(text_, pos_, value)) return value;
        const std::size_t start = pos_;
        double value = 0;
        switch (read_number(text_, pos_, value)) {
        case NumberRead::ok: return value;
        case NumberRead::out_of_range:
            refuse(start, fmt::format("number out of range: {} does not fit a double", text_.substr(start, pos_ - start)));
        case NumberRead::malformed: break;
        }
        bad_number(start);
    }

    // A string literal from its opening quote: escapes decoded, UTF-8 checked.
    std::string string() {
        const std::size_t opening = pos_++;  // '"'
        std::string out;
        while (true) {
            const std::size_t run = pos_;
            while (pos_ < text_.size()) {
                const auto c = static_cast<unsigned char>(text_[pos_]);
                if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
                ++pos_;
            }
            out.append(text_.substr(run, pos_ - run));
            if (pos_ >= text_.size()) {
                closed_by_typographic_quote(opening);
                fail(pos_, "unexpected end of input inside a string (a '\"' is missing)");
            }
            const auto c = static_cast<unsigned char>(text_[pos_]);
            if (c == '"') {
                ++pos_;
                return out;
            }
            if (c == '\\') {
                escape(out);
            } else if (c == '\n' || c == '\r') {
                closed_by_typographic_quote(opening);
                fail(pos_, "a line break in a string: is its closing '\"' missing? (a line break inside a string is written \\n)");
            } else if (c < 0x20) {
                fail(pos_, fmt::format("control character U+{:04X} in a string: write it as an escape such as \\n or \\u{:04x}",
                                       static_cast<unsigned>(c), static_cast<unsigned>(c)));
            } else {
                const std::size_t length = utf8_sequence_length(text_.substr(pos_));
                if (length == 0) fail(pos_, fmt::format("ill-formed UTF-8 byte 0x{:02x} in a string", static_cast<unsigned>(c)));
                out.append(text_.substr(pos_, length));
                pos_ += length;
            }
        }
    }

    // A string that runs on to the end of its line or of the text was often meant to end at a
    // typographic quote: refused at the last one it holds, if any.
    void closed_by_typographic_quote(std::size_t opening) const {
        for (std::size_t at = pos_; at > opening + 1; --at)
            if (is_typographic_quote(text_.substr(at - 1)))
                fail(at - 1, fmt::format("a typographic quote '{}' where this string seems to end; JSON strings end "
                                         "with a straight double quote (\")",
                                         text_.substr(at - 1, 3)));
    }

    void escape(std::string& out) {
        const std::size_t at = pos_;
        ++pos_;  // '\\'
        const char c = peek();
        ++pos_;
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
        default: fail(at, fmt::format("invalid escape '\\{}' in a string", printable(std::string_view(&c, 1))));
        }
        char32_t code = hex4(at);
        if (code >= 0xD800 && code <= 0xDBFF) {  // a high surrogate must pair with a low one
            if (text_.substr(pos_, 2) != "\\u") fail(at, "a \\u escape for a lone surrogate: it needs its pair");
            pos_ += 2;
            const char32_t low = hex4(at);
            if (low < 0xDC00 || low > 0xDFFF) fail(at, "a \\u escape for a lone surrogate: it needs its pair");
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        } else if (code >= 0xDC00 && code <= 0xDFFF) {
            fail(at, "a \\u escape for a lone surrogate: it needs its pair");
        }
        append_utf8(out, code);
    }

    char32_t hex4(std::size_t at) {
        char32_t code = 0;
        for (int i = 0; i < 4; ++i, ++pos_) {
            const char h = peek();
            const int digit = is_digit(h) ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
            if (digit < 0) fail(at, "invalid \\u escape: it needs four hexadecimal digits");
            code = code * 16 + static_cast<char32_t>(digit);
        }
        return code;
    }

    std::string_view text_;
    const std::string& origin_;
    std::size_t pos_ = 0;
    std::vector<Frame> frames_;
    std::vector<double> numbers_;  // scratch of numbers_only(), reused from array to array
    std::size_t scratch_charged_ = 0;  // numbers of numbers_ already charged to the budget
    int threads_ = 1;
    MemoryBudget* budget_ = nullptr;

    // What the document costs, roughly as glibc and nlohmann lay it out: a value's slot in
    // its parent and a heap block of its own (object, array, string, binary); an object
    // member's key/value pair (held twice while the object is built) and its entry in the set
    // of keys seen; an array element's slot with the vector's room to grow.
    static constexpr std::uint64_t node_bytes = 64;
    static constexpr std::uint64_t container_bytes = 64;
    static constexpr std::uint64_t member_bytes = 160;
    static constexpr std::uint64_t element_bytes = 32;
    static std::uint64_t heap_bytes(const std::string& text) { return text.size() > 15 ? text.capacity() + 17 : 0; }

    void charge(std::uint64_t bytes) {
        if (budget_) budget_->charge(bytes);
    }

    static constexpr std::size_t halves_from = std::size_t{1} << 20;  // bytes left in the text
};

}  // namespace

Json parse_json(std::string_view text, const std::string& origin, MemoryBudget* budget) {
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
        throw DataError(fmt::format("{}: empty input: expected a JSON object", origin));
    if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
        const auto where = locate(text, nul);
        throw DataError(fmt::format("{}:{}:{}: invalid JSON: a NUL byte, which JSON text cannot contain", origin,
                                    where.line, where.column));
    }
    return Parser(text, origin, omp_get_max_threads(), budget).document();
}

std::pair<std::size_t, std::size_t> line_and_column(std::string_view text, std::size_t offset) {
    const Location where = locate(text, offset);
    return {where.line, where.column};
}

}  // namespace attntrace
