// The command line: attntrace's own options (the main job, a trace), and run_command_line,
// which builds the CLI11 app, parses, and runs what was chosen. The subcommands and their
// options are in cli/subcommands.cpp, the messages in cli/messages.cpp, --help in cli/help.cpp
// (cli/command_line.hpp says how the four are compiled).
#include "cli/commands.hpp"

#include "attention/isa.hpp"
#include "attention/learning.hpp"
#include "attention/modes.hpp"
#include "cli/backward_flags.hpp"
#include "cli/command_line.hpp"
#include "commands/trace_command.hpp"
#include "input/examples.hpp"
#include "render/svg.hpp"
#include "util/suggest.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <memory>

namespace attntrace::cli {

int fail(int code, std::string message) {
    for (char& c : message)
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    std::fprintf(stderr, "attntrace: error: %s\n", printable(message, max_message_chars).c_str());
    return code;
}

namespace {

constexpr const char* version = ATTNTRACE_VERSION;  // CMakeLists.txt's project(VERSION)

// svg_stages by name.
std::vector<std::string> svg_stage_names() {
    std::vector<std::string> names;
    for (const StageId id : svg_stages) names.emplace_back(to_string(id));
    return names;
}


// attntrace [INPUT]: the main job's own flags, besides the bundles it shares.
struct MainFlags : TracedFlags {
    BackwardFlags backward;             // --backward, --step-size
    bool list = false;                  // --list-examples
    int head = 0;                       // --head
    std::optional<Eigen::Index> tiles;  // --tiles
    bool man = false;                   // --man: print the man page
    std::string completions;            // --completions SHELL: print its completion script
};
using MainState = State<TraceRequest, MainFlags>;

Runner main_runner(std::shared_ptr<MainState> s) {
    return [s] {
        return run(
            [s](Outputs& outputs) {
                TraceRequest& request = s->request;
                const MainFlags& f = s->flags;
                if (f.list) return list_examples(outputs.main());
                const auto query = request.trace.query;  // -q fills it as it is parsed
                f.apply(request, outputs.main_output());
                request.trace.query = query;
                request.trace.tiles = f.tiles;
                if (f.head > 0) request.trace.head = request.render.head = f.head;
                request.backward = f.backward.apply();
                run_trace(std::move(request), outputs);
            },
            s->flags.output.path);
    };
}

// --svg, --svg-stage and --html: the pictures a trace may write beside its output.
void add_picture_options(CLI::App& app, MainState& s) {
    auto* svg = describe(app.add_option("--svg", s.request.svg_path,
                                        "also write a heatmap of the attention weights (or of --svg-stage) to this SVG "
                                        "file; - is stdout"),
                         "Output", "FILE", Completes::file);
    describe(app.add_option("--html", s.request.html_path,
                            "also write the page of the trace (its gradients with --backward; with --summary, the "
                            "summary) to this HTML file, which needs no network; - is stdout"),
             "Output", "FILE", Completes::file);
    auto* svg_stage = app.add_option("--svg-stage", s.request.svg_stage,
                                     "the stage --svg draws; with --backward, d_NAME draws its gradient")
                          ->needs(svg)
                          ->capture_default_str();
    std::vector<std::string> svg_choices = svg_stage_names();
    for (const StageId id : svg_stages) svg_choices.push_back(fmt::format("d_{}", to_string(id)));
    describe(svg_stage, "Output", "NAME", Completes::choice, svg_choices);
}

void add_trace_options(CLI::App& app, MainState& s) {
    auto* input = describe(app.add_option("INPUT", s.request.input_path,
                                          "input JSON file (docs/input-format.md), - for stdin, example:NAME; none: "
                                          "standard input when it is a pipe or a file with something in it, else the "
                                          "built-in example your_journey"),
                           "Input", "", Completes::input);
    auto* example = describe(app.add_option("--example", s.request.example, "trace a built-in example by name"), "Input",
                             "NAME", Completes::example);
    input->excludes(example);
    app.add_flag("--list-examples", s.flags.list, "list the built-in examples and exit")
        ->excludes(example)
        ->excludes(input)
        ->group("Input");
    s.flags.add_to(app, true, true);
    std::vector<std::string> stage_choices = all_stage_names();
    for (auto& name : gradient_names()) stage_choices.push_back(std::move(name));
    describe(list_option(app.add_option("-s,--stage", s.request.stages,
                                        "show only these stages, comma-separated (e.g. scores,weights); with --backward, "
                                        "d_NAME is a gradient (d_weights, d_W_q)")),
             "Output", "NAME,...", Completes::list, stage_choices);
    describe(app.add_option("-q,--query", s.request.trace.query,
                            "work through one query's arithmetic: a token as spelled, or a 1-based position"),
             "Output", "TOKEN|N");
    describe(app.add_option("--tiles", s.flags.tiles, "with -q: work the row through the online softmax, this many keys a tile "
                                                "(the streaming path's way)")
                 ->transform(in_range(Eigen::Index{1}, static_cast<Eigen::Index>(max_tokens))),
             "Output", "N");
    describe(app.add_option("--head", s.flags.head, "several heads: show this head's stages (with --summary: its lines) alone, and work through it with -q "
                                              "(default: every head; -q works through head 1)")
                 ->transform(in_range(1, max_heads)),
             "Attention", "H");
    app.add_flag("--explain", s.request.render.explain, "explain each stage before showing it")->group("Output");
    add_picture_options(app, s);
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
    s.flags.backward.add_to(app);
    s.flags.limits.add_to(app);
    app.add_flag("--man", s.flags.man, "print the man page (roff) and exit")->group("");
    app.add_option("--completions", s.flags.completions, "print the completion script for this shell and exit")
        ->check(one_of({"bash", "zsh", "fish"}, "--completions"))
        ->group("");
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
        "named by -o, --svg or --html is written whole or not at all."};
    doc.main = command_doc(app, trace_examples);
    for (std::size_t i = 0; i < subcommands.size(); ++i)
        doc.subcommands.push_back(command_doc(*subcommands[i].app, subcommand_table()[i].examples));
    doc.subcommands.push_back(command_doc(help, help_examples()[&help]));
    for (const auto& example : examples()) doc.example_names.emplace_back(example.name);
    for (const auto& group : app.get_groups())
        if (!group.empty() && group != unlisted_group) doc.groups.push_back(group);
    return doc;
}

// The whole command line, built once per run: attntrace's app with the main job's options, the
// subcommands (their options added only when the parser meets a name), and `attntrace help`.
// Made in place and never moved: CLI11's callbacks hold `this`.
class CommandLine {
public:
    CommandLine();
    CommandLine(const CommandLine&) = delete;
    CommandLine& operator=(const CommandLine&) = delete;
    int run(int argc, char** argv);

private:
    void add_subcommands();
    void add_help();
    // Adds subcommand i's options, once (CLI11 calls the preparse callback before the
    // subcommand reads its own arguments; the man page and completions need them all).
    void fill(std::size_t i);
    const CLI::App& active() const;  // the command parsed
    int parse_error(const CLI::ParseError& e, int argc, char** argv);
    // The message for arguments given where the chosen command has no place for them; empty if none.
    std::string misplaced() const;
    int run_help();
    int run_manual();

    CLI::App app_{"Trace the attention mechanism step by step: scores, scaling, masking, softmax "
                  "weights and context vectors, as tables, JSON, markdown or CSV.",
                  "attntrace"};
    std::shared_ptr<MainState> main_ = std::make_shared<MainState>();
    // Adding (and destroying) every command's 140 options took 3.3 of the 8.4 million
    // instructions of the lecture example's whole run: each is added when its name is met.
    std::vector<Command> subcommands_;
    // A command without arguments of its own gets a hidden one that collects any it is given
    // (after "--", say): else CLI11 hands them up to attntrace's own options, and
    // "generate -- -odd.json" wrote the file dd.json (-o dd.json). Refused after parsing.
    std::vector<std::vector<std::string>> strays_ = std::vector<std::vector<std::string>>(subcommand_table().size());
    CLI::App* help_ = nullptr;  // attntrace help [COMMAND]
    std::string help_topic_;
    std::vector<std::string> topics_;  // the commands help names
};

CommandLine::CommandLine() {
    app_.formatter(std::make_shared<HelpFormatter>());
    app_.get_formatter()->column_width(30);
    // One command a run: a command's name after another's is an argument of the first
    // ("attntrace help similarity"), not a second command.
    app_.require_subcommand(0, 1);
    add_trace_options(app_, *main_);
    add_subcommands();
    finish_help(app_, trace_examples);
    // The version, then which copy of the hot kernels this CPU runs (attention/isa.hpp).
    app_.set_version_flag("-V,--version", fmt::format("attntrace {}\nkernels: {}", version, kernel_description()),
                          "print the version and exit")
        ->group("Help");
    add_help();
}

void CommandLine::add_subcommands() {
    for (const Subcommand& entry : subcommand_table()) {
        subcommands_.push_back({app_.add_subcommand(entry.name, entry.summary), nullptr});
        subcommands_.back().app->preparse_callback([this, i = subcommands_.size() - 1](std::size_t) { fill(i); });
    }
}

// attntrace help [COMMAND]: what --help prints, of attntrace or of the command.
void CommandLine::add_help() {
    help_ = app_.add_subcommand("help", "print this help, or a command's (attntrace help decode)");
    for (const Subcommand& entry : subcommand_table()) topics_.emplace_back(entry.name);
    topics_.emplace_back("help");
    describe(help_->add_option("COMMAND", help_topic_, "the command whose options and examples to show"), "Help", "",
             Completes::choice, topics_);
    finish_help(*help_, {{"attntrace help decode", "decode's options and examples, as attntrace decode --help shows them"}});
}

void CommandLine::fill(std::size_t i) {
    if (subcommands_[i].run) return;
    CLI::App& command = *subcommands_[i].app;
    subcommands_[i].run = subcommand_table()[i].add(&command);
    if (command.get_options([](const CLI::Option* o) { return o->get_positional(); }).empty())
        command.add_option("ARGUMENTS", strays_[i])->group("");
    finish_help(command, subcommand_table()[i].examples);
}

const CLI::App& CommandLine::active() const {
    const CLI::App* active = &app_;
    for (const Command& command : subcommands_)
        if (command.app->parsed()) active = command.app;
    if (help_->parsed()) active = help_;
    return *active;
}

int CommandLine::parse_error(const CLI::ParseError& e, int argc, char** argv) {
    if (e.get_exit_code() == 0)
        return cli::run([&](std::ostream& out) { app_.exit(e, out, out); }, std::nullopt);  // --help, --version
    std::string message = said_our_way(e, active());
    // An unknown option explains a missing required one too ("--tokn x" for "--token x").
    if (dynamic_cast<const CLI::ExtrasError*>(&e) || dynamic_cast<const CLI::RequiredError*>(&e))
        if (std::string better = unexpected_argument(app_, subcommands_, argc, argv); !better.empty())
            message = std::move(better);
    return fail(exit_usage_error, fmt::format("{} (see {} --help)", message, command_name(active())));
}

std::string CommandLine::misplaced() const {
    for (std::size_t i = 0; i < subcommands_.size(); ++i) {
        const CLI::App& command = *subcommands_[i].app;
        if (!command.parsed()) continue;
        std::string misplaced = given_to_attntrace(app_, command);
        if (!strays_[i].empty()) {
            std::vector<std::string> shown;
            for (const std::string& arg : strays_[i]) shown.push_back(fmt::format("\"{}\"", printable(arg, 64)));
            misplaced = fmt::format("{} takes no arguments besides its options: {} {} too many", command_name(command),
                                    bounded_join(shown, shown.size()), shown.size() == 1 ? "is one" : "are");
        }
        if (!misplaced.empty()) return fmt::format("{} (see {} --help)", misplaced, command_name(command));
    }
    if (help_->parsed())
        if (const std::string misplaced = given_to_attntrace(app_, *help_); !misplaced.empty())
            return misplaced + " (see attntrace help --help)";
    return {};
}

int CommandLine::run_help() {
    if (!help_topic_.empty() && std::find(topics_.begin(), topics_.end(), help_topic_) == topics_.end()) {
        const auto near = likely_typo(help_topic_, topics_);
        return fail(exit_usage_error, fmt::format("attntrace help: no command named \"{}\"{}; the commands are {} (see "
                                                  "attntrace --help)",
                                                  printable(help_topic_, 64),
                                                  near ? fmt::format(" (did you mean {}?)", *near) : "",
                                                  fmt::join(topics_, ", ")));
    }
    return cli::run(
        [&](std::ostream& out) {
            const CLI::App* topic = &app_;
            if (help_topic_ == "help") topic = help_;
            for (std::size_t i = 0; i < subcommands_.size(); ++i)
                if (subcommands_[i].app->get_name() == help_topic_) {
                    fill(i);
                    topic = subcommands_[i].app;
                }
            // As CLI11 prints --help (App::help would pass to the chosen subcommand: help).
            out << topic->get_formatter()->make_help(topic, command_name(*topic), CLI::AppFormatMode::Normal);
        },
        std::nullopt);
}

// --man and --completions SHELL: the page or the script, written from every command's options.
int CommandLine::run_manual() {
    return cli::run(
        [&](std::ostream& out) {
            for (std::size_t i = 0; i < subcommands_.size(); ++i) fill(i);
            const ProgramDoc doc = program_doc(app_, subcommands_, *help_);
            const std::string& shell = main_->flags.completions;
            out << (main_->flags.man    ? man_page(doc)
                    : shell == "bash"   ? bash_completion(doc)
                    : shell == "zsh"    ? zsh_completion(doc)
                                        : fish_completion(doc));
        },
        std::nullopt);
}

int CommandLine::run(int argc, char** argv) {
    try {
        app_.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return parse_error(e, argc, argv);
    }
    if (const std::string message = misplaced(); !message.empty()) return fail(exit_usage_error, message);
    if (help_->parsed()) return run_help();
    if (main_->flags.man || !main_->flags.completions.empty()) return run_manual();
    for (const Command& command : subcommands_)
        if (command.app->parsed()) return command.run();
    if (std::string misspelt = misspelt_command(subcommands_, argc, argv); !misspelt.empty())
        return fail(exit_usage_error, misspelt + " (see attntrace --help)");
    return main_runner(main_)();
}

}  // namespace
}  // namespace attntrace::cli

namespace attntrace {

int run_command_line(int argc, char** argv) {
    if (const auto problem = prepare_output()) return cli::fail(exit_data_error, *problem);
    cli::CommandLine command_line;
    return command_line.run(argc, argv);
}

}  // namespace attntrace
