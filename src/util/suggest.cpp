#include "util/suggest.hpp"

#include "util/utf8.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

namespace attntrace {
namespace {

// Edits from a to b: insertions, deletions, substitutions, and swaps of two neighbouring
// characters ("weigths", "gtp2"), each one edit (the optimal string alignment distance).
std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> before(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
    std::iota(previous.begin(), previous.end(), std::size_t{0});
    for (std::size_t i = 1; i <= a.size(); ++i) {
        current[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t substitute = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
            current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitute});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                current[j] = std::min(current[j], before[j - 2] + 1);
        }
        std::swap(before, previous);
        std::swap(previous, current);
    }
    return previous[b.size()];
}

}  // namespace

std::vector<std::size_t> closest(std::string_view word, std::size_t total,
                                 const std::function<std::string_view(std::size_t)>& candidate, std::size_t count,
                                 std::size_t max_pairs) {
    if (word.size() > max_suggested_chars) return {};
    const std::string folded = fold_case(word);
    std::vector<std::pair<std::size_t, std::size_t>> ranked;  // (distance, index)
    std::size_t pairs = 0;
    for (std::size_t i = 0; i < total && pairs < max_pairs; ++i) {
        const std::string_view name = candidate(i);
        if (name.size() > max_suggested_chars) continue;
        const std::string other = fold_case(name);
        pairs += (folded.size() + 1) * (other.size() + 1);
        ranked.emplace_back(edit_distance(folded, other), i);
    }
    const std::size_t kept = std::min(count, ranked.size());
    std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(kept), ranked.end());
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < kept; ++i) out.push_back(ranked[i].second);
    return out;
}

std::vector<std::string> closest_names(std::string_view word, const std::vector<std::string>& names, std::size_t count) {
    std::vector<std::string> out;
    for (const std::size_t i : closest(word, names.size(), [&](std::size_t j) { return std::string_view(names[j]); }, count))
        out.push_back(names[i]);
    return out;
}

std::optional<std::string> likely_typo(std::string_view word, const std::vector<std::string>& names) {
    return likely_typo(word, names.size(), [&](std::size_t i) { return std::string_view(names[i]); });
}

std::optional<std::string> likely_typo(std::string_view word, std::size_t total,
                                       const std::function<std::string_view(std::size_t)>& candidate,
                                       std::size_t max_pairs) {
    if (word.size() > max_suggested_chars) return std::nullopt;
    const std::string folded = fold_case(word);
    std::optional<std::string> best;
    std::size_t best_distance = std::max<std::size_t>(1, folded.size() / 3) + 1;
    std::size_t pairs = 0;
    for (std::size_t i = 0; i < total && pairs < max_pairs; ++i) {
        const std::string_view name = candidate(i);
        if (name.size() > max_suggested_chars) continue;
        const std::string other = fold_case(name);
        pairs += (folded.size() + 1) * (other.size() + 1);
        const std::size_t d = edit_distance(folded, other);
        if (d < best_distance) best_distance = d, best = std::string(name);
    }
    if (best || folded.size() < 3) return best;
    // The start of one name alone ("stream" for streaming), and of no other.
    for (std::size_t i = 0; i < total && i < max_pairs; ++i) {
        const std::string_view name = candidate(i);
        if (!fold_case(name).starts_with(folded)) continue;
        if (best && *best != name) return std::nullopt;
        best = std::string(name);
    }
    return best;
}

}  // namespace attntrace
