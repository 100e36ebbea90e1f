// Shared vocabulary of the core: matrices, modes and normalisations.
#pragma once

#include <Eigen/Core>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attntrace {

// Row vectors everywhere: one token per row, so a projection is X·W with W of shape d_in × d_out.
template <typename T>
using MatrixT = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Matrix = MatrixT<double>;
using Vector = Eigen::Matrix<double, 1, Eigen::Dynamic>;  // one row
// allowed(i, j): may query i attend to key j.
using BoolMatrix = Eigen::Array<bool, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

enum class Mode { plain, self, causal, bahdanau };
enum class Normalization { softmax, sum };
enum class Dtype { float64, float32 };
// How bahdanau mode scores a decoder state s against an encoder state h.
enum class Score { additive, dot, general };

std::string_view to_string(Mode mode);
std::optional<Mode> parse_mode(std::string_view text);
std::string_view to_string(Normalization normalization);
std::string_view to_string(Dtype dtype);
std::optional<Dtype> parse_dtype(std::string_view text);
std::string_view to_string(Score score);

// "plain, self, causal, bahdanau": for messages and help texts.
std::string mode_names();

// Single-sequence modes read one sentence; bahdanau reads a source and a target.
inline bool is_single_sequence(Mode mode) { return mode != Mode::bahdanau; }

}  // namespace attntrace
