// The subcommands (attntrace similarity, generate, bench, train, compare, decode, check-answers,
// quiz): their table, and each one's options added to its CLI11 command with what runs the
// command. Each holds a State (cli/command_line.hpp): its request and its flags, cli/flags.hpp's
// bundles where the command shares them. A new subcommand is a function here and its entry in
// the table, besides its job in commands/.
#include "cli/command_line.hpp"

#include "attention/modes.hpp"
#include "commands/bench_command.hpp"
#include "commands/rnn_command.hpp"
#include "commands/step_command.hpp"
#include "commands/train_command.hpp"
#include "input/tasks.hpp"
#include "commands/check_answers_command.hpp"
#include "commands/compare_command.hpp"
#include "commands/decode_command.hpp"
#include "commands/generate_command.hpp"
#include "commands/quiz_command.hpp"
#include "commands/similarity_command.hpp"
#include "input/examples.hpp"
#include "render/render.hpp"
#include "util/terminal.hpp"
#include "util/threads.hpp"

#include <fmt/format.h>

#include <unistd.h>

namespace attntrace::cli {
namespace {

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

// bench's own flags: the lists of names, read when it runs, the format, -o and the limits.
struct BenchFlags {
    std::vector<std::string> modes, dtypes, paths;
    std::string format = "table";
    std::optional<std::string> output;
    LimitFlags limits;
};

// quiz's own flags: the lists of names, the format, and where the output goes.
struct QuizFlags {
    std::vector<std::string> modes, stages;
    std::string format = "table", color = "auto";
    int width = -1;
};

Runner add_similarity(CLI::App* command) {
    auto s = std::make_shared<State<SimilarityRequest, ReadFlags>>();
    describe(command->add_option("INPUT", s->request.input, "input JSON file, - for stdin, or example:NAME")->required(),
             "Input", "", Completes::input);
    s->flags.input.add_to(*command, false);
    s->flags.output.add_to(*command);
    describe(command->add_option("--svg", s->request.svg_path,
                                 "also draw the words' vectors as arrows from the origin in this SVG file (more than two "
                                 "numbers: projected onto their first two principal directions); - is stdout"),
             "Output", "FILE", Completes::file);
    s->flags.limits.add_to(*command);
    return [s] {
        return run(
            [&](Outputs& outputs) {
                prepare_threads(std::nullopt);
                s->flags.apply(s->request, outputs.main_output());
                run_similarity(s->request, outputs);
            },
            s->flags.output.path);
    };
}

Runner add_generate(CLI::App* command) {
    auto s = std::make_shared<State<GenerateRequest, std::optional<std::string>>>();  // the flags: -o
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
    add_output_path(*command, s->flags);
    return [s] {
        s->request.to_terminal = (!s->flags || *s->flags == "-") && ::isatty(STDOUT_FILENO);
        return run([&](std::ostream& out) { run_generate(s->request, out); }, s->flags);
    };
}

Runner add_bench(CLI::App* command) {
    auto s = std::make_shared<State<BenchRequest, BenchFlags>>();
    BenchRequest& r = s->request;
    BenchFlags& f = s->flags;
    f.modes = names_of_list(r.modes), f.dtypes = names_of_list(r.dtypes), f.paths = names_of_list(r.paths);
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
    choose(list_option(command->add_option("--modes", f.modes, "the modes to time")), "Runs", streaming, true)
        ->capture_default_str();
    choose(list_option(command->add_option("--dtypes", f.dtypes, "the working precisions to time")), "Runs",
           enum_names<Dtype>(), true)
        ->capture_default_str();
    describe(list_option(command->add_option("--threads", r.threads, "thread counts (default: 1 to the number of cores)"))
                 ->transform(in_range(1, max_threads)),
             "Runs", "N,...");
    choose(list_option(command->add_option("--paths", f.paths, "the paths to time")), "Runs", enum_names<BenchPath>(),
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
    choose(command->add_option("-f,--format", f.format, "output format"), "Output", formats_showing(Product::bench))
        ->capture_default_str();
    add_output_path(*command, f.output);
    f.limits.add_to(*command, false);
    return [s] {
        return run(
            [&](std::ostream& out) {
                BenchRequest& request = s->request;
                prepare_threads(request.threads.empty() ? std::nullopt : std::optional<int>(request.threads.front()));
                const BenchFlags& flags = s->flags;
                request.modes = parsed<Mode>(flags.modes);
                request.dtypes = parsed<Dtype>(flags.dtypes);
                request.paths = parsed<BenchPath>(flags.paths);
                request.format = *parse_enum<Format>(flags.format);
                request.max_memory = flags.limits.memory();
                request.max_seconds = flags.limits.seconds();
                run_bench(request, out);
            },
            s->flags.output);
    };
}

// A real number above 0 (or 0 and above with `zero`), for train's rates and factors.
CLI::Validator real_at_least_zero(bool zero, double below = 0) {
    return CLI::Validator(
        [zero, below](std::string& text) -> std::string {
            char* end = nullptr;
            const double x = std::strtod(text.c_str(), &end);
            const bool ok = !text.empty() && end && *end == '\0' && std::isfinite(x) && (zero ? x >= 0 : x > 0) &&
                            (below <= 0 || x < below);
            if (ok) return {};
            return fmt::format("expected a number {}{}, found {}", zero ? "of 0 or more" : "above 0",
                               below > 0 ? fmt::format(" and below {}", below) : "", printable(text, 64));
        },
        "");
}

// train's flags: the names read when it runs, and what output takes.
struct TrainFlags {
    std::string mode = "self", optimizer = "adam", dtype = "float64", format = "table";
    int digits = 4, threads = 0;
    std::optional<std::int64_t> dim;
};

// train's options of the layer: its mode, its size, what else is trained, its precision.
void add_train_layer(CLI::App* command, TrainRequest& r, TrainFlags& f) {
    TrainSettings& t = r.settings;
    choose(command->add_option("-m,--mode", f.mode, "the layer: self, or causal (a query sees only keys up to itself)"),
           "Layer", {"self", "causal"})
        ->capture_default_str();
    describe(command->add_option("--dim", f.dim,
                                 "the columns of W_q and W_k, all heads together (default 4, recall 8, rounded up to a "
                                 "multiple of --heads); W_v's too unless targets say")
                 ->transform(in_range(std::int64_t{1}, std::int64_t{4096})),
             "Layer", "N");
    describe(command->add_option("--heads", t.heads,
                                 "attention heads, each with its own blocks of W_q, W_k and W_v, mixed by a trained W_o")
                 ->transform(in_range(1, 64))
                 ->capture_default_str(),
             "Layer", "N");
    describe(command->add_option("--focus-head", t.focus_head,
                                 "the head a focus example is about (default: the heads' mean weight)")
                 ->transform(in_range(1, 64)),
             "Layer", "N");
    describe(command->add_flag("--bias", t.bias, "train biases b_q, b_k, b_v too (they start at 0)"), "Layer", "");
    describe(command->add_flag("--embeddings", t.embeddings,
                               "learn the embeddings too: one vector per word, shared by its every use, starting from "
                               "the examples' own"),
             "Layer", "");
    choose(command->add_option("--dtype", f.dtype, "the working precision"), "Layer", enum_names<Dtype>())
        ->capture_default_str();
}

// train's --compare-rnn, the RNN against attention, and the RNN's size there.
void add_train_comparison(CLI::App* command, TrainRequest& r) {
    describe(command->add_flag("--compare-rnn", r.compare_rnn,
                               "instead: who_did_it with the subject 2, 4, 8, 16 and 32 words back, an RNN against "
                               "attention, each naming the subject; held-out accuracy per gap (its defaults: --lr 0.01 "
                               "--clip 1 --steps 1000, which the RNN needs and attention takes as well)"),
             "Task", "");
    describe(command->add_option("--hidden", r.hidden, "the RNN's d_h for --compare-rnn")
                 ->transform(in_range(Eigen::Index{1}, Eigen::Index{1024}))
                 ->capture_default_str(),
             "Task", "N");
}

// --compare-rnn's own defaults, where the command line says nothing; --hidden only with it.
void comparison_defaults(const CLI::App& command, TrainRequest& r) {
    const auto given = [&](const char* name) { return command.get_option(name)->count() > 0; };
    if (!r.compare_rnn) {
        if (given("--hidden")) throw UsageError("--hidden sizes the RNN of --compare-rnn, which was not asked for");
        return;
    }
    if (!given("--lr")) r.settings.lr = 0.01;
    if (!given("--clip")) r.settings.clip = 1;
    if (!given("--steps")) r.settings.steps = 1000;
}

// train's options of what it shows and writes.
void add_train_output(CLI::App* command, TrainRequest& r, TrainFlags& f) {
    TrainSettings& t = r.settings;
    describe(command->add_option("--every", t.every, "a line of the curve every N steps (default: steps / 10)")
                 ->transform(in_range(std::int64_t{1}, std::int64_t{100000000})),
             "Output", "N");
    describe(command->add_option("--threads", f.threads, "OpenMP threads (default: all cores); the numbers are the same for any")
                 ->transform(in_range(1, max_threads)),
             "Training", "N");
    choose(command->add_option("-f,--format", f.format, "the report's format"), "Output", formats_showing(Product::training))
        ->capture_default_str();
    describe(command->add_option("--svg", r.svg, "also draw the loss, the followed weight and held-out accuracy against "
                                                 "steps in this SVG file"),
             "Output", "FILE", Completes::file);
    describe(command->add_option("--snapshots", t.snapshots,
                                 "keep the weights every N steps (and at step 0) in the report: -f json or jsonl")
                 ->transform(in_range(std::int64_t{1}, std::int64_t{100000000})),
             "Output", "N");
    describe(command->add_option("--digits", f.digits, "decimals in the table")->transform(in_range(0, 17))->capture_default_str(),
             "Output", "N");
    describe(command->add_option("-o,--output", r.save, "write the learned model to FILE, an input every command reads"),
             "Output", "FILE", Completes::file);
    describe(command->add_option("--write-examples", r.examples_out,
                                 "write the task's examples to FILE as JSON Lines, a TASK file (the training ones, then the "
                                 "held-out): to train on the same examples in a loop of your own"),
             "Output", "FILE", Completes::file);
}

Runner add_train(CLI::App* command) {
    auto s = std::make_shared<State<TrainRequest, TrainFlags>>();
    TrainRequest& r = s->request;
    TrainFlags& f = s->flags;
    TrainSettings& t = r.settings;
    describe(command->add_option("TASK", r.task, "who_did_it, recall, or a file of examples (JSON Lines)")->required(),
             "Task", "", Completes::input);
    describe(command->add_option("--examples", r.examples, "a built-in task's examples, drawn from the seed")
                 ->transform(in_range(std::size_t{2}, std::size_t{1000000}))
                 ->capture_default_str(),
             "Task", "N");
    describe(command->add_option("--held-out", r.held_out, "the share of examples held out (the last ones)")
                 ->check(real_at_least_zero(true, 1))
                 ->capture_default_str(),
             "Task", "F");
    add_train_layer(command, r, f);
    choose(command->add_option("--optimizer", f.optimizer, "adam, or sgd (with --momentum)"), "Training",
           enum_names<Optimizer>())
        ->capture_default_str();
    describe(command->add_option("--lr", t.lr, "the learning rate")->check(real_at_least_zero(false))->capture_default_str(),
             "Training", "X");
    describe(command->add_option("--momentum", t.momentum, "sgd's momentum μ (0: W ← W − lr·∇L)")
                 ->check(real_at_least_zero(true, 1))
                 ->capture_default_str(),
             "Training", "X");
    describe(command->add_option("--steps", t.steps, "updates (0: the initial weights, written as they are)")
                 ->transform(in_range(std::int64_t{0}, std::int64_t{100000000}))
                 ->capture_default_str(),
             "Training", "N");
    describe(command->add_option("--epochs", r.epochs,
                                 "instead of --steps: enough steps for N passes over the training examples (N × "
                                 "⌈examples / batch⌉)")
                 ->transform(in_range(std::int64_t{1}, std::int64_t{1000000}))
                 ->excludes("--steps"),
             "Training", "N");
    describe(command->add_option("--batch", t.batch, "examples per step (all of them: full-batch gradient descent)")
                 ->transform(in_range(std::int64_t{1}, std::int64_t{1000000}))
                 ->capture_default_str(),
             "Training", "N");
    describe(command->add_option("--clip", t.clip, "scale the gradient down to this norm when it is longer (0: never)")
                 ->check(real_at_least_zero(true))
                 ->capture_default_str(),
             "Training", "X");
    describe(command->add_option("--seed", t.seed, "the initial weights, a built-in task's examples and their order")
                 ->transform(whole_number_u64)
                 ->capture_default_str(),
             "Training", "N");
    add_train_comparison(command, r);
    add_train_output(command, r, f);
    return [s, command] {
        return run(
            [&](Outputs& outputs) {
                TrainRequest& request = s->request;
                const TrainFlags& flags = s->flags;
                comparison_defaults(*command, request);
                prepare_threads(flags.threads > 0 ? std::optional<int>(flags.threads) : std::nullopt);
                request.settings.causal = flags.mode == "causal";
                request.settings.optimizer = *parse_enum<Optimizer>(flags.optimizer);
                request.settings.dtype = *parse_enum<Dtype>(flags.dtype);
                if (flags.dim) request.dim = static_cast<Eigen::Index>(*flags.dim);
                request.format = *parse_enum<Format>(flags.format);
                request.render.digits = flags.digits;
                request.max_input = default_max_input_bytes;
                run_train(request, outputs);
            },
            std::nullopt);
    };
}

// rnn's flags: the names read when it runs.
struct RnnFlags {
    ReadFlags read;
    std::optional<std::string> init;
};

Runner add_rnn(CLI::App* command) {
    auto s = std::make_shared<State<RnnRequest, RnnFlags>>();
    RnnRequest& r = s->request;
    RnnFlags& f = s->flags;
    describe(command->add_option("INPUT", r.input, "input JSON file, - for stdin, or example:NAME")->capture_default_str(),
             "Input", "", Completes::input);
    f.read.input.add_to(*command, false);
    describe(command->add_option("--hidden", r.hidden, "d_h, the size of the RNN's state, for drawn weights (default: d_in)")
                 ->transform(in_range(Eigen::Index{1}, Eigen::Index{4096})),
             "RNN", "N");
    choose(command->add_option("--init", f.init, "how drawn W_h starts: scaled (uniform in ±gain/√d_h, as PyTorch's "
                                                 "nn.RNN; the default) or orthogonal (× the gain)"),
           "RNN", enum_names<RnnInit>());
    describe(command->add_option("--gain", r.gain, "drawn W_h's scale (default 1): below 1 the state forgets faster")
                 ->check(real_at_least_zero(false)),
             "RNN", "X");
    describe(command->add_option("--seed", r.seed, "the drawn RNN weights, and attention's when the input has none")
                 ->transform(whole_number_u64)
                 ->capture_default_str(),
             "RNN", "N");
    choose(command->add_option("-f,--format", f.read.output.format, "the report's format"), "Output",
           formats_showing(Product::rnn))
        ->capture_default_str();
    describe(command->add_option("--digits", f.read.output.digits, "decimals in tables")->transform(in_range(0, 17))->capture_default_str(),
             "Output", "N");
    describe(command->add_option("--width", f.read.output.width, "table width in columns, 0 for no limit (default: the "
                                                                  "terminal's; none in a file)")
                 ->transform(in_range(0, 1'000'000)),
             "Output", "N");
    choose(command->add_option("--color", f.read.output.color, "shade tables; auto: on a terminal, NO_COLOR unset"),
           "Output", {"auto", "always", "never"})
        ->capture_default_str();
    add_output_path(*command, f.read.output.path);
    describe(command->add_option("--svg", r.svg_path, "also draw both influences against distance in this SVG file"),
             "Output", "FILE", Completes::file);
    f.read.limits.add_to(*command);
    return [s] {
        return run(
            [&](Outputs& outputs) {
                prepare_threads(std::nullopt);
                s->flags.read.apply(s->request, outputs.main_output());
                if (s->flags.init) s->request.init = parse_enum<RnnInit>(*s->flags.init);
                run_rnn(s->request, outputs);
            },
            s->flags.read.output.path);
    };
}

Runner add_compare(CLI::App* command) {
    auto s = std::make_shared<State<CompareRequest, TracedFlags>>();
    describe(command->add_option("A", s->request.a, "first input (file, - or example:NAME)")->required(), "Input", "",
             Completes::input);
    describe(command->add_option("B", s->request.b, "second input")->required(), "Input", "", Completes::input);
    describe(command->add_option("-t,--token", s->request.token, "the word to follow (first occurrence)")->required(),
             "Input", "WORD");
    s->flags.add_to(*command);
    s->flags.limits.add_to(*command);
    return run_traced(s, [](CompareRequest request, Outputs& outputs) { run_compare(std::move(request), outputs.main()); });
}

Runner add_decode(CLI::App* command) {
    auto s = std::make_shared<State<DecodeRequest, TracedFlags>>();
    DecodeOptions& d = s->request.decode;
    describe(command->add_option("INPUT", s->request.input_path,
                                 "input JSON file, - for stdin, or example:NAME (default: what is piped in, else the "
                                 "built-in example your_journey)"),
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
    s->flags.add_to(*command, false, true);
    s->flags.limits.add_to(*command);
    // Taken, so that run_decode refuses each with its reason, but left out of --help, the man
    // page and the completions: decode traces causal softmax attention, no other mode, fill,
    // window or positions.
    for (const char* refused :
         {"--mode", "--normalize", "--score", "--window", "--mask-fill", "--mask-after-softmax", "--positions", "--position-offset"})
        command->get_option(refused)->group(std::string(unlisted_group));
    return run_traced(s, [](DecodeRequest request, Outputs& outputs) { run_decode(std::move(request), outputs.main()); });
}

Runner add_step(CLI::App* command) {
    auto s = std::make_shared<State<StepRequest, TracedFlags>>();
    StepRequest& r = s->request;
    describe(command->add_option("INPUT", r.input_path,
                                 "input JSON file, - for stdin, or example:NAME (default: what is piped in, else the "
                                 "built-in example your_journey)"),
             "Input", "", Completes::input);
    describe(command->add_option("--keys", r.keys,
                                 "replay the keys of SCRIPT (names such as j Tab Enter \"0.5\" q; docs/stepper.md) and "
                                 "write each frame as text, without a terminal"),
             "Stepping", "SCRIPT", Completes::file);
    describe(command->add_flag("--plain", r.plain,
                               "no screen: one line of text per key (where the cursor is, the value, its arithmetic), "
                               "for a screen reader"),
             "Stepping", "");
    describe(command->add_option("--size", r.size, "the frames' size with --keys, COLUMNSxROWS (default 80x24)"),
             "Stepping", "WxH");
    describe(command->add_option("--stage", r.stage, "start on this stage (or a weight, W_q …) instead of the inputs"),
             "Stepping", "NAME");
    describe(command->add_option("-q,--query", r.row, "start on this row: a token as spelled, or a 1-based position"),
             "Stepping", "ROW");
    describe(command->add_option("--backward", r.backward,
                                 "after the forward stages, the backward pass of LOSS (focus:QUERY=KEY or sum), traced "
                                 "again with every change"),
             "Stepping", "LOSS");
    s->flags.add_to(*command);
    s->flags.limits.add_to(*command);
    return [s] {
        return run(
            [&](Outputs& outputs) {
                s->flags.apply(s->request, outputs.main_output());
                s->request.to_file = s->flags.output.path.has_value();
                return run_step(std::move(s->request), outputs);
            },
            s->flags.output.path);
    };
}

Runner add_check_answers(CLI::App* command) {
    auto s = std::make_shared<State<CheckAnswersRequest, TracedFlags>>();
    describe(command->add_option("INPUT", s->request.input_path,
                                 "input JSON file, - for stdin, or example:NAME, traced with the options below")
                 ->required(),
             "Input", "", Completes::input);
    describe(command->add_option("ANSWERS", s->request.answers_path,
                                 "the learner's numbers: JSON ({\"weights\": [[...]]}, rows, cells, per head; "
                                 "docs/practice.md) or the tidy CSV of --format csv --tidy")
                 ->required(),
             "Input", "", Completes::file);
    s->flags.add_to(*command);
    s->flags.limits.add_to(*command);
    return run_traced(s, [](CheckAnswersRequest request, Outputs& outputs) {
        return run_check_answers(std::move(request), outputs.main());
    });
}

Runner add_quiz(CLI::App* command) {
    auto s = std::make_shared<State<QuizRequest, QuizFlags>>();
    describe(command->add_option("--seed", s->request.seed, "seed of the questions: the same seed and options ask the same ones")
                 ->transform(whole_number_u64)
                 ->capture_default_str(),
             "Quiz", "N");
    describe(command->add_option("-n,--rounds", s->request.rounds, "questions to ask")->transform(in_range(1, 1000))->capture_default_str(),
             "Quiz", "N");
    choose(list_option(command->add_option("-m,--mode", s->flags.modes,
                                           "ask only about these modes (default: every mode that reads the example)")),
           "Quiz", enum_names<Mode>(), true);
    std::vector<std::string> stage_names;
    for (const StageId id : quiz_stages) stage_names.emplace_back(to_string(id));
    choose(list_option(command->add_option("-s,--stage", s->flags.stages, "ask only about these stages (default: all of them)")),
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
    choose(command->add_option("-f,--format", s->flags.format, "table: the transcript; json: every round's result at the end"),
           "Output", formats_showing(Product::quiz))
        ->capture_default_str();
    describe(command->add_option("--digits", s->request.render.digits, "decimals in tables")->transform(in_range(0, 17))->capture_default_str(),
             "Output", "N");
    describe(command->add_option("--width", s->flags.width, "table width in columns, 0 for no limit (default: the terminal's)")
                 ->transform(in_range(0, 1'000'000)),
             "Output", "N");
    choose(command->add_option("--color", s->flags.color,
                               "shade scores and weights; auto: when the output is a terminal, NO_COLOR is unset and "
                               "TERM is not dumb"),
           "Output", {"auto", "always", "never"})
        ->capture_default_str();
    return [s] {
        return run(
            [&](Outputs& outputs) {
                QuizRequest& request = s->request;
                request.modes = parsed<Mode>(s->flags.modes);
                request.stages = parsed<StageId>(s->flags.stages);
                request.render.format = *parse_enum<Format>(s->flags.format);
                const Output& main = outputs.main_output();
                fit_to_destination(request.render, s->flags.width, s->flags.color, main);
                QuizTerminal terminal;
                terminal.answers_typed = is_terminal(STDIN_FILENO);
                terminal.echo = !(terminal.answers_typed && is_terminal(main.descriptor()));
                terminal.flush = [&outputs] { outputs.main_output().drain(); };
                return run_quiz(request, terminal, outputs.main());
            },
            std::nullopt);
    };
}

// In the order of attntrace --help.
const std::vector<Subcommand> table{
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
     "time the trace and streaming paths, and the streaming backward pass, over growing n against this machine's GEMM rate",
     add_bench,
     {{"attntrace bench", "both paths, n = 512 … 16384, float32 and float64"},
      {"attntrace bench --sizes 1024,4096 --modes causal --paths streaming", "the causal streaming path alone"},
      {"attntrace bench --sizes 1024,2048,4096 --paths backward --dtypes float32 --threads 2",
       "the streaming backward pass per doubling of n"}}},
    {"train",
     "learn an attention layer's W_q, W_k, W_v on a task, watch the weight it is about, and save the model",
     add_train,
     {{"attntrace train who_did_it", "the verb learns to look back at its subject"},
      {"attntrace train who_did_it -o learned.json && attntrace learned.json -m self -s weights",
       "save what was learned and trace it"},
      {"attntrace train recall --format json", "associative recall, its curve as JSON"}}},
    {"rnn",
     "the RNN encoder the lectures start from: its hidden states, the one vector it hands on, and how each token's "
     "influence fades with distance, beside attention's",
     add_rnn,
     {{"attntrace rnn", "the lecture's sentence: the RNN against the attention attntrace train learned"},
      {"attntrace rnn --gain 0.5 --svg influence.svg", "a state that forgets faster, drawn"},
      {"attntrace rnn example:teacher_smiled -f json", "the same for another input, as JSON"}}},
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
    {"step",
     "step through the trace on a terminal: stage by stage, cell by cell, each cell's arithmetic, recomputed as you "
     "change the mode, the scaling, the temperature or an input number",
     add_step,
     {{"attntrace step", "the built-in example, full screen (? shows the keys)"},
      {"attntrace step example:teacher_smiled -m causal", "the lecture's sentence with the causal mask"},
      {"attntrace step --keys keys.txt", "replay keys without a terminal and print each frame as text"}}},
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

}  // namespace

const std::vector<Subcommand>& subcommand_table() { return table; }

}  // namespace attntrace::cli
