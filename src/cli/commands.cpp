#include "cli/commands.hpp"

#include "attention/isa.hpp"
#include "attention/learning.hpp"
#include "attention/modes.hpp"
#include "cli/backward_flags.hpp"
#include "cli/flags.hpp"
#include "cli/manual.hpp"
#include "commands/bench_command.hpp"
#include "commands/check_answers_command.hpp"
#include "commands/compare_command.hpp"
#include "commands/decode_command.hpp"
#include "commands/generate_command.hpp"
#include "commands/quiz_command.hpp"
#include "commands/similarity_command.hpp"
#include "commands/trace_command.hpp"
#include "core/error.hpp"
#include "input/examples.hpp"
#include "render/svg.hpp"
#include "input/limits.hpp"
#include "util/output.hpp"
#include "util/suggest.hpp"
#include "util/terminal.hpp"
#include "util/threads.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <type_traits>
#include <unistd.h>

namespace attntrace {
namespace {

constexpr const char* version = ATTNTRACE_VERSION;  // CMakeLists.txt's project(VERSION)
constexpr std::size_t max_message_chars = 2000;

// What a parsed command does: returns the exit status.
using Runner = std::function<int()>;

struct Command {
    CLI::App* app;  // the subcommand, or the top level for the main job
    Runner run;     // empty until a subcommand's options are added (run_command_line)
};

// Prints "attntrace: error: MESSAGE" as one line on stderr: breaks become spaces, anything
// else that could act on the terminal is escaped, and the whole is bounded (an argument
// echoed by CLI11 may be megabytes long). Returns `code`.
int fail(int code, std::string message) {
    for (char& c : message)
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    std::fprintf(stderr, "attntrace: error: %s\n", printable(message, max_message_chars).c_str());
    return code;
}

// Runs `job` on the outputs (stdout, or FILE for -o, and any files the job adds), committing
// them only when the job succeeds; returns the exit status.
template <typename Job>
int run(Job&& job, const std::optional<std::string>& output_path) {
    try {
        Outputs outputs(output_path);
        if constexpr (std::is_invocable_v<Job, Outputs&>) job(outputs);
        else job(outputs.main());
        outputs.commit();
        return 0;
    } catch (const BrokenPipe&) {
        return exit_broken_pipe;
    } catch (const UsageError& e) {
        return fail(exit_usage_error, e.what());
    } catch (const DataError& e) {
        return fail(exit_data_error, e.what());
    } catch (const std::bad_alloc&) {
        return fail(exit_data_error, "out of memory");
    } catch (const std::exception& e) {
        return fail(exit_data_error, fmt::format("internal error: {}", e.what()));
    }
}

// svg_stages by name.
std::vector<std::string> svg_stage_names() {
    std::vector<std::string> names;
    for (const StageId id : svg_stages) names.emplace_back(to_string(id));
    return names;
}

// attntrace [INPUT]: the main job.
struct TraceState {
    TraceRequest request;
    OutputFlags output;
    InputFlags input;
    TraceFlags flags;
    LimitFlags limits;
    BackwardFlags backward;  // --backward, --step-size
    bool list = false;
    int head = 0;  // --head
    bool man = false;          // --man: print the man page
    std::string completions;   // --completions SHELL: print its completion script
    std::optional<Eigen::Index> tiles;  // --tiles

    int run() {
        return attntrace::run(
            [this](Outputs& outputs) {
                if (list) return list_examples(outputs.main());
                const auto query = request.trace.query;
                request.trace = flags.apply();
                request.trace.query = query;
                request.trace.tiles = tiles;
                if (head > 0) request.trace.head = request.render.head = head;
                request.max_memory = limits.memory();
                request.max_seconds = limits.seconds();
                request.max_input = limits.input();
                request.load = input.apply(request.max_input, flags.heads > 0, flags.kv_heads > 0);
                request.mode = flags.requested_mode();
                request.backward = backward.apply();
                output.apply(request.render, outputs.main_output());
                run_trace(std::move(request), outputs);
            },
            output.path);
    }
};

void add_trace_options(CLI::App& app, TraceState& s) {
    auto* input = describe(app.add_option("INPUT", s.request.input_path,
                                          "input JSON file (docs/input-format.md), - for stdin, example:NAME; none: "
                                          "standard input when it is a pipe or a file with something in it, else the "
                                          "built-in example your_journey"),
                           "Input", "", Completes::input);
    auto* example = describe(app.add_option("--example", s.request.example, "trace a built-in example by name"), "Input",
                             "NAME", Completes::example);
    input->excludes(example);
    app.add_flag("--list-examples", s.list, "list the built-in examples and exit")
        ->excludes(example)
        ->excludes(input)
        ->group("Input");
    s.input.add_to(app);
    s.flags.add_to(app);
    s.output.add_to(app, true);
    std::vector<std::string> stage_choices = all_stage_names();
    for (auto& name : gradient_names()) stage_choices.push_back(std::move(name));
    describe(list_option(app.add_option("-s,--stage", s.request.stages,
                                        "show only these stages, comma-separated (e.g. scores,weights); with --backward, "
                                        "d_NAME is a gradient (d_weights, d_W_q)")),
             "Output", "NAME,...", Completes::list, stage_choices);
    describe(app.add_option("-q,--query", s.request.trace.query,
                            "work through one query's arithmetic: a token as spelled, or a 1-based position"),
             "Output", "TOKEN|N");
    describe(app.add_option("--tiles", s.tiles, "with -q: work the row through the online softmax, this many keys a tile "
                                                "(the streaming path's way)")
                 ->transform(in_range(Eigen::Index{1}, static_cast<Eigen::Index>(max_tokens))),
             "Output", "N");
    describe(app.add_option("--head", s.head, "several heads: show this head's stages alone, and work through it with -q "
                                              "(default: every head; -q works through head 1)")
                 ->transform(in_range(1, max_heads)),
             "Attention", "H");
    app.add_flag("--explain", s.request.render.explain, "explain each stage before showing it")->group("Output");
    auto* svg = describe(app.add_option("--svg", s.request.svg_path,
                                        "also write a heatmap of the attention weights (or of --svg-stage) to this SVG "
                                        "file; - is stdout"),
                         "Output", "FILE", Completes::file);
    auto* svg_stage = app.add_option("--svg-stage", s.request.svg_stage,
                                     "the stage --svg draws; with --backward, d_NAME draws its gradient")
                          ->needs(svg)
                          ->capture_default_str();
    std::vector<std::string> svg_choices = svg_stage_names();
    for (const StageId id : svg_stages) svg_choices.push_back(fmt::format("d_{}", to_string(id)));
    describe(svg_stage, "Output", "NAME", Completes::choice, svg_choices);
    app.add_flag("--tidy", s.request.render.tidy,
                 "with --format csv: one line per number (columns stage, head, row, col, row_token, col_token, "
                 "value, masked), for pandas.read_csv")
        ->group("Output");
    app.add_flag("--check", s.request.check,
                 "verify the trace (rows sum to 1, masked weights 0, context = weights·values, all finite) "
                 "and print the verdict instead of the trace; with --backward, every gradient against central "
                 "differences")
        ->group("Output");
    app.add_flag("--summary", s.request.summary,
                 "per query its top keys, largest weight and entropy, by the streaming path "
                 "(no n×n matrix); --stage context adds the context vectors")
        ->group("Long inputs");
    describe(app.add_option("--top", s.request.top, "keys per query in the summary")
                 ->transform(in_range(1, 1000))
                 ->capture_default_str(),
             "Long inputs", "K");
    s.backward.add_to(app);
    s.limits.add_to(app);
    app.add_flag("--man", s.man, "print the man page (roff) and exit")->group("");
    app.add_option("--completions", s.completions, "print the completion script for this shell and exit")
        ->check(one_of({"bash", "zsh", "fish"}, "--completions"))
        ->group("");
}

// The run of a command that traces its inputs (compare, decode): the request takes the
// trace flags, the output and the limits, then `job` does the work.
template <typename State, typename Request>
Runner run_traced(std::shared_ptr<State> s, void (*job)(Request, std::ostream&)) {
    return [s, job] {
        return run(
            [&](Outputs& outputs) {
                Request& request = s->request;
                request.mode = s->flags.requested_mode();
                request.trace = s->flags.apply();
                s->output.apply(request.render, outputs.main_output());  // colour and width from where it goes
                request.max_memory = s->limits.memory();
                request.max_seconds = s->limits.seconds();
                request.max_input = s->limits.input();
                request.load = s->input.apply(request.max_input, s->flags.heads > 0, s->flags.kv_heads > 0);
                job(std::move(request), outputs.main());
            },
            s->output.path);
    };
}

Runner add_similarity(CLI::App* command) {
    struct State {
        SimilarityRequest request;
        OutputFlags output;
        InputFlags input;
        LimitFlags limits;
    };
    auto s = std::make_shared<State>();
    describe(command->add_option("INPUT", s->request.input, "input JSON file, - for stdin, or example:NAME")->required(),
             "Input", "", Completes::input);
    s->input.add_to(*command, false);
    s->output.add_to(*command);
    describe(command->add_option("--svg", s->request.svg_path,
                                 "also draw the words' vectors as arrows from the origin in this SVG file (more than two "
                                 "numbers: projected onto their first two principal directions); - is stdout"),
             "Output", "FILE", Completes::file);
    s->limits.add_to(*command);
    return [s] {
        return run(
            [&](Outputs& outputs) {
                prepare_threads(std::nullopt);
                s->output.apply(s->request.render, outputs.main_output());
                s->request.max_memory = s->limits.memory();
                s->request.max_seconds = s->limits.seconds();
                s->request.max_input = s->limits.input();
                s->request.load = s->input.apply(s->request.max_input, false, false);
                run_similarity(s->request, outputs);
            },
            s->output.path);
    };
}

Runner add_generate(CLI::App* command) {
    struct State {
        GenerateRequest request;
        std::optional<std::string> output;
    };
    auto s = std::make_shared<State>();
    describe(command->add_option("-n,--tokens", s->request.tokens, "number of tokens")
                 ->transform(in_range(std::int64_t{1}, static_cast<std::int64_t>(max_tokens)))
                 ->capture_default_str(),
             "Input", "N");
    describe(command->add_option("-d,--dim", s->request.dim, "vector dimension d_in = d_k = d_v")
                 ->transform(in_range(std::int64_t{1}, static_cast<std::int64_t>(max_dimension)))
                 ->capture_default_str(),
             "Input", "N");
    describe(command->add_option("--seed", s->request.seed, "seed of the generator")->transform(whole_number_u64)->capture_default_str(),
             "Input", "N");
    choose(command->add_option("-f,--format", s->request.format,
                               "json, or arrays: npz (read with --layout in_out) or safetensors; the same numbers for "
                               "the same seed"),
           "Output", {"json", "npz", "safetensors"})
        ->capture_default_str();
    choose(command->add_option("--dtype", s->request.dtype,
                               "numbers of npz and safetensors: float64 (those of the JSON) or float32 (each rounded to "
                               "a float)"),
           "Output", {"float64", "float32"})
        ->capture_default_str();
    add_output_path(*command, s->output);
    return [s] {
        s->request.to_terminal = (!s->output || *s->output == "-") && ::isatty(STDOUT_FILENO);
        return run([&](std::ostream& out) { run_generate(s->request, out); }, s->output);
    };
}

// A list option of enum values, as names: "--modes self,causal".
template <Named E>
std::vector<E> parsed(const std::vector<std::string>& names) {
    std::vector<E> values;
    for (const auto& name : names) values.push_back(*parse_enum<E>(name));  // CLI11 has checked the names
    return values;
}

template <Named E>
std::vector<std::string> names_of_list(const std::vector<E>& values) {
    std::vector<std::string> names;
    for (const E value : values) names.emplace_back(to_string(value));
    return names;
}

Runner add_bench(CLI::App* command) {
    struct State {
        BenchRequest request;
        std::vector<std::string> modes = names_of_list(request.modes), dtypes = names_of_list(request.dtypes),
                                 paths = names_of_list(request.paths);
        std::string format = "table";
        std::optional<std::string> output;
        LimitFlags limits;
    };
    auto s = std::make_shared<State>();
    BenchRequest& r = s->request;
    describe(list_option(command->add_option("--sizes", r.sizes, "token counts, comma-separated"))
                 ->transform(in_range(std::int64_t{1}, std::int64_t{1} << 20))
                 ->capture_default_str(),
             "Runs", "N,...");
    describe(command->add_option("--dim", r.dim, "d_in = d_k = d_v")
                 ->transform(in_range(std::int64_t{1}, std::int64_t{4096}))
                 ->capture_default_str(),
             "Runs", "N");
    describe(command->add_option("--heads", r.heads, "attention heads, each of d_head = dim / heads (a divisor of --dim)")
                 ->transform(in_range(1, 4096))
                 ->capture_default_str(),
             "Runs", "H");
    std::vector<std::string> streaming;  // bench times the modes with a streaming path
    for (const ModeSpec& spec : mode_specs())
        if (spec.streams) streaming.emplace_back(spec.name());
    choose(list_option(command->add_option("--modes", s->modes, "the modes to time")), "Runs", streaming, true)
        ->capture_default_str();
    choose(list_option(command->add_option("--dtypes", s->dtypes, "the working precisions to time")), "Runs",
           enum_names<Dtype>(), true)
        ->capture_default_str();
    describe(list_option(command->add_option("--threads", r.threads, "thread counts (default: 1 to the number of cores)"))
                 ->transform(in_range(1, max_threads)),
             "Runs", "N,...");
    choose(list_option(command->add_option("--paths", s->paths, "the paths to time")), "Runs", enum_names<BenchPath>(),
           true)
        ->capture_default_str();
    describe(command->add_option("--trace-max", r.trace_max, "largest n for the trace path, which holds n×n matrices")
                 ->transform(in_range(std::int64_t{0}, std::int64_t{1} << 20))
                 ->capture_default_str(),
             "Runs", "N");
    describe(command->add_option("--repeats", r.repeats, "timed runs per configuration after a warm-up (median)")
                 ->transform(in_range(1, 1000))
                 ->capture_default_str(),
             "Runs", "N");
    choose(command->add_option("-f,--format", s->format, "output format"), "Output", formats_showing(Product::bench))
        ->capture_default_str();
    add_output_path(*command, s->output);
    s->limits.add_to(*command, false);
    return [s] {
        return run(
            [&](std::ostream& out) {
                BenchRequest& request = s->request;
                prepare_threads(request.threads.empty() ? std::nullopt : std::optional<int>(request.threads.front()));
                request.modes = parsed<Mode>(s->modes);
                request.dtypes = parsed<Dtype>(s->dtypes);
                request.paths = parsed<BenchPath>(s->paths);
                request.format = *parse_enum<Format>(s->format);
                request.max_memory = s->limits.memory();
                request.max_seconds = s->limits.seconds();
                run_bench(request, out);
            },
            s->output);
    };
}

Runner add_compare(CLI::App* command) {
    struct State {
        CompareRequest request;
        OutputFlags output;
        InputFlags input;
        TraceFlags flags;
        LimitFlags limits;
    };
    auto s = std::make_shared<State>();
    describe(command->add_option("A", s->request.a, "first input (file, - or example:NAME)")->required(), "Input", "",
             Completes::input);
    describe(command->add_option("B", s->request.b, "second input")->required(), "Input", "", Completes::input);
    describe(command->add_option("-t,--token", s->request.token, "the word to follow (first occurrence)")->required(),
             "Input", "WORD");
    s->input.add_to(*command);
    s->flags.add_to(*command);
    s->output.add_to(*command);
    s->limits.add_to(*command);
    return run_traced(s, run_compare);
}

Runner add_decode(CLI::App* command) {
    struct State {
        DecodeRequest request;
        OutputFlags output;
        InputFlags input;
        TraceFlags flags;
        LimitFlags limits;
    };
    auto s = std::make_shared<State>();
    DecodeOptions& d = s->request.decode;
    describe(command->add_option("INPUT", s->request.input_path,
                                 "input JSON file, - for stdin, or example:NAME (default: the built-in example your_journey)"),
             "Input", "", Completes::input);
    describe(command->add_option("--prefill", d.prefill, "tokens that go in at once before the first step")
                 ->transform(in_range(std::int64_t{1}, static_cast<std::int64_t>(max_tokens)))
                 ->capture_default_str(),
             "Decoding", "P");
    describe(command->add_option("--step", d.step, "show only the step of this position (1-based)")
                 ->transform(in_range(std::int64_t{1}, static_cast<std::int64_t>(max_tokens))),
             "Decoding", "N");
    describe(command->add_option("--context", d.context,
                                 "context length of the table of K/V cache bytes (default: the input's tokens)")
                 ->transform(in_range(std::int64_t{1}, std::int64_t{1} << 40)),
             "Decoding", "N");
    command->add_flag("--explain", s->request.render.explain,
                      "say why the query is not cached, why keys and values are, and why only causal attention")
        ->group("Decoding");
    s->input.add_to(*command);
    s->flags.add_to(*command);
    s->output.add_to(*command);
    s->limits.add_to(*command);
    return run_traced(s, run_decode);
}

Runner add_check_answers(CLI::App* command) {
    struct State {
        CheckAnswersRequest request;
        OutputFlags output;
        InputFlags input;
        TraceFlags flags;
        LimitFlags limits;
    };
    auto s = std::make_shared<State>();
    describe(command->add_option("INPUT", s->request.input_path,
                                 "input JSON file, - for stdin, or example:NAME, traced with the options below")
                 ->required(),
             "Input", "", Completes::input);
    describe(command->add_option("ANSWERS", s->request.answers_path,
                                 "the learner's numbers: JSON ({\"weights\": [[...]]}, rows, cells, per head; "
                                 "docs/practice.md) or the tidy CSV of --format csv --tidy")
                 ->required(),
             "Input", "", Completes::file);
    s->input.add_to(*command);
    s->flags.add_to(*command);
    s->output.add_to(*command);
    s->limits.add_to(*command);
    return [s] {
        int status = 0;
        const int failed = run(
            [&](Outputs& outputs) {
                CheckAnswersRequest& request = s->request;
                request.mode = s->flags.requested_mode();
                request.trace = s->flags.apply();
                s->output.apply(request.render, outputs.main_output());
                request.max_memory = s->limits.memory();
                request.max_seconds = s->limits.seconds();
                request.max_input = s->limits.input();
                request.load = s->input.apply(request.max_input, s->flags.heads > 0, s->flags.kv_heads > 0);
                status = run_check_answers(std::move(request), outputs.main());
            },
            s->output.path);
        return failed != 0 ? failed : status;
    };
}

Runner add_quiz(CLI::App* command) {
    struct State {
        QuizRequest request;
        std::vector<std::string> modes, stages;
        std::string format = "table", color = "auto";
        int width = -1;
    };
    auto s = std::make_shared<State>();
    describe(command->add_option("--seed", s->request.seed, "seed of the questions: the same seed and options ask the same ones")
                 ->transform(whole_number_u64)
                 ->capture_default_str(),
             "Quiz", "N");
    describe(command->add_option("-n,--rounds", s->request.rounds, "questions to ask")->transform(in_range(1, 1000))->capture_default_str(),
             "Quiz", "N");
    choose(list_option(command->add_option("-m,--mode", s->modes,
                                           "ask only about these modes (default: every mode that reads the example)")),
           "Quiz", enum_names<Mode>(), true);
    std::vector<std::string> stage_names;
    for (const StageId id : quiz_stages) stage_names.emplace_back(to_string(id));
    choose(list_option(command->add_option("-s,--stage", s->stages, "ask only about these stages (default: all of them)")),
           "Quiz", stage_names, true);
    std::vector<std::string> example_names;
    for (const auto& example : examples()) example_names.emplace_back(example.name);
    describe(list_option(command->add_option("--example", s->request.examples,
                                             fmt::format("ask only about these built-in examples (default: {})",
                                                         fmt::join(quiz_examples, ", "))))
                 ->check(one_of(example_names)),
             "Quiz", "NAME,...", Completes::example);
    describe(command->add_option("--answers", s->request.answers_path,
                                 "read the answers from FILE, one a line (- for standard input; default: standard "
                                 "input, typed at a terminal or piped)"),
             "Input", "FILE", Completes::file);
    choose(command->add_option("-f,--format", s->format, "table: the transcript; json: every round's result at the end"),
           "Output", formats_showing(Product::quiz))
        ->capture_default_str();
    describe(command->add_option("--digits", s->request.render.digits, "decimals in tables")->transform(in_range(0, 17))->capture_default_str(),
             "Output", "N");
    describe(command->add_option("--width", s->width, "table width in columns, 0 for no limit (default: the terminal's)")
                 ->transform(in_range(0, 1'000'000)),
             "Output", "N");
    choose(command->add_option("--color", s->color,
                               "shade scores and weights; auto: when the output is a terminal, NO_COLOR is unset and "
                               "TERM is not dumb"),
           "Output", {"auto", "always", "never"})
        ->capture_default_str();
    return [s] {
        int status = 0;
        const int failed = run(
            [&](Outputs& outputs) {
                QuizRequest& request = s->request;
                request.modes = parsed<Mode>(s->modes);
                request.stages = parsed<StageId>(s->stages);
                request.render.format = *parse_enum<Format>(s->format);
                const Output& main = outputs.main_output();
                fit_to_destination(request.render, s->width, s->color, main);
                QuizTerminal terminal;
                terminal.answers_typed = is_terminal(STDIN_FILENO);
                terminal.echo = !(terminal.answers_typed && is_terminal(main.descriptor()));
                terminal.flush = [&outputs] { outputs.main_output().drain(); };
                status = run_quiz(request, terminal, outputs.main());
            },
            std::nullopt);
        return failed != 0 ? failed : status;
    };
}

// Every name an option of `app` answers to ("--temperature", "-q").
std::vector<std::string> option_names(const CLI::App& app) {
    std::vector<std::string> names{"--help"};
    for (const CLI::Option* option : app.get_options()) {
        for (const auto& name : option->get_lnames()) names.push_back("--" + name);
        for (const auto& name : option->get_snames()) names.push_back("-" + name);
    }
    return names;
}

// "attntrace", or "attntrace decode": the command `app` is, as a user types it.
std::string command_name(const CLI::App& app) {
    return app.get_parent() ? "attntrace " + app.get_name() : std::string("attntrace");
}

// The option of `app` that CLI11's messages call `name` (its get_name(): "--output", "INPUT").
const CLI::Option* option_named(const CLI::App& app, std::string_view name) {
    for (const CLI::Option* option : app.get_options())
        if (!name.empty() && option->get_name() == name) return option;
    return nullptr;
}

// "--output FILE", "INPUT": an option as its --help line shows it, with what it takes.
std::string usage_of(const CLI::App& app, std::string_view name) {
    const CLI::Option* o = option_named(app, name);
    if (!o) return std::string(name);
    if (o->get_positional()) return o->get_name(true, false);
    const std::string flag = o->get_lnames().empty() ? "-" + o->get_snames().front() : "--" + o->get_lnames().front();
    return o->get_option_text().empty() ? flag : flag + " " + o->get_option_text();
}

// "A and B", "INPUT": the positionals `app` takes.
std::string positionals_of(const CLI::App& app) {
    std::vector<std::string> names;
    for (const CLI::Option* o : app.get_options([](const CLI::Option* o) { return o->get_positional(); }))
        names.push_back(o->get_name(true, false));
    if (names.empty()) return "no arguments besides its options";
    if (names.size() == 1) return "one argument, " + names.front();
    const std::string last = names.back();
    names.pop_back();
    return fmt::format("{} and {}", fmt::join(names, ", "), last);
}

// The text after `prefix` when `text` starts with it.
std::optional<std::string_view> after(std::string_view text, std::string_view prefix) {
    if (!text.starts_with(prefix)) return std::nullopt;
    return text.substr(prefix.size());
}

// CLI11's messages said our way, naming the option as --help shows it and saying what to do
// ("--output needs a value: --output FILE" for "--output: 1 required TEXT missing"). Each
// form CLI11 2 has for what a user can type; the messages of our own validators ("--digits:
// expected a whole number from 0 to 17, found 99") are kept. `active`: the command parsed.
std::string said_our_way(const CLI::ParseError& e, const CLI::App& active) {
    const std::string text = e.what();
    const std::string command = command_name(active);
    const auto split = [&](std::string_view separator) -> std::pair<std::string, std::string> {
        const std::size_t at = text.find(separator);
        if (at == std::string::npos) return {text, ""};
        return {text.substr(0, at), text.substr(at + separator.size())};
    };
    if (dynamic_cast<const CLI::RequiredError*>(&e)) {  // "INPUT is required", "--token is required"
        const auto [name, rest] = split(" is required");
        const CLI::Option* o = option_named(active, name);
        return o ? fmt::format("{} needs {}: {}", command, usage_of(active, name), o->get_description())
                 : fmt::format("{} needs {}", command, printable(name, 64));
    }
    if (dynamic_cast<const CLI::ArgumentMismatch*>(&e)) {
        // "--output: 1 required TEXT missing", "--format: At Most 1 required but received 2",
        // "--sizes: At least 1 required but received 0"
        const auto [name, rest] = split(": ");
        if (rest.starts_with("At Most")) {
            const CLI::Option* o = option_named(active, name);
            std::vector<std::string> given;
            if (o)
                for (const std::string& value : o->results()) given.push_back(printable(value, 24));
            return fmt::format("{} is given {} times{}: give it once", name, given.size() > 1 ? given.size() : 2,
                               given.size() > 1 ? fmt::format(" ({})", fmt::join(given, ", ")) : "");
        }
        if (rest.ends_with("missing") || rest.starts_with("At least"))
            return fmt::format("{} needs a value: {}", name, usage_of(active, name));
    }
    if (dynamic_cast<const CLI::ExtrasError*>(&e)) {  // "The following argument was not expected: b"
        const std::vector<std::string> extras = active.remaining();
        std::vector<std::string> shown;
        for (std::size_t i = 0; i < extras.size() && i < 4; ++i) shown.push_back(fmt::format("\"{}\"", printable(extras[i], 64)));
        if (!extras.empty())
            return fmt::format("{} takes {}: {} {} too many", command, positionals_of(active),
                               bounded_join(shown, extras.size()), extras.size() == 1 ? "is one" : "are");
    }
    if (dynamic_cast<const CLI::RequiresError*>(&e)) {  // "--layer requires --from"
        const auto [name, needed] = split(" requires ");
        return fmt::format("{} needs {}", usage_of(active, name), usage_of(active, needed));
    }
    if (dynamic_cast<const CLI::ExcludesError*>(&e)) {  // "INPUT excludes --example"
        const auto [name, other] = split(" excludes ");
        return fmt::format("{} and {} do not go together: give one of them", name, other);
    }
    if (dynamic_cast<const CLI::ConversionError*>(&e)) {
        // "--tidy: too many inputs for a flag", "--tidy: Should be true/false or a number",
        // "Could not convert: --top = x", "The value x is not an allowed value for --top"
        if (const auto rest = after(text, "Could not convert: ")) {
            const std::string_view value = rest->substr(std::min(rest->find(" = "), rest->size()));
            const std::string_view name = rest->substr(0, rest->find(" = "));
            if (const CLI::Option* o = option_named(active, name); o && o->get_expected_max() == 0)
                return fmt::format("{} is a flag: give it alone, without a value", name);
            return fmt::format("{}: cannot read \"{}\" as its value", name,
                               printable(value.size() > 3 ? value.substr(3) : std::string_view(), 64));
        }
        if (text.ends_with(": too many inputs for a flag") || text.ends_with(": Should be true/false or a number"))
            return fmt::format("{} is a flag: give it alone, without a value", split(": ").first);
        if (const auto rest = after(text, "The value ")) {
            const std::size_t at = rest->find(" is not an allowed value for ");
            if (at != std::string_view::npos)
                return fmt::format("{}: \"{}\" is not a value it takes", rest->substr(at + 29),
                                   printable(rest->substr(0, at), 64));
        }
    }
    if (dynamic_cast<const CLI::ValidationError*>(&e))
        if (const auto rest = after(text, ": ")) return std::string(*rest);  // a hidden option's validator names it
    return text;
}

// What was given to attntrace itself when `command` runs, which neither may drop: an argument
// after "--" that the command has no place for (CLI11 hands it up to attntrace's INPUT), or
// an option before the command's name. Empty when there is none.
std::string given_to_attntrace(const CLI::App& app, const CLI::App& command) {
    for (const CLI::Option* o : app.get_options()) {
        if (o->count() == 0) continue;
        if (o->get_positional()) {
            std::vector<std::string> shown;
            for (const std::string& arg : o->results()) shown.push_back(fmt::format("\"{}\"", printable(arg, 64)));
            return fmt::format("{} takes {}: {} {} too many", command_name(command), positionals_of(command),
                               bounded_join(shown, shown.size()), shown.size() == 1 ? "is one" : "are");
        }
        const std::string name = o->get_name();
        if (option_named(command, name))
            return fmt::format("{} is given before {}: a command's options go after its name ({} {} …)", name,
                               command.get_name(), command_name(command), name);
        return fmt::format("{} has no option {} (attntrace's own, for a trace without a command)", command_name(command),
                           name);
    }
    return {};
}

// A first word that is neither a file nor an example but close to a command's name: that
// name, in a message. Empty otherwise. (`attntrace simlarity` alone parses, its word taken for
// the INPUT; with more words CLI11 finds one too many.)
std::string misspelt_command(const std::vector<Command>& subcommands, int argc, char** argv) {
    if (argc < 2) return {};
    const std::string first = argv[1];
    std::vector<std::string> commands{"help"};
    for (const Command& command : subcommands) commands.push_back(command.app->get_name());
    std::error_code error;
    if (first.starts_with("-") || first.starts_with("example:") || std::filesystem::exists(first, error)) return {};
    if (const auto near = likely_typo(first, commands))
        return fmt::format("\"{}\" is neither a file nor a command (did you mean {}?)", printable(first, 64), *near);
    return {};
}

// CLI11's "argument was not expected" (or "--token is required") made useful: a first word
// that is no file but close to a command's name gets that name; else an option the command
// does not have gets the closest one it has. Empty when neither applies.
std::string unexpected_argument(const CLI::App& app, const std::vector<Command>& subcommands, int argc, char** argv) {
    const CLI::App* active = &app;
    for (const Command& command : subcommands)
        if (command.app->parsed()) active = command.app;
    // A misspelt command first: the options after it are that command's.
    if (active == &app)
        if (std::string misspelt = misspelt_command(subcommands, argc, argv); !misspelt.empty()) return misspelt;
    const std::vector<std::string> known = option_names(*active);
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg.size() < 2 || arg[0] != '-' || arg == "--") continue;
        const std::string name = arg.substr(0, arg.find('='));
        if (std::find(known.begin(), known.end(), name) != known.end()) continue;
        const auto near = name.size() > 2 ? likely_typo(name, known) : std::nullopt;  // "-x": any letter is one away
        const std::string command = active == &app ? "attntrace" : "attntrace " + active->get_name();
        return fmt::format("{} has no option {}{}", command, printable(name, 64),
                           near ? fmt::format(" (did you mean {}?)", *near) : "");
    }
    return {};
}

// The examples at the end of each command's --help and in the man page.
const std::vector<UsageExample> trace_examples{
    {"attntrace", "the built-in example \"Your journey starts with one step\", every stage"},
    {"attntrace -s scores,weights", "only the scores and the softmax weights"},
    {"attntrace -m causal -s masked,weights", "the causal mask and the zero weights it leaves"},
    {"attntrace --example teacher_smiled -q smiled", "the row of \"smiled\", worked through by hand"},
    {"attntrace -m self --backward focus:journey=starts --step-size 0.5",
     "the gradients of a loss, from the loss back to the inputs, and one learning step (docs/gradients.md)"},
    {"attntrace my_sentence.json -m self --seed 7", "your own input (docs/input-format.md), weights generated"},
    {"attntrace -f json | jq '.stages[] | select(.name == \"weights\") | .data[1]'", "one row of weights, by jq"},
    {"attntrace -f csv --tidy -o trace.csv", "one line per number, for pandas.read_csv"},
    {"attntrace long.json --summary --dtype float32", "a long input: per query its strongest keys"},
    {"attntrace layer.npz -m self --layout out_in --tokens \"the cat sat\"",
     "arrays saved from PyTorch, weights as nn.Linear stores them (docs/from-pytorch.md)"},
    {"echo '{\"sentence\": \"a b\", \"embeddings\": {\"a\": [1, 0], \"b\": [0, 1]}}' | attntrace", "an input from a pipe"},
};
// The subcommands, in the order of attntrace --help: each one's name and summary, what adds
// its options (and returns what runs it), and the examples at the end of its --help.
struct Subcommand {
    const char* name;
    const char* summary;
    Runner (*add)(CLI::App*);
    std::vector<UsageExample> examples;
};
const std::vector<Subcommand> subcommand_table{
    {"similarity",
     "dot-product and cosine-similarity tables of an input's words (embeddings as points in space)",
     add_similarity,
     {{"attntrace similarity example:fruit_and_pets", "apple near orange, far from dog"},
      {"attntrace similarity example:fruit_and_pets --svg words.svg", "the words as arrows in a picture"}}},
    {"generate",
     "write a long random input (tokens, embeddings, weights) from the portable generator",
     add_generate,
     {{"attntrace generate -n 8192 -d 64 -o long.json", "8192 random tokens of 64 numbers, same seed same bytes"},
      {"attntrace generate -n 4096 | attntrace - -m causal --summary", "straight into a causal summary"},
      {"attntrace generate -n 8192 -d 64 -f safetensors --dtype float32 -o long.safetensors",
       "the same numbers as float32 arrays, read without parsing"}}},
    {"bench",
     "time the trace and streaming paths over growing n against this machine's GEMM rate",
     add_bench,
     {{"attntrace bench", "both paths, n = 512 … 16384, float32 and float64"},
      {"attntrace bench --sizes 1024,4096 --modes causal --paths streaming", "the causal streaming path alone"}}},
    {"compare",
     "one word's context vector in two inputs: their difference, cosine and what moved it",
     add_compare,
     {{"attntrace compare example:big_dream example:big_mistake --token big", "how the context of \"big\" moves"},
      {"attntrace compare example:bank_river example:bank_money -t bank -m self", "the same in self mode"}}},
    {"decode",
     "generation with a KV cache: causal attention one new token at a time, each step checked against the full trace",
     add_decode,
     {{"attntrace decode --step 4", "generation: token 4 against the KV cache, checked against the full trace"},
      {"attntrace decode --dim 8 --heads 4 --kv-heads 2 --context 4096", "the cache's bytes for MHA, GQA and MQA"}}},
    {"check-answers",
     "compare a learner's own numbers for some stages with the trace, and name the known mistake that explains a "
     "difference (exit 1 when something differs)",
     add_check_answers,
     {{"attntrace check-answers example:teacher_smiled data/practice/smiled_weights.json",
       "a learner's weights checked: exit 0 when they agree, 1 when they differ"},
      {"attntrace check-answers example:teacher_smiled data/practice/smiled_by_sum.json -f json",
       "the verdict per stage, for course tooling"}}},
    {"quiz",
     "practice: questions on the stages of traces, each answer checked, with the likely mistake and the arithmetic "
     "when it is wrong (exit 1 unless every answer is right)",
     add_quiz,
     {{"attntrace quiz", "five questions on the built-in examples, typed answers checked at once"},
      {"attntrace quiz --mode causal --stage masked,weights --seed 7",
       "only the causal mask and the weights, another draw"},
      {"attntrace quiz --seed 3 --rounds 10 --answers answers.txt -f json",
       "grade a learner's answers file, for course tooling"}}},
};

// The examples at the end of each command's --help.
std::map<const CLI::App*, std::vector<UsageExample>>& help_examples() {
    static std::map<const CLI::App*, std::vector<UsageExample>> examples;
    return examples;
}

// The columns --help is laid out in: the terminal's, or 80 when standard output is not one.
std::size_t help_width() {
    constexpr std::size_t not_a_terminal = 80;
    if (!is_terminal(STDOUT_FILENO)) return not_a_terminal;
    const std::size_t columns = output_width(STDOUT_FILENO, true);
    return columns == 0 ? not_a_terminal : columns;
}

// --help with the options in their groups (positionals with the rest), a metavariable each,
// and the defaults CLI11 captured; every line wrapped to the width at spaces, and the columns
// padded by display width (cli/manual.hpp).
class HelpFormatter : public CLI::Formatter {
public:
    std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const override {
        const std::size_t width = help_width();
        std::string out;
        for (const std::string& line : help_lines(app->get_description(), width)) out += line + '\n';
        std::string usage = make_usage(app, name);
        while (!usage.empty() && usage.back() == '\n') usage.pop_back();
        bool first = true;
        for (const std::string& line : help_lines(usage, width > 4 ? width - 4 : 1)) {
            out += (first ? "" : "    ") + line + '\n';
            first = false;
        }
        for (const std::string& group : app->get_groups()) {
            auto options = app->get_options([&](const CLI::Option* o) { return o->get_group() == group; });
            if (!group.empty() && !options.empty()) out += make_group(group, false, options);
        }
        out += make_subcommands(app, mode) + "\n";
        if (const auto it = help_examples().find(app); it != help_examples().end())
            out += examples_text(it->second, width);
        return out;
    }
    // CLI11's usage line, without the arguments hidden from --help.
    std::string make_usage(const CLI::App* app, std::string name) const override {
        std::string out = "Usage: " + name;
        if (!app->get_options([](const CLI::Option* o) { return o->nonpositional(); }).empty()) out += " [OPTIONS]";
        for (const CLI::Option* o :
             app->get_options([](const CLI::Option* o) { return o->get_positional() && !o->get_group().empty(); }))
            out += " " + make_option_usage(o);
        if (!app->get_subcommands([](const CLI::App* sub) { return !sub->get_disabled() && !sub->get_name().empty(); })
                 .empty())
            out += " [SUBCOMMAND]";
        return out + "\n";
    }
    std::string make_option(const CLI::Option* o, bool positional) const override {
        return help_row("  " + make_option_name(o, positional) + make_option_opts(o), make_option_desc(o),
                        get_column_width(), help_width());
    }
    std::string make_subcommand(const CLI::App* sub) const override {
        return help_row("  " + sub->get_display_name(), sub->get_description(), get_column_width(), help_width());
    }
    std::string make_option_name(const CLI::Option* o, bool) const override {
        return o->get_positional() ? o->get_name(true, false) : o->get_name(false, true);
    }
    std::string make_option_opts(const CLI::Option* o) const override {
        return o->get_option_text().empty() ? "" : " " + o->get_option_text();
    }
    std::string make_option_desc(const CLI::Option* o) const override { return help_of(*o); }

    // The help with the default, when it has one it does not state.
    static std::string help_of(const CLI::Option& o) {
        const std::string& help = o.get_description();
        if (o.get_default_str().empty() || help.find("default") != std::string::npos) return help;
        return fmt::format("{} (default: {})", help, o.get_default_str());
    }
};

// The last touches of a command's --help: its examples, and -h,--help last in its own group.
void finish_help(CLI::App& app, const std::vector<UsageExample>& examples) {
    help_examples()[&app] = examples;
    app.set_help_flag("-h,--help", "print this help and exit")->group("Help");
}

CommandDoc command_doc(const CLI::App& app, const std::vector<UsageExample>& examples) {
    CommandDoc doc;
    doc.name = app.get_parent() ? app.get_name() : "";
    doc.summary = app.get_description();
    std::string usage = HelpFormatter().make_usage(&app, doc.name.empty() ? "attntrace" : "attntrace " + doc.name);
    usage = usage.substr(usage.find(':') + 2);
    while (!usage.empty() && usage.back() == '\n') usage.pop_back();
    doc.usage = usage;
    doc.examples = examples;
    for (const CLI::Option* o : app.get_options()) {
        if (o->get_group().empty()) continue;
        OptionDoc option;
        if (o->get_positional()) option.positional = o->get_name(true, false);
        for (const auto& name : o->get_snames()) option.flags.push_back("-" + name);
        for (const auto& name : o->get_lnames()) option.flags.push_back("--" + name);
        option.metavar = o->get_option_text();
        option.help = HelpFormatter::help_of(*o);
        option.group = o->get_group();
        if (const auto it = option_values().find(o); it != option_values().end()) {
            option.choices = it->second.choices;
            option.completes = it->second.completes;
        }
        doc.options.push_back(std::move(option));
    }
    return doc;
}

// The command line as data, for the man page and the completions (cli/manual.hpp).
ProgramDoc program_doc(const CLI::App& app, const std::vector<Command>& subcommands, const CLI::App& help) {
    ProgramDoc doc;
    doc.version = version;
    doc.description = {
        "attntrace traces the attention mechanism one step at a time. Given a sentence and a few word vectors (JSON), "
        "it prints every intermediate matrix: the inputs, the query, key and value projections, the scores, the scaling "
        "by √d_k, the mask, the softmax weights and the context vectors, as tables for a terminal, or as JSON, JSON "
        "Lines, Markdown or CSV for other programs. Four modes follow two lectures on attention: plain (no trainable "
        "weights), self (scaled dot product), causal (self with a mask on later positions) and bahdanau (a decoder "
        "looking back at encoder states).",
        "With no INPUT, attntrace reads standard input when it is a pipe or a file with something in it (as jq "
        "does), and traces the built-in example your_journey otherwise: a terminal, /dev/null, or an empty pipe (as a "
        "notebook's kernel gives its commands), which a note on standard error mentions. " +
            fmt::format("{} examples are built in; --list-examples names them.", examples().size()),
        "For long inputs --summary takes a streaming path that never holds the n×n matrix and prints, per query, its "
        "strongest keys, its largest weight and the entropy of its weights; tables of more than 64 tokens switch to it "
        "by themselves.",
        "Errors are one line on standard error starting \"attntrace: error:\", with nothing on standard output; a file "
        "named by -o or --svg is written whole or not at all."};
    doc.main = command_doc(app, trace_examples);
    for (std::size_t i = 0; i < subcommands.size(); ++i)
        doc.subcommands.push_back(command_doc(*subcommands[i].app, subcommand_table[i].examples));
    doc.subcommands.push_back(command_doc(help, help_examples()[&help]));
    for (const auto& example : examples()) doc.example_names.emplace_back(example.name);
    for (const auto& group : app.get_groups())
        if (!group.empty()) doc.groups.push_back(group);
    return doc;
}

}  // namespace

int run_command_line(int argc, char** argv) {
    if (const auto problem = prepare_output()) return fail(exit_data_error, *problem);
    CLI::App app{"Trace the attention mechanism step by step: scores, scaling, masking, softmax "
                 "weights and context vectors, as tables, JSON, markdown or CSV.",
                 "attntrace"};
    app.formatter(std::make_shared<HelpFormatter>());
    app.get_formatter()->column_width(30);
    // One command a run: a command's name after another's is an argument of the first
    // ("attntrace help similarity"), not a second command.
    app.require_subcommand(0, 1);
    auto trace_state = std::make_shared<TraceState>();
    add_trace_options(app, *trace_state);
    const Command trace{&app, [trace_state] { return trace_state->run(); }};
    // A subcommand gets its options only when the parser meets its name (CLI11 calls the
    // preparse callback before the subcommand reads its own arguments), or when the man page
    // or a completion script needs them all: adding (and destroying) every command's 140
    // options took 3.3 of the 8.4 million instructions of the lecture example's whole run.
    std::vector<Command> subcommands;
    // A command without arguments of its own gets a hidden one that collects any it is given
    // (after "--", say): else CLI11 hands them up to attntrace's own options, and
    // "generate -- -odd.json" wrote the file dd.json (-o dd.json). Refused after parsing.
    std::vector<std::vector<std::string>> strays(subcommand_table.size());
    const auto fill = [&subcommands, &strays](std::size_t i) {
        if (subcommands[i].run) return;
        CLI::App& command = *subcommands[i].app;
        subcommands[i].run = subcommand_table[i].add(&command);
        if (command.get_options([](const CLI::Option* o) { return o->get_positional(); }).empty())
            command.add_option("ARGUMENTS", strays[i])->group("");
        finish_help(command, subcommand_table[i].examples);
    };
    for (const Subcommand& entry : subcommand_table) {
        subcommands.push_back({app.add_subcommand(entry.name, entry.summary), nullptr});
        subcommands.back().app->preparse_callback([&fill, i = subcommands.size() - 1](std::size_t) { fill(i); });
    }
    finish_help(app, trace_examples);
    // The version, then which copy of the hot kernels this CPU runs (attention/isa.hpp).
    app.set_version_flag("-V,--version", fmt::format("attntrace {}\nkernels: {}", version, kernel_description()),
                         "print the version and exit")
        ->group("Help");
    // attntrace help [COMMAND]: what --help prints, of attntrace or of the command.
    std::string help_topic;
    CLI::App* help = app.add_subcommand("help", "print this help, or a command's (attntrace help decode)");
    std::vector<std::string> topics;
    for (const Subcommand& entry : subcommand_table) topics.emplace_back(entry.name);
    topics.emplace_back("help");
    describe(help->add_option("COMMAND", help_topic, "the command whose options and examples to show"), "Help", "",
             Completes::choice, topics);
    finish_help(*help, {{"attntrace help decode", "decode's options and examples, as attntrace decode --help shows them"}});
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() != 0) {
            const CLI::App* active = &app;
            for (const Command& command : subcommands)
                if (command.app->parsed()) active = command.app;
            if (help->parsed()) active = help;
            std::string message = said_our_way(e, *active);
            // An unknown option explains a missing required one too ("--tokn x" for "--token x").
            if (dynamic_cast<const CLI::ExtrasError*>(&e) || dynamic_cast<const CLI::RequiredError*>(&e))
                if (std::string better = unexpected_argument(app, subcommands, argc, argv); !better.empty())
                    message = std::move(better);
            return fail(exit_usage_error, fmt::format("{} (see {} --help)", message, command_name(*active)));
        }
        return run([&](std::ostream& out) { app.exit(e, out, out); }, std::nullopt);  // --help, --version
    }
    for (std::size_t i = 0; i < subcommands.size(); ++i) {
        const CLI::App& command = *subcommands[i].app;
        if (!command.parsed()) continue;
        std::string misplaced = given_to_attntrace(app, command);
        if (!strays[i].empty()) {
            std::vector<std::string> shown;
            for (const std::string& arg : strays[i]) shown.push_back(fmt::format("\"{}\"", printable(arg, 64)));
            misplaced = fmt::format("{} takes no arguments besides its options: {} {} too many", command_name(command),
                                    bounded_join(shown, shown.size()), shown.size() == 1 ? "is one" : "are");
        }
        if (!misplaced.empty()) return fail(exit_usage_error, fmt::format("{} (see {} --help)", misplaced, command_name(command)));
    }
    if (help->parsed())
        if (const std::string misplaced = given_to_attntrace(app, *help); !misplaced.empty())
            return fail(exit_usage_error, misplaced + " (see attntrace help --help)");
    if (help->parsed() && !help_topic.empty() && std::find(topics.begin(), topics.end(), help_topic) == topics.end()) {
        const auto near = likely_typo(help_topic, topics);
        return fail(exit_usage_error, fmt::format("attntrace help: no command named \"{}\"{}; the commands are {} (see "
                                                  "attntrace --help)",
                                                  printable(help_topic, 64),
                                                  near ? fmt::format(" (did you mean {}?)", *near) : "",
                                                  fmt::join(topics, ", ")));
    }
    if (help->parsed())
        return run(
            [&](std::ostream& out) {
                const CLI::App* topic = &app;
                if (help_topic == "help") topic = help;
                for (std::size_t i = 0; i < subcommands.size(); ++i)
                    if (subcommands[i].app->get_name() == help_topic) {
                        fill(i);
                        topic = subcommands[i].app;
                    }
                // As CLI11 prints --help (App::help would pass to the chosen subcommand: help).
                out << topic->get_formatter()->make_help(topic, command_name(*topic), CLI::AppFormatMode::Normal);
            },
            std::nullopt);
    if (trace_state->man || !trace_state->completions.empty())
        return run(
            [&](std::ostream& out) {
                for (std::size_t i = 0; i < subcommands.size(); ++i) fill(i);
                const ProgramDoc doc = program_doc(app, subcommands, *help);
                const std::string& shell = trace_state->completions;
                out << (trace_state->man        ? man_page(doc)
                        : shell == "bash"       ? bash_completion(doc)
                        : shell == "zsh"        ? zsh_completion(doc)
                                                : fish_completion(doc));
            },
            std::nullopt);
    for (const Command& command : subcommands)
        if (command.app->parsed()) return command.run();
    if (std::string misspelt = misspelt_command(subcommands, argc, argv); !misspelt.empty())
        return fail(exit_usage_error, misspelt + " (see attntrace --help)");
    return trace.run();
}

}  // namespace attntrace
