// A learner's attention with one classic mistake made, in plain loops written for the tests
// (never attntrace's practice/mistakes.cpp): every stage from the projections to the output,
// each head the same way, so that the tests can hand check-answers and the quiz the numbers
// such a learner gets and see that mistake, and nothing else, named.
#pragma once

#include "support/naive.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace learner {

using naive::Grid;
constexpr double minus_inf = -std::numeric_limits<double>::infinity();

// What a run computes from, as the test knows it.
struct Model {
    std::string name;
    bool pair = false;  // bahdanau
    // A single sequence: X, and W_q, W_k, W_v (d_in × heads·d_head) unless plain.
    Grid x;
    bool learned = false;
    bool scaled = true;  // divided by √d_head (plain mode is not)
    Grid wq, wk, wv;
    std::optional<Grid> wo;
    int heads = 1;
    bool causal = false;
    std::size_t window = 0;  // --window w: causal, i − j ≥ w hidden; else |i − j| ≥ w (0: none)
    std::vector<bool> pad;  // per token: hidden from every query
    bool sum = false;       // --normalize sum
    std::optional<Grid> angles;  // RoPE: n × d_head/2, the angle of each pair of each position
    // Bahdanau: decoder states S (rows), encoder states H (columns), W_a, U_a, v_a, the mask.
    Grid s, h, wa, ua;
    std::vector<double> va;
    std::vector<bool> visible;  // per source position

    std::size_t d_in() const { return x.empty() ? 0 : x[0].size(); }
    std::size_t d_head() const { return learned ? wq[0].size() / static_cast<std::size_t>(heads) : d_in(); }
    std::size_t d_v() const { return learned ? wv[0].size() / static_cast<std::size_t>(heads) : d_in(); }
    bool any_pad() const { return std::find(pad.begin(), pad.end(), true) != pad.end(); }
    bool masks() const {
        if (pair) return std::find(visible.begin(), visible.end(), false) != visible.end();
        return causal || window > 0 || any_pad();
    }
    // Does the window hide (i, j), as the run applies it, or, `two_sided`, as self mode does?
    bool outside_window(std::size_t i, std::size_t j, bool two_sided = false) const {
        const auto gap = static_cast<long>(i) - static_cast<long>(j);
        return window > 0 && (causal && !two_sided ? gap >= static_cast<long>(window) : std::labs(gap) >= static_cast<long>(window));
    }
};

// One way of making a mistake ("" : none).
struct Way {
    std::string mistake;
    double fill = 0;             // finite_fill
    double width = 0;            // sqrt_d_model
    // no_mask: "all", "causal", "window" or "padding"; or "two_sided": causal with a window,
    // the window taken on both sides (|i − j| < w) and no causal mask
    std::string forgot = "all";
    bool raw = false, every = false;  // context_from_scores: unscaled scores; the hidden keys' too
};

inline std::string describe(const Way& w) {
    std::string text = w.mistake.empty() ? "no mistake" : w.mistake;
    if (w.mistake == "finite_fill") text += " " + std::to_string(w.fill);
    if (w.mistake == "sqrt_d_model") text += " √" + std::to_string(w.width);
    if (w.mistake == "no_mask") text += " (" + w.forgot + ")";
    if (w.mistake == "context_from_scores") text += std::string(w.raw ? " raw" : " scaled") + (w.every ? " every key" : "");
    return text;
}

inline Grid transpose(const Grid& a) {
    Grid t(a[0].size(), std::vector<double>(a.size()));
    for (std::size_t i = 0; i < a.size(); ++i)
        for (std::size_t j = 0; j < a[0].size(); ++j) t[j][i] = a[i][j];
    return t;
}

// Head h (0-based) of `width` columns, or, the wrong way, the matrix read row by row and cut
// into pieces of n·width numbers.
inline Grid split(const Grid& full, std::size_t h, std::size_t width, bool by_rows) {
    Grid out(full.size(), std::vector<double>(width));
    std::vector<double> flat;
    for (const auto& row : full) flat.insert(flat.end(), row.begin(), row.end());
    for (std::size_t i = 0; i < full.size(); ++i)
        for (std::size_t c = 0; c < width; ++c)
            out[i][c] = by_rows ? flat[h * full.size() * width + i * width + c] : full[i][h * width + c];
    return out;
}

struct Head {
    Grid q, k, v, q_rotated, k_rotated, scores, scaled, masked, weights, context;
    Grid contribution;  // several heads with W_o: the context times the head's rows of W_o
};

struct Stages {
    std::vector<Head> heads;
    Grid concat, output;
};

inline bool hidden(const Model& m, std::size_t i, std::size_t j) {
    if (m.pair) return !m.visible[j];
    return (m.causal && j > i) || m.outside_window(i, j) || (!m.pad.empty() && m.pad[j]);
}

// Is (i, j) hidden before the softmax by what the learner applied?
inline bool hidden_by_learner(const Model& m, const Way& w, std::size_t i, std::size_t j) {
    if (!hidden(m, i, j) || w.mistake == "mask_after_softmax") return false;
    if (w.mistake != "no_mask") return true;
    const bool pad = !m.pad.empty() && m.pad[j];
    if (w.forgot == "causal") return pad || m.outside_window(i, j);
    if (w.forgot == "window") return pad || (m.causal && j > i);
    if (w.forgot == "padding") return (m.causal && j > i) || m.outside_window(i, j);
    if (w.forgot == "two_sided") return pad || m.outside_window(i, j, true);
    return false;
}

inline Grid rotate(const Grid& a, const Grid& angles) {
    Grid out = a;
    const std::size_t half = a[0].size() / 2;
    for (std::size_t i = 0; i < a.size(); ++i)
        for (std::size_t c = 0; c < half; ++c) {
            const double cs = std::cos(angles[i][c]), sn = std::sin(angles[i][c]);
            out[i][c] = a[i][c] * cs - a[i][c + half] * sn;
            out[i][c + half] = a[i][c + half] * cs + a[i][c] * sn;
        }
    return out;
}

inline Head head_pass(const Model& m, std::size_t head, const Way& w) {
    using naive::times;
    Head p;
    const auto is = [&](const char* name) { return w.mistake == name; };
    if (m.pair) {
        const Grid pd = times(m.s, m.wa), pe = times(m.h, m.ua);
        p.scores.assign(m.s.size(), std::vector<double>(m.h.size(), 0));
        for (std::size_t t = 0; t < m.s.size(); ++t)
            for (std::size_t j = 0; j < m.h.size(); ++j)
                for (std::size_t a = 0; a < m.va.size(); ++a)
                    p.scores[t][j] += m.va[a] * (is("no_tanh") ? pd[t][a] + pe[j][a] : std::tanh(pd[t][a] + pe[j][a]));
        p.v = m.h;
    } else {
        if (!m.learned) {
            p.q = p.k = p.v = m.x;
        } else {
            const Grid wq = is("transposed_w_q") ? transpose(m.wq) : m.wq;
            const Grid wk = is("transposed_w_k") ? transpose(m.wk) : m.wk;
            const Grid wv = is("transposed_w_v") ? transpose(m.wv) : m.wv;
            const bool rows = is("wrong_head_split");
            p.q = split(times(m.x, wq), head, m.d_head(), rows);
            p.k = split(times(m.x, wk), head, m.d_head(), rows);
            p.v = split(times(m.x, wv), head, m.d_v(), rows);
        }
        p.q_rotated = m.angles ? rotate(p.q, *m.angles) : p.q;
        p.k_rotated = m.angles ? rotate(p.k, *m.angles) : p.k;
        const std::size_t n = m.x.size();
        p.scores.assign(n, std::vector<double>(n, 0));
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < n; ++j)
                for (std::size_t c = 0; c < m.d_head(); ++c)
                    p.scores[i][j] += is("keys_times_queries") ? p.k_rotated[i][c] * p.q_rotated[j][c]
                                                               : p.q_rotated[i][c] * p.k_rotated[j][c];
    }
    double divisor = m.pair || !m.scaled ? 1 : std::sqrt(static_cast<double>(m.d_head()));
    if (is("no_scaling")) divisor = 1;
    if (is("sqrt_d_model")) divisor = std::sqrt(w.width);
    if (is("divided_by_d_k")) divisor = static_cast<double>(m.d_head());
    p.scaled = p.scores;
    for (auto& row : p.scaled)
        for (double& v : row) v /= divisor;
    p.masked = p.scaled;
    for (std::size_t i = 0; i < p.masked.size(); ++i)
        for (std::size_t j = 0; j < p.masked[i].size(); ++j)
            if (hidden_by_learner(m, w, i, j)) p.masked[i][j] = is("finite_fill") ? w.fill : minus_inf;
    bool softmax = !m.sum;
    if (is("sum_instead_of_softmax") || is("softmax_instead_of_sum")) softmax = !softmax;
    Grid a = is("softmax_over_columns") ? transpose(p.masked) : p.masked;
    for (auto& row : a) {
        if (softmax) {
            double max = minus_inf, total = 0;
            for (const double v : row) max = std::max(max, v);
            const double shift = is("softmax_overflow") || max == minus_inf ? 0 : max;
            for (double& v : row) total += v = v == minus_inf ? 0 : std::exp(v - shift);
            for (double& v : row) v = is("softmax_overflow") || total > 0 ? v / total : 0;
        } else {
            double total = 0;
            bool any = false;
            for (double& v : row) {
                if (v == minus_inf) v = 0;
                else any = true;
                total += v;
            }
            for (double& v : row) v = any ? v / total : 0;
        }
    }
    if (is("softmax_over_columns")) a = transpose(a);
    if (is("mask_after_softmax"))
        for (std::size_t i = 0; i < a.size(); ++i)
            for (std::size_t j = 0; j < a[i].size(); ++j)
                if (hidden(m, i, j)) a[i][j] = 0;
    p.weights = a;
    Grid mix = a;
    if (is("context_from_scores"))
        for (std::size_t i = 0; i < mix.size(); ++i)
            for (std::size_t j = 0; j < mix[i].size(); ++j) {
                const double s = w.raw ? p.scores[i][j] : p.scaled[i][j];
                mix[i][j] = hidden(m, i, j) && !w.every ? 0 : s;
            }
    p.context = times(mix, is("context_from_inputs") ? m.x : p.v);
    return p;
}

inline Stages run(const Model& m, const Way& w) {
    Stages s;
    for (int h = 0; h < m.heads; ++h) s.heads.push_back(head_pass(m, static_cast<std::size_t>(h), w));
    if (!m.pair) {
        s.concat.resize(m.x.size());
        for (const Head& h : s.heads)
            for (std::size_t i = 0; i < m.x.size(); ++i) s.concat[i].insert(s.concat[i].end(), h.context[i].begin(), h.context[i].end());
        if (m.wo && s.concat[0].size() == m.wo->size()) {  // else no product
            s.output = naive::times(s.concat, *m.wo);
            if (m.heads > 1)
                for (std::size_t h = 0; h < s.heads.size(); ++h) {
                    const std::size_t width = s.heads[h].context[0].size();
                    s.heads[h].contribution = naive::times(s.heads[h].context, naive::rows_of(*m.wo, h * width, width));
                }
        }
    }
    return s;
}

// The fills a learner might use for a hidden score, as the catalogue tries them.
inline std::vector<double> usual_fills() {
    return {0.0, -1.0, -10.0, -100.0, -1e4, -1e9, -static_cast<double>(std::numeric_limits<float>::max()),
            std::numeric_limits<double>::lowest()};
}

// Every way each mistake can be made in a run of `m`: the test's own account of the catalogue.
inline std::vector<Way> ways(const Model& m, const std::string& mistake) {
    std::vector<Way> out;
    const bool single = !m.pair;
    const auto square = [](const Grid& g) { return !g.empty() && g.size() == g[0].size(); };
    if (mistake == "transposed_w_q" && m.learned && square(m.wq)) out.push_back({mistake});
    if (mistake == "transposed_w_k" && m.learned && square(m.wk)) out.push_back({mistake});
    if (mistake == "transposed_w_v" && m.learned && square(m.wv)) out.push_back({mistake});
    if (mistake == "wrong_head_split" && m.learned && m.heads > 1) out.push_back({mistake});
    if (mistake == "keys_times_queries" && single) out.push_back({mistake});
    if (mistake == "no_tanh" && m.pair) out.push_back({mistake});
    if ((mistake == "no_scaling" || mistake == "divided_by_d_k") && single && m.scaled) out.push_back({mistake});
    if (mistake == "sqrt_d_model" && single && m.scaled) {
        std::vector<double> widths;
        if (m.heads > 1) widths.push_back(static_cast<double>(m.heads) * static_cast<double>(m.d_head()));
        widths.push_back(static_cast<double>(m.d_in()));
        for (const double width : widths)
            if (width != static_cast<double>(m.d_head()) &&
                std::none_of(out.begin(), out.end(), [&](const Way& w) { return w.width == width; })) {
                Way w{mistake};
                w.width = width;
                out.push_back(w);
            }
    }
    if (mistake == "no_mask" && m.masks()) {
        out.push_back({mistake});
        // Where two parts of a mask hide something, each forgotten alone.
        const std::size_t n = m.x.size();
        bool window_hides = false;
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < n; ++j) window_hides = window_hides || m.outside_window(i, j);
        std::vector<std::string> parts;
        if (m.causal && n > 1) parts.push_back("causal");
        if (window_hides) parts.push_back("window");
        if (m.any_pad()) parts.push_back("padding");
        if (single && parts.size() > 1)
            for (const std::string& part : parts) {
                Way w{mistake};
                w.forgot = part;
                out.push_back(w);
            }
        if (single && m.causal && m.window >= 2) {
            Way w{mistake};
            w.forgot = "two_sided";
            out.push_back(w);
        }
    }
    if (mistake == "finite_fill" && m.masks())
        for (const double fill : usual_fills()) {
            Way w{mistake};
            w.fill = fill;
            out.push_back(w);
        }
    if (mistake == "mask_after_softmax" && m.masks() && !m.sum) out.push_back({mistake});
    if ((mistake == "softmax_over_columns" || mistake == "softmax_overflow" || mistake == "sum_instead_of_softmax") && !m.sum)
        out.push_back({mistake});
    if (mistake == "softmax_instead_of_sum" && m.sum) out.push_back({mistake});
    if (mistake == "context_from_scores")
        for (const bool raw : {false, true})
            for (const bool every : {false, true}) {
                if (raw && (m.pair || !m.scaled)) continue;
                if (every && !m.masks()) continue;
                Way w{mistake};
                w.raw = raw, w.every = every;
                out.push_back(w);
            }
    if (mistake == "context_from_inputs" && single && m.learned) out.push_back({mistake});
    return out;
}

// The catalogue's names, in its order.
inline const std::vector<std::string>& catalogue() {
    static const std::vector<std::string> names{
        "transposed_w_q",     "transposed_w_k",       "transposed_w_v",   "wrong_head_split",
        "keys_times_queries", "no_tanh",              "no_scaling",       "sqrt_d_model",
        "divided_by_d_k",     "no_mask",              "finite_fill",      "mask_after_softmax",
        "softmax_over_columns", "softmax_overflow",   "sum_instead_of_softmax", "softmax_instead_of_sum",
        "context_from_scores", "context_from_inputs"};
    return names;
}

// Stage `stage` of head `head` (0-based; ignored after the heads).
inline const Grid& stage_of(const Stages& s, const std::string& stage, std::size_t head) {
    if (stage == "concat") return s.concat;
    if (stage == "output") return s.output;
    const Head& h = s.heads.at(head);
    if (stage == "queries") return h.q;
    if (stage == "keys") return h.k;
    if (stage == "values") return h.v;
    if (stage == "queries_rotated") return h.q_rotated;
    if (stage == "keys_rotated") return h.k_rotated;
    if (stage == "scores") return h.scores;
    if (stage == "scaled") return h.scaled;
    if (stage == "masked") return h.masked;
    if (stage == "weights") return h.weights;
    if (stage == "head_contributions") return h.contribution;
    return h.context;
}

// Does a number written as `written` (with `decimals` decimals) give `value`, as check-answers
// and the quiz judge it: within half its last place (and 1e-9 of float64's rounding, relative)?
// A non-number (∞, NaN) is given only by a hidden marker.
inline bool gives(double written, int decimals, double value) {
    if (!std::isfinite(value) || !std::isfinite(written)) return !std::isfinite(value) && !std::isfinite(written);
    const double tolerance = std::max(0.5 * std::pow(10.0, -decimals), 1e-9 * std::max(1.0, std::fabs(value)));
    return std::fabs(written - value) <= tolerance;
}

}  // namespace learner
