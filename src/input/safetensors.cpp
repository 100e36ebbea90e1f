#include "input/safetensors.hpp"

#include "core/error.hpp"
#include "input/limits.hpp"
#include "input/tensor_bytes.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <set>
#include <stdexcept>

namespace attntrace {
namespace {

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

// --- reading, step by step -------------------------------------------------------------------

// A tensor of the header, and where its bytes are in the data.
struct Placed {
    Tensor tensor;
    std::uint64_t begin, end;
};

// The 8-byte size, checked against the file and the format's limit, and the header parsed.
nlohmann::json read_header(std::string_view bytes, const std::string& origin, MemoryBudget* budget) {
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
    nlohmann::json header = parse_safetensors_header(bytes.substr(8, header_size), origin, budget);
    if (!header.is_object())
        throw DataError(fmt::format("{}: the safetensors header is {}, not an object of name → tensor", origin,
                                    a_kind(header)));
    return header;
}

// "__metadata__": an object of strings, into `file.metadata`.
void read_metadata(const nlohmann::json& value, TensorFile& file, MemoryBudget* budget) {
    const std::string& origin = file.origin;
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
}

// One tensor's entry {"dtype", "shape", "data_offsets"}, checked against the `data` that
// follows the header.
Placed read_entry(const std::string& key, const nlohmann::json& value, std::string_view data,
                  const std::shared_ptr<const void>& storage, const std::string& origin) {
    const std::string where = fmt::format("{}: tensor '{}'", origin, printable(key));
    const auto fail = [&](const std::string& message) { return DataError(fmt::format("{}: {}", where, message)); };
    if (!value.is_object())
        throw fail(fmt::format("expected an object with \"dtype\", \"shape\" and \"data_offsets\", found {}", a_kind(value)));
    for (const char* field : {"dtype", "shape", "data_offsets"})
        if (!value.contains(field))
            throw fail(fmt::format("no \"{}\": each tensor has \"dtype\", \"shape\" and \"data_offsets\"", field));
    const nlohmann::json& dtype = value["dtype"];
    if (!dtype.is_string()) throw fail(fmt::format("\"dtype\" is {}, not a string such as \"F32\"", a_kind(dtype)));
    const std::string& dtype_name = dtype.get_ref<const std::string&>();
    const auto type = safetensors_type(dtype_name);
    if (!type)
        throw fail(fmt::format("unsupported dtype {}{}: attntrace reads F16, BF16, F32 and F64", printable(dtype_name, 24),
                               safetensors_type_words(dtype_name)));
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
        throw fail(fmt::format("data_offsets [{}, {}] hold {} bytes, but shape {} of {} takes {}", begin, end, end - begin,
                               shape_text(tensor.shape), dtype_name, *expected));
    tensor.data = as_bytes(data) + begin;
    tensor.bytes = *expected;
    tensor.storage = storage;
    return {std::move(tensor), begin, end};
}

// nlohmann::json sorts its keys: the tensors are put back in the order of their data, which
// must cover the `data_size` bytes exactly, with no gap, overlap or trailing byte.
void place_in_data_order(std::vector<Placed>& placed, std::size_t data_size, const std::string& origin) {
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
    if (covered != data_size)
        throw DataError(fmt::format("{}: the tensors' data ends at byte {}, but {} bytes follow the header: safetensors "
                                    "files have no trailing bytes",
                                    origin, covered, data_size));
}

}  // namespace

void read_safetensors(std::string_view bytes, std::shared_ptr<const void> storage, TensorFile& file, MemoryBudget* budget) {
    const nlohmann::json header = read_header(bytes, file.origin, budget);
    const std::string_view data = bytes.substr(8 + little<std::uint64_t>(bytes, 0));
    std::vector<Placed> placed;
    for (const auto& [key, value] : header.items()) {
        if (key == "__metadata__") {
            read_metadata(value, file, budget);
            continue;
        }
        Placed entry = read_entry(key, value, data, storage, file.origin);
        if (budget)  // the tensor, as placed here and then in the file's list
            budget->charge(2 * (sizeof(Placed) + header_heap_bytes(entry.tensor.name) +
                                entry.tensor.shape.size() * sizeof(std::size_t)));
        placed.push_back(std::move(entry));
    }
    place_in_data_order(placed, data.size(), file.origin);
    for (auto& p : placed) file.tensors.push_back(std::move(p.tensor));
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
        data += encoded_numbers(*array.matrix, type, printable(array.name));
        header[array.name] = {{"dtype", std::string(safetensors_dtype(type))},
                              {"shape", written_shape(*array.matrix, array.vector)},
                              {"data_offsets", {begin, std::uint64_t{data.size()}}}};
    }
    std::string text = header.dump();  // compact, the keys sorted
    text.append((8 - text.size() % 8) % 8, ' ');  // the data starts on a multiple of 8
    std::string out;
    put_little<std::uint64_t>(out, text.size());
    return out + text + data;
}

}  // namespace attntrace
