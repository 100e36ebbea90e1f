// Aligning text by display width (UTF-8 aware).
#pragma once

#include "core/types.hpp"
#include "util/utf8.hpp"

#include <algorithm>
#include <ostream>
#include <string>
#include <utility>
#include <string_view>
#include <vector>

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

// The columns `text` takes on a terminal: its display width, colour codes (ESC [ … m) not counted.
inline std::size_t visible_width(std::string_view text) {
    std::size_t width = 0, from = 0;
    for (std::size_t at = text.find('\x1b'); at != std::string_view::npos; at = text.find('\x1b', from)) {
        width += display_width(text.substr(from, at - from));
        const std::size_t end = text.find('m', at);
        from = end == std::string_view::npos ? text.size() : end + 1;
    }
    return width + display_width(text.substr(from));
}

// `line` cut into lines of at most `width` columns (0: no limit) at spaces, never inside a word
// or number, nor inside a coloured stretch (ESC [ … m up to ESC [ 0 m), nor next to an "="
// (a break leaves "d_k = 3" whole): a word wider than the
// line stays whole on its own. Continuation lines keep the line's own indentation plus two
// spaces; a break eats the spaces at it.
inline std::vector<std::string> wrapped(std::string_view line, std::size_t width) {
    if (width == 0 || visible_width(line) <= width) return {std::string(line)};
    const std::size_t indent = std::min(line.find_first_not_of(' '), line.size());
    // The words: (text, the spaces after it), a coloured stretch never split.
    std::vector<std::pair<std::string_view, std::string_view>> words;
    bool coloured = false;
    std::size_t start = indent;
    for (std::size_t i = indent; i <= line.size(); ++i) {
        if (i < line.size() && line[i] == '\x1b') {
            const std::size_t end = std::min(line.find('m', i), line.size() - 1);
            coloured = line.substr(i, end + 1 - i) != "\x1b[0m";
            i = end;
            continue;
        }
        if (i < line.size() && (line[i] != ' ' || coloured)) continue;
        std::size_t next = i;
        while (next < line.size() && line[next] == ' ') ++next;
        if (next < line.size() && (line[next] == '=' || line[i - 1] == '=')) {  // "d_k = 3" stays one word
            i = next - 1;
            continue;
        }
        if (i > start) words.emplace_back(line.substr(start, i - start), line.substr(i, next - i));
        start = next;
        i = next - 1;
        if (next >= line.size()) break;
    }
    std::vector<std::string> lines;
    std::string current(line.substr(0, indent));
    bool has_word = false;  // the current line holds a word already
    for (const auto& [word, gap] : words) {
        if (has_word && visible_width(current) + visible_width(word) > width) {
            while (!current.empty() && current.back() == ' ') current.pop_back();
            lines.push_back(std::move(current));
            current.assign(indent + 2, ' ');
        }
        current += word;
        current += gap;
        has_word = true;
    }
    while (!current.empty() && current.back() == ' ') current.pop_back();
    lines.push_back(std::move(current));
    return lines;
}

// Writes `text` wrapped to `width` (0: as it is), each line ended.
inline void put_wrapped(std::ostream& out, std::string_view text, std::size_t width) {
    for (const auto& line : wrapped(text, width)) out << line << '\n';
}

// "d_in = 3, d_k = 2": the dimensions as the headings show them.
inline std::string dims_text(const Dims& dims) {
    std::string text;
    for (const auto& [name, value] : dims) text += (text.empty() ? "" : ", ") + name + " = " + std::to_string(value);
    return text;
}

}  // namespace attntrace
