// check-answers' report: as text in the table format (each stage's verdict: all agree, or the
// first difference with the mistake that reproduces the numbers, or the row worked through),
// and in JSON (attntrace.check-answers/1).
#include "attention/modes.hpp"
#include "practice/verdicts.hpp"
#include "render/formats.hpp"
#include "render/json_writer.hpp"
#include "render/worked_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace attntrace {
namespace {

using Verdict = StageVerdict;

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

}  // namespace

void write_answers_text(const AnswerReport& report, const RenderOptions& render, std::ostream& out) {
    const Trace& trace = report.trace;
    const std::vector<Verdict>& verdicts = report.verdicts;
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
        const int decimals = std::max<int>(d.given.decimals, render.digits);
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

namespace {

void write_diagnosis(JsonWriter& json, const std::vector<Diagnosis>& diagnoses) {
    json.key("diagnosis");
    if (diagnoses.empty()) {
        json.null();
        return;
    }
    json.object().key("mistake").string(mistake_info(diagnoses.front().mistake).name);
    json.key("explanation").string(diagnoses.front().explanation);
    if (diagnoses.size() > 1) {
        json.key("also").array();
        for (std::size_t i = 1; i < diagnoses.size(); ++i)
            json.object().key("mistake").string(mistake_info(diagnoses[i].mistake).name)
                .key("explanation").string(diagnoses[i].explanation).end();
        json.end();
    }
    json.end();
}

void write_verdict(JsonWriter& json, const Verdict& v) {
    json.object();
    json.key("name").string(v.stage->name());
    json.key("head");
    if (v.stage->head > 0) json.integer(v.stage->head);
    else json.null();
    json.key("checked").unsigned_integer(v.checked);
    json.key("agree").boolean(v.agree);
    if (v.first) {
        const auto& d = *v.first;
        json.key("first_difference").object();
        json.key("row").integer(d.row + 1).key("col").integer(d.col + 1);
        json.key("row_token").string(v.stage->rows[static_cast<std::size_t>(d.row)]);
        json.key("col_token").string(v.stage->cols[static_cast<std::size_t>(d.col)]);
        json.key("expected");
        if (d.expected_masked || !std::isfinite(d.expected)) json.null();
        else json.real(d.expected);
        json.key("given").string(d.given.text);
        json.key("tolerance").real(d.tolerance);
        json.end();
        write_diagnosis(json, v.diagnoses);
    }
    if (v.agree && v.equivalent_masking) json.key("equivalent_masking").boolean(true);
    json.end();
}

}  // namespace

void write_answers_json(JsonWriter& json, const AnswerReport& report) {
    json.key("schema").string("attntrace.check-answers/1");
    json.key("mode").string(to_string(report.trace.mode));
    const bool pass = std::all_of(report.verdicts.begin(), report.verdicts.end(), [](const Verdict& v) { return v.agree; });
    json.key("verdict").string(pass ? "pass" : "fail");
    json.key("stages").array();
    for (const Verdict& v : report.verdicts) write_verdict(json, v);
    json.end();
}

}  // namespace attntrace
