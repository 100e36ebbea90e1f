// The backward pass in every format: a trace, then its loss and gradients stage by stage in
// reverse (render/backward_table.cpp, _markdown, _csv, _json), -q's row worked through and
// a learning step (backward_lines.cpp), --explain's sentences (backward_explain.cpp) and
// --check's comparison with central differences (backward_check.cpp). Like every renderer,
// these only format what they are given.
#pragma once

#include "attention/gradient_check.hpp"
#include "attention/learning.hpp"
#include "core/gradients.hpp"
#include "render/render.hpp"

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace attntrace {

struct BackwardRun {
    const Trace& trace;
    const Gradients& gradients;
    std::vector<const Stage*> shown;     // the gradients to show, in the order they were recorded
    bool forward_shown = true;           // the trace's own stages too (false: -s named gradients only)
    const BackwardRow* row = nullptr;    // -q: its row worked through
    const LearningStep* step = nullptr;  // --step-size: one step, and the trace after it
    std::vector<StageId> after_stages;   // the stages of the trace after the step to show
};

// The trace with its backward pass, in options.format (options.stages: the forward stages).
void render_backward(const BackwardRun& run, const RenderOptions& options, std::ostream& out);

// --check with --backward: every parameter and input entry against its central difference.
// `tolerance`: the largest relative error that passes.
void render_gradient_check(const Trace& trace, const Gradients& gradients, const GradientCheck& check, double tolerance,
                           const RenderOptions& options, std::ostream& out);

// --explain: what a gradient means for this run, one sentence a line.
std::vector<std::string> gradient_explanation(const Trace& trace, const Gradients& gradients, const Stage& gradient);

// "L = −log A[smiled, teacher] = 2.0794": the loss with its value.
std::string loss_line(const Gradients& gradients, int digits);

// The table and markdown formats' text of -q's row: the lines before its Jacobian, the
// Jacobian as a table (n ≤ max_jacobian_keys), the lines after.
struct RowText {
    std::vector<std::string> before, after;
    std::optional<Stage> jacobian;
};
RowText backward_row_text(const BackwardRow& row, int digits);
// A learning step's figures: the loss before and after, the focus weight, an overshoot.
std::vector<std::string> step_lines(const LearningStep& step, int digits);
// "step · η = 0.1 · …": the heading of a learning step.
std::string step_heading(const LearningStep& step);

// The options of the forward part: options.stages, or no stage at all when -s named gradients only.
RenderOptions forward_options(const BackwardRun& run, const RenderOptions& options);
// The stages of the trace after a step that are shown, in its order (options.head: that head's).
std::vector<const Stage*> after_shown(const BackwardRun& run, const RenderOptions& options);
// A forward stage's heading as the trace's: "weights · head 2 · 6×6 · A = softmax(S″)".
std::string stage_heading(const Stage& stage);

// The parameters after a step as tables: "W_q" … with the formula W_q − η·dW_q.
std::vector<Stage> updated_tables(const LearningStep& step);

// The trace's heading for a gradient: "d_weights · head 2 · 6×6 · dA = dZ·Vᵀ".
std::string gradient_heading(const Stage& gradient);

}  // namespace attntrace
