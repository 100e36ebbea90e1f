#include "commands/check_answers_command.hpp"

#include "commands/guards.hpp"
#include "core/error.hpp"
#include "input/examples.hpp"
#include "input/source.hpp"

#include <algorithm>

namespace attntrace {

int run_check_answers(CheckAnswersRequest request, std::ostream& out) {
    if (!request.trace.mask_method.standard())
        throw UsageError("check-answers checks against the right way of masking (−∞ before the softmax); it names "
                         "--mask-fill and --mask-after-softmax itself when a learner's numbers show them");
    require_format(request.render.format, Product::answers);
    const InputText input = request.input_path ? read_input(*request.input_path, request.max_input)
                                               : example_input(std::string(default_example));
    const Problem problem = load_input(input, request.max_memory, with_max_input(request.load, request.max_input));
    request.trace.mode = resolve_mode(problem, request.mode);
    const WorkShape shape = work_shape(problem, request.trace);
    // The trace, a copy of its stages, one recomputation under a mistake at a time, and the
    // report: no table of the trace, but a row worked through (its projections' sums and its
    // scores, weights and mix, about 26 bytes a number written).
    const double worked_row = 3 * shape.d_in * std::max(shape.d_k, shape.d_v) + shape.cols * (4 + shape.d_k + shape.d_v);
    const std::uint64_t traced_bytes = 2 * trace_held_bytes(shape, request.trace.dtype) +
                                       mistake_pass_bytes(shape.rows, shape.cols, shape.d_in, shape.d_k, shape.d_v) +
                                       static_cast<std::uint64_t>(26 * worked_row);
    require_memory(traced_bytes, request.max_memory, problem.origin, "checking answers against a trace of this size", "");
    require_time(2 * trace_seconds(shape, Format::json) +
                     mistake_search_seconds(shape.rows, shape.cols, shape.d_in, shape.d_k, shape.d_v, shape.heads),
                 request.max_seconds, problem.origin,
                 "checking answers against a trace of this size (and, where a stage differs, against each known mistake)",
                 "");
    const InputText answers_text = read_input(request.answers_path, request.max_input);
    // The answers are held beside the trace: what they keep is charged on top of its estimate.
    MemoryBudget budget(request.max_memory, answers_text.origin);
    budget.charge(traced_bytes);
    const std::vector<GivenStage> given = read_answers(answers_text, &budget);
    const Trace traced = trace(problem, request.trace);
    const std::vector<StageVerdict> verdicts = check_answers(traced, given, problem.layout);
    render(AnswerReport{traced, verdicts}, request.render, out);
    return std::all_of(verdicts.begin(), verdicts.end(), [](const StageVerdict& v) { return v.agree; }) ? 0 : 1;
}

}  // namespace attntrace
