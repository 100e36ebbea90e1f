// Position information. Attention compares every query with every key whatever their places,
// so without help it cannot tell "dog bites man" from "man bites dog". Two ways to tell it:
//
// Sinusoidal encodings (Vaswani et al., 2017) are added to the embeddings before anything
// else. Position p gets the vector PE(p), n × d for n tokens of d numbers, with
//   PE(p, 2i)     = sin(p·ω_i)
//   PE(p, 2i + 1) = cos(p·ω_i),   ω_i = 10000^(−2i/d),   i = 0, 1, …
// (indices from 0; an odd d ends on a sine).
//
// Rotary embeddings, RoPE (Su et al., 2021), leave the embeddings alone and turn each query
// and key after the projections, in each head's d_head numbers. Numbers i and i + h,
// h = d_head/2, form pair i (the "rotate half" layout of GPT-NeoX and LLaMA), which turns by
// the angle φ = p·θ_i, θ_i = 10000^(−2i/d_head):
//   q'[i]     = q[i]·cos φ − q[i + h]·sin φ
//   q'[i + h] = q[i + h]·cos φ + q[i]·sin φ
// Turning q by p·θ and k by r·θ gives the same dot product as turning k alone by (r − p)·θ, so
// a score depends on the two positions only through their distance.
//
// Positions count from 0, or from --position-offset.
#pragma once

#include "attention/trace_options.hpp"
#include "core/matrix.hpp"
#include "core/problem.hpp"
#include "core/types.hpp"

#include <cstdint>
#include <string>

namespace attntrace {

// The position information a run uses, after the option and the input are weighed.
struct PositionSetting {
    PositionScheme scheme = PositionScheme::none;
    std::int64_t first = 0;     // the position of the first token
    bool from_option = false;   // --positions given (else the input's "positions", or none)

    bool any() const { return scheme != PositionScheme::none; }
};

// --positions, else the input's "positions", else none; --position-offset's first position.
// Throws UsageError for --position-offset without position information.
PositionSetting position_setting(const SingleSequenceInput& input, const TraceOptions& options);

// ω_i = 10000^(−2i/d): how fast pair i of a d-number sinusoidal encoding turns (i from 0).
double sinusoid_frequency(Eigen::Index i, Eigen::Index d);

// θ_i = 10000^(−2i/d_head): how fast pair i of a RoPE rotation turns (i from 0).
double rotary_frequency(Eigen::Index i, Eigen::Index d_head);

// PE: n × d, row r for position first + r, as above.
Matrix sinusoidal_encoding(Eigen::Index n, Eigen::Index d, std::int64_t first);

// φ: n × d_head/2, row r holding the angles (first + r)·θ_i of its pairs, in radians.
Matrix rotary_angles(Eigen::Index n, Eigen::Index d_head, std::int64_t first);

// x (n × d_head, d_head even) with row r's pairs (i, i + d_head/2) turned by angles(r, i).
// The sines and cosines are taken in double and rounded once to T.
template <typename T>
MatrixT<T> rotate_half(const MatrixT<T>& x, const Matrix& angles);

// Refuses RoPE on heads of an odd size (a pair needs two numbers): UsageError when an option
// asked for it or for the heads, DataError when the input did.
void require_even_head(const PositionSetting& positions, Eigen::Index d_head, int heads, bool heads_from_option,
                       bool weights_given, const std::string& origin);

// "sinusoidal positions", "RoPE positions from 100": the scheme as headings name it ("" for none).
std::string positions_text(PositionScheme scheme, std::int64_t first);

}  // namespace attntrace
