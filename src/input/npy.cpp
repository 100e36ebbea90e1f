#include "input/npy.hpp"

#include "core/error.hpp"
#include "input/tensor_bytes.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <optional>

namespace attntrace {
namespace {

struct NpyHeader {
    std::string descr;
    bool fortran_order = false;
    std::vector<std::size_t> shape;
};

// The header is read by a parser of that one form, never evaluated:
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// String keys in any order, each of 'descr', 'fortran_order' and 'shape' exactly once and no
// other; a string, True or False, and a tuple of non-negative integers ("()" for a 0-d array,
// "(5,)" for one dimension; a trailing comma is allowed, as Python allows it).
class NpyHeaderParser {
public:
    NpyHeaderParser(std::string_view text, const std::string& where) : text_(text), where_(where) {}

    NpyHeader parse() {
        NpyHeader header;
        bool seen_descr = false, seen_order = false, seen_shape = false;
        skip_space();
        expect('{', "expected '{': the header is a Python dictionary");
        while (true) {
            skip_space();
            if (take('}')) break;
            const std::size_t key_at = at_;
            const std::string key = string_literal("expected a key in quotes, such as 'shape'");
            skip_space();
            expect(':', "expected ':' after the key");
            skip_space();
            const auto once = [&](bool& seen) {
                if (seen) fail(fmt::format("'{}' appears twice", key), key_at);
                seen = true;
            };
            if (key == "descr") {
                once(seen_descr);
                if (peek() == '[')  // [('x', '<f4'), ('y', '<i8')]: named fields
                    throw DataError(fmt::format("{}: unsupported dtype: a structured array (a list of named fields); "
                                                "attntrace reads plain arrays of float16, float32 or float64",
                                                where_));
                header.descr = string_literal("expected the dtype in quotes, such as '<f4'");
            } else if (key == "fortran_order") {
                once(seen_order);
                header.fortran_order = boolean();
            } else if (key == "shape") {
                once(seen_shape);
                header.shape = tuple();
            } else {
                fail(fmt::format("unexpected key '{}' (the header holds 'descr', 'fortran_order' and 'shape')",
                                 printable(key, 24)),
                     key_at);
            }
            skip_space();
            if (take(',')) continue;
            if (take('}')) break;
            fail("expected ',' or '}' after the value");
        }
        skip_space();
        if (at_ != text_.size()) fail("text after the dictionary's closing '}'");
        for (const auto& [seen, name] : {std::pair{seen_descr, "descr"}, {seen_order, "fortran_order"}, {seen_shape, "shape"}})
            if (!seen)
                throw DataError(fmt::format("{}: the .npy header has no '{}' (it needs 'descr', 'fortran_order' and "
                                            "'shape'): {}",
                                            where_, name, shown()));
        return header;
    }

private:
    [[noreturn]] void fail(const std::string& what, std::size_t at) const {
        throw DataError(fmt::format("{}: malformed .npy header: {} (character {}): {}", where_, what, at + 1, shown()));
    }
    [[noreturn]] void fail(const std::string& what) const { fail(what, at_); }

    // The header as messages show it: without its padding, printable.
    std::string shown() const {
        const std::size_t end = text_.find_last_not_of(" \t\r\n\f");
        return printable(text_.substr(0, end == std::string_view::npos ? 0 : end + 1), 120);
    }

    char peek() const { return at_ < text_.size() ? text_[at_] : '\0'; }
    bool take(char c) {
        if (at_ >= text_.size() || text_[at_] != c) return false;
        ++at_;
        return true;
    }
    void expect(char c, const char* what) {
        if (!take(c)) fail(what);
    }
    // Python's white space between tokens (a header ends in spaces before its '\n').
    void skip_space() {
        while (at_ < text_.size() && std::strchr(" \t\r\n\f", text_[at_]) && text_[at_] != '\0') ++at_;
    }

    // 'text' or "text", without escapes (no dtype a .npy of numbers has needs one).
    std::string string_literal(const char* what) {
        const char quote = peek();
        if (quote != '\'' && quote != '"') fail(what);
        const std::size_t start = ++at_;
        while (at_ < text_.size() && text_[at_] != quote) {
            if (text_[at_] == '\\') fail("escape sequences in strings are not read");
            if (text_[at_] == '\n') break;
            ++at_;
        }
        if (at_ >= text_.size() || text_[at_] != quote) fail("unterminated string", start - 1);
        return std::string(text_.substr(start, at_++ - start));
    }

    bool boolean() {
        for (const auto& [word, value] : {std::pair{std::string_view("True"), true}, {std::string_view("False"), false}}) {
            if (!text_.substr(at_).starts_with(word)) continue;
            const std::size_t end = at_ + word.size();
            if (end < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[end])) || text_[end] == '_')) break;
            at_ = end;
            return value;
        }
        fail("expected True or False for 'fortran_order'");
    }

    std::size_t integer() {
        const std::size_t start = at_;
        std::size_t value = 0;
        while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') {
            if (__builtin_mul_overflow(value, 10, &value) ||
                __builtin_add_overflow(value, static_cast<std::size_t>(text_[at_] - '0'), &value))
                fail("a dimension too large for 64 bits", start);
            ++at_;
        }
        if (at_ == start) fail("expected a non-negative integer in the shape");
        return value;
    }

    std::vector<std::size_t> tuple() {
        std::vector<std::size_t> shape;
        const std::size_t start = at_;
        expect('(', "expected the shape as a tuple, such as (3, 4)");
        skip_space();
        if (take(')')) return shape;  // (): a 0-d array
        while (true) {
            shape.push_back(integer());
            skip_space();
            if (take(',')) {
                skip_space();
                if (take(')')) return shape;
                continue;
            }
            if (take(')')) {
                if (shape.size() == 1)
                    fail(fmt::format("({}) is not a tuple: a shape of one dimension is written ({},)", shape[0], shape[0]),
                         start);
                return shape;
            }
            fail("expected ',' or ')' in the shape");
        }
    }

    std::string_view text_;
    const std::string& where_;
    std::size_t at_ = 0;
};

struct NpyType {
    ElementType type;
    bool big_endian;
};

// '<f2', '>f4', '=f8' (this machine's order); nullopt for anything else.
std::optional<NpyType> npy_type(std::string_view descr) {
    if (descr.size() != 3 || descr[1] != 'f' || !std::strchr("<>=", descr[0]) || descr[0] == '\0') return std::nullopt;
    const bool big = descr[0] == '>' || (descr[0] == '=' && host_is_big_endian);
    switch (descr[2]) {
    case '2': return NpyType{ElementType::float16, big};
    case '4': return NpyType{ElementType::float32, big};
    case '8': return NpyType{ElementType::float64, big};
    default: return std::nullopt;
    }
}

// What a dtype we do not read holds, in words: " (64-bit signed integers)", or "" when the
// text is not one NumPy writes.
std::string npy_type_words(std::string_view descr) {
    if (!descr.empty() && std::strchr("<>=|", descr[0]) && descr[0] != '\0') descr.remove_prefix(1);
    if (descr.empty()) return "";
    const char kind = descr[0];
    std::size_t size = 0;
    const std::string_view digits = descr.substr(1);
    const bool sized = !digits.empty() && digits.size() <= 4 &&
                       std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (sized) std::from_chars(digits.data(), digits.data() + digits.size(), size);  // 1 to 4 digits, all read
    // After the kind, NumPy writes the size in bytes ('<i8'), with a unit for dates ('<M8[ns]'),
    // or nothing ('|O'): other text is no dtype of NumPy's.
    if (!sized && !digits.empty() && kind != 'M' && kind != 'm') return "";
    const std::string bits = sized ? fmt::format("{}-bit ", size * 8) : "";
    switch (kind) {
    case 'b': return " (booleans)";
    case 'i': return fmt::format(" ({}signed integers)", bits);
    case 'u': return fmt::format(" ({}unsigned integers)", bits);
    case 'f': return fmt::format(" ({}floats)", bits);
    case 'c': return fmt::format(" ({}complex numbers)", bits);
    case 'O': return " (Python objects)";
    case 'S':
    case 'a': return " (byte strings)";
    case 'U': return " (Unicode strings)";
    case 'V': return " (raw bytes)";
    case 'M': return " (dates and times)";
    case 'm': return " (time differences)";
    default: return "";
    }
}

DataError unsupported_npy_type(const std::string& where, std::string_view descr) {
    std::string words = npy_type_words(descr);
    if (descr.size() == 3 && descr[0] == '|' && descr[1] == 'f')  // '|' is for types of one byte
        words = " ('|' says byte order does not matter, but a float of several bytes needs '<' or '>')";
    return DataError(fmt::format("{}: unsupported dtype '{}'{}: attntrace reads float16, float32 and float64 "
                                 "('<f2', '<f4', '<f8', or '>' for big-endian); convert with array.astype(np.float32)",
                                 where, printable(descr, 24), words));
}

}  // namespace

Tensor read_npy(std::string_view bytes, const std::string& where) {
    if (!bytes.starts_with(npy_magic))
        throw DataError(fmt::format("{}: not a .npy file: it does not start with NumPy's magic string \\x93NUMPY", where));
    if (bytes.size() < 8) throw DataError(fmt::format("{}: truncated: the file ends inside the .npy header", where));
    const int major = static_cast<unsigned char>(bytes[6]), minor = static_cast<unsigned char>(bytes[7]);
    if (major < 1 || major > 3 || minor != 0)
        throw DataError(fmt::format("{}: unknown .npy format version {}.{}: attntrace reads versions 1.0, 2.0 and 3.0",
                                    where, major, minor));
    const std::size_t header_start = major == 1 ? 10 : 12;  // after the 2- or 4-byte length
    if (bytes.size() < header_start)
        throw DataError(fmt::format("{}: truncated: the file ends inside the .npy header", where));
    const std::size_t header_length = major == 1 ? little<std::uint16_t>(bytes, 8) : little<std::uint32_t>(bytes, 8);
    if (header_length > bytes.size() - header_start)
        throw DataError(fmt::format("{}: truncated: the .npy header is {} bytes long, but only {} bytes follow its length",
                                    where, header_length, bytes.size() - header_start));
    const std::string_view header = bytes.substr(header_start, header_length);
    // Versions 1.0 and 2.0 are latin-1, which any bytes are; 3.0 is UTF-8.
    if (major == 3 && !is_utf8(header))
        throw DataError(fmt::format("{}: malformed .npy header: a version 3.0 header is UTF-8, and this one is not", where));
    if (header.empty() || header.back() != '\n')
        throw DataError(fmt::format("{}: malformed .npy header: it does not end in a newline (\\n)", where));
    const NpyHeader parsed = NpyHeaderParser(header.substr(0, header.size() - 1), where).parse();

    const auto type = npy_type(parsed.descr);
    if (!type) throw unsupported_npy_type(where, parsed.descr);
    const auto expected = data_bytes(parsed.shape, type->type);
    if (!expected)
        throw DataError(fmt::format("{}: shape {} is too large: its size in bytes does not fit 64 bits", where,
                                    shape_text(parsed.shape)));
    const std::string_view data = bytes.substr(header_start + header_length);
    if (data.size() < *expected)
        throw DataError(fmt::format("{}: truncated: the header announces {} bytes of data, the file holds {}", where,
                                    *expected, data.size()));
    if (data.size() > *expected)
        throw DataError(fmt::format("{}: trailing bytes: the header announces {} bytes of data, the file holds {}", where,
                                    *expected, data.size()));
    Tensor tensor;
    tensor.shape = parsed.shape;
    tensor.type = type->type;
    tensor.big_endian = type->big_endian;
    tensor.fortran_order = parsed.fortran_order;
    tensor.data = as_bytes(data);
    tensor.bytes = *expected;
    return tensor;
}

// The .npy header attntrace writes, as NumPy's own writer lays it out: the dictionary with
// its keys in order, room for the first dimension to grow to 21 digits, then spaces and a
// '\n' so that the data starts at a multiple of 64 bytes (1 to 64 of them: NumPy adds a
// whole 64 when the text ends on a multiple already).
std::string npy_header(std::string_view descr, const std::vector<std::size_t>& shape) {
    std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, shape_text(shape));
    if (!shape.empty()) dict.append(21 - std::to_string(shape.front()).size(), ' ');
    const std::size_t padding = 64 - (10 + dict.size() + 1) % 64;
    std::string out(npy_magic);
    out += '\x01';  // version 1.0
    out += '\x00';
    put_little(out, static_cast<std::uint16_t>(dict.size() + padding + 1));
    out += dict;
    out.append(padding, ' ');
    out += '\n';
    return out;
}

std::string write_npy(const Matrix& matrix, ElementType type, bool vector) {
    const std::string data = encoded_numbers(matrix, type, vector ? "the vector" : "the matrix");
    return npy_header(type == ElementType::float32 ? "<f4" : "<f8", written_shape(matrix, vector)) + data;
}

}  // namespace attntrace
