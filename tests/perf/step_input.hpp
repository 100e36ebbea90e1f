// The input both step benchmarks (step_redraw.cpp, step_ncurses.cpp) step through: n tokens of
// d = 16 numbers drawn from a fixed seed.
#pragma once

#include "core/generator.hpp"
#include "core/problem.hpp"

#include <fmt/format.h>

namespace attntrace::bench {

inline Problem step_input(Eigen::Index n) {
    SplitMix64 rng(7);
    SingleSequenceInput single;
    for (Eigen::Index i = 0; i < n; ++i) single.sequence.tokens.push_back(fmt::format("t{}", i + 1));
    single.sequence.vectors = random_matrix(rng, n, 16, 1.0);
    Problem p;
    p.origin = fmt::format("n{}", n);
    p.input = std::move(single);
    return p;
}

}  // namespace attntrace::bench
