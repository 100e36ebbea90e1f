#include "input/tensors.hpp"

#include "core/error.hpp"
#include "input/limits.hpp"
#include "input/source.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <stdexcept>

namespace attntrace {
namespace {

// --- bytes ---------------------------------------------------------------------------------

// The unsigned little-endian integer of sizeof(T) bytes at `at`; the caller has checked that
// the bytes are there.
template <typename T>
T little(std::string_view bytes, std::size_t at) {
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) value |= std::uint64_t{static_cast<unsigned char>(bytes[at + i])} << (8 * i);
    return static_cast<T>(value);
}

template <typename T>
void put_little(std::string& out, T value) {
    for (std::size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

std::uint16_t byte_swapped(std::uint16_t x) { return __builtin_bswap16(x); }
std::uint32_t byte_swapped(std::uint32_t x) { return __builtin_bswap32(x); }
std::uint64_t byte_swapped(std::uint64_t x) { return __builtin_bswap64(x); }

// The element at `p` as its bit pattern, in this machine's byte order. `swap`: the file's
// order is the other one.
template <typename Bits>
Bits load_bits(const unsigned char* p, bool swap) {
    Bits bits;
    std::memcpy(&bits, p, sizeof bits);
    return swap ? byte_swapped(bits) : bits;
}

constexpr bool host_is_big_endian = std::endian::native == std::endian::big;

const unsigned char* as_bytes(std::string_view text) { return reinterpret_cast<const unsigned char*>(text.data()); }

std::uint32_t crc32_of(std::string_view bytes) {
    return static_cast<std::uint32_t>(::crc32_z(0, as_bytes(bytes), bytes.size()));
}

bool is_utf8(std::string_view text) {
    for (std::size_t at = 0; at < text.size();) {
        const std::size_t length = utf8_sequence_length(text.substr(at));
        if (length == 0) return false;
        at += length;
    }
    return true;
}

// The bytes an array of `shape` and `type` takes, or nullopt when counting them overflows
// 64 bits (a header can announce a shape such as (2**40, 2**40)).
std::optional<std::size_t> data_bytes(const std::vector<std::size_t>& shape, ElementType type) {
    std::size_t total = element_size(type);
    for (const std::size_t dimension : shape)
        if (__builtin_mul_overflow(total, dimension, &total)) return std::nullopt;
    return total;
}

// How messages name an array: its name, or "the array" for a .npy (which has none).
std::string array_label(const std::string& name) { return name.empty() ? "the array" : printable(name); }

// --- .npy ----------------------------------------------------------------------------------
// A .npy is the magic string "\x93NUMPY", a version (major, minor byte), the header's length
// (2 bytes little-endian in version 1.0, 4 in 2.0 and 3.0), the header — a Python dictionary
// literal ending in '\n' — and then the data, nothing after it.

constexpr std::string_view npy_magic = "\x93NUMPY";

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

// One .npy in `bytes`; `where` names it in messages (the path, or the archive and member).
// The data must be exactly what the header announces.
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

// --- .npz: a zip archive of .npy files -----------------------------------------------------
// Read from the end: the end-of-central-directory record (and the zip64 one, when there is
// one) gives the central directory, which lists each member with its sizes, CRC-32 and
// where its local header is; the data follows the local header.

constexpr std::uint32_t local_signature = 0x04034b50;
constexpr std::uint32_t central_signature = 0x02014b50;
constexpr std::uint32_t end_signature = 0x06054b50;
constexpr std::uint32_t zip64_end_signature = 0x06064b50;
constexpr std::uint32_t zip64_locator_signature = 0x07064b50;
constexpr std::size_t local_header_size = 30, central_header_size = 46, end_record_size = 22;
constexpr std::size_t zip64_end_size = 56, zip64_locator_size = 20;
constexpr std::uint32_t zip64_mark = 0xffffffff;  // "see the zip64 extra field"
constexpr std::uint16_t dos_date_1980 = 0x21;      // 1980-01-01, the date NumPy gives members too

struct Member {
    std::string name;
    std::uint16_t method = 0;
    std::uint32_t crc = 0;
    std::uint64_t compressed = 0, size = 0, local_offset = 0;
};

std::string method_name(std::uint16_t method) {
    switch (method) {
    case 1: return "shrink";
    case 2:
    case 3:
    case 4:
    case 5: return "reduce";
    case 6: return "implode";
    case 9: return "deflate64";
    case 12: return "bzip2";
    case 14: return "LZMA";
    case 93: return "zstd";
    case 95: return "xz";
    case 96: return "JPEG";
    case 97: return "WavPack";
    case 98: return "PPMd";
    case 99: return "AES encryption";
    default: return "an unknown method";
    }
}

class ZipReader {
public:
    ZipReader(std::string_view bytes, const std::string& origin) : bytes_(bytes), origin_(origin) { read_end_record(); }

    // The central directory, checked: one disk, no encryption, stored or deflated .npy
    // members of distinct names, all of them together no larger than `max_bytes`.
    std::vector<Member> members(std::uint64_t max_bytes, MemoryBudget* budget) const {
        std::vector<Member> members;
        std::set<std::string> names;
        std::uint64_t total = 0;
        std::size_t at = directory_offset_;
        const std::size_t end = directory_offset_ + directory_size_;
        for (std::uint64_t i = 0; i < entries_; ++i) {
            if (end - at < central_header_size || little<std::uint32_t>(bytes_, at) != central_signature)
                fail(fmt::format("entry {} of the central directory, at byte {}, is damaged (no entry signature)", i + 1, at));
            Member member;
            const std::uint16_t flags = little<std::uint16_t>(bytes_, at + 8);
            member.method = little<std::uint16_t>(bytes_, at + 10);
            member.crc = little<std::uint32_t>(bytes_, at + 16);
            member.compressed = little<std::uint32_t>(bytes_, at + 20);
            member.size = little<std::uint32_t>(bytes_, at + 24);
            const std::size_t name_length = little<std::uint16_t>(bytes_, at + 28);
            const std::size_t extra_length = little<std::uint16_t>(bytes_, at + 30);
            const std::size_t comment_length = little<std::uint16_t>(bytes_, at + 32);
            std::uint64_t disk = little<std::uint16_t>(bytes_, at + 34);
            member.local_offset = little<std::uint32_t>(bytes_, at + 42);
            if (end - at - central_header_size < name_length + extra_length + comment_length)
                fail(fmt::format("entry {} of the central directory runs past the directory's end", i + 1));
            member.name = std::string(bytes_.substr(at + central_header_size, name_length));
            const std::string shown = printable(member.name);
            // The zip64 extra field holds, in this order, those of the four values whose
            // usual field is all ones.
            read_zip64(bytes_.substr(at + central_header_size + name_length, extra_length), shown,
                       {{&member.size, member.size == zip64_mark, 8},
                        {&member.compressed, member.compressed == zip64_mark, 8},
                        {&member.local_offset, member.local_offset == zip64_mark, 8},
                        {&disk, disk == 0xffff, 4}});
            at += central_header_size + name_length + extra_length + comment_length;

            if (flags & 0x41) fail(fmt::format("member '{}' is encrypted: attntrace reads unencrypted archives", shown));
            if (disk != 0) multi_disk();
            if (member.method != 0 && member.method != 8)
                fail(fmt::format("member '{}' is compressed with {} (method {}): attntrace reads stored (method 0) and "
                                 "deflated (method 8) members, as np.savez and np.savez_compressed write them",
                                 shown, method_name(member.method), member.method));
            if (!member.name.ends_with(".npy"))
                fail(fmt::format("member '{}' is not a .npy file: an .npz holds only .npy members", shown));
            if (member.name.size() == 4) fail("member '.npy' has no name before its .npy");
            if (!names.insert(member.name).second) fail(fmt::format("two members are named '{}'", shown));
            // The member, its name twice (here and in the set of names) and the set's node.
            if (budget) budget->charge(sizeof(Member) + 80 + 2 * (member.name.size() > 15 ? member.name.size() + 17 : 0));
            if (__builtin_add_overflow(total, member.size, &total)) total = std::numeric_limits<std::uint64_t>::max();
            members.push_back(std::move(member));
        }
        if (at != end)
            fail(fmt::format("the central directory is {} bytes long, but its {} entries take {}", directory_size_,
                             entries_, at - directory_offset_));
        if (total > max_bytes)
            fail(fmt::format("the members inflate to {} bytes in all, more than the limit of {} set by --max-input",
                             total, max_bytes));
        return members;
    }

    // A member's bytes as they are in the archive (stored or compressed), after its local
    // header, which must agree with the central directory.
    std::string_view packed_data(const Member& member) const {
        const std::string shown = printable(member.name);
        const std::size_t limit = directory_offset_;  // members lie before the central directory
        if (member.local_offset > limit || limit - member.local_offset < local_header_size ||
            little<std::uint32_t>(bytes_, member.local_offset) != local_signature)
            fail(fmt::format("member '{}': no local header at byte {}, where the central directory places it", shown,
                             member.local_offset));
        const std::size_t at = member.local_offset;
        const std::uint16_t flags = little<std::uint16_t>(bytes_, at + 6);
        const std::uint16_t method = little<std::uint16_t>(bytes_, at + 8);
        const std::uint32_t crc = little<std::uint32_t>(bytes_, at + 14);
        std::uint64_t compressed = little<std::uint32_t>(bytes_, at + 18);
        std::uint64_t size = little<std::uint32_t>(bytes_, at + 22);
        const std::size_t name_length = little<std::uint16_t>(bytes_, at + 26);
        const std::size_t extra_length = little<std::uint16_t>(bytes_, at + 28);
        if (limit - at - local_header_size < name_length + extra_length)
            fail(fmt::format("member '{}': its local header runs into the central directory", shown));
        const std::string_view name = bytes_.substr(at + local_header_size, name_length);
        if (name != member.name)
            fail(fmt::format("member '{}': its local header names it '{}'", shown, printable(name)));
        if (flags & 0x41) fail(fmt::format("member '{}' is encrypted: attntrace reads unencrypted archives", shown));
        if (method != member.method)
            fail(fmt::format("member '{}': its local header gives compression method {}, the central directory {}", shown,
                             method, member.method));
        // Bit 3: sizes and CRC-32 come after the data (a data descriptor) and are 0 here; else
        // they are given here too, the sizes in the zip64 extra field when they are all ones
        // (NumPy asks for zip64 local headers for every member).
        if (!(flags & 0x08)) {
            read_zip64(bytes_.substr(at + local_header_size + name_length, extra_length), shown,
                       {{&size, size == zip64_mark, 8}, {&compressed, compressed == zip64_mark, 8}});
            if (crc != member.crc || size != member.size || compressed != member.compressed)
                fail(fmt::format("member '{}': its local header and the central directory disagree on its sizes or CRC-32",
                                 shown));
        }
        const std::size_t start = at + local_header_size + name_length + extra_length;
        if (member.compressed > limit - start)
            fail(fmt::format("member '{}': its {} bytes of data run past the start of the central directory", shown,
                             member.compressed));
        return bytes_.substr(start, member.compressed);
    }

private:
    struct Zip64Field {
        std::uint64_t* value;
        bool wanted;        // its usual field is all ones
        std::size_t width;  // 8 bytes, 4 for a disk number
    };

    [[noreturn]] void fail(const std::string& message) const { throw DataError(fmt::format("{}: {}", origin_, message)); }
    [[noreturn]] void multi_disk() const {
        fail("a multi-disk (split) zip archive: attntrace reads archives of one file");
    }

    // The extra fields are (id, length, data) blocks; the zip64 one has id 1.
    void read_zip64(std::string_view extra, const std::string& member, std::initializer_list<Zip64Field> fields) const {
        if (std::none_of(fields.begin(), fields.end(), [](const Zip64Field& f) { return f.wanted; })) return;
        for (std::size_t at = 0; at + 4 <= extra.size();) {
            const std::uint16_t id = little<std::uint16_t>(extra, at);
            const std::size_t length = little<std::uint16_t>(extra, at + 2);
            if (length > extra.size() - at - 4) fail(fmt::format("member '{}': an extra field runs past its end", member));
            if (id == 1) {
                std::size_t from = at + 4;
                for (const Zip64Field& field : fields) {
                    if (!field.wanted) continue;
                    if (at + 4 + length - from < field.width)
                        fail(fmt::format("member '{}': its zip64 extra field is too short for the sizes it must hold",
                                         member));
                    *field.value = field.width == 8 ? little<std::uint64_t>(extra, from) : little<std::uint32_t>(extra, from);
                    from += field.width;
                }
                return;
            }
            at += 4 + length;
        }
        // No zip64 field: the values of all ones stand as they are.
    }

    // The end record is within the last 22 + 65,535 bytes (its comment is at most 65,535):
    // the last signature whose comment reaches exactly to the end of the file.
    void read_end_record() {
        if (bytes_.size() < end_record_size)
            fail("truncated zip archive: shorter than its end-of-central-directory record (22 bytes)");
        const std::size_t lowest = bytes_.size() > end_record_size + 0xffff ? bytes_.size() - end_record_size - 0xffff : 0;
        std::size_t end = std::string_view::npos;
        for (std::size_t at = bytes_.size() - end_record_size + 1; at-- > lowest;) {
            if (little<std::uint32_t>(bytes_, at) == end_signature &&
                at + end_record_size + little<std::uint16_t>(bytes_, at + 20) == bytes_.size()) {
                end = at;
                break;
            }
        }
        if (end == std::string_view::npos)
            fail("truncated or not a zip archive: no end-of-central-directory record in its last 65,557 bytes");
        std::uint64_t disk = little<std::uint16_t>(bytes_, end + 4);
        std::uint64_t directory_disk = little<std::uint16_t>(bytes_, end + 6);
        std::uint64_t entries_here = little<std::uint16_t>(bytes_, end + 8);
        entries_ = little<std::uint16_t>(bytes_, end + 10);
        directory_size_ = little<std::uint32_t>(bytes_, end + 12);
        directory_offset_ = little<std::uint32_t>(bytes_, end + 16);
        std::size_t directory_limit = end;  // the directory ends before the end record(s)
        // A zip64 locator just before the end record points at the zip64 end record, whose
        // 64-bit counts and offsets replace the ones above.
        if (end >= zip64_locator_size && little<std::uint32_t>(bytes_, end - zip64_locator_size) == zip64_locator_signature) {
            const std::size_t locator = end - zip64_locator_size;
            if (little<std::uint32_t>(bytes_, locator + 4) != 0 || little<std::uint32_t>(bytes_, locator + 16) > 1) multi_disk();
            const std::uint64_t record = little<std::uint64_t>(bytes_, locator + 8);
            if (record > locator || locator - record < zip64_end_size ||
                little<std::uint32_t>(bytes_, record) != zip64_end_signature)
                fail(fmt::format("the zip64 end-of-central-directory record is not at byte {}, where its locator places it",
                                 record));
            disk = little<std::uint32_t>(bytes_, record + 16);
            directory_disk = little<std::uint32_t>(bytes_, record + 20);
            entries_here = little<std::uint64_t>(bytes_, record + 24);
            entries_ = little<std::uint64_t>(bytes_, record + 32);
            directory_size_ = little<std::uint64_t>(bytes_, record + 40);
            directory_offset_ = little<std::uint64_t>(bytes_, record + 48);
            directory_limit = record;
        }
        if (disk != 0 || directory_disk != 0 || entries_here != entries_) multi_disk();
        if (directory_offset_ > directory_limit || directory_size_ > directory_limit - directory_offset_)
            fail(fmt::format("the central directory ({} bytes at byte {}) runs past the end record at byte {}: the archive "
                             "is truncated or damaged",
                             directory_size_, directory_offset_, directory_limit));
    }

    std::string_view bytes_;
    const std::string& origin_;
    std::uint64_t entries_ = 0, directory_size_ = 0, directory_offset_ = 0;
};

// What a deflated member is inflated into: allocated at the size the archive gives, and not
// cleared first, so that pages the stream never reaches are never touched.
struct InflatedBytes {
    std::unique_ptr<unsigned char[]> bytes;
    std::size_t size = 0;
};

// A deflated member (raw deflate, no zlib or gzip wrapper) inflated into a buffer of its own,
// which must come out exactly `size` bytes long. The buffer is charged to `budget` before it
// is allocated: a small archive may announce a large member (a "deflate bomb", or a lie).
std::shared_ptr<InflatedBytes> inflated(std::string_view packed, std::uint64_t size, const std::string& where,
                                        MemoryBudget* budget) {
    const auto fail = [&](const std::string& message) -> DataError {
        return DataError(fmt::format("{}: {}", where, message));
    };
    if (size >= std::numeric_limits<std::size_t>::max() / 2)
        throw fail(fmt::format("the archive gives it {} bytes, more than this machine can address", size));
    if (budget) budget->charge(size + 1);
    // One byte more than announced, so that a stream that goes on beyond `size` shows.
    auto out = std::make_shared<InflatedBytes>();
    out->bytes.reset(new unsigned char[size + 1]);  // not value-initialised: untouched until inflated
    out->size = size;
    z_stream stream{};
    if (::inflateInit2(&stream, -MAX_WBITS) != Z_OK) throw fail("zlib could not start inflating");
    const std::unique_ptr<z_stream, int (*)(z_stream*)> end(&stream, &::inflateEnd);
    // zlib counts in 32 bits: the input and the output are handed over in chunks.
    constexpr std::size_t chunk = std::size_t{1} << 30;
    std::size_t in_left = packed.size(), out_left = size + 1;
    stream.next_in = const_cast<unsigned char*>(as_bytes(packed));
    stream.next_out = out->bytes.get();
    while (true) {
        if (stream.avail_in == 0) {
            stream.avail_in = static_cast<uInt>(std::min(in_left, chunk));
            in_left -= stream.avail_in;
        }
        if (stream.avail_out == 0) {
            stream.avail_out = static_cast<uInt>(std::min(out_left, chunk));
            out_left -= stream.avail_out;
        }
        const int status = ::inflate(&stream, Z_NO_FLUSH);
        if (stream.total_out > size)
            throw fail(fmt::format("it inflates to more than the {} bytes the archive gives as its size", size));
        if (status == Z_STREAM_END) break;
        if (status == Z_OK) continue;
        if (status == Z_BUF_ERROR && stream.avail_in == 0 && in_left == 0)
            throw fail("its compressed data ends before the deflate stream does: the archive is truncated or damaged");
        if (status == Z_MEM_ERROR) throw fail("out of memory while inflating it");
        throw fail(fmt::format("its deflated data is damaged ({})", stream.msg ? printable(stream.msg) : "zlib error"));
    }
    if (stream.total_out != size)
        throw fail(fmt::format("it inflates to {} bytes, not the {} the archive gives as its size", stream.total_out, size));
    if (stream.avail_in + in_left != 0)
        throw fail(fmt::format("{} bytes of compressed data follow the end of its deflate stream", stream.avail_in + in_left));
    return out;
}

void read_npz(std::string_view bytes, std::shared_ptr<const void> storage, std::uint64_t max_bytes, TensorFile& file,
              MemoryBudget* budget) {
    const ZipReader zip(bytes, file.origin);
    for (const Member& member : zip.members(max_bytes, budget)) {
        const std::string where = fmt::format("{}: member '{}'", file.origin, printable(member.name));
        const std::string_view packed = zip.packed_data(member);
        std::shared_ptr<InflatedBytes> buffer;  // what a deflated member was inflated into
        std::string_view content = packed;
        if (member.method == 8) {
            buffer = inflated(packed, member.size, where, budget);
            content = std::string_view(reinterpret_cast<const char*>(buffer->bytes.get()), buffer->size);
        } else if (packed.size() != member.size) {
            throw DataError(fmt::format("{}: stored uncompressed, yet its size in the archive ({} bytes) is not its size "
                                        "({} bytes)",
                                        where, packed.size(), member.size));
        }
        const std::uint32_t crc = crc32_of(content);
        if (crc != member.crc)
            throw DataError(fmt::format("{}: CRC-32 mismatch: the archive records {:08x}, the data gives {:08x}; the file is "
                                        "damaged",
                                        where, member.crc, crc));
        Tensor tensor = read_npy(content, where);
        tensor.name = member.name.substr(0, member.name.size() - 4);
        // In place (in the file's bytes, or the buffer it was inflated into) when the data is
        // aligned for its elements; else a copy that is.
        if (reinterpret_cast<std::uintptr_t>(tensor.data) % element_size(tensor.type) == 0) {
            tensor.storage = buffer ? std::shared_ptr<const void>(buffer) : storage;
        } else {
            if (budget) budget->charge(tensor.bytes);
            auto copy = std::make_shared<std::vector<unsigned char>>(tensor.data, tensor.data + tensor.bytes);
            tensor.data = copy->data();
            tensor.storage = std::move(copy);
        }
        if (budget) budget->charge(sizeof(Tensor) + tensor.name.size() + tensor.shape.size() * sizeof(std::size_t));
        file.tensors.push_back(std::move(tensor));
    }
}

// The CRC-32 and the bytes of one member, for the writer.
void add_stored_member(std::string& out, std::string& directory, const std::string& name, const std::string& content) {
    const std::uint64_t offset = out.size();
    if (name.size() > 0xffff) throw std::invalid_argument("an .npz member name longer than 65,535 bytes");
    if (offset + local_header_size + name.size() + content.size() >= zip64_mark)
        throw DataError(fmt::format("the .npz would be larger than 4 GiB at member '{}': attntrace writes archives without "
                                    "zip64, up to 4 GiB",
                                    printable(name)));
    const std::uint32_t crc = crc32_of(content);
    const auto size = static_cast<std::uint32_t>(content.size());
    const bool utf8_name = std::any_of(name.begin(), name.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
    const std::uint16_t flags = utf8_name ? 0x0800 : 0;  // bit 11: the name is UTF-8
    // The fields both headers share, from the version needed to the lengths of name and extra.
    std::string common;
    put_little<std::uint16_t>(common, 20);  // version 2.0 needed to extract
    put_little<std::uint16_t>(common, flags);
    put_little<std::uint16_t>(common, 0);  // stored
    put_little<std::uint16_t>(common, 0);  // time 00:00
    put_little<std::uint16_t>(common, dos_date_1980);
    put_little<std::uint32_t>(common, crc);
    put_little<std::uint32_t>(common, size);  // compressed
    put_little<std::uint32_t>(common, size);  // uncompressed
    put_little<std::uint16_t>(common, static_cast<std::uint16_t>(name.size()));
    put_little<std::uint16_t>(common, 0);  // no extra field

    put_little<std::uint32_t>(out, local_signature);
    out += common;
    out += name;
    out += content;

    put_little<std::uint32_t>(directory, central_signature);
    put_little<std::uint16_t>(directory, (3 << 8) | 20);  // made by: Unix, zip 2.0
    directory += common;
    put_little<std::uint16_t>(directory, 0);                     // no comment
    put_little<std::uint16_t>(directory, 0);                     // disk 0
    put_little<std::uint16_t>(directory, 0);                     // internal attributes: binary
    put_little<std::uint32_t>(directory, std::uint32_t{0100644} << 16);  // a regular file, rw-r--r--
    put_little<std::uint32_t>(directory, static_cast<std::uint32_t>(offset));
    directory += name;
}

// --- safetensors ----------------------------------------------------------------------------
// An 8-byte little-endian header size N, N bytes of JSON (an object of name → {"dtype",
// "shape", "data_offsets"}, and "__metadata__" of strings), then the data: every tensor's
// bytes, little-endian, one after the other with no gaps, offsets counted from the data's
// first byte.

constexpr std::uint64_t max_safetensors_header = 100'000'000;  // the format's own limit

std::optional<ElementType> safetensors_type(std::string_view dtype) {
    if (dtype == "F16") return ElementType::float16;
    if (dtype == "BF16") return ElementType::bfloat16;
    if (dtype == "F32") return ElementType::float32;
    if (dtype == "F64") return ElementType::float64;
    return std::nullopt;
}

std::string_view safetensors_dtype(ElementType type) {
    switch (type) {
    case ElementType::float16: return "F16";
    case ElementType::bfloat16: return "BF16";
    case ElementType::float32: return "F32";
    case ElementType::float64: return "F64";
    }
    return "";
}

// A dtype we do not read, in words: " (64-bit signed integers)", or "".
std::string safetensors_type_words(std::string_view dtype) {
    if (dtype == "BOOL") return " (booleans)";
    if (dtype.starts_with("F8_") || dtype.starts_with("F6_") || dtype == "F4")
        return fmt::format(" ({}-bit floats)", dtype[1]);
    if (dtype == "C64") return " (complex numbers)";
    for (const auto& [prefix, words] : {std::pair{"I", "signed integers"}, {"U", "unsigned integers"}})
        for (const char* bits : {"8", "16", "32", "64"})
            if (dtype == std::string(prefix) + bits) return fmt::format(" ({}-bit {})", bits, words);
    return "";
}

// "an array", "a number": a JSON value's kind, for messages.
std::string a_kind(const nlohmann::json& value) {
    const std::string kind = value.type_name();
    return (kind == "array" || kind == "object" ? "an " : kind == "null" ? "" : "a ") + kind;
}

// The first number in JSON text `text` that does not fit a double, as (offset, its text):
// nlohmann's parser refuses one without saying where. Strings are skipped.
std::optional<std::pair<std::size_t, std::string_view>> number_beyond_double(std::string_view text) {
    for (std::size_t at = 0; at < text.size();) {
        const char c = text[at];
        if (c == '"') {
            for (++at; at < text.size() && text[at] != '"'; ++at)
                if (text[at] == '\\') ++at;
            ++at;
            continue;
        }
        if (c != '-' && !(c >= '0' && c <= '9')) {
            ++at;
            continue;
        }
        const std::size_t start = at;
        while (at < text.size() && std::strchr("+-.eE0123456789", text[at]) && text[at] != '\0') ++at;
        const std::string_view number = text.substr(start, at - start);
        if (!std::isfinite(std::strtod(std::string(number).c_str(), nullptr))) return std::pair{start, number};
    }
    return std::nullopt;
}

// "line L, column C" of byte `offset`, as nlohmann's messages give a place.
std::string line_column(std::string_view text, std::size_t offset) {
    std::size_t line = 1, line_start = 0;
    for (std::size_t i = 0; i < offset && i < text.size(); ++i)
        if (text[i] == '\n') ++line, line_start = i + 1;
    return fmt::format("line {}, column {}", line, offset - line_start + 1);
}

// What nlohmann's document holds, per value (std::map's node with its key, a json, a
// std::string's block where a value is a string), and a key's node in the set of keys the
// check below keeps: charged as the header is parsed. Measured: 300,000 metadata keys of
// short strings took 370 bytes a key in all (the metadata's copy included); these charge 408.
constexpr std::uint64_t header_member_bytes = 200;  // the map's node and the key set's node
constexpr std::uint64_t header_value_bytes = 24;
constexpr std::uint64_t header_string_bytes = 56;   // a string value's own block
std::uint64_t header_heap_bytes(const std::string& text) { return text.size() > 15 ? text.size() + 17 : 0; }

// The header, parsed by nlohmann::json (whose parser keeps its own stack, not the machine's),
// with a limit on nesting, no key twice in one object, and what it builds charged to `budget`.
nlohmann::json parse_safetensors_header(std::string_view text, const std::string& origin, MemoryBudget* budget) {
    using Event = nlohmann::json::parse_event_t;
    std::vector<std::set<std::string>> keys;  // the keys seen so far in each object open
    const auto charge = [&](std::uint64_t bytes) {
        if (budget) budget->charge(bytes);
    };
    const auto check = [&](int depth, Event event, nlohmann::json& parsed) {
        if (depth > max_json_depth)
            throw DataError(fmt::format("{}: the safetensors header nests deeper than {} levels", origin, max_json_depth));
        if (event == Event::object_start) keys.emplace_back();
        if (event == Event::object_end && !keys.empty()) keys.pop_back();
        if (event == Event::key) {
            const std::string& key = parsed.get_ref<const std::string&>();
            charge(header_member_bytes + 2 * header_heap_bytes(key));
            if (!keys.empty() && !keys.back().insert(key).second)
                throw DataError(fmt::format("{}: the safetensors header has the key \"{}\" twice in one object", origin,
                                            printable(key)));
        }
        if (event == Event::value || event == Event::object_start || event == Event::array_start) {
            charge(header_value_bytes);
            if (parsed.is_string()) charge(header_string_bytes + header_heap_bytes(parsed.get_ref<const std::string&>()));
        }
        return true;
    };
    try {
        return nlohmann::json::parse(text.begin(), text.end(), check);
    } catch (const nlohmann::json::parse_error& e) {
        std::string_view message = e.what();  // "[json.exception.parse_error.101] parse error at line 1, …"
        if (const std::size_t cut = message.find("] "); cut != std::string_view::npos) message.remove_prefix(cut + 2);
        throw DataError(fmt::format("{}: the safetensors header is not valid JSON: {}", origin, printable(message, 200)));
    } catch (const nlohmann::json::exception& e) {
        // A number beyond double (out_of_range.406), said with its place as the other errors are.
        if (const auto number = number_beyond_double(text))
            throw DataError(fmt::format("{}: the safetensors header, at {}: the number {} does not fit a double", origin,
                                        line_column(text, number->first), printable(number->second, 40)));
        std::string_view message = e.what();
        if (const std::size_t cut = message.find("] "); cut != std::string_view::npos) message.remove_prefix(cut + 2);
        throw DataError(fmt::format("{}: the safetensors header cannot be read: {}", origin, printable(message, 200)));
    }
}

void read_safetensors(std::string_view bytes, std::shared_ptr<const void> storage, TensorFile& file, MemoryBudget* budget) {
    const std::string& origin = file.origin;
    if (bytes.size() < 8)
        throw DataError(fmt::format("{}: truncated: shorter than the 8 bytes that give the safetensors header's size", origin));
    const std::uint64_t header_size = little<std::uint64_t>(bytes, 0);
    if (header_size > bytes.size() - 8)
        throw DataError(fmt::format("{}: the safetensors header is {} bytes long, past the end of the file ({} bytes "
                                    "follow its size)",
                                    origin, header_size, bytes.size() - 8));
    if (header_size > max_safetensors_header)
        throw DataError(fmt::format("{}: a safetensors header of {} bytes, more than the format's limit of 100,000,000",
                                    origin, header_size));
    const nlohmann::json header = parse_safetensors_header(bytes.substr(8, header_size), origin, budget);
    const std::string_view data = bytes.substr(8 + header_size);
    if (!header.is_object())
        throw DataError(fmt::format("{}: the safetensors header is {}, not an object of name → tensor", origin,
                                    a_kind(header)));

    struct Placed {
        Tensor tensor;
        std::uint64_t begin, end;
    };
    std::vector<Placed> placed;
    for (const auto& [key, value] : header.items()) {
        if (key == "__metadata__") {
            if (!value.is_object())
                throw DataError(fmt::format("{}: \"__metadata__\" is {}, not an object of strings", origin, a_kind(value)));
            for (const auto& [name, text] : value.items()) {
                if (!text.is_string())
                    throw DataError(fmt::format("{}: \"__metadata__\" gives \"{}\" {}: its values are strings", origin,
                                                printable(name), a_kind(text)));
                // A node of std::map with its two strings, beside the header's own copy.
                if (budget) budget->charge(128 + header_heap_bytes(name) + header_heap_bytes(text.get_ref<const std::string&>()));
                file.metadata[name] = text.get<std::string>();
            }
            continue;
        }
        const std::string where = fmt::format("{}: tensor '{}'", origin, printable(key));
        const auto fail = [&](const std::string& message) { return DataError(fmt::format("{}: {}", where, message)); };
        if (!value.is_object())
            throw fail(fmt::format("expected an object with \"dtype\", \"shape\" and \"data_offsets\", found {}",
                                   a_kind(value)));
        for (const char* field : {"dtype", "shape", "data_offsets"})
            if (!value.contains(field))
                throw fail(fmt::format("no \"{}\": each tensor has \"dtype\", \"shape\" and \"data_offsets\"", field));
        const nlohmann::json& dtype = value["dtype"];
        if (!dtype.is_string()) throw fail(fmt::format("\"dtype\" is {}, not a string such as \"F32\"", a_kind(dtype)));
        const auto type = safetensors_type(dtype.get_ref<const std::string&>());
        if (!type)
            throw fail(fmt::format("unsupported dtype {}{}: attntrace reads F16, BF16, F32 and F64",
                                   printable(dtype.get_ref<const std::string&>(), 24),
                                   safetensors_type_words(dtype.get_ref<const std::string&>())));
        const auto unsigned_array = [](const nlohmann::json& v) {
            return v.is_array() && std::all_of(v.begin(), v.end(), [](const nlohmann::json& x) { return x.is_number_unsigned(); });
        };
        const nlohmann::json& shape_json = value["shape"];
        if (!unsigned_array(shape_json))
            throw fail(fmt::format("\"shape\" is {}, not an array of non-negative integers", printable(shape_json.dump(), 60)));
        const nlohmann::json& offsets = value["data_offsets"];
        if (!unsigned_array(offsets) || offsets.size() != 2)
            throw fail(fmt::format("\"data_offsets\" is {}, not [begin, end] (two non-negative integers)",
                                   printable(offsets.dump(), 60)));
        Tensor tensor;
        tensor.name = key;
        tensor.type = *type;
        for (const auto& dimension : shape_json) tensor.shape.push_back(dimension.get<std::size_t>());
        const auto expected = data_bytes(tensor.shape, tensor.type);
        if (!expected)
            throw fail(fmt::format("shape {} is too large: its size in bytes does not fit 64 bits", shape_text(tensor.shape)));
        const auto begin = offsets[0].get<std::uint64_t>(), end = offsets[1].get<std::uint64_t>();
        if (begin > end || end > data.size())
            throw fail(fmt::format("data_offsets [{}, {}] lie outside the {} bytes of data after the header", begin, end,
                                   data.size()));
        if (end - begin != *expected)
            throw fail(fmt::format("data_offsets [{}, {}] hold {} bytes, but shape {} of {} takes {}", begin, end,
                                   end - begin, shape_text(tensor.shape), dtype.get_ref<const std::string&>(), *expected));
        tensor.data = as_bytes(data) + begin;
        tensor.bytes = *expected;
        tensor.storage = storage;
        if (budget)  // the tensor, as placed here and then in the file's list
            budget->charge(2 * (sizeof(Placed) + header_heap_bytes(tensor.name) + tensor.shape.size() * sizeof(std::size_t)));
        placed.push_back({std::move(tensor), begin, end});
    }
    // nlohmann::json sorts its keys: the tensors are put back in the order of their data,
    // which must cover the data exactly, with no gap, overlap or trailing byte.
    std::stable_sort(placed.begin(), placed.end(),
                     [](const Placed& a, const Placed& b) { return std::pair(a.begin, a.end) < std::pair(b.begin, b.end); });
    std::uint64_t covered = 0;
    for (std::size_t i = 0; i < placed.size(); ++i) {
        const Placed& p = placed[i];
        if (p.begin > covered)
            throw DataError(fmt::format("{}: tensor '{}' starts at byte {} of the data, but the bytes before it end at {}: "
                                        "safetensors data has no gaps",
                                        origin, printable(p.tensor.name), p.begin, covered));
        if (p.begin < covered)
            throw DataError(fmt::format("{}: tensors '{}' and '{}' overlap in the data (bytes {} to {})", origin,
                                        printable(placed[i - 1].tensor.name), printable(p.tensor.name), p.begin, covered));
        covered = p.end;
    }
    if (covered != data.size())
        throw DataError(fmt::format("{}: the tensors' data ends at byte {}, but {} bytes follow the header: safetensors "
                                    "files have no trailing bytes",
                                    origin, covered, data.size()));
    for (auto& p : placed) file.tensors.push_back(std::move(p.tensor));
}

// --- numbers -----------------------------------------------------------------------------

// IEEE 754 half precision: 1 sign bit, 5 exponent bits (bias 15), 10 fraction bits.
double half_to_double(std::uint16_t bits) {
    const int exponent = (bits >> 10) & 0x1f;
    const int fraction = bits & 0x3ff;
    double magnitude;
    if (exponent == 0)
        magnitude = std::ldexp(fraction, -24);  // zero and the subnormals: fraction · 2^-24
    else if (exponent == 31)
        magnitude = fraction ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
    else
        magnitude = std::ldexp(fraction + 1024, exponent - 25);  // (1 + fraction/1024) · 2^(exponent − 15)
    return (bits & 0x8000) ? -magnitude : magnitude;
}

// Fills `out` (rows × cols, row by row) from `data` in C order, or down the columns first
// when `column_major`; `decode` reads one element. C order is one pass over both.
template <typename Decode>
void fill(double* out, Eigen::Index rows, Eigen::Index cols, const unsigned char* data, std::size_t element,
          bool column_major, Decode decode) {
    const auto count = static_cast<std::size_t>(rows * cols);
    if (!column_major) {
        // Large arrays on every thread: the output's pages are first touched (and faulted in)
        // where they are written. Nothing here throws or allocates.
        const auto n = static_cast<std::int64_t>(count);
#pragma omp parallel for schedule(static) if (n >= (std::int64_t{1} << 20))
        for (std::int64_t i = 0; i < n; ++i) out[i] = decode(data + static_cast<std::size_t>(i) * element);
        return;
    }
    for (Eigen::Index r = 0; r < rows; ++r)
        for (Eigen::Index c = 0; c < cols; ++c)
            out[r * cols + c] = decode(data + static_cast<std::size_t>(c * rows + r) * element);
}

// The numbers of `matrix` as little-endian float32 or float64, row by row. A value that is
// not finite, or that float32 cannot hold, is refused (`label` names the matrix).
std::string encoded(const Matrix& matrix, ElementType type, const std::string& label) {
    if (type != ElementType::float32 && type != ElementType::float64)
        throw std::invalid_argument(fmt::format("the writers write float32 or float64, not {}", element_type_name(type)));
    std::string out;
    out.reserve(static_cast<std::size_t>(matrix.size()) * element_size(type));
    for (Eigen::Index r = 0; r < matrix.rows(); ++r)
        for (Eigen::Index c = 0; c < matrix.cols(); ++c) {
            const double x = matrix(r, c);
            const auto refuse = [&](std::string_view why) {
                return DataError(fmt::format("{}: row {}, column {}: {} {}", label, r + 1, c + 1, x, why));
            };
            if (!std::isfinite(x)) throw refuse("is not a finite number");
            if (type == ElementType::float32) {
                const float f = static_cast<float>(x);
                if (!std::isfinite(f)) throw refuse("is beyond the range of float32 (about ±3.4e38)");
                put_little(out, std::bit_cast<std::uint32_t>(f));
            } else {
                put_little(out, std::bit_cast<std::uint64_t>(x));
            }
        }
    return out;
}

std::vector<std::size_t> shape_of(const Matrix& matrix, bool vector) {
    if (vector && matrix.rows() != 1)
        throw std::invalid_argument(fmt::format("a vector is written from a matrix of one row, not {}", matrix.rows()));
    if (vector) return {static_cast<std::size_t>(matrix.cols())};
    return {static_cast<std::size_t>(matrix.rows()), static_cast<std::size_t>(matrix.cols())};
}

}  // namespace

// --- the interface ---------------------------------------------------------------------------

std::string_view element_type_name(ElementType type) {
    switch (type) {
    case ElementType::float16: return "float16";
    case ElementType::bfloat16: return "bfloat16";
    case ElementType::float32: return "float32";
    case ElementType::float64: return "float64";
    }
    return "";
}

std::size_t element_size(ElementType type) {
    switch (type) {
    case ElementType::float16:
    case ElementType::bfloat16: return 2;
    case ElementType::float32: return 4;
    case ElementType::float64: return 8;
    }
    return 0;
}

std::string shape_text(const std::vector<std::size_t>& shape) {
    if (shape.size() == 1) return fmt::format("({},)", shape[0]);
    return fmt::format("({})", fmt::join(shape, ", "));
}

std::size_t Tensor::elements() const {
    std::size_t count = 1;
    for (const std::size_t dimension : shape) count *= dimension;
    return count;
}

namespace {

// What to_doubles and to_matrix refuse before they touch a byte or size anything: ranks
// other than 1 and 2, and arrays of no numbers (whose other dimension may be anything, even
// 2⁶³, since the bytes they take are 0).
void require_matrix_shape(const Tensor& t, std::string_view origin) {
    if (t.shape.empty() || t.shape.size() > 2)
        throw DataError(fmt::format("{}: {} has shape {}: expected a matrix (2 dimensions) or a vector (1)", origin,
                                    array_label(t.name), shape_text(t.shape)));
    if (t.elements() == 0)
        throw DataError(fmt::format("{}: {} has shape {}: it holds no numbers", origin, array_label(t.name),
                                    shape_text(t.shape)));
}

}  // namespace

void Tensor::to_doubles(std::string_view origin, double* out) const {
    const std::string label = array_label(name);
    require_matrix_shape(*this, origin);
    const bool vector = shape.size() == 1;
    const auto rows = static_cast<Eigen::Index>(vector ? 1 : shape[0]);
    const auto cols = static_cast<Eigen::Index>(vector ? shape[0] : shape[1]);
    const bool swap = big_endian != host_is_big_endian;
    const bool column_major = fortran_order && !vector;
    switch (type) {
    case ElementType::float16:
        fill(out, rows, cols, data, 2, column_major, [&](const unsigned char* p) { return half_to_double(load_bits<std::uint16_t>(p, swap)); });
        break;
    case ElementType::bfloat16:  // the upper half of a float32
        fill(out, rows, cols, data, 2, column_major, [&](const unsigned char* p) {
            return double(std::bit_cast<float>(std::uint32_t{load_bits<std::uint16_t>(p, swap)} << 16));
        });
        break;
    case ElementType::float32:
        fill(out, rows, cols, data, 4, column_major,
             [&](const unsigned char* p) { return double(std::bit_cast<float>(load_bits<std::uint32_t>(p, swap))); });
        break;
    case ElementType::float64:
        fill(out, rows, cols, data, 8, column_major,
             [&](const unsigned char* p) { return std::bit_cast<double>(load_bits<std::uint64_t>(p, swap)); });
        break;
    }
    // Zeros read in place of the pages of a file shortened meanwhile are no numbers of its own.
    require_intact(storage, origin);
    // The first value that is not finite, in C order (one pass; the message only when found).
    const auto count = static_cast<std::size_t>(rows * cols);
    bool finite = true;
    for (std::size_t i = 0; i < count; ++i) finite &= std::isfinite(out[i]);
    if (finite) return;
    for (Eigen::Index r = 0; r < rows; ++r)
        for (Eigen::Index c = 0; c < cols; ++c) {
            const double x = out[r * cols + c];
            if (std::isfinite(x)) continue;
            const std::string place = vector ? fmt::format("number {} (index [{}])", c + 1, c)
                                             : fmt::format("row {}, column {} (index [{}, {}])", r + 1, c + 1, r, c);
            throw DataError(fmt::format("{}: {} holds {} at {}: attntrace reads finite numbers only", origin, label, x,
                                        place));
        }
}

Matrix Tensor::to_matrix(std::string_view origin) const {
    require_matrix_shape(*this, origin);  // before sizing: (0, 2⁶³) holds no numbers, and no Index holds 2⁶³
    const bool vector = shape.size() == 1;
    Matrix m(static_cast<Eigen::Index>(vector ? 1 : shape[0]), static_cast<Eigen::Index>(vector ? shape[0] : shape[1]));
    to_doubles(origin, m.data());
    return m;
}

const float* Tensor::float32_view() const {
    if (type != ElementType::float32 || big_endian || host_is_big_endian || (fortran_order && shape.size() > 1)) return nullptr;
    if (reinterpret_cast<std::uintptr_t>(data) % alignof(float) != 0) return nullptr;
    return reinterpret_cast<const float*>(data);
}

std::string Tensor::order_note() const {
    if (!fortran_order || shape.size() < 2) return "";
    return fmt::format("{} was stored in Fortran order (column by column); it is read in C order (row by row), the "
                       "shape {} as the file gives it",
                       array_label(name), shape_text(shape));
}

const Tensor* TensorFile::find(std::string_view name) const {
    for (const Tensor& tensor : tensors)
        if (tensor.name == name) return &tensor;
    return nullptr;
}

std::vector<std::string> TensorFile::names() const {
    std::vector<std::string> names;
    for (const Tensor& tensor : tensors) names.push_back(tensor.name);
    return names;
}

std::optional<std::string> sniff_tensor_format(std::string_view bytes) {
    if (bytes.starts_with(npy_magic)) return "npy";
    // A zip starts with a member's local header, or is empty: its end record alone.
    if (bytes.starts_with("PK\x03\x04") || bytes.starts_with("PK\x05\x06")) return "npz";
    // The header size of safetensors is at most 100 MB: its upper four bytes are zero, which
    // no text is; the JSON object follows.
    if (bytes.size() >= 9 && bytes[8] == '{' && little<std::uint64_t>(bytes, 0) >> 32 == 0) return "safetensors";
    return std::nullopt;
}

TensorFile read_tensors(std::string_view bytes, const std::string& origin, std::shared_ptr<const void> storage,
                        std::uint64_t max_bytes, MemoryBudget* budget) {
    const auto format = sniff_tensor_format(bytes);
    if (!format) throw DataError(fmt::format("{}: not a .npy, .npz or safetensors file", origin));
    TensorFile file;
    file.origin = origin;
    file.format = *format;
    if (*format == "npy") {
        Tensor tensor = read_npy(bytes, origin);
        tensor.storage = std::move(storage);
        file.tensors.push_back(std::move(tensor));
    } else if (*format == "npz") {
        read_npz(bytes, std::move(storage), max_bytes, file, budget);
    } else {
        read_safetensors(bytes, std::move(storage), file, budget);
    }
    return file;
}

std::string write_npy(const Matrix& matrix, ElementType type, bool vector) {
    const std::string data = encoded(matrix, type, vector ? "the vector" : "the matrix");
    return npy_header(type == ElementType::float32 ? "<f4" : "<f8", shape_of(matrix, vector)) + data;
}

std::string write_npz(const std::vector<NamedMatrix>& arrays, ElementType type) {
    std::string out, directory;
    std::set<std::string> names;
    for (const NamedMatrix& array : arrays) {
        if (array.name.empty() || !array.matrix)
            throw std::invalid_argument("write_npz: every array needs a name and a matrix");
        if (!names.insert(array.name).second)
            throw std::invalid_argument(fmt::format("write_npz: two arrays named '{}'", array.name));
        const std::string content = npy_header(type == ElementType::float32 ? "<f4" : "<f8", shape_of(*array.matrix, array.vector)) +
                                    encoded(*array.matrix, type, printable(array.name));
        add_stored_member(out, directory, array.name + ".npy", content);
    }
    if (arrays.size() > 0xfffe || out.size() + directory.size() + end_record_size >= zip64_mark)
        throw DataError("the .npz would be larger than 4 GiB, or hold more than 65,534 arrays: attntrace writes archives "
                        "without zip64");
    const auto directory_offset = static_cast<std::uint32_t>(out.size());
    const auto count = static_cast<std::uint16_t>(arrays.size());
    out += directory;
    put_little<std::uint32_t>(out, end_signature);
    put_little<std::uint16_t>(out, 0);  // this disk
    put_little<std::uint16_t>(out, 0);  // the directory's disk
    put_little<std::uint16_t>(out, count);
    put_little<std::uint16_t>(out, count);
    put_little<std::uint32_t>(out, static_cast<std::uint32_t>(directory.size()));
    put_little<std::uint32_t>(out, directory_offset);
    put_little<std::uint16_t>(out, 0);  // no comment
    return out;
}

std::string write_safetensors(const std::vector<NamedMatrix>& arrays, ElementType type,
                              const std::map<std::string, std::string>& metadata) {
    nlohmann::json header = nlohmann::json::object();
    for (const auto& [key, value] : metadata)
        if (!is_utf8(key) || !is_utf8(value)) throw std::invalid_argument("write_safetensors: metadata that is not UTF-8");
    if (!metadata.empty()) header["__metadata__"] = metadata;
    std::string data;
    for (const NamedMatrix& array : arrays) {
        if (!array.matrix) throw std::invalid_argument("write_safetensors: an array without a matrix");
        if (array.name == "__metadata__" || header.contains(array.name))
            throw std::invalid_argument(fmt::format("write_safetensors: the name '{}' is taken", array.name));
        if (!is_utf8(array.name)) throw std::invalid_argument("write_safetensors: a name that is not UTF-8");
        const std::uint64_t begin = data.size();
        data += encoded(*array.matrix, type, printable(array.name));
        header[array.name] = {{"dtype", std::string(safetensors_dtype(type))},
                              {"shape", shape_of(*array.matrix, array.vector)},
                              {"data_offsets", {begin, std::uint64_t{data.size()}}}};
    }
    std::string text = header.dump();  // compact, the keys sorted
    text.append((8 - text.size() % 8) % 8, ' ');  // the data starts on a multiple of 8
    std::string out;
    put_little<std::uint64_t>(out, text.size());
    return out + text + data;
}

}  // namespace attntrace
