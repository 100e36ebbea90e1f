// Where a cell of a trace comes from: the cells its formula reads. A stage's cell reads cells
// of the stages before it (a score: its query row and key row; a weight: its row of masked
// scores; a context entry: its row of weights and column of values); a gradient's cell reads
// the gradients nearer the loss and the forward stages its formula names. attntrace step marks
// them (Enter) and the HTML page highlights them.
#pragma once

#include "core/gradients.hpp"
#include "core/stage.hpp"

#include <string>
#include <vector>

namespace attntrace {

// A matrix named as the trace names it, so that it survives a new trace: a stage's id and head,
// or a parameter's name.
struct Place {
    StageId id = StageId::inputs;
    int head = 0;
    std::string parameter;  // non-empty: the parameter of this name
    bool gradient = false;  // the backward pass's gradient of that stage or parameter
    bool operator==(const Place&) const = default;
};

// Cells that a cell was computed from: whole rows, whole columns or one cell of a matrix (a
// row or column of -1: all of them).
struct Mark {
    Place place;
    Eigen::Index row = -1, col = -1;
};

// The cells cell (row, col) of `stage` was computed from: empty for a stage that comes from
// the input itself.
std::vector<Mark> forward_sources(const Trace& trace, const Stage& stage, Eigen::Index row, Eigen::Index col);

// The cells cell (row, col) of the gradient `gradient` (one of gradients.stages) was computed
// from. Empty for the loss's own derivative, for a cell of a focus loss's dL/dA other than its
// pair, and for the encoder–decoder gradients before the scores.
std::vector<Mark> gradient_sources(const Trace& trace, const Gradients& gradients, const Stage& gradient,
                                   Eigen::Index row, Eigen::Index col);

}  // namespace attntrace
