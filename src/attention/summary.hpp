// --summary: per query, its strongest keys, its largest weight and the entropy of its weights,
// computed by the streaming path without the n×n matrix.
#pragma once

#include "core/stage.hpp"
#include "attention/streaming.hpp"
#include "attention/trace_options.hpp"
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

// A run of queries the streaming path has finished, for output written as it is computed
// (--format jsonl): queries [first, first + count) of every head, and their rows of the
// context (or, with a W_o, of the layer's output) when asked for.
struct SummaryRows {
    struct Head {
        int head = 0;     // numbered as Summary::per_head
        int kv_head = 0;
        const std::vector<QuerySummary>* queries = nullptr;  // all n; rows first … first + count − 1 are final
    };
    std::size_t first = 0, count = 0;
    std::vector<Head> heads;
    std::optional<Matrix> context;  // count rows
    bool context_is_output = false;
};

struct SummaryOptions {
    std::size_t top = 3;
    bool context = false;
    std::function<void(std::size_t, std::size_t)> progress;  // (rows done, rows in all)
    // Output as it is computed: called in query order, from one thread at a time, with the
    // summary's header (tokens, dtype, top, heads) already filled in. Rows whose output is not
    // finite are not handed over; summarize() then names the entry.
    std::function<void(const Summary&, const SummaryRows&)> rows_done;
};

// The streaming path on a single-sequence problem (plain, self or causal).
Summary summarize(const Problem& problem, const TraceOptions& trace_options, const SummaryOptions& options);

// The same summary read off a full trace: the reference the streaming path is tested against.
Summary summarize_trace(const Trace& trace, const SummaryOptions& options);

}  // namespace attntrace
