// The step every mode shares: scores (after scaling and masking) → attention weights.
#pragma once

#include "attention/kernels.hpp"
#include "attention/stage_builder.hpp"

#include <string>
#include <vector>

namespace attntrace {

// Normalises each row of `scores` (softmax, or division by the row sum) and appends the
// `weights` stage with each row's sum. `scores_name` is the symbol of the input matrix in the
// formula ("S''", "e"). Masked entries (−∞) get weight exactly 0.
template <typename T>
MatrixT<T> add_weights_stage(StageBuilder& stages, Trace& trace, const MatrixT<T>& scores,
                             const BoolMatrix* mask, std::string_view weights_name,
                             std::string_view scores_name, std::string title_detail,
                             Labels rows, Labels cols) {
    MatrixT<T> weights;
    std::string title, formula;
    if (trace.normalization == Normalization::softmax) {
        weights = row_softmax<T>(scores);
        title = "Attention weights: softmax of each row";
        formula = fmt::format("{} = softmax({}) per row", weights_name, scores_name);
    } else {
        if (const auto bad = row_sum_normalize<T>(scores, weights); bad >= 0) {
            const auto finite = scores.row(bad).unaryExpr(
                [](T s) { return std::isfinite(s) ? s : T(0); });
            throw DataError(fmt::format(
                "{}: cannot normalise by the sum: the scores of \"{}\" (row {}) sum to {}, not a "
                "finite positive number; use --normalize softmax",
                trace.origin, rows[static_cast<std::size_t>(bad)], bad + 1,
                static_cast<double>(finite.sum())));
        }
        title = "Attention weights: each row divided by its sum";
        formula = fmt::format("{} = {} / (row sum of {})", weights_name, scores_name, scores_name);
    }
    if (trace.normalization == Normalization::sum && (weights.array() < 0).any())
        trace.notes.push_back("some scores are negative, so dividing by the row sum gives negative "
                        "weights; softmax (the default) always gives weights in [0, 1]");
    if (!title_detail.empty()) title += " — " + title_detail;
    Stage& stage = stages.add("weights", std::move(title), std::move(formula), std::move(rows),
                              std::move(cols), weights, mask);
    stage.row_sums = stage.data.rowwise().sum().transpose();
    std::vector<std::string> blind;  // rows whose every key is masked
    for (Eigen::Index r = 0; r < stage.data.rows(); ++r) {
        if (mask && !mask->row(r).any()) {
            stage.strongest.push_back(-1);
            blind.push_back(stage.rows[static_cast<std::size_t>(r)]);
            continue;
        }
        Eigen::Index column = 0;
        stage.data.row(r).maxCoeff(&column);  // the first of equal maxima
        stage.strongest.push_back(column);
    }
    if (!blind.empty())
        trace.notes.push_back(fmt::format("every key is masked for {}: their weights are all 0 (a softmax over "
                                          "no keys would be 0/0) and their context vectors 0",
                                          fmt::join(blind, ", ")));
    return weights;
}

}  // namespace attntrace
