#include "attention/facts.hpp"

#include <algorithm>
#include <cmath>

namespace attntrace {
namespace {

// The standard deviation of the visible entries (0 when there are none): in two passes so that
// large means do not cancel, on the entries divided by the largest magnitude so that squares
// of numbers near the double range do not overflow.
double spread(const Stage& stage) {
    double largest = 0, count = 0;
    for (Eigen::Index r = 0; r < stage.row_count(); ++r)
        for (Eigen::Index c = 0; c < stage.col_count(); ++c)
            if (!stage.is_masked(r, c)) largest = std::max(largest, std::abs(stage.data(r, c))), ++count;
    if (count == 0 || largest == 0) return 0;
    double sum = 0;
    for (Eigen::Index r = 0; r < stage.row_count(); ++r)
        for (Eigen::Index c = 0; c < stage.col_count(); ++c)
            if (!stage.is_masked(r, c)) sum += stage.data(r, c) / largest;
    const double mean = sum / count;
    double squares = 0;
    for (Eigen::Index r = 0; r < stage.row_count(); ++r)
        for (Eigen::Index c = 0; c < stage.col_count(); ++c)
            if (!stage.is_masked(r, c)) {
                const double d = stage.data(r, c) / largest - mean;
                squares += d * d;
            }
    return largest * std::sqrt(squares / count);
}

// Why row r cannot be compared both ways, if it cannot: the division gives a distribution only
// for scores of 0 or more with a positive sum.
enum class Left { none, negative, zero, blind };

// The largest weight of row r each way: softmax of the scores at temperature T, and the scores
// divided by their sum. Nothing when a visible score is negative, they are all 0 or no key is
// visible (`why` says which).
std::optional<RunFacts::Row> both_ways(const Stage& scores, Eigen::Index r, double temperature, Left& why) {
    double largest = 0;
    bool visible = false;
    why = Left::none;
    for (Eigen::Index c = 0; c < scores.col_count(); ++c) {
        if (scores.is_masked(r, c)) continue;
        visible = true;
        if (!(scores.data(r, c) >= 0)) {
            why = Left::negative;
            return std::nullopt;
        }
        largest = std::max(largest, scores.data(r, c));
    }
    if (!visible || !(largest > 0)) {
        why = visible ? Left::zero : Left::blind;
        return std::nullopt;
    }
    // Σ s / largest rather than largest / Σ s: a sum of scores near the double range overflows.
    double exps = 0, shares = 0;
    for (Eigen::Index c = 0; c < scores.col_count(); ++c)
        if (!scores.is_masked(r, c)) {
            exps += std::exp((scores.data(r, c) - largest) / temperature);
            shares += scores.data(r, c) / largest;
        }
    return RunFacts::Row{scores.rows[static_cast<std::size_t>(r)], 1 / exps, 1 / shares};
}

}  // namespace

void observe(Trace& trace) {
    trace.facts.clear();
    for (int head = trace.heads > 1 ? 1 : 0; head <= (trace.heads > 1 ? trace.heads : 0); ++head) {
        RunFacts& facts = trace.facts.emplace_back();
        facts.score_spread = spread(trace.at(StageId::scores, head));
        facts.scaled_spread = spread(trace.at(StageId::scaled, head));
        // The scores the weights come from: scaled and masked. Softmax at T = 1 when the run
        // divided by the sum (the temperature applies to softmax only).
        const Stage& masked = trace.at(StageId::masked, head);
        const double temperature = trace.normalization == Normalization::softmax ? trace.temperature : 1;
        double widest = -1;
        for (Eigen::Index r = 0; r < masked.row_count(); ++r) {
            Left why = Left::none;
            const auto row = both_ways(masked, r, temperature, why);
            facts.negative_rows += why == Left::negative;
            facts.zero_rows += why == Left::zero;
            facts.blind_rows += why == Left::blind;
            if (!row) continue;
            ++facts.compared_rows;
            facts.softmax_higher += row->by_softmax > row->by_sum;
            facts.softmax_lower += row->by_softmax < row->by_sum;
            if (const double gap = std::abs(row->by_softmax - row->by_sum); gap > widest) {
                widest = gap;
                facts.example = row;
            }
        }
    }
}

}  // namespace attntrace
