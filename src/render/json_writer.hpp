// Minimal JSON text helpers for the JSON renderers (strings and numbers written by hand so
// that large traces stream without building a document in memory).
#pragma once

#include <fmt/format.h>

#include <string_view>

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

}  // namespace attntrace
