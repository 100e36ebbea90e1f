// What the tests' second implementations share: matrices as rows of doubles (Grid), numbers
// from a generator independent of attntrace's, and the few products they need, all in plain
// loops (no Eigen), so that they check the program rather than repeat it.
#pragma once

#include "core/matrix.hpp"
#include "core/problem.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace naive {

using Grid = std::vector<std::vector<double>>;

// Numbers in [-1, 1) from a 64-bit LCG (Knuth's MMIX constants), independent of attntrace's generator.
struct Lcg {
    std::uint64_t state;
    double next() {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return static_cast<double>(state >> 11) / static_cast<double>(1ULL << 53) * 2 - 1;
    }
    Grid grid(std::size_t rows, std::size_t cols) {
        Grid g(rows, std::vector<double>(cols));
        for (auto& row : g)
            for (double& v : row) v = next();
        return g;
    }
};

// a·b: (m × k)·(k × n) → m × n.
inline Grid times(const Grid& a, const Grid& b) {
    Grid out(a.size(), std::vector<double>(b[0].size(), 0.0));
    for (std::size_t i = 0; i < a.size(); ++i)
        for (std::size_t j = 0; j < b[0].size(); ++j)
            for (std::size_t k = 0; k < b.size(); ++k) out[i][j] += a[i][k] * b[k][j];
    return out;
}

// Columns first … first + count − 1 of a (a head's block).
inline Grid columns(const Grid& a, std::size_t first, std::size_t count) {
    Grid out(a.size());
    for (std::size_t i = 0; i < a.size(); ++i)
        out[i].assign(a[i].begin() + static_cast<long>(first), a[i].begin() + static_cast<long>(first + count));
    return out;
}

// Rows first … first + count − 1 of a (a head's rows of W_o).
inline Grid rows_of(const Grid& a, std::size_t first, std::size_t count) {
    return Grid(a.begin() + static_cast<long>(first), a.begin() + static_cast<long>(first + count));
}

// The grid as attntrace's matrix, to hand to the code under test.
inline attntrace::Matrix matrix_of(const Grid& g) {
    attntrace::Matrix m(static_cast<Eigen::Index>(g.size()), static_cast<Eigen::Index>(g[0].size()));
    for (std::size_t i = 0; i < g.size(); ++i)
        for (std::size_t j = 0; j < g[0].size(); ++j) m(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = g[i][j];
    return m;
}

// W_q, W_k, W_v (and W_o) as the code under test takes them, without biases.
inline attntrace::Projections projections(attntrace::Matrix q, attntrace::Matrix k, attntrace::Matrix v,
                                          std::optional<attntrace::Matrix> o = std::nullopt) {
    attntrace::Projections w;
    w.query = std::move(q), w.key = std::move(k), w.value = std::move(v), w.output = std::move(o);
    return w;
}

}  // namespace naive
