// Minimal JSON text helpers for the JSON renderers (strings and numbers written by hand so
// that large traces stream without building a document in memory).
#pragma once

#include "attention/stage.hpp"
#include "attention/types.hpp"
#include "render/number.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attntrace {

// Appends `text` as a JSON string literal. `text` is valid UTF-8 (load checked it).
inline void append_json_string(fmt::memory_buffer& out, std::string_view text) {
    out.push_back('"');
    for (const char c : text) {
        switch (c) {
        case '"': out.append(std::string_view("\\\"")); break;
        case '\\': out.append(std::string_view("\\\\")); break;
        case '\n': out.append(std::string_view("\\n")); break;
        case '\t': out.append(std::string_view("\\t")); break;
        case '\r': out.append(std::string_view("\\r")); break;
        default:
            if (static_cast<unsigned char>(c) < 0x20)
                fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned char>(c));
            else
                out.push_back(c);
        }
    }
    out.push_back('"');
}

template <typename Strings>
void append_json_string_array(fmt::memory_buffer& out, const Strings& items) {
    out.push_back('[');
    bool first = true;
    for (const auto& item : items) {
        if (!first) out.append(std::string_view(", "));
        first = false;
        append_json_string(out, item);
    }
    out.push_back(']');
}

// A number, round-trip exact; null for a non-finite value (a masked −∞): JSON has no infinity.
inline void append_json_number(fmt::memory_buffer& out, double value, Dtype dtype) {
    if (std::isfinite(value)) append_exact(out, value, dtype);
    else out.append(std::string_view("null"));
}

// [a, b, c] from any range of numbers (std::vector<double>, an Eigen row).
template <typename Numbers>
void append_json_numbers(fmt::memory_buffer& out, const Numbers& values, Dtype dtype) {
    out.push_back('[');
    bool first = true;
    for (const double value : values) {
        if (!first) out.append(std::string_view(", "));
        first = false;
        append_json_number(out, value, dtype);
    }
    out.push_back(']');
}

// An array of rows, one row per line, each line starting with `indent` + two spaces.
inline void append_json_matrix(fmt::memory_buffer& out, const Matrix& m, Dtype dtype, std::string_view indent) {
    out.push_back('[');
    for (Eigen::Index r = 0; r < m.rows(); ++r) {
        out.append(std::string_view(r == 0 ? "\n" : ",\n"));
        out.append(indent);
        out.append(std::string_view("  "));
        append_json_numbers(out, m.row(r), dtype);
    }
    out.push_back('\n');
    out.append(indent);
    out.push_back(']');
}

// Where the projection weights came from: {"source": "none" | "input" | "generated", …}.
inline void append_weights_origin(fmt::memory_buffer& out, WeightsOrigin origin, std::uint64_t seed) {
    switch (origin) {
    case WeightsOrigin::none: out.append(std::string_view("{\"source\": \"none\"}")); return;
    case WeightsOrigin::file: out.append(std::string_view("{\"source\": \"input\"}")); return;
    case WeightsOrigin::generated:
        fmt::format_to(std::back_inserter(out), "{{\"source\": \"generated\", \"generator\": \"splitmix64\", \"seed\": {}}}",
                       seed);
        return;
    }
}

// {"d_in": 3, "d_k": 2, …}
inline void append_json_dims(fmt::memory_buffer& out, const std::vector<std::pair<std::string, Eigen::Index>>& dims) {
    out.push_back('{');
    for (std::size_t i = 0; i < dims.size(); ++i)
        fmt::format_to(std::back_inserter(out), "{}\"{}\": {}", i ? ", " : "", dims[i].first, dims[i].second);
    out.push_back('}');
}

// Writes what the buffer holds to `os` and empties it, so long output streams.
inline void flush(fmt::memory_buffer& out, std::ostream& os) {
    os.write(out.data(), static_cast<std::streamsize>(out.size()));
    out.clear();
}

}  // namespace attntrace
