// `attntrace compare A B --token WORD`: one word's context vector in two inputs.
#pragma once

#include "attention/trace.hpp"
#include "input/limits.hpp"

#include <cstdint>
#include "render/render.hpp"

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
    std::uint64_t max_memory = 0;  // two traces needing more are refused
};

void run_compare(CompareRequest request, std::ostream& out);

}  // namespace attntrace
