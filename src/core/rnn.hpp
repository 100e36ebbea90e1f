// The RNN encoder the lectures start from (Elman's): its parameters, read from an input's
// "rnn" object or drawn from a seed. Plain data.
#pragma once

#include "core/matrix.hpp"

namespace attntrace {

// h_t = tanh(x_t·W_x + h_{t−1}·W_h + b_h), h_0 = 0; x_t a row of d_in numbers, h_t of d_h.
struct RnnWeights {
    Matrix W_x;  // d_in × d_h
    Matrix W_h;  // d_h × d_h
    Vector b_h;  // d_h
};

}  // namespace attntrace
