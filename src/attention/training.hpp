// Training an attention layer: a loop of forward pass, backward pass and update over a task's
// examples (core/training.hpp), deterministic for a seed whatever the thread count.
//
// The layer, for one example X (n × d_in):
//   Q = X·W_q + b_q    K = X·W_k + b_k    V = X·W_v + b_v          (biases with `bias` alone)
//   S = Q·Kᵀ / √d_k,  −∞ where the causal mask hides a key;  A = softmax(S) by rows;  Z = A·V
// Its loss, the mean over a batch of each example's own:
//   focus:  −log A[q, k]  = logsumexp(S_q) − S_qk
//   target: ½‖Z − T‖²
// With H heads (`heads`), W_q, W_k and W_v split their columns into H blocks, head h computing
// its own A_h and Z_h from its blocks; the heads' contexts side by side, C = [Z_1 … Z_H], are
// mixed by W_o into the output, O = C·W_o (+ b_o), and the target loss is ½‖O − T‖². A focus
// example is about the heads' mean weight, Ā = (1/H)·Σ_h A_h: L = −log Ā[q, k], whose gradient
// gives head h the one-head gradient scaled by its share of the weight on k, A_h[q, k] / Σ_g A_g[q, k]
// (the head already looking there is pushed hardest); or, with `focus_head` h, about head h's
// weight alone, L = −log A_h[q, k].
// and the gradients, as the backward pass (attention/backward.hpp) gives them:
//   dZ = Z − T;  dA = dZ·Vᵀ;  dV = Aᵀ·dZ;  dS = A ⊙ (dA − rowsum(dA ⊙ A)) / √d_k
//   (focus: dS_q = (A_q − e_k) / √d_k, the other rows 0);  dQ = dS·K;  dK = dSᵀ·Q;
//   dW_q = Xᵀ·dQ, db_q = Σ rows of dQ (and so on for K and V).
// The update, as PyTorch's torch.optim writes it (so that a run can be repeated there):
//   sgd:  b ← μ·b + g;  W ← W − lr·b                  (μ = 0: W ← W − lr·g)
//   adam: m ← β₁m + (1−β₁)g;  v ← β₂v + (1−β₂)g²;  W ← W − (lr / (1−β₁ᵗ))·m / (√v / √(1−β₂ᵗ) + ε)
// with the gradient first scaled by c / (‖g‖ + 10⁻⁶) when --clip c is below its norm.
//
// Pure math: no I/O, no printing.
#pragma once

#include "core/problem.hpp"
#include "core/training.hpp"
#include "core/types.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <optional>
#include <vector>

namespace attntrace {

enum class Optimizer { sgd, adam };
inline constexpr NameTable<Optimizer, 2> optimizer_names{{{Optimizer::sgd, "sgd"}, {Optimizer::adam, "adam"}}};
constexpr const auto& names_of(Optimizer) { return optimizer_names; }

struct TrainSettings {
    bool causal = false;   // mode causal: a query sees itself and the keys before it
    Eigen::Index d_k = 4;  // the columns of W_q and W_k
    Eigen::Index d_v = 4;  // the columns of W_v (the targets' width when the task has targets)
    bool bias = false;     // b_q, b_k, b_v, trained with the weights
    Dtype dtype = Dtype::float64;
    Optimizer optimizer = Optimizer::adam;
    double lr = 0.05;
    double momentum = 0.9;               // sgd
    double beta1 = 0.9, beta2 = 0.999;   // adam
    double epsilon = 1e-8;               // adam
    double clip = 0;                     // the gradient's largest norm (0: not clipped)
    std::int64_t steps = 300;
    std::int64_t batch = 16;             // examples per step (the last batch of an epoch may have fewer)
    std::int64_t every = 0;              // a point of the curve every this many steps (0: steps / 10)
    std::int64_t snapshots = 0;          // the weights kept every this many steps, and at step 0 (0: none)
    bool embeddings = false;             // learn a vector per word too, from the examples' own
    int heads = 1;                       // H: above 1, d_k and d_v are each head's, and W_o (H·d_v × d_out) mixes them
    Eigen::Index d_out = 0;              // W_o's columns with several heads (the targets' width, else d_in)
    int focus_head = 0;                  // the 1-based head a focus example is about (0: the heads' mean weight)
    std::uint64_t seed = 123;            // the initial weights and the order of the examples
};

// The curve after `step` updates (step 0: the initial weights).
struct CurvePoint {
    std::int64_t step = 0;
    double loss = 0;                        // the mean loss over the training examples
    std::optional<double> held_out_loss;    // over the held-out examples
    std::optional<double> accuracy;         // held-out focus examples whose query's largest weight is on its key
    std::optional<double> focus;            // the shown example's A[q, k]
};

// The embeddings of --embeddings: a row per word, in order of first use.
struct WordTable {
    std::vector<std::string> words;
    std::map<std::string, Eigen::Index, std::less<>> index;  // word → row
    Matrix vectors;                                          // words × d_in
};

struct Training {
    Projections initial, learned;
    std::vector<CurvePoint> curve;
    std::vector<std::pair<std::int64_t, Projections>> snapshots;  // (step, weights), with --snapshots
    std::optional<WordTable> embeddings;                          // learned, with --embeddings
    std::int64_t steps = 0;
    std::int64_t epochs_begun = 0;  // how many times the order of the examples was drawn
    double seconds = 0;             // the steps alone: the curve's evaluations are not counted
};

// Called after every step with the step's number and the curve's point when one was made.
using StepObserver = std::function<void(std::int64_t step, const CurvePoint* point)>;

// The weights a run starts from: W_q and W_k (d_in × H·d_k), then W_v (d_in × H·d_v), each
// uniform in ±1/√d_in from the seed's stream, then with several heads W_o (H·d_v × d_out,
// ±1/√(H·d_v)); zero biases with `bias` (b_o too).
Projections initial_weights(const TrainingSet& set, const TrainSettings& settings);

// Trains from `start` (or the initial weights). Throws UsageError for a task without training
// examples, DataError when a loss or gradient stops being finite (a learning rate too large).
Training train(const TrainingSet& set, const TrainSettings& settings, const std::optional<Projections>& start = {},
               const StepObserver& observe = {});

// How a layer's weights are read: how many heads split them, and which head's weight a focus
// example is about (0: the heads' mean).
struct HeadUse {
    int heads = 1;
    int focus_head = 0;
};

// One example's loss under `weights`, in float64, and, with `gradient`, its gradient with the
// shapes of `weights` (biases present when `weights` has them), and with `input_gradient` the
// gradient of its inputs (a row per token). For the tests and the report.
double example_loss(const Projections& weights, const TrainingExample& example, bool causal,
                    Projections* gradient = nullptr, Matrix* input_gradient = nullptr, HeadUse use = {});

// Each head's weight A_h[q, k] for a focus example under `weights` (H numbers).
std::vector<double> head_focus(const Projections& weights, const TrainingExample& example, bool causal, int heads);

}  // namespace attntrace

namespace attntrace {

struct RnnComparison;  // attention/rnn_compare.hpp

// What attntrace train reports: the task, how it was trained and what came of it; or, with
// --compare-rnn, the RNN against attention gap by gap (`comparison`, and `set` absent).
struct TrainReport {
    const TrainingSet* set = nullptr;
    TrainSettings settings;
    Training training;
    std::string saved;  // the file the learned model went to ("": none)
    std::vector<double> head_focus;  // with several heads: each head's weight of the followed pair after training
    const RnnComparison* comparison = nullptr;
};

}  // namespace attntrace
