#include "practice/mistake_pass.hpp"

#include <cmath>

namespace attntrace::mistake_detail {

Grid grid_of(const Matrix& m) {
    Grid g(static_cast<std::size_t>(m.rows()), std::vector<double>(static_cast<std::size_t>(m.cols())));
    for (Index i = 0; i < m.rows(); ++i)
        for (Index j = 0; j < m.cols(); ++j) g[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] = m(i, j);
    return g;
}

Matrix matrix_of(const Grid& g) {
    const auto cols = g.empty() ? 0 : g[0].size();
    Matrix m(at(g.size()), at(cols));
    for (std::size_t i = 0; i < g.size(); ++i)
        for (std::size_t j = 0; j < cols; ++j) m(at(i), at(j)) = g[i][j];
    return m;
}

namespace {

Grid transposed(const Grid& a) {
    Grid t(a.empty() ? 0 : a[0].size(), std::vector<double>(a.size()));
    for (std::size_t i = 0; i < a.size(); ++i)
        for (std::size_t j = 0; j < a[i].size(); ++j) t[j][i] = a[i][j];
    return t;
}

// a·b in plain loops.
Grid times(const Grid& a, const Grid& b) {
    Grid out(a.size(), std::vector<double>(b.empty() ? 0 : b[0].size(), 0.0));
    for (std::size_t i = 0; i < a.size(); ++i)
        for (std::size_t k = 0; k < b.size(); ++k)
            for (std::size_t j = 0; j < out[i].size(); ++j) out[i][j] += a[i][k] * b[k][j];
    return out;
}

void add_bias(Grid& g, const Trace& trace, const char* bias) {
    if (!trace.has_parameter(bias)) return;
    const Matrix& b = trace.parameter(bias).data;
    for (auto& row : g)
        for (std::size_t j = 0; j < row.size(); ++j) row[j] += b(at(j));
}

// X·W (+ b); `transpose`: X·Wᵀ, which fits only a square W.
std::optional<Grid> project(const Grid& x, const Trace& trace, const char* weight, const char* bias, bool transpose) {
    Grid w = grid_of(trace.parameter(weight).data);
    if (transpose) {
        if (w.size() != w[0].size()) return std::nullopt;
        w = transposed(w);
    }
    Grid out = times(x, w);
    add_bias(out, trace, bias);
    return out;
}

// Head `block` (0-based) of `width` columns: the right way (columns), or the wrong one (the
// matrix read row by row and cut into consecutive pieces of n·width numbers).
Grid head_block(const Grid& full, std::size_t block, std::size_t width, bool by_rows) {
    const std::size_t n = full.size(), d = full[0].size();
    Grid out(n, std::vector<double>(width));
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t c = 0; c < width; ++c) {
            if (!by_rows) {
                out[i][c] = full[i][block * width + c];
            } else {
                const std::size_t flat = block * n * width + i * width + c;
                out[i][c] = full[flat / d][flat % d];
            }
        }
    return out;
}

// RoPE: each pair (c, c + d/2) of a row turned by its position's angle.
Grid rotated(const Grid& x, const Matrix& angles) {
    Grid out = x;
    const std::size_t half = x.empty() ? 0 : x[0].size() / 2;
    for (std::size_t i = 0; i < x.size(); ++i)
        for (std::size_t c = 0; c < half; ++c) {
            const double cos = std::cos(angles(at(i), at(c))), sin = std::sin(angles(at(i), at(c)));
            out[i][c] = x[i][c] * cos - x[i][c + half] * sin;
            out[i][c + half] = x[i][c + half] * cos + x[i][c] * sin;
        }
    return out;
}

void softmax_rows(Grid& s) {
    for (auto& row : s) {
        double max = minus_inf;
        for (double v : row) max = std::max(max, v);
        if (max == minus_inf) {  // every key hidden: no weight anywhere
            for (double& v : row) v = 0;
            continue;
        }
        double sum = 0;
        for (double& v : row) sum += v = std::exp(v - max);
        for (double& v : row) v /= sum;
    }
}

// e^s ÷ Σ e^s as written, without the max subtracted, in the run's number type: an e^s above
// its largest number is ∞ (∞ ÷ ∞ is NaN), and a row whose every e^s is 0 divides 0 by 0.
template <typename T>
void unshifted_softmax_rows(Grid& s) {
    for (auto& row : s) {
        T sum = 0;
        std::vector<T> e(row.size());
        for (std::size_t j = 0; j < row.size(); ++j) sum += e[j] = row[j] == minus_inf ? T(0) : std::exp(static_cast<T>(row[j]));
        for (std::size_t j = 0; j < row.size(); ++j) row[j] = static_cast<double>(e[j] / sum);
    }
}

// Each score divided by its row's sum, hidden ones counting as 0 (a row that sees no key: 0).
void sum_rows(Grid& s) {
    for (auto& row : s) {
        double sum = 0;
        bool any = false;
        for (double& v : row) {
            if (!std::isfinite(v)) v = 0;
            else any = true;
            sum += v;
        }
        for (double& v : row) v = any ? v / sum : 0;
    }
}

Grid inputs_of(const Trace& trace) {
    const Stage* normed = trace.find(StageId::layernorm);
    return grid_of((normed ? *normed : trace.at(StageId::inputs)).data);
}

// How far a phase of a pass got: the variant cannot arise in this run, the pass is done (it
// reached the stage asked for), or it goes on.
enum class Phase { cannot, done, more };

// Bahdanau: the scores (additive, or without the tanh) and the encoder states, its values.
Phase pair_scores(const Trace& trace, const Variant& variant, bool touches_projection, Pass& p) {
    if (touches_projection || is(variant, Mistake::keys_times_queries) || is(variant, Mistake::context_from_inputs))
        return Phase::cannot;
    p.v = grid_of(trace.at(StageId::encoder_states).data);
    if (is(variant, Mistake::no_tanh)) {
        if (trace.score != Score::additive) return Phase::cannot;
        const Grid pd = grid_of(trace.at(StageId::projected_decoder).data);
        const Grid pe = grid_of(trace.at(StageId::projected_encoder).data);
        const Matrix& v_a = trace.parameter("v_a").data;
        p.scores.assign(pd.size(), std::vector<double>(pe.size(), 0));
        for (std::size_t t = 0; t < pd.size(); ++t)
            for (std::size_t j = 0; j < pe.size(); ++j)
                for (std::size_t a = 0; a < pd[t].size(); ++a) p.scores[t][j] += v_a(at(a)) * (pd[t][a] + pe[j][a]);
    } else {
        p.scores = grid_of(trace.at(StageId::scores).data);
    }
    return Phase::more;
}

// One sentence: head h's queries, keys and values, rotated with RoPE, and their scores.
Phase single_scores(const Trace& trace, const RunShape& run, int h, const Variant& variant, bool touches_projection,
                    int last, Pass& p) {
    if (is(variant, Mistake::no_tanh)) return Phase::cannot;
    const Grid x = inputs_of(trace);
    if (!run.learned) {
        if (touches_projection) return Phase::cannot;
        p.q = p.k = p.v = x;
    } else {
        const auto q = project(x, trace, "W_q", "b_q", is(variant, Mistake::transposed_w_q));
        const auto k = project(x, trace, "W_k", "b_k", is(variant, Mistake::transposed_w_k));
        const auto v = project(x, trace, "W_v", "b_v", is(variant, Mistake::transposed_w_v));
        if (!q || !k || !v) return Phase::cannot;
        if (run.heads == 1 && is(variant, Mistake::wrong_head_split)) return Phase::cannot;
        const std::size_t g = (static_cast<std::size_t>(h) * run.kv_heads + run.heads - 1) / run.heads;  // ⌈h·G/H⌉
        const bool by_rows = is(variant, Mistake::wrong_head_split);
        p.q = head_block(*q, static_cast<std::size_t>(h - 1), run.d_head, by_rows);
        p.k = head_block(*k, g - 1, run.d_head, by_rows);
        p.v = head_block(*v, g - 1, run.d_v, by_rows);
    }
    if (last == 0) return Phase::done;
    if (run.rotated) {
        const Matrix& angles = trace.at(StageId::positions).data;
        p.q_rotated = rotated(p.q, angles);
        p.k_rotated = rotated(p.k, angles);
    } else {
        p.q_rotated = p.q;
        p.k_rotated = p.k;
    }
    if (last == 1) return Phase::done;
    p.scores = is(variant, Mistake::keys_times_queries) ? times(p.k_rotated, transposed(p.q_rotated))
                                                        : times(p.q_rotated, transposed(p.k_rotated));
    return Phase::more;
}

// Scale.
bool scale(const Trace& trace, const RunShape& run, const Variant& variant, Pass& p) {
    p.divisor = trace.scale;
    if (is(variant, Mistake::no_scaling)) {
        if (trace.scale_rule == ScaleRule::none || trace.scale == 1) return false;  // bahdanau's: none
        p.divisor = 1;
    }
    if (is(variant, Mistake::sqrt_d_model) || is(variant, Mistake::divided_by_d_k)) {
        if (trace.scale_rule != ScaleRule::sqrt) return false;
        p.divisor = is(variant, Mistake::divided_by_d_k) ? static_cast<double>(run.d_head) : std::sqrt(variant.width);
        if (p.divisor == trace.scale) return false;
    }
    p.scaled = p.scores;
    for (auto& row : p.scaled)
        for (double& v : row) v /= p.divisor;
    return true;
}

// Does the variant mask after the softmax (a mistake, or, renormalising, the right weights)?
bool masks_after(const Variant& variant) { return is(variant, Mistake::mask_after_softmax) || variant.renormalise; }

// Mask.
bool mask(const Trace& trace, int head, const Variant& variant, Pass& p) {
    const Stage& masked_stage = trace.at(StageId::masked, head);
    const auto& allowed = masked_stage.allowed;
    const auto& reasons = masked_stage.mask_reasons;
    const bool after = masks_after(variant);
    const bool masking = is(variant, Mistake::finite_fill) || is(variant, Mistake::no_mask) || after;
    if (masking && !allowed) return false;
    const double fill = is(variant, Mistake::finite_fill) ? variant.fill : minus_inf;
    // Is pair (i, j) hidden before the softmax under this variant?
    const auto hidden = [&](std::size_t i, std::size_t j) {
        if (!allowed || (*allowed)(at(i), at(j)) || after) return false;
        if (!is(variant, Mistake::no_mask)) return true;
        if (variant.forgotten == 0xff || !reasons) return false;
        if (variant.two_sided && std::abs(at(i) - at(j)) >= trace.window) return true;
        return ((*reasons)(at(i), at(j)) & ~variant.forgotten) != 0;  // hidden for a reason still applied
    };
    p.masked = p.scaled;
    for (std::size_t i = 0; i < p.masked.size(); ++i)
        for (std::size_t j = 0; j < p.masked[i].size(); ++j)
            if (hidden(i, j)) p.masked[i][j] = fill;
    return true;
}

// Normalise.
bool normalise(const Trace& trace, int head, const Variant& variant, Pass& p) {
    const auto& allowed = trace.at(StageId::masked, head).allowed;
    const bool after = masks_after(variant);
    bool softmax = trace.normalization == Normalization::softmax;
    if (is(variant, Mistake::sum_instead_of_softmax) || is(variant, Mistake::softmax_instead_of_sum)) {
        if (softmax != is(variant, Mistake::sum_instead_of_softmax)) return false;
        softmax = !softmax;
    }
    if ((is(variant, Mistake::softmax_over_columns) || is(variant, Mistake::softmax_overflow) || after) && !softmax)
        return false;
    p.weights = p.masked;
    if (softmax)
        for (auto& row : p.weights)
            for (double& v : row) v /= trace.temperature;
    if (is(variant, Mistake::softmax_over_columns)) {
        p.weights = transposed(p.weights);
        softmax_rows(p.weights);
        p.weights = transposed(p.weights);
    } else if (is(variant, Mistake::softmax_overflow)) {
        if (trace.dtype == Dtype::float32) unshifted_softmax_rows<float>(p.weights);
        else unshifted_softmax_rows<double>(p.weights);
    } else if (softmax) {
        softmax_rows(p.weights);
    } else {
        sum_rows(p.weights);
    }
    if (after) {
        for (std::size_t i = 0; i < p.weights.size(); ++i) {
            double sum = 0;
            for (std::size_t j = 0; j < p.weights[i].size(); ++j) {
                if (!(*allowed)(at(i), at(j))) p.weights[i][j] = 0;
                sum += p.weights[i][j];
            }
            if (variant.renormalise)
                for (double& v : p.weights[i]) v = sum > 0 ? v / sum : 0;
        }
    }
    return true;
}

// Mix.
bool mix(const Trace& trace, int head, const RunShape& run, const Variant& variant, Pass& p) {
    const auto& allowed = trace.at(StageId::masked, head).allowed;
    if (is(variant, Mistake::context_from_scores)) {
        if (variant.raw_scores && p.divisor == 1) return false;  // the same as the scaled scores
        if (variant.every_key && !allowed) return false;          // nothing hidden to keep
        Grid s = variant.raw_scores ? p.scores : p.masked;
        for (std::size_t i = 0; i < s.size(); ++i)
            for (std::size_t j = 0; j < s[i].size(); ++j) {
                if (variant.every_key && !variant.raw_scores) s[i][j] = p.scaled[i][j];
                if (!std::isfinite(s[i][j]) || (!variant.every_key && allowed && !(*allowed)(at(i), at(j)))) s[i][j] = 0;
            }
        p.context = times(s, p.v);
    } else if (is(variant, Mistake::context_from_inputs)) {
        if (!run.learned) return false;  // plain mode: V is X
        p.context = times(p.weights, inputs_of(trace));
    } else {
        p.context = times(p.weights, p.v);
    }
    return true;
}

const Grid* stage_of(const Pass& p, StageId id) {
    switch (id) {
    case StageId::queries: return &p.q;
    case StageId::keys: return &p.k;
    case StageId::values: return &p.v;
    case StageId::queries_rotated: return &p.q_rotated;
    case StageId::keys_rotated: return &p.k_rotated;
    case StageId::scores: return &p.scores;
    case StageId::scaled: return &p.scaled;
    case StageId::masked: return &p.masked;
    case StageId::weights: return &p.weights;
    case StageId::context: return &p.context;
    default: return nullptr;
    }
}

}  // namespace

RunShape shape_of(const Trace& trace) {
    RunShape r;
    r.family = family_of(trace.mode);
    r.learned = trace.has_parameter("W_q");
    r.rotated = trace.positions == PositionScheme::rope;
    r.layernorm = trace.find(StageId::layernorm) != nullptr;
    r.heads = static_cast<std::size_t>(trace.heads);
    r.kv_heads = static_cast<std::size_t>(trace.kv_heads);
    switch (r.family) {
    case ModeFamily::single_sequence: {
        const Stage* normed = trace.find(StageId::layernorm);
        r.d_in = static_cast<std::size_t>((normed ? *normed : trace.at(StageId::inputs)).col_count());
        if (r.learned) {
            r.d_head = static_cast<std::size_t>(trace.parameter("W_q").data.cols()) / r.heads;
            r.d_v = static_cast<std::size_t>(trace.parameter("W_v").data.cols()) / r.kv_heads;
        } else {
            r.d_head = r.d_v = r.d_in;
        }
        break;
    }
    case ModeFamily::encoder_decoder: break;
    }
    return r;
}

// One head's pass up to stage `upto`, in plain loops; nullopt when the variant cannot arise in
// this run.
std::optional<Pass> compute(const Trace& trace, int head, const Variant& variant, StageId upto) {
    Pass p;
    const RunShape run = shape_of(trace);
    const int h = head > 0 ? head : 1;
    const int last = order_of(upto);
    const bool touches_projection = is(variant, Mistake::transposed_w_q) || is(variant, Mistake::transposed_w_k) ||
                                    is(variant, Mistake::transposed_w_v) || is(variant, Mistake::wrong_head_split);
    const Phase scored = [&] {
        switch (run.family) {
        case ModeFamily::single_sequence: return single_scores(trace, run, h, variant, touches_projection, last, p);
        case ModeFamily::encoder_decoder: return pair_scores(trace, variant, touches_projection, p);
        }
        unknown_family();
    }();
    if (scored == Phase::cannot) return std::nullopt;
    if (scored == Phase::done || last == 2) return p;
    if (!scale(trace, run, variant, p)) return std::nullopt;
    if (last == 3) return p;
    if (!mask(trace, head, variant, p)) return std::nullopt;
    if (last == 4) return p;
    if (!normalise(trace, head, variant, p)) return std::nullopt;
    if (last == 5) return p;
    if (!mix(trace, head, run, variant, p)) return std::nullopt;
    return p;
}

bool after_the_heads(StageId id) {
    return id == StageId::concat || id == StageId::output || id == StageId::head_contributions;
}

std::optional<Matrix> stage_under(const Trace& trace, StageId id, int head, const Variant& variant, Pass& first) {
    if (!after_the_heads(id)) {
        auto p = compute(trace, head, variant, id);
        if (!p) return std::nullopt;
        const Grid* g = stage_of(*p, id);
        if (!g || g->empty()) return std::nullopt;
        Matrix m = matrix_of(*g);
        first = std::move(*p);
        return m;
    }
    switch (family_of(trace.mode)) {  // only single sequences have heads to put side by side
    case ModeFamily::single_sequence: break;
    case ModeFamily::encoder_decoder: return std::nullopt;
    }
    const int heads = trace.heads;
    Grid concat;
    for (int h = 1; h <= heads; ++h) {
        if (id == StageId::head_contributions && h != head) continue;
        auto p = compute(trace, heads > 1 ? h : 0, variant, StageId::context);
        if (!p) return std::nullopt;
        if (concat.empty()) concat.resize(p->context.size());
        for (std::size_t i = 0; i < concat.size(); ++i) concat[i].insert(concat[i].end(), p->context[i].begin(), p->context[i].end());
        if (h == std::max(head, 1)) first = std::move(*p);
    }
    if (id == StageId::concat) return matrix_of(concat);
    if (!trace.has_parameter("W_o")) return std::nullopt;
    Grid w_o = grid_of(trace.parameter("W_o").data);
    if (id == StageId::head_contributions) {
        const std::size_t width = concat[0].size();  // this head's context: its rows of W_o, when they fit
        if (static_cast<std::size_t>(head) * width > w_o.size()) return std::nullopt;
        w_o = Grid(w_o.begin() + static_cast<long>(static_cast<std::size_t>(head - 1) * width),
                   w_o.begin() + static_cast<long>(static_cast<std::size_t>(head) * width));
    }
    if (w_o.size() != concat[0].size()) return std::nullopt;
    Grid out = times(concat, w_o);
    if (id == StageId::output) add_bias(out, trace, "b_o");
    return matrix_of(out);
}

}  // namespace attntrace::mistake_detail
