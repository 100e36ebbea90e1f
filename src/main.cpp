// attntrace: trace the attention mechanism step by step. This file only wires the command
// line to the library: options → load → trace → render.
#include "commands/trace_command.hpp"
#include "error.hpp"
#include "util/output.hpp"
#include "util/terminal.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <omp.h>

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <sstream>

namespace {

constexpr const char* version = "attntrace 0.1.0";

int fail(int code, std::string message) {
    // One line, whatever the message holds.
    for (char& c : message)
        if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    std::fprintf(stderr, "attntrace: error: %s\n", message.c_str());
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

}  // namespace

int main(int argc, char** argv) {
    using namespace attntrace;

    CLI::App app{"Trace the attention mechanism step by step: scores, scaling, masking, softmax "
                 "weights and context vectors, as tables or JSON.",
                 "attntrace"};
    app.set_version_flag("--version", version);
    app.get_formatter()->column_width(28);

    TraceRequest request;
    std::string mode_name, format_name = "table", normalize_name = "softmax", score_name = "additive",
                color_name = "auto";
    int threads = 0;
    long long dim = 0;
    int width = -1;
    bool list = false;

    app.add_option("INPUT", request.input_path,
                   "input JSON file (docs/input-format.md), - for stdin; default: the built-in "
                   "example your_journey");
    auto* example = app.add_option("--example", request.example, "trace a built-in example by name");
    app.get_option("INPUT")->excludes(example);
    app.add_flag("--list-examples", list, "list the built-in examples and exit")
        ->excludes(example)
        ->excludes(app.get_option("INPUT"));
    app.add_option("-m,--mode", mode_name, "plain, self, causal or bahdanau (default: the input's mode, else plain)")
        ->check(CLI::IsMember({"plain", "self", "causal", "bahdanau"}));
    app.add_option("-f,--format", format_name, "output format: table, json, markdown or csv")
        ->check(CLI::IsMember({"table", "json", "markdown", "csv"}))
        ->capture_default_str();
    app.add_option("-s,--stage", request.render.stages,
                   "show only these stages, comma-separated (e.g. scores,weights)")
        ->delimiter(',');
    app.add_option("-q,--query", request.trace.query,
                   "work through one query's arithmetic: a token as spelled, or a 1-based position");
    app.add_flag("--explain", request.render.explain, "explain each stage before showing it");
    app.add_option("--color", color_name, "shade scores and weights in tables: auto (a terminal, NO_COLOR unset), always, never")
        ->check(CLI::IsMember({"auto", "always", "never"}))
        ->capture_default_str();
    app.add_flag("--check", request.check,
                 "verify the trace (rows sum to 1, masked weights 0, context = weights·values, all finite) and print the verdict");
    app.add_option("--digits", request.render.digits, "decimals in tables")
        ->check(CLI::Range(0, 17))
        ->capture_default_str();
    app.add_option("--normalize", normalize_name, "turn scores into weights by softmax, or by dividing by the row sum")
        ->check(CLI::IsMember({"softmax", "sum"}))
        ->capture_default_str();
    app.add_option("--score", score_name,
                   "bahdanau: additive (v_a·tanh(s·W_a + h·U_a)), Luong's dot (s·h) or general (s·W·h)")
        ->check(CLI::IsMember({"additive", "dot", "general"}))
        ->capture_default_str();
    app.add_option("--seed", request.trace.seed, "seed for weights the input does not give")
        ->check(whole_number_u64)
        ->capture_default_str();
    app.add_option("--dim", dim, "d_k = d_v (bahdanau: d_a) of generated weights (default: d_in)")
        ->check(CLI::Range(1LL, 1LL << 20));
    app.add_option("--threads", threads, "OpenMP threads (default: all cores); the output is the same for any")
        ->check(CLI::Range(1, 1024));
    app.add_option("--width", width, "table width in columns, 0 for no limit (default: the terminal's)")
        ->check(CLI::Range(0, 1'000'000));

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) {
            std::ostringstream text;
            app.exit(e, text, text);
            try {
                write_stdout(text.view());
            } catch (const BrokenPipe&) {
                return exit_broken_pipe;
            } catch (const DataError& write_error) {
                return fail(exit_data_error, write_error.what());
            }
            return 0;
        }
        return fail(exit_usage_error, std::string(e.what()) + " (see attntrace --help)");
    }

    try {
        std::ostringstream out;
        if (list) {
            list_examples(out);
        } else {
            if (!mode_name.empty()) request.mode = parse_mode(mode_name);
            request.render.format = *parse_format(format_name);
            request.render.width = width >= 0 ? static_cast<std::size_t>(width) : output_width();
            request.render.color = color_name == "always" || (color_name == "auto" && color_wanted());
            request.trace.normalization = normalize_name == "sum" ? Normalization::sum : Normalization::softmax;
            if (dim > 0) request.trace.dim = dim;
            request.trace.score = score_name == "dot"       ? Score::dot
                                  : score_name == "general" ? Score::general
                                                            : Score::additive;
            if (threads > 0) omp_set_num_threads(threads);
            run_trace(std::move(request), out);
        }
        write_stdout(out.view());
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
