// The streaming backward pass: the gradients of a loss through attention for long inputs,
// without any n×n matrix, the way FlashAttention-2's backward computes them. It is the
// backward pass of attention/backward.hpp (which reads a full trace, in float64) for inputs
// of thousands of tokens, in the working precision (float32 or float64).
//
// Two phases, each over blocks of backward_block rows:
//
//   forward   per query block, the keys stream past (attention/streaming.hpp's online
//             softmax) and each row keeps only ℓ_i = m_i + ln Σ_j e^(s_ij − m_i), the
//             log-sum-exp of its scaled scores s = scale·q_i·k_j, and its context z_i; the
//             loss's seed dZ and D_i = Σ_k dZ_ik·Z_ik are made from each block as it ends,
//             and Z is not kept.
//   backward  per key block c (in order), the query blocks r stream past; each score tile
//             is recomputed and
//               P  = e^(S − ℓ)                   the weights, exactly normalised
//               dP = dZ_r·V_cᵀ
//               dS = scale · P ⊙ (dP − D)        the softmax backward, with the scale
//               dV_c += Pᵀ·dZ_r,   dK_c += dSᵀ·Q_r,   dQ_r += dS·K_c.
//             dK_c and dV_c are finished when the task ends; dQ_r is summed over the key
//             blocks in their order: the task of key block c adds its part to row block r
//             only after the task of key block c − 1 has added its own (a wavefront: the
//             tasks are handed out in order, and each waits at most for the one before it).
//
// Every sum runs in an order fixed by the blocks alone, so the results are the same bytes
// for any thread count. What is held: Q, K, V, dQ (n × d each), ℓ and D (n per head), dZ
// (n × d_v per head, for a target; a sum's dZ is the same row everywhere), the inputs'
// gradient dX (n × d_in) and per thread one block of tiles.
#pragma once

#include "attention/streaming.hpp"
#include "attention/trace.hpp"
#include "core/gradients.hpp"
#include "core/matrix.hpp"
#include "core/problem.hpp"
#include "core/stage.hpp"

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attntrace {

// ---------------------------------------------------------------------------------------
// The kernels (compiled once per instruction set, attention/isa.hpp).

inline constexpr Eigen::Index backward_tile = 256;  // rows of a query block = keys of a key block

// One head: its queries and keys (RoPE: already turned), n × d_head, and values, n × d_v.
// Heads with the same `group` (grouped-query attention) share k and v. The queries are not
// read when BackwardQueries makes them.
template <typename T>
struct BackwardHead {
    RowsView<T> q, k, v;
    int group = 0;  // 0-based key/value head
};

// Where the queries come from: each head's `q` (held, n × d_head each), or, when `x` is set,
// made again for each block of rows that needs them, X_rows·W_q + b_q, every head's side by
// side (head h in columns h·d_head …). Making them costs d_in·H·d_head multiply-adds per
// query row and tile, a few percent of a tile's work, and spares holding Q (n × H·d_head).
template <typename T>
struct BackwardQueries {
    std::optional<RowsView<T>> x;
    const MatrixT<T>* w = nullptr;                              // W_q, d_in × H·d_head
    const Eigen::Matrix<T, 1, Eigen::Dynamic>* bias = nullptr;  // b_q, or none
};

// Which keys a query sees, the factor on q·k (1 / (divisor · temperature)), and the tiles.
struct BackwardPlan {
    bool causal = false;
    Eigen::Index window = 0;                     // > 0: keys j with i − W < j ≤ i (causal) or |i − j| < W
    const std::vector<bool>* padding = nullptr;  // per key: a padding token, never seen
    double scale = 1;
    Eigen::Index tile = backward_tile;  // rows of a query block and keys of a key block (tests: smaller)
};

// Called once per query block [first, first + rows) with the heads' context vectors side by
// side (rows × H·d_v, head h in columns h·d_v …), from the worker threads, in any order.
template <typename T>
using ContextBlockDone = std::function<void(Eigen::Index first, const RowsView<T>& context)>;

// The forward phase: returns ℓ, n × H (+∞ for a row that sees no key, whose weights are all 0).
template <typename T>
MatrixT<T> stream_forward_lse(const std::vector<BackwardHead<T>>& heads, const BackwardQueries<T>& queries,
                              const BackwardPlan& plan, const ContextBlockDone<T>& done);

// The backward phase's inputs besides the heads: ℓ and D (n × H), and dZ, either a matrix
// (n × H·d_v) or, when `d_context` is null, `d_context_row` (1 × H·d_v) in every row.
template <typename T>
struct BackwardSeed {
    const MatrixT<T>* lse = nullptr;
    const MatrixT<T>* delta = nullptr;
    const MatrixT<T>* d_context = nullptr;
    MatrixT<T> d_context_row;
};

// Called once per key block [first, first + rows) with its finished dK (rows × G·d_head) and
// dV (rows × G·d_v), key/value head g in its block of columns (the sums over its query
// heads), from the worker threads, in any order. Once the block's task calls it, no task
// reads that block's rows of K and V again: `done` may write over them.
template <typename T>
using KeyBlockDone = std::function<void(Eigen::Index first, const RowsView<T>& d_keys, const RowsView<T>& d_values)>;

// The backward phase: writes dQ (n × H·d_head, head h's columns h·d_head …) into `d_queries`
// and hands each key block's dK and dV to `done`. An exception in `done` or in the kernel
// ends the phase and is thrown again after it.
template <typename T>
void stream_backward_heads(const std::vector<BackwardHead<T>>& heads, const BackwardQueries<T>& queries,
                           const BackwardSeed<T>& seed, const BackwardPlan& plan, MatrixT<T>& d_queries,
                           const KeyBlockDone<T>& done);

// X·W (+ b in every row), n × d_out, in blocks of rows on the threads: the projections.
template <typename T>
MatrixT<T> backward_project(const RowsView<T>& x, const MatrixT<T>& w, const Eigen::Matrix<T, 1, Eigen::Dynamic>* bias);

// out = op(a)·op(b), or out += it with `add`; op transposes when asked. For the small products
// of a block of gradients with the weights and the inputs (dX = dQ·W_qᵀ, dW_q = Xᵀ·dQ, …).
template <typename T>
void backward_product(const RowsView<T>& a, bool transpose_a, const RowsView<T>& b, bool transpose_b, MatrixT<T>& out,
                      bool add);

// ---------------------------------------------------------------------------------------
// The backward pass of a single-sequence run (plain, self, causal; heads, grouped-query
// attention, biases, W_o, RoPE, sinusoidal positions, ln_1, --window, padding, --scale,
// --temperature) on the streaming path: from the loss to every parameter and to the inputs.

struct StreamBackwardOptions {
    bool inputs = false;                // also return dX whole (n × d_in)
    bool stages = false;                // also return dZ, dQ, dK and dV whole (tests, and small inputs)
    Eigen::Index tile = backward_tile;  // the tiles' size (≥ 1; the tests take small ones)
    // Whether the queries are made again per tile (BackwardQueries) rather than held; absent:
    // when Q would take more than made_queries_from bytes and the run has learned projections
    // without RoPE (RoPE's turned queries, and plain mode's X, are held either way).
    std::optional<bool> make_queries;
};

inline constexpr std::size_t made_queries_from = std::size_t{8} << 20;  // 8 MiB

// One parameter's gradient, named as the trace names the parameter ("W_q", "b_q", "gamma"),
// its rows and columns labelled as the trace labels the parameter (rows "x1" …, columns "q1"
// …; a vector's one row by its name).
struct ParameterGradient {
    std::string name;
    Matrix data;  // the parameter's shape (a bias: 1 × d)
    std::string formula;  // "dW_q = Xᵀ·dQ"
    std::string row_prefix, col_prefix;
    bool vector = false;
};

// The run's header (its mode, dtype, dims, notes …) as a summary's, then the loss and the gradients.
struct StreamGradients : RunHeader {
    Labels tokens;
    Loss loss;
    double value = 0;      // L
    std::string title;     // "Loss: every number of the context summed"
    std::string formula;   // "L = Σ Z"
    // In the trace's order of parameters: W_q, b_q, W_k, b_k, W_v, b_v, W_o, b_o, gamma, beta
    // (those the run has).
    std::vector<ParameterGradient> parameters;
    // ‖dL/dx_i‖ for every token i: the gradient of what the run reads (the embeddings, with
    // sinusoidal positions, whose gradient is the same; the vectors before ln_1 with it).
    std::vector<double> input_norms;
    std::optional<Matrix> inputs;  // dX, with StreamBackwardOptions::inputs
    // With StreamBackwardOptions::stages: dZ (n × H·d_v, each head's in its columns), dQ
    // (n × H·d_head), dK (n × G·d_head), dV (n × G·d_v), of the projections before RoPE.
    std::optional<Matrix> context, queries, keys, values;

    const Matrix* parameter(std::string_view name) const;
};

// Throws UsageError for a mode without a streaming path, --mask-fill or --mask-after-softmax,
// --normalization sum, and a focus loss outside the weights; DataError for a focus weight of
// 0 (a hidden key), a target of another shape than the result, and a gradient that overflows.
StreamGradients stream_backward(const Problem& problem, const TraceOptions& trace_options, const Loss& loss,
                                const StreamBackwardOptions& options = {});

}  // namespace attntrace
