// The backward pass one step at a time: each function takes the gradient of a step's output
// (and what the forward pass computed) and returns the gradient of its input, in float64,
// with the shapes of attention/kernels.hpp (row vectors, one token per row).
//
// The lesson's centre is the softmax. Per row, a = softmax(s / T) has the Jacobian
//   ∂a_j/∂s_k = (a_j·δ_jk − a_j·a_k) / T,   J = (diag(a) − aᵀ·a) / T,
// and since J is symmetric, ds = J·da is, entry by entry,
//   ds_j = a_j·(da_j − Σ_k a_k·da_k) / T:
// no n × n Jacobian is ever formed. A key whose weight is 0 (hidden by −∞) gets exactly 0.
#pragma once

#include "core/matrix.hpp"

namespace attntrace::grad {

// dS'' of A = softmax(S'' / T) per row: A ⊙ (dA − rowsum(dA ⊙ A)) / T. Where A is 0 the
// result is exactly +0.
Matrix softmax_backward(const Matrix& weights, const Matrix& d_weights, double temperature);

// One row's Jacobian of softmax(s / T) at its weights a (1 × n): (diag(a) − aᵀ·a) / T, n × n.
// For the worked example of one row; softmax_backward never builds it.
Matrix softmax_jacobian(const Vector& weights, double temperature);

// dS'' of A = S'' / r per row, r = Σ_j S''_ij over the finite entries (hidden −∞ count as 0,
// as row_sum_normalize does): (dA − rowsum(dA ⊙ A)) / r at finite entries, 0 elsewhere and in
// rows that were left at 0 (every key hidden).
Matrix sum_normalize_backward(const Matrix& scores, const Matrix& weights, const Matrix& d_weights);

// softmax(S / T) per row in float64, with each row's maximum subtracted: the weights before
// --mask-after-softmax zeroed the hidden ones.
Matrix softmax_rows(const Matrix& scores, double temperature);

// `d` with exactly 0 where `allowed` is false.
Matrix zero_hidden(Matrix d, const BoolMatrix& allowed);

// The gradient of x from the gradient of RoPE(x): each pair (i, i + h) turned back by −φ, the
// transpose (and inverse) of the forward rotation (attention/positions.hpp):
//   dx[i] = dy[i]·cos φ + dy[i + h]·sin φ,   dx[i + h] = dy[i + h]·cos φ − dy[i]·sin φ.
Matrix rotate_back(const Matrix& d_rotated, const Matrix& angles);

// Each column summed over the rows: the gradient of a bias added to every row.
Vector column_sums(const Matrix& d);

// The backward pass of LN(x) = x̂·γ + β, x̂ = (x − mean) / σ, σ = √(var + ε), per row of d
// numbers: dγ = Σ_rows dy ⊙ x̂, dβ = Σ_rows dy, and with g = dy ⊙ γ,
//   dx = (g − mean(g) − x̂·mean(g ⊙ x̂)) / σ.
struct LayerNormGradients {
    Matrix d_x;
    Vector d_gamma, d_beta;
};
LayerNormGradients layer_norm_backward(const Matrix& x, const Matrix& d_y, const Vector& gamma, double epsilon);

// Bahdanau's additive score e_tj = Σ_a v_a[a]·tanh(PS_ta + PH_ja) backwards: with
// u = tanh(PS_ta + PH_ja) and g_tja = de_tj·v_a[a]·(1 − u²),
//   dv_a[a] = Σ_tj de_tj·u,   dPS_ta = Σ_j g_tja,   dPH_ja = Σ_t g_tja.
struct AdditiveGradients {
    Matrix d_projected_decoder, d_projected_encoder;
    Vector d_v_a;
};
AdditiveGradients additive_backward(const Matrix& projected_decoder, const Matrix& projected_encoder, const Vector& v_a,
                                    const Matrix& d_scores);

}  // namespace attntrace::grad
