// check-answers' judgement: a learner's numbers for some stages against the trace of the same
// input and options; the first difference of each stage, and the classic mistakes that
// reproduce all of a stage's numbers when one does (practice/mistakes). The tolerance a
// number written with some decimals is held to is the quiz's too.
#pragma once

#include "core/stage.hpp"
#include "core/worked.hpp"
#include "practice/answers.hpp"
#include "practice/mistakes.hpp"

#include <optional>
#include <string>
#include <vector>

namespace attntrace {

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

// What check-answers reports (render/answers_report.cpp): the verdicts on the stages of `trace`.
struct AnswerReport {
    const Trace& trace;
    const std::vector<StageVerdict>& verdicts;
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

}  // namespace attntrace
