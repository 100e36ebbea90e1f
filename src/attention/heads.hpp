// Multi-head attention: how H heads split the projections. W_q's d_model columns split into H
// consecutive blocks of d_head (head h reads columns (h−1)·d_head … h·d_head − 1); W_k and W_v
// into G blocks for G key/value heads, query head h reading key/value head ⌈h·G/H⌉ (the
// grouping of LLaMA's repeat_kv: consecutive query heads share); W_o (H·d_v × d_out) mixes the
// heads' contexts, put side by side, into the output.
#pragma once

#include "attention/trace_options.hpp"
#include "core/problem.hpp"

#include <string>

namespace attntrace {

struct HeadLayout {
    int heads = 1;
    int kv_heads = 1;
    Eigen::Index d_model = 0;  // columns of W_q: heads · d_head
    Eigen::Index d_head = 0;   // per head, of queries and keys
    Eigen::Index d_v = 0;      // per head, of values (and of each head's context)
    Eigen::Index d_out = 0;    // columns of W_o; 0 without one

    // The 1-based key/value head that 1-based query head h reads: ⌈h·G/H⌉.
    int kv_head_of(int h) const { return (h * kv_heads + heads - 1) / heads; }
    bool several() const { return heads > 1; }
    bool grouped() const { return kv_heads < heads; }
};

// "column 3" or "columns 3–4": 1-based columns first … first + count − 1 of a matrix, as a
// head's block of them is named.
std::string columns_text(Eigen::Index first, Eigen::Index count);

// The dims a run reports: d_in, d_k, d_v with one head; d_in, d_model, heads, d_head,
// (kv_heads,) d_v with several; d_out after either when there is a W_o. `d_k`, `d_v`: one
// head's (the embeddings' width in plain mode).
Dims dims_of(const HeadLayout& layout, Eigen::Index d_in, Eigen::Index d_k, Eigen::Index d_v);

// The numbers of heads a run asks for: --heads, else the input's "heads", else 1; --kv-heads,
// else "kv_heads", else one key/value head per head. Throws UsageError (an option) or
// DataError (the input's field) for counts that do not fit each other.
struct HeadCounts {
    int heads = 1;
    int kv_heads = 1;
    bool from_options = false;     // --heads given
    bool kv_from_options = false;  // --kv-heads given
};
HeadCounts head_counts(const SingleSequenceInput& input, const TraceOptions& options, const std::string& origin);

// The layout of `w` for `counts`, refusing (naming the matrix and the fix) weights whose
// columns do not split into the heads.
HeadLayout head_layout(const Projections& w, const HeadCounts& counts, const std::string& origin);

// The model size generated weights get: --dim, else d_in; refused when the heads do not
// divide it.
Eigen::Index generated_model_size(Eigen::Index d_in, const HeadCounts& counts, const TraceOptions& options);

}  // namespace attntrace
