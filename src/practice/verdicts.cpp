#include "practice/verdicts.hpp"

#include "attention/modes.hpp"
#include "attention/worked.hpp"
#include "core/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace attntrace {
namespace {

using Verdict = StageVerdict;

bool masked_entry(const Stage& stage, Eigen::Index r, Eigen::Index c) {
    return stage.is_masked(r, c) || !std::isfinite(stage.data(r, c));
}

// Does `given` match `value` (the trace's, or a mistake's)? A hidden entry matches a hidden
// one (or, in the weights, a weight of 0).
bool matches(const GivenNumber& given, double value, bool value_masked, StageId id, Dtype dtype) {
    if (given.masked) return value_masked || !std::isfinite(value) || (id == StageId::weights && value == 0);
    if (value_masked && id != StageId::weights) return false;
    if (!std::isfinite(value)) return false;
    return std::fabs(given.value - value) <= tolerance_for(given.decimals, value, dtype);
}

bool reproduces(const Matrix& m, const GivenStage& given, StageId id, Dtype dtype) {
    if (given.rows && (*given.rows != m.rows() || *given.cols != m.cols())) return false;
    for (const GivenNumber& n : given.numbers) {
        if (n.row >= m.rows() || n.col >= m.cols()) return false;
        if (!matches(n, m(n.row, n.col), false, id, dtype)) return false;
    }
    return true;
}

// The stage of the trace `given` names, refusing a head the run does not have.
const Stage& stage_for(const Trace& trace, const GivenStage& given) {
    const Stage* stage = trace.find(given.id, given.head);
    if (!stage) {
        if (given.head > 0 && trace.find(given.id))
            throw DataError(fmt::format("{}: this run has {} head{}, so there is no head {}{}",
                                        given.head_where.empty() ? given.where : given.head_where, trace.heads,
                                        trace.heads == 1 ? "" : "s", given.head,
                                        given.head_where.empty()
                                            ? ""
                                            : fmt::format(" (for {})", given.where.substr(given.where.rfind(": ") + 2))));
        throw DataError(fmt::format("{}: a {}-mode trace has no {} stage", given.where, to_string(trace.mode),
                                    to_string(given.id)));
    }
    if (stage->head > 0 && given.head == 0)
        throw DataError(fmt::format("{}: this run has {} heads: put the stage under \"heads\" ({{\"heads\": {{\"1\": "
                                    "{{\"{}\": ...}}}}}}) or name its head with \"head\"",
                                    given.where, trace.heads, to_string(given.id)));
    if (given.rows && (*given.rows != stage->row_count() || *given.cols != stage->col_count()))
        throw DataError(fmt::format("{}: a {}×{} matrix, but the {} stage of this run is {}×{}", given.where, *given.rows,
                                    *given.cols, to_string(given.id), stage->row_count(), stage->col_count()));
    for (const GivenNumber& n : given.numbers)
        if (n.row >= stage->row_count() || n.col >= stage->col_count()) {
            const std::string size = fmt::format("{}×{}", stage->row_count(), stage->col_count());
            // The tidy CSV: the line at fault, not the stage's first, where it is known.
            const std::string where = n.line > 0 ? fmt::format("{}: line {}", given.where.substr(0, given.where.rfind(": ")), n.line)
                                                 : given.where;
            if (given.counted_from_zero)
                throw DataError(fmt::format("{}: row {}, col {} is outside the {} stage of this run ({}: row and col "
                                            "count from 0 in the tidy CSV, up to {} and {})",
                                            where, n.row, n.col, to_string(given.id), size,
                                            stage->row_count() - 1, stage->col_count() - 1));
            throw DataError(fmt::format("{}: row {}, column {} is outside the {} stage of this run ({})", given.where,
                                        n.row + 1, n.col + 1, to_string(given.id), size));
        }
    return *stage;
}

// Finite numbers a learner wrote where the mask hides a score: the fills they may have used, the
// commonest first, and only those written in at least half of the hidden cells given (a learner
// uses one fill; a stage of many different numbers there used none, and trying each would cost
// a pass apiece).
std::vector<double> given_fills(const Trace& trace, const std::vector<GivenStage>& all, int head) {
    std::map<double, std::size_t> counts;
    std::size_t hidden = 0;
    for (const GivenStage& g : all) {
        if (g.id != StageId::masked || g.head != head) continue;
        const Stage* stage = trace.find(StageId::masked, head);
        if (!stage) continue;
        const Stage* scaled = trace.find(StageId::scaled, head);
        for (const GivenNumber& n : g.numbers)
            if (n.row < stage->row_count() && n.col < stage->col_count() && masked_entry(*stage, n.row, n.col)) {
                ++hidden;
                // The score itself, left where the mask hides it, is no fill: that is no_mask.
                const bool unmasked = scaled && matches(n, scaled->data(n.row, n.col), false, StageId::scaled, trace.dtype);
                if (!n.masked && !unmasked) ++counts[n.value];
            }
    }
    std::vector<std::pair<std::size_t, double>> common;
    for (const auto& [value, count] : counts)
        if (2 * count >= hidden) common.emplace_back(count, value);
    std::sort(common.begin(), common.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<double> fills;
    for (std::size_t i = 0; i < common.size() && i < max_learner_fills; ++i) fills.push_back(common[i].second);
    return fills;
}

Verdict verdict_for(const Trace& trace, const GivenStage& given, const std::vector<GivenStage>& all, WeightLayout layout) {
    Verdict v;
    v.given = &given;
    v.stage = &stage_for(trace, given);
    const Stage& stage = *v.stage;
    v.checked = given.numbers.size();
    for (const GivenNumber& n : given.numbers) {
        const double expected = stage.data(n.row, n.col);
        const bool hidden = masked_entry(stage, n.row, n.col);
        if (matches(n, expected, hidden, given.id, trace.dtype)) continue;
        v.agree = false;
        v.first = Verdict::Difference{n.row, n.col, expected, hidden, n,
                                      n.masked || !std::isfinite(expected) ? 0 : tolerance_for(n.decimals, expected, trace.dtype)};
        break;
    }
    if (v.agree) {
        if (given.id == StageId::weights)
            if (const auto renormalised = renormalised_after_softmax(trace, stage.head))
                v.equivalent_masking = reproduces(*renormalised, given, given.id, trace.dtype);
        return v;
    }
    MistakeContext context;
    context.layout = layout;
    context.fills = given_fills(trace, all, given.head);
    v.diagnoses = diagnose(
        trace, given.id, stage.head, [&](const Matrix& m) { return reproduces(m, given, given.id, trace.dtype); }, context);
    if (!v.diagnoses.empty()) return v;
    // No known mistake: the right arithmetic of the first row that differs.
    const Eigen::Index row = v.first->row;
    switch (given.id) {
    case StageId::queries:
    case StageId::keys:
    case StageId::values:
        if (trace.has_parameter("W_q")) v.worked_projection = work_projection(trace, given.id, row, stage.head);
        break;
    case StageId::scores:
    case StageId::scaled:
    case StageId::masked:
    case StageId::weights:
    case StageId::context: v.worked = work_through(trace, row, std::max(stage.head, 1)); break;
    case StageId::output:
        switch (family_of(trace.mode)) {  // concat·W_o, which only a single sequence's heads have
        case ModeFamily::single_sequence: v.worked_projection = work_through(trace, row, 1).output; break;
        case ModeFamily::encoder_decoder: break;
        }
        break;
    default: break;
    }
    return v;
}

}  // namespace

double tolerance_for(int decimals, double expected, Dtype dtype) {
    const double written = 0.5 * std::pow(10.0, -decimals);
    const double rounding = (dtype == Dtype::float32 ? 1e-6 : 1e-9) * std::max(1.0, std::fabs(expected));
    return std::max(written, rounding);
}

std::string tolerance_text(int decimals, double expected, Dtype dtype) {
    if (!std::isfinite(expected)) return {};
    const double written = 0.5 * std::pow(10.0, -decimals);
    const double tolerance = tolerance_for(decimals, expected, dtype);
    const std::string places = fmt::format("{} decimal{}", decimals, decimals == 1 ? "" : "s");
    if (tolerance == written) return fmt::format(" (±{:g} for {})", tolerance, places);
    // Half a unit of the last decimal, 5e-(decimals + 1), written out where a double cannot hold it.
    const std::string half_unit =
        written >= std::numeric_limits<double>::min() ? fmt::format("{:g}", written) : fmt::format("5e-{}", decimals + 1);
    return fmt::format(" (±{:g}, the rounding a {} run allows here; {} alone would allow ±{})", tolerance,
                       to_string(dtype), places, half_unit);
}

std::vector<StageVerdict> check_answers(const Trace& trace, const std::vector<GivenStage>& given, WeightLayout layout) {
    std::vector<StageVerdict> verdicts;
    for (const GivenStage& g : given) verdicts.push_back(verdict_for(trace, g, given, layout));
    // Pipeline order: by the stage's place in the trace.
    std::stable_sort(verdicts.begin(), verdicts.end(),
                     [](const Verdict& a, const Verdict& b) { return a.stage < b.stage; });
    return verdicts;
}

}  // namespace attntrace
