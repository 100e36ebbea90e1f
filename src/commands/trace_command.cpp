#include "commands/trace_command.hpp"

#include "attention/check.hpp"
#include "error.hpp"
#include "input/examples.hpp"
#include "input/load.hpp"
#include "input/source.hpp"
#include "render/svg.hpp"
#include "util/output.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

namespace attntrace {
namespace {

void check_stage_names(const std::vector<std::string>& requested, Mode mode) {
    const auto known = stage_names(mode);
    for (const auto& name : requested)
        if (std::find(known.begin(), known.end(), name) == known.end())
            throw UsageError(fmt::format("--stage: no stage \"{}\" in mode {} (stages: {})", name,
                                         to_string(mode), fmt::join(known, ", ")));
}

}  // namespace

void run_trace(TraceRequest request, std::ostream& out) {
    // Names no mode knows are refused before the input is read.
    for (const auto& name : request.render.stages) {
        bool known = false;
        for (const Mode mode : {Mode::plain, Mode::bahdanau})
            for (const auto& stage : stage_names(mode)) known = known || stage == name;
        if (!known)
            throw UsageError(fmt::format("--stage: no stage named \"{}\" (stages: {}; bahdanau "
                                         "mode: {})",
                                         name, fmt::join(stage_names(Mode::plain), ", "),
                                         fmt::join(stage_names(Mode::bahdanau), ", ")));
    }
    if (request.render.format == Format::csv && (request.render.explain || request.trace.query))
        throw UsageError("--explain and --query need room for text: use --format table, markdown or json");
    const InputText input = request.input_path ? read_input(*request.input_path)
                                               : example_input(request.example.value_or(
                                                     std::string(default_example)));
    const Problem problem = load_problem(input.text, input.origin);
    request.trace.mode = resolve_mode(problem, request.mode);
    check_stage_names(request.render.stages, request.trace.mode);
    const Trace result = trace(problem, request.trace);
    if (request.svg_path) {
        std::ostringstream svg;
        render_svg(result, svg);
        write_file_atomically(*request.svg_path, svg.view());
    }
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
