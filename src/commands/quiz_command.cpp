#include "commands/quiz_command.hpp"

#include "attention/modes.hpp"
#include "attention/trace.hpp"
#include "attention/worked.hpp"
#include "commands/check_answers_command.hpp"
#include "core/error.hpp"
#include "core/generator.hpp"
#include "input/examples.hpp"
#include "input/load.hpp"
#include "input/source.hpp"
#include "practice/answers.hpp"
#include "practice/mistakes.hpp"
#include "render/number.hpp"
#include "render/text.hpp"
#include "render/worked_text.hpp"
#include "util/memory.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <iterator>
#include <cmath>
#include <iostream>
#include <limits>
#include <span>
#include <variant>

namespace attntrace {
// The quiz's own names, apart from those of the other files of its unity group.
namespace quiz_detail {
namespace {

// An answer with fewer decimals than this is right only when it is the value itself (a row sum
// of 1, a weight of 0): "0" is 0.3 rounded to no decimals, but no answer to the question.
constexpr int least_decimals = 2;

// What a question asks for.
enum class Kind {
    score,       // a raw score: a dot product, or Bahdanau's additive score
    feature,     // bahdanau: one entry of tanh(s·W_a + h·U_a)
    scaled,      // a scaled score
    masked,      // an entry after masking (a score, or −∞)
    weight,      // a softmax weight
    row_sum,     // what a row of weights adds up to
    context,     // an entry of a context vector
    projection,  // an entry of a query, key or value vector (a head's slice of X·W)
    output,      // an entry of the output: the heads' contexts side by side times W_o
};

std::string_view kind_name(Kind kind) {
    switch (kind) {
    case Kind::score: return "score";
    case Kind::feature: return "tanh_feature";
    case Kind::scaled: return "scaled_score";
    case Kind::masked: return "masked_entry";
    case Kind::weight: return "weight";
    case Kind::row_sum: return "row_sum";
    case Kind::context: return "context_entry";
    case Kind::projection: return "projection_entry";
    case Kind::output: return "output_entry";
    }
    return "";
}

// One example traced in one mode.
struct Run {
    std::string example;
    Trace trace;
};

struct Question {
    std::size_t run = 0;
    Kind kind = Kind::score;
    StageId stage = StageId::scores;
    int head = 0;  // the stage's head (0: the run has one)
    Eigen::Index row = 0, col = 0;
    Eigen::Index entry = 0;  // feature: the entry of tanh(s·W_a + h·U_a)
    double expected = 0;
    bool expected_masked = false;  // −∞: a hidden score
    std::string text;              // the question, one sentence
};

// An answer as written.
struct Answer {
    enum class Form { number, masked, skip, unreadable };
    Form form = Form::skip;
    std::string text;  // as written, trimmed
    double value = 0;
    int decimals = 0;
};

std::string trimmed(std::string_view text) {
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) return {};
    const auto last = text.find_last_not_of(" \t\r\n");
    return std::string(text.substr(first, last - first + 1));
}

// "0.25", "-1.5e-3", "+2", "−0.3" (a typographic minus); "-inf", "masked", "−∞" for a hidden
// score; "?" or nothing to skip.
Answer read_answer(std::string_view line) {
    Answer a;
    a.text = trimmed(line);
    if (a.text.empty() || a.text == "?") return a;
    std::string text = a.text;
    for (std::size_t at; (at = text.find("\u2212")) != std::string::npos;) text.replace(at, 3, "-");
    const std::string lower = fold_case(text);
    if (lower == "-inf" || lower == "masked" || lower == "-\u221e") {
        a.form = Answer::Form::masked;
        return a;
    }
    if (!text.empty() && text.front() == '+') text.erase(0, 1);
    const bool digits = text.find_first_of("0123456789") != std::string::npos;
    const bool plain = text.find_first_not_of("0123456789.eE+-") == std::string::npos;
    const char* end = text.data() + text.size();
    const auto [stop, error] = std::from_chars(text.data(), end, a.value);
    if (!digits || !plain || error != std::errc() || stop != end || !std::isfinite(a.value)) {
        a.form = Answer::Form::unreadable;
        return a;
    }
    a.form = Answer::Form::number;
    a.decimals = decimals_of(text);
    return a;
}

// Does `a` (a number or a masked marker) give `value`? To its own precision, and, with fewer
// than least_decimals decimals, exactly (to the working precision). A masked marker gives −∞,
// and, among the weights, the 0 a hidden key gets.
bool gives(const Answer& a, double value, bool value_masked, StageId stage, Dtype dtype) {
    const bool hidden = value_masked || !std::isfinite(value);
    if (a.form == Answer::Form::masked) return hidden || (stage == StageId::weights && value == 0);
    if (a.form != Answer::Form::number || hidden) return false;
    const double gap = std::fabs(a.value - value);
    if (gap > tolerance_for(a.decimals, value, dtype)) return false;
    return a.decimals >= least_decimals || gap <= tolerance_for(std::numeric_limits<double>::max_digits10, value, dtype);
}

// ---------------------------------------------------------------------------------------------
// The runs and the questions they offer.

std::vector<Run> make_runs(const QuizRequest& request) {
    std::vector<std::string> names = request.examples;
    if (names.empty())
        for (const std::string_view name : quiz_examples) names.emplace_back(name);
    std::vector<Run> runs;
    const MemoryLimit limit = default_memory_limit();
    for (const std::string& name : names) {
        const Problem problem = load_input(example_input(name), limit);
        const bool pair = std::holds_alternative<EncoderDecoderInput>(problem.input);
        for (const ModeSpec& spec : mode_specs()) {
            if (spec.reads_pair != pair) continue;
            if (!request.modes.empty() &&
                std::find(request.modes.begin(), request.modes.end(), spec.mode) == request.modes.end())
                continue;
            // Several heads are the input's own (two_heads): a mode without projections to split cannot take them.
            const auto* single = std::get_if<SingleSequenceInput>(&problem.input);
            if (single && single->heads.value_or(1) > 1 && !spec.takes_heads) continue;
            TraceOptions options;
            options.mode = spec.mode;
            Run run{name, trace(problem, options)};
            run.trace.description.clear();  // a description may quote the very numbers asked for
            runs.push_back(std::move(run));
        }
    }
    return runs;
}

// A question of one kind on one stage of a run.
struct Offer {
    Kind kind;
    StageId stage;
};

bool wanted(const QuizRequest& request, StageId stage) {
    return request.stages.empty() || std::find(request.stages.begin(), request.stages.end(), stage) != request.stages.end();
}

// The questions a run can ask: only of the stages it applies (a plain trace does not scale, a
// run without a mask masks nothing).
std::vector<Offer> offers(const Trace& trace, const QuizRequest& request) {
    const auto applied = [&](StageId id) {
        const Stage* stage = trace.find(id);
        return stage && stage->applied && wanted(request, id);
    };
    std::vector<Offer> out;
    for (const StageId id : {StageId::queries, StageId::keys, StageId::values})
        if (applied(id)) out.push_back({Kind::projection, id});
    if (applied(StageId::scores)) {
        out.push_back({Kind::score, StageId::scores});
        if (mode_spec(trace.mode).reads_pair && trace.score == Score::additive) out.push_back({Kind::feature, StageId::scores});
    }
    if (applied(StageId::scaled)) out.push_back({Kind::scaled, StageId::scaled});
    if (applied(StageId::masked)) out.push_back({Kind::masked, StageId::masked});
    if (applied(StageId::weights)) {
        out.push_back({Kind::weight, StageId::weights});
        out.push_back({Kind::row_sum, StageId::weights});
    }
    if (applied(StageId::context)) out.push_back({Kind::context, StageId::context});
    if (applied(StageId::output)) out.push_back({Kind::output, StageId::output});
    return out;
}

std::size_t pick(SplitMix64& rng, std::size_t count) { return static_cast<std::size_t>(rng.next() % count); }

// `"journey" (row 2)`: a token with its place, since a sentence may repeat one.
std::string placed(const Labels& labels, Eigen::Index index, std::string_view what) {
    return fmt::format("\"{}\" ({} {})", labels[static_cast<std::size_t>(index)], what, index + 1);
}

std::string question_text(const Trace& trace, const Question& q) {
    const Stage& stage = trace.at(q.stage, q.head);
    const bool pair = mode_spec(trace.mode).reads_pair;
    const std::string query = fmt::format("{} {}", pair ? "target" : "query", placed(stage.rows, q.row, "row"));
    const std::string key = fmt::format("{} {}", pair ? "source" : "key", placed(stage.cols, q.col, "column"));
    const std::string head = q.head > 0 ? fmt::format(" in head {}", q.head) : "";
    const std::string entry = fmt::format("entry {} (column {})", stage.cols[static_cast<std::size_t>(q.col)], q.col + 1);
    switch (q.kind) {
    case Kind::score:
        if (pair) return fmt::format("What is the alignment score of {} for {}, v_a · tanh(s·W_a + h·U_a)?", query, key);
        if (!mode_spec(trace.mode).learned_projections)
            return fmt::format("What is the score of {} for {}, the dot product of their input vectors?", query, key);
        return fmt::format("What is the score of {} for {}{}, the dot product of the {}query and key vectors?", query, key,
                           head, trace.find(StageId::queries_rotated) ? "rotated " : "");
    case Kind::feature: {
        const Stage& projected = trace.at(StageId::projected_encoder);
        return fmt::format("What is entry {} of tanh(s·W_a + h·U_a) for {} and {}?",
                           projected.cols[static_cast<std::size_t>(q.entry)], query, key);
    }
    case Kind::scaled: return fmt::format("What is the scaled score of {} for {}{}?", query, key, head);
    case Kind::masked: return fmt::format("After masking, what is the entry of {} for {}{}?", query, key, head);
    case Kind::weight: return fmt::format("What weight does {} give {}{}?", query, key, head);
    case Kind::row_sum: return fmt::format("What do the weights of {}{} add up to?", query, head);
    case Kind::context: return fmt::format("What is {} of the context vector of {}{}?", entry, query, head);
    case Kind::projection:
        return fmt::format("What is {} of the {} vector of {}{}?", entry,
                           q.stage == StageId::queries ? "query" : q.stage == StageId::keys ? "key" : "value",
                           placed(stage.rows, q.row, "row"), head);
    case Kind::output:
        return fmt::format("What is {} of the output of {}, the heads' context vectors side by side times W_o?", entry,
                           placed(stage.rows, q.row, "row"));
    }
    return {};
}

// A question of `offer` on `run`: its head, its entry and the value asked for.
Question ask(const std::vector<Run>& runs, std::size_t run, const Offer& offer, SplitMix64& rng) {
    const Trace& trace = runs[run].trace;
    Question q;
    q.run = run;
    q.kind = offer.kind;
    q.stage = offer.stage;
    const Stage& first = trace.at(q.stage);
    q.head = first.head > 0 ? static_cast<int>(pick(rng, static_cast<std::size_t>(trace.heads))) + 1 : 0;
    const Stage& stage = trace.at(q.stage, q.head);
    q.row = static_cast<Eigen::Index>(pick(rng, static_cast<std::size_t>(stage.row_count())));
    q.col = static_cast<Eigen::Index>(pick(rng, static_cast<std::size_t>(stage.col_count())));
    switch (q.kind) {
    case Kind::feature: {
        const Stage& decoder = trace.at(StageId::projected_decoder);
        const Stage& encoder = trace.at(StageId::projected_encoder);
        q.entry = static_cast<Eigen::Index>(pick(rng, static_cast<std::size_t>(encoder.col_count())));
        q.expected = std::tanh(decoder.data(q.row, q.entry) + encoder.data(q.col, q.entry));
        break;
    }
    case Kind::row_sum:
        q.col = 0;
        q.expected = (*stage.row_sums)(q.row);
        break;
    default:
        q.expected = stage.data(q.row, q.col);
        q.expected_masked = q.stage != StageId::weights && (stage.is_masked(q.row, q.col) || !std::isfinite(q.expected));
        break;
    }
    q.text = question_text(trace, q);
    return q;
}

bool same_question(const Question& a, const Question& b) {
    return a.run == b.run && a.kind == b.kind && a.stage == b.stage && a.head == b.head && a.row == b.row &&
           a.col == b.col && a.entry == b.entry;
}

// "no run in mode plain applies the scaled stage": why the choices leave nothing to ask.
[[noreturn]] void refuse_choices(const QuizRequest& request, const std::vector<Run>& runs) {
    std::vector<std::string> examples, modes, stages;
    for (const Run& run : runs)
        if (std::find(examples.begin(), examples.end(), run.example) == examples.end()) examples.push_back(run.example);
    for (const Mode mode : request.modes) modes.emplace_back(to_string(mode));
    for (const StageId stage : request.stages) stages.emplace_back(to_string(stage));
    if (runs.empty())
        throw UsageError(fmt::format("{} cannot be traced in mode {}: plain, self and causal read one sentence, "
                                     "bahdanau a source and a target (and a mode without projections cannot split "
                                     "two_heads' heads)",
                                     fmt::join(request.examples, ", "), fmt::join(modes, ",")));
    throw UsageError(fmt::format("no question fits: {} in mode {} {} no {} stage to ask about (the quiz asks only about "
                                 "stages a run applies: plain mode does not scale, only causal runs and inputs with "
                                 "padding or a source mask mask, only several heads have an output)",
                                 fmt::join(examples, ", "), modes.empty() ? std::string("any") : fmt::format("{}", fmt::join(modes, ",")),
                                 examples.size() == 1 ? "has" : "have", fmt::join(stages, " or ")));
}

std::vector<Question> draw_questions(const QuizRequest& request, const std::vector<Run>& runs) {
    std::vector<std::size_t> open;  // the runs with a question to ask
    for (std::size_t r = 0; r < runs.size(); ++r)
        if (!offers(runs[r].trace, request).empty()) open.push_back(r);
    if (open.empty()) refuse_choices(request, runs);
    SplitMix64 rng(request.seed);
    std::vector<Question> questions;
    for (int round = 0; round < request.rounds; ++round) {
        Question q;
        // A question asked already is drawn again (a few times: a tiny run may have few questions).
        for (int attempt = 0; attempt < 16; ++attempt) {
            // A run, then a kind of question, then (queries, keys or values) its stage: each kind as likely.
            const std::size_t run = open[pick(rng, open.size())];
            const std::vector<Offer> choices = offers(runs[run].trace, request);
            std::vector<Kind> kinds;
            for (const Offer& offer : choices)
                if (std::find(kinds.begin(), kinds.end(), offer.kind) == kinds.end()) kinds.push_back(offer.kind);
            const Kind kind = kinds[pick(rng, kinds.size())];
            std::vector<Offer> of_kind;
            std::copy_if(choices.begin(), choices.end(), std::back_inserter(of_kind),
                         [&](const Offer& offer) { return offer.kind == kind; });
            q = ask(runs, run, of_kind[pick(rng, of_kind.size())], rng);
            if (std::none_of(questions.begin(), questions.end(), [&](const Question& p) { return same_question(p, q); }))
                break;
        }
        questions.push_back(std::move(q));
    }
    return questions;
}

// ---------------------------------------------------------------------------------------------
// Feedback.

// The known mistakes that give the learner's number for this entry (none for a number no
// mistake gives: a hint is a claim about the number typed).
std::vector<Diagnosis> likely_mistakes(const Trace& trace, const Question& q, const Answer& a) {
    if (a.form != Answer::Form::number && a.form != Answer::Form::masked) return {};
    if (q.kind == Kind::feature)
        return diagnose_feature(trace, q.row, q.col, q.entry,
                                [&](double value) { return gives(a, value, false, StageId::scores, trace.dtype); });
    if (!diagnosable(q.stage)) return {};
    const auto entry = [&](const Matrix& m) {
        if (q.row >= m.rows() || (q.kind != Kind::row_sum && q.col >= m.cols())) return false;
        if (q.kind != Kind::row_sum) return gives(a, m(q.row, q.col), false, q.stage, trace.dtype);
        double sum = 0;
        for (Eigen::Index j = 0; j < m.cols(); ++j)
            if (std::isfinite(m(q.row, j))) sum += m(q.row, j);
        return gives(a, sum, false, q.stage, trace.dtype);
    };
    return diagnose(trace, q.stage, q.head, entry);
}

// The arithmetic of the asked entry, from the worked example of its row.
std::vector<std::string> worked_for(const Trace& trace, const Question& q, int digits) {
    if (q.kind == Kind::projection) {
        const WorkedProjection p = work_projection(trace, q.stage, q.row, q.head);
        std::vector<std::string> lines{fmt::format("{} = {}·{}{}{}", p.output, p.input_label, p.matrix,
                                                   p.bias.empty() ? "" : " + " + p.bias_name,
                                                   q.head > 0 ? fmt::format(", the columns of head {}", q.head) : "")};
        for (std::string& line : projection_lines(p, digits)) lines.push_back(std::move(line));
        return lines;
    }
    const WorkedExample w = work_through(trace, q.row, std::max(q.head, 1));
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

enum class Verdict { right, wrong, skipped, unanswered };

std::string_view verdict_name(Verdict v) {
    switch (v) {
    case Verdict::right: return "right";
    case Verdict::wrong: return "wrong";
    case Verdict::skipped: return "skipped";
    case Verdict::unanswered: return "unanswered";
    }
    return "";
}

struct Result {
    Verdict verdict = Verdict::unanswered;
    Answer answer;
    std::vector<Diagnosis> mistakes;  // the known mistakes that give the number answered, the likeliest first
    bool too_coarse = false;  // right to its own precision, but with too few decimals
};

Result grade(const Trace& trace, const Question& q, const Answer& a) {
    Result r;
    r.answer = a;
    if (a.form == Answer::Form::skip) {
        r.verdict = Verdict::skipped;
        return r;
    }
    if (gives(a, q.expected, q.expected_masked, q.stage, trace.dtype)) {
        r.verdict = Verdict::right;
        return r;
    }
    r.verdict = Verdict::wrong;
    r.too_coarse = a.form == Answer::Form::number && !q.expected_masked &&
                   std::fabs(a.value - q.expected) <= tolerance_for(a.decimals, q.expected, trace.dtype);
    if (!r.too_coarse) r.mistakes = likely_mistakes(trace, q, a);
    return r;
}

// The asked value as text: −∞, or the number to at least `decimals` decimals.
std::string value_text(const Question& q, int decimals) {
    if (q.expected_masked) return "−∞ (masked)";
    return format_fixed(q.expected, decimals);
}

// ---------------------------------------------------------------------------------------------
// The transcript.

// Is `v` the asked value itself (to the last bits: a mirror of a symmetric matrix, or the row of
// a token that repeats, computed the same way)?
bool same_value(double v, double expected) {
    return std::isfinite(v) && std::fabs(v - expected) <= 1e-12 * std::max(1.0, std::fabs(expected));
}

// What the table shows as "?" so that nothing on the screen gives the answer away: the asked
// entry; for a weight its whole row (the rest of a row and its sum would pin it); for a row
// sum the row, and no stage's Σ column; for a masked entry the whole masked stage (the other
// rows show which columns the mask hides); and wherever the asked stage, or for a projection
// the other projections, hold the asked number again (the mirror of plain mode's symmetric
// scores, the row of a token that repeats), that entry too, with its whole row in the weights.
void hide_the_answer(Trace& shown, const Question& q) {
    const bool whole_rows = q.kind == Kind::weight || q.kind == Kind::row_sum;
    const auto is_projection = [](StageId id) {
        return id == StageId::queries || id == StageId::keys || id == StageId::values;
    };
    for (Stage& stage : shown.stages) {
        if (stage.head != q.head && stage.head != 0) continue;
        const bool asked = stage.id == q.stage && stage.head == q.head;
        if (q.kind == Kind::row_sum && stage.id == StageId::weights) stage.row_sums.reset();
        BoolMatrix hidden = BoolMatrix::Constant(stage.row_count(), stage.col_count(), false);
        if (asked) {
            if (q.kind == Kind::masked) hidden.setConstant(true);
            else if (whole_rows) hidden.row(q.row).setConstant(true);
            else hidden(q.row, q.col) = true;
        }
        const bool scanned = asked || (q.kind == Kind::projection && is_projection(stage.id));
        const bool hidden_key = q.stage == StageId::weights && q.kind == Kind::weight &&
                                shown.at(StageId::weights, q.head).is_masked(q.row, q.col);
        if (scanned && q.kind != Kind::masked && q.kind != Kind::row_sum && !q.expected_masked && !hidden_key)
            for (Eigen::Index r = 0; r < stage.row_count(); ++r)
                for (Eigen::Index c = 0; c < stage.col_count(); ++c)
                    if (same_value(stage.data(r, c), q.expected)) {
                        if (stage.row_sums) hidden.row(r).setConstant(true);
                        else hidden(r, c) = true;
                    }
        if (hidden.any()) stage.hidden = std::move(hidden);
    }
}

// The trace up to the asked stage, with what would give the answer away shown as "?".
void show_round(const Run& run, const Question& q, const RenderOptions& base, std::ostream& out) {
    Trace shown = run.trace;
    const auto order = mode_spec(shown.mode).stages;
    RenderOptions options = base;
    options.format = Format::table;
    options.stages.clear();
    if (q.kind == Kind::output) {
        // The heads' stages are in concat: what the output reads.
        for (const StageId id : order) {
            options.stages.push_back(id);
            if (id == StageId::parameters) break;
        }
        options.stages.insert(options.stages.end(), {StageId::concat, StageId::output});
    } else {
        const StageId last = q.kind == Kind::feature ? StageId::projected_encoder : q.stage;
        for (const StageId id : order) {
            options.stages.push_back(id);
            if (id == last) break;
        }
        options.head = q.head;
    }
    if (q.kind != Kind::feature) hide_the_answer(shown, q);
    render(shown, options, out);
}

void write_feedback(const Trace& trace, const Question& q, const Result& r, const RenderOptions& render,
                    std::ostream& out) {
    const std::size_t width = render.width;
    const Answer& a = r.answer;
    const int decimals = std::max(a.form == Answer::Form::number ? a.decimals : 0, render.digits);
    const std::string value = value_text(q, decimals);
    const std::string within =
        a.form == Answer::Form::number && !q.expected_masked ? tolerance_text(a.decimals, q.expected, trace.dtype) : "";
    switch (r.verdict) {
    case Verdict::right:
        put_wrapped(out, fmt::format("right: the value is {}{}", value, within), width);
        return;
    case Verdict::skipped: put_wrapped(out, fmt::format("skipped: the value is {}", value), width); break;
    case Verdict::wrong:
        if (a.form == Answer::Form::unreadable)
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
    for (const std::string& line : worked_for(trace, q, render.digits)) put_wrapped(out, "  " + line, width);
}

// Where the answers come from: a file read whole at the start, or standard input line by line.
class Answers {
public:
    explicit Answers(const std::optional<std::string>& path) {
        if (path && *path != "-") {
            const InputText input = read_input(*path);
            text_ = std::string(input.text);
            input.require_unchanged();  // the copy holds what the file held, not zeros of lost pages
            file_ = true;
        }
    }
    std::optional<std::string> next() {
        std::string line;
        if (!file_) {
            if (!std::getline(std::cin, line)) return std::nullopt;
            return line;
        }
        if (at_ >= text_.size()) return std::nullopt;
        const std::size_t end = std::min(text_.find('\n', at_), text_.size());
        line = text_.substr(at_, end - at_);
        at_ = end + 1;
        return line;
    }
    bool from_stdin() const { return !file_; }

private:
    std::string text_;
    std::size_t at_ = 0;
    bool file_ = false;
};

struct Tally {
    int right = 0, wrong = 0, skipped = 0, unanswered = 0;
};

Tally tally(const std::vector<Result>& results) {
    Tally t;
    for (const Result& r : results) {
        switch (r.verdict) {
        case Verdict::right: ++t.right; break;
        case Verdict::wrong: ++t.wrong; break;
        case Verdict::skipped: ++t.skipped; break;
        case Verdict::unanswered: ++t.unanswered; break;
        }
    }
    return t;
}

std::string score_text(const Tally& t, std::size_t rounds) {
    std::vector<std::string> rest;
    if (t.wrong) rest.push_back(fmt::format("{} wrong", t.wrong));
    if (t.skipped) rest.push_back(fmt::format("{} skipped", t.skipped));
    if (t.unanswered) rest.push_back(fmt::format("{} not answered", t.unanswered));
    return fmt::format("score: {} of {} right{}", t.right, rounds,
                       rest.empty() ? std::string() : fmt::format(" ({})", fmt::join(rest, ", ")));
}

nlohmann::ordered_json number_or_null(double value, bool masked) {
    if (masked || !std::isfinite(value)) return nullptr;
    return value;
}

void write_json(const QuizRequest& request, const std::vector<Run>& runs, const std::vector<Question>& questions,
                const std::vector<Result>& results, std::ostream& out) {
    nlohmann::ordered_json doc;
    doc["schema"] = "attntrace.quiz/1";
    doc["seed"] = request.seed;
    doc["rounds"] = questions.size();
    doc["questions"] = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < questions.size(); ++i) {
        const Question& q = questions[i];
        const Result& r = results[i];
        const Trace& trace = runs[q.run].trace;
        const Stage& stage = trace.at(q.stage, q.head);
        const bool cell = q.kind != Kind::row_sum;
        nlohmann::ordered_json j;
        j["round"] = i + 1;
        j["example"] = runs[q.run].example;
        j["mode"] = to_string(trace.mode);
        j["stage"] = to_string(q.stage);
        j["kind"] = kind_name(q.kind);
        j["head"] = q.head > 0 ? nlohmann::ordered_json(q.head) : nlohmann::ordered_json(nullptr);
        j["row"] = q.row + 1;
        j["col"] = cell ? nlohmann::ordered_json(q.col + 1) : nlohmann::ordered_json(nullptr);
        j["entry"] = q.kind == Kind::feature ? nlohmann::ordered_json(q.entry + 1) : nlohmann::ordered_json(nullptr);
        j["row_token"] = stage.rows[static_cast<std::size_t>(q.row)];
        j["col_token"] = cell ? nlohmann::ordered_json(stage.cols[static_cast<std::size_t>(q.col)]) : nlohmann::ordered_json(nullptr);
        j["question"] = q.text;
        j["expected"] = number_or_null(q.expected, q.expected_masked);
        j["answer"] = r.verdict == Verdict::unanswered ? nlohmann::ordered_json(nullptr)
                                                       : nlohmann::ordered_json(printable(r.answer.text, 4096));  // valid UTF-8
        j["verdict"] = verdict_name(r.verdict);
        j["tolerance"] = r.answer.form == Answer::Form::number && r.verdict != Verdict::unanswered && !q.expected_masked
                             ? nlohmann::ordered_json(tolerance_for(r.answer.decimals, q.expected, trace.dtype))
                             : nlohmann::ordered_json(nullptr);
        if (!r.mistakes.empty()) {
            const Diagnosis& first = r.mistakes.front();
            j["mistake"] = {{"name", mistake_info(first.mistake).name}, {"explanation", first.explanation}};
            if (r.mistakes.size() > 1) {
                nlohmann::ordered_json also = nlohmann::ordered_json::array();
                for (std::size_t k = 1; k < r.mistakes.size(); ++k)
                    also.push_back({{"name", mistake_info(r.mistakes[k].mistake).name},
                                    {"explanation", r.mistakes[k].explanation}});
                j["mistake"]["also"] = std::move(also);
            }
        } else {
            j["mistake"] = nullptr;
        }
        doc["questions"].push_back(std::move(j));
    }
    const Tally t = tally(results);
    doc["score"] = {{"right", t.right}, {"wrong", t.wrong}, {"skipped", t.skipped}, {"unanswered", t.unanswered}};
    out << doc.dump(2) << "\n";
}

int quiz(const QuizRequest& request, const QuizTerminal& terminal, std::ostream& out) {
    if (request.render.format != Format::table && request.render.format != Format::json)
        throw UsageError("quiz writes table (a transcript) or json");
    const bool json = request.render.format == Format::json;
    Answers answers(request.answers_path);
    const bool typed = terminal.answers_typed && answers.from_stdin();
    if (json && typed)
        throw UsageError("quiz -f json is for course tooling: give the answers with --answers FILE or on a pipe");
    const std::vector<Run> runs = make_runs(request);
    const std::vector<Question> questions = draw_questions(request, runs);
    const std::size_t width = request.render.width;
    std::vector<Result> results(questions.size());

    if (!json) {
        put_wrapped(out, fmt::format("attntrace quiz · {} round{} · seed {} (the same options with --seed {} ask the same "
                                     "questions)",
                                     questions.size(), questions.size() == 1 ? "" : "s", request.seed, request.seed),
                    width);
        put_wrapped(out, fmt::format("Answer each question with a number to at least {} decimals: its tolerance follows "
                                     "the decimals you type (4 decimals: ±0.00005). A masked score is -inf (or "
                                     "masked). ? or an empty line skips a question.",
                                     least_decimals),
                    width);
    }
    for (std::size_t i = 0; i < questions.size(); ++i) {
        const Question& q = questions[i];
        const Run& run = runs[q.run];
        if (!json) {
            out << '\n';
            put_wrapped(out, fmt::format("round {} of {} · example:{} · {} mode", i + 1, questions.size(), run.example,
                                         to_string(run.trace.mode)),
                        width);
            out << '\n';
            show_round(run, q, request.render, out);
            out << '\n';
            put_wrapped(out, fmt::format("question {}: {}", i + 1, q.text), width);
        }
        std::optional<Answer> answer;
        while (!answer) {
            if (!json && !terminal.echo) out << "your answer: ";
            if (answers.from_stdin()) terminal.flush();
            const std::optional<std::string> line = answers.next();
            if (!line) break;
            Answer a = read_answer(*line);
            // As written, made printable: a line typed or piped may hold escape sequences.
            if (!json && terminal.echo) out << (a.text.empty() ? "your answer:" : "your answer: " + printable(a.text, 200)) << '\n';
            if (a.form == Answer::Form::unreadable && typed) {
                put_wrapped(out, fmt::format("\"{}\" is not a number: type one such as 0.25, -inf for a masked score, or "
                                             "? to skip",
                                             printable(a.text, 40)),
                            width);
                continue;
            }
            answer = std::move(a);
        }
        if (!answer) {
            if (!json) {
                if (!terminal.echo) out << '\n';
                out << fmt::format("no answer: the answers ended, so the quiz stops after {} of {} rounds\n", i,
                                   questions.size());
            }
            break;
        }
        results[i] = grade(run.trace, q, *answer);
        if (!json) write_feedback(run.trace, q, results[i], request.render, out);
    }
    if (json) write_json(request, runs, questions, results, out);
    const Tally t = tally(results);
    if (!json) out << '\n' << score_text(t, questions.size()) << '\n';
    return t.right == static_cast<int>(questions.size()) ? 0 : 1;
}

}  // namespace
}  // namespace quiz_detail

int run_quiz(const QuizRequest& request, const QuizTerminal& terminal, std::ostream& out) {
    return quiz_detail::quiz(request, terminal, out);
}

}  // namespace attntrace
