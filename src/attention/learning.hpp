// What a learner is shown of the backward pass beyond its gradients: one row's softmax
// backward worked through (-q with --backward), and one step of gradient descent
// (--step-size η). Pure math on a trace and its gradients: no I/O, no printing.
#pragma once

#include "attention/trace.hpp"
#include "core/gradients.hpp"
#include "core/problem.hpp"

#include <optional>
#include <string>
#include <vector>

namespace attntrace {

// Every name -s takes for a gradient, in the order a backward pass records them: "d_" and
// the key of the forward stage or parameter (core/gradients.hpp), "d_context" … "d_inputs",
// "d_W_q" …. A run has the ones its loss reaches.
std::vector<std::string> gradient_names();
// "d_weights", "d_W_q": the name -s gives a gradient stage.
std::string gradient_name(const Stage& gradient);

// A row's Jacobian is written out with its numbers up to this many keys.
inline constexpr Eigen::Index max_jacobian_keys = 8;

// dQ's row as the weighted sum of the keys it is: dq_i = Σ_j dS_ij·k_j (RoPE: of the rotated
// keys, into the rotated query's gradient; Luong's scores: of the encoder states h_j).
struct KeyMix {
    std::string target;    // "dq", "dRoPE(q)", "ds" (Luong's dot), "d(s·W)" (Luong's general)
    std::string key;       // "k", "RoPE(k)", "x" (plain mode), "h"
    Vector d_scores;       // the row of dS (1 × n)
    Matrix keys;           // n × d: the vectors mixed
    Vector mixed;          // d_scores·keys
    Vector from_backward;  // the same row as the backward pass records it
};

// One query row of the softmax backward: the Jacobian of the row (J_jk = ∂a_j/∂s''_k) next to
// its short form, and each entry of dS'' as a product of the row's numbers.
struct BackwardRow {
    int head = 0;  // 1-based with several heads, 0 with one
    Eigen::Index row = 0;
    std::string query;
    std::vector<std::string> keys;
    Normalization normalization = Normalization::softmax;
    bool after_softmax = false;  // --mask-after-softmax: a is softmax's P, before the zeroing
    double temperature = 1;
    std::vector<bool> visible;   // the keys the row may use (all, without a mask)
    Vector weights;    // a: the row of A (P with --mask-after-softmax)
    Vector d_weights;  // dA's row (with --mask-after-softmax, 0 at the hidden keys: dP)
    double inner = 0;  // Σ_k a_k·dA_k
    double divisor = 1;  // T, or the row's sum r when dividing by it
    Matrix jacobian;   // n × n; empty for more than max_jacobian_keys keys
    Vector short_form;      // dS'' entry by entry: a_j·(dA_j − Σ)/T, or (dA_j − Σ)/r
    Vector from_jacobian;   // Jᵀ·dA (empty without the Jacobian)
    Vector from_backward;   // the row of dS'' the backward pass records
    double scale = 1;       // dS = dS'' (0 where hidden) / scale
    std::optional<KeyMix> mix;  // absent for Bahdanau's additive score
};

// Row `row` of `head` (0, or 1-based with several heads). Throws UsageError when the loss
// does not reach that head (a focus loss on another head).
BackwardRow work_backward_row(const Trace& trace, const Gradients& gradients, Eigen::Index row, int head);

// One step of gradient descent on every parameter: θ ← θ − η·dL/dθ.
struct LearningStep {
    double step_size = 0;
    double loss_before = 0, loss_after = 0;
    std::vector<Parameter> updated;  // the trace's parameters after the step
    Trace after;                     // the trace of the updated parameters (no -q)
    // A focus loss: the weight it reads, before and after.
    std::optional<double> weight_before, weight_after;
    std::string focus_query, focus_key;  // its row's and column's labels
    // When the loss went up: the largest of η/2, η/4, … (30 halvings at most) that lowers it,
    // with the loss there; absent when the loss went down, stayed, or no halving lowered it.
    std::optional<double> lowering_step, lowering_loss;
    int halvings_tried = 0;  // how many of them were tried
};

// Throws UsageError when the run has no parameters to move (plain mode, Luong's dot score).
LearningStep take_step(const Problem& problem, const TraceOptions& options, const Trace& trace,
                       const Gradients& gradients, double step_size);

}  // namespace attntrace
