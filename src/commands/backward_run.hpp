// The trace command's backward pass (--backward LOSS): the loss resolved against the trace,
// the gradients, -q's row, --step-size's step, --check's comparison with central
// differences, and their rendering. trace_command calls these two at their places.
#pragma once

#include "commands/trace_command.hpp"
#include "core/problem.hpp"
#include "core/stage.hpp"

#include <functional>
#include <ostream>

namespace attntrace {

// Before anything is read: the gradients that -s and --svg-stage name (d_NAME) are taken out
// of their lists into request.backward. Throws UsageError for a gradient without --backward,
// an unknown one, or options that do not go together.
void take_gradient_stages(TraceRequest& request);

// The backward pass of `trace` as `request` asks (request.backward is set), written to `out`;
// the SVG heatmap (--svg, of a stage or of a gradient) to `svg` when given. Throws UsageError
// or DataError before writing anything.
void run_backward(const Problem& problem, const TraceRequest& request, const Trace& trace, std::ostream& out,
                  std::ostream* svg, std::ostream* html = nullptr);

// --summary --backward LOSS: the streaming backward pass of a single-sequence run (plain,
// self, causal), guarded by --max-memory and --max-time, its loss, parameter gradients and
// per-token ‖dL/dx_i‖ written to `out` once `read_again` (called when the gradients are
// computed, before anything is written) has returned. Throws UsageError for what the
// streaming backward pass does not take, DataError for the rest, before writing anything.
void run_stream_backward(const Problem& problem, const TraceRequest& request, std::ostream& out,
                         const std::function<void()>& read_again);

// --check moves every parameter and input entry four times and traces each time: refused
// above this many entries.
inline constexpr std::size_t max_checked_entries = 5000;

}  // namespace attntrace
