#include "cli/commands.hpp"

#include "attention/modes.hpp"
#include "cli/flags.hpp"
#include "commands/bench_command.hpp"
#include "commands/compare_command.hpp"
#include "commands/decode_command.hpp"
#include "commands/generate_command.hpp"
#include "commands/similarity_command.hpp"
#include "commands/trace_command.hpp"
#include "core/error.hpp"
#include "render/svg.hpp"
#include "input/limits.hpp"
#include "util/output.hpp"
#include "util/suggest.hpp"
#include "util/threads.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <type_traits>

namespace attntrace {
namespace {

constexpr const char* version = "attntrace 0.1.0";
constexpr std::size_t max_message_chars = 2000;

// What a parsed command does: returns the exit status.
using Runner = std::function<int()>;

struct Command {
    CLI::App* app;  // the subcommand, or the top level for the main job
    Runner run;
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

// attntrace [INPUT]: the main job.
struct TraceState {
    TraceRequest request;
    OutputFlags output;
    TraceFlags flags;
    LimitFlags limits;
    bool list = false;
    int head = 0;  // --head
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
                request.mode = flags.requested_mode();
                output.apply(request.render);
                run_trace(std::move(request), outputs);
            },
            output.path);
    }
};

void add_trace_options(CLI::App& app, TraceState& s) {
    auto* input = app.add_option("INPUT", s.request.input_path,
                                 "input JSON file (docs/input-format.md), - for stdin, example:NAME; "
                                 "default: the built-in example your_journey");
    auto* example = app.add_option("--example", s.request.example, "trace a built-in example by name");
    input->excludes(example);
    app.add_flag("--list-examples", s.list, "list the built-in examples and exit")->excludes(example)->excludes(input);
    s.flags.add_to(app);
    s.output.add_to(app);
    app.add_option("-s,--stage", s.request.stages, "show only these stages, comma-separated (e.g. scores,weights)")
        ->delimiter(',');
    app.add_option("-q,--query", s.request.trace.query,
                   "work through one query's arithmetic: a token as spelled, or a 1-based position");
    app.add_option("--tiles", s.tiles, "with -q: work the row through the online softmax, this many keys a tile (the "
                                       "streaming path's way)")
        ->check(CLI::Range(Eigen::Index{1}, static_cast<Eigen::Index>(max_tokens)));
    app.add_option("--head", s.head, "several heads: show this head's stages alone, and work through it with -q "
                                     "(default: every head; -q works through head 1)")
        ->check(CLI::Range(1, max_heads));
    app.add_flag("--explain", s.request.render.explain, "explain each stage before showing it");
    auto* svg = app.add_option("--svg", s.request.svg_path,
                               "also write a heatmap of the attention weights (or of --svg-stage) to this SVG file");
    app.add_option("--svg-stage", s.request.svg_stage, "the stage --svg draws: " + svg_stage_choices())
        ->needs(svg)
        ->capture_default_str();
    app.add_flag("--summary", s.request.summary,
                 "long inputs: per query its top keys, largest weight and entropy, by the streaming path "
                 "(no n×n matrix); --stage context adds the context vectors");
    app.add_option("--top", s.request.top, "keys per query in the summary")->check(CLI::Range(1, 1000))->capture_default_str();
    s.limits.add_to(app);
    app.add_flag("--check", s.request.check,
                 "verify the trace (rows sum to 1, masked weights 0, context = weights·values, all finite) "
                 "and print the verdict instead of the trace");
}

// The run of a command that traces its inputs (compare, decode): the request takes the
// trace flags, the output and the limits, then `job` does the work.
template <typename State, typename Request>
Runner run_traced(std::shared_ptr<State> s, void (*job)(Request, std::ostream&)) {
    return [s, job] {
        return run(
            [&](std::ostream& out) {
                Request& request = s->request;
                request.mode = s->flags.requested_mode();
                request.trace = s->flags.apply();
                s->output.apply(request.render);
                request.max_memory = s->limits.memory();
                request.max_seconds = s->limits.seconds();
                request.max_input = s->limits.input();
                job(std::move(request), out);
            },
            s->output.path);
    };
}

Command add_similarity(CLI::App& app) {
    struct State {
        SimilarityRequest request;
        OutputFlags output;
        LimitFlags limits;
    };
    auto s = std::make_shared<State>();
    auto* command = app.add_subcommand(
        "similarity", "dot-product and cosine-similarity tables of an input's words (embeddings as points in space)");
    command->add_option("INPUT", s->request.input, "input JSON file, - for stdin, or example:NAME")->required();
    s->output.add_to(*command);
    command->add_option("--svg", s->request.svg_path,
                        "also draw the words' vectors as arrows from the origin in this SVG file (more than two "
                        "numbers: projected onto their first two principal directions)");
    s->limits.add_to(*command);
    return {command, [s] {
                return run(
                    [&](Outputs& outputs) {
                        prepare_threads(std::nullopt);
                        s->output.apply(s->request.render);
                        s->request.max_memory = s->limits.memory();
                        s->request.max_seconds = s->limits.seconds();
                        s->request.max_input = s->limits.input();
                        run_similarity(s->request, outputs);
                    },
                    s->output.path);
            }};
}

Command add_generate(CLI::App& app) {
    struct State {
        GenerateRequest request;
        std::optional<std::string> output;
    };
    auto s = std::make_shared<State>();
    auto* command =
        app.add_subcommand("generate", "write a long random input (tokens, embeddings, weights) from the portable generator");
    command->add_option("-n,--tokens", s->request.tokens, "number of tokens")
        ->check(CLI::Range(std::int64_t{1}, static_cast<std::int64_t>(max_tokens)))
        ->capture_default_str();
    command->add_option("-d,--dim", s->request.dim, "vector dimension d_in = d_k = d_v")
        ->check(CLI::Range(std::int64_t{1}, static_cast<std::int64_t>(max_dimension)))
        ->capture_default_str();
    command->add_option("--seed", s->request.seed, "seed of the generator")->check(whole_number_u64)->capture_default_str();
    add_output_path(*command, s->output);
    return {command, [s] { return run([&](std::ostream& out) { run_generate(s->request, out); }, s->output); }};
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

Command add_bench(CLI::App& app) {
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
    auto* command = app.add_subcommand("bench", "time the trace and streaming paths over growing n against this machine's GEMM rate");
    command->add_option("--sizes", r.sizes, "token counts, comma-separated")->delimiter(',')
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20))->capture_default_str();
    command->add_option("--dim", r.dim, "d_in = d_k = d_v")->check(CLI::Range(std::int64_t{1}, std::int64_t{4096}))->capture_default_str();
    std::vector<std::string> streaming;  // bench times the modes with a streaming path
    for (const ModeSpec& spec : mode_specs())
        if (spec.streams) streaming.emplace_back(spec.name());
    command->add_option("--modes", s->modes, fmt::format("{} and/or {}", fmt::join(streaming.begin(), streaming.end() - 1, ", "),
                                                         streaming.back()))
        ->delimiter(',')->check(one_of(streaming))->capture_default_str();
    command->add_option("--dtypes", s->dtypes, "float32 and/or float64")->delimiter(',')
        ->check(one_of(enum_names<Dtype>()))->capture_default_str();
    command->add_option("--threads", r.threads, "thread counts (default: 1 to the number of cores)")
        ->delimiter(',')->check(CLI::Range(1, max_threads));
    command->add_option("--paths", s->paths, "streaming and/or trace")->delimiter(',')
        ->check(one_of(enum_names<BenchPath>()))->capture_default_str();
    command->add_option("--trace-max", r.trace_max, "largest n for the trace path, which holds n×n matrices")->capture_default_str();
    command->add_option("--repeats", r.repeats, "timed runs per configuration after a warm-up (median)")
        ->check(CLI::Range(1, 1000))->capture_default_str();
    command->add_option("-f,--format", s->format, "table or json")->check(one_of({"table", "json"}))->capture_default_str();
    add_output_path(*command, s->output);
    s->limits.add_to(*command, false);
    return {command, [s] {
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
            }};
}

Command add_compare(CLI::App& app) {
    struct State {
        CompareRequest request;
        OutputFlags output;
        TraceFlags flags;
        LimitFlags limits;
    };
    auto s = std::make_shared<State>();
    auto* command =
        app.add_subcommand("compare", "one word's context vector in two inputs: their difference, cosine and what moved it");
    command->add_option("A", s->request.a, "first input (file, - or example:NAME)")->required();
    command->add_option("B", s->request.b, "second input")->required();
    command->add_option("-t,--token", s->request.token, "the word to follow (first occurrence)")->required();
    s->flags.add_to(*command);
    s->output.add_to(*command);
    s->limits.add_to(*command);
    return {command, run_traced(s, run_compare)};
}

Command add_decode(CLI::App& app) {
    struct State {
        DecodeRequest request;
        OutputFlags output;
        TraceFlags flags;
        LimitFlags limits;
    };
    auto s = std::make_shared<State>();
    DecodeOptions& d = s->request.decode;
    auto* command = app.add_subcommand(
        "decode", "generation with a KV cache: causal attention one new token at a time, each step checked against the "
                  "full trace");
    command->add_option("INPUT", s->request.input_path,
                        "input JSON file, - for stdin, or example:NAME (default: the built-in example your_journey)");
    command->add_option("--prefill", d.prefill, "tokens that go in at once before the first step")
        ->check(CLI::Range(std::int64_t{1}, static_cast<std::int64_t>(max_tokens)))
        ->capture_default_str();
    command->add_option("--step", d.step, "show only the step of this position (1-based)")
        ->check(CLI::Range(std::int64_t{1}, static_cast<std::int64_t>(max_tokens)));
    command->add_option("--context", d.context, "context length of the table of K/V cache bytes (default: the input's tokens)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
    command->add_flag("--explain", s->request.render.explain,
                      "say why the query is not cached, why keys and values are, and why only causal attention");
    s->flags.add_to(*command);
    s->output.add_to(*command);
    s->limits.add_to(*command);
    return {command, run_traced(s, run_decode)};
}

Command add_trace_command(CLI::App& app) {
    auto s = std::make_shared<TraceState>();
    add_trace_options(app, *s);
    return {&app, [s] { return s->run(); }};
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

// CLI11's "argument was not expected" (or "--token is required") made useful: an option the command does not have gets
// the closest one it has; a first word that is no file but close to a command's name gets
// that name. Empty when neither applies.
std::string unexpected_argument(const CLI::App& app, const std::vector<Command>& subcommands, int argc, char** argv) {
    const CLI::App* active = &app;
    for (const Command& command : subcommands)
        if (command.app->parsed()) active = command.app;
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
    if (active != &app || argc < 2) return {};
    const std::string first = argv[1];
    std::vector<std::string> commands;
    for (const Command& command : subcommands) commands.push_back(command.app->get_name());
    std::error_code error;
    if (first.starts_with("-") || first.starts_with("example:") || std::filesystem::exists(first, error)) return {};
    if (const auto near = likely_typo(first, commands))
        return fmt::format("\"{}\" is neither a file nor a command (did you mean {}?)", printable(first, 64), *near);
    return {};
}

}  // namespace

int run_command_line(int argc, char** argv) {
    if (const auto problem = prepare_output()) return fail(exit_data_error, *problem);
    CLI::App app{"Trace the attention mechanism step by step: scores, scaling, masking, softmax "
                 "weights and context vectors, as tables, JSON, markdown or CSV.",
                 "attntrace"};
    app.set_version_flag("--version", version);
    app.get_formatter()->column_width(30);
    const Command trace = add_trace_command(app);
    const std::vector<Command> subcommands{add_similarity(app), add_generate(app), add_bench(app), add_compare(app),
                                          add_decode(app)};
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() != 0) {
            std::string message = e.what();
            // An unknown option explains a missing required one too ("--tokn x" for "--token x").
            if (dynamic_cast<const CLI::ExtrasError*>(&e) || dynamic_cast<const CLI::RequiredError*>(&e))
                if (std::string better = unexpected_argument(app, subcommands, argc, argv); !better.empty())
                    message = std::move(better);
            return fail(exit_usage_error, message + " (see attntrace --help)");
        }
        return run([&](std::ostream& out) { app.exit(e, out, out); }, std::nullopt);  // --help, --version
    }
    for (const Command& command : subcommands)
        if (command.app->parsed()) return command.run();
    return trace.run();
}

}  // namespace attntrace
