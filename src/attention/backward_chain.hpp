// What the backward pass of each mode shares (attention/backward.cpp): the recorder of
// backward stages, the symbols formulas use, and the chain every mode runs from the context
// back to the scores (weighted sum, softmax, mask, scale). Internal to the backward pass.
#pragma once

#include "core/gradients.hpp"
#include "core/stage.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace attntrace::backward_detail {

// Appends backward stages, each with the id, head, labels, mask and shape of its forward
// stage, refusing numbers that are not finite.
class GradientRecorder {
public:
    GradientRecorder(Gradients& gradients, const Trace& trace) : gradients_(gradients), trace_(trace) {}

    Stage& add(const Stage& forward, std::string title, std::string formula, Matrix data);
    // A step the forward pass skipped passes its gradient through unchanged, and says why.
    Stage& pass(const Stage& forward, std::string title, std::string formula, Matrix data, std::string reason);
    // dL/d(the trace's parameter `name`), shaped and labelled as the parameter.
    Stage& parameter(std::string_view name, std::string formula, Matrix data);

    const Trace& trace() const { return trace_; }

private:
    Gradients& gradients_;
    const Trace& trace_;
};

// How a mode's formulas name the matrices of one head: "A", "S''" with one head, "A_2", …
// with several; Bahdanau's "α", "e''", "c", "H".
struct Symbols {
    std::string context, weights, masked, scaled, scores, values, queries, keys;
};
Symbols single_symbols(int head);  // 0: one head
Symbols encoder_decoder_symbols();

// The forward stages of the shared chain, for one head.
struct CoreStages {
    const Stage& values;  // V (the encoder states in bahdanau mode)
    const Stage& scores;
    const Stage& scaled;
    const Stage& masked;
    const Stage& weights;
    const Stage& context;
};

// The gradients of the shared chain. `context` and `values` are empty for a focus loss,
// whose chain starts at the weights.
struct CoreGradients {
    Matrix context, weights, masked, scaled, scores, values;
};

// From dL/dZ (null for a focus loss, whose dL/dA `focus` gives) back to dL/dS.
CoreGradients core_backward(const Trace& trace, const CoreStages& stages, const Matrix* d_context,
                            const Matrix* d_focus);

// The chain's stages recorded, context to scores; `context_formula` says where dZ came from.
// `values` is recorded by the caller (with several heads it sums over heads).
void record_core(GradientRecorder& out, const CoreStages& stages, const CoreGradients& d, const Symbols& s,
                 const std::string& context_formula);

// dL/dA of a focus loss on `weights`: −1 / A[i, j] at (i, j), 0 elsewhere.
Matrix focus_seed(const Stage& weights, const Loss& loss);

// The result the sum and target losses read: the output when the run has one, else the context.
const Stage& result_stage(const Trace& trace);
// dL/d(result) of a sum or target loss: ones, or Y − T.
Matrix result_seed(const Stage& result, const Loss& loss);

// The modes' own parts, from their scores back to their inputs.
void backward_single_sequence(const Trace& trace, Gradients& gradients);
void backward_encoder_decoder(const Trace& trace, Gradients& gradients);

}  // namespace attntrace::backward_detail
