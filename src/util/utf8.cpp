#include "util/utf8.hpp"

#include <fmt/format.h>

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

bool is_zero_width(char32_t cp) {
    return in(cp, 0x0300, 0x036F) || in(cp, 0x0483, 0x0489) || in(cp, 0x0591, 0x05BD) ||
           in(cp, 0x0610, 0x061A) || in(cp, 0x064B, 0x065F) || in(cp, 0x1AB0, 0x1AFF) ||
           in(cp, 0x1DC0, 0x1DFF) || in(cp, 0x200B, 0x200F) || in(cp, 0x20D0, 0x20FF) ||
           in(cp, 0xFE00, 0xFE0F) || in(cp, 0xFE20, 0xFE2F) || cp < 0x20 || in(cp, 0x7F, 0x9F);
}

bool is_wide(char32_t cp) {
    return in(cp, 0x1100, 0x115F) || (in(cp, 0x2E80, 0xA4CF) && cp != 0x303F) ||
           in(cp, 0xAC00, 0xD7A3) || in(cp, 0xF900, 0xFAFF) || in(cp, 0xFE30, 0xFE4F) ||
           in(cp, 0xFF00, 0xFF60) || in(cp, 0xFFE0, 0xFFE6) || in(cp, 0x1F300, 0x1F64F) ||
           in(cp, 0x1F900, 0x1F9FF) || in(cp, 0x20000, 0x3FFFD);
}

char32_t fold(char32_t cp) {
    if (in(cp, 'A', 'Z')) return cp + 0x20;
    if (in(cp, 0xC0, 0xDE) && cp != 0xD7) return cp + 0x20;         // À…Þ except ×
    if (in(cp, 0x0100, 0x0137) || in(cp, 0x014A, 0x0177))            // Ā ā … pairs
        return cp | 1;
    if (in(cp, 0x0139, 0x0148) || in(cp, 0x0179, 0x017E))            // Ĺ ĺ … pairs
        return (cp & 1) ? cp + 1 : cp;
    if (in(cp, 0x0391, 0x03A9) && cp != 0x03A2) return cp + 0x20;    // Greek capitals
    if (in(cp, 0x0410, 0x042F)) return cp + 0x20;                    // Cyrillic А…Я
    if (in(cp, 0x0400, 0x040F)) return cp + 0x50;                    // Cyrillic Ѐ…Џ
    return cp;
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
    std::size_t width = 0;
    for (std::size_t i = 0; i < text.size();) {
        const auto d = decode(text.substr(i));
        if (d.length == 0) {
            ++width;  // shown as a replacement character
            ++i;
            continue;
        }
        width += is_zero_width(d.code_point) ? 0 : is_wide(d.code_point) ? 2 : 1;
        i += d.length;
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
        append_utf8(out, fold(d.code_point));
        i += d.length;
    }
    return out;
}

std::string_view prefix_within_width(std::string_view text, std::size_t columns) {
    std::size_t width = 0;
    std::size_t i = 0;
    while (i < text.size()) {
        const auto d = decode(text.substr(i));
        const std::size_t n = d.length == 0 ? 1 : d.length;
        const std::size_t w = d.length == 0 ? 1 : display_width(text.substr(i, n));
        if (width + w > columns) break;
        width += w;
        i += n;
    }
    // Keep combining marks that follow the last character we kept.
    while (i < text.size()) {
        const auto d = decode(text.substr(i));
        if (d.length == 0 || !is_zero_width(d.code_point) || d.code_point < 0x300) break;
        i += d.length;
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
