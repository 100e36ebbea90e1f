#include "attention/check.hpp"

#include "attention/modes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace attntrace {
namespace {

std::string entry(const Stage& stage, Eigen::Index r, Eigen::Index c) {
    return fmt::format("\"{}\" (row {}), \"{}\" (column {})", stage.rows[static_cast<std::size_t>(r)], r + 1,
                       stage.cols[static_cast<std::size_t>(c)], c + 1);
}

CheckResult all_finite(const Trace& trace) {
    CheckResult result{"every number is finite", "", true, ""};
    std::size_t numbers = 0, masked = 0;
    for (const auto& stage : trace.stages)
        for (Eigen::Index r = 0; r < stage.row_count(); ++r)
            for (Eigen::Index c = 0; c < stage.col_count(); ++c) {
                const double x = stage.data(r, c);
                const bool masked_score = stage.is_masked(r, c) && x == -INFINITY && stage.id != StageId::weights;
                ++numbers;
                masked += masked_score;
                if (!std::isfinite(x) && !masked_score && result.passed) {
                    result.passed = false;
                    result.failure = fmt::format("the {} stage holds {} at {}", stage.name(), x, entry(stage, r, c));
                }
            }
    result.measured = masked == 0 ? fmt::format("{} numbers, none infinite or NaN", numbers)
                                  : fmt::format("{} numbers, none infinite or NaN but the {} masked scores, −∞ by design",
                                                numbers, masked);
    return result;
}

CheckResult masked_weights_are_zero(const Stage& weights) {
    CheckResult result{"masked weights are exactly 0", "", true, ""};
    std::size_t masked = 0;
    double largest = 0;
    for (Eigen::Index r = 0; r < weights.row_count(); ++r)
        for (Eigen::Index c = 0; c < weights.col_count(); ++c) {
            if (!weights.is_masked(r, c)) continue;
            ++masked;
            largest = std::max(largest, std::abs(weights.data(r, c)));
            if (weights.data(r, c) != 0.0 && result.passed) {
                result.passed = false;
                result.failure = fmt::format("the masked weight at {} is {}, not exactly 0", entry(weights, r, c),
                                             weights.data(r, c));
            }
        }
    result.measured = masked == 0 ? "nothing is masked in this run"
                                  : fmt::format("largest |masked weight| = {:g} over {} masked entries", largest, masked);
    return result;
}

CheckResult rows_sum_to_one(const Stage& weights, double tolerance) {
    CheckResult result{"each row of weights sums to 1", "", true, ""};
    double largest = 0;
    std::size_t blind = 0;  // rows whose every key is masked: they sum to 0
    for (Eigen::Index r = 0; r < weights.row_count(); ++r) {
        double sum = 0;
        bool any_visible = false;
        for (Eigen::Index c = 0; c < weights.col_count(); ++c) {
            sum += weights.data(r, c);
            any_visible = any_visible || !weights.is_masked(r, c);
        }
        const double expected = any_visible ? 1.0 : 0.0;
        blind += !any_visible;
        const double gap = std::abs(sum - expected);
        largest = std::isnan(gap) ? gap : std::max(largest, gap);
        if (!(gap <= tolerance) && result.passed) {
            result.passed = false;
            result.failure = fmt::format("the weights of \"{}\" (row {}) sum to {}, not {} (tolerance {:g})",
                                         weights.rows[static_cast<std::size_t>(r)], r + 1, sum, expected, tolerance);
        }
    }
    result.measured = fmt::format("largest |row sum − 1| = {:.2g} (tolerance {:g}){}", largest, tolerance,
                                  blind == 0 ? "" : fmt::format("; {} rows with every key masked sum to 0", blind));
    return result;
}

// z_i = Σ_j a_ij·v_j, with plain loops, against the context stage.
CheckResult context_is_weighted_sum(const Stage& weights, const Stage& values, const Stage& context, double tolerance) {
    CheckResult result{"context = weights · values", "", true, ""};
    double largest = 0;
    for (Eigen::Index i = 0; i < context.row_count(); ++i)
        for (Eigen::Index k = 0; k < context.col_count(); ++k) {
            double sum = 0, magnitude = 0;
            for (Eigen::Index j = 0; j < weights.col_count(); ++j) {
                sum += weights.data(i, j) * values.data(j, k);
                magnitude += std::abs(weights.data(i, j) * values.data(j, k));
            }
            const double gap = std::abs(context.data(i, k) - sum);
            largest = std::isnan(gap) ? gap : std::max(largest, gap);
            if (!(gap <= tolerance * (1 + magnitude)) && result.passed) {
                result.passed = false;
                result.failure = fmt::format("the context at {} is {}, but weights · values gives {}",
                                             entry(context, i, k), context.data(i, k), sum);
            }
        }
    result.measured = fmt::format("largest |context − weights·values| = {:.2g}, recomputed with plain loops "
                                  "(tolerance {:g} × (1 + Σ|a·v|))",
                                  largest, tolerance);
    return result;
}

std::optional<std::string> negative_weights(const Stage& weights) {
    const Eigen::Index count = (weights.data.array() < 0).count();
    if (count == 0) return std::nullopt;
    return fmt::format("{} weight{} negative (the smallest {:.4g}): dividing by the row sum keeps the sign of each "
                       "score, so a row with negative scores is not a probability distribution; softmax never "
                       "gives a negative weight",
                       count, count == 1 ? " is" : "s are", weights.data.minCoeff());
}

}  // namespace

bool CheckReport::passed() const {
    return std::all_of(checks.begin(), checks.end(), [](const CheckResult& c) { return c.passed; });
}

std::optional<std::string> CheckReport::first_failure() const {
    for (const auto& c : checks)
        if (!c.passed) return c.failure;
    return std::nullopt;
}

CheckReport check_trace(const Trace& trace) {
    CheckReport report;
    report.checks.push_back(all_finite(trace));
    const Stage& weights = trace.at(StageId::weights);
    const double tolerance = trace.dtype == Dtype::float64 ? 1e-12 : 1e-5;
    report.checks.push_back(masked_weights_are_zero(weights));
    report.checks.push_back(rows_sum_to_one(weights, tolerance));
    const Stage& values = trace.at(mode_spec(trace.mode).reads_pair ? StageId::encoder_states : StageId::values);
    report.checks.push_back(context_is_weighted_sum(weights, values, trace.at(StageId::context), tolerance));
    if (auto warning = negative_weights(weights)) report.warnings.push_back(std::move(*warning));
    return report;
}

std::optional<std::string> first_failed_check(const Trace& trace) { return check_trace(trace).first_failure(); }

}  // namespace attntrace
