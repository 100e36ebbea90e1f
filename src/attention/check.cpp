#include "attention/check.hpp"

#include "attention/modes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace attntrace {
namespace {

std::string entry(const Stage& stage, Eigen::Index r, Eigen::Index c) {
    return fmt::format("{}\"{}\" (row {}), \"{}\" (column {})", stage.head > 0 ? fmt::format("head {}, ", stage.head) : "",
                       stage.rows[static_cast<std::size_t>(r)], r + 1, stage.cols[static_cast<std::size_t>(c)], c + 1);
}

// The stages `id` of every head, in head order (one with one head).
std::vector<const Stage*> per_head(const Trace& trace, StageId id) {
    std::vector<const Stage*> out;
    for (const auto& stage : trace.stages)
        if (stage.id == id) out.push_back(&stage);
    return out;
}

// Records the first failure of a check.
void fail(CheckResult& result, std::string failure) {
    if (!result.passed) return;
    result.passed = false;
    result.failure = std::move(failure);
}

// The largest gap so far; a NaN gap stays (it compares false with everything).
double widest(double largest, double gap) { return std::isnan(gap) || std::isnan(largest) ? NAN : std::max(largest, gap); }

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
                if (!std::isfinite(x) && !masked_score)
                    fail(result, fmt::format("the {} stage holds {} at {}", stage.name(), x, entry(stage, r, c)));
            }
    result.measured = masked == 0 ? fmt::format("{} numbers, none infinite or NaN", numbers)
                                  : fmt::format("{} numbers, none infinite or NaN but the {} masked score{}, −∞ by design",
                                                numbers, masked, masked == 1 ? "" : "s");
    return result;
}

CheckResult masked_weights_are_zero(const std::vector<const Stage*>& heads) {
    CheckResult result{"masked weights are exactly 0", "", true, ""};
    std::size_t masked = 0;
    double largest = 0;
    for (const Stage* weights : heads)
        for (Eigen::Index r = 0; r < weights->row_count(); ++r)
            for (Eigen::Index c = 0; c < weights->col_count(); ++c) {
                if (!weights->is_masked(r, c)) continue;
                ++masked;
                largest = widest(largest, std::abs(weights->data(r, c)));
                if (weights->data(r, c) != 0.0)
                    fail(result, fmt::format("the masked weight at {} is {}, not exactly 0", entry(*weights, r, c),
                                             weights->data(r, c)));
            }
    result.measured = masked == 0 ? "nothing is masked in this run"
                                  : fmt::format("largest |masked weight| = {:g} over {} masked entr{}", largest, masked,
                                                masked == 1 ? "y" : "ies");
    return result;
}

// `by_sum`: the weights divide by the row sum, and a padding row whose scores could not divide
// was left at 0 (attention/single.cpp): such a row (its own key hidden, every weight 0) sums to 0.
CheckResult rows_sum_to_one(const std::vector<const Stage*>& heads, double tolerance, bool by_sum) {
    CheckResult result{"each row of weights sums to 1", "", true, ""};
    double largest = 0;
    std::size_t blind = 0;  // rows whose every key is masked: they sum to 0
    std::size_t undivided = 0;  // padding rows the sum could not divide
    for (const Stage* weights : heads)
        for (Eigen::Index r = 0; r < weights->row_count(); ++r) {
            double sum = 0;
            bool any_visible = false;
            for (Eigen::Index c = 0; c < weights->col_count(); ++c) {
                sum += weights->data(r, c);
                any_visible = any_visible || !weights->is_masked(r, c);
            }
            const bool padding_left = by_sum && any_visible && r < weights->col_count() && weights->is_masked(r, r) &&
                                      weights->data.row(r).isZero(0);
            const double expected = any_visible && !padding_left ? 1.0 : 0.0;
            blind += !any_visible;
            undivided += padding_left;
            const double gap = std::abs(sum - expected);
            largest = widest(largest, gap);
            if (!(gap <= tolerance))
                fail(result, fmt::format("the weights of {}\"{}\" (row {}) sum to {}, not {} (tolerance {:g})",
                                         weights->head > 0 ? fmt::format("head {}, ", weights->head) : "",
                                         weights->rows[static_cast<std::size_t>(r)], r + 1, sum, expected, tolerance));
        }
    result.measured = fmt::format("largest |row sum − 1| = {:.2g} (tolerance {:g}){}", largest, tolerance,
                                  (blind == 0   ? ""
                                       : blind == 1 ? std::string("; 1 row with every key masked sums to 0")
                                                    : fmt::format("; {} rows with every key masked sum to 0", blind)) +
                                      (undivided == 0 ? ""
                                                      : undivided == 1 ? std::string("; 1 padding row left at 0 (its scores "
                                                                                     "could not be divided by their sum) sums to 0")
                                                                       : fmt::format("; {} padding rows left at 0 (their scores "
                                                                                     "could not be divided by their sums) sum to 0",
                                                                                     undivided)));
    return result;
}

// out = a·b with plain loops, entry by entry against `out`'s stage; the largest gap into
// `largest`, the first disagreement into `result`.
void check_product(CheckResult& result, double& largest, const Matrix& a, const Matrix& b, const Stage& out,
                   std::string_view product, double tolerance, const Matrix* bias = nullptr) {
    for (Eigen::Index i = 0; i < out.row_count(); ++i)
        for (Eigen::Index k = 0; k < out.col_count(); ++k) {
            double sum = bias ? (*bias)(0, k) : 0, magnitude = bias ? std::abs((*bias)(0, k)) : 0;
            for (Eigen::Index j = 0; j < a.cols(); ++j) {
                sum += a(i, j) * b(j, k);
                magnitude += std::abs(a(i, j) * b(j, k));
            }
            const double gap = std::abs(out.data(i, k) - sum);
            largest = widest(largest, gap);
            if (!(gap <= tolerance * (1 + magnitude)))
                fail(result, fmt::format("the {} at {} is {}, but {} gives {}", out.name(), entry(out, i, k), out.data(i, k),
                                         product, sum));
        }
}

// z_i = Σ_j a_ij·v_j, with plain loops, against the context stage of every head.
CheckResult context_is_weighted_sum(const Trace& trace, double tolerance) {
    CheckResult result{"context = weights · values", "", true, ""};
    const bool pair = mode_spec(trace.mode).reads_pair;
    double largest = 0;
    for (const Stage* context : per_head(trace, StageId::context))
        check_product(result, largest, trace.at(StageId::weights, context->head).data,
                      trace.at(pair ? StageId::encoder_states : StageId::values, context->head).data, *context,
                      "weights · values", tolerance);
    result.measured = fmt::format("largest |context − weights·values| = {:.2g}, recomputed with plain loops "
                                  "(tolerance {:g} × (1 + Σ|a·v|))",
                                  largest, tolerance);
    return result;
}

// Several heads (or a W_o): the output is concat·W_o, and the heads' contributions add up to it.
std::vector<CheckResult> output_checks(const Trace& trace, double tolerance) {
    const Stage* output = trace.find(StageId::output);
    if (!output) return {};
    const Stage* concat = trace.find(StageId::concat);
    const Matrix* bias = trace.has_parameter("b_o") ? &trace.parameter("b_o").data : nullptr;
    const std::string plus = bias ? " + b_o" : "";
    CheckResult product{(concat ? "output = concat · W_o" : "output = context · W_o") + plus, "", true, ""};
    double largest = 0;
    check_product(product, largest, (concat ? *concat : trace.at(StageId::context)).data, trace.parameter("W_o").data,
                  *output, (concat ? "concat · W_o" : "context · W_o") + plus, tolerance, bias);
    // The whole product is subtracted: |output − (concat·W_o + b_o)|, brackets and all.
    const std::string product_text = fmt::format("{}·W_o{}", concat ? "concat" : "context", plus);
    product.measured = fmt::format("largest |output − {}| = {:.2g}, recomputed with plain loops",
                                   bias ? "(" + product_text + ")" : product_text, largest);
    std::vector<CheckResult> out{std::move(product)};
    const auto parts = per_head(trace, StageId::head_contributions);
    if (parts.empty()) return out;
    CheckResult sum{bias ? "the heads' contributions plus b_o add up to the output"
                         : "the heads' contributions add up to the output",
                    "", true, ""};
    double gap_largest = 0;
    for (Eigen::Index i = 0; i < output->row_count(); ++i)
        for (Eigen::Index k = 0; k < output->col_count(); ++k) {
            double total = bias ? (*bias)(0, k) : 0, magnitude = bias ? std::abs((*bias)(0, k)) : 0;
            for (const Stage* part : parts) total += part->data(i, k), magnitude += std::abs(part->data(i, k));
            const double gap = std::abs(output->data(i, k) - total);
            gap_largest = widest(gap_largest, gap);
            if (!(gap <= tolerance * (1 + magnitude)))
                fail(sum, fmt::format("the output at {} is {}, but the heads' contributions{} add up to {}",
                                      entry(*output, i, k), output->data(i, k), plus, total));
        }
    sum.measured = fmt::format("largest |output − (Σ contributions{})| = {:.2g} over {} heads", plus, gap_largest,
                               parts.size());
    out.push_back(std::move(sum));
    return out;
}

std::optional<std::string> negative_weights(const std::vector<const Stage*>& heads) {
    Eigen::Index count = 0;
    double smallest = 0;
    for (const Stage* weights : heads) {
        count += (weights->data.array() < 0).count();
        smallest = std::min(smallest, weights->data.minCoeff());
    }
    if (count == 0) return std::nullopt;
    return fmt::format("{} weight{} negative (the smallest {:.4g}): dividing by the row sum keeps the sign of each "
                       "score, so a row with negative scores is not a probability distribution; softmax never "
                       "gives a negative weight",
                       count, count == 1 ? " is" : "s are", smallest);
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
    const auto weights = per_head(trace, StageId::weights);
    const double tolerance = trace.dtype == Dtype::float64 ? 1e-12 : 1e-5;
    report.checks.push_back(masked_weights_are_zero(weights));
    report.checks.push_back(rows_sum_to_one(weights, tolerance, trace.normalization == Normalization::sum));
    report.checks.push_back(context_is_weighted_sum(trace, tolerance));
    for (auto& check : output_checks(trace, tolerance)) report.checks.push_back(std::move(check));
    if (auto warning = negative_weights(weights)) report.warnings.push_back(std::move(*warning));
    return report;
}

std::optional<std::string> first_failed_check(const Trace& trace) { return check_trace(trace).first_failure(); }

}  // namespace attntrace
