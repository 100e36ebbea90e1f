// The vocabulary of the whole program: the choices a run is made of, each an enum with one
// table of names. Messages, the JSON output and the command line's lists of values all read
// the names from these tables. No Eigen here: this header is for code that only names things.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace attntrace {

enum class Mode { plain, self, causal, bahdanau };
enum class Normalization { softmax, sum };
enum class Dtype { float64, float32 };
// How bahdanau mode scores a decoder state s against an encoder state h.
enum class Score { additive, dot, general };
// Where the projection weights of a run came from.
enum class WeightsOrigin { none, file, generated };
// What the scores are divided by (--scale): √d_k, nothing, or a number given.
enum class ScaleRule { sqrt, none, value };
// How a run tells attention where each token stands (--positions): not at all, sinusoidal
// encodings added to the embeddings, or queries and keys rotated by their position (RoPE).
enum class PositionScheme { none, sinusoidal, rope };

// How a weight matrix is stored (--layout, "layout"): d_in × d_out, used as X·W (our row
// vectors, GPT-2's Conv1D), or d_out × d_in, PyTorch nn.Linear's (out, in), used as X·Wᵀ.
enum class WeightLayout { in_out, out_in };

// A model whose own tensor names attntrace reads (--from).
enum class ModelFamily { gpt2 };

template <typename E, std::size_t N>
using NameTable = std::array<std::pair<E, std::string_view>, N>;

inline constexpr NameTable<Mode, 4> mode_names{{
    {Mode::plain, "plain"}, {Mode::self, "self"}, {Mode::causal, "causal"}, {Mode::bahdanau, "bahdanau"}}};
inline constexpr NameTable<Normalization, 2> normalization_names{{{Normalization::softmax, "softmax"}, {Normalization::sum, "sum"}}};
inline constexpr NameTable<Dtype, 2> dtype_names{{{Dtype::float64, "float64"}, {Dtype::float32, "float32"}}};
inline constexpr NameTable<Score, 3> score_names{{{Score::additive, "additive"}, {Score::dot, "dot"}, {Score::general, "general"}}};
inline constexpr NameTable<ScaleRule, 3> scale_rule_names{{{ScaleRule::sqrt, "sqrt"}, {ScaleRule::none, "none"}, {ScaleRule::value, "value"}}};
inline constexpr NameTable<PositionScheme, 3> position_scheme_names{
    {{PositionScheme::none, "none"}, {PositionScheme::sinusoidal, "sinusoidal"}, {PositionScheme::rope, "rope"}}};
inline constexpr NameTable<WeightLayout, 2> weight_layout_names{{{WeightLayout::in_out, "in_out"}, {WeightLayout::out_in, "out_in"}}};
inline constexpr NameTable<ModelFamily, 1> model_family_names{{{ModelFamily::gpt2, "gpt2"}}};

// The table of an enum, found by overload.
constexpr const auto& names_of(Mode) { return mode_names; }
constexpr const auto& names_of(Normalization) { return normalization_names; }
constexpr const auto& names_of(Dtype) { return dtype_names; }
constexpr const auto& names_of(Score) { return score_names; }
constexpr const auto& names_of(ScaleRule) { return scale_rule_names; }
constexpr const auto& names_of(PositionScheme) { return position_scheme_names; }
constexpr const auto& names_of(WeightLayout) { return weight_layout_names; }
constexpr const auto& names_of(ModelFamily) { return model_family_names; }

// An enum with a table of names (found by names_of).
template <typename E>
concept Named = std::is_enum_v<E> && requires(E e) { names_of(e); };

template <Named E>
constexpr std::string_view to_string(E value) {
    for (const auto& [v, name] : names_of(value))
        if (v == value) return name;
    return "?";
}

template <Named E>
constexpr std::optional<E> parse_enum(std::string_view text) {
    for (const auto& [v, name] : names_of(E{}))
        if (name == text) return v;
    return std::nullopt;
}

// Every name of E, in table order (for the command line's lists of values).
template <Named E>
std::vector<std::string> enum_names() {
    std::vector<std::string> names;
    for (const auto& [v, name] : names_of(E{})) names.emplace_back(name);
    return names;
}

// "plain, self, causal, bahdanau": for messages and help texts.
template <Named E>
std::string enum_list() {
    std::string list;
    for (const auto& [v, name] : names_of(E{})) list += (list.empty() ? "" : ", ") + std::string(name);
    return list;
}

// "plain, self, causal or bahdanau": the same, as a choice (for help texts).
template <Named E>
std::string enum_choices() {
    const auto& names = names_of(E{});
    std::string list;
    for (std::size_t i = 0; i < names.size(); ++i)
        list += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + std::string(names[i].second);
    return list;
}

// A dimension of a run as the headings and the JSON name it: ("d_in", 3).
using Dims = std::vector<std::pair<std::string, std::int64_t>>;

}  // namespace attntrace
