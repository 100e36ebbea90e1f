// Aligning text by display width (UTF-8 aware).
#pragma once

#include "core/types.hpp"
#include "util/utf8.hpp"

#include <string>
#include <string_view>

namespace attntrace {

inline std::string pad_right(std::string_view text, std::size_t width) {
    std::string out(text);
    const std::size_t w = display_width(text);
    if (w < width) out.append(width - w, ' ');
    return out;
}

inline std::string pad_left(std::string_view text, std::size_t width) {
    const std::size_t w = display_width(text);
    std::string out(w < width ? width - w : 0, ' ');
    out += text;
    return out;
}

// `text` cut to at most `width` columns, ending in "…" when it was cut.
inline std::string fit_width(std::string_view text, std::size_t width) {
    if (display_width(text) <= width) return std::string(text);
    if (width == 0) return {};
    return std::string(prefix_within_width(text, width - 1)) + "…";
}

// "d_in = 3, d_k = 2": the dimensions as the headings show them.
inline std::string dims_text(const Dims& dims) {
    std::string text;
    for (const auto& [name, value] : dims) text += (text.empty() ? "" : ", ") + name + " = " + std::to_string(value);
    return text;
}

}  // namespace attntrace
