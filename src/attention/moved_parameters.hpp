// The numbers a backward pass can move, found inside the problem they came from: the trace's
// parameters written into the problem as its own weights (so that generated weights can be
// moved like given ones), and where each parameter and the inputs live there. The gradient
// check nudges them one at a time; a learning step moves them all by −η·dL/dθ.
#pragma once

#include "core/problem.hpp"
#include "core/stage.hpp"

#include <string>
#include <vector>

namespace attntrace {

// One matrix of the problem, row by row, keyed as its gradient is ("W_q", "inputs",
// "encoder_states", …).
struct MovableMatrix {
    std::string key;
    double* data = nullptr;
    Eigen::Index rows = 0, cols = 0;

    double& at(Eigen::Index r, Eigen::Index c) const { return data[r * cols + c]; }
};

// Writes the parameters `trace` used into `problem` as the input's own weights (generated
// ones too: the trace must then be run again without --dim), and materialises the vectors.
void give_parameters(Problem& problem, const Trace& trace);

// Where each parameter of `trace` lives in `problem` (after give_parameters), in the trace's
// order, followed by the inputs (or the embeddings) when `inputs` is set: a single-sequence
// problem's vectors, or a source/target problem's encoder and then decoder states.
std::vector<MovableMatrix> movable_matrices(Problem& problem, const Trace& trace, bool inputs);

}  // namespace attntrace
