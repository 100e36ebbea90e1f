// `attntrace decode INPUT`: generation with a KV cache, step by step (attention/decode.hpp).
#pragma once

#include "attention/decode.hpp"
#include "attention/trace_options.hpp"
#include "input/limits.hpp"
#include "input/load.hpp"
#include "render/render.hpp"
#include "util/memory.hpp"

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

namespace attntrace {

struct DecodeRequest {
    std::optional<std::string> input_path;  // a file, "-" or example:NAME; absent: the default example
    std::optional<Mode> mode;               // --mode: causal or nothing (the others are refused)
    TraceOptions trace;
    DecodeOptions decode;
    RenderOptions render;
    MemoryLimit max_memory;
    double max_seconds = 0;
    std::uint64_t max_input = default_max_input_bytes;
    LoadOptions load;  // --tokens, --layout, --from … (max_input set from the field above)
};

// Throws UsageError or DataError; writes nothing before every step is computed.
void run_decode(DecodeRequest request, std::ostream& out);

}  // namespace attntrace
