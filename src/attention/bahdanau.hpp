// Bahdanau (additive) attention: a decoder looking back at every encoder state, and Luong's
// dot and general scores beside it (--score).
//
// Paper form (column vectors, Bahdanau et al. 2014):   e_tj = v_aᵀ tanh(W_a s_{t−1} + U_a h_j)
// attntrace form (row vectors, as everywhere here):    e_tj = v_a · tanh(s_t·W_a + h_j·U_a)
// α_t = softmax_j(e_tj),  c_t = Σ_j α_tj h_j.
#pragma once

#include "attention/trace_options.hpp"
#include "core/problem.hpp"
#include "core/stage.hpp"

#include <string>

namespace attntrace {

// The mode table's trace function: the input must hold a source and a target.
Trace trace_bahdanau_problem(const Problem& problem, const TraceOptions& options);

// The same on an encoder–decoder input alone (tests call this directly).
Trace trace_bahdanau(const EncoderDecoderInput& input, const TraceOptions& options, const std::string& origin = "input");

}  // namespace attntrace
