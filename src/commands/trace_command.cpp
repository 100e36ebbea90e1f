#include "commands/trace_command.hpp"

#include "attention/check.hpp"
#include "attention/summary.hpp"
#include "attention/worked.hpp"
#include "commands/guards.hpp"
#include "error.hpp"
#include "input/examples.hpp"
#include "input/load.hpp"
#include "input/source.hpp"
#include "render/summary.hpp"
#include "render/svg.hpp"
#include "util/memory.hpp"
#include "util/output.hpp"
#include "util/progress.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace attntrace {
namespace {

// Names no mode knows are refused before the input is read.
void check_stage_names_exist(const std::vector<std::string>& requested) {
    for (const auto& name : requested) {
        bool known = false;
        for (const Mode mode : {Mode::plain, Mode::bahdanau})
            for (const auto& stage : stage_names(mode)) known = known || stage == name;
        if (!known)
            throw UsageError(fmt::format("--stage: no stage named \"{}\" (stages: {}; bahdanau "
                                         "mode: {})",
                                         printable(name), fmt::join(stage_names(Mode::plain), ", "),
                                         fmt::join(stage_names(Mode::bahdanau), ", ")));
    }
}

void check_stage_names(const std::vector<std::string>& requested, Mode mode) {
    const auto known = stage_names(mode);
    for (const auto& name : requested)
        if (std::find(known.begin(), known.end(), name) == known.end())
            throw UsageError(fmt::format("--stage: no stage \"{}\" in mode {} (stages: {})", printable(name),
                                         to_string(mode), fmt::join(known, ", ")));
}

// The first option asked for that needs the full matrices, which the summary does not build.
std::optional<std::string_view> full_trace_option(const TraceRequest& request) {
    if (request.trace.query) return "--query";
    if (request.render.explain) return "--explain";
    if (request.check) return "--check";
    if (request.svg_path) return "--svg";
    if (request.trace.normalization == Normalization::sum) return "--normalize sum";
    return std::nullopt;
}

// What --summary cannot be combined with.
void check_summary_request(const TraceRequest& request) {
    if (const auto option = full_trace_option(request))
        throw UsageError(fmt::format("{} needs the full trace, which --summary does not build", *option));
    for (const auto& name : request.render.stages)
        if (name != "context")
            throw UsageError(fmt::format("--summary shows one line per query; --stage can add only "
                                         "\"context\", not \"{}\"",
                                         printable(name)));
}

bool mode_has_summary(Mode mode) { return mode != Mode::bahdanau; }

// The rows a query names: the tokens, or the target tokens of a source/target input.
const std::vector<std::string>& query_labels(const Problem& problem) {
    if (const auto* single = std::get_if<SingleSequenceInput>(&problem.input)) return single->sequence.tokens;
    return std::get<EncoderDecoderInput>(problem.input).target.tokens;
}

std::size_t token_count(const Problem& problem) {
    if (const auto* single = std::get_if<SingleSequenceInput>(&problem.input)) return single->sequence.tokens.size();
    return 0;
}

void run_summary(const Problem& problem, const TraceRequest& request, std::ostream& out, std::string note) {
    SummaryOptions options;
    options.top = request.top;
    options.context = std::find(request.render.stages.begin(), request.render.stages.end(), "context") !=
                      request.render.stages.end();
    const WorkShape shape = work_shape(problem, request.trace);
    require_memory(summary_bytes(shape, request.trace.dtype, options.context, options.top), request.max_memory,
                   problem.origin, "the summary of this input", "");
    require_time(summary_seconds(shape), request.max_seconds, problem.origin,
                 fmt::format("the summary of {} tokens", shape.rows), "");
    ProgressBar progress("attention");
    options.progress = [&](std::size_t done, std::size_t total) { progress.update(done, total); };
    Summary summary = summarize(problem, request.trace, options);
    if (!note.empty()) summary.notes.push_back(std::move(note));
    render_summary(summary, request.render, out);
}

}  // namespace

void run_trace(TraceRequest request, Outputs& outputs) {
    std::ostream& out = outputs.main();
    check_stage_names_exist(request.render.stages);
    if (request.render.format == Format::csv && (request.render.explain || request.trace.query))
        throw UsageError("--explain and --query need room for text: use --format table, markdown or json");
    if (request.summary) check_summary_request(request);
    // Opened before any work, so that a path that cannot be written, or that names the main
    // output's file, is refused at once; committed with the rest.
    std::ostream* svg = request.svg_path ? &outputs.add(*request.svg_path) : nullptr;
    const InputText input = request.input_path ? read_input(*request.input_path, request.max_input)
                                               : example_input(request.example.value_or(
                                                     std::string(default_example)));
    const Problem problem = load_input(input, request.max_memory);
    request.trace.mode = resolve_mode(problem, request.mode);

    // A query that names no token is a usage error, found before any work is done.
    if (request.trace.query) (void)find_query_row(query_labels(problem), *request.trace.query);

    const std::size_t n = token_count(problem);
    if (request.summary) {
        if (request.trace.mode == Mode::bahdanau)
            throw UsageError("--summary covers modes plain, self and causal; bahdanau traces are small");
        return run_summary(problem, request, out, "");
    }
    // A table of more than summary_threshold columns is unreadable: show the summary instead.
    if (request.render.format == Format::table && request.render.stages.empty() && !full_trace_option(request) &&
        n > summary_threshold)
        return run_summary(problem, request, out,
                           fmt::format("{} tokens make tables too wide to read, so this is the summary "
                                       "(--summary); --stage NAME shows a stage's table, --format json "
                                       "every number",
                                       n));

    check_stage_names(request.render.stages, request.trace.mode);
    const WorkShape shape = work_shape(problem, request.trace);
    require_memory(trace_bytes(shape, request.trace.dtype, request.render, request.svg_path.has_value()),
                   request.max_memory, problem.origin, "a full trace of this input",
                   "--summary gives per-query results without the n×n matrices");
    require_time(trace_seconds(shape, request.render.format), request.max_seconds, problem.origin,
                 "a full trace of this input", mode_has_summary(request.trace.mode) ? "--summary is much faster" : "");
    const Trace result = trace(problem, request.trace);
    if (svg) render_svg(result, *svg);
    if (request.check) {
        if (const auto failure = first_failed_check(result))
            throw DataError(fmt::format("{}: check failed: {}", result.origin, *failure));
        out << "all checks passed\n";
        return;
    }
    render(result, request.render, out);
}

void list_examples(std::ostream& out) {
    for (const auto& example : examples()) {
        const Problem problem = load_problem(example.json, fmt::format("example:{}", example.name));
        out << fmt::format("{:<16} {}\n", example.name, problem.description);
    }
}

}  // namespace attntrace
