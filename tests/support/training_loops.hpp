// What the tests of attntrace train share: matrices as plain grids, one row of softmax weights
// in plain loops, a small example (a focus or target context vectors) to check gradients on, and
// a run's JSON.
#pragma once

#include "core/training.hpp"
#include "support/cli.hpp"

#include "support/catch.hpp"
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

namespace training_loops {

using Grid = std::vector<std::vector<double>>;

inline Grid grid_of(const attntrace::Matrix& m) {
    Grid g(static_cast<std::size_t>(m.rows()), std::vector<double>(static_cast<std::size_t>(m.cols())));
    for (Eigen::Index i = 0; i < m.rows(); ++i)
        for (Eigen::Index j = 0; j < m.cols(); ++j) g[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] = m(i, j);
    return g;
}

// Row `i` of softmax(Q·Kᵀ/√d_k), causal or not, in plain loops.
inline std::vector<double> weights_row(const Grid& Q, const Grid& K, std::size_t i, bool causal) {
    const double scale = std::sqrt(static_cast<double>(Q[0].size()));
    const std::size_t visible = causal ? i + 1 : K.size();
    std::vector<double> a(K.size(), 0.0);
    double top = -1e300, total = 0;
    std::vector<double> s(visible);
    for (std::size_t j = 0; j < visible; ++j) {
        double d = 0;
        for (std::size_t c = 0; c < Q[0].size(); ++c) d += Q[i][c] * K[j][c];
        s[j] = d / scale;
        top = std::max(top, s[j]);
    }
    for (std::size_t j = 0; j < visible; ++j) total += std::exp(s[j] - top);
    for (std::size_t j = 0; j < visible; ++j) a[j] = std::exp(s[j] - top) / total;
    return a;
}

// Four tokens of three numbers; token 3 should look at token 1, or the context vectors should
// be a fixed 4 × 2.
inline attntrace::TrainingExample small_example(bool focus) {
    attntrace::TrainingExample e;
    e.tokens = {"a", "b", "c", "d"};
    e.inputs = attntrace::Matrix(4, 3);
    e.inputs << 0.5, -0.2, 0.9, 1.1, 0.3, -0.4, -0.7, 0.8, 0.2, 0.1, -0.6, 0.5;
    if (focus) {
        e.focus = attntrace::TrainingExample::Focus{2, 0};
    } else {
        e.target = attntrace::Matrix(4, 2);
        *e.target << 0.3, -0.1, 0.8, 0.2, -0.5, 0.4, 0.0, 0.9;
    }
    return e;
}

// The task of the two small examples, a focus and a target, both trained on.
inline attntrace::TrainingSet small_set() {
    attntrace::TrainingSet set;
    set.d_in = 3;
    set.task = "small";
    set.train = {small_example(true), small_example(false)};
    set.target_width = 2;
    return set;
}

// The JSON a run printed, which must have succeeded.
inline nlohmann::json json_of(const cli::Result& r) {
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(r.out);
}

}  // namespace training_loops
