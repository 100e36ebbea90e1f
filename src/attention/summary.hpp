// --summary: per query, its strongest keys, its largest weight and the entropy of its weights,
// computed by the streaming path without the n×n matrix.
#pragma once

#include "core/stage.hpp"
#include "attention/streaming.hpp"
#include "attention/trace.hpp"
#include "core/problem.hpp"

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace attntrace {

// The summary: the run's header (its normalisation is always softmax) and per query its
// strongest keys, largest weight and entropy.
// One head's queries: with several heads, its number (1-based) and, in grouped-query
// attention, the key/value head it reads; 0 for either otherwise.
struct HeadSummary {
    int head = 0;
    int kv_head = 0;
    std::vector<QuerySummary> queries;  // one per token
};

struct Summary : RunHeader {
    Labels tokens;
    std::size_t top = 3;
    std::vector<HeadSummary> per_head;  // one, unless the run has several heads
    // When asked for: the context vectors (n × d_v), or with a W_o the layer's output
    // (n × d_out, concat·W_o with several heads).
    std::optional<Matrix> context;
    bool context_is_output = false;
    bool window = false;   // --window: a query sees fewer keys than causal alone gives it
    bool padding = false;  // some tokens are padding, hidden from every query
};

struct SummaryOptions {
    std::size_t top = 3;
    bool context = false;
    std::function<void(std::size_t, std::size_t)> progress;  // (rows done, rows in all)
};

// The streaming path on a single-sequence problem (plain, self or causal).
Summary summarize(const Problem& problem, const TraceOptions& trace_options, const SummaryOptions& options);

// The same summary read off a full trace: the reference the streaming path is tested against.
Summary summarize_trace(const Trace& trace, const SummaryOptions& options);

}  // namespace attntrace
