#include "commands/check_answers_command.hpp"

#include "attention/modes.hpp"
#include "attention/worked.hpp"
#include "commands/guards.hpp"
#include "core/error.hpp"
#include "input/examples.hpp"
#include "input/source.hpp"
#include "render/worked_text.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
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
            throw DataError(fmt::format("{}: this run has {} head{}, so there is no head {}", given.where, trace.heads,
                                        trace.heads == 1 ? "" : "s", given.head));
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
        if (n.row >= stage->row_count() || n.col >= stage->col_count())
            throw DataError(fmt::format("{}: row {}, column {} is outside the {} stage of this run ({}×{})", given.where,
                                        n.row + 1, n.col + 1, to_string(given.id), stage->row_count(),
                                        stage->col_count()));
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

std::string stage_name(const Stage& stage) {
    return stage.head > 0 ? fmt::format("{} (head {})", stage.name(), stage.head) : std::string(stage.name());
}

// The expected value of an entry: a hidden score is −∞, a hidden key's weight 0.
std::string expected_text(const Trace& trace, const Verdict::Difference& d, StageId id, int decimals) {
    if (d.expected_masked && id == StageId::weights) {
        const std::string_view hidden = [&]() -> std::string_view {
            switch (family_of(trace.mode)) {
            case ModeFamily::single_sequence: return "key";
            case ModeFamily::encoder_decoder: return "source position";
            }
            unknown_family();
        }();
        return fmt::format("0 (a hidden {})", hidden);
    }
    if (d.expected_masked) return "hidden (−∞)";
    return fmt::format("{:.{}f}", d.expected, std::clamp(decimals, 0, 17));
}

void write_text(const Trace& trace, const std::vector<Verdict>& verdicts, const RenderOptions& render, std::ostream& out) {
    std::size_t differing = 0;
    for (const Verdict& v : verdicts) {
        const Stage& s = *v.stage;
        if (v.agree) {
            out << fmt::format("{}: {} number{} given, all agree\n", stage_name(s), v.checked, v.checked == 1 ? "" : "s");
            if (v.equivalent_masking)
                out << "  Masking after the softmax and then dividing each row by its new sum gives these same "
                       "weights: it is equivalent to hiding the scores before the softmax.\n";
            continue;
        }
        ++differing;
        const auto& d = *v.first;
        const int decimals = std::max(d.given.decimals, render.digits);
        out << fmt::format("{}: differs at row {} ({}), column {} ({}): expected {}, given {}", stage_name(s), d.row + 1,
                           s.rows[static_cast<std::size_t>(d.row)], d.col + 1, s.cols[static_cast<std::size_t>(d.col)],
                           expected_text(trace, d, s.id, decimals), d.given.text);
        if (!d.given.masked) out << tolerance_text(d.given.decimals, d.expected, trace.dtype);
        out << "\n";
        if (!v.diagnoses.empty()) {
            const Diagnosis& first = v.diagnoses.front();
            out << fmt::format("  Likely cause ({}), reproducing {} given: {}\n", mistake_info(first.mistake).name,
                               v.checked == 1 ? std::string("the one number") : fmt::format("all {} numbers", v.checked),
                               first.explanation);
            for (std::size_t i = 1; i < v.diagnoses.size(); ++i)
                out << fmt::format("  Or ({}), which reproduces them too: {}\n", mistake_info(v.diagnoses[i].mistake).name,
                                   v.diagnoses[i].explanation);
        } else {
            const bool worked = v.worked || v.worked_projection;
            out << "  No known mistake reproduces these numbers.";
            if (worked) out << fmt::format(" Row {} worked through:", d.row + 1);
            out << "\n";
            if (v.worked)
                for (const auto& line : worked_lines(*v.worked, render.digits)) out << "    " << line << "\n";
            if (v.worked_projection) {
                const WorkedProjection& p = *v.worked_projection;
                out << fmt::format("    {} = {}·{}{}{}\n", p.output, p.input_label, p.matrix,
                                   p.bias.empty() ? "" : " + " + p.bias_name,
                                   s.head > 0 ? fmt::format(", the columns of head {}", s.head) : "");
                for (const auto& line : projection_lines(p, render.digits)) out << "    " << line << "\n";
            }
        }
    }
    out << fmt::format("verdict: {} ({} of {} stage{} agree{})\n", differing == 0 ? "pass" : "fail",
                       verdicts.size() - differing, verdicts.size(), verdicts.size() == 1 ? "" : "s",
                       verdicts.size() - differing == 1 ? "s" : "");
}

nlohmann::ordered_json number_json(double value, bool masked) {
    if (masked || !std::isfinite(value)) return nullptr;
    return value;
}

void write_json(const Trace& trace, const std::vector<Verdict>& verdicts, std::ostream& out) {
    nlohmann::ordered_json doc;
    doc["schema"] = "attntrace.check-answers/1";
    doc["mode"] = to_string(trace.mode);
    const bool pass = std::all_of(verdicts.begin(), verdicts.end(), [](const Verdict& v) { return v.agree; });
    doc["verdict"] = pass ? "pass" : "fail";
    doc["stages"] = nlohmann::ordered_json::array();
    for (const Verdict& v : verdicts) {
        nlohmann::ordered_json s;
        s["name"] = v.stage->name();
        s["head"] = v.stage->head > 0 ? nlohmann::ordered_json(v.stage->head) : nlohmann::ordered_json(nullptr);
        s["checked"] = v.checked;
        s["agree"] = v.agree;
        if (v.first) {
            const auto& d = *v.first;
            s["first_difference"] = {{"row", d.row + 1},
                                     {"col", d.col + 1},
                                     {"row_token", v.stage->rows[static_cast<std::size_t>(d.row)]},
                                     {"col_token", v.stage->cols[static_cast<std::size_t>(d.col)]},
                                     {"expected", number_json(d.expected, d.expected_masked)},
                                     {"given", d.given.text},
                                     {"tolerance", d.tolerance}};
            if (!v.diagnoses.empty()) {
                const Diagnosis& first = v.diagnoses.front();
                s["diagnosis"] = {{"mistake", mistake_info(first.mistake).name}, {"explanation", first.explanation}};
                if (v.diagnoses.size() > 1) {
                    nlohmann::ordered_json also = nlohmann::ordered_json::array();
                    for (std::size_t i = 1; i < v.diagnoses.size(); ++i)
                        also.push_back({{"mistake", mistake_info(v.diagnoses[i].mistake).name},
                                        {"explanation", v.diagnoses[i].explanation}});
                    s["diagnosis"]["also"] = std::move(also);
                }
            } else {
                s["diagnosis"] = nullptr;
            }
        }
        if (v.agree && v.equivalent_masking) s["equivalent_masking"] = true;
        doc["stages"].push_back(std::move(s));
    }
    out << doc.dump(2) << "\n";
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
    return fmt::format(" (±{:g}, the rounding a {} run allows here; {} alone would allow ±{:g})", tolerance,
                       to_string(dtype), places, written);
}

std::vector<StageVerdict> check_answers(const Trace& trace, const std::vector<GivenStage>& given, WeightLayout layout) {
    std::vector<StageVerdict> verdicts;
    for (const GivenStage& g : given) verdicts.push_back(verdict_for(trace, g, given, layout));
    // Pipeline order: by the stage's place in the trace.
    std::stable_sort(verdicts.begin(), verdicts.end(),
                     [](const Verdict& a, const Verdict& b) { return a.stage < b.stage; });
    return verdicts;
}

int run_check_answers(CheckAnswersRequest request, std::ostream& out) {
    if (!request.trace.mask_method.standard())
        throw UsageError("check-answers checks against the right way of masking (−∞ before the softmax); it names "
                         "--mask-fill and --mask-after-softmax itself when a learner's numbers show them");
    if (request.render.format != Format::table && request.render.format != Format::json)
        throw UsageError("check-answers writes table (text) or json");
    const InputText input = request.input_path ? read_input(*request.input_path, request.max_input)
                                               : example_input(std::string(default_example));
    const Problem problem = load_input(input, request.max_memory, with_max_input(request.load, request.max_input));
    request.trace.mode = resolve_mode(problem, request.mode);
    const WorkShape shape = work_shape(problem, request.trace);
    // The trace, a copy of its stages, and one recomputation under a mistake at a time.
    const std::uint64_t traced_bytes = 2 * trace_bytes(shape, request.trace.dtype, request.render, false) +
                                       mistake_pass_bytes(shape.rows, shape.cols, shape.d_in, shape.d_k, shape.d_v);
    require_memory(traced_bytes, request.max_memory, problem.origin, "checking answers against a trace of this size", "");
    require_time(2 * trace_seconds(shape, Format::json) +
                     mistake_search_seconds(shape.rows, shape.cols, shape.d_in, shape.d_k, shape.d_v, shape.heads),
                 request.max_seconds, problem.origin,
                 "checking answers against a trace of this size (and, where a stage differs, against each known mistake)",
                 "");
    const InputText answers_text = read_input(request.answers_path, request.max_input);
    // The answers are held beside the trace: what they keep is charged on top of its estimate.
    MemoryBudget budget(request.max_memory, answers_text.origin);
    budget.charge(traced_bytes);
    const std::vector<GivenStage> given = read_answers(answers_text, &budget);
    const Trace traced = trace(problem, request.trace);
    const std::vector<StageVerdict> verdicts = check_answers(traced, given, problem.layout);
    if (request.render.format == Format::json) write_json(traced, verdicts, out);
    else write_text(traced, verdicts, request.render, out);
    return std::all_of(verdicts.begin(), verdicts.end(), [](const StageVerdict& v) { return v.agree; }) ? 0 : 1;
}

}  // namespace attntrace
