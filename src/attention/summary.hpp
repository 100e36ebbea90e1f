// --summary: per query, its strongest keys, its largest weight and the entropy of its weights,
// computed by the streaming path without the n×n matrix.
#pragma once

#include "attention/stage.hpp"
#include "attention/streaming.hpp"
#include "attention/trace.hpp"
#include "input/problem.hpp"

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace attntrace {

struct Summary {
    Mode mode = Mode::plain;
    Dtype dtype = Dtype::float64;
    std::string origin;
    std::string description;
    Labels tokens;
    std::vector<std::pair<std::string, Eigen::Index>> dims;
    WeightsOrigin weights = WeightsOrigin::none;
    std::uint64_t seed = 0;
    std::vector<std::string> notes;
    std::size_t top = 3;
    std::vector<QuerySummary> queries;  // one per token
    std::optional<Matrix> context;      // n × d_v when asked for
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
