// The worked example (-q/--query) as lines of arithmetic, for the table and markdown formats.
#pragma once

#include "attention/worked.hpp"

#include <string>
#include <vector>

namespace attntrace {

std::vector<std::string> worked_lines(const WorkedExample& worked, int digits);

// The arithmetic behind one entry of the worked row, for the quiz's feedback: of `stage` at
// column `col`. Scores: that key's dot product (or its additive score with the tanh features);
// scaled: that score and its division; masked: the row's mask and what it leaves of this
// entry; weights: the row's mask and normalisation (a weight needs every score of its row);
// context and output: entry `col` as a sum of products. Empty for other stages.
std::vector<std::string> worked_entry_lines(const WorkedExample& worked, StageId stage, std::size_t col, int digits);

// One projected vector written out entry by entry (q_i = x_i·W_q …).
std::vector<std::string> projection_lines(const WorkedProjection& projection, int digits);

// Does -q work this stage's cells (scores to context, and the output)?
bool worked_stage(StageId id);

// The arithmetic of every cell of row `row` of `stage`, as -q works it: a list of lines per
// column, each empty where nothing computes the stage (an input, a weight). `head`: the head
// the row is of (1 with one head). Throws what work_through throws.
std::vector<std::vector<std::string>> row_arithmetic(const Trace& trace, const Stage& stage, Eigen::Index row, int head,
                                                     int digits);

}  // namespace attntrace
