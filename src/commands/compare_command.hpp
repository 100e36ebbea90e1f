// `attntrace compare A B --token WORD`: one word's context vector in two inputs.
#pragma once

#include "attention/trace_options.hpp"
#include "input/limits.hpp"
#include "input/load.hpp"

#include <cstdint>
#include "render/render.hpp"
#include "util/memory.hpp"

#include <optional>
#include <ostream>
#include <string>

namespace attntrace {

struct CompareRequest {
    std::string a, b;              // paths, "-" or example:NAME
    std::string token;
    std::optional<Mode> mode;      // absent: each input's own mode (they must agree)
    TraceOptions trace;
    RenderOptions render;
    std::uint64_t max_input = default_max_input_bytes;
    LoadOptions load;  // --tokens, --layout, --from … (max_input set from the field above)
    MemoryLimit max_memory;       // two traces needing more are refused
    double max_seconds = 0;       // work estimated to take longer is refused (0: no limit)
};

void run_compare(CompareRequest request, std::ostream& out);

// Everything after tracing: the comparison of `token` in two traces of one mode, rendered.
void write_comparison(const Trace& a, const Trace& b, const std::string& token, const RenderOptions& render,
                      std::ostream& out);

}  // namespace attntrace
