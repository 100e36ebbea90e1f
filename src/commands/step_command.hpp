// `attntrace step [INPUT]`: the trace on a terminal, stage by stage and cell by cell, recomputed
// as the learner changes it (stepper/); or, headless, the frames a script of keys gives
// (--keys), or one line of text per key (--plain).
#pragma once

#include "attention/trace_options.hpp"
#include "input/limits.hpp"
#include "input/load.hpp"
#include "render/render.hpp"
#include "util/memory.hpp"
#include "util/output.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace attntrace {

struct StepRequest {
    std::optional<std::string> input_path;  // a file, "-" or example:NAME; absent: as trace chooses
    std::optional<Mode> mode;
    TraceOptions trace;
    RenderOptions render;  // digits; the format must be the table's
    MemoryLimit max_memory;
    double max_seconds = 0;
    std::uint64_t max_input = default_max_input_bytes;
    LoadOptions load;
    std::optional<std::string> keys;  // --keys SCRIPT: replayed, each frame written as text
    bool plain = false;               // --plain: a line of text per key, no screen
    std::optional<std::string> size;  // --size WxH of the frames --keys writes (default 80x24)
    bool to_file = false;             // -o FILE was given
    std::optional<std::string> stage;  // --stage NAME: the stage the cursor starts on
    std::optional<std::string> row;    // -q ROW: the row it starts on (a token or a 1-based position)
    std::optional<std::string> backward;  // --backward LOSS: focus:QUERY=KEY or sum, its gradients after the stages
};

// Returns the exit status: 0, or 130 after Ctrl-C. Throws UsageError (no terminal and no
// --keys, a bad script or size) or DataError as trace does.
int run_step(StepRequest request, Outputs& outputs);

}  // namespace attntrace
