// The worked example of one query (-q/--query): computed from a trace (core/worked.hpp holds
// its numbers).
#pragma once

#include "core/stage.hpp"
#include "core/worked.hpp"

#include <string>
#include <vector>

namespace attntrace {

struct AdditiveWeights;

// The worked example of `row` in a traced single-sequence or bahdanau problem. The trace
// supplies every matrix; `additive` supplies v_a for bahdanau's additive score.
WorkedExample work_through(const Trace& trace, Eigen::Index row, const AdditiveWeights* additive);

// Finds the query row: the first token spelled exactly `spec`, else a 1-based position.
// Throws UsageError naming the tokens when neither fits.
Eigen::Index find_query_row(const std::vector<std::string>& tokens, const std::string& spec);

}  // namespace attntrace
