// Attention in one function: the whole of scaled dot-product self-attention as plain loops
// over plain arrays, so that every number can be followed by eye. Read this first.
// Everything else attntrace computes with is this function made faster: attention/kernels.hpp
// is the next version (each pass a kernel, Eigen's products, OpenMP over blocks of rows), and
// single.cpp's attend() calls those kernels in this order for every trace; attention/
// streaming.cpp is the one after (passes 2 to 4 fused, the keys walked in blocks with an
// online softmax, never holding the n × n matrix), the path of --summary. The tests hold the
// kernels pass by pass, the streaming path and every mode's trace to this one
// (tests/test_modes.cpp), which shares no code with them.
//
// Shapes, with row vectors (one token per row, as everywhere in attntrace):
//   x                 n × d_in     the embeddings
//   w_q, w_k          d_in × d_k   learned projections
//   w_v               d_in × d_v
//   q, k              n × d_k      queries, keys
//   v                 n × d_v      values
//   scores, weights   n × n        row i: query i against every key j
//   context           n × d_v      row i: the weighted sum of the values for token i
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace attntrace::reference {

using Rows = std::vector<std::vector<double>>;

// (m × k)·(k × n) → m × n.
inline Rows matmul(const Rows& a, const Rows& b) {
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

// Softmax straight from the definition, per row: exp(s_j) / Σ_k exp(s_k), over the entries
// `allowed` keeps (all when it is null); the others get weight 0.
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

// Every intermediate matrix, as the trace shows them.
struct SelfAttention {
    Rows q, k, v, scores, scaled, weights, context;
};

// Scaled dot-product self-attention; `causal` hides key j from query i when j > i.
inline SelfAttention self_attention(const Rows& x, const Rows& w_q, const Rows& w_k, const Rows& w_v, bool causal) {
    const std::size_t n = x.size(), d_in = x.front().size(), d_k = w_q.front().size(), d_v = w_v.front().size();
    SelfAttention a;

    // pass 1: project every token: q_i = x_i·W_q, k_i = x_i·W_k, v_i = x_i·W_v
    a.q.assign(n, std::vector<double>(d_k, 0.0));
    a.k.assign(n, std::vector<double>(d_k, 0.0));
    a.v.assign(n, std::vector<double>(d_v, 0.0));
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t c = 0; c < d_in; ++c) {
            for (std::size_t e = 0; e < d_k; ++e) a.q[i][e] += x[i][c] * w_q[c][e], a.k[i][e] += x[i][c] * w_k[c][e];
            for (std::size_t e = 0; e < d_v; ++e) a.v[i][e] += x[i][c] * w_v[c][e];
        }

    // pass 2: score every (query, key) pair, s_ij = q_i·k_j, and scale by 1/√d_k
    a.scores.assign(n, std::vector<double>(n, 0.0));
    a.scaled = a.scores;
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j) {
            for (std::size_t e = 0; e < d_k; ++e) a.scores[i][j] += a.q[i][e] * a.k[j][e];
            a.scaled[i][j] = a.scores[i][j] / std::sqrt(static_cast<double>(d_k));
        }

    // pass 3: exclude the keys a query may not see (a causal model: those after it), then
    // softmax each row over the keys that are left
    std::vector<std::vector<bool>> allowed(n, std::vector<bool>(n, true));
    for (std::size_t i = 0; i < n && causal; ++i)
        for (std::size_t j = i + 1; j < n; ++j) allowed[i][j] = false;
    a.weights = softmax_rows(a.scaled, &allowed);

    // pass 4: mix the values: z_i = Σ_j a_ij·v_j
    a.context.assign(n, std::vector<double>(d_v, 0.0));
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j)
            for (std::size_t e = 0; e < d_v; ++e) a.context[i][e] += a.weights[i][j] * a.v[j][e];
    return a;
}

}  // namespace attntrace::reference
