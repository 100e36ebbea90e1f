#include "input/json_text.hpp"

#include "core/error.hpp"
#include "util/hash_index.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
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
            const std::string hint = hint_at(pos_, Slot::after_document);
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

    // What the parser was reading when it met something else: a hint fits some mistakes only
    // in some places (an unquoted word is a key in one place and a value in another).
    enum class Slot { value, key, colon, after_item, after_document };

    [[noreturn]] void unexpected(std::string_view expected, Slot slot) const {
        if (pos_ >= text_.size()) fail(pos_, fmt::format("unexpected end of input; expected {}", expected));
        const std::string hint = hint_at(pos_, slot);
        fail(pos_, fmt::format("expected {}, found {}{}{}", expected, shown_at(pos_), hint.empty() ? "" : ": ", hint));
    }

    [[noreturn]] void trailing_comma(std::size_t comma, char closing) const {
        fail(comma, fmt::format("trailing comma: JSON allows no comma before the closing '{}', so remove this one", closing));
    }

    [[noreturn]] void not_finite(std::size_t at) const {
        fail(at, "NaN and Infinity are not JSON numbers: every number must be finite");
    }

    static bool is_word_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }

    // The bare word (letters, digits, '_') that starts at `at`, or "".
    std::string_view word_at(std::size_t at) const {
        if (at >= text_.size() || !is_word_start(text_[at])) return {};
        std::size_t end = at;
        while (end < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[end])) || text_[end] == '_')) ++end;
        return text_.substr(at, end - at);
    }

    // The characters of a number-like run at `at` (digits, signs, points, exponents).
    std::string_view number_text_at(std::size_t at) const {
        std::size_t end = at;
        while (end < text_.size() && end - at < 24 && std::strchr("0123456789+-.eE", text_[end]) && text_[end] != '\0') ++end;
        return text_.substr(at, end - at);
    }

    // The typographic quotes a word processor puts in place of ' and ": ‘ ’ “ ” „.
    static bool is_typographic_quote(std::string_view text) {
        return text.starts_with("\u2018") || text.starts_with("\u2019") || text.starts_with("\u201C") ||
               text.starts_with("\u201D") || text.starts_with("\u201E");
    }

    // What stands at `at`, for "found …": a word or a number whole, the two characters that
    // open a comment, or one character whole ('“', 'é'); control characters and bytes that are
    // not UTF-8 escaped by printable().
    std::string shown_at(std::size_t at) const {
        const std::string_view rest = text_.substr(at);
        if (rest.front() == '\'') return "a single quote";
        if (rest.starts_with("//") || rest.starts_with("/*")) return fmt::format("'{}'", rest.substr(0, 2));
        if (const auto word = word_at(at); !word.empty()) return fmt::format("'{}'", printable(word, 24));
        if (std::strchr(".+", rest.front()) && rest.size() > 1 && is_digit(rest[1]))
            return fmt::format("'{}'", number_text_at(at));
        const std::size_t length = std::max<std::size_t>(utf8_sequence_length(rest), 1);
        return fmt::format("'{}'", printable(rest.substr(0, length), 1));
    }

    // One clause on the likely mistake behind what stands at `at`, or "" when there is none
    // to give.
    std::string hint_at(std::size_t at, Slot slot) const {
        const std::string_view rest = text_.substr(at);
        if (rest.starts_with("//") || rest.starts_with("/*"))
            return "JSON has no comments, so remove it (a note for the learner can go in \"description\")";
        if (rest.front() == '\'') return single_quote_hint(at);
        if (is_typographic_quote(rest))
            return "a typographic quote, as word processors write them; JSON needs straight double quotes (\")";
        const std::string_view word = word_at(at);
        switch (slot) {
        case Slot::key:
            return word.empty() ? "" : fmt::format("keys need double quotes, as in \"{}\"", printable(word, 24));
        case Slot::value:
            if (!word.empty()) return bare_word_hint(word);
            return number_hint(number_text_at(at));
        case Slot::after_item:
            return word.empty() && !std::strchr("\"[{-0123456789", rest.front()) ? "" : "perhaps a ',' is missing before it";
        default: return "";
        }
    }

    // 'journey' → write "journey": the text up to the closing single quote on the same line.
    std::string single_quote_hint(std::size_t at) const {
        const std::size_t close = text_.find_first_of("'\n", at + 1);
        if (close == std::string_view::npos || text_[close] != '\'' || close - at > 41)
            return "JSON strings and keys use double quotes (\"), not single quotes";
        return fmt::format("JSON strings and keys use double quotes, as in \"{}\"", printable(text_.substr(at + 1, close - at - 1)));
    }

    // A word where a value should be: a Python or JavaScript spelling, or text without quotes.
    static std::string bare_word_hint(std::string_view word) {
        const std::string lower = fold_case(word);
        if (lower == "true" || lower == "false" || lower == "null")
            return fmt::format("write {}, as JSON spells true, false and null in lower case", lower);
        if (lower == "none" || lower == "undefined" || lower == "nil")
            return "write null, JSON's word for no value";
        return fmt::format("JSON's only bare words are true, false and null; text needs double quotes, as in \"{}\"",
                           printable(word, 24));
    }

    // ".5" → write 0.5, "+1" → write 1, "1." → write 1.0, "01" → write 1; "" when the text is
    // not a number even after that change.
    std::string number_hint(std::string_view text) const {
        if (text.find_first_of("0123456789") == std::string_view::npos) return "";
        std::string fixed;
        std::string_view reason;
        for (std::size_t i = 0; i < text.size(); ++i) {
            const char c = text[i];
            const bool sign_only = fixed.empty() || fixed == "-";
            if (c == '+' && i == 0) {
                reason = "a JSON number has no '+' sign";
                continue;
            }
            if (c == '0' && sign_only && i + 1 < text.size() && is_digit(text[i + 1])) {
                reason = "a JSON number does not start with a 0 followed by more digits";
                continue;
            }
            if (c == '.' && sign_only) reason = "a JSON number needs a digit on both sides of the point", fixed += '0';
            fixed += c;
            if (c == '.' && (i + 1 == text.size() || !is_digit(text[i + 1])))
                reason = "a JSON number needs a digit on both sides of the point", fixed += '0';
        }
        if (reason.empty() || !is_json_number(fixed)) return "";
        return fmt::format("write {} ({})", fixed, reason);
    }

    // Whether `text` is one JSON number, as this parser reads it.
    bool is_json_number(const std::string& text) const {
        try {
            return Parser(text, origin_, 1, nullptr).document().is_number();
        } catch (const DataError&) {
            return false;
        }
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
            if (const auto word = word_at(pos_); !word.empty()) return literal(word);
            unexpected(a_value, Slot::value);
        }
    }

    // true, false or null; any other bare word is refused with a hint.
    Json literal(std::string_view word) {
        if (word == "true" || word == "false" || word == "null") {
            pos_ += word.size();
            return word == "null" ? Json(nullptr) : Json(word == "true");
        }
        if (is_not_finite(word)) not_finite(pos_);
        unexpected(a_value, Slot::value);
    }

    static bool is_not_finite(std::string_view word) {
        const std::string lower = fold_case(word);
        return lower == "nan" || lower == "infinity" || lower == "inf";
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
            if (peek() != '"') unexpected("a string key", Slot::key);
            std::string key = string();
            frames_.back().key = key;
            if (!keys.insert(key).second) {
                throw DataError(fmt::format("{}: {}: duplicate key \"{}\": a key may appear once in an object",
                                            origin_, show_pointer(pointer()), printable(key)));
            }
            skip_space();
            if (peek() != ':') unexpected("':' after the key", Slot::colon);
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
            unexpected("',' or '}' after an object member", Slot::after_item);
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
            unexpected("',' or ']' after an array element", Slot::after_item);
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
            unexpected("',' or ']' after an array element", Slot::after_item);
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
            unexpected("',' or ']' after an array element", Slot::after_item);
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

    static constexpr double powers_of_ten[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                               1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                               1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

    // The usual number, "-0.123456": -?(0|[1-9][0-9]*)(\.[0-9]+)? with at most 19 digits in
    // all and no exponent, read in one tight loop. Anything else, errors included, returns
    // false with pos_ unmoved, and number() reads it the general way.
    bool simple_number(double& out) {
        const char* p = text_.data() + pos_;
        const char* const end = text_.data() + text_.size();
        const bool negative = p < end && *p == '-';
        p += negative;
        const char* const whole = p;
        std::uint64_t m = 0;  // wraps beyond 19 digits, which are refused below
        const auto digits = [&] {  // appends a run of digits to m; how many
            const char* const from = p;
            while (p < end && is_digit(*p)) m = m * 10 + static_cast<unsigned>(*p++ - '0');
            return p - from;
        };
        const std::ptrdiff_t whole_digits = digits();
        if (whole_digits == 0 || (*whole == '0' && whole_digits > 1)) return false;
        std::ptrdiff_t fraction_digits = 0;
        if (p < end && *p == '.') {
            ++p;
            fraction_digits = digits();
            if (fraction_digits == 0) return false;
        }
        if (p < end && (*p == 'e' || *p == 'E' || *p == '.')) return false;
        if (whole_digits + fraction_digits > 19 || m > (std::uint64_t{1} << 53)) return false;
        // m ≤ 2⁵³ and 10^k (k ≤ 19) are exact doubles: one division rounds correctly (Clinger).
        const double value = static_cast<double>(m) / powers_of_ten[fraction_digits];
        out = negative ? -value : value;
        pos_ = static_cast<std::size_t>(p - text_.data());
        return true;
    }

    // A number's text, checked against the grammar, with its digits as one integer m and a
    // power of ten e (m·10^e, the digits beyond the 19th dropped but counted).
    struct ScannedNumber {
        std::size_t start = 0;
        std::uint64_t mantissa = 0;
        int significant = 0, exponent = 0;
        bool negative = false;
        bool plain = true;  // no exponent part
    };

    [[noreturn]] void bad_number(std::size_t start) const {
        if (text_[start] == '-' && is_not_finite(word_at(start + 1))) not_finite(start);  // -Infinity
        const std::string_view written = number_text_at(start);
        if (const std::string hint = number_hint(written); !hint.empty())
            fail(start, fmt::format("invalid number '{}': {}", printable(written), hint));
        std::size_t end = pos_;
        while (end < text_.size() && end - start < 24 && std::strchr("0123456789+-.eE", text_[end]) && text_[end] != '\0') ++end;
        fail(start, fmt::format("invalid number '{}'", printable(text_.substr(start, std::max(end, pos_ + 1) - start))));
    }

    // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    ScannedNumber scan_number() {
        ScannedNumber n;
        n.start = pos_;
        const auto digits = [&](bool fraction) {
            const std::size_t from = pos_;
            for (; pos_ < text_.size() && is_digit(text_[pos_]); ++pos_) {
                if (n.mantissa == 0 && text_[pos_] == '0') {
                    n.exponent -= fraction;
                    continue;
                }
                if (++n.significant <= 19) {
                    n.mantissa = n.mantissa * 10 + static_cast<std::uint64_t>(text_[pos_] - '0');
                    n.exponent -= fraction;
                } else {
                    n.exponent += !fraction;  // dropped digits still count in the magnitude
                }
            }
            return pos_ > from;
        };
        n.negative = peek() == '-';
        if (n.negative) ++pos_;
        if (peek() == '0') ++pos_;
        else if (!digits(false)) bad_number(n.start);
        if (peek() == '.') {
            ++pos_;
            if (!digits(true)) bad_number(n.start);
        }
        if (peek() == 'e' || peek() == 'E') {
            n.plain = false;
            ++pos_;
            if (peek() == '+' || peek() == '-') ++pos_;
            const std::size_t from = pos_;
            while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
            if (pos_ == from) bad_number(n.start);
        }
        if (is_digit(peek())) bad_number(n.start);  // "01"
        return n;
    }

    // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, as a finite double, correctly rounded.
    double number() {
        if (double value; simple_number(value)) return value;
        const ScannedNumber n = scan_number();
        // Clinger's fast path: m ≤ 2⁵³ and 10^|e| ≤ 10²² are exact doubles, so one IEEE
        // multiplication or division rounds correctly. It covers most of what simple_number()
        // leaves, such as "4.35e+2".
        if (n.plain && n.significant <= 19 && n.mantissa <= (std::uint64_t{1} << 53) && n.exponent >= -22 && n.exponent <= 22) {
            const double m = static_cast<double>(n.mantissa);
            const double value = n.exponent < 0 ? m / powers_of_ten[-n.exponent] : m * powers_of_ten[n.exponent];
            return n.negative ? -value : value;
        }
        const char* first = text_.data() + n.start;
        const char* last = text_.data() + pos_;
        double value = 0;
        const auto [end, error] = std::from_chars(first, last, value);
        if (error == std::errc::result_out_of_range) {
            // Too small underflows to (nearly) 0, which is fine; too large is refused.
            value = std::strtod(std::string(first, last).c_str(), nullptr);
            if (!std::isfinite(value))
                refuse(n.start, fmt::format("number out of range: {} does not fit a double",
                                            std::string_view(first, static_cast<std::size_t>(last - first))));
        } else if (error != std::errc() || end != last) {
            bad_number(n.start);
        }
        return value;
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

Json packed_vector(const double* numbers, std::size_t count) {
    Json::binary_t bytes(std::vector<std::uint8_t>(count * sizeof(double)));
    if (count > 0) std::memcpy(bytes.data(), numbers, count * sizeof(double));
    return Json::binary(std::move(bytes));
}

Json packed_matrix(const double* numbers, std::size_t rows, std::size_t columns) {
    Json::binary_t bytes(std::vector<std::uint8_t>(rows * columns * sizeof(double)));
    if (rows * columns > 0) std::memcpy(bytes.data(), numbers, rows * columns * sizeof(double));
    return Json::binary(std::move(bytes), columns);  // the subtype holds the row length
}

Json packed_string_array(const std::vector<std::string>& strings) {
    std::vector<std::uint64_t> ends;
    std::string text;
    for (const auto& s : strings) {
        text += s;
        ends.push_back(text.size());
    }
    const std::uint64_t count = ends.size();
    std::vector<std::uint8_t> bytes(sizeof count + ends.size() * sizeof(std::uint64_t) + text.size());
    std::memcpy(bytes.data(), &count, sizeof count);
    if (!ends.empty()) std::memcpy(bytes.data() + sizeof count, ends.data(), ends.size() * sizeof(std::uint64_t));
    if (!text.empty()) std::memcpy(bytes.data() + sizeof count + ends.size() * sizeof(std::uint64_t), text.data(), text.size());
    return Json::binary(std::move(bytes), strings_flag);
}

bool is_packed_numbers(const Json& value) { return value.is_binary() && !value.get_binary().has_subtype(); }

bool is_packed_matrix(const Json& value) {
    return value.is_binary() && value.get_binary().has_subtype() &&
           !(value.get_binary().subtype() & (words_flag | strings_flag | float_rows_flag));
}

Json packed_float_rows(FloatRows rows) {
    std::vector<std::uint8_t> bytes(sizeof rows.data + sizeof rows.rows);
    std::memcpy(bytes.data(), &rows.data, sizeof rows.data);
    std::memcpy(bytes.data() + sizeof rows.data, &rows.rows, sizeof rows.rows);
    return Json::binary(std::move(bytes), float_rows_flag | rows.columns);
}

bool is_packed_float_rows(const Json& value) {
    return value.is_binary() && value.get_binary().has_subtype() && (value.get_binary().subtype() & float_rows_flag) &&
           !(value.get_binary().subtype() & (words_flag | strings_flag));
}

FloatRows packed_float_rows_of(const Json& value) {
    const auto& bytes = value.get_binary();
    FloatRows rows;
    std::memcpy(&rows.data, bytes.data(), sizeof rows.data);
    std::memcpy(&rows.rows, bytes.data() + sizeof rows.data, sizeof rows.rows);
    rows.columns = static_cast<std::size_t>(bytes.subtype() & ~float_rows_flag);
    return rows;
}

bool is_packed_strings(const Json& value) {
    return value.is_binary() && value.get_binary().has_subtype() && value.get_binary().subtype() == strings_flag;
}

PackedStrings packed_strings(const Json& value) {
    const auto& bytes = value.get_binary();
    PackedStrings strings;
    std::uint64_t count = 0;
    std::memcpy(&count, bytes.data(), sizeof count);
    strings.count = count;
    strings.ends = bytes.data() + sizeof count;
    strings.text = reinterpret_cast<const char*>(strings.ends + count * sizeof(std::uint64_t));
    return strings;
}

std::string_view PackedStrings::operator[](std::size_t i) const {
    std::uint64_t from = 0, to = 0;
    if (i > 0) std::memcpy(&from, ends + (i - 1) * sizeof from, sizeof from);
    std::memcpy(&to, ends + i * sizeof to, sizeof to);
    return {text + from, static_cast<std::size_t>(to - from)};
}

bool is_packed_words(const Json& value) {
    return value.is_binary() && value.get_binary().has_subtype() && (value.get_binary().subtype() & words_flag);
}

PackedWords packed_words(const Json& value) {
    const auto& bytes = value.get_binary();
    PackedWords words;
    std::uint64_t count = 0;
    std::memcpy(&count, bytes.data(), sizeof count);
    words.count = count;
    words.width = static_cast<std::size_t>(bytes.subtype() & ~words_flag);
    words.rows = bytes.data() + sizeof count;
    words.ends = words.rows + count * words.width * sizeof(double);
    words.keys = reinterpret_cast<const char*>(words.ends + count * sizeof(std::uint64_t));
    return words;
}

Json unpack_words(const Json& value) {
    const PackedWords words = packed_words(value);
    Json object = Json::object();
    for (std::size_t i = 0; i < words.count; ++i) {
        Json::binary_t row(std::vector<std::uint8_t>(words.width * sizeof(double)));
        words.copy_row(i, reinterpret_cast<double*>(row.data()));
        object[std::string(words.word(i))] = Json::binary(std::move(row));
    }
    return object;
}

std::string_view PackedWords::word(std::size_t i) const {
    std::uint64_t from = 0, to = 0;
    if (i > 0) std::memcpy(&from, ends + (i - 1) * sizeof from, sizeof from);
    std::memcpy(&to, ends + i * sizeof to, sizeof to);
    return {keys + from, static_cast<std::size_t>(to - from)};
}

void PackedWords::copy_row(std::size_t i, double* out) const {
    std::memcpy(out, rows + i * width * sizeof(double), width * sizeof(double));
}

std::size_t packed_size(const Json& value) { return value.get_binary().size() / sizeof(double); }

std::size_t packed_columns(const Json& value) { return static_cast<std::size_t>(value.get_binary().subtype()); }

std::size_t rows_of(const Json& value) {
    if (is_packed_float_rows(value)) return packed_float_rows_of(value).rows;
    return is_packed_matrix(value) ? packed_size(value) / packed_columns(value) : value.size();
}

void copy_packed(const Json& value, double* out) {
    const auto& bytes = value.get_binary();
    std::memcpy(out, bytes.data(), bytes.size());
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
    case Json::value_t::binary:
        if (is_packed_words(value)) return "an object";
        if (is_packed_strings(value)) return fmt::format("an array of {} strings", packed_strings(value).count);
        return is_packed_matrix(value) ? fmt::format("an array of {} rows of {} numbers", rows_of(value), packed_columns(value))
                                       : fmt::format("an array of {} numbers", packed_size(value));
    case Json::value_t::object: return value.empty() ? "an empty object" : "an object";
    default: return "a value of another kind";
    }
}

}  // namespace attntrace
