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
struct Summary : RunHeader {
    Labels tokens;
    std::size_t top = 3;
    std::vector<QuerySummary> queries;  // one per token
    std::optional<Matrix> context;      // n × d_v when asked for
};

struct SummaryOptions {
    std::size_t top = 3;
    bool context = false;
    std::function<void(std::size_t, std::size_t)> progress;  // (rows done, rows in all)
    // Output as it is computed (--format jsonl): StreamOptions::rows_done, with the summary's
    // header (tokens, dtype, top) already filled in.
    std::function<void(const Summary&, const StreamResult&, std::size_t first, std::size_t count)> rows_done;
};

// The streaming path on a single-sequence problem (plain, self or causal).
Summary summarize(const Problem& problem, const TraceOptions& trace_options, const SummaryOptions& options);

// The same summary read off a full trace: the reference the streaming path is tested against.
Summary summarize_trace(const Trace& trace, const SummaryOptions& options);

}  // namespace attntrace
