#include "input/json_document.hpp"

#include <fmt/format.h>

#include <cstring>

namespace attntrace {

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
