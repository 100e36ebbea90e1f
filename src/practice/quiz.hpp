// The quiz's questions and their grading (`attntrace quiz`). Each round picks (from a seed) an
// example, a mode and a question on one stage; the round shows the trace up to that stage with
// the asked entry, and whatever would give it away, hidden; an answer is checked to the
// precision it was written with, and a wrong one gets the known mistake that gives that number
// (practice/mistakes) and the arithmetic of the entry (attention/worked). The transcript and the
// report are render/quiz_report.cpp's.
#pragma once

#include "core/stage.hpp"
#include "core/types.hpp"
#include "core/worked.hpp"
#include "practice/mistakes.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attntrace {

// The examples the quiz draws from when --example does not say: a few tokens of a few
// numbers each, small enough to work out by hand, in every mode that reads them.
inline constexpr std::string_view quiz_examples[] = {"your_journey", "big_dream",         "journey_padded", "two_heads",
                                                     "black_cat_fr", "teacher_smiled_fr", "padded_cat_fr"};

// The stages the quiz asks about (--stage).
inline constexpr StageId quiz_stages[] = {StageId::queries, StageId::keys,    StageId::values,  StageId::scores, StageId::scaled,
                                          StageId::masked,  StageId::weights, StageId::context, StageId::output};

inline constexpr std::uint64_t default_quiz_seed = 1;

// An answer with fewer decimals than this is right only when it is the value itself (a row sum
// of 1, a weight of 0): "0" is 0.3 rounded to no decimals, but no answer to the question.
inline constexpr int least_decimals = 2;

// What the quiz may ask about.
struct QuizChoices {
    std::uint64_t seed = default_quiz_seed;
    int rounds = 5;
    std::vector<Mode> modes;            // --mode: empty, every mode that reads the example
    std::vector<StageId> stages;        // --stage: empty, every stage of quiz_stages
    std::vector<std::string> examples;  // --example: empty, quiz_examples
};

// What a question asks for.
enum class QuestionKind {
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

// Its name in the quiz's report: "score", "tanh_feature", "scaled_score", …
std::string_view kind_name(QuestionKind kind);

// One example traced in one mode.
struct QuizRun {
    std::string example;
    Trace trace;
};

struct Question {
    std::size_t run = 0;
    QuestionKind kind = QuestionKind::score;
    StageId stage = StageId::scores;
    int head = 0;  // the stage's head (0: the run has one)
    Eigen::Index row = 0, col = 0;
    Eigen::Index entry = 0;  // feature: the entry of tanh(s·W_a + h·U_a)
    double expected = 0;
    bool expected_masked = false;  // −∞: a hidden score
    std::string text;              // the question, one sentence
};

// An answer as written.
struct QuizAnswer {
    enum class Form { number, masked, skip, unreadable };
    Form form = Form::skip;
    std::string text;  // as written, trimmed
    double value = 0;
    int decimals = 0;
    bool beyond_double = false;  // unreadable: a number, but larger than a double holds ("1e309")
};

enum class QuizVerdict { right, wrong, skipped, unanswered };
std::string_view verdict_name(QuizVerdict verdict);

struct QuizResult {
    QuizVerdict verdict = QuizVerdict::unanswered;
    QuizAnswer answer;
    std::vector<Diagnosis> mistakes;  // the known mistakes that give the number answered, the likeliest first
    bool too_coarse = false;  // right to its own precision, but with too few decimals
    // Wrong or skipped: the arithmetic of the asked entry, from the worked example of its row
    // (or, for a projection, of its vector).
    std::optional<WorkedExample> worked;
    std::optional<WorkedProjection> worked_projection;
};

struct QuizTally {
    int right = 0, wrong = 0, skipped = 0, unanswered = 0;
};
QuizTally tally(const std::vector<QuizResult>& results);

// A quiz as it is asked and graded: its rounds' questions and, as they are answered, results.
struct Quiz {
    std::uint64_t seed = default_quiz_seed;
    std::vector<QuizRun> runs;
    std::vector<Question> questions;
    std::vector<QuizResult> results;  // one a question, unanswered until it is graded
};

// One step of a quiz as it goes, for its transcript (render/quiz_report.cpp): a format shows
// each step as it comes, or (JSON) the whole quiz once it has ended.
struct QuizEvent {
    enum class Step {
        start,       // before the first round
        ask,         // round `round` is asked
        prompt,      // an answer is about to be read
        answer,      // `answer` was read
        unreadable,  // `answer`, typed at a terminal, is not a number: it is asked for again
        stopped,     // the answers ended before round `round` was answered
        graded,      // round `round` was graded (quiz.results[round])
        end,         // no more rounds
    };
    Step step;
    const Quiz& quiz;
    std::size_t round = 0;
    const QuizAnswer* answer = nullptr;
    // Whether the output shows each answer itself: it does unless the answers are typed at the
    // terminal it is written to, which echoes them.
    bool echo = true;
};

// Every example of `choices` traced in every mode it chose that reads it. Throws what loading
// an example throws.
std::vector<QuizRun> make_runs(const QuizChoices& choices);

// The rounds' questions, drawn from choices.seed. Throws UsageError when no question fits the
// choices.
std::vector<Question> draw_questions(const QuizChoices& choices, const std::vector<QuizRun>& runs);

// What a round shows: the trace up to the asked stage (the stages to show, and the head, where
// the question is on one head's stage), with what would give the answer away hidden
// (Stage::hidden).
struct RoundView {
    Trace shown;
    std::vector<StageId> stages;
    std::optional<int> head;
};
RoundView round_view(const QuizRun& run, const Question& q);

// "0.25", "-1.5e-3", "+2", "−0.3" (a typographic minus); "-inf", "masked", "−∞" for a hidden
// score; "?" or nothing to skip.
QuizAnswer read_answer(std::string_view line);

// The answer `a` to `q` graded on `trace`: right, wrong (with the mistakes that give it, and
// the entry worked through) or skipped (worked through too).
QuizResult grade(const Trace& trace, const Question& q, const QuizAnswer& a);

}  // namespace attntrace
