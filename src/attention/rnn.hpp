// The RNN baseline of `attntrace rnn`: a plain tanh RNN encoder run over a sequence, and how much
// each input reaches the last output, by the gradient, in the RNN and in attention.
//
//   h_t = tanh(x_t·W_x + h_{t−1}·W_h + b_h),  h_0 = 0            (rows: x_t is 1 × d_in)
//   ∂h_t/∂h_{t−1} = D_t·W_hᵀ,  ∂h_t/∂x_t = D_t·W_xᵀ,  D_t = diag(1 − h_t²)
//   ∂h_n/∂x_j = D_n·W_hᵀ · D_{n−1}·W_hᵀ ⋯ D_{j+1}·W_hᵀ · D_j·W_xᵀ   (d_h × d_in)
// so the path from x_j to h_n is n − j steps long, one factor a step. In attention the path
// from any x_j to z_i is one step: z_i = Σ_j a_ij·v_j with v_j = x_j·W_v, and
//   ∂z_i/∂x_j = a_ij·W_vᵀ + a_ij·(v_j − z_i)·(W_k·q_i)ᵀ/√d_k + [j = i]·Σ_m a_im·(v_m − z_i)·(W_q·k_m)ᵀ/√d_k
// (d_v × d_in; q_i = x_i·W_q + b_q, k_m = x_m·W_k + b_k). An influence is the Frobenius norm
// of such a Jacobian.
//
// Pure math: no I/O, no printing.
#pragma once

#include "core/problem.hpp"
#include "core/rnn.hpp"
#include "core/types.hpp"

#include <cstdint>
#include <optional>

namespace attntrace {

// How drawn RNN weights start: W_x and b_h alike (W_x uniform in ±1/√d_in, b_h 0), W_h either
// uniform in ±gain/√d_h (scaled) or gain times a random orthogonal matrix (orthogonal: every
// singular value is the gain).
enum class RnnInit { scaled, orthogonal };
inline constexpr NameTable<RnnInit, 2> rnn_init_names{{{RnnInit::scaled, "scaled"}, {RnnInit::orthogonal, "orthogonal"}}};
constexpr const auto& names_of(RnnInit) { return rnn_init_names; }

// From one SplitMix64 stream seeded with `seed`: W_x, then W_h (orthogonal: the Q of a QR
// factorisation of a drawn matrix, its columns' signs made those of R's diagonal).
RnnWeights draw_rnn(std::uint64_t seed, Eigen::Index d_in, Eigen::Index d_h, RnnInit init, double gain);

// h_1 … h_n as rows (n × d_h). Throws DataError for shapes that do not fit.
Matrix rnn_hidden_states(const RnnWeights& w, const Matrix& X);

// ‖∂h_n/∂x_j‖ for j = 1 … n (`H` from rnn_hidden_states).
Vector rnn_influence(const RnnWeights& w, const Matrix& H);

// ‖∂z_i/∂x_j‖ for j = 1 … n in one head of self-attention with `p`'s W_q, W_k, W_v and biases
// (for the last token, i = n, the causal mask changes nothing). Throws DataError for W_o or
// shapes that do not fit.
Vector attention_influence(const Projections& p, const Matrix& X, Eigen::Index i);

// A least-squares line through (distance, log influence), over the tokens from the last one back
// (`influence` in token order, the last token at distance 0): `factor` = exp(slope), what one
// token further back multiplies the influence by, and `r2`, the share of the logarithms'
// variance the line explains (1: a steady rate; near 0: no rate at all).
struct DecayFit {
    double factor = 1;
    double r2 = 0;
};
// Absent with fewer than 3 tokens or an influence that is 0.
std::optional<DecayFit> decay_per_token(const Vector& influence);

}  // namespace attntrace

#include <string>
#include <vector>

namespace attntrace {

// What attntrace rnn reports: the RNN over the input, and attention's influence beside it.
struct RnnReport {
    std::string origin;  // the input's
    std::vector<std::string> tokens;
    Matrix inputs;  // n × d_in
    RnnWeights rnn;
    std::string rnn_origin;        // where W_x, W_h, b_h came from, a sentence
    std::string attention_origin;  // where W_q, W_k, W_v came from, a sentence
    Matrix hidden;                 // h_1 … h_n as rows
    Vector rnn_influence;          // ‖∂h_n/∂x_j‖
    Vector attention_influence;    // ‖∂z_n/∂x_j‖
    std::optional<DecayFit> rnn_decay, attention_decay;  // decay_per_token of each
    std::vector<std::string> notes;                    // the input's notes
};

}  // namespace attntrace
