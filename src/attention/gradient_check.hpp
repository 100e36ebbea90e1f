// The backward pass checked against central finite differences: every entry of every
// parameter and of the inputs is moved by ±h and ±2h, the whole trace run again each time, and
// the difference quotient compared with the gradient the backward pass gives. Toy sizes only:
// four traces per entry (four more for each halving of h, where an entry needs it). This is
// what --check reports for a backward run.
#pragma once

#include "attention/trace_options.hpp"
#include "core/gradients.hpp"
#include "core/problem.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace attntrace {

// One matrix's comparison: its largest errors, and the entry where the relative one is.
struct MatrixCheck {
    std::string key;             // the gradient's key: "W_q", "inputs", "encoder_states", …
    std::size_t entries = 0;     // entries moved
    double worst_relative = 0;   // max over the entries of |g − d| / max(|g|, |d|, floor)
    double worst_absolute = 0;   // max |g − d|
    Eigen::Index row = 0, col = 0;  // where the relative error is largest (0-based)
    std::string row_label, col_label;
    double gradient = 0, difference = 0;  // g and d there
    std::size_t refined = 0;     // entries whose difference was taken again with a smaller h
};

struct GradientCheck {
    double loss = 0;  // L at the unmoved numbers
    // h for an entry θ is step·max(1, |θ|). The difference is of fourth order (five points:
    // θ ± h, θ ± 2h), so its truncation error goes as h⁴ and h can be large enough that the
    // loss's rounding (about ε·|L|/h) stays near 1e-12.
    double step = 1e-3;
    // Where an entry's relative error is above the tolerance, its difference is taken again
    // with h halved, up to `halvings` times, and the one nearest the gradient is kept: where L
    // curves sharply (large scores, a saturated softmax) the first one's truncation error can
    // be above the tolerance while the gradient is right. A wrong gradient stays off at every h.
    double tolerance = 1e-6;
    int halvings = 3;
    // The relative error's denominator never goes below the floor: 1e-6 × the largest |g| of the
    // whole check (1e-6 when every gradient is 0), or, if larger, what a difference quotient can
    // resolve at the smallest h (L's rounding, taken as 100 units in its last place, over h)
    // divided by the tolerance. An entry that small is measured against the floor.
    double floor = 0;
    std::vector<MatrixCheck> matrices;  // the parameters in the trace's order, then the inputs

    std::size_t entries() const;
    const MatrixCheck& worst() const;  // the matrix with the largest relative error
};

// Traces `problem` with `options` in float64 (whatever --dtype says; --query and --tiles
// dropped), runs the backward pass of `loss` on it, and compares every parameter and input
// entry with its central difference. Generated weights are checked as the numbers they are.
GradientCheck check_gradients(const Problem& problem, const TraceOptions& options, const Loss& loss);

}  // namespace attntrace
