// The backward pass: how a loss L on a trace changes with every number that made it. It reads
// like the forward pipeline run in reverse, one gradient per forward stage and per parameter
// (core/gradients.hpp), each computed from the trace's own stages and parameters in float64:
//
//   dZ (the loss's seed; with several heads d(output) → dW_o, db_o → d(concat) → each head's dZ_h)
//   dA  = dZ·Vᵀ                              dV = Aᵀ·dZ
//   dS″ = A ⊙ (dA − rowsum(dA ⊙ A)) / T      (softmax at temperature T; attention/backward_steps.hpp)
//   dS′ = dS″, 0 where the mask hid a score  (the hidden scores were replaced by a constant)
//   dS  = dS′ / scale
//   dQ  = dS·K                               dK = dSᵀ·Q    (RoPE: turned back by −φ; GQA: dK, dV
//                                                           summed over the heads that share them)
//   dW_q = Xᵀ·dQ, db_q = column sums of dQ (likewise K, V), X = LN(x) with ln_1
//   dX  = dQ·W_qᵀ + dK·W_kᵀ + dV·W_vᵀ        (plain mode: dQ + dK + dV; then ln_1's backward;
//                                             sinusoidal positions: dE = dX)
// Bahdanau's additive score goes back through tanh into dW_a, dU_a, dv_a and both state
// sequences (the encoder states also receive Aᵀ·dc as the values); Luong's dot and general
// likewise.
//
// Pure math: no I/O, no printing.
#pragma once

#include "core/gradients.hpp"
#include "core/stage.hpp"

namespace attntrace {

// L on the trace's own numbers. Throws UsageError for a focus loss outside the weights (a row,
// a column or a head the run does not have), DataError for a focus weight that is not positive
// (a hidden key: −log 0) or a target of another shape than the result.
double loss_value(const Trace& trace, const Loss& loss);

// Every gradient of `loss` on `trace`. Throws as loss_value does, and DataError when a gradient
// overflows.
Gradients backward(const Trace& trace, const Loss& loss);

}  // namespace attntrace
