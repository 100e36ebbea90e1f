#include "attention/masks.hpp"

#include "util/parallel.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

namespace attntrace {

bool MaskSpec::any() const {
    return causal || window || std::find(padding.begin(), padding.end(), true) != padding.end();
}

std::optional<Mask> build_mask(const MaskSpec& spec, Eigen::Index n) {
    if (!spec.any()) return std::nullopt;
    Mask mask{BoolMatrix(n, n), ReasonMatrix(n, n)};
#pragma omp parallel for schedule(static) if (worth_threads(4.0 * static_cast<double>(n) * static_cast<double>(n)))
    for (Eigen::Index i = 0; i < n; ++i)
        for (Eigen::Index j = 0; j < n; ++j) {
            std::uint8_t why = 0;
            if (spec.causal && j > i) why |= reason_causal;
            if (spec.window && (spec.causal ? i - j >= *spec.window : std::abs(i - j) >= *spec.window)) why |= reason_window;
            if (!spec.padding.empty() && spec.padding[static_cast<std::size_t>(j)]) why |= reason_padding;
            mask.reasons(i, j) = why;
            mask.allowed(i, j) = why == 0;
        }
    return mask;
}

std::optional<std::string> padding_note(const MaskSpec& spec, const std::vector<std::string>& tokens, double leaked,
                                        bool undivided) {
    std::vector<std::string> padded;
    for (std::size_t i = 0; i < spec.padding.size(); ++i)
        if (spec.padding[i]) padded.push_back(fmt::format("{} (position {})", tokens[i], i + 1));
    if (padded.empty()) return std::nullopt;
    constexpr std::size_t named = 8;  // a long padded input names the first few
    const std::size_t count = padded.size();
    if (count > named) padded.resize(named);
    const std::string list = fmt::format("{}{}", fmt::join(padded, ", "), count > named ? fmt::format(" and {} more", count - named) : "");
    const std::string attended =
        leaked > 0 ? fmt::format("{} {} hidden from every query, yet the finite --mask-fill still gives {} weight (up to "
                                 "{:.6g})",
                                 list, count == 1 ? "is" : "are", count == 1 ? "it" : "them", leaked)
                   : "no query attends to " + list;
    return fmt::format("padding: {}; their own rows are computed {}, but they stand for nothing, and a model ignores "
                       "what comes out of them",
                       attended, undivided ? "up to the scores (see the --normalize sum note)" : "like any other");
}

std::string reason_text(std::uint8_t reasons) {
    std::string text;
    for (const auto& [bit, name] : {std::pair{reason_causal, "causal"}, {reason_window, "window"}, {reason_padding, "padding"}})
        if (reasons & bit) {
            if (!text.empty()) text += '+';
            text += name;
        }
    return text;
}

std::string mask_title(const MaskSpec& spec) {
    std::vector<std::string> parts;
    if (spec.causal) parts.push_back("later positions");
    if (spec.window) parts.push_back(fmt::format("keys outside the window of {}", *spec.window));
    if (std::find(spec.padding.begin(), spec.padding.end(), true) != spec.padding.end()) parts.push_back("padding");
    std::string text;
    for (std::size_t k = 0; k < parts.size(); ++k) text += (k == 0 ? "" : k + 1 == parts.size() ? " and " : ", ") + parts[k];
    return "Masked scores: " + text + " excluded";
}

std::string mask_formula(const MaskSpec& spec, std::string_view scores_name, std::string_view fill) {
    std::vector<std::string> parts;
    if (spec.causal) parts.push_back("key j > query i");
    if (spec.window)
        parts.push_back(spec.causal ? fmt::format("i − j ≥ {}", *spec.window) : fmt::format("|i − j| ≥ {}", *spec.window));
    if (std::find(spec.padding.begin(), spec.padding.end(), true) != spec.padding.end()) parts.push_back("key j is padding");
    std::string text;
    for (std::size_t k = 0; k < parts.size(); ++k) text += (k == 0 ? "" : " or ") + parts[k];
    return fmt::format("S'' = {} with {} where {}", scores_name, fill, text);
}

}  // namespace attntrace
