// The backward pass of the single-sequence modes (plain, self, causal): from the loss's seed
// through W_o and the heads' concatenation, each head's chain, RoPE, the projections and their
// biases, to the inputs through ln_1 and the sinusoidal encodings.
#include "attention/backward_chain.hpp"
#include "attention/backward_steps.hpp"
#include "attention/heads.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>
#include <string>
#include <vector>

namespace attntrace::backward_detail {
namespace {

// The forward stages of one head.
struct HeadStages {
    int head = 0;  // 1-based with several heads, 0 with one
    int group = 1;  // its key/value head, 1-based
    const Stage& queries;
    const Stage& keys;
    const Stage& values;
    const Stage* queries_rotated;  // RoPE only
    const Stage* keys_rotated;
    CoreStages core;
};

HeadStages head_stages(const Trace& t, int head) {
    const Stage& weights = t.at(StageId::weights, head);
    const int group = weights.kv_head > 0 ? weights.kv_head : head > 0 ? head : 1;
    const Stage& values = t.at(StageId::values, head);
    return {head,
            group,
            t.at(StageId::queries, head),
            t.at(StageId::keys, head),
            values,
            t.find(StageId::queries_rotated, head),
            t.find(StageId::keys_rotated, head),
            {values, t.at(StageId::scores, head), t.at(StageId::scaled, head), t.at(StageId::masked, head), weights,
             t.at(StageId::context, head)}};
}

// The gradients of one head; the keys' and values' are this head's share of its key/value head's.
struct HeadGradients {
    bool reached = false;  // the loss depends on this head
    CoreGradients core;
    Matrix queries_rotated, keys_rotated;  // RoPE
    Matrix queries, keys;
};

// The gradients of what the heads share: one per key/value head, summed over its query heads.
struct GroupGradients {
    Matrix keys_rotated, keys, values;
    std::vector<int> heads;  // the query heads the loss reaches in this group
};

struct Layer {
    const Trace& trace;
    std::vector<HeadStages> heads;
    bool focus = false;
    bool several() const { return heads.size() > 1; }
};

// dZ of each head (none for a focus loss): through the output and W_o when the run has them.
std::vector<Matrix> context_seeds(const Layer& layer, const Loss& loss, GradientRecorder& out, std::string& formula) {
    const Trace& t = layer.trace;
    const Stage* output = t.find(StageId::output);
    const bool bias = t.has_parameter("b_o");
    const std::string input = layer.several() ? "concat" : "Z";
    if (layer.focus) {
        if (!output) return {};
        if (bias) out.parameter("b_o", "db_o = 0: the focus loss is on the weights, before the output", Matrix::Zero(1, output->col_count()));
        out.parameter("W_o", "dW_o = 0: the focus loss is on the weights, before the output",
                      Matrix::Zero(t.parameter("W_o").data.rows(), output->col_count()));
        return {};
    }
    const Stage& result = result_stage(t);
    const Matrix seed = result_seed(result, loss);
    const std::string seed_formula = loss.kind == LossKind::sum ? "d{} = 1 (every entry: L = Σ {})" : "d{} = {} − T";
    if (!output) {
        formula = fmt::format(fmt::runtime(seed_formula), "Z", "Z");
        return {seed};
    }
    out.add(*output, "Gradient of the output: the loss's own derivative",
            fmt::format(fmt::runtime(seed_formula), "(output)", "output"), seed);
    const Stage& in = layer.several() ? t.at(StageId::concat) : t.at(StageId::context);
    const Matrix& w_o = t.parameter("W_o").data;
    if (bias) out.parameter("b_o", "db_o = column sums of d(output)", grad::column_sums(seed));
    out.parameter("W_o", fmt::format("dW_o = {}ᵀ·d(output)", input), in.data.transpose() * seed);
    const Matrix d_in = seed * w_o.transpose();
    if (!layer.several()) {
        formula = "dZ = d(output)·W_oᵀ";
        return {d_in};
    }
    out.add(in, "Gradient of the heads' contexts side by side", "d(concat) = d(output)·W_oᵀ", d_in);
    std::vector<Matrix> seeds;
    const Eigen::Index d_v = layer.heads.front().core.context.col_count();
    for (std::size_t h = 0; h < layer.heads.size(); ++h)
        seeds.emplace_back(d_in.middleCols(static_cast<Eigen::Index>(h) * d_v, d_v));
    return seeds;
}

HeadGradients head_backward(const Layer& layer, const HeadStages& h, const Matrix* d_context, const Matrix* d_focus) {
    HeadGradients d;
    d.reached = true;
    d.core = core_backward(layer.trace, h.core, d_context, d_focus);
    const Matrix& ds = d.core.scores;
    if (h.queries_rotated) {  // S = RoPE(Q)·RoPE(K)ᵀ
        const Matrix& angles = layer.trace.at(StageId::positions).data;
        d.queries_rotated = ds * h.keys_rotated->data;
        d.keys_rotated = ds.transpose() * h.queries_rotated->data;
        d.queries = grad::rotate_back(d.queries_rotated, angles);
        d.keys = grad::rotate_back(d.keys_rotated, angles);
    } else {  // S = Q·Kᵀ
        d.queries = ds * h.keys.data;
        d.keys = ds.transpose() * h.queries.data;
    }
    return d;
}

void add_to(Matrix& sum, const Matrix& term) {
    if (term.size() == 0) return;
    if (sum.size() == 0) sum = term;
    else sum += term;
}

std::vector<GroupGradients> group_sums(const Layer& layer, const std::vector<HeadGradients>& d) {
    int groups = 1;
    for (const HeadStages& h : layer.heads) groups = std::max(groups, h.group);
    std::vector<GroupGradients> sums(static_cast<std::size_t>(groups));
    for (std::size_t i = 0; i < layer.heads.size(); ++i) {
        if (!d[i].reached) continue;
        GroupGradients& g = sums[static_cast<std::size_t>(layer.heads[i].group - 1)];
        g.heads.push_back(layer.heads[i].head);
        add_to(g.keys_rotated, d[i].keys_rotated);
        add_to(g.keys, d[i].keys);
        add_to(g.values, d[i].core.values);
    }
    return sums;
}

// "dS_1ᵀ·Q_1 + dS_2ᵀ·Q_2": one term per query head of a group the loss reaches.
std::string shares(const std::vector<int>& heads, std::string_view pattern) {
    std::vector<std::string> terms;
    for (const int h : heads) {
        const Symbols s = single_symbols(h);
        terms.push_back(fmt::format(fmt::runtime(pattern), fmt::arg("S", s.scores), fmt::arg("Q", s.queries),
                                    fmt::arg("A", s.weights), fmt::arg("Z", s.context)));
    }
    return fmt::format("{}", fmt::join(terms, " + "));
}

std::string group_title(const HeadStages& h, const GroupGradients& g) {
    if (h.keys.kv_head == 0) return "";
    if (g.heads.size() == 1)
        return fmt::format(" (key/value head {}: from query head {}, the one of its heads the loss reaches)", h.group,
                           g.heads.front());
    return fmt::format(" (key/value head {}: the sum over the query heads {} that share it)", h.group,
                       fmt::join(g.heads, ", "));
}

void record_rotations(GradientRecorder& out, const HeadStages& h, const HeadGradients& d, const GroupGradients& g,
                      const Symbols& s) {
    const std::string grouped = group_title(h, g);
    out.add(*h.keys_rotated, "Gradient of the rotated keys" + grouped,
            fmt::format("dRoPE({}) = {}", s.keys, shares(g.heads, "d{S}ᵀ·RoPE({Q})")), g.keys_rotated);
    out.add(*h.queries_rotated, "Gradient of the rotated queries",
            fmt::format("dRoPE({}) = d{}·RoPE({})", s.queries, s.scores, s.keys), d.queries_rotated);
}

void record_head(GradientRecorder& out, const Layer& layer, const HeadStages& h, const HeadGradients& d,
                 const GroupGradients& g, const std::string& context_formula) {
    const Symbols s = single_symbols(h.head);
    const bool plain = !layer.trace.has_parameter("W_q");
    record_core(out, h.core, d.core, plain ? Symbols{s.context, s.weights, s.masked, s.scaled, s.scores, "X", "X", "X"} : s,
                context_formula);
    if (h.queries_rotated) record_rotations(out, h, d, g, s);
    const std::string grouped = group_title(h, g);
    const auto turned = [](const std::string& symbol) {
        return fmt::format("d{0} = RoPE⁻¹(dRoPE({0})): each pair (k, k + d_head/2) turned back by −φk", symbol);
    };
    if (!layer.focus)
        out.add(h.values, "Gradient of the values" + grouped,
                plain ? std::string("dV = Aᵀ·dZ (V = X)") : fmt::format("d{} = {}", s.values, shares(g.heads, "{A}ᵀ·d{Z}")),
                g.values);
    out.add(h.keys, "Gradient of the keys" + grouped,
            plain             ? std::string("dK = dSᵀ·Q (K = Q = X)")
            : h.keys_rotated ? turned(s.keys)
                             : fmt::format("d{} = {}", s.keys, shares(g.heads, "d{S}ᵀ·{Q}")),
            g.keys);
    out.add(h.queries, "Gradient of the queries",
            plain             ? std::string("dQ = dS·K (K = X)")
            : h.queries_rotated ? turned(s.queries)
                                : fmt::format("d{} = d{}·{}", s.queries, s.scores, s.keys),
            d.queries);
}

}  // namespace

namespace {

// [dX_1 … dX_H]: each head's (or key/value head's) gradient in its block of columns.
Matrix side_by_side(const std::vector<Matrix>& blocks, Eigen::Index rows, Eigen::Index width) {
    Matrix all = Matrix::Zero(rows, width * static_cast<Eigen::Index>(blocks.size()));
    for (std::size_t i = 0; i < blocks.size(); ++i)
        if (blocks[i].size() > 0) all.middleCols(static_cast<Eigen::Index>(i) * width, width) = blocks[i];
    return all;
}

// dW = Xᵀ·dY and db = column sums of dY, the bias's first (reverse order); dY·Wᵀ returned.
Matrix record_projection(GradientRecorder& out, const Matrix& x, const Matrix& dy, std::string_view y,
                         std::string_view w, std::string_view b, const std::string& input, const std::string& note) {
    const Trace& t = out.trace();
    if (t.has_parameter(b)) out.parameter(b, fmt::format("d{} = column sums of d{}{}", b, y, note), grad::column_sums(dy));
    out.parameter(w, fmt::format("d{} = {}ᵀ·d{}{}", w, input, y, note), x.transpose() * dy);
    return dy * t.parameter(w).data.transpose();
}

// dX from the projections' gradients: the three paths X takes (plain mode: X itself).
Matrix record_projections(GradientRecorder& out, const Layer& layer, const std::vector<HeadGradients>& d,
                          const std::vector<GroupGradients>& groups, const Stage& x) {
    const Trace& t = layer.trace;
    const Eigen::Index n = x.row_count();
    if (!t.has_parameter("W_q")) {  // plain: Q = K = V = X
        Matrix dx = d.front().queries + groups.front().keys;
        if (groups.front().values.size() > 0) dx += groups.front().values;
        return dx;
    }
    std::vector<Matrix> dq, dk, dv;
    for (const HeadGradients& h : d) dq.push_back(h.queries);
    for (const GroupGradients& g : groups) dk.push_back(g.keys), dv.push_back(g.values);
    const HeadStages& first = layer.heads.front();
    const std::string input = x.id == StageId::layernorm ? "LN(X)" : "X";
    const std::string zero = layer.focus ? " (0: the focus loss is on the weights, which the values do not reach)" : "";
    Matrix dx = record_projection(out, x.data, side_by_side(dv, n, first.values.col_count()), "V", "W_v", "b_v", input, zero);
    dx += record_projection(out, x.data, side_by_side(dk, n, first.keys.col_count()), "K", "W_k", "b_k", input, "");
    dx += record_projection(out, x.data, side_by_side(dq, n, first.queries.col_count()), "Q", "W_q", "b_q", input, "");
    return dx;
}

// From dX (or d(LN(X))) to the inputs and the embeddings, through ln_1 and the encodings.
void record_inputs(GradientRecorder& out, const Trace& t, Matrix dx) {
    const Stage& inputs = t.at(StageId::inputs);
    if (const Stage* ln = t.find(StageId::layernorm)) {
        out.add(*ln, "Gradient of the normalised inputs, which the projections read",
                "d(LN(X)) = dQ·W_qᵀ + dK·W_kᵀ + dV·W_vᵀ, the three paths LN(X) takes", dx);
        grad::LayerNormGradients d = grad::layer_norm_backward(inputs.data, dx, t.parameter("gamma").data, t.layernorm_epsilon);
        out.parameter("beta", "dβ = column sums of d(LN(X))", d.d_beta);
        out.parameter("gamma", "dγ = Σ over the rows of d(LN(X)) ⊙ x̂, x̂ = (x − mean(x)) / σ", d.d_gamma);
        dx = std::move(d.d_x);
        out.add(inputs, "Gradient of the inputs, through the layer normalisation",
                "dX = (g − mean(g) − x̂·mean(g ⊙ x̂)) / σ per row, g = d(LN(X)) ⊙ γ, σ = √(var(x) + ε)", dx);
    } else {
        out.add(inputs, "Gradient of the inputs: the sum of their paths",
                t.has_parameter("W_q") ? "dX = dQ·W_qᵀ + dK·W_kᵀ + dV·W_vᵀ, the three paths X takes"
                                       : "dX = dQ + dK + dV: X is the queries, the keys and the values",
                dx);
    }
    if (const Stage* e = t.find(StageId::embeddings))
        out.add(*e, "Gradient of the embeddings: the same as the inputs', since the encodings are fixed",
                "dE = dX (X = E + PE)", std::move(dx));
}

}  // namespace

void backward_single_sequence(const Trace& trace, Gradients& gradients) {
    GradientRecorder out(gradients, trace);
    Layer layer{trace, {}, gradients.loss.kind == LossKind::focus};
    const bool several = trace.heads > 1;
    for (int h = 1; h <= trace.heads; ++h) layer.heads.push_back(head_stages(trace, several ? h : 0));
    std::string context_formula;
    const std::vector<Matrix> seeds = context_seeds(layer, gradients.loss, out, context_formula);
    std::vector<HeadGradients> d(layer.heads.size());
    for (std::size_t i = 0; i < layer.heads.size(); ++i) {
        const HeadStages& h = layer.heads[i];
        if (!layer.focus) {
            d[i] = head_backward(layer, h, &seeds[i], nullptr);
        } else if (h.core.weights.head == gradients.loss.head || !several) {
            const Matrix seed = focus_seed(h.core.weights, gradients.loss);
            d[i] = head_backward(layer, h, nullptr, &seed);
        } else {  // a head the focus loss does not read: no gradient, and none recorded
            d[i].queries = Matrix::Zero(h.queries.row_count(), h.queries.col_count());
        }
    }
    const std::vector<GroupGradients> groups = group_sums(layer, d);
    for (std::size_t i = layer.heads.size(); i-- > 0;) {
        if (!d[i].reached) continue;
        const HeadStages& h = layer.heads[i];
        const std::string formula =
            several ? fmt::format("dZ_{} = d(concat), {}", h.head, columns_text(static_cast<Eigen::Index>(i) * h.values.col_count(), h.values.col_count()))
                    : context_formula;
        record_head(out, layer, h, d[i], groups[static_cast<std::size_t>(h.group - 1)], formula);
    }
    const Stage& x = trace.find(StageId::layernorm) ? trace.at(StageId::layernorm) : trace.at(StageId::inputs);
    record_inputs(out, trace, record_projections(out, layer, d, groups, x));
}

}  // namespace attntrace::backward_detail
