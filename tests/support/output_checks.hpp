// Checks of rendered output that hold whatever the input was, used by the fuzz target and by
// tests: JSON that parses and holds only finite numbers, SVG that is well-formed XML, text
// that cannot act on a terminal, CSV whose rows are as wide as their header, no number
// printed as nan or inf. Each returns a description of the first problem, or "" when none.
#pragma once

#include <nlohmann/json.hpp>

#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace output_checks {

// The code point at text[i] and its length in bytes; length 0 for ill-formed UTF-8.
inline std::pair<char32_t, std::size_t> decode(std::string_view text, std::size_t i) {
    const auto b0 = static_cast<unsigned char>(text[i]);
    if (b0 < 0x80) return {b0, 1};
    const std::size_t n = (b0 & 0xE0) == 0xC0 ? 2 : (b0 & 0xF0) == 0xE0 ? 3 : (b0 & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0 || i + n > text.size()) return {0, 0};
    char32_t cp = b0 & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
    for (std::size_t k = 1; k < n; ++k) {
        const auto b = static_cast<unsigned char>(text[i + k]);
        if ((b & 0xC0) != 0x80) return {0, 0};
        cp = (cp << 6) | (b & 0x3F);
    }
    return {cp, n};
}

inline bool acts_on_terminal(char32_t cp) {
    return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
           (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

// Valid UTF-8 with nothing that acts on a terminal but line breaks (and, with `colour`,
// SGR sequences "ESC [ digits and ; m", which only colour the text).
inline std::string terminal_problem(std::string_view text, bool colour) {
    for (std::size_t i = 0; i < text.size();) {
        if (colour && text.substr(i, 2) == "\x1b[") {
            std::size_t j = i + 2;
            while (j < text.size() && ((text[j] >= '0' && text[j] <= '9') || text[j] == ';')) ++j;
            if (j < text.size() && text[j] == 'm') {
                i = j + 1;
                continue;
            }
        }
        const auto [cp, n] = decode(text, i);
        if (n == 0) return "ill-formed UTF-8 at byte " + std::to_string(i);
        if (cp != '\n' && acts_on_terminal(cp)) return "terminal control U+" + std::to_string(cp) + " at byte " + std::to_string(i);
        i += n;
    }
    return "";
}

// No word "nan" or "inf" (any case) other than "-inf", the shown value of a masked score.
inline std::string number_problem(std::string_view text) {
    const auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    std::string lower(text);
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const std::string_view bad : {"nan", "inf"})
        for (std::size_t at = lower.find(bad); at != std::string::npos; at = lower.find(bad, at + 1)) {
            const bool starts = at == 0 || !word_char(lower[at - 1]);
            const bool ends = at + 3 == lower.size() || !word_char(lower[at + 3]);
            if (!starts || !ends) continue;
            if (bad == "inf" && at > 0 && lower[at - 1] == '-') continue;
            return "a number printed as " + std::string(bad) + " at byte " + std::to_string(at);
        }
    return "";
}

inline std::string finite_numbers(const nlohmann::json& value) {
    if (value.is_number_float() && !std::isfinite(value.get<double>())) return "a number that is not finite";
    if (value.is_structured())
        for (const auto& item : value)
            if (auto problem = finite_numbers(item); !problem.empty()) return problem;
    return "";
}

inline std::string json_problem(std::string_view text) {
    try {
        return finite_numbers(nlohmann::json::parse(text));
    } catch (const nlohmann::json::exception& e) {
        return std::string("invalid JSON: ") + e.what();
    }
}

// The XML that render_svg writes, checked strictly: a prolog, then elements whose tags
// balance under one root, attributes in double quotes, text and attribute values free of a
// raw '<' and of '&' that does not start an entity, and no character XML 1.0 forbids.
inline std::string svg_problem(std::string_view text) {
    const auto entity_at = [&](std::size_t i) {
        for (const std::string_view e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"})
            if (text.substr(i, e.size()) == e) return true;
        return false;
    };
    const auto name_at = [&](std::size_t& i) {
        const std::size_t from = i;
        while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '-' || text[i] == ':' || text[i] == '_'))
            ++i;
        return std::string(text.substr(from, i - from));
    };
    std::size_t i = 0;
    if (text.substr(0, 5) == "<?xml") {
        i = text.find("?>");
        if (i == std::string_view::npos) return "unterminated prolog";
        i += 2;
    }
    std::vector<std::string> open;
    bool root_seen = false;
    while (i < text.size()) {
        const char c = text[i];
        if (c == '<') {
            ++i;
            const bool closing = i < text.size() && text[i] == '/';
            if (closing) ++i;
            const std::string name = name_at(i);
            if (name.empty()) return "a tag without a name at byte " + std::to_string(i);
            if (closing) {
                if (open.empty() || open.back() != name) return "</" + name + "> does not close the open element";
                open.pop_back();
                if (i >= text.size() || text[i] != '>') return "bad closing tag " + name;
                ++i;
                continue;
            }
            if (open.empty() && root_seen) return "a second root element";
            root_seen = true;
            while (true) {  // attributes
                while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
                if (i >= text.size()) return "unterminated tag " + name;
                if (text[i] == '>' || text.substr(i, 2) == "/>") break;
                if (name_at(i).empty() || i + 1 >= text.size() || text[i] != '=' || text[i + 1] != '"')
                    return "bad attribute in <" + name + ">";
                for (i += 2; i < text.size() && text[i] != '"'; ++i) {
                    if (text[i] == '<') return "'<' in an attribute of <" + name + ">";
                    if (text[i] == '&' && !entity_at(i)) return "a bare '&' in an attribute of <" + name + ">";
                }
                if (i >= text.size()) return "unterminated attribute in <" + name + ">";
                ++i;
            }
            if (text[i] == '>') {
                open.push_back(name);
                ++i;
            } else {
                i += 2;  // "/>"
            }
            continue;
        }
        if (open.empty() && !std::isspace(static_cast<unsigned char>(c))) return "text outside the root element";
        if (c == '&' && !entity_at(i)) return "a bare '&' in text at byte " + std::to_string(i);
        const auto [cp, n] = decode(text, i);
        if (n == 0) return "ill-formed UTF-8 at byte " + std::to_string(i);
        if ((cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') || cp == 0xFFFE || cp == 0xFFFF)
            return "a character XML forbids at byte " + std::to_string(i);
        i += n;
    }
    if (!open.empty()) return "<" + open.back() + "> is never closed";
    return root_seen ? "" : "no root element";
}

// RFC 4180 fields of one record starting at `i` (which moves past its line break).
inline std::vector<std::string> csv_record(std::string_view text, std::size_t& i, bool& ok) {
    std::vector<std::string> fields(1);
    bool quoted = false;
    for (; i < text.size(); ++i) {
        const char c = text[i];
        if (quoted) {
            if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') fields.back() += '"', ++i;
            else if (c == '"') quoted = false;
            else fields.back() += c;
        } else if (c == '"') {
            quoted = true;
        } else if (c == ',') {
            fields.emplace_back();
        } else if (c == '\n') {
            ++i;
            return fields;
        } else {
            fields.back() += c;
        }
    }
    ok = !quoted;
    return fields;
}

// Blocks separated by empty lines; in each, the rows after a header ("row,…" of a stage, or
// the summary's "index,…") are exactly as wide as the header.
inline std::string csv_problem(std::string_view text) {
    std::size_t i = 0, width = 0, line = 0;
    while (i < text.size()) {
        ++line;
        if (text[i] == '\n') {  // an empty line: a new block
            ++i;
            width = 0;
            continue;
        }
        bool ok = true;
        const auto fields = csv_record(text, i, ok);
        if (!ok) return "an unterminated quoted field on line " + std::to_string(line);
        if (width == 0 && (fields.front() == "row" || fields.front() == "index")) {
            width = fields.size();
            continue;
        }
        if (width > 0 && fields.size() != width)
            return "line " + std::to_string(line) + " has " + std::to_string(fields.size()) + " fields, its header " +
                   std::to_string(width);
    }
    return "";
}

// JSON Lines: every line a whole JSON object, and the text ends with a line break.
inline std::string jsonl_problem(std::string_view text) {
    if (!text.empty() && text.back() != '\n') return "the last line has no line break";
    std::size_t line = 0;
    for (std::size_t start = 0; start < text.size();) {
        const std::size_t end = text.find('\n', start);
        ++line;
        const std::string problem = json_problem(text.substr(start, end - start));
        if (!problem.empty()) return "line " + std::to_string(line) + ": " + problem;
        start = end + 1;
    }
    return "";
}

// The tidy CSV (--tidy): its header, then records of 8 fields whose value is empty exactly
// where masked is true, and a number otherwise.
inline std::string tidy_csv_problem(std::string_view text) {
    const std::string_view header = "stage,head,row,col,row_token,col_token,value,masked\n";
    if (text.substr(0, header.size()) != header) return "no tidy header";
    std::size_t i = header.size(), line = 1;
    while (i < text.size()) {
        ++line;
        bool ok = true;
        const auto fields = csv_record(text, i, ok);
        if (!ok) return "an unterminated quoted field on line " + std::to_string(line);
        if (fields.size() != 8) return "line " + std::to_string(line) + " has " + std::to_string(fields.size()) + " fields";
        const std::string& value = fields[6];
        if (fields[7] != (value.empty() ? "true" : "false")) return "line " + std::to_string(line) + ": value and masked disagree";
        if (value.find_first_of("iInN") != std::string::npos)
            return "line " + std::to_string(line) + ": value " + value + " is not finite";
        char* end = nullptr;
        if (!value.empty() && (std::strtod(value.c_str(), &end), *end != '\0'))
            return "line " + std::to_string(line) + ": value " + value + " is not a number";
    }
    return "";
}

}  // namespace output_checks
