// The lecture's argument, measured: an RNN encoder against one head of attention on the same
// task, naming a sentence's subject from its last word, with the subject a fixed number of
// words back (attntrace train --compare-rnn).
//
// Both models read the same vectors X (n × d) and end in K logits, one per subject word:
//   attention: z_n = Σ_j a_nj·(x_j·W_v), a_n = softmax(x_n·W_q·(X·W_k)ᵀ / √d_k), logits = z_n
//              (W_v is d × K: the value of a word is its vote for each subject);
//   RNN:       h_t = tanh(x_t·W_x + h_{t−1}·W_h + b_h), logits = h_n·W_r + b_r.
// The loss is the cross-entropy −log softmax(logits)[subject]; the RNN's gradient is
// backpropagation through time, attention's the backward pass of one row.
//
// Pure math: no I/O, no printing.
#pragma once

#include "attention/training.hpp"
#include "core/rnn.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace attntrace {

struct NamedExample {
    Matrix X;                 // n × d
    Eigen::Index subject = 0;  // the class: which subject word it is, 0 … K−1
};

struct AttentionReader {
    Matrix W_q, W_k, W_v;  // d × d_k, d × d_k, d × K
};
struct RnnReader {
    RnnWeights rnn;  // W_x d × d_h, W_h d_h × d_h, b_h
    Matrix W_r;      // d_h × K
    Vector b_r;      // K
};

// An example's loss under the model, its logits into `logits` and, with `gradient` (shaped as
// the model, zeros or a sum so far), its gradient added.
double reader_loss(const AttentionReader& m, const NamedExample& e, Vector& logits, AttentionReader* gradient);
double reader_loss(const RnnReader& m, const NamedExample& e, Vector& logits, RnnReader* gradient);

// The models a comparison starts from, drawn from `seed`: attention's W_q, W_k, W_v as
// initial_weights draws them (uniform in ±1/√d, one stream); the RNN's as attntrace rnn draws
// them (scaled), then W_r uniform in ±1/√d_h from a stream of its own, b_r 0.
AttentionReader initial_attention_reader(std::uint64_t seed, Eigen::Index d, Eigen::Index d_k, Eigen::Index classes);
RnnReader initial_rnn_reader(std::uint64_t seed, Eigen::Index d, Eigen::Index d_h, Eigen::Index classes);

// One gap: both models trained on `train` with `settings` (optimizer, lr, batch, steps, clip,
// seed; float64 always), then judged on `held_out`.
struct GapResult {
    std::size_t gap = 0;
    double rnn_accuracy = 0, attention_accuracy = 0;  // held out: the largest logit is the subject's
    double rnn_loss = 0, attention_loss = 0;          // the mean training loss at the end
    // The first step at which held-out accuracy was 95% or more (judged every steps / 100
    // steps, at least every step); absent: never.
    std::optional<std::int64_t> rnn_reached, attention_reached;
    double seconds = 0;                               // both trainings
};
// The whole comparison, gap by gap, as attntrace train --compare-rnn reports it.
struct RnnComparison {
    std::vector<GapResult> rows;
    Eigen::Index classes = 0, d = 0, d_k = 0, d_h = 0;
    std::size_t train = 0, held_out = 0;  // examples per gap
};
GapResult compare_at_gap(std::size_t gap, const std::vector<NamedExample>& train, const std::vector<NamedExample>& held_out,
                         Eigen::Index classes, Eigen::Index d_k, Eigen::Index d_h, const TrainSettings& settings);

}  // namespace attntrace
