// The step every mode shares: scores (after scaling and masking) → attention weights.
#pragma once

#include "attention/kernels.hpp"
#include "attention/stage_builder.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>
#include <string>
#include <vector>

namespace attntrace {

// Each row of the scores normalised: softmax, or division by the row sum. `bad_row` is the
// first row whose sum cannot divide (sum normalisation only); its weights are left at 0.
// `overflow` is the first finite score that S / T made infinite (a temperature below 1).
template <typename T>
struct Normalized {
    MatrixT<T> weights;
    std::optional<Eigen::Index> bad_row;
    std::optional<std::pair<Eigen::Index, Eigen::Index>> overflow;
};

// The first entry that is finite in `before` but not in `after`.
template <typename T>
std::optional<std::pair<Eigen::Index, Eigen::Index>> first_new_infinity(const MatrixT<T>& before, const MatrixT<T>& after) {
    for (Eigen::Index r = 0; r < before.rows(); ++r)
        for (Eigen::Index c = 0; c < before.cols(); ++c)
            if (std::isfinite(before(r, c)) && !std::isfinite(after(r, c))) return std::pair{r, c};
    return std::nullopt;
}

// Softmax divides the scores by the temperature T first (softmax(S / T)); dividing by the
// row sum is the same for any T, so it ignores it.
template <typename T>
Normalized<T> normalize_rows(const MatrixT<T>& scores, Normalization normalization, double temperature) {
    Normalized<T> out;
    if (normalization == Normalization::softmax && temperature == 1) {
        out.weights = row_softmax<T>(scores);
    } else if (normalization == Normalization::softmax) {
        const MatrixT<T> tempered = scale_scores<T>(scores, static_cast<T>(temperature));
        out.overflow = first_new_infinity<T>(scores, tempered);
        if (!out.overflow) out.weights = row_softmax<T>(tempered);
    } else if (const Eigen::Index bad = row_sum_normalize<T>(scores, out.weights); bad >= 0) {
        out.bad_row = bad;
    }
    return out;
}

// How the weights stage names its matrices: the weights' symbol ("A", "α"), the symbol of the
// scores they come from ("S''", "e"), and a detail for the title.
struct WeightsNames {
    std::string_view weights;
    std::string_view scores;
    std::string title_detail;
};

// Weights within this fraction of each other tie: equal up to the rounding of the working
// precision (keys with equal scores get exactly equal weights; a few ulps cover the rest).
template <typename T>
inline constexpr double tie_tolerance = 4 * std::numeric_limits<T>::epsilon();

// Appends the `weights` stage with each row's sum and strongest key, and notes what the
// learner should know (negative weights, rows whose every key is masked). A row whose sum
// could not divide is refused here, in pipeline order, after the stages before it.
// A note joins the trace once, however many heads give it.
inline void add_note(Trace& trace, std::string note) {
    if (std::find(trace.notes.begin(), trace.notes.end(), note) == trace.notes.end()) trace.notes.push_back(std::move(note));
}

template <typename T>
void record_weights(StageBuilder& stages, Trace& trace, Normalized<T> normalized, const MatrixT<T>& scores,
                    const BoolMatrix* mask, const WeightsNames& names, Labels rows, Labels cols, int head = 0) {
    if (normalized.overflow) {
        const auto [r, c] = *normalized.overflow;
        throw_overflow(trace.origin, {StageId::weights, head}, rows[static_cast<std::size_t>(r)], r, cols[static_cast<std::size_t>(c)],
                       c, static_cast<double>(scores(r, c) / static_cast<T>(trace.temperature)),
                       fmt::format("{} / T", names.scores), division_overflow_cause(1, trace.temperature));
    }
    if (normalized.bad_row) {
        const Eigen::Index bad = *normalized.bad_row;
        const auto finite = scores.row(bad).unaryExpr([](T s) { return std::isfinite(s) ? s : T(0); });
        throw DataError(fmt::format(
            "{}: cannot normalise by the sum: the scores of \"{}\" (row {}) sum to {}, not a "
            "finite positive number; use --normalize softmax",
            trace.origin, rows[static_cast<std::size_t>(bad)], bad + 1, static_cast<double>(finite.sum())));
    }
    const bool softmax = trace.normalization == Normalization::softmax;
    const bool tempered = softmax && trace.temperature != 1;
    std::string title = softmax ? "Attention weights: softmax of each row" : "Attention weights: each row divided by its sum";
    if (tempered) title += fmt::format(" at temperature T = {}", trace.temperature);
    if (!names.title_detail.empty()) title += " — " + names.title_detail;
    const std::string formula = !softmax  ? fmt::format("{} = {} / (row sum of {})", names.weights, names.scores, names.scores)
                                : tempered ? fmt::format("{} = softmax({} / T) per row", names.weights, names.scores)
                                           : fmt::format("{} = softmax({}) per row", names.weights, names.scores);
    if (!softmax && trace.temperature != 1)
        add_note(trace, fmt::format("--temperature {} changes nothing here: dividing by the row sum gives the "
                                          "same weights for scores divided by any T (softmax is the one that changes)",
                                          trace.temperature));
    if (!softmax && (normalized.weights.array() < 0).any())
        add_note(trace, "some scores are negative, so dividing by the row sum gives negative "
                              "weights; softmax (the default) always gives weights in [0, 1]");
    Stage& stage = stages.add(StageId::weights, std::move(title), formula, std::move(rows), std::move(cols),
                              std::move(normalized.weights), mask);
    stage.row_sums = stage.data.rowwise().sum().transpose();
    std::vector<std::string> blind, filled;  // rows whose every key is masked: weights 0, or not (a finite fill)
    for (Eigen::Index r = 0; r < stage.data.rows(); ++r) {
        if (mask && !mask->row(r).any()) {
            stage.strongest.push_back(-1);
            stage.tied.push_back(0);
            // A label that more than one row has (two <pad>s) is told apart by its position.
            const std::string& label = stage.rows[static_cast<std::size_t>(r)];
            const bool shared = std::count(stage.rows.begin(), stage.rows.end(), label) > 1;
            (stage.data.row(r).isZero(0) ? blind : filled)
                .push_back(shared ? fmt::format("{} (position {})", label, r + 1) : label);
            continue;
        }
        if (!softmax && stage.data.row(r).isZero(0)) {  // a padding row the sum could not divide: no strongest key
            stage.strongest.push_back(-1);
            stage.tied.push_back(0);
            continue;
        }
        Eigen::Index column = 0;
        const double top = stage.data.row(r).maxCoeff(&column);  // the first of equal maxima
        stage.strongest.push_back(column);
        stage.tied.push_back((stage.data.row(r).array() >= top - std::abs(top) * tie_tolerance<T>).count());
    }
    // "its weights" for one row, "their weights" for several.
    const auto their = [](const std::vector<std::string>& rows) { return rows.size() == 1 ? "its" : "their"; };
    if (!blind.empty())
        add_note(trace, fmt::format("every key is masked for {}: {} weights are all 0 (a softmax over no keys would be "
                                    "0/0) and {} context vector{} 0",
                                    fmt::join(blind, ", "), their(blind), their(blind), blind.size() == 1 ? "" : "s"));
    if (!filled.empty())
        add_note(trace, fmt::format("every key is masked for {}, yet {} weights are not 0: a finite fill is an "
                                    "ordinary score to softmax, so the hidden keys share the row's weight",
                                    fmt::join(filled, ", "), their(filled)));
}

}  // namespace attntrace
