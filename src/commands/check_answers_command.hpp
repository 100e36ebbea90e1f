// `attntrace check-answers INPUT ANSWERS`: a learner's own numbers for some stages, compared
// with the trace of the same input and options; the first difference of each stage, and the
// classic mistake that reproduces all of a stage's numbers when one does (practice/verdicts).
#pragma once

#include "attention/trace.hpp"
#include "input/limits.hpp"
#include "input/load.hpp"
#include "practice/verdicts.hpp"
#include "render/render.hpp"
#include "util/memory.hpp"

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace attntrace {

struct CheckAnswersRequest {
    std::optional<std::string> input_path;  // absent: the built-in example your_journey
    std::string answers_path;
    std::optional<Mode> mode;
    TraceOptions trace;
    RenderOptions render;
    std::uint64_t max_input = default_max_input_bytes;
    LoadOptions load;
    MemoryLimit max_memory;
    double max_seconds = 0;
};

// Checks, writes the report; returns the exit status (0: everything agrees, 1: something differs).
int run_check_answers(CheckAnswersRequest request, std::ostream& out);

}  // namespace attntrace
