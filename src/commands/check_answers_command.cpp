#include "commands/check_answers_command.hpp"

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

// Finite numbers a learner wrote where the mask hides a score: the fills they used.
std::vector<double> given_fills(const Trace& trace, const std::vector<GivenStage>& all, int head) {
    std::vector<double> fills;
    for (const GivenStage& g : all) {
        if (g.id != StageId::masked || g.head != head) continue;
        const Stage* stage = trace.find(StageId::masked, head);
        if (!stage) continue;
        for (const GivenNumber& n : g.numbers)
            if (!n.masked && n.row < stage->row_count() && n.col < stage->col_count() &&
                masked_entry(*stage, n.row, n.col) &&
                std::find(fills.begin(), fills.end(), n.value) == fills.end())
                fills.push_back(n.value);
    }
    return fills;
}

Verdict verdict_for(const Trace& trace, const GivenStage& given, const std::vector<GivenStage>& all) {
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
        v.first = Verdict::Difference{n.row, n.col, expected, hidden, n, n.masked ? 0 : tolerance_for(n.decimals, expected, trace.dtype)};
        break;
    }
    if (v.agree) {
        if (given.id == StageId::weights)
            if (const auto renormalised = renormalised_after_softmax(trace, stage.head))
                v.equivalent_masking = reproduces(*renormalised, given, given.id, trace.dtype);
        return v;
    }
    if (diagnosable(given.id)) {
        const std::vector<double> fills = given_fills(trace, all, given.head);
        for (const MistakeInfo& info : mistakes()) {
            for (const Matrix& m : under_mistake(trace, given.id, stage.head, info.id, fills))
                if (reproduces(m, given, given.id, trace.dtype)) {
                    v.mistake = info.id;
                    break;
                }
            if (v.mistake) break;
        }
    }
    const bool query_rows = given.id == StageId::scores || given.id == StageId::scaled || given.id == StageId::masked ||
                            given.id == StageId::weights || given.id == StageId::context;
    if (!v.mistake && query_rows) v.worked = work_through(trace, v.first->row, std::max(stage.head, 1));
    return v;
}

std::string stage_name(const Stage& stage) {
    return stage.head > 0 ? fmt::format("{} (head {})", stage.name(), stage.head) : std::string(stage.name());
}

std::string number_text(double value, bool masked, int decimals) {
    if (masked) return "hidden (−∞)";
    return fmt::format("{:.{}f}", value, std::clamp(decimals, 0, 17));
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
                           number_text(d.expected, d.expected_masked, decimals), d.given.text);
        if (d.tolerance > 0) out << fmt::format(" (±{:g} for {} decimals)", d.tolerance, d.given.decimals);
        out << "\n";
        if (v.mistake) {
            const MistakeInfo& info = mistake_info(*v.mistake);
            out << fmt::format("  Likely cause ({}), reproducing all {} number{} given: {}\n", info.name, v.checked,
                               v.checked == 1 ? "" : "s", info.explanation);
        } else {
            out << "  No known mistake reproduces these numbers.";
            if (v.worked) out << fmt::format(" Row {} worked through:", d.row + 1);
            out << "\n";
            if (v.worked)
                for (const auto& line : worked_lines(*v.worked, render.digits)) out << "    " << line << "\n";
        }
    }
    out << fmt::format("verdict: {} ({} of {} stage{} agree{})\n", differing == 0 ? "pass" : "fail",
                       verdicts.size() - differing, verdicts.size(), verdicts.size() == 1 ? "" : "s",
                       verdicts.size() - differing == 1 ? "s" : "");
    (void)trace;
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
            if (v.mistake) {
                const MistakeInfo& info = mistake_info(*v.mistake);
                s["diagnosis"] = {{"mistake", info.name}, {"explanation", info.explanation}};
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

std::vector<StageVerdict> check_answers(const Trace& trace, const std::vector<GivenStage>& given) {
    std::vector<StageVerdict> verdicts;
    for (const GivenStage& g : given) verdicts.push_back(verdict_for(trace, g, given));
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
    const std::uint64_t traced_bytes = 2 * trace_bytes(shape, request.trace.dtype, request.render, false);
    require_memory(traced_bytes, request.max_memory, problem.origin, "checking answers against a trace of this size", "");
    require_time(2 * trace_seconds(shape, Format::json), request.max_seconds, problem.origin,
                 "checking answers against a trace of this size", "");
    const InputText answers_text = read_input(request.answers_path, request.max_input);
    // The answers are held beside the trace: what they keep is charged on top of its estimate.
    MemoryBudget budget(request.max_memory, answers_text.origin);
    budget.charge(traced_bytes);
    const std::vector<GivenStage> given = read_answers(answers_text, &budget);
    const Trace traced = trace(problem, request.trace);
    const std::vector<StageVerdict> verdicts = check_answers(traced, given);
    if (request.render.format == Format::json) write_json(traced, verdicts, out);
    else write_text(traced, verdicts, request.render, out);
    return std::all_of(verdicts.begin(), verdicts.end(), [](const StageVerdict& v) { return v.agree; }) ? 0 : 1;
}

}  // namespace attntrace
