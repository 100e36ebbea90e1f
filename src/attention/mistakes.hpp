// The classic mistakes of a learner's attention, each recomputed in plain loops from a trace's
// own inputs and parameters, so that check-answers can name the one that reproduces a learner's
// numbers. Each mistake is one change to the right pipeline; everything after it follows.
#pragma once

#include "core/stage.hpp"

#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace attntrace {

enum class Mistake {
    transposed_w_q, transposed_w_k, transposed_w_v,  // X·Wᵀ: a weight read as nn.Linear's (out, in)
    wrong_head_split,       // Q, K and V cut into heads by rows of the flattened matrix, not by columns
    keys_times_queries,     // K·Qᵀ, the scores transposed
    no_scaling,             // the scores not divided at all
    sqrt_d_model,           // divided by √d_model instead of √d_head
    divided_by_d_k,         // divided by d_k instead of √d_k
    finite_fill,            // hidden scores set to a finite number that still leaves them weight
    mask_after_softmax,     // softmax over every key, hidden weights zeroed, rows not divided again
    softmax_over_columns,   // each column normalised instead of each row
    sum_instead_of_softmax, // divided by the row sum where softmax was asked
    softmax_instead_of_sum, // softmax where --normalize sum was asked
    context_from_scores,    // the scores (not the weights) times V
    context_from_inputs,    // the weights times X (not V)
};

struct MistakeInfo {
    Mistake id;
    std::string_view name;         // stable: "softmax_over_columns"
    std::string_view explanation;  // what it is and how to fix it, one sentence
};

std::span<const MistakeInfo> mistakes();
const MistakeInfo& mistake_info(Mistake id);

// The matrices stage `id` of `head` (1-based; 0 with one head) would hold had `mistake` been
// made and nothing else, in pipeline order from the trace's inputs and parameters: none when
// the mistake cannot arise in this run (a transposed weight that is not square, √d_model
// with one head). A mistake with a free choice gives one matrix per choice (finite fills:
// 0, −1, −10, −100, −1e4, −1e9 and `fills`). Masked entries are −∞.
std::vector<Matrix> under_mistake(const Trace& trace, StageId id, int head, Mistake mistake,
                                  std::span<const double> fills = {});

// The weights of `head` as a learner who masks after softmax and then divides each row by its
// new sum gets them (the right weights, up to rounding); nullopt when the run masks nothing or
// normalises by the sum.
std::optional<Matrix> renormalised_after_softmax(const Trace& trace, int head);

// The stages whose numbers the mistakes are recomputed for.
bool diagnosable(StageId id);

}  // namespace attntrace
