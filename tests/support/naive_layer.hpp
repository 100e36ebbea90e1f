// A whole attention layer's forward pass and loss in plain loops, written for the backward
// tests (test_backward.cpp) to take finite differences of: every option the trace has (heads,
// grouped key/value heads, RoPE, sinusoidal positions, ln_1, biases, W_o, every mask and way
// of masking, temperature, scale, sum normalisation) and Bahdanau's three scores. It shares no
// code with attntrace: its numbers are the tests' own. A hook sees every intermediate matrix
// as it is made, so a test can nudge one entry of any stage and watch the loss.
#pragma once

#include "support/naive.hpp"

#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace naive {

// Every independent variable by name, as the gradients are keyed: "W_q", "b_q" (one row),
// "gamma", "inputs" (or "embeddings" with sinusoidal positions), "W_a", "encoder_states", …
using Vars = std::map<std::string, Grid>;

// Called with each intermediate matrix as it is computed: (stage, head, matrix). Heads count
// from 1 with several, 0 with one; "keys", "values" and "keys_rotated" are the key/value
// heads' own (head = the key/value head's first query head's number is not used: `group`).
using Hook = std::function<void(const std::string& stage, int head, Grid& m)>;

struct LayerSpec {
    bool plain = false;  // Q = K = V = X
    int heads = 1, kv_heads = 0;  // 0: a key/value head per head
    bool causal = false;
    long window = 0;             // 0: none
    std::vector<bool> padding;   // per token (empty: none)
    enum class Fill { minus_infinity, value } fill = Fill::minus_infinity;
    double fill_value = 0;
    bool after_softmax = false;
    double scale = 1;        // the divisor of the scores
    double temperature = 1;
    bool sum_normalize = false;
    bool sinusoidal = false, rope = false;
    long first_position = 0;
    bool layernorm = false;
    double epsilon = 1e-5;
};

struct LossSpec {
    enum class Kind { focus, target, sum } kind = Kind::sum;
    std::size_t query = 0, key = 0;
    int head = 0;  // focus: 1-based with several heads, 0 with one
    Grid target;
};

inline const double minus_infinity = -std::numeric_limits<double>::infinity();

inline Grid zeros(std::size_t rows, std::size_t cols) { return Grid(rows, std::vector<double>(cols, 0.0)); }

inline void run_hook(const Hook& hook, const std::string& stage, int head, Grid& m) {
    if (hook) hook(stage, head, m);
}

// The loss of a result matrix (or of one weight, for focus).
inline double loss_of(const LossSpec& loss, const Grid& result) {
    double l = 0;
    for (std::size_t i = 0; i < result.size(); ++i)
        for (std::size_t j = 0; j < result[i].size(); ++j) {
            const double y = result[i][j];
            l += loss.kind == LossSpec::Kind::sum ? y : 0.5 * (y - loss.target[i][j]) * (y - loss.target[i][j]);
        }
    return l;
}

// Row i's weights from its scores: softmax over the finite scores at temperature T (a row of
// nothing but −∞ stays 0), or each finite score divided by the sum of them.
inline std::vector<double> normalise_row(const std::vector<double>& s, double temperature, bool by_sum) {
    std::vector<double> a(s.size(), 0.0);
    double total = 0;
    for (std::size_t j = 0; j < s.size(); ++j)
        if (s[j] != minus_infinity) total += by_sum ? s[j] : std::exp(s[j] / temperature);
    if (total == 0 && !by_sum) return a;
    for (std::size_t j = 0; j < s.size(); ++j)
        if (s[j] != minus_infinity) a[j] = (by_sum ? s[j] : std::exp(s[j] / temperature)) / total;
    return a;
}

inline bool hidden(const LayerSpec& spec, std::size_t i, std::size_t j) {
    const long d = static_cast<long>(i) - static_cast<long>(j);
    if (spec.causal && j > i) return true;
    if (spec.window > 0 && (spec.causal ? d >= spec.window : std::labs(d) >= spec.window)) return true;
    return !spec.padding.empty() && spec.padding[j];
}

// Pair (c, c + half) of row r turned by (first + r)·10000^(−2c/d).
inline Grid rotated(const Grid& m, long first) {
    const std::size_t d = m[0].size(), half = d / 2;
    Grid out = m;
    for (std::size_t r = 0; r < m.size(); ++r)
        for (std::size_t c = 0; c < half; ++c) {
            const double phi = static_cast<double>(first + static_cast<long>(r)) *
                               std::pow(10000.0, -2.0 * static_cast<double>(c) / static_cast<double>(d));
            out[r][c] = m[r][c] * std::cos(phi) - m[r][c + half] * std::sin(phi);
            out[r][c + half] = m[r][c + half] * std::cos(phi) + m[r][c] * std::sin(phi);
        }
    return out;
}

// The weights and context of one head from its queries, keys and values (RoPE already applied).
inline Grid attend_one(const LayerSpec& spec, const Grid& q, const Grid& k, const Grid& v, int head, const Hook& hook,
                       Grid* weights_out) {
    const std::size_t n = q.size(), nk = k.size();
    Grid s = zeros(n, nk);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < nk; ++j)
            for (std::size_t c = 0; c < q[0].size(); ++c) s[i][j] += q[i][c] * k[j][c];
    run_hook(hook, "scores", head, s);
    for (auto& row : s)
        for (double& x : row) x /= spec.scale;
    run_hook(hook, "scaled", head, s);
    if (!spec.after_softmax)
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < nk; ++j)
                if (hidden(spec, i, j)) s[i][j] = spec.fill == LayerSpec::Fill::value ? spec.fill_value : minus_infinity;
    run_hook(hook, "masked", head, s);
    Grid a(n);
    for (std::size_t i = 0; i < n; ++i) a[i] = normalise_row(s[i], spec.temperature, spec.sum_normalize);
    if (spec.after_softmax)
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < nk; ++j)
                if (hidden(spec, i, j)) a[i][j] = 0;
    run_hook(hook, "weights", head, a);
    if (weights_out) *weights_out = a;
    Grid z = times(a, v);
    run_hook(hook, "context", head, z);
    return z;
}

inline Grid with_bias(Grid m, const Vars& vars, const std::string& name) {
    const auto b = vars.find(name);
    if (b == vars.end()) return m;
    for (auto& row : m)
        for (std::size_t c = 0; c < row.size(); ++c) row[c] += b->second[0][c];
    return m;
}

// X from the variables: E + PE with sinusoidal positions, then LN(X) with ln_1.
inline Grid layer_inputs(const LayerSpec& spec, const Vars& vars, const Hook& hook) {
    Grid x = vars.at(spec.sinusoidal ? "embeddings" : "inputs");
    if (spec.sinusoidal) {
        run_hook(hook, "embeddings", 0, x);
        const std::size_t d = x[0].size();
        for (std::size_t r = 0; r < x.size(); ++r)
            for (std::size_t c = 0; c < d; ++c) {
                const double p = static_cast<double>(spec.first_position + static_cast<long>(r));
                const double w = std::pow(10000.0, -2.0 * static_cast<double>(c / 2) / static_cast<double>(d));
                x[r][c] += c % 2 == 0 ? std::sin(p * w) : std::cos(p * w);
            }
    }
    run_hook(hook, "inputs", 0, x);
    if (!spec.layernorm) return x;
    const Grid& gamma = vars.at("gamma");
    const Grid& beta = vars.at("beta");
    for (auto& row : x) {
        double mean = 0, var = 0;
        for (const double v : row) mean += v;
        mean /= static_cast<double>(row.size());
        for (const double v : row) var += (v - mean) * (v - mean);
        var /= static_cast<double>(row.size());
        for (std::size_t c = 0; c < row.size(); ++c) row[c] = (row[c] - mean) / std::sqrt(var + spec.epsilon) * gamma[0][c] + beta[0][c];
    }
    run_hook(hook, "layernorm", 0, x);
    return x;
}

// The loss of a single-sequence layer (plain, self, causal) at `vars`.
inline double layer_loss(const LayerSpec& given, const Vars& vars, const LossSpec& loss, const Hook& hook = {}) {
    LayerSpec spec = given;
    if (spec.kv_heads == 0) spec.kv_heads = spec.heads;
    const Grid x = layer_inputs(spec, vars, hook);
    Grid q = spec.plain ? x : with_bias(times(x, vars.at("W_q")), vars, "b_q");
    Grid k = spec.plain ? x : with_bias(times(x, vars.at("W_k")), vars, "b_k");
    Grid v = spec.plain ? x : with_bias(times(x, vars.at("W_v")), vars, "b_v");
    run_hook(hook, "queries", 0, q), run_hook(hook, "keys", 0, k), run_hook(hook, "values", 0, v);
    const auto heads = static_cast<std::size_t>(spec.heads), per = heads / static_cast<std::size_t>(spec.kv_heads);
    const std::size_t d_head = q[0].size() / heads, d_v = v[0].size() / static_cast<std::size_t>(spec.kv_heads);
    const bool several = heads > 1;
    std::vector<Grid> k_groups, v_groups;  // each key/value head's own, rotated once for its query heads
    for (std::size_t g = 0; g < static_cast<std::size_t>(spec.kv_heads); ++g) {
        k_groups.push_back(columns(k, g * d_head, d_head));
        v_groups.push_back(columns(v, g * d_v, d_v));
        if (spec.rope) {
            k_groups.back() = rotated(k_groups.back(), spec.first_position);
            run_hook(hook, "keys_rotated", several ? static_cast<int>(g * per + 1) : 0, k_groups.back());
        }
    }
    Grid concat(x.size());
    double focus = 0;
    for (std::size_t h = 0; h < heads; ++h) {
        const int label = several ? static_cast<int>(h + 1) : 0;
        Grid qh = columns(q, h * d_head, d_head);
        if (spec.rope) qh = rotated(qh, spec.first_position), run_hook(hook, "queries_rotated", label, qh);
        Grid kh = k_groups[h / per];
        run_hook(hook, "keys_share", label, kh);  // this head's own copy of its key/value head's keys
        Grid a;
        const Grid z = attend_one(spec, qh, kh, v_groups[h / per], label, hook, &a);
        if (loss.kind == LossSpec::Kind::focus && loss.head == label) focus = -std::log(a[loss.query][loss.key]);
        for (std::size_t i = 0; i < x.size(); ++i) concat[i].insert(concat[i].end(), z[i].begin(), z[i].end());
    }
    if (loss.kind == LossSpec::Kind::focus) return focus;
    if (several) run_hook(hook, "concat", 0, concat);
    if (vars.count("W_o") == 0) return loss_of(loss, concat);
    Grid out = with_bias(times(concat, vars.at("W_o")), vars, "b_o");
    run_hook(hook, "output", 0, out);
    return loss_of(loss, out);
}

struct PairSpec {
    enum class Score { additive, dot, general } score = Score::additive;
    std::vector<bool> source_mask;  // empty: every source position visible
    double temperature = 1;
    bool sum_normalize = false;
};

// The loss of encoder–decoder attention at `vars` ("encoder_states", "decoder_states", and
// "W_a", "U_a", "v_a" or "W").
inline double pair_loss(const PairSpec& spec, const Vars& vars, const LossSpec& loss, const Hook& hook = {}) {
    Grid h = vars.at("encoder_states"), s = vars.at("decoder_states");
    run_hook(hook, "encoder_states", 0, h), run_hook(hook, "decoder_states", 0, s);
    Grid e = zeros(s.size(), h.size());
    if (spec.score == PairSpec::Score::additive) {
        Grid ps = times(s, vars.at("W_a")), ph = times(h, vars.at("U_a"));
        run_hook(hook, "projected_decoder", 0, ps), run_hook(hook, "projected_encoder", 0, ph);
        for (std::size_t t = 0; t < s.size(); ++t)
            for (std::size_t j = 0; j < h.size(); ++j)
                for (std::size_t a = 0; a < ps[0].size(); ++a) e[t][j] += vars.at("v_a")[0][a] * std::tanh(ps[t][a] + ph[j][a]);
    } else {
        Grid ps = spec.score == PairSpec::Score::general ? times(s, vars.at("W")) : s;
        Grid ph = h;
        run_hook(hook, "projected_decoder", 0, ps), run_hook(hook, "projected_encoder", 0, ph);
        for (std::size_t t = 0; t < s.size(); ++t)
            for (std::size_t j = 0; j < h.size(); ++j)
                for (std::size_t c = 0; c < ph[0].size(); ++c) e[t][j] += ps[t][c] * ph[j][c];
    }
    LayerSpec as_layer;
    as_layer.temperature = spec.temperature;
    as_layer.sum_normalize = spec.sum_normalize;
    as_layer.padding = spec.source_mask;
    for (std::size_t j = 0; j < as_layer.padding.size(); ++j) as_layer.padding[j] = !spec.source_mask[j];
    run_hook(hook, "scores", 0, e);
    // the rest as one head of self-attention with the source mask as padding: e' = e (no scale)
    Grid masked = e;
    run_hook(hook, "scaled", 0, masked);
    for (std::size_t t = 0; t < s.size(); ++t)
        for (std::size_t j = 0; j < h.size(); ++j)
            if (hidden(as_layer, t, j)) masked[t][j] = minus_infinity;
    run_hook(hook, "masked", 0, masked);
    Grid a(s.size());
    for (std::size_t t = 0; t < s.size(); ++t) a[t] = normalise_row(masked[t], spec.temperature, spec.sum_normalize);
    run_hook(hook, "weights", 0, a);
    if (loss.kind == LossSpec::Kind::focus) return -std::log(a[loss.query][loss.key]);
    Grid c = times(a, h);
    run_hook(hook, "context", 0, c);
    return loss_of(loss, c);
}

}  // namespace naive
