// The worked example of one query (-q/--query): every number of that query's row, with the
// arithmetic that produced it, so a learner can check a hand calculation line by line.
#pragma once

#include "core/types.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attntrace {

struct LabelledVector {
    std::string label;
    std::vector<double> values;
};

// A projected vector written out column by column: result_k = Σ_i input_i·W_ik, the input
// row times column k of W (Q = X·W_q, row by row).
struct WorkedProjection {
    std::string output;                        // "q_journey"
    std::string input_label;                   // "x_journey"
    std::string matrix;                        // "W_q"
    std::vector<double> input;
    std::vector<std::vector<double>> columns;  // the matrix's columns first_column, first_column + 1, …
    std::vector<double> result;                // as the trace holds it
    std::int64_t first_column = 0;             // 0-based: a head reads a block of the columns
    std::string bias_name;                     // "b_q" when a bias is added ("" for none)
    std::vector<double> bias;                  // its entries for these columns
};

// One score written out: a · b = Σ_k a_k·b_k (single-sequence modes, Luong's dot and general).
struct WorkedDot {
    std::string key;
    std::vector<double> query;  // the query-side vector (q_i, x_i, s_t or s_t·W)
    std::vector<double> key_vector;
    double value = 0;           // the score as the trace holds it
};

// One additive score written out: e = v_a · tanh(s·W_a + h_j·U_a).
struct WorkedAdditive {
    std::string key;
    std::vector<double> projected_key;  // h_j·U_a
    std::vector<double> sum;            // s·W_a + h_j·U_a
    std::vector<double> features;       // tanh of the sum
    double value = 0;
};

// RoPE written out for one vector: each pair of numbers (k, k + d_head/2) turned by its angle.
struct WorkedRotation {
    std::string vector;            // "q_journey", "k_starts"
    std::string why;               // for a key: why this one ("the key with the largest weight")
    std::int64_t position = 0;     // p
    std::vector<double> angles;    // φk = p·θ_k, one per pair
    std::vector<double> before;    // the vector as projected
    std::vector<double> after;     // as the trace holds it after the rotation
};

// How position information reaches the worked query: its sinusoidal encoding added to its
// embedding, or RoPE's rotation of its query and of one key.
struct WorkedPositions {
    PositionScheme scheme = PositionScheme::none;
    std::int64_t position = 0;        // the query token's position
    std::vector<double> frequencies;  // ω_i (sinusoidal, i from 0) or θ_k (RoPE, one per pair)
    std::vector<double> embedding;    // sinusoidal: e, as the input gives it
    std::vector<double> encoding;     // sinusoidal: pe at the position; the query's x = e + pe
    std::vector<WorkedRotation> rotations;  // RoPE: the query's, then one key's
};

// One tile of keys of the online softmax (-q with --tiles B): the streaming path's way of
// working through a row, B keys at a time, with a running max m, a running sum l of
// e^(s − m) and an accumulator of e^(s − m)·v, both rescaled by e^(m_old − m_new) when m grows.
struct WorkedTile {
    std::vector<std::string> keys;
    std::int64_t first = 0;        // 0-based: the tile's first key
    std::vector<double> scores;    // the scores softmax reads (−∞ where hidden)
    bool skipped = false;          // causal: every key after the query, so the tile is never read
    bool hidden = false;           // read, but every key is hidden: m, l and the accumulator unchanged
    double tile_max = 0;           // −∞ when every key is hidden
    double m_before = 0, m_after = 0;  // the running max (−∞ before the first visible key)
    double rescale = 1;            // e^(m_before − m_after): 0 on the first visible tile, 1 when m stays
    std::vector<double> exps;      // e^(s − m_after) of each key (0 where hidden)
    double l_before = 0, l = 0;    // the running sum before and after
    std::vector<double> accumulator_before, accumulator;
};

struct WorkedExample {
    Mode mode = Mode::plain;
    int head = 0;  // the head worked through (1-based; 0: one head)
    Score score = Score::additive;
    Normalization normalization = Normalization::softmax;
    std::string query;             // the query token (a target token in bahdanau mode)
    std::int64_t row = 0;          // its 0-based row
    std::vector<std::string> keys;  // the column labels (keys, or source tokens)

    std::optional<WorkedPositions> positions;  // with --positions sinusoidal or rope
    std::vector<LabelledVector> inputs;  // vectors the query side starts from (x_i, q_i, s_t, s·W_a)
    std::vector<WorkedProjection> projections;  // q_i = x_i·W_q (or s·W_a, s·W) column by column
    std::vector<WorkedDot> dots;          // scores as sums of products
    std::vector<WorkedAdditive> additive;  // bahdanau's additive scores
    std::vector<double> v_a;               // additive: the vector that weighs the features

    ScaleRule scale_rule = ScaleRule::none;  // what the scores were divided by
    bool scale_given = false;         // by --scale rather than the mode's own rule
    double divisor = 1;               // √d_k, the number given, or 1
    std::optional<std::int64_t> d_k;  // the d_k under the root (ScaleRule::sqrt)
    std::vector<double> scaled;       // scores after scaling (equal to the scores when none)
    double temperature = 1;           // softmax(scaled / T)
    Dtype dtype = Dtype::float64;     // the run's number type: what overflows
    std::vector<double> tempered;     // scaled / T, when T ≠ 1 (softmax only)

    std::vector<bool> allowed;  // empty: no mask
    std::string mask_reason;    // why the excluded keys are excluded

    // softmax as a learner computes it by hand: e^s of each visible score and their sum;
    // none when some e^s overflows the run's number type (a score above about 709 in
    // float64, about 88 in float32)
    std::optional<std::vector<double>> exps_unshifted;
    double sum_unshifted = 0;
    // softmax as computed, for numerical safety: the row max, each score minus it, each exp,
    // their sum, the weights
    double max = 0;
    std::vector<double> shifted, exps;
    double sum = 0;  // Σ exp (softmax) or Σ scores (sum normalisation)
    std::vector<double> weights;
    std::vector<std::string> strongest;  // the keys with the largest weight (several when tied)
    // causal/masked rows: the other way to mask (softmax over all, zero the hidden, renormalise)
    std::vector<double> zeroed_then_renormalised;

    std::vector<LabelledVector> values;  // the vectors mixed into the context (v_j or h_j)
    std::vector<double> context;
    // --tiles B: the same row by the online softmax, tile by tile; at the end the weights
    // e^(s − m)/l and the context accumulator / l, measured against the full softmax above.
    std::int64_t tile_size = 0;  // 0: no tiles
    std::vector<WorkedTile> tiles;
    double final_max = 0, final_sum = 0;
    std::vector<double> tiled_weights, tiled_context;
    double tiles_difference = 0;  // largest |difference| from `weights` and `context`
    double tiles_tolerance = 0;   // relative: 1e-12 (float64) or 1e-5 (float32)
    bool matches_full_softmax = false;
    // Several heads (or a W_o): the token's output, its context (several heads: the heads'
    // contexts side by side) times W_o.
    std::optional<WorkedProjection> output;
};

}  // namespace attntrace
