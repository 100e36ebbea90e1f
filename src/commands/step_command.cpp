#include "commands/step_command.hpp"

#include "attention/trace.hpp"
#include "core/error.hpp"
#include "input/source.hpp"
#include "stepper/frame.hpp"
#include "stepper/session.hpp"
#include "stepper/stepper.hpp"
#include "util/terminal.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>

namespace attntrace {
namespace {

// Only the stepper's own inputs: a step has no size guard beyond the trace's, and none is
// needed for the small inputs a learner steps through (the trace's own guard applies).
constexpr Eigen::Index most_tokens = 512;

// "100x30" → (100, 30).
std::pair<int, int> parse_size(const std::string& text) {
    const auto x = text.find('x');
    int w = 0, h = 0;
    const bool ok = x != std::string::npos &&
                    std::from_chars(text.data(), text.data() + x, w).ptr == text.data() + x &&
                    std::from_chars(text.data() + x + 1, text.data() + text.size(), h).ptr == text.data() + text.size();
    if (!ok || w < 40 || h < 12 || w > 1000 || h > 1000)
        throw UsageError(fmt::format("--size \"{}\": give COLUMNSxROWS, as 80x24 (from 40x12 to 1000x1000)", printable(text)));
    return {w, h};
}

// The options the input was read with, as the command that repeats the run gives them.
std::string load_arguments(const LoadOptions& load) {
    const auto quoted = shell_word;
    std::string text;
    if (load.layout) text += fmt::format(" --layout {}", to_string(*load.layout));
    if (load.tokens) {
        std::string joined;
        for (const auto& t : *load.tokens) joined += (joined.empty() ? "" : " ") + t;
        text += fmt::format(" --tokens {}", quoted(joined));
    }
    if (load.from) text += fmt::format(" --from {}", to_string(*load.from));
    if (load.layer) text += fmt::format(" --layer {}", *load.layer);
    if (load.hidden_states) text += fmt::format(" --hidden-states {}", quoted(*load.hidden_states));
    return text;
}

// The keys of --keys replayed: after each, its frame (or with --plain its line).
void replay(stepper::Stepper& s, const std::string& script_path, const StepRequest& r, std::ostream& out) {
    const InputText script = read_input(script_path, r.max_input);
    const std::vector<stepper::Key> keys = stepper::parse_key_script(script.text);
    script.require_unchanged();
    const std::pair<int, int> size = parse_size(r.size.value_or("80x24"));
    const int width = size.first, height = size.second;  // named, for the lambda (clang captures no binding)
    const auto show = [&](std::size_t n, const std::string& after) {
        if (r.plain) {
            out << s.plain_line() << '\n';
            return;
        }
        out << fmt::format("── frame {}: {} ──\n", n, after) << stepper::frame_text(stepper::draw(s, width, height));
    };
    show(0, "start");
    std::size_t n = 0;
    for (const stepper::Key& key : keys) {
        if (s.finished()) break;
        s.press(key);
        if (!s.finished()) show(++n, stepper::key_name(key));
    }
}

}  // namespace

int run_step(StepRequest request, Outputs& outputs) {
    if (request.render.format != Format::table)
        throw UsageError(fmt::format("attntrace step draws a screen, not -f {}: for the numbers as {}, trace the input "
                                     "(attntrace INPUT -f {})",
                                     to_string(request.render.format), to_string(request.render.format),
                                     to_string(request.render.format)));
    if (request.size && !request.keys)
        throw UsageError("--size sizes the frames --keys writes; on a terminal the screen has its own size");
    if (request.keys && *request.keys == "-" && (!request.input_path || *request.input_path == "-"))
        throw UsageError("--keys - reads the keys from standard input, so name the INPUT in a file or as example:NAME "
                         "(the default is example:your_journey)");
    const bool on_terminal = !request.keys;
    if (on_terminal && (request.to_file || !::isatty(STDOUT_FILENO)))
        throw UsageError("attntrace step draws on a terminal, and its output is not one: --keys SCRIPT replays keys and "
                         "writes each frame as text, and attntrace INPUT -q ROW --explain prints the same numbers");
    const InputText input = named_piped_or_example(request.input_path, std::nullopt, request.max_input, nullptr);
    const Problem problem = load_input(input, request.max_memory, with_max_input(request.load, request.max_input));
    request.trace.mode = resolve_mode(problem, request.mode);
    const Eigen::Index tokens = std::holds_alternative<SingleSequenceInput>(problem.input)
                                    ? static_cast<Eigen::Index>(std::get<SingleSequenceInput>(problem.input).sequence.tokens.size())
                                    : static_cast<Eigen::Index>(std::get<EncoderDecoderInput>(problem.input).source.tokens.size());
    if (tokens > most_tokens)
        throw UsageError(fmt::format("{}: {} tokens are more than attntrace step shows ({} at most): --summary traces long "
                                     "inputs",
                                     problem.origin, tokens, most_tokens));
    const std::string name = request.input_path.value_or(input.origin == "<stdin>" ? "-" : input.origin);
    std::optional<LossText> loss;
    if (request.backward) {
        std::string error;
        loss = parse_loss(*request.backward, error);
        if (!loss) throw UsageError(fmt::format("--backward {}", error));
    }
    stepper::Stepper s(problem, request.trace, name, request.render.digits, loss, load_arguments(request.load));
    s.start_at(request.stage, request.row);
    if (!on_terminal) {
        replay(s, *request.keys, request, outputs.main());
        return 0;
    }
    const int fd = ::open("/dev/tty", O_RDWR | O_CLOEXEC);
    if (fd < 0) throw UsageError("attntrace step needs a terminal to read keys from (/dev/tty): --keys SCRIPT replays them");
    stepper::SessionResult result;
    try {
        result = stepper::run_session(s, fd, request.plain);
    } catch (...) {
        ::close(fd);
        throw;
    }
    ::close(fd);
    const std::string command = s.command();
    outputs.main() << (command.empty() ? fmt::format("the run on screen had {} edit{}, which no command repeats (x writes the edited input)\n", s.edits(), s.edits() == 1 ? "" : "s")
                                       : fmt::format("the run on screen: {}\n", command));
    return result.interrupted ? 130 : 0;
}

}  // namespace attntrace
