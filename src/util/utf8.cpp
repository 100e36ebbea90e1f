#include "util/utf8.hpp"

#include <fmt/format.h>
#include <utf8proc.h>

#include <algorithm>
#include <cstdint>

namespace attntrace {
namespace {

struct Decoded {
    char32_t code_point = 0;
    std::size_t length = 0;  // 0: ill-formed
};

Decoded decode(std::string_view text) {
    if (text.empty()) return {};
    const auto b0 = static_cast<unsigned char>(text[0]);
    if (b0 < 0x80) return {b0, 1};
    std::size_t length = 0;
    char32_t cp = 0;
    char32_t min = 0;
    if ((b0 & 0xE0) == 0xC0) {
        length = 2, cp = b0 & 0x1F, min = 0x80;
    } else if ((b0 & 0xF0) == 0xE0) {
        length = 3, cp = b0 & 0x0F, min = 0x800;
    } else if ((b0 & 0xF8) == 0xF0) {
        length = 4, cp = b0 & 0x07, min = 0x10000;
    } else {
        return {};
    }
    if (text.size() < length) return {};
    for (std::size_t i = 1; i < length; ++i) {
        const auto b = static_cast<unsigned char>(text[i]);
        if ((b & 0xC0) != 0x80) return {};
        cp = (cp << 6) | (b & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {};
    return {cp, length};
}

bool in(char32_t cp, char32_t first, char32_t last) { return cp >= first && cp <= last; }

// One grapheme cluster (Unicode's user-perceived character, as utf8proc segments text): its
// length in bytes and the columns a terminal gives it. An ill-formed byte is a cluster of its
// own, one column wide (a terminal shows a replacement character).
struct Cluster {
    std::size_t length = 0;
    std::size_t width = 0;
};

Cluster next_cluster(std::string_view text) {
    const Decoded first = decode(text);
    if (first.length == 0) return {1, 1};
    std::size_t i = first.length;
    std::size_t width = static_cast<std::size_t>(std::max(0, utf8proc_charwidth(static_cast<utf8proc_int32_t>(first.code_point))));
    std::size_t count = 1;
    // An emoji sequence: joined by U+200D, with the emoji presentation selector U+FE0F or a
    // skin tone U+1F3FB–1F3FF, or a flag of two regional indicators. A terminal that knows
    // it draws one emoji, two columns wide, where the characters' widths would add up to more.
    bool emoji_sequence = false;
    utf8proc_int32_t state = 0;
    utf8proc_int32_t previous = static_cast<utf8proc_int32_t>(first.code_point);
    while (i < text.size()) {
        const Decoded d = decode(text.substr(i));
        if (d.length == 0) break;
        const auto cp = static_cast<utf8proc_int32_t>(d.code_point);
        if (utf8proc_grapheme_break_stateful(previous, cp, &state)) break;
        emoji_sequence = emoji_sequence || cp == 0x200D || cp == 0xFE0F || in(d.code_point, 0x1F3FB, 0x1F3FF) ||
                         in(d.code_point, 0x1F1E6, 0x1F1FF);
        width += static_cast<std::size_t>(std::max(0, utf8proc_charwidth(cp)));
        previous = cp;
        i += d.length;
        ++count;
    }
    return {i, emoji_sequence && count > 1 ? 2 : width};
}

}  // namespace

void append_utf8(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

std::size_t utf8_sequence_length(std::string_view text) { return decode(text).length; }

bool is_control_or_format(char32_t cp) {
    return cp < 0x20 || in(cp, 0x7F, 0x9F) || cp == 0x061C || in(cp, 0x200E, 0x200F) || in(cp, 0x2028, 0x202E) ||
           in(cp, 0x2066, 0x2069);
}

std::optional<char32_t> first_control_character(std::string_view text) {
    for (std::size_t i = 0; i < text.size();) {
        const auto d = decode(text.substr(i));
        if (d.length == 0) {
            ++i;
            continue;
        }
        if (is_control_or_format(d.code_point)) return d.code_point;
        i += d.length;
    }
    return std::nullopt;
}

std::string printable(std::string_view text, std::size_t max_chars) {
    std::string out;
    std::size_t chars = 0;
    for (std::size_t i = 0; i < text.size(); ++chars) {
        if (chars == max_chars) {
            out += "…";
            break;
        }
        const auto d = decode(text.substr(i));
        const auto byte = static_cast<unsigned char>(text[i]);
        if (d.length == 0 || (d.length == 1 && is_control_or_format(d.code_point))) {
            out += fmt::format("\\x{:02x}", byte);
            ++i;
            continue;
        }
        if (is_control_or_format(d.code_point)) out += fmt::format("\\u{:04X}", static_cast<std::uint32_t>(d.code_point));
        else out.append(text.substr(i, d.length));
        i += d.length;
    }
    return out;
}

std::size_t utf8_length(std::string_view text) {
    std::size_t count = 0;
    for (std::size_t i = 0; i < text.size(); ++count) {
        const auto n = decode(text.substr(i)).length;
        i += n == 0 ? 1 : n;
    }
    return count;
}

std::size_t display_width(std::string_view text) {
    // Printable ASCII alone (most cells: numbers, English tokens): each byte is a cluster of
    // its own, one column wide. No ASCII character joins the next one, and none is printable
    // but zero-width; a control character, or any byte past 0x7E, takes the full path.
    if (std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c < 0x7F; })) return text.size();
    std::size_t width = 0;
    for (std::size_t i = 0; i < text.size();) {
        const Cluster c = next_cluster(text.substr(i));
        width += c.width;
        i += c.length;
    }
    return width;
}

std::string fold_case(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const auto d = decode(text.substr(i));
        if (d.length == 0) {
            out += text[i++];
            continue;
        }
        append_utf8(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(d.code_point))));
        i += d.length;
    }
    return out;
}

std::string_view prefix_within_width(std::string_view text, std::size_t columns) {
    std::size_t width = 0;
    std::size_t i = 0;
    while (i < text.size()) {
        const Cluster c = next_cluster(text.substr(i));
        if (width + c.width > columns) break;  // never half a cluster: its marks stay with it
        width += c.width;
        i += c.length;
    }
    return text.substr(0, i);
}

std::string bounded_list(const std::vector<std::string>& items, std::size_t max_items) {
    std::vector<std::string> shown;
    for (std::size_t i = 0; i < items.size() && i < max_items; ++i) shown.push_back(printable(items[i], 24));
    return bounded_join(shown, items.size());
}

std::string bounded_join(const std::vector<std::string>& shown, std::size_t total, std::string_view separator) {
    std::string out;
    for (std::size_t i = 0; i < shown.size(); ++i) {
        if (i) out += separator;
        out += shown[i];
    }
    if (total > shown.size()) out += fmt::format("{}… ({} more)", separator, total - shown.size());
    return out;
}

}  // namespace attntrace
