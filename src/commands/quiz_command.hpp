// `attntrace quiz`: practice with feedback. Each round picks (from a seed) an example, a mode
// and a question on one stage, shows the trace up to that stage with the asked entry (or its
// row) hidden, reads one answer and checks it to the precision it was written with; a wrong
// answer gets the known mistake that gives that number (practice/mistakes) and the arithmetic
// of the entry (attention/worked). A score at the end; exit 1 unless every answer was right.
#pragma once

#include "core/stage.hpp"
#include "core/types.hpp"
#include "render/render.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
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

struct QuizRequest {
    std::uint64_t seed = default_quiz_seed;
    int rounds = 5;
    std::vector<Mode> modes;                  // --mode: empty, every mode that reads the example
    std::vector<StageId> stages;              // --stage: empty, every stage of quiz_stages
    std::vector<std::string> examples;        // --example: empty, quiz_examples
    std::optional<std::string> answers_path;  // --answers FILE ("-": standard input); absent: standard input
    RenderOptions render;                     // table (the transcript) or json (every round's result at the end)
};

// Where the quiz meets its user: whether the answers are typed at a terminal (then a line that is
// not a number is asked again, and -f json is refused), whether the output shows each answer
// itself (it does unless the answers are typed at the terminal it is written to, which echoes
// them), and how to write what is held so far before an answer is read from standard input.
struct QuizTerminal {
    bool answers_typed = false;
    bool echo = true;
    std::function<void()> flush = [] {};
};

// Runs the quiz; returns the exit status (0: every round answered right, 1: otherwise). Throws
// UsageError for choices no question fits, DataError for answers that cannot be read, before
// anything is written.
int run_quiz(const QuizRequest& request, const QuizTerminal& terminal, std::ostream& out);

}  // namespace attntrace
