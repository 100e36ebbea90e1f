// The worked example of one query (-q/--query): computed from a trace (core/worked.hpp holds
// its numbers).
#pragma once

#include "core/stage.hpp"
#include "core/worked.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace attntrace {

// The worked example of `row` in a traced single-sequence or bahdanau problem: the trace
// supplies every matrix, its parameters included.
// With several heads, `head` (1-based) is the head worked through, followed by the output's
// row: the heads' contexts side by side times W_o. Throws UsageError for a head that is not.
WorkedExample work_through(const Trace& trace, Eigen::Index row, int head = 1);

// Row `row` of the queries, keys or values (`id`) of `head` (1-based; 0 with one head) of a
// single-sequence trace with learned projections, written out column by column: the token's
// input times the columns of W_q, W_k or W_v that the head reads (plus the bias).
WorkedProjection work_projection(const Trace& trace, StageId id, Eigen::Index row, int head);

// Adds to `w` its row worked through by the online softmax in tiles of `size` keys (`causal`:
// the tiles after the query are skipped, as the streaming path skips them). Softmax only.
void work_tiles(WorkedExample& w, Eigen::Index size, bool causal);

// Finds the query row: the first token spelled exactly `spec`, else a 1-based position.
// Throws UsageError naming the tokens when neither fits; `what` starts the message (the
// option, or what of it names the token).
Eigen::Index find_query_row(const std::vector<std::string>& tokens, const std::string& spec,
                            std::string_view what = "--query");

}  // namespace attntrace
