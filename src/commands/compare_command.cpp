#include "commands/compare_command.hpp"

#include "attention/compare.hpp"
#include "attention/modes.hpp"
#include "attention/trace.hpp"
#include "commands/guards.hpp"
#include "core/error.hpp"
#include "input/load.hpp"
#include "input/source.hpp"
#include "render/render.hpp"

#include <fmt/format.h>

namespace attntrace {
namespace {

Trace trace_input(const std::string& path, const CompareRequest& request) {
    const InputText input = read_input(path, request.max_input);
    const Problem problem = load_input(input, request.max_memory, with_max_input(request.load, request.max_input));
    switch (family_of(problem)) {
    case ModeFamily::single_sequence: break;
    case ModeFamily::encoder_decoder:
        throw DataError(fmt::format("{}: compare reads one sentence with its embeddings, not a source "
                                    "and a target",
                                    problem.origin));
    }
    TraceOptions options = request.trace;
    options.mode = resolve_mode(problem, request.mode);
    // Two traces of this size are alive at once, at worst.
    const WorkShape shape = work_shape(problem, options);
    require_memory(2 * trace_bytes(shape, options.dtype, request.render, {}), request.max_memory, problem.origin,
                   "comparing two traces of this size", "");
    require_time(2 * trace_seconds(shape, Format::json), request.max_seconds, problem.origin,
                 "comparing two traces of this size", "");
    return trace(problem, options);
}

}  // namespace

void run_compare(CompareRequest request, std::ostream& out) {
    const Trace a = trace_input(request.a, request);
    const Trace b = trace_input(request.b, request);
    if (a.mode != b.mode)
        throw UsageError(fmt::format("the inputs ask for different modes ({} and {}): choose one with --mode",
                                     to_string(a.mode), to_string(b.mode)));
    write_comparison(a, b, request.token, request.render, out);
}

void write_comparison(const Trace& a, const Trace& b, const std::string& token, const RenderOptions& render_options,
                      std::ostream& out) {
    render(compare_contexts(a, b, token), render_options, out);
}

}  // namespace attntrace
