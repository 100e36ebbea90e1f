#include "practice/mistakes.hpp"

#include "attention/masks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace attntrace {
namespace {

constexpr std::array<MistakeInfo, 18> mistake_table{{
    {Mistake::transposed_w_q, "transposed_w_q", "W_q used transposed, Q = X·W_qᵀ (nn.Linear stores a weight (out, in))"},
    {Mistake::transposed_w_k, "transposed_w_k", "W_k used transposed, K = X·W_kᵀ"},
    {Mistake::transposed_w_v, "transposed_w_v", "W_v used transposed, V = X·W_vᵀ"},
    {Mistake::wrong_head_split, "wrong_head_split",
     "Q, K and V cut into heads row by row (view(heads, n, d_head)) instead of by columns"},
    {Mistake::keys_times_queries, "keys_times_queries", "the scores as K·Qᵀ instead of Q·Kᵀ"},
    {Mistake::no_tanh, "no_tanh", "the additive score without its tanh, v_a · (s·W_a + h·U_a)"},
    {Mistake::no_scaling, "no_scaling", "the scores not divided by √d_k"},
    {Mistake::sqrt_d_model, "sqrt_d_model",
     "the scores divided by √d_model (the embeddings' width d_in, or all heads' H·d_head) instead of √d_k"},
    {Mistake::divided_by_d_k, "divided_by_d_k", "the scores divided by d_k instead of √d_k"},
    {Mistake::no_mask, "no_mask", "the mask (causal, window, padding, or one of them) not applied at all"},
    {Mistake::finite_fill, "finite_fill", "the hidden scores set to a finite number instead of −∞"},
    {Mistake::mask_after_softmax, "mask_after_softmax",
     "softmax over every key, then the hidden weights set to 0 without dividing again"},
    {Mistake::softmax_over_columns, "softmax_over_columns", "each column normalised instead of each row"},
    {Mistake::softmax_overflow, "softmax_overflow",
     "e^s of the scores themselves, the row max not subtracted: e^s overflows (∞ ÷ ∞ = NaN) or underflows (0 ÷ 0)"},
    {Mistake::sum_instead_of_softmax, "sum_instead_of_softmax",
     "each score divided by its row's sum where softmax was asked (negative scores give negative weights)"},
    {Mistake::softmax_instead_of_sum, "softmax_instead_of_sum", "softmax where the run divides by the row's sum"},
    {Mistake::context_from_scores, "context_from_scores", "the context summed with the scores instead of the weights"},
    {Mistake::context_from_inputs, "context_from_inputs", "the context summed from X instead of V"},
}};

using Grid = std::vector<std::vector<double>>;
constexpr double minus_inf = -std::numeric_limits<double>::infinity();
using Index = Eigen::Index;

Index at(std::size_t i) { return static_cast<Index>(i); }

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

// One head's stages under one mistake (or none).
struct Pass {
    Grid q, k, v, q_rotated, k_rotated, scores, scaled, masked, weights, context;
    double divisor = 1;
};

// One way of making a mistake.
struct Variant {
    std::optional<Mistake> mistake;
    double fill = 0;              // finite_fill: what the hidden scores became
    double width = 0;             // sqrt_d_model: the width under the root
    bool raw_scores = false;      // context_from_scores: the scores before scaling
    bool every_key = false;       // context_from_scores: the hidden keys' scores kept too
    std::uint8_t forgotten = 0;   // no_mask: the reasons (MaskReason bits) not applied; 0xff: every one
    bool renormalise = false;     // mask after softmax, then divide each row again (no mistake)
};

bool is(const Variant& v, Mistake m) { return v.mistake == m; }

// Where a pass can stop: the last stage it needs.
int order_of(StageId id) {
    switch (id) {
    case StageId::queries:
    case StageId::keys:
    case StageId::values: return 0;
    case StageId::queries_rotated:
    case StageId::keys_rotated: return 1;
    case StageId::scores: return 2;
    case StageId::scaled: return 3;
    case StageId::masked: return 4;
    case StageId::weights: return 5;
    default: return 6;
    }
}

struct RunShape {
    bool pair = false, learned = false, rotated = false, layernorm = false;
    std::size_t heads = 1, kv_heads = 1, d_in = 0, d_head = 0, d_v = 0;
};

RunShape shape_of(const Trace& trace) {
    RunShape r;
    r.pair = trace.mode == Mode::bahdanau;
    r.learned = trace.has_parameter("W_q");
    r.rotated = trace.positions == PositionScheme::rope;
    r.layernorm = trace.find(StageId::layernorm) != nullptr;
    r.heads = static_cast<std::size_t>(trace.heads);
    r.kv_heads = static_cast<std::size_t>(trace.kv_heads);
    if (!r.pair) {
        const Stage* normed = trace.find(StageId::layernorm);
        r.d_in = static_cast<std::size_t>((normed ? *normed : trace.at(StageId::inputs)).col_count());
        if (r.learned) {
            r.d_head = static_cast<std::size_t>(trace.parameter("W_q").data.cols()) / r.heads;
            r.d_v = static_cast<std::size_t>(trace.parameter("W_v").data.cols()) / r.kv_heads;
        } else {
            r.d_head = r.d_v = r.d_in;
        }
    }
    return r;
}

Grid inputs_of(const Trace& trace) {
    const Stage* normed = trace.find(StageId::layernorm);
    return grid_of((normed ? *normed : trace.at(StageId::inputs)).data);
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
    if (run.pair) {
        if (touches_projection || is(variant, Mistake::keys_times_queries) || is(variant, Mistake::context_from_inputs))
            return std::nullopt;
        p.v = grid_of(trace.at(StageId::encoder_states).data);
        if (is(variant, Mistake::no_tanh)) {
            if (trace.score != Score::additive) return std::nullopt;
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
    } else {
        if (is(variant, Mistake::no_tanh)) return std::nullopt;
        const Grid x = inputs_of(trace);
        if (!run.learned) {
            if (touches_projection) return std::nullopt;
            p.q = p.k = p.v = x;
        } else {
            const auto q = project(x, trace, "W_q", "b_q", is(variant, Mistake::transposed_w_q));
            const auto k = project(x, trace, "W_k", "b_k", is(variant, Mistake::transposed_w_k));
            const auto v = project(x, trace, "W_v", "b_v", is(variant, Mistake::transposed_w_v));
            if (!q || !k || !v) return std::nullopt;
            if (run.heads == 1 && is(variant, Mistake::wrong_head_split)) return std::nullopt;
            const std::size_t g = (static_cast<std::size_t>(h) * run.kv_heads + run.heads - 1) / run.heads;  // ⌈h·G/H⌉
            const bool by_rows = is(variant, Mistake::wrong_head_split);
            p.q = head_block(*q, static_cast<std::size_t>(h - 1), run.d_head, by_rows);
            p.k = head_block(*k, g - 1, run.d_head, by_rows);
            p.v = head_block(*v, g - 1, run.d_v, by_rows);
        }
        if (last == 0) return p;
        if (run.rotated) {
            const Matrix& angles = trace.at(StageId::positions).data;
            p.q_rotated = rotated(p.q, angles);
            p.k_rotated = rotated(p.k, angles);
        } else {
            p.q_rotated = p.q;
            p.k_rotated = p.k;
        }
        if (last == 1) return p;
        p.scores = is(variant, Mistake::keys_times_queries) ? times(p.k_rotated, transposed(p.q_rotated))
                                                            : times(p.q_rotated, transposed(p.k_rotated));
    }
    if (last == 2) return p;
    // Scale.
    p.divisor = trace.scale;
    if (is(variant, Mistake::no_scaling)) {
        if (run.pair || trace.scale_rule == ScaleRule::none || trace.scale == 1) return std::nullopt;
        p.divisor = 1;
    }
    if (is(variant, Mistake::sqrt_d_model) || is(variant, Mistake::divided_by_d_k)) {
        if (run.pair || trace.scale_rule != ScaleRule::sqrt) return std::nullopt;
        p.divisor = is(variant, Mistake::divided_by_d_k) ? static_cast<double>(run.d_head) : std::sqrt(variant.width);
        if (p.divisor == trace.scale) return std::nullopt;
    }
    p.scaled = p.scores;
    for (auto& row : p.scaled)
        for (double& v : row) v /= p.divisor;
    if (last == 3) return p;
    // Mask.
    const Stage& masked_stage = trace.at(StageId::masked, head);
    const auto& allowed = masked_stage.allowed;
    const auto& reasons = masked_stage.mask_reasons;
    const bool after = is(variant, Mistake::mask_after_softmax) || variant.renormalise;
    const bool masking = is(variant, Mistake::finite_fill) || is(variant, Mistake::no_mask) || after;
    if (masking && !allowed) return std::nullopt;
    const double fill = is(variant, Mistake::finite_fill) ? variant.fill : minus_inf;
    // Is pair (i, j) hidden before the softmax under this variant?
    const auto hidden = [&](std::size_t i, std::size_t j) {
        if (!allowed || (*allowed)(at(i), at(j)) || after) return false;
        if (!is(variant, Mistake::no_mask)) return true;
        if (variant.forgotten == 0xff || !reasons) return false;
        return ((*reasons)(at(i), at(j)) & ~variant.forgotten) != 0;  // hidden for a reason still applied
    };
    p.masked = p.scaled;
    for (std::size_t i = 0; i < p.masked.size(); ++i)
        for (std::size_t j = 0; j < p.masked[i].size(); ++j)
            if (hidden(i, j)) p.masked[i][j] = fill;
    if (last == 4) return p;
    // Normalise.
    bool softmax = trace.normalization == Normalization::softmax;
    if (is(variant, Mistake::sum_instead_of_softmax) || is(variant, Mistake::softmax_instead_of_sum)) {
        if (softmax != is(variant, Mistake::sum_instead_of_softmax)) return std::nullopt;
        softmax = !softmax;
    }
    if ((is(variant, Mistake::softmax_over_columns) || is(variant, Mistake::softmax_overflow) || after) && !softmax)
        return std::nullopt;
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
    if (last == 5) return p;
    // Mix.
    if (is(variant, Mistake::context_from_scores)) {
        if (variant.raw_scores && p.divisor == 1) return std::nullopt;  // the same as the scaled scores
        if (variant.every_key && !allowed) return std::nullopt;          // nothing hidden to keep
        Grid s = variant.raw_scores ? p.scores : p.masked;
        for (std::size_t i = 0; i < s.size(); ++i)
            for (std::size_t j = 0; j < s[i].size(); ++j) {
                if (variant.every_key && !variant.raw_scores) s[i][j] = p.scaled[i][j];
                if (!std::isfinite(s[i][j]) || (!variant.every_key && allowed && !(*allowed)(at(i), at(j)))) s[i][j] = 0;
            }
        p.context = times(s, p.v);
    } else if (is(variant, Mistake::context_from_inputs)) {
        if (!run.learned) return std::nullopt;  // plain mode: V is X
        p.context = times(p.weights, inputs_of(trace));
    } else {
        p.context = times(p.weights, p.v);
    }
    return p;
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

bool after_the_heads(StageId id) {
    return id == StageId::concat || id == StageId::output || id == StageId::head_contributions;
}

// Stage `id` of `head` under `variant`, or, after the heads, the heads' contexts side by side
// (concat), times W_o (output), or head `head`'s share of that (head_contributions); `first`
// receives the pass of the head asked for (head 1 after the heads), for the explanation.
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
    if (trace.mode == Mode::bahdanau) return std::nullopt;
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

// The ways of making `mistake` in this run.
std::vector<Variant> variants_of(const Trace& trace, int head, Mistake mistake, const MistakeContext& context) {
    std::vector<Variant> out;
    const RunShape run = shape_of(trace);
    switch (mistake) {
    case Mistake::finite_fill: {
        // The fills code uses: round numbers, and the lowest number of float32 and of float64.
        std::vector<double> fills{0.0, -1.0, -10.0, -100.0, -1e4, -1e9,
                                  -static_cast<double>(std::numeric_limits<float>::max()),
                                  std::numeric_limits<double>::lowest()};
        for (std::size_t i = 0; i < context.fills.size() && i < max_learner_fills; ++i)
            if (std::find(fills.begin(), fills.end(), context.fills[i]) == fills.end()) fills.push_back(context.fills[i]);
        for (const double fill : fills) out.push_back({mistake, fill});
        break;
    }
    case Mistake::sqrt_d_model: {
        // With one head the model's width is that of its embeddings; with several, that of all
        // heads' queries together, or of the embeddings when the two differ.
        std::vector<double> widths{static_cast<double>(run.d_in)};
        if (run.heads > 1) widths.insert(widths.begin(), static_cast<double>(run.heads * run.d_head));
        for (const double width : widths)
            if (width != static_cast<double>(run.d_head) &&
                std::none_of(out.begin(), out.end(), [&](const Variant& v) { return v.width == width; }))
                out.push_back({mistake, 0, width});
        break;
    }
    case Mistake::no_mask: {
        out.push_back({mistake, 0, 0, false, false, 0xff});
        const Stage* masked = trace.find(StageId::masked, head);
        if (masked && masked->mask_reasons) {
            std::uint8_t present = 0;
            for (Index i = 0; i < masked->mask_reasons->rows(); ++i)
                for (Index j = 0; j < masked->mask_reasons->cols(); ++j) present |= (*masked->mask_reasons)(i, j);
            if (std::popcount(present) > 1)
                for (const std::uint8_t bit : {reason_causal, reason_window, reason_padding})
                    if (present & bit) out.push_back({mistake, 0, 0, false, false, bit});
        }
        break;
    }
    case Mistake::context_from_scores:
        for (const bool raw : {false, true})
            for (const bool every : {false, true}) out.push_back({mistake, 0, 0, raw, every});
        break;
    default: out.push_back({mistake}); break;
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// The explanations, in the words of the run.

// A number as a learner writes it: 0, -1, -10000, -1e9, 2.5.
std::string number_text(double v) {
    if (v == std::floor(v) && std::fabs(v) < 1e6) return fmt::format("{:.0f}", v);
    std::string s = fmt::format("{:.6g}", v);
    for (const char* from : {"e+0", "e+", "e-0"}) {
        const auto found = s.find(from);
        if (found != std::string::npos) {
            s.replace(found, std::string_view(from).size(), std::string_view(from) == "e-0" ? "e-" : "e");
            break;
        }
    }
    return s;
}

// "√3 ≈ 1.732", "√4 = 2".
std::string root_text(double width) {
    const double root = std::sqrt(width);
    if (root == std::floor(root)) return fmt::format("√{} = {}", number_text(width), number_text(root));
    return fmt::format("√{} ≈ {:.4g}", number_text(width), root);
}

struct Words {
    std::string query = "query", key = "key", values = "V", x = "X";
};

Words words_of(const Trace& trace) {
    Words w;
    if (trace.mode == Mode::bahdanau) {
        w.query = "target step";
        w.key = "source position";
        w.values = "the encoder states H";
    } else if (!trace.has_parameter("W_q")) {
        w.values = "V, which plain attention takes to be X";
    }
    if (trace.find(StageId::layernorm)) w.x = "LN(X)";
    return w;
}

std::string row_name(const Stage& stage, std::size_t row) {
    return fmt::format("row {} ({})", row + 1, stage.rows[row]);
}

// The parts of the mask that `forgotten` leaves out, and what their absence let in.
std::string forgotten_mask_text(const Trace& trace, const Stage& masked, std::uint8_t forgotten) {
    if (trace.mode == Mode::bahdanau) return "the source mask was not applied, so the source positions it hides took weight";
    std::uint8_t present = 0;
    if (masked.mask_reasons)
        for (Index i = 0; i < masked.mask_reasons->rows(); ++i)
            for (Index j = 0; j < masked.mask_reasons->cols(); ++j) present |= (*masked.mask_reasons)(i, j);
    else
        present = reason_causal;
    const std::uint8_t left_out = forgotten == 0xff ? present : static_cast<std::uint8_t>(present & forgotten);
    std::vector<std::string> parts, effects, kept;
    const auto part = [&](std::uint8_t bit) {
        switch (bit) {
        case reason_causal: return std::string("the causal mask");
        case reason_window: return fmt::format("the window of {} keys (--window)", trace.window);
        default: return std::string("the padding mask");
        }
    };
    for (const std::uint8_t bit : {reason_causal, reason_window, reason_padding}) {
        if (!(present & bit)) continue;
        if (left_out & bit) {
            parts.push_back(part(bit));
            effects.push_back(bit == reason_causal   ? "each query also weighed the keys after it"
                              : bit == reason_window ? "each query also weighed the keys outside its window"
                                                     : "the padding tokens took weight");
        } else {
            kept.push_back(part(bit));
        }
    }
    std::string text = fmt::format("{} {} not applied", fmt::join(parts, " and "), parts.size() == 1 ? "was" : "were");
    if (!kept.empty()) text += fmt::format(" ({} {})", fmt::join(kept, " and "), kept.size() == 1 ? "was" : "were");
    return text + fmt::format(", so {}", fmt::join(effects, ", and "));
}

std::string explanation(const Trace& trace, int head, Mistake mistake, const Variant& variant, const Pass& p,
                        const MistakeContext& context) {
    const RunShape run = shape_of(trace);
    const Words w = words_of(trace);
    const bool several = run.heads > 1;
    const std::string d_k = several ? "d_head" : "d_k";
    const std::string in_head = several ? fmt::format(" of head {}", std::max(head, 1)) : "";
    switch (mistake) {
    case Mistake::transposed_w_q:
    case Mistake::transposed_w_k:
    case Mistake::transposed_w_v: {
        const char* letter = mistake == Mistake::transposed_w_q ? "Q" : mistake == Mistake::transposed_w_k ? "K" : "V";
        const char* weight = mistake == Mistake::transposed_w_q ? "W_q" : mistake == Mistake::transposed_w_k ? "W_k" : "W_v";
        const std::size_t d = static_cast<std::size_t>(trace.parameter(weight).data.cols());
        const std::string out_name = mistake == Mistake::transposed_w_v ? "d_v" : "d_k";
        if (context.layout == WeightLayout::out_in && trace.weights == WeightsOrigin::file)
            return fmt::format("{0} was computed as {1}·{2}ᵀ: the input stores {2} as nn.Linear keeps a weight, (out, in) "
                               "= {3} × {4}, and it was multiplied as stored; turn it first, {0} = {1}·{2} with {2} of "
                               "d_in × {5} = {4} × {3} (x @ weight.T in PyTorch).",
                               letter, w.x, weight, d, run.d_in, out_name);
        const std::string whose = trace.weights == WeightsOrigin::generated
                                      ? fmt::format("this run's {} (generated from seed {})", weight, trace.seed)
                                      : fmt::format("the input's {}", weight);
        return fmt::format("{0} was computed as {1}·{2}ᵀ, with {2} transposed: {3} is d_in × {4} = {5} × {6}, to be used "
                           "as it stands, {0} = {1}·{2}; only a weight stored (out, in), as nn.Linear keeps it, is "
                           "turned first.",
                           letter, w.x, weight, whose, out_name, run.d_in, d);
    }
    case Mistake::wrong_head_split:
        return fmt::format("Q, K and V were cut into heads by reading each n × {0} matrix row by row and cutting it into "
                           "pieces of n·{1} numbers (as .view(heads, n, d_head) does), which mixes the tokens' rows: "
                           "each head takes its own {1} columns of every token's row (.view(n, heads, d_head), then "
                           ".transpose(0, 1)).",
                           run.heads * run.d_head, run.d_head);
    case Mistake::keys_times_queries:
        return "the scores were computed as K·Qᵀ, the transpose of the right matrix: row i holds query i's dot products "
               "with every key, S = Q·Kᵀ.";
    case Mistake::no_tanh:
        return "the additive score was computed without its tanh, v_a · (s·W_a + h·U_a): take tanh of each entry of "
               "s·W_a + h·U_a first, e = v_a · tanh(s·W_a + h·U_a).";
    case Mistake::no_scaling:
        if (trace.scale_rule == ScaleRule::sqrt)
            return fmt::format("the scores were not scaled: divide each by √{} = {}{} before the softmax.", d_k,
                               root_text(static_cast<double>(run.d_head)),
                               several ? " (the width of one head's queries and keys)" : "");
        return fmt::format("the scores were not divided by {}, the divisor --scale gives this run: divide each by it "
                           "before the softmax.",
                           number_text(trace.scale));
    case Mistake::sqrt_d_model: {
        const std::string right = fmt::format("instead of √{} = {}, the width of {} queries and keys", d_k,
                                              root_text(static_cast<double>(run.d_head)), several ? "one head's" : "the");
        if (several && variant.width == static_cast<double>(run.heads * run.d_head))
            return fmt::format("the scores were divided by √(H·d_head) = {}, the width of {} heads' queries side by "
                               "side (d_model{}), {}: each head's scores are dot products of {} numbers.",
                               root_text(variant.width), run.heads == 2 ? "both" : fmt::format("all {}", run.heads),
                               run.d_in == run.heads * run.d_head ? ", which is d_in here too" : "", right, run.d_head);
        return fmt::format("the scores were divided by √d_in = {}, the width of the embeddings{}, {}: the scores are "
                           "dot products of {} numbers, not of {}.",
                           root_text(variant.width), several ? "" : " (d_model)", right, run.d_head, run.d_in);
    }
    case Mistake::divided_by_d_k:
        return fmt::format("the scores were divided by {} = {} itself: divide by its square root, {}.", d_k, run.d_head,
                           root_text(static_cast<double>(run.d_head)));
    case Mistake::no_mask:
        return forgotten_mask_text(trace, trace.at(StageId::masked, head), variant.forgotten) +
               ": set the scores the mask hides to −∞ before the softmax, so that their weights are exactly 0.";
    case Mistake::finite_fill: {
        // The largest weight a hidden key got under this fill (by magnitude: a sum may be negative).
        double leaked = 0;
        const Stage& masked = trace.at(StageId::masked, head);
        if (!p.weights.empty() && masked.allowed)
            for (std::size_t i = 0; i < p.weights.size(); ++i)
                for (std::size_t j = 0; j < p.weights[i].size(); ++j)
                    if (!(*masked.allowed)(at(i), at(j)) && std::fabs(p.weights[i][j]) > std::fabs(leaked)) leaked = p.weights[i][j];
        const std::string fill = number_text(variant.fill);
        if (p.weights.empty() || leaked != 0)
            return fmt::format(
                "the hidden scores were set to {} instead of −∞, and a finite score still takes part in the {}{}: set "
                "them to −∞ (or leave them out) so that their weights are exactly 0.",
                fill, trace.normalization == Normalization::softmax ? "softmax" : "row's sum",
                p.weights.empty() ? ""
                                  : fmt::format(" (in this run a hidden {} gets a weight of {:.4g}{})", w.key, leaked,
                                                several ? fmt::format(" in head {}", std::max(head, 1)) : ""));
        return fmt::format("the hidden scores were set to {} instead of −∞; in this run their weights still come out "
                           "exactly 0, so only this stage shows it, but −∞ (or masked) is what the mask writes, and "
                           "it gives weight 0 whatever the scores are.",
                           fill);
    }
    case Mistake::mask_after_softmax: {
        double least = 1;
        std::size_t row = 0;
        const Stage& masked = trace.at(StageId::masked, head);
        for (std::size_t i = 0; i < p.weights.size(); ++i) {
            double sum = 0;
            bool sees = false;
            for (std::size_t j = 0; j < p.weights[i].size(); ++j) {
                sum += p.weights[i][j];
                sees = sees || (*masked.allowed)(at(i), at(j));
            }
            if (sees && sum < least) least = sum, row = i;
        }
        return fmt::format("the softmax was taken over every {0} and the hidden {0}s' weights then set to 0 without "
                           "dividing again, so the rows sum to less than 1 ({1}{3} to {2:.4g}): hide the scores before "
                           "the softmax (or divide each row by its new sum).",
                           w.key, row_name(masked, row), least, in_head);
    }
    case Mistake::softmax_over_columns:
        return fmt::format("the softmax was taken down each column: take it along each row, so that each {}'s weights "
                           "sum to 1.",
                           w.query);
    case Mistake::softmax_overflow: {
        const bool single = trace.dtype == Dtype::float32;
        const char* type = single ? "float32" : "float64";
        const double largest = single ? std::log(static_cast<double>(std::numeric_limits<float>::max()))
                                      : std::log(std::numeric_limits<double>::max());
        const Stage& masked = trace.at(StageId::masked, head);
        const std::string lead = "e^s was taken of the scores themselves, without subtracting the row's largest first";
        const std::string fix = "subtract each row's largest score before taking e^s: the weights stay the same, and "
                                "every e^s is at most 1.";
        const std::string score = trace.temperature != 1 ? "score ÷ T" : "score";
        for (std::size_t i = 0; i < p.masked.size(); ++i) {
            double max = minus_inf;
            bool over = false, under = true, sum_over = false;
            float sum_f = 0;
            double sum_d = 0;
            for (const double v : p.masked[i]) {
                if (v == minus_inf) continue;
                const double s = v / trace.temperature;
                max = std::max(max, s);
                const double e = single ? static_cast<double>(std::exp(static_cast<float>(s))) : std::exp(s);
                over = over || std::isinf(e);
                under = under && e == 0;
                if (single) sum_f += static_cast<float>(e);
                else sum_d += e;
            }
            if (max == minus_inf) continue;
            sum_over = !over && std::isinf(single ? static_cast<double>(sum_f) : sum_d);
            if (over)
                return fmt::format("{}: in {} the largest {} is {:.6g}, and e^{:.6g} is beyond {} (whose largest number is "
                                   "about e^{:.2f}), so it is ∞; ∞ ÷ ∞ is NaN, and each finite e^s ÷ ∞ is 0: {}",
                                   lead, row_name(masked, i), score, max, max, type, largest, fix);
            if (sum_over)
                return fmt::format("{}: in {} each e^s is finite, but their sum is beyond {} (about e^{:.2f}), so it is "
                                   "∞ and each weight, e^s ÷ ∞, is 0: {}",
                                   lead, row_name(masked, i), type, largest, fix);
            if (under)
                return fmt::format("{}: in {} even the largest {}, {:.6g}, gives an e^s that is 0 in {}, so the row is "
                                   "0 ÷ 0, NaN: {}",
                                   lead, row_name(masked, i), score, max, type, fix);
        }
        return lead + ": " + fix;
    }
    case Mistake::sum_instead_of_softmax: {
        std::string text = "each score was divided by its row's sum: softmax takes e to the power of each score first, "
                           "then divides by the row's sum of those";
        // Negative scores: the first row whose "weights" leave [0, 1], which e^s never lets a softmax's do.
        const Stage& masked = trace.at(StageId::masked, head);
        for (std::size_t i = 0; i < p.weights.size(); ++i) {
            bool negative = false, below = false, above = false, zero_sum = false;
            double sum = 0;
            for (const double v : p.masked[i])
                if (std::isfinite(v)) negative = negative || v < 0, sum += v;
            for (const double v : p.weights[i]) below = below || v < 0, above = above || v > 1;
            zero_sum = negative && sum == 0;
            if (!negative || !(below || above || zero_sum)) continue;
            const std::string what = zero_sum       ? "a division by 0"
                                     : below && above ? "negative weights and weights above 1"
                                     : below          ? "negative weights"
                                                      : "weights above 1";
            text += fmt::format("; with negative scores, as in {}{}, the division by their sum gives {}, which softmax "
                                "never does (e^s is never negative)",
                                row_name(masked, i), several ? fmt::format(" of head {}", std::max(head, 1)) : "", what);
            break;
        }
        return text + ".";
    }
    case Mistake::softmax_instead_of_sum:
        return "softmax was used where this run divides each score by its row's sum (--normalize sum): divide the "
               "scores themselves by their row's sum.";
    case Mistake::context_from_scores: {
        const bool scaled = p.divisor != 1;
        std::string scores = variant.raw_scores ? "raw scores (before scaling)" : scaled ? "scaled scores" : "scores";
        if (trace.at(StageId::masked, head).allowed)
            scores += variant.every_key ? ", every key's, the hidden ones too," : ", with the hidden ones as 0,";
        return fmt::format("the context was summed with the {} as its weights: multiply the weights ({}) by {}.", scores,
                           trace.normalization == Normalization::softmax ? "the softmax of each row of scores"
                                                                          : "each score divided by its row's sum",
                           w.values);
    }
    case Mistake::context_from_inputs:
        return fmt::format("the context was summed from {0} instead of the values: multiply the weights by V = {0}·W_v.",
                           w.x);
    }
    return std::string(mistake_info(mistake).summary);
}

}  // namespace

std::span<const MistakeInfo> mistakes() { return mistake_table; }

const MistakeInfo& mistake_info(Mistake id) {
    for (const auto& info : mistake_table)
        if (info.id == id) return info;
    throw std::logic_error("a mistake without its entry");
}

bool diagnosable(StageId id) {
    switch (id) {
    case StageId::queries:
    case StageId::keys:
    case StageId::values:
    case StageId::queries_rotated:
    case StageId::keys_rotated:
    case StageId::scores:
    case StageId::scaled:
    case StageId::masked:
    case StageId::weights:
    case StageId::context:
    case StageId::concat:
    case StageId::output:
    case StageId::head_contributions: return true;
    default: return false;
    }
}

// Where a mistake can show: the stages its change reaches.
bool reaches(Mistake mistake, StageId id) {
    const int stage = after_the_heads(id) ? 7 : order_of(id);
    switch (mistake) {
    case Mistake::transposed_w_q: return id != StageId::keys && id != StageId::values && id != StageId::keys_rotated;
    case Mistake::transposed_w_k: return id != StageId::queries && id != StageId::values && id != StageId::queries_rotated;
    case Mistake::transposed_w_v: return id == StageId::values || stage >= 6;
    case Mistake::wrong_head_split: return true;
    case Mistake::keys_times_queries:
    case Mistake::no_tanh: return stage >= 2;
    case Mistake::no_scaling:
    case Mistake::sqrt_d_model:
    case Mistake::divided_by_d_k: return stage >= 3;
    case Mistake::no_mask:
    case Mistake::finite_fill: return stage >= 4;
    // Masking after the softmax leaves no mask before it: a masked stage equal to the scaled
    // scores is no_mask's, whatever the learner meant to do later.
    case Mistake::mask_after_softmax:
    case Mistake::softmax_over_columns:
    case Mistake::softmax_overflow:
    case Mistake::sum_instead_of_softmax:
    case Mistake::softmax_instead_of_sum: return stage >= 5;
    case Mistake::context_from_scores:
    case Mistake::context_from_inputs: return stage >= 6;
    }
    return false;
}

std::vector<Diagnosis> diagnose(const Trace& trace, StageId id, int head, const Reproduces& reproduces,
                                const MistakeContext& context) {
    std::vector<Diagnosis> out;
    if (!diagnosable(id)) return out;
    for (const MistakeInfo& info : mistake_table) {
        if (!reaches(info.id, id)) continue;
        for (const Variant& variant : variants_of(trace, head, info.id, context)) {
            Pass pass;
            const auto m = stage_under(trace, id, head, variant, pass);
            if (!m || !reproduces(*m)) continue;
            // The explanation may quote the weights: a pass that stopped before them goes on.
            if (pass.weights.empty() && (info.id == Mistake::finite_fill || info.id == Mistake::sum_instead_of_softmax))
                if (auto full = compute(trace, head, variant, StageId::weights)) pass = std::move(*full);
            out.push_back({info.id, explanation(trace, head, info.id, variant, pass, context)});
            break;
        }
    }
    return out;
}

std::vector<Diagnosis> diagnose_feature(const Trace& trace, Eigen::Index row, Eigen::Index col, Eigen::Index entry,
                                        const std::function<bool(double)>& reproduces) {
    std::vector<Diagnosis> out;
    if (trace.mode != Mode::bahdanau || trace.score != Score::additive) return out;
    const double without_tanh =
        trace.at(StageId::projected_decoder).data(row, entry) + trace.at(StageId::projected_encoder).data(col, entry);
    if (reproduces(without_tanh))
        out.push_back({Mistake::no_tanh, "the entry was left as s·W_a + h·U_a, without its tanh: take tanh of each "
                                         "entry, so that every feature lies between −1 and 1, then e = v_a · "
                                         "tanh(s·W_a + h·U_a)."});
    return out;
}

std::optional<Matrix> renormalised_after_softmax(const Trace& trace, int head) {
    Variant variant;
    variant.renormalise = true;
    const auto pass = compute(trace, head, variant, StageId::weights);
    if (!pass) return std::nullopt;
    return matrix_of(pass->weights);
}

std::uint64_t mistake_pass_bytes(double rows, double cols, double d_in, double d_k, double d_v) {
    // At the peak (after the heads: the head asked for kept while the next is computed) two
    // passes, each with its four score-sized grids (scores, scaled, masked, weights) and its
    // queries, keys and values; a transposed or mixed copy, the learner's scores for the
    // context and the matrix handed back; the inputs, the full projections, the weights, and
    // the contexts side by side. Each row of a grid costs its header too.
    const double numbers = 12 * rows * cols + 2 * rows * (4 * d_k + 2 * d_v) + rows * d_in + rows * (2 * d_k + d_v) +
                           2 * rows * d_v + d_in * (d_k + d_v);
    const double row_headers = 32 * rows + 4 * cols;
    return static_cast<std::uint64_t>(8 * numbers + 48 * row_headers) + (1u << 16);
}

double mistake_search_seconds(double rows, double cols, double d_in, double d_k, double d_v, double heads) {
    // A pass: the three projections, every head's scores and mix, and about a dozen passes
    // over the score-sized grids (scale, mask, exp, divide, copies). Measured: check-answers
    // of a differing row of weights, 1000 causal tokens of 64 numbers, twenty passes in about
    // 1.8 s of one core, about 1 ns an operation; the estimate leaves some room.
    const double pass = rows * d_in * (2 * d_k + d_v) + rows * cols * (d_k + d_v) + 12 * rows * cols * heads;
    constexpr double ways = 26;  // every mistake's ways: eight fills, four scores for the context, …
    return ways * pass * 1.5e-9;
}

}  // namespace attntrace
