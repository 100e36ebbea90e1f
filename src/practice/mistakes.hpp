// The classic mistakes of a learner's attention, each recomputed in plain loops from a trace's
// own inputs and parameters, so that check-answers and the quiz can name the one that
// reproduces a learner's numbers. Each mistake is one change to the right pipeline, made the
// same way in every head; everything after it follows. A diagnosis says what went wrong in
// words true for the run: its mode, its mask, its widths, the fill or divisor the learner used.
#pragma once

#include "core/stage.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attntrace {

enum class Mistake {
    transposed_w_q, transposed_w_k, transposed_w_v,  // X·Wᵀ: a weight read as nn.Linear's (out, in)
    wrong_head_split,        // Q, K and V cut into heads by rows of the flattened matrix, not by columns
    keys_times_queries,      // K·Qᵀ, the scores transposed
    no_tanh,                 // bahdanau: v_a · (s·W_a + h·U_a), the additive score without its tanh
    no_scaling,              // the scores not divided at all
    sqrt_d_model,            // divided by √ of a model width (d_in, or all heads' H·d_head) instead of √d_k
    divided_by_d_k,          // divided by d_k instead of √d_k
    no_mask,                 // the mask (or one part of it) not applied, or a causal window taken on both sides
    finite_fill,             // hidden scores set to a finite number instead of −∞
    mask_after_softmax,      // softmax over every key, hidden weights zeroed, rows not divided again
    softmax_over_columns,    // each column normalised instead of each row
    softmax_overflow,        // e^s of the scores themselves, the row max not subtracted: ∞/∞ or 0/0
    sum_instead_of_softmax,  // divided by the row sum where softmax was asked
    softmax_instead_of_sum,  // softmax where --normalize sum was asked
    context_from_scores,     // the scores (not the weights) times V
    context_from_inputs,     // the weights times X (not V)
};

struct MistakeInfo {
    Mistake id;
    std::string_view name;     // stable: "softmax_over_columns"
    std::string_view summary;  // what goes wrong, in a few words that hold for every run
};

std::span<const MistakeInfo> mistakes();
const MistakeInfo& mistake_info(Mistake id);

// What a diagnosis may say that a trace does not hold.
struct MistakeContext {
    // How the input stores its weight matrices (the input's "layout" or --layout): (out, in),
    // as nn.Linear keeps them, makes "used as stored" the cause of X·Wᵀ.
    WeightLayout layout = WeightLayout::in_out;
    // Finite numbers the learner wrote where the mask hides a score, the commonest first: the
    // fills that finite_fill tries (the first max_learner_fills) besides its own (0, −1, −10,
    // −100, −1e4, −1e9, and the lowest float32 and float64).
    std::vector<double> fills;
    // The one row a learner's number is in (a quiz question's): the figures quoted are that row's.
    std::optional<Eigen::Index> row;
};

// A known mistake that reproduces a learner's numbers.
struct Diagnosis {
    Mistake mistake;
    std::string explanation;  // what went wrong and how to fix it, for this run and the way it was made
};

// Does a stage (or, for a Bahdanau feature, a number) made under a mistake give the learner's numbers?
using Reproduces = std::function<bool(const Matrix&)>;

// The stages the mistakes are recomputed for: queries, keys, values and everything from the
// scores to the output.
bool diagnosable(StageId id);

// Every known mistake that, made alone, gives a stage `id` of `head` (1-based; 0 with one head)
// for which `reproduces` holds, in the catalogue's order, each once (by the first of its ways
// that does). A mistake that cannot arise in this run (a transposed weight that is not square,
// a mask the run does not have) or that leaves the stage as it is, is not tried.
// One way is recomputed at a time: the memory is that of one pass (mistake_pass_bytes).
std::vector<Diagnosis> diagnose(const Trace& trace, StageId id, int head, const Reproduces& reproduces,
                                const MistakeContext& context = {});

// Bahdanau's additive score: the mistakes that change entry `entry` of tanh(s_t·W_a + h_j·U_a)
// for target `row` and source `col`, and whose value there `reproduces` accepts (no_tanh).
std::vector<Diagnosis> diagnose_feature(const Trace& trace, Eigen::Index row, Eigen::Index col, Eigen::Index entry,
                                        const std::function<bool(double)>& reproduces);

// The weights of `head` as a learner who masks after softmax and then divides each row by its
// new sum gets them (the right weights, up to rounding); nullopt when the run masks nothing or
// normalises by the sum.
std::optional<Matrix> renormalised_after_softmax(const Trace& trace, int head);

// The bytes one recomputation holds at its peak, for a run of `rows` queries and `cols` keys,
// inputs of `d_in`, and all heads' queries, keys and values `d_k` and `d_v` wide.
std::uint64_t mistake_pass_bytes(double rows, double cols, double d_in, double d_k, double d_v);

// Seconds a stage's search may take at most: each way of each mistake (about two dozen) one
// pass of plain loops on one thread, at the rate measured on the project's machine.
double mistake_search_seconds(double rows, double cols, double d_in, double d_k, double d_v, double heads);

// The fills finite_fill tries at most from a learner's numbers (MistakeContext::fills).
inline constexpr std::size_t max_learner_fills = 2;

}  // namespace attntrace
