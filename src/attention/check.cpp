#include "attention/check.hpp"

#include "attention/modes.hpp"

#include <fmt/format.h>

#include <cmath>

namespace attntrace {
namespace {

std::string entry(const Stage& stage, Eigen::Index r, Eigen::Index c) {
    return fmt::format("\"{}\" (row {}), \"{}\" (column {})", stage.rows[static_cast<std::size_t>(r)], r + 1,
                       stage.cols[static_cast<std::size_t>(c)], c + 1);
}

std::optional<std::string> non_finite(const Stage& stage) {
    for (Eigen::Index r = 0; r < stage.row_count(); ++r)
        for (Eigen::Index c = 0; c < stage.col_count(); ++c) {
            const double x = stage.data(r, c);
            const bool masked_score = stage.is_masked(r, c) && x == -INFINITY && stage.id != StageId::weights;
            if (!std::isfinite(x) && !masked_score)
                return fmt::format("the {} stage holds {} at {}", stage.name(), x, entry(stage, r, c));
        }
    return std::nullopt;
}

std::optional<std::string> masked_weights_are_zero(const Stage& weights) {
    for (Eigen::Index r = 0; r < weights.row_count(); ++r)
        for (Eigen::Index c = 0; c < weights.col_count(); ++c)
            if (weights.is_masked(r, c) && weights.data(r, c) != 0.0)
                return fmt::format("the masked weight at {} is {}, not exactly 0", entry(weights, r, c),
                                   weights.data(r, c));
    return std::nullopt;
}

std::optional<std::string> rows_sum_to_one(const Stage& weights, double tolerance) {
    for (Eigen::Index r = 0; r < weights.row_count(); ++r) {
        double sum = 0;
        bool any_visible = false;
        for (Eigen::Index c = 0; c < weights.col_count(); ++c) {
            sum += weights.data(r, c);
            any_visible = any_visible || !weights.is_masked(r, c);
        }
        const double expected = any_visible ? 1.0 : 0.0;
        if (!(std::abs(sum - expected) <= tolerance))
            return fmt::format("the weights of \"{}\" (row {}) sum to {}, not {} (tolerance {:g})",
                               weights.rows[static_cast<std::size_t>(r)], r + 1, sum, expected, tolerance);
    }
    return std::nullopt;
}

// z_i = Σ_j a_ij·v_j, with plain loops, against the context stage.
std::optional<std::string> context_is_weighted_sum(const Stage& weights, const Stage& values,
                                                   const Stage& context, double tolerance) {
    for (Eigen::Index i = 0; i < context.row_count(); ++i)
        for (Eigen::Index k = 0; k < context.col_count(); ++k) {
            double sum = 0, magnitude = 0;
            for (Eigen::Index j = 0; j < weights.col_count(); ++j) {
                sum += weights.data(i, j) * values.data(j, k);
                magnitude += std::abs(weights.data(i, j) * values.data(j, k));
            }
            if (!(std::abs(context.data(i, k) - sum) <= tolerance * (1 + magnitude)))
                return fmt::format("the context at {} is {}, but weights · values gives {}",
                                   entry(context, i, k), context.data(i, k), sum);
        }
    return std::nullopt;
}

}  // namespace

std::optional<std::string> first_failed_check(const Trace& trace) {
    for (const auto& stage : trace.stages)
        if (auto failure = non_finite(stage)) return failure;
    const Stage& weights = trace.at(StageId::weights);
    const double tolerance = trace.dtype == Dtype::float64 ? 1e-12 : 1e-5;
    if (auto failure = masked_weights_are_zero(weights)) return failure;
    if (auto failure = rows_sum_to_one(weights, tolerance)) return failure;
    const Stage& values = trace.at(mode_spec(trace.mode).reads_pair ? StageId::encoder_states : StageId::values);
    return context_is_weighted_sum(weights, values, trace.at(StageId::context), tolerance);
}

}  // namespace attntrace
