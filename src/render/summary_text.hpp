// The summary's rows as text, shared by the table, markdown and CSV formats (table and
// markdown show the first and last rows of a long list; JSON and CSV hold every query).
#pragma once

#include "attention/summary.hpp"
#include "render/number.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

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

// A query's strongest keys as printed: their weights in `digits` significant digits, largest
// first, and keys whose weights print the same in key order. The weights are ranked exactly,
// and two that are equal in exact arithmetic can differ in their last bit, one way with one
// CPU's kernels and the other way with another's: the order printed does not depend on it.
struct ShownKey {
    std::size_t index;
    std::string weight;
};
inline std::vector<ShownKey> shown_top(const QuerySummary& q, int digits) {
    std::vector<ShownKey> keys;
    for (const auto& key : q.top)
        keys.push_back({static_cast<std::size_t>(key.index), format_significant(key.weight, digits)});
    for (auto run = keys.begin(); run != keys.end();) {
        const auto end = std::find_if(run, keys.end(), [&](const ShownKey& k) { return k.weight != run->weight; });
        std::sort(run, end, [](const ShownKey& a, const ShownKey& b) { return a.index < b.index; });
        run = end;
    }
    return keys;
}

// "journey 0.2379, starts 0.2333": a query's strongest keys with their weights.
inline std::string top_text(const Summary& s, const QuerySummary& q, int digits) {
    std::string text;
    for (const ShownKey& key : shown_top(q, digits))
        text += fmt::format("{}{} {}", text.empty() ? "" : ", ", s.tokens[key.index], key.weight);
    return text;
}

}  // namespace attntrace
