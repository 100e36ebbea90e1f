// `attntrace quiz`: practice with feedback. The questions are drawn and graded by
// practice/quiz, the transcript and the report written by render/ (render/quiz_report.cpp);
// this command reads the answers, from a terminal, a pipe or --answers FILE, one a line. A
// score at the end; exit 1 unless every answer was right.
#pragma once

#include "practice/quiz.hpp"
#include "render/render.hpp"

#include <functional>
#include <optional>
#include <ostream>
#include <string>

namespace attntrace {

struct QuizRequest : QuizChoices {
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
