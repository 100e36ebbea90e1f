#include "practice/quiz.hpp"

#include "attention/modes.hpp"
#include "attention/trace.hpp"
#include "core/error.hpp"
#include "core/generator.hpp"
#include "input/examples.hpp"
#include "input/load.hpp"
#include "input/source.hpp"
#include "util/memory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <variant>

namespace attntrace {

std::string_view kind_name(QuestionKind kind) {
    switch (kind) {
    case QuestionKind::score: return "score";
    case QuestionKind::feature: return "tanh_feature";
    case QuestionKind::scaled: return "scaled_score";
    case QuestionKind::masked: return "masked_entry";
    case QuestionKind::weight: return "weight";
    case QuestionKind::row_sum: return "row_sum";
    case QuestionKind::context: return "context_entry";
    case QuestionKind::projection: return "projection_entry";
    case QuestionKind::output: return "output_entry";
    }
    return "";
}

// The quiz's own names, apart from those of the other files of its unity group.
namespace quiz_detail {
namespace {

using Kind = QuestionKind;
using Run = QuizRun;

std::vector<Run> make_runs(const QuizChoices& request) {
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

bool wanted(const QuizChoices& request, StageId stage) {
    return request.stages.empty() || std::find(request.stages.begin(), request.stages.end(), stage) != request.stages.end();
}

// The questions a run can ask: only of the stages it applies (a plain trace does not scale, a
// run without a mask masks nothing).
std::vector<Offer> offers(const Trace& trace, const QuizChoices& request) {
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
[[noreturn]] void refuse_choices(const QuizChoices& request, const std::vector<Run>& runs) {
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
    throw UsageError(fmt::format("no question fits: {} in {} {} no {} stage to ask about (the quiz asks only about "
                                 "stages a run applies: plain mode does not scale, only causal runs and inputs with "
                                 "padding or a source mask mask, only several heads have an output)",
                                 fmt::join(examples, ", "), modes.empty() ? std::string("any mode") : fmt::format("mode {}", fmt::join(modes, ",")),
                                 examples.size() == 1 ? "has" : "have", fmt::join(stages, " or ")));
}

std::vector<Question> draw_questions(const QuizChoices& request, const std::vector<Run>& runs) {
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
RoundView round_view(const Run& run, const Question& q) {
    RoundView view{run.trace, {}, std::nullopt};
    const auto order = mode_spec(view.shown.mode).stages;
    if (q.kind == Kind::output) {
        // The heads' stages are in concat: what the output reads.
        for (const StageId id : order) {
            view.stages.push_back(id);
            if (id == StageId::parameters) break;
        }
        view.stages.insert(view.stages.end(), {StageId::concat, StageId::output});
    } else {
        const StageId last = q.kind == Kind::feature ? StageId::projected_encoder : q.stage;
        for (const StageId id : order) {
            view.stages.push_back(id);
            if (id == last) break;
        }
        view.head = q.head;
    }
    if (q.kind != Kind::feature) hide_the_answer(view.shown, q);
    return view;
}

}  // namespace
}  // namespace quiz_detail

std::vector<QuizRun> make_runs(const QuizChoices& choices) { return quiz_detail::make_runs(choices); }

std::vector<Question> draw_questions(const QuizChoices& choices, const std::vector<QuizRun>& runs) {
    return quiz_detail::draw_questions(choices, runs);
}

RoundView round_view(const QuizRun& run, const Question& q) { return quiz_detail::round_view(run, q); }

}  // namespace attntrace
