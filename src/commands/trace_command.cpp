#include "commands/trace_command.hpp"

#include "attention/check.hpp"
#include "attention/modes.hpp"
#include "attention/summary.hpp"
#include "attention/trace.hpp"
#include "attention/worked.hpp"
#include "commands/backward_run.hpp"
#include "commands/guards.hpp"
#include "core/error.hpp"
#include "input/examples.hpp"
#include "input/load.hpp"
#include "input/source.hpp"
#include "render/render.hpp"
#include "render/html.hpp"
#include "render/svg.hpp"
#include "util/memory.hpp"
#include "util/output.hpp"
#include "util/progress.hpp"
#include "util/suggest.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

#include <tuple>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <optional>
#include <span>

namespace attntrace {
namespace {

// "stages: inputs, …; bahdanau mode: encoder_states, …": every mode's stages, a list once.
std::string stage_lists() {
    std::string text;
    std::span<const StageId> first;
    for (const ModeSpec& spec : mode_specs()) {
        if (first.empty()) {
            first = spec.stages;
        } else if (std::equal(first.begin(), first.end(), spec.stages.begin(), spec.stages.end())) {
            continue;
        }
        std::vector<std::string_view> names;
        for (const StageId id : spec.stages) names.push_back(to_string(id));
        text += fmt::format("{}{}: {}", text.empty() ? "" : "; ", text.empty() ? "stages" : fmt::format("{} mode", spec.name()),
                            fmt::join(names, ", "));
        if (spec.stages.data() == first.data()) first = spec.stages;
    }
    return text;
}

// --stage's names, known to some mode (checked before the input is read).
std::vector<StageId> stage_ids(const std::vector<std::string>& requested) {
    std::vector<StageId> ids;
    const auto known = all_stage_names();
    for (const auto& name : requested) {
        if (std::find(known.begin(), known.end(), name) == known.end()) {
            const auto near = likely_typo(name, known);
            throw UsageError(fmt::format("--stage: no stage named \"{}\"{} ({})", printable(name),
                                         near ? fmt::format(" (did you mean {}?)", *near) : "", stage_lists()));
        }
        ids.push_back(*parse_enum<StageId>(name));
    }
    return ids;
}

// --stage's names, known to this mode.
void check_stages_of(const std::vector<StageId>& requested, const ModeSpec& mode) {
    for (const StageId id : requested)
        if (std::find(mode.stages.begin(), mode.stages.end(), id) == mode.stages.end()) {
            std::vector<std::string_view> names;
            for (const StageId known : mode.stages) names.push_back(to_string(known));
            throw UsageError(fmt::format("--stage: no stage \"{}\" in mode {} (stages: {})", to_string(id), mode.name(),
                                         fmt::join(names, ", ")));
        }
}

// --svg-stage's name: a stage with a row per query and a column per key.
StageId svg_stage_id(const std::string& name) {
    const auto id = parse_enum<StageId>(name);
    if (id && std::find(svg_stages.begin(), svg_stages.end(), *id) != svg_stages.end()) return *id;
    const std::string choices = svg_stage_choices();
    const auto known = all_stage_names();
    if (std::find(known.begin(), known.end(), name) == known.end()) {
        std::vector<std::string> drawn;
        for (const StageId drawable : svg_stages) drawn.emplace_back(to_string(drawable));
        const auto near = likely_typo(name, drawn);
        throw UsageError(fmt::format("--svg-stage: no stage named \"{}\"{}; --svg draws {}", printable(name),
                                     near ? fmt::format(" (did you mean {}?)", *near) : "", choices));
    }
    throw UsageError(fmt::format("--svg-stage: the {} stage is not a matrix over (query, key) pairs; --svg draws {}", name,
                                 choices));
}

// The first option asked for that needs the full matrices, which the summary does not build.
std::optional<std::string_view> full_trace_option(const TraceRequest& request) {
    if (request.backward && !request.summary) return "--backward";  // --summary has a streaming backward pass
    if (request.backward && request.backward->step_size) return "--step-size";
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
    if (request.html_path && request.backward)
        throw UsageError("--html draws a full trace with its gradients, or a summary; --summary --backward has no page "
                         "(leave out --summary)");
    if (request.html_path && request.render.format == Format::jsonl)
        throw UsageError("--html needs the whole summary, which --format jsonl writes as it goes: use --format table or json");
    if (request.backward) {
        require_format(request.render.format, Product::gradients);
        if (!request.backward->stages.empty())
            throw UsageError(fmt::format("--stage {}: --summary --backward shows the loss, the parameters' gradients and "
                                         "each token's ‖dL/dx‖; a gradient stage needs the full trace (leave out "
                                         "--summary)",
                                         request.backward->stages.front()));
        if (!request.render.stages.empty())
            throw UsageError(fmt::format("--summary --backward shows the loss and the gradients, no forward stage; --stage "
                                         "{} needs --summary without --backward",
                                         to_string(request.render.stages.front())));
    }
    for (const StageId id : request.render.stages)
        if (id != StageId::context)
            throw UsageError(fmt::format("--summary shows one line per query; --stage can add only \"context\", not \"{}\"",
                                         to_string(id)));
}

// The checks of the command line alone, before anything is read.
void check_request(TraceRequest& request) {
    take_gradient_stages(request);  // d_NAME: the backward pass's
    request.render.stages = stage_ids(request.stages);
    request.svg = {svg_stage_id(request.svg_stage), request.render.shade, request.render.head};
    if (request.render.format == Format::csv && (request.render.explain || request.trace.query))
        throw UsageError("--explain and --query need room for text: use --format table, markdown or json");
    if (request.render.format == Format::jsonl && !request.summary)
        throw UsageError("--format jsonl writes one line per query of --summary: add --summary, or use --format json "
                         "for the trace");
    if (request.render.tidy) {
        if (request.render.format != Format::csv) throw UsageError("--tidy shapes the CSV output: add --format csv");
        if (request.summary)
            throw UsageError("--tidy lays out a trace's matrices; the CSV of --summary already has one line per query");
        if (request.check) throw UsageError("--tidy lays out a trace's matrices, not the report of --check");
    }
    if (request.summary) check_summary_request(request);
}

// The rows a query names: the tokens, or the target tokens of a source/target input.
const std::vector<std::string>& query_labels(const Problem& problem) {
    switch (family_of(problem)) {
    case ModeFamily::single_sequence: return std::get<SingleSequenceInput>(problem.input).sequence.tokens;
    case ModeFamily::encoder_decoder: return std::get<EncoderDecoderInput>(problem.input).target.tokens;
    }
    unknown_family();
}

// The tokens of a single sequence, which may be summarised; 0 for an input that is not one.
std::size_t token_count(const Problem& problem) {
    switch (family_of(problem)) {
    case ModeFamily::single_sequence: return std::get<SingleSequenceInput>(problem.input).sequence.tokens.size();
    case ModeFamily::encoder_decoder: return 0;
    }
    unknown_family();
}

// The modes with a streaming path, as a list for messages.
std::string streaming_modes() {
    std::vector<std::string_view> names;
    for (const ModeSpec& spec : mode_specs())
        if (spec.streams) names.push_back(spec.name());
    std::string list;
    for (std::size_t i = 0; i < names.size(); ++i)
        list += fmt::format("{}{}", i == 0 ? "" : i + 1 == names.size() ? " and " : ", ", names[i]);
    return list;
}

// --head H (of several heads): head H's part alone, of the whole summary's heads or of a run of its lines.
template <typename Heads>
void keep_head(Heads& heads, int head) {
    std::erase_if(heads, [&](const auto& h) { return h.head != head; });
}

SummaryRows only_head(SummaryRows rows, int head) {
    keep_head(rows.heads, head);
    return rows;
}

// `read_again` is called once the summary is computed, before anything is written, and for
// JSON Lines, which are written as computed, before each run of lines too.
void run_summary(const Problem& problem, const TraceRequest& request, Outputs& outputs, std::string note,
                 const std::function<void()>& read_again, std::ostream* html) {
    std::ostream& out = outputs.main();
    const ModeSpec& mode = mode_spec(request.trace.mode);
    if (!mode.streams)
        throw UsageError(fmt::format("--summary covers modes {}; {} traces are small", streaming_modes(), mode.name()));
    SummaryOptions options;
    options.top = request.top;
    options.context = std::find(request.render.stages.begin(), request.render.stages.end(), StageId::context) !=
                      request.render.stages.end();
    const WorkShape shape = work_shape(problem, request.trace);
    require_head(request.render.head, shape.heads);
    require_memory(summary_bytes(shape, request.trace.dtype, options.context, options.top), request.max_memory,
                   problem.origin, "the summary of this input", "");
    require_time(summary_seconds(shape), request.max_seconds, problem.origin, fmt::format("the summary of {} tokens", shape.rows),
                 "");
    ProgressBar progress("attention");
    options.progress = [&](std::size_t done, std::size_t total) { progress.update(done, total); };
    // JSON Lines: each run of finished rows is written at once, and reaches a pipe or a
    // terminal as it comes instead of being held to the end. A row whose numbers overflowed
    // stops the lines; summarize() then says which entry it was.
    const bool lines = request.render.format == Format::jsonl;
    const bool one_head = request.render.head > 0 && shape.heads > 1;  // --head H: that head's lines alone
    bool stopped = false;
    if (lines)
        options.rows_done = [&](const Summary& header, const SummaryRows& rows) {
            if (stopped) return;
            // Rows read in place may have been read as zeros, should the file have been
            // shortened since the last check: none of them is written then.
            read_again();
            stopped = write_summary_lines(header, one_head ? only_head(rows, request.render.head) : rows, out) < rows.count;
            outputs.main_output().drain();
        };
    Summary summary = summarize(problem, request.trace, options);
    read_again();
    if (lines) return;  // written as computed
    if (!note.empty()) summary.notes.push_back(std::move(note));
    if (one_head) keep_head(summary.per_head, request.render.head);
    if (html) write_html(summary, request.render, *html);
    render(summary, request.render, out);
}

// The trace path: every stage, for the tables, JSON, --check and --svg.
void run_full_trace(const Problem& problem, const TraceRequest& request, std::ostream& out, std::ostream* svg,
                    std::ostream* html) {
    const ModeSpec& mode = mode_spec(request.trace.mode);
    check_stages_of(request.render.stages, mode);
    const WorkShape shape = work_shape(problem, request.trace);
    const AlsoWritten also{svg != nullptr, html != nullptr};
    if (request.backward)
        require_memory(backward_bytes(shape, request.trace.dtype, request.render, also, request.backward->step_size.has_value()),
                       request.max_memory, problem.origin, "the backward pass of this input",
                       mode.streams ? "--summary --backward gives the parameters' gradients without the n×n matrices" : "");
    else
        require_memory(trace_bytes(shape, request.trace.dtype, request.render, also), request.max_memory, problem.origin,
                       "a full trace of this input", "--summary gives per-query results without the n×n matrices");
    require_time(trace_seconds(shape, request.render.format, also), request.max_seconds, problem.origin,
                 "a full trace of this input", mode.streams ? "--summary is much faster" : "");
    const Trace result = trace(problem, request.trace);
    require_head(request.render.head, result.heads);
    if (request.backward) return run_backward(problem, request, result, out, svg, html);
    if (svg) render_svg(result, request.svg, *svg);
    if (html) write_html(result, nullptr, request.render, *html);
    if (request.check) {
        const CheckReport report = check_trace(result);
        if (const auto failure = report.first_failure())
            throw DataError(fmt::format("{}: check failed: {}", result.origin, *failure));
        render(result, report, request.render, out);
        return;
    }
    render(result, request.render, out);
}

}  // namespace

void run_trace(TraceRequest request, Outputs& outputs) {
    check_request(request);
    // Opened before any work, so that a path that cannot be written, or that names the main
    // output's file, is refused at once; committed with the rest.
    std::ostream* svg = request.svg_path ? &outputs.add(*request.svg_path) : nullptr;
    std::ostream* html = request.html_path ? &outputs.add(*request.html_path) : nullptr;
    // No input named: what is piped in, else the built-in example (also for an empty pipe,
    // which is what a notebook's kernel gives: said on stderr once the run has succeeded).
    bool empty_stdin = false;
    const InputText input = named_piped_or_example(request.input_path, request.example, request.max_input, &empty_stdin);
    const auto said = [&] {
        if (empty_stdin) std::fprintf(stderr, "attntrace: note: %s\n", empty_pipe_note("trace").c_str());
    };
    // A summary in float32 may read a binary input's float32 embeddings where the file has them.
    const bool may_summarise = request.summary || (request.render.format == Format::table && !request.html_path &&
                                                   request.render.stages.empty() && !full_trace_option(request));
    request.load.float32_in_place = may_summarise && request.trace.dtype == Dtype::float32;
    Problem problem = load_input(input, request.max_memory, with_max_input(request.load, request.max_input));
    request.trace.mode = resolve_mode(problem, request.mode);
    // A query that names no token is a usage error, found before any work is done.
    if (request.trace.query) (void)find_query_row(query_labels(problem), *request.trace.query);

    // Rows read in place are read again by the summary: a file shortened meanwhile is found
    // before anything is written from them.
    const auto summary_of = [&](std::string note) {
        run_summary(problem, request, outputs, std::move(note), [&] { input.require_unchanged(); }, html);
    };
    if (request.summary && request.backward) {
        run_stream_backward(problem, request, outputs.main(), [&] { input.require_unchanged(); });
        return said();
    }
    if (request.summary) {
        summary_of("");
        return said();
    }
    // A table of more than summary_threshold columns is unreadable: show the summary instead.
    const std::size_t n = token_count(problem);
    if (may_summarise && n > summary_threshold) {
        summary_of(fmt::format("{} tokens make tables too wide to read, so this is the summary (--summary); --stage "
                               "NAME shows a stage's table, --format json every number",
                               n));
        return said();
    }
    if (auto* single = std::get_if<SingleSequenceInput>(&problem.input)) single->sequence.materialise();
    input.require_unchanged();  // the rows left in place were read again, just now
    run_full_trace(problem, request, outputs.main(), svg, html);
    said();
}

void list_examples(std::ostream& out) {
    for (const auto& example : examples()) {
        const Problem problem = load_problem(example.json, fmt::format("example:{}", example.name));
        // The description of the mode the example runs in, else its first.
        const std::string mode(to_string(resolve_mode(problem, std::nullopt)));
        std::string text = problem.description.for_use(mode), use = mode;
        if (text.empty() && !problem.description.by_use.empty()) std::tie(use, text) = problem.description.by_use.front();
        out << fmt::format("{:<20} {:<10} {}\n", example.name, use, text);
    }
}

}  // namespace attntrace
