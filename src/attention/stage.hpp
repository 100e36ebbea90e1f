// The product of `trace`: an ordered list of labelled matrices, one per step of the lecture
// pipeline (scores → scaling → masking → softmax → weighted sum). Renderers only format this.
#pragma once

#include "attention/labels.hpp"
#include "attention/types.hpp"
#include "attention/worked.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attntrace {

struct Stage {
    std::string name;     // stable: "scores", "weights", … (used by --stage and JSON consumers)
    std::string title;    // for people: "Attention weights"
    std::string formula;  // plain text: "S = Q·Kᵀ"
    bool applied = true;
    std::string reason;   // when !applied: one line saying why this mode skips the step
    Labels rows;  // row labels (queries, tokens)
    Labels cols;  // column labels (keys, or dimensions "x1", "x2", …)
    // The matrix as it stands after this stage (a skipped stage passes its input through).
    // A masked entry is −∞.
    Matrix data;
    std::optional<BoolMatrix> allowed;  // where a mask is in play: may row i use column j
    std::optional<Vector> row_sums;     // weights: each row's sum, shown beside the table
    std::vector<Eigen::Index> strongest;  // weights: per row, the column of the largest weight (-1: all masked)

    Eigen::Index row_count() const { return data.rows(); }
    Eigen::Index col_count() const { return data.cols(); }
    bool is_masked(Eigen::Index r, Eigen::Index c) const { return allowed && !(*allowed)(r, c); }
};

enum class WeightsOrigin { none, file, generated };

struct Trace {
    Mode mode = Mode::plain;
    Normalization normalization = Normalization::softmax;
    Dtype dtype = Dtype::float64;
    Score score = Score::additive;  // bahdanau mode: how s and h are scored
    std::string origin;       // where the input came from
    std::string description;  // the input's one-line description
    // Single-sequence modes: tokens. Bahdanau: source_tokens (columns) and target_tokens (rows).
    Labels tokens;
    Labels source_tokens;
    Labels target_tokens;
    std::vector<std::pair<std::string, Eigen::Index>> dims;  // ("d_in", 3), ("d_k", 2), …
    WeightsOrigin weights = WeightsOrigin::none;
    std::uint64_t seed = 0;  // when weights are generated
    std::vector<Stage> stages;
    // Things the learner should know about this run that no single stage shows (one line each).
    std::vector<std::string> notes;
    std::optional<WorkedExample> worked;  // --query: one row's arithmetic

    const Stage* find(std::string_view name) const {
        for (const auto& stage : stages)
            if (stage.name == name) return &stage;
        return nullptr;
    }
};

// The stable stage names of the single-sequence modes, in pipeline order.
inline constexpr std::string_view single_sequence_stages[] = {
    "inputs", "queries", "keys", "values", "scores", "scaled", "masked", "weights", "context"};

}  // namespace attntrace
