// `attntrace check-answers INPUT ANSWERS`: a learner's own numbers for some stages, compared
// with the trace of the same input and options; the first difference of each stage, and the
// classic mistake that reproduces all of a stage's numbers when one does (practice/mistakes).
#pragma once

#include "attention/trace.hpp"
#include "input/limits.hpp"
#include "input/load.hpp"
#include "practice/answers.hpp"
#include "practice/mistakes.hpp"
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

// One given stage against the trace.
struct StageVerdict {
    const GivenStage* given = nullptr;
    const Stage* stage = nullptr;
    std::size_t checked = 0;
    bool agree = true;
    struct Difference {
        Eigen::Index row = 0, col = 0;
        double expected = 0;
        bool expected_masked = false;
        GivenNumber given;
        double tolerance = 0;
    };
    std::optional<Difference> first;   // the first number that differs, in the order written
    std::vector<Diagnosis> diagnoses;    // the known mistakes that reproduce every number given (the likeliest first)
    bool equivalent_masking = false;     // agrees, and so would masking after softmax and renormalising
    std::optional<WorkedExample> worked; // no known mistake: the first differing row worked through
    std::optional<WorkedProjection> worked_projection;  // the same, for a row of queries, keys, values or the output
};

// How far a number written with `decimals` decimals may be from `expected`: half a unit of its
// last place, and never less than the rounding of the working precision.
double tolerance_for(int decimals, double expected, Dtype dtype);

// The tolerance as the reports say it: " (±5e-05 for 4 decimals)", or, where the working
// precision's allowance is the wider, what each gives; empty for a value that is not a number.
std::string tolerance_text(int decimals, double expected, Dtype dtype);

// Every given stage checked against `trace`, in pipeline order. Throws DataError for a stage
// the run does not have or numbers outside its shape. `layout`: how the input stores its weights.
std::vector<StageVerdict> check_answers(const Trace& trace, const std::vector<GivenStage>& given,
                                        WeightLayout layout = WeightLayout::in_out);

// Checks, writes the report; returns the exit status (0: everything agrees, 1: something differs).
int run_check_answers(CheckAnswersRequest request, std::ostream& out);

}  // namespace attntrace
