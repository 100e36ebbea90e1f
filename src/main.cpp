// attntrace: trace the attention mechanism step by step. This file only wires the command
// line to the library: options → a request → a command (load → trace → render).
#include "commands/bench_command.hpp"
#include "commands/compare_command.hpp"
#include "commands/generate_command.hpp"
#include "commands/similarity_command.hpp"
#include "commands/trace_command.hpp"
#include "error.hpp"
#include "input/limits.hpp"
#include "commands/guards.hpp"
#include "util/duration.hpp"
#include "util/memory.hpp"
#include "util/output.hpp"
#include "util/terminal.hpp"
#include "util/threads.hpp"
#include "util/utf8.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <type_traits>

namespace {

using namespace attntrace;

constexpr const char* version = "attntrace 0.1.0";
constexpr std::size_t max_message_chars = 2000;

int fail(int code, std::string message) {
    // One line, whatever the message holds: breaks become spaces, anything else that could
    // act on the terminal is escaped, and the whole is bounded (an argument echoed by CLI11
    // may be megabytes long).
    for (char& c : message)
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    std::fprintf(stderr, "attntrace: error: %s\n", printable(message, max_message_chars).c_str());
    return code;
}

// A whole number in [0, 2⁶⁴): CLI11 would wrap "-1" and saturate "99999999999999999999".
const CLI::Validator whole_number_u64(
    [](std::string& text) -> std::string {
        std::uint64_t value = 0;
        const char* end = text.data() + text.size();
        const auto [stop, error] = std::from_chars(text.data(), end, value);
        if (error != std::errc() || stop != end)
            return "expected a whole number from 0 to 18446744073709551615, found " + text;
        return {};
    },
    "UINT64");

void add_output_path(CLI::App& app, std::optional<std::string>& path) {
    app.add_option("-o,--output", path, "write to FILE instead of stdout (all or nothing: renamed into place when done)");
}

// How output looks and where it goes: shared by every command that prints tables.
struct OutputFlags {
    std::string format = "table";
    std::string color = "auto";
    int width = -1;
    int digits = 4;
    std::optional<std::string> path;  // -o FILE

    void add_to(CLI::App& app) {
        app.add_option("-f,--format", format, "output format: table, json, markdown or csv")
            ->check(CLI::IsMember({"table", "json", "markdown", "csv"}))
            ->capture_default_str();
        app.add_option("--digits", digits, "decimals in tables")->check(CLI::Range(0, 17))->capture_default_str();
        app.add_option("--width", width, "table width in columns, 0 for no limit (default: the terminal's)")
            ->check(CLI::Range(0, 1'000'000));
        app.add_option("--color", color,
                       "shade scores and weights in tables: auto (a terminal, NO_COLOR unset), always, never")
            ->check(CLI::IsMember({"auto", "always", "never"}))
            ->capture_default_str();
        add_output_path(app, path);
    }

    void apply(RenderOptions& render) const {
        render.format = *parse_format(format);
        render.digits = digits;
        render.width = width >= 0 ? static_cast<std::size_t>(width) : output_width();
        render.color = color == "always" || (color == "auto" && color_wanted());
    }
};

// What a command may take from the machine: shared by the commands that read inputs.
struct LimitFlags {
    std::string max_memory, max_input, max_time;

    void add_to(CLI::App& app, bool reads_input = true) {
        const CLI::Validator size(
            [](std::string& text) -> std::string {
                return parse_size(text) ? std::string() : "expected a size such as 512M or 4G, found " + text;
            },
            "SIZE");
        app.add_option("--max-memory", max_memory,
                       "refuse work needing more memory than this, e.g. 4G (default: half the machine's)")
            ->check(size);
        if (reads_input)
            app.add_option("--max-input", max_input, "refuse inputs larger than this (default: 1G)")->check(size);
        app.add_option("--max-time", max_time,
                       "refuse work estimated to take longer than this, e.g. 90s, 10m, 2h; 0 for no limit (default: 5m)")
            ->check(CLI::Validator(
                [](std::string& text) -> std::string {
                    return parse_duration(text) ? std::string() : "expected a duration such as 90s, 10m or 0, found " + text;
                },
                "DURATION"));
    }

    MemoryLimit memory() const {
        return max_memory.empty() ? default_memory_limit() : MemoryLimit{*parse_size(max_memory), ""};
    }
    std::uint64_t input() const { return max_input.empty() ? default_max_input_bytes : *parse_size(max_input); }
    double seconds() const { return max_time.empty() ? default_max_seconds : *parse_duration(max_time); }
};

// How attention is computed: shared by the trace and compare commands.
struct TraceFlags {
    std::string mode, normalize = "softmax", score = "additive", dtype = "float64";
    long long dim = 0;
    int threads = 0;
    TraceOptions options;

    void add_to(CLI::App& app) {
        app.add_option("-m,--mode", mode, "plain, self, causal or bahdanau (default: the input's mode, else plain)")
            ->check(CLI::IsMember({"plain", "self", "causal", "bahdanau"}));
        app.add_option("--normalize", normalize, "turn scores into weights by softmax, or by dividing by the row sum")
            ->check(CLI::IsMember({"softmax", "sum"}))
            ->capture_default_str();
        app.add_option("--score", score,
                       "bahdanau: additive (v_a·tanh(s·W_a + h·U_a)), Luong's dot (s·h) or general (s·W·h)")
            ->check(CLI::IsMember({"additive", "dot", "general"}))
            ->capture_default_str();
        app.add_option("--seed", options.seed, "seed for weights the input does not give")
            ->check(whole_number_u64)
            ->capture_default_str();
        app.add_option("--dim", dim, "d_k = d_v (bahdanau: d_a) of generated weights (default: d_in)")
            ->check(CLI::Range(1LL, 1LL << 20));
        app.add_option("--threads", threads, "OpenMP threads (default: all cores); the output is the same for any")
            ->check(CLI::Range(1, max_threads));
        app.add_option("--dtype", dtype, "compute in float64 (default) or float32 (faster for long inputs)")
            ->check(CLI::IsMember({"float64", "float32"}))
            ->capture_default_str();
    }

    std::optional<Mode> requested_mode() const { return mode.empty() ? std::nullopt : parse_mode(mode); }

    TraceOptions apply() const {
        TraceOptions o = options;
        o.normalization = normalize == "sum" ? Normalization::sum : Normalization::softmax;
        o.score = score == "dot" ? Score::dot : score == "general" ? Score::general : Score::additive;
        if (dim > 0) o.dim = dim;
        o.dtype = *parse_dtype(dtype);  // CLI11 has checked the name
        prepare_threads(threads > 0 ? std::optional<int>(threads) : std::nullopt);
        return o;
    }
};

// Runs `job` on the outputs (stdout, or FILE for -o, and any files the job adds), committing
// them only when the job succeeds; returns the exit status.
template <typename Job>
int run(Job&& job, const std::optional<std::string>& output_path = std::nullopt) {
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

}  // namespace

int main(int argc, char** argv) {
    if (const auto problem = prepare_output()) return fail(exit_data_error, *problem);
    CLI::App app{"Trace the attention mechanism step by step: scores, scaling, masking, softmax "
                 "weights and context vectors, as tables, JSON, markdown or CSV.",
                 "attntrace"};
    app.set_version_flag("--version", version);
    app.get_formatter()->column_width(30);

    // The main job: trace one input.
    TraceRequest request;
    OutputFlags output;
    TraceFlags flags;
    bool list = false;
    auto* input = app.add_option("INPUT", request.input_path,
                                 "input JSON file (docs/input-format.md), - for stdin, example:NAME; "
                                 "default: the built-in example your_journey");
    auto* example = app.add_option("--example", request.example, "trace a built-in example by name");
    input->excludes(example);
    app.add_flag("--list-examples", list, "list the built-in examples and exit")->excludes(example)->excludes(input);
    flags.add_to(app);
    output.add_to(app);
    app.add_option("-s,--stage", request.render.stages, "show only these stages, comma-separated (e.g. scores,weights)")
        ->delimiter(',');
    app.add_option("-q,--query", request.trace.query,
                   "work through one query's arithmetic: a token as spelled, or a 1-based position");
    app.add_flag("--explain", request.render.explain, "explain each stage before showing it");
    app.add_option("--svg", request.svg_path, "also write a heatmap of the attention weights to this SVG file");
    app.add_flag("--summary", request.summary,
                 "long inputs: per query its top keys, largest weight and entropy, by the streaming path "
                 "(no n×n matrix); --stage context adds the context vectors");
    app.add_option("--top", request.top, "keys per query in the summary")->check(CLI::Range(1, 1000))->capture_default_str();
    LimitFlags limits;
    limits.add_to(app);
    app.add_flag("--check", request.check,
                 "verify the trace (rows sum to 1, masked weights 0, context = weights·values, all finite) "
                 "and print the verdict instead of the trace");

    // attntrace similarity INPUT
    SimilarityRequest similarity;
    OutputFlags similarity_output;
    auto* similarity_command = app.add_subcommand(
        "similarity", "dot-product and cosine-similarity tables of an input's words (embeddings as points in space)");
    similarity_command->add_option("INPUT", similarity.input, "input JSON file, - for stdin, or example:NAME")->required();
    similarity_output.add_to(*similarity_command);
    LimitFlags similarity_limits;
    similarity_limits.add_to(*similarity_command);

    // attntrace generate --tokens N --dim D
    GenerateRequest generate;
    std::optional<std::string> generate_output;
    auto* generate_command = app.add_subcommand(
        "generate", "write a long random input (tokens, embeddings, weights) from the portable generator");
    generate_command->add_option("-n,--tokens", generate.tokens, "number of tokens")
        ->check(CLI::Range(std::int64_t{1}, static_cast<std::int64_t>(max_tokens)))
        ->capture_default_str();
    generate_command->add_option("-d,--dim", generate.dim, "vector dimension d_in = d_k = d_v")
        ->check(CLI::Range(std::int64_t{1}, static_cast<std::int64_t>(max_dimension)))
        ->capture_default_str();
    generate_command->add_option("--seed", generate.seed, "seed of the generator")->check(whole_number_u64)->capture_default_str();
    add_output_path(*generate_command, generate_output);

    // attntrace bench
    BenchRequest bench;
    std::string bench_format = "table";
    auto* bench_command = app.add_subcommand(
        "bench", "time the trace and streaming paths over growing n against this machine's GEMM rate");
    bench_command->add_option("--sizes", bench.sizes, "token counts, comma-separated")->delimiter(',')
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20))->capture_default_str();
    bench_command->add_option("--dim", bench.dim, "d_in = d_k = d_v")->check(CLI::Range(std::int64_t{1}, std::int64_t{4096}))->capture_default_str();
    bench_command->add_option("--modes", bench.modes, "plain, self and/or causal")->delimiter(',')
        ->check(CLI::IsMember({"plain", "self", "causal"}))->capture_default_str();
    bench_command->add_option("--dtypes", bench.dtypes, "float32 and/or float64")->delimiter(',')
        ->check(CLI::IsMember({"float32", "float64"}))->capture_default_str();
    bench_command->add_option("--threads", bench.threads, "thread counts (default: 1 to the number of cores)")
        ->delimiter(',')->check(CLI::Range(1, max_threads));
    bench_command->add_option("--paths", bench.paths, "streaming and/or trace")->delimiter(',')
        ->check(CLI::IsMember({"streaming", "trace"}))->capture_default_str();
    bench_command->add_option("--trace-max", bench.trace_max, "largest n for the trace path, which holds n×n matrices")
        ->capture_default_str();
    bench_command->add_option("--repeats", bench.repeats, "timed runs per configuration after a warm-up (median)")
        ->check(CLI::Range(1, 1000))->capture_default_str();
    bench_command->add_option("-f,--format", bench_format, "table or json")->check(CLI::IsMember({"table", "json"}))
        ->capture_default_str();
    std::optional<std::string> bench_output;
    add_output_path(*bench_command, bench_output);
    LimitFlags bench_limits;
    bench_limits.add_to(*bench_command, false);

    // attntrace compare A B --token WORD
    CompareRequest compare;
    OutputFlags compare_output;
    TraceFlags compare_flags;
    auto* compare_command = app.add_subcommand(
        "compare", "one word's context vector in two inputs: their difference, cosine and what moved it");
    compare_command->add_option("A", compare.a, "first input (file, - or example:NAME)")->required();
    compare_command->add_option("B", compare.b, "second input")->required();
    compare_command->add_option("-t,--token", compare.token, "the word to follow (first occurrence)")->required();
    compare_flags.add_to(*compare_command);
    compare_output.add_to(*compare_command);
    LimitFlags compare_limits;
    compare_limits.add_to(*compare_command);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() != 0) return fail(exit_usage_error, std::string(e.what()) + " (see attntrace --help)");
        return run([&](std::ostream& out) { app.exit(e, out, out); });
    }

    if (*bench_command)
        return run([&](std::ostream& out) {
            prepare_threads(bench.threads.empty() ? std::nullopt : std::optional<int>(bench.threads.front()));
            bench.format = *parse_format(bench_format);
            bench.max_memory = bench_limits.memory();
            bench.max_seconds = bench_limits.seconds();
            run_bench(bench, out);
        }, bench_output);
    if (*generate_command)
        return run([&](std::ostream& out) { run_generate(generate, out); }, generate_output);
    if (*similarity_command)
        return run([&](std::ostream& out) {
            prepare_threads(std::nullopt);
            similarity_output.apply(similarity.render);
            similarity.max_memory = similarity_limits.memory();
            similarity.max_seconds = similarity_limits.seconds();
            similarity.max_input = similarity_limits.input();
            run_similarity(similarity, out);
        }, similarity_output.path);
    if (*compare_command)
        return run([&](std::ostream& out) {
            compare.mode = compare_flags.requested_mode();
            compare.trace = compare_flags.apply();
            compare_output.apply(compare.render);
            compare.max_memory = compare_limits.memory();
            compare.max_seconds = compare_limits.seconds();
            compare.max_input = compare_limits.input();
            run_compare(std::move(compare), out);
        }, compare_output.path);
    return run([&](Outputs& outputs) {
        if (list) return list_examples(outputs.main());
        const auto query = request.trace.query;
        request.trace = flags.apply();
        request.trace.query = query;
        request.max_memory = limits.memory();
        request.max_seconds = limits.seconds();
        request.max_input = limits.input();
        request.mode = flags.requested_mode();
        output.apply(request.render);
        run_trace(std::move(request), outputs);
    }, output.path);
}
