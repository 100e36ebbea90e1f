// Bahdanau (additive) attention: a decoder looking back at every encoder state.
//
// Paper form (column vectors, Bahdanau et al. 2014):   e_tj = v_aᵀ tanh(W_a s_{t−1} + U_a h_j)
// attntrace form (row vectors, as everywhere here):    e_tj = v_a · tanh(s_t·W_a + h_j·U_a)
// α_t = softmax_j(e_tj),  c_t = Σ_j α_tj h_j.
#pragma once

#include "attention/stage.hpp"
#include "attention/trace.hpp"
#include "input/problem.hpp"

#include <string>

namespace attntrace {

// Stage names of bahdanau mode, in pipeline order.
inline constexpr std::string_view bahdanau_stages[] = {
    "encoder_states", "decoder_states", "projected_decoder", "projected_encoder", "scores",
    "scaled",         "masked",         "weights",           "context"};

Trace trace_bahdanau(const EncoderDecoderInput& input, const TraceOptions& options,
                     const std::string& origin = "input");

}  // namespace attntrace
