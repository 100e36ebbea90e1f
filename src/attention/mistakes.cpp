#include "attention/mistakes.hpp"

#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace attntrace {
namespace {

constexpr std::array<MistakeInfo, 15> mistake_table{{
    {Mistake::transposed_w_q, "transposed_w_q",
     "W_q was used transposed (X·W_qᵀ), as when an nn.Linear weight, stored (out, in), is multiplied as if it were "
     "(in, out): use Q = X·W_q with W_q of shape d_in × d_k."},
    {Mistake::transposed_w_k, "transposed_w_k",
     "W_k was used transposed (X·W_kᵀ), as when an nn.Linear weight, stored (out, in), is multiplied as if it were "
     "(in, out): use K = X·W_k with W_k of shape d_in × d_k."},
    {Mistake::transposed_w_v, "transposed_w_v",
     "W_v was used transposed (X·W_vᵀ), as when an nn.Linear weight, stored (out, in), is multiplied as if it were "
     "(in, out): use V = X·W_v with W_v of shape d_in × d_v."},
    {Mistake::wrong_head_split, "wrong_head_split",
     "Q, K and V were cut into heads by reshaping them row by row (as view(heads, n, d_head) does); each head takes "
     "its own block of d_head columns for every token instead."},
    {Mistake::keys_times_queries, "keys_times_queries",
     "the scores are K·Qᵀ, the transpose of the right matrix: row i must hold query i's dot products with every key, "
     "S = Q·Kᵀ."},
    {Mistake::no_scaling, "no_scaling",
     "the scores were not scaled: divide each by √d_k before the softmax."},
    {Mistake::sqrt_d_model, "sqrt_d_model",
     "the scores were divided by √d_model, the width of all heads together: divide by √d_head, the width of one "
     "head's queries and keys."},
    {Mistake::divided_by_d_k, "divided_by_d_k",
     "the scores were divided by d_k itself: divide by its square root, √d_k."},
    {Mistake::finite_fill, "finite_fill",
     "the hidden scores were set to a finite number that still leaves them some weight: set them to −∞ (or leave "
     "them out) so their weights are exactly 0."},
    {Mistake::mask_after_softmax, "mask_after_softmax",
     "the mask was applied after the softmax without dividing again, so the rows no longer sum to 1: hide the "
     "scores before the softmax (or divide each row by its new sum)."},
    {Mistake::softmax_over_columns, "softmax_over_columns",
     "the softmax was taken down each column: take it along each row, so each query's weights sum to 1."},
    {Mistake::sum_instead_of_softmax, "sum_instead_of_softmax",
     "each score was divided by its row's sum: softmax takes e to the power of each score first, then divides by "
     "the row's sum of those."},
    {Mistake::softmax_instead_of_sum, "softmax_instead_of_sum",
     "softmax was used where this run divides each score by its row's sum (--normalize sum): divide the scores "
     "themselves by their row's sum."},
    {Mistake::context_from_scores, "context_from_scores",
     "the context was summed with the scores as weights: multiply the weights (after the softmax) by V."},
    {Mistake::context_from_inputs, "context_from_inputs",
     "the context was summed from the inputs X: multiply the weights by the values V = X·W_v."},
}};

using Grid = std::vector<std::vector<double>>;
constexpr double minus_inf = -std::numeric_limits<double>::infinity();

Grid grid_of(const Matrix& m) {
    Grid g(static_cast<std::size_t>(m.rows()), std::vector<double>(static_cast<std::size_t>(m.cols())));
    for (Eigen::Index i = 0; i < m.rows(); ++i)
        for (Eigen::Index j = 0; j < m.cols(); ++j) g[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] = m(i, j);
    return g;
}

Matrix matrix_of(const Grid& g) {
    const auto cols = g.empty() ? 0 : g[0].size();
    Matrix m(static_cast<Eigen::Index>(g.size()), static_cast<Eigen::Index>(cols));
    for (std::size_t i = 0; i < g.size(); ++i)
        for (std::size_t j = 0; j < cols; ++j) m(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = g[i][j];
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

// X·W (+ b); `transpose`: X·Wᵀ, which fits only a square W.
std::optional<Grid> project(const Grid& x, const Trace& trace, const char* weight, const char* bias, bool transpose) {
    Grid w = grid_of(trace.parameter(weight).data);
    if (transpose) {
        if (w.size() != w[0].size()) return std::nullopt;
        w = transposed(w);
    }
    Grid out = times(x, w);
    if (trace.has_parameter(bias)) {
        const Matrix& b = trace.parameter(bias).data;
        for (auto& row : out)
            for (std::size_t j = 0; j < row.size(); ++j) row[j] += b(0, static_cast<Eigen::Index>(j));
    }
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

void sum_rows(Grid& s) {
    for (auto& row : s) {
        double sum = 0;
        for (double& v : row) {
            if (!std::isfinite(v)) v = 0;
            sum += v;
        }
        for (double& v : row) v = sum != 0 ? v / sum : 0;
    }
}

// The stages of one head under one mistake (or none).
struct Pass {
    Grid q, k, v, scores, scaled, masked, weights, context;
};

struct Variant {
    std::optional<Mistake> mistake;
    double fill = 0;       // finite_fill
    bool raw_scores = false;  // context_from_scores: the scores before scaling
    bool renormalise = false;  // mask after softmax, then divide each row again
};

bool is(const Variant& v, Mistake m) { return v.mistake == m; }

// One head's pass, in plain loops; nullopt when the variant cannot arise in this run.
std::optional<Pass> compute(const Trace& trace, int head, const Variant& variant) {
    Pass p;
    const int h = head > 0 ? head : 1;
    const bool pair = trace.mode == Mode::bahdanau;
    const bool learned = trace.has_parameter("W_q");
    const bool rotated = trace.find(StageId::queries_rotated) != nullptr;
    const bool touches_projection = is(variant, Mistake::transposed_w_q) || is(variant, Mistake::transposed_w_k) ||
                                    is(variant, Mistake::transposed_w_v) || is(variant, Mistake::wrong_head_split);
    Grid x;
    if (pair) {
        if (touches_projection || is(variant, Mistake::keys_times_queries) || is(variant, Mistake::context_from_inputs))
            return std::nullopt;
        p.v = grid_of(trace.at(StageId::encoder_states).data);
        p.scores = grid_of(trace.at(StageId::scores).data);
    } else {
        const Stage* normed = trace.find(StageId::layernorm);
        x = grid_of((normed ? *normed : trace.at(StageId::inputs)).data);
        if (!learned) {
            if (touches_projection) return std::nullopt;
            p.q = p.k = p.v = x;
        } else if (rotated) {
            if (touches_projection) return std::nullopt;
            p.q = grid_of(trace.at(StageId::queries_rotated, head).data);
            p.k = grid_of(trace.at(StageId::keys_rotated, head).data);
            p.v = grid_of(trace.at(StageId::values, head).data);
        } else {
            const auto q = project(x, trace, "W_q", "b_q", is(variant, Mistake::transposed_w_q));
            const auto k = project(x, trace, "W_k", "b_k", is(variant, Mistake::transposed_w_k));
            const auto v = project(x, trace, "W_v", "b_v", is(variant, Mistake::transposed_w_v));
            if (!q || !k || !v) return std::nullopt;
            const std::size_t heads = static_cast<std::size_t>(trace.heads);
            if (heads == 1 && is(variant, Mistake::wrong_head_split)) return std::nullopt;
            const std::size_t kv_heads = static_cast<std::size_t>(trace.kv_heads);
            const std::size_t d_head = trace.parameter("W_q").data.cols() / static_cast<Eigen::Index>(heads);
            const std::size_t d_v = trace.parameter("W_v").data.cols() / static_cast<Eigen::Index>(kv_heads);
            if ((*q)[0].size() != heads * d_head || (*k)[0].size() != kv_heads * d_head ||
                (*v)[0].size() != kv_heads * d_v)
                return std::nullopt;  // a transposed weight of another width
            const std::size_t g = (static_cast<std::size_t>(h) * kv_heads + heads - 1) / heads;  // ⌈h·G/H⌉
            const bool by_rows = is(variant, Mistake::wrong_head_split);
            p.q = head_block(*q, static_cast<std::size_t>(h - 1), d_head, by_rows);
            p.k = head_block(*k, g - 1, d_head, by_rows);
            p.v = head_block(*v, g - 1, d_v, by_rows);
        }
        p.scores = is(variant, Mistake::keys_times_queries) ? times(p.k, transposed(p.q)) : times(p.q, transposed(p.k));
    }
    // Scale.
    double divisor = trace.scale;
    if (is(variant, Mistake::no_scaling) || is(variant, Mistake::sqrt_d_model) || is(variant, Mistake::divided_by_d_k)) {
        if (trace.scale_rule != ScaleRule::sqrt || pair) return std::nullopt;
        const double d_head = static_cast<double>(p.q[0].size());
        if (is(variant, Mistake::no_scaling)) divisor = 1;
        if (is(variant, Mistake::divided_by_d_k)) divisor = d_head;
        if (is(variant, Mistake::sqrt_d_model)) {
            if (trace.heads == 1) return std::nullopt;
            divisor = std::sqrt(d_head * trace.heads);
        }
    }
    p.scaled = p.scores;
    for (auto& row : p.scaled)
        for (double& v : row) v /= divisor;
    // Mask.
    const Stage& masked_stage = trace.at(StageId::masked, head);
    const auto& allowed = masked_stage.allowed;
    const bool after = is(variant, Mistake::mask_after_softmax) || variant.renormalise;
    if ((is(variant, Mistake::finite_fill) || after) && !allowed) return std::nullopt;
    const double fill = is(variant, Mistake::finite_fill) ? variant.fill : minus_inf;
    p.masked = p.scaled;
    if (allowed && !after)
        for (std::size_t i = 0; i < p.masked.size(); ++i)
            for (std::size_t j = 0; j < p.masked[i].size(); ++j)
                if (!(*allowed)(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j))) p.masked[i][j] = fill;
    // Normalise.
    bool softmax = trace.normalization == Normalization::softmax;
    if (is(variant, Mistake::sum_instead_of_softmax) || is(variant, Mistake::softmax_instead_of_sum)) {
        if (softmax != is(variant, Mistake::sum_instead_of_softmax)) return std::nullopt;
        softmax = !softmax;
    }
    if ((is(variant, Mistake::softmax_over_columns) || after) && !softmax) return std::nullopt;
    p.weights = p.masked;
    if (softmax)
        for (auto& row : p.weights)
            for (double& v : row) v /= trace.temperature;
    if (is(variant, Mistake::softmax_over_columns)) {
        p.weights = transposed(p.weights);
        softmax_rows(p.weights);
        p.weights = transposed(p.weights);
    } else if (softmax) {
        softmax_rows(p.weights);
    } else {
        sum_rows(p.weights);
    }
    if (after) {
        for (std::size_t i = 0; i < p.weights.size(); ++i) {
            double sum = 0;
            for (std::size_t j = 0; j < p.weights[i].size(); ++j) {
                if (!(*allowed)(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j))) p.weights[i][j] = 0;
                sum += p.weights[i][j];
            }
            if (variant.renormalise)
                for (double& v : p.weights[i]) v = sum > 0 ? v / sum : 0;
        }
    }
    // Mix.
    if (is(variant, Mistake::context_from_scores)) {
        Grid s = variant.raw_scores ? p.scores : p.masked;
        for (std::size_t i = 0; i < s.size(); ++i)
            for (std::size_t j = 0; j < s[i].size(); ++j)
                if (!std::isfinite(s[i][j]) ||
                    (allowed && !(*allowed)(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j))))
                    s[i][j] = 0;
        p.context = times(s, p.v);
    } else if (is(variant, Mistake::context_from_inputs)) {
        if (!learned) return std::nullopt;  // plain mode: V is X
        p.context = times(p.weights, x);
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
    case StageId::scores: return &p.scores;
    case StageId::scaled: return &p.scaled;
    case StageId::masked: return &p.masked;
    case StageId::weights: return &p.weights;
    case StageId::context: return &p.context;
    default: return nullptr;
    }
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
    case StageId::scores:
    case StageId::scaled:
    case StageId::masked:
    case StageId::weights:
    case StageId::context: return true;
    default: return false;
    }
}

std::vector<Matrix> under_mistake(const Trace& trace, StageId id, int head, Mistake mistake, std::span<const double> fills) {
    if (!diagnosable(id)) return {};
    std::vector<Variant> variants;
    if (mistake == Mistake::finite_fill) {
        for (const double fill : {0.0, -1.0, -10.0, -100.0, -1e4, -1e9}) variants.push_back({mistake, fill});
        for (const double fill : fills) variants.push_back({mistake, fill});
    } else if (mistake == Mistake::context_from_scores) {
        variants.push_back({mistake, 0, false});
        variants.push_back({mistake, 0, true});
    } else {
        variants.push_back({mistake});
    }
    std::vector<Matrix> out;
    for (const Variant& variant : variants)
        if (const auto pass = compute(trace, head, variant))
            if (const Grid* g = stage_of(*pass, id); g && !g->empty()) out.push_back(matrix_of(*g));
    return out;
}

std::optional<Matrix> renormalised_after_softmax(const Trace& trace, int head) {
    Variant variant;
    variant.renormalise = true;
    const auto pass = compute(trace, head, variant);
    if (!pass) return std::nullopt;
    return matrix_of(pass->weights);
}

}  // namespace attntrace
