// `attntrace compare A B --token WORD`: one word's context vector in two inputs.
#pragma once

#include "attention/trace.hpp"
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
};

void run_compare(CompareRequest request, std::ostream& out);

}  // namespace attntrace
