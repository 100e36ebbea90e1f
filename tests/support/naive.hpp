// A second, deliberately naive implementation of attention for the tests: plain nested loops
// over std::vector, written from the formulas, sharing no code with src/attention/.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

namespace naive {

using Rows = std::vector<std::vector<double>>;

inline Rows matmul(const Rows& a, const Rows& b) {  // (m×k)·(k×n)
    Rows out(a.size(), std::vector<double>(b.front().size(), 0.0));
    for (std::size_t i = 0; i < a.size(); ++i)
        for (std::size_t j = 0; j < b.front().size(); ++j)
            for (std::size_t k = 0; k < b.size(); ++k) out[i][j] += a[i][k] * b[k][j];
    return out;
}

inline Rows transpose(const Rows& a) {
    Rows out(a.front().size(), std::vector<double>(a.size()));
    for (std::size_t i = 0; i < a.size(); ++i)
        for (std::size_t j = 0; j < a[i].size(); ++j) out[j][i] = a[i][j];
    return out;
}

// Softmax straight from the definition: exp(s_j) / Σ exp(s_k), masked entries skipped.
inline Rows softmax_rows(const Rows& scores, const std::vector<std::vector<bool>>* allowed = nullptr) {
    Rows out = scores;
    for (std::size_t i = 0; i < scores.size(); ++i) {
        double sum = 0;
        for (std::size_t j = 0; j < scores[i].size(); ++j)
            if (!allowed || (*allowed)[i][j]) sum += std::exp(scores[i][j]);
        for (std::size_t j = 0; j < scores[i].size(); ++j)
            out[i][j] = (!allowed || (*allowed)[i][j]) ? std::exp(scores[i][j]) / sum : 0.0;
    }
    return out;
}

struct SelfAttention {
    Rows scores, scaled, weights, context;
};

// Scaled dot-product self-attention; causal hides key j > query i.
inline SelfAttention self_attention(const Rows& x, const Rows& wq, const Rows& wk, const Rows& wv,
                                    bool causal) {
    const Rows q = matmul(x, wq), k = matmul(x, wk), v = matmul(x, wv);
    SelfAttention r;
    r.scores = matmul(q, transpose(k));
    r.scaled = r.scores;
    const double root = std::sqrt(static_cast<double>(wq.front().size()));
    for (auto& row : r.scaled)
        for (auto& s : row) s /= root;
    std::vector<std::vector<bool>> allowed(x.size(), std::vector<bool>(x.size(), true));
    if (causal)
        for (std::size_t i = 0; i < x.size(); ++i)
            for (std::size_t j = i + 1; j < x.size(); ++j) allowed[i][j] = false;
    r.weights = softmax_rows(r.scaled, &allowed);
    r.context = matmul(r.weights, v);
    return r;
}

}  // namespace naive
