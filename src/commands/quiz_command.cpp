#include "commands/quiz_command.hpp"

#include "core/error.hpp"
#include "input/limits.hpp"
#include "input/source.hpp"

#include <algorithm>
#include <iostream>

namespace attntrace {
namespace {

// Where the answers come from: a file read whole at the start, or standard input line by line.
class Answers {
public:
    explicit Answers(const std::optional<std::string>& path) {
        if (path && *path != "-") {
            // quiz has no --max-input: the message says whose limit it is.
            const InputText input = read_input(*path, default_max_input_bytes, "the largest answers file quiz reads");
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

// The next answer, or none when the answers have ended. A line typed at a terminal that is not
// a number is asked for again.
std::optional<QuizAnswer> next_answer(Answers& answers, const QuizTerminal& terminal, bool typed,
                                      const std::function<void(QuizEvent::Step, const QuizAnswer*)>& show) {
    while (true) {
        show(QuizEvent::Step::prompt, nullptr);
        if (answers.from_stdin()) terminal.flush();
        const std::optional<std::string> line = answers.next();
        if (!line) return std::nullopt;
        QuizAnswer a = read_answer(*line);
        show(QuizEvent::Step::answer, &a);
        if (a.form != QuizAnswer::Form::unreadable || !typed) return a;
        show(QuizEvent::Step::unreadable, &a);
    }
}

}  // namespace

int run_quiz(const QuizRequest& request, const QuizTerminal& terminal, std::ostream& out) {
    require_format(request.render.format, Product::quiz);
    Answers answers(request.answers_path);
    const bool typed = terminal.answers_typed && answers.from_stdin();
    if (request.render.format == Format::json && typed)
        throw UsageError("quiz -f json is for course tooling: give the answers with --answers FILE or on a pipe");
    Quiz quiz;
    quiz.seed = request.seed;
    quiz.runs = make_runs(request);
    quiz.questions = draw_questions(request, quiz.runs);
    quiz.results.resize(quiz.questions.size());
    std::size_t round = 0;
    const auto show = [&](QuizEvent::Step step, const QuizAnswer* answer) {
        render(QuizEvent{step, quiz, round, answer, terminal.echo}, request.render, out);
    };
    show(QuizEvent::Step::start, nullptr);
    for (; round < quiz.questions.size(); ++round) {
        show(QuizEvent::Step::ask, nullptr);
        const std::optional<QuizAnswer> answer = next_answer(answers, terminal, typed, show);
        if (!answer) {
            show(QuizEvent::Step::stopped, nullptr);
            break;
        }
        const Question& q = quiz.questions[round];
        quiz.results[round] = grade(quiz.runs[q.run].trace, q, *answer);
        show(QuizEvent::Step::graded, nullptr);
    }
    show(QuizEvent::Step::end, nullptr);
    const QuizTally t = tally(quiz.results);
    return t.right == static_cast<int>(quiz.questions.size()) ? 0 : 1;
}

}  // namespace attntrace
