// Inside practice/mistakes: one head's pass of attention recomputed in plain loops with one
// mistake made in it (a Variant), from the trace's own inputs and parameters
// (practice/mistake_pass.cpp). Only practice/mistakes.cpp and mistake_pass.cpp include this.
#pragma once

#include "attention/modes.hpp"
#include "core/stage.hpp"
#include "practice/mistakes.hpp"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace attntrace::mistake_detail {

using Grid = std::vector<std::vector<double>>;
constexpr double minus_inf = -std::numeric_limits<double>::infinity();
using Index = Eigen::Index;

inline Index at(std::size_t i) { return static_cast<Index>(i); }

Grid grid_of(const Matrix& m);
Matrix matrix_of(const Grid& g);

// One head's stages under one mistake (or none).
struct Pass {
    Grid q, k, v, q_rotated, k_rotated, scores, scaled, masked, weights, context;
    double divisor = 1;
};

// One way of making a mistake.
struct Variant {
    std::optional<Mistake> mistake;
    double fill = 0;              // finite_fill: what the hidden scores became
    double width = 0;             // sqrt_d_model: the width under the root
    bool raw_scores = false;      // context_from_scores: the scores before scaling
    bool every_key = false;       // context_from_scores: the hidden keys' scores kept too
    std::uint8_t forgotten = 0;   // no_mask: the reasons (MaskReason bits) not applied; 0xff: every one
    bool two_sided = false;       // no_mask, causal with --window: the window as |i − j| < w, no causal mask
    bool renormalise = false;     // mask after softmax, then divide each row again (no mistake)
};

inline bool is(const Variant& v, Mistake m) { return v.mistake == m; }

// Where a pass can stop: the last stage it needs.
inline int order_of(StageId id) {
    switch (id) {
    case StageId::queries:
    case StageId::keys:
    case StageId::values: return 0;
    case StageId::queries_rotated:
    case StageId::keys_rotated: return 1;
    case StageId::scores: return 2;
    case StageId::scaled: return 3;
    case StageId::masked: return 4;
    case StageId::weights: return 5;
    default: return 6;
    }
}

struct RunShape {
    ModeFamily family = ModeFamily::single_sequence;
    bool learned = false, rotated = false, layernorm = false;
    std::size_t heads = 1, kv_heads = 1, d_in = 0, d_head = 0, d_v = 0;
};

RunShape shape_of(const Trace& trace);

bool after_the_heads(StageId id);

// One head's pass up to stage `upto`, in plain loops; nullopt when the variant cannot arise in
// this run.
std::optional<Pass> compute(const Trace& trace, int head, const Variant& variant, StageId upto);

// Stage `id` of `head` under `variant`, or, after the heads, the heads' contexts side by side
// (concat), times W_o (output), or head `head`'s share of that (head_contributions); `first`
// receives the pass of the head asked for (head 1 after the heads), for the explanation.
std::optional<Matrix> stage_under(const Trace& trace, StageId id, int head, const Variant& variant, Pass& first);

}  // namespace attntrace::mistake_detail
