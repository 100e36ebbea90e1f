#include "attention/types.hpp"

#include <array>
#include <utility>

namespace attntrace {
namespace {
constexpr std::array<std::pair<Mode, std::string_view>, 4> mode_table{{
    {Mode::plain, "plain"},
    {Mode::self, "self"},
    {Mode::causal, "causal"},
    {Mode::bahdanau, "bahdanau"},
}};
}  // namespace

std::string_view to_string(Mode mode) {
    for (const auto& [m, name] : mode_table)
        if (m == mode) return name;
    return "?";
}

std::optional<Mode> parse_mode(std::string_view text) {
    for (const auto& [m, name] : mode_table)
        if (name == text) return m;
    return std::nullopt;
}

std::string mode_names() {
    std::string names;
    for (const auto& [m, name] : mode_table) {
        if (!names.empty()) names += ", ";
        names += name;
    }
    return names;
}

std::string_view to_string(Normalization normalization) {
    return normalization == Normalization::softmax ? "softmax" : "sum";
}

std::string_view to_string(Score score) {
    switch (score) {
    case Score::additive: return "additive";
    case Score::dot: return "dot";
    case Score::general: return "general";
    }
    return "?";
}

std::string_view to_string(Dtype dtype) { return dtype == Dtype::float64 ? "float64" : "float32"; }

std::optional<Dtype> parse_dtype(std::string_view text) {
    for (const Dtype dtype : {Dtype::float64, Dtype::float32})
        if (to_string(dtype) == text) return dtype;
    return std::nullopt;
}

}  // namespace attntrace
