// The summary's rows as text, shared by the table and markdown formats (which show the first
// and last rows of a long list; JSON and CSV hold every query).
#pragma once

#include "attention/summary.hpp"
#include "render/number.hpp"

#include <fmt/format.h>

#include <string>

namespace attntrace {

// Rows shown before and after the elided middle.
inline constexpr std::size_t summary_rows_shown = 10;

// "head 2 of 4 · key/value head 1": the heading of one head's rows (empty with one head).
inline std::string head_heading(const Summary& s, const HeadSummary& h) {
    if (h.head == 0) return {};
    return fmt::format("head {} of {}{}", h.head, s.heads, h.kv_head > 0 ? fmt::format(" · key/value head {}", h.kv_head) : "");
}

// Which rows a long list shows: all, or the first and last summary_rows_shown.
inline bool shown(std::size_t i, std::size_t n) {
    return n <= 2 * summary_rows_shown + 1 || i < summary_rows_shown || i >= n - summary_rows_shown;
}

// "journey 0.2379, starts 0.2333": a query's strongest keys with their weights.
inline std::string top_text(const Summary& s, const QuerySummary& q, int digits) {
    std::string text;
    for (const auto& key : q.top)
        text += fmt::format("{}{} {}", text.empty() ? "" : ", ", s.tokens[static_cast<std::size_t>(key.index)],
                            format_significant(key.weight, digits));
    return text;
}

}  // namespace attntrace
