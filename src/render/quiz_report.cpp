// The quiz in the table format, its transcript written as it goes: the heading, each round's
// trace with what would give the answer away shown as "?", its question, the answer read and
// the feedback, then the score; and in JSON (attntrace.quiz/1), every round's result at the end.
#include "practice/quiz.hpp"
#include "practice/verdicts.hpp"
#include "render/formats.hpp"
#include "render/json_writer.hpp"
#include "render/number.hpp"
#include "render/text.hpp"
#include "render/worked_text.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace attntrace {
// The quiz's own names, apart from those of the other files of its unity group.
namespace quiz_detail {
namespace {

using Kind = QuestionKind;
using Answer = QuizAnswer;
using Verdict = QuizVerdict;
using Result = QuizResult;
using Step = QuizEvent::Step;

// The asked value as text: −∞, or the number to at least `decimals` decimals.
std::string value_text(const Question& q, int decimals) {
    if (q.expected_masked) return "−∞ (masked)";
    return format_fixed(q.expected, decimals);
}

// The arithmetic of the asked entry, from the worked example of its row (or of its vector).
std::vector<std::string> worked_for(const Trace& trace, const Question& q, const Result& r, int digits) {
    if (r.worked_projection) {
        const WorkedProjection& p = *r.worked_projection;
        std::vector<std::string> lines{fmt::format("{} = {}·{}{}{}", p.output, p.input_label, p.matrix,
                                                   p.bias.empty() ? "" : " + " + p.bias_name,
                                                   q.head > 0 ? fmt::format(", the columns of head {}", q.head) : "")};
        for (std::string& line : projection_lines(p, digits)) lines.push_back(std::move(line));
        return lines;
    }
    const WorkedExample& w = *r.worked;
    std::vector<std::string> lines = worked_entry_lines(w, q.stage, static_cast<std::size_t>(q.col), digits);
    if (q.kind == Kind::row_sum) {
        std::string terms;
        for (std::size_t j = 0; j < w.weights.size(); ++j)
            terms += (j ? " + " : "") + format_compact(w.weights[j], digits);
        lines.push_back(fmt::format("the row's weights add up to {} = {}", terms, format_compact(q.expected, digits)));
    }
    if (q.kind == Kind::feature) {
        const Stage& encoder = trace.at(StageId::projected_encoder);
        lines.push_back(fmt::format("entry {} of the tanh features: tanh({} + {}) = {}",
                                    encoder.cols[static_cast<std::size_t>(q.entry)],
                                    format_compact(trace.at(StageId::projected_decoder).data(q.row, q.entry), digits),
                                    format_compact(encoder.data(q.col, q.entry), digits), format_compact(q.expected, digits)));
    }
    return lines;
}

void write_feedback(const Trace& trace, const Question& q, const Result& r, const RenderOptions& render,
                    std::ostream& out) {
    const std::size_t width = render.width;
    const Answer& a = r.answer;
    // As many decimals as the learner typed, up to the 17 that tell any two doubles apart.
    const int decimals = std::max(a.form == Answer::Form::number ? std::min(a.decimals, 17) : 0, render.digits);
    const std::string value = value_text(q, decimals);
    const std::string within =
        a.form == Answer::Form::number && !q.expected_masked ? tolerance_text(a.decimals, q.expected, trace.dtype) : "";
    switch (r.verdict) {
    case Verdict::right:
        put_wrapped(out, fmt::format("right: the value is {}{}", value, within), width);
        return;
    case Verdict::skipped: put_wrapped(out, fmt::format("skipped: the value is {}", value), width); break;
    case Verdict::wrong:
        if (a.form == Answer::Form::unreadable && a.beyond_double)
            put_wrapped(out, fmt::format("wrong: {} is beyond the numbers a double holds (up to about ±1.8e308); the "
                                         "value is {}",
                                         printable(a.text, 40), value),
                        width);
        else if (a.form == Answer::Form::unreadable)
            put_wrapped(out, fmt::format("wrong: \"{}\" is not a number; the value is {}", printable(a.text, 40), value), width);
        else if (r.too_coarse)
            put_wrapped(out, fmt::format("wrong: the value is {}; {} is it rounded to {} decimal{}, but an answer needs at "
                                         "least {} unless it is the value itself",
                                         value, a.text, a.decimals, a.decimals == 1 ? "" : "s", least_decimals),
                        width);
        else
            put_wrapped(out, fmt::format("wrong: the value is {}, not {}{}", value, a.form == Answer::Form::masked ? "−∞" : a.text, within),
                        width);
        for (std::size_t i = 0; i < r.mistakes.size(); ++i) {
            const Diagnosis& d = r.mistakes[i];
            put_wrapped(out, fmt::format("{} ({}): {} is what this entry becomes when {}", i == 0 ? "hint" : "or",
                                         mistake_info(d.mistake).name, a.form == Answer::Form::masked ? "−∞" : a.text,
                                         d.explanation),
                        width);
        }
        break;
    case Verdict::unanswered: return;
    }
    out << "worked through:\n";
    for (const std::string& line : worked_for(trace, q, r, render.digits)) put_wrapped(out, "  " + line, width);
}

std::string score_text(const QuizTally& t, std::size_t rounds) {
    std::vector<std::string> rest;
    if (t.wrong) rest.push_back(fmt::format("{} wrong", t.wrong));
    if (t.skipped) rest.push_back(fmt::format("{} skipped", t.skipped));
    if (t.unanswered) rest.push_back(fmt::format("{} not answered", t.unanswered));
    return fmt::format("score: {} of {} right{}", t.right, rounds,
                       rest.empty() ? std::string() : fmt::format(" ({})", fmt::join(rest, ", ")));
}

void write_start(const Quiz& quiz, std::size_t width, std::ostream& out) {
    put_wrapped(out, fmt::format("attntrace quiz · {} round{} · seed {} (the same options with --seed {} ask the same "
                                 "questions)",
                                 quiz.questions.size(), quiz.questions.size() == 1 ? "" : "s", quiz.seed, quiz.seed),
                width);
    put_wrapped(out, fmt::format("Answer each question with a number to at least {} decimals: its tolerance follows "
                                 "the decimals you type (4 decimals: ±0.00005). A masked score is -inf (or "
                                 "masked). ? or an empty line skips a question.",
                                 least_decimals),
                width);
}

// The round's heading, its trace up to the asked stage with what would give the answer away
// shown as "?", and its question.
void write_round(const Quiz& quiz, std::size_t i, const RenderOptions& base, std::ostream& out) {
    const Question& q = quiz.questions[i];
    const QuizRun& run = quiz.runs[q.run];
    const std::size_t width = base.width;
    out << '\n';
    put_wrapped(out, fmt::format("round {} of {} · example:{} · {} mode", i + 1, quiz.questions.size(), run.example,
                                 to_string(run.trace.mode)),
                width);
    out << '\n';
    const RoundView view = round_view(run, q);
    RenderOptions options = base;
    options.format = Format::table;
    options.stages = view.stages;
    if (view.head) options.head = *view.head;
    render(view.shown, options, out);
    out << '\n';
    put_wrapped(out, fmt::format("question {}: {}", i + 1, q.text), width);
}

}  // namespace
}  // namespace quiz_detail

void write_quiz_text(const QuizEvent& event, const RenderOptions& render, std::ostream& out) {
    using namespace quiz_detail;
    const Quiz& quiz = event.quiz;
    const std::size_t width = render.width;
    switch (event.step) {
    case Step::start: write_start(quiz, width, out); break;
    case Step::ask: write_round(quiz, event.round, render, out); break;
    case Step::prompt:
        if (!event.echo) out << "your answer: ";
        break;
    case Step::answer:
        // As written, made printable: a line typed or piped may hold escape sequences.
        if (event.echo) {
            const Answer& a = *event.answer;
            out << (a.text.empty() ? "your answer:" : "your answer: " + printable(a.text, 200)) << '\n';
        }
        break;
    case Step::unreadable:
        put_wrapped(out, fmt::format("{}: type one such as 0.25, -inf for a masked score, or ? to skip",
                                     event.answer->beyond_double
                                         ? fmt::format("{} is beyond the numbers a double holds (up to about ±1.8e308)",
                                                       printable(event.answer->text, 40))
                                         : fmt::format("\"{}\" is not a number", printable(event.answer->text, 40))),
                    width);
        break;
    case Step::stopped:
        if (!event.echo) out << '\n';
        out << (quiz.questions.size() == 1
                    ? std::string("no answer: the answers ended, so the quiz stops before its one round\n")
                    : fmt::format("no answer: the answers ended, so the quiz stops after {} of {} rounds\n", event.round,
                                  quiz.questions.size()));
        break;
    case Step::graded: {
        const Question& q = quiz.questions[event.round];
        write_feedback(quiz.runs[q.run].trace, q, quiz.results[event.round], render, out);
        break;
    }
    case Step::end: out << '\n' << score_text(tally(quiz.results), quiz.questions.size()) << '\n'; break;
    }
}

namespace {

// A double as the quiz's report has written it since its first version (1.0, 5e-05), or null.
void number_or_null(JsonWriter& json, double value, bool masked) {
    if (masked || !std::isfinite(value)) json.null();
    else json.real(value);
}

void write_mistakes(JsonWriter& json, const std::vector<Diagnosis>& mistakes) {
    json.key("mistake");
    if (mistakes.empty()) {
        json.null();
        return;
    }
    json.object().key("name").string(mistake_info(mistakes.front().mistake).name);
    json.key("explanation").string(mistakes.front().explanation);
    if (mistakes.size() > 1) {
        json.key("also").array();
        for (std::size_t k = 1; k < mistakes.size(); ++k)
            json.object().key("name").string(mistake_info(mistakes[k].mistake).name)
                .key("explanation").string(mistakes[k].explanation).end();
        json.end();
    }
    json.end();
}

void write_question(JsonWriter& json, const Quiz& quiz, std::size_t i) {
    const Question& q = quiz.questions[i];
    const QuizResult& r = quiz.results[i];
    const Trace& trace = quiz.runs[q.run].trace;
    const Stage& stage = trace.at(q.stage, q.head);
    const bool cell = q.kind != QuestionKind::row_sum;
    const auto integer_or_null = [&](bool given, std::int64_t value) {
        if (given) json.integer(value);
        else json.null();
    };
    json.object();
    json.key("round").integer(static_cast<std::int64_t>(i + 1));
    json.key("example").string(quiz.runs[q.run].example);
    json.key("mode").string(to_string(trace.mode));
    json.key("stage").string(to_string(q.stage));
    json.key("kind").string(kind_name(q.kind));
    json.key("head");
    integer_or_null(q.head > 0, q.head);
    json.key("row").integer(q.row + 1);
    json.key("col");
    integer_or_null(cell, q.col + 1);
    json.key("entry");
    integer_or_null(q.kind == QuestionKind::feature, q.entry + 1);
    json.key("row_token").string(stage.rows[static_cast<std::size_t>(q.row)]);
    json.key("col_token");
    if (cell) json.string(stage.cols[static_cast<std::size_t>(q.col)]);
    else json.null();
    json.key("question").string(q.text);
    json.key("expected");
    number_or_null(json, q.expected, q.expected_masked);
    json.key("answer");
    if (r.verdict == QuizVerdict::unanswered) json.null();
    else json.string(printable(r.answer.text, 4096));  // valid UTF-8
    json.key("verdict").string(verdict_name(r.verdict));
    json.key("tolerance");
    if (r.answer.form == QuizAnswer::Form::number && r.verdict != QuizVerdict::unanswered && !q.expected_masked)
        json.real(tolerance_for(r.answer.decimals, q.expected, trace.dtype));
    else
        json.null();
    write_mistakes(json, r.mistakes);
    json.end();
}

}  // namespace

void write_quiz_json(JsonWriter& json, const Quiz& quiz) {
    json.key("schema").string("attntrace.quiz/1");
    json.key("seed").unsigned_integer(quiz.seed);
    json.key("rounds").unsigned_integer(quiz.questions.size());
    json.key("questions").array();
    for (std::size_t i = 0; i < quiz.questions.size(); ++i) write_question(json, quiz, i);
    json.end();
    const QuizTally t = tally(quiz.results);
    json.key("score").object().key("right").integer(t.right).key("wrong").integer(t.wrong);
    json.key("skipped").integer(t.skipped).key("unanswered").integer(t.unanswered).end();
}

}  // namespace attntrace
