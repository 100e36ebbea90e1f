// The main job: input → load → trace → render.
#pragma once

#include "attention/trace_options.hpp"
#include "commands/backward_request.hpp"
#include "input/limits.hpp"
#include "input/load.hpp"
#include "render/render.hpp"
#include "render/svg.hpp"
#include "util/memory.hpp"
#include "util/output.hpp"

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace attntrace {

struct TraceRequest {
    std::optional<std::string> input_path;  // a file or "-"; neither this nor example: the default
    std::optional<std::string> example;
    std::optional<Mode> mode;               // --mode; absent: the file's mode, else its natural one
    TraceOptions trace;                     // mode filled in from the above
    std::vector<std::string> stages;        // --stage, as given: checked, then render.stages
    RenderOptions render;
    bool check = false;                     // verify the trace's invariants instead of printing it
    std::optional<std::string> svg_path;    // also write a heatmap of svg.stage here
    std::string svg_stage = "weights";      // --svg-stage, as given: checked, then svg.stage
    std::optional<std::string> html_path;   // --html: also write the page of the trace (or summary) here
    SvgOptions svg;                         // svg.shade comes from render.shade
    bool summary = false;                   // the streaming path: one line per query
    std::size_t top = 3;                    // keys per query in the summary
    MemoryLimit max_memory;                 // a full trace needing more is refused
    double max_seconds = 0;                 // work estimated to take longer is refused (0: no limit)
    std::uint64_t max_input = default_max_input_bytes;
    LoadOptions load;  // --tokens, --layout, --from … (max_input set from the field above)
    std::optional<BackwardRequest> backward;  // --backward LOSS: the gradients too (commands/backward_run)
};

// Tables of more tokens than this switch to the summary by themselves.
inline constexpr std::size_t summary_threshold = 64;

// Throws UsageError or DataError; writes nothing before the trace is complete. The output
// goes to outputs.main(), the SVG heatmap (--svg) to a file added to `outputs`.
void run_trace(TraceRequest request, Outputs& outputs);

// One line per built-in example: its name and description.
void list_examples(std::ostream& out);

}  // namespace attntrace
