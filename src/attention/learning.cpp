#include "attention/learning.hpp"

#include "attention/backward.hpp"
#include "attention/backward_steps.hpp"
#include "attention/moved_parameters.hpp"
#include "core/error.hpp"

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <utility>

namespace attntrace {
namespace {

bool heads_apart(const Trace& t) { return t.mode != Mode::bahdanau && t.heads > 1; }

// J(j, k) = ∂a_j/∂s''_k of the row, with the short form's parts (a, dA, Σ, the divisor).
void row_jacobian(BackwardRow& w, const Vector& masked) {
    const Eigen::Index n = masked.cols();
    const bool small = n <= max_jacobian_keys;
    if (small) w.jacobian = Matrix::Zero(n, n);
    if (w.normalization == Normalization::sum) {  // a_j = s''_j / r over the finite scores
        double r = 0;
        bool any = false;
        for (Eigen::Index k = 0; k < n; ++k)
            if (std::isfinite(masked(k))) r += masked(k), any = true;
        w.divisor = any ? r : 1;
        for (Eigen::Index j = 0; j < n && small && any; ++j)
            for (Eigen::Index k = 0; k < n; ++k)
                if (std::isfinite(masked(j)) && std::isfinite(masked(k)))
                    w.jacobian(j, k) = ((j == k ? 1.0 : 0.0) - w.weights(j)) / r;
        return;
    }
    w.divisor = w.temperature;  // a = softmax(s'' / T): J = (diag(a) − aᵀ·a) / T, zeroed rows where hidden after
    if (!small) return;
    w.jacobian = grad::softmax_jacobian(w.weights, w.temperature);
    if (w.after_softmax)
        for (Eigen::Index j = 0; j < n; ++j)
            if (!w.visible[static_cast<std::size_t>(j)]) w.jacobian.row(j).setZero();
}

// dS''_j entry by entry: a_j·(dA_j − Σ_k a_k·dA_k) / T, or (dA_j − Σ) / r over the finite scores.
void short_form(BackwardRow& w, const Vector& masked) {
    const Eigen::Index n = masked.cols();
    w.inner = 0;
    for (Eigen::Index k = 0; k < n; ++k)
        if (w.normalization == Normalization::softmax || std::isfinite(masked(k))) w.inner += w.weights(k) * w.d_weights(k);
    w.short_form = Vector::Zero(n);
    for (Eigen::Index j = 0; j < n; ++j) {
        if (w.normalization == Normalization::sum) {
            if (std::isfinite(masked(j)) && w.divisor != 0) w.short_form(j) = (w.d_weights(j) - w.inner) / w.divisor;
        } else if (w.weights(j) != 0) {
            w.short_form(j) = w.weights(j) * (w.d_weights(j) - w.inner) / w.divisor;
        }
    }
}

std::optional<KeyMix> key_mix(const Trace& t, const Gradients& g, const BackwardRow& w, int head) {
    const Stage* d_scores = g.find(StageId::scores, head);
    if (!d_scores) return std::nullopt;
    KeyMix mix;
    const Stage* from = nullptr;
    if (t.mode == Mode::bahdanau) {
        if (t.score == Score::additive) return std::nullopt;  // no query vector: the score goes through tanh
        mix.target = t.score == Score::dot ? "ds" : "d(s·W)";
        mix.key = "h";
        mix.keys = t.at(StageId::encoder_states).data;
        from = g.find(StageId::projected_decoder);
    } else if (const Stage* rotated = t.find(StageId::keys_rotated, head)) {
        mix.target = "dRoPE(q)";
        mix.key = "RoPE(k)";
        mix.keys = rotated->data;
        from = g.find(StageId::queries_rotated, head);
    } else {
        mix.target = "dq";
        mix.key = t.has_parameter("W_q") ? "k" : "x";  // plain mode: the keys are the inputs
        mix.keys = t.at(StageId::keys, head).data;
        from = g.find(StageId::queries, head);
    }
    mix.d_scores = d_scores->data.row(w.row);
    mix.mixed = mix.d_scores * mix.keys;
    if (from) mix.from_backward = from->data.row(w.row);
    return mix;
}

}  // namespace

std::vector<std::string> gradient_names() {
    std::vector<std::string> names;
    for (const StageId id : {StageId::output, StageId::concat, StageId::context, StageId::weights, StageId::masked,
                             StageId::scaled, StageId::scores, StageId::keys_rotated, StageId::queries_rotated,
                             StageId::values, StageId::keys, StageId::queries, StageId::projected_encoder,
                             StageId::projected_decoder, StageId::layernorm, StageId::inputs, StageId::embeddings,
                             StageId::decoder_states, StageId::encoder_states})
        names.push_back(fmt::format("d_{}", to_string(id)));
    for (const char* parameter : {"W_o", "b_o", "W_q", "W_k", "W_v", "b_q", "b_k", "b_v", "gamma", "beta", "W_a", "U_a",
                                  "v_a", "W"})
        names.push_back(fmt::format("d_{}", parameter));
    return names;
}

std::string gradient_name(const Stage& gradient) { return fmt::format("d_{}", gradient.key()); }

BackwardRow work_backward_row(const Trace& t, const Gradients& g, Eigen::Index row, int head) {
    const int h = heads_apart(t) ? std::max(head, 1) : 0;
    const Stage* d_weights = g.find(StageId::weights, h);
    if (!d_weights)
        throw UsageError(fmt::format("--query: the focus loss is on head {}, so head {} gets no gradient (--head {} works "
                                     "through that head)",
                                     g.loss.head, h, g.loss.head));
    const Stage& weights = t.at(StageId::weights, h);
    const Stage& masked = t.at(StageId::masked, h);
    BackwardRow w;
    w.head = h;
    w.row = row;
    w.query = weights.rows[static_cast<std::size_t>(row)];
    for (const std::string& key : weights.cols) w.keys.push_back(key);
    w.normalization = t.normalization;
    w.after_softmax = !masked.applied && weights.allowed.has_value();
    w.temperature = t.temperature;
    for (Eigen::Index k = 0; k < weights.col_count(); ++k) w.visible.push_back(!weights.is_masked(row, k));
    const Vector masked_row = masked.data.row(row);
    w.d_weights = d_weights->data.row(row);
    if (w.after_softmax) {  // A = P with the hidden weights zeroed: the softmax saw P and dP
        w.weights = grad::softmax_rows(Matrix(masked_row), t.temperature).row(0);
        for (Eigen::Index k = 0; k < w.d_weights.cols(); ++k)
            if (!w.visible[static_cast<std::size_t>(k)]) w.d_weights(k) = 0;
    } else {
        w.weights = weights.data.row(row);
    }
    row_jacobian(w, masked_row);
    short_form(w, masked_row);
    if (w.jacobian.size() > 0) w.from_jacobian = w.d_weights * w.jacobian;  // (Jᵀ·dA)ᵀ = dAᵀ·J
    w.from_backward = g.at(StageId::masked, h).data.row(row);
    w.scale = t.at(StageId::scaled, h).applied ? t.scale : 1;
    w.mix = key_mix(t, g, w, h);
    return w;
}

namespace {

// The loss of `problem` traced with `options`.
double loss_of(const Problem& problem, const TraceOptions& options, const Loss& loss) {
    return loss_value(trace(problem, options), loss);
}

// `problem` with every parameter moved by −η·dL/dθ.
Problem moved_by(const Problem& given, const Trace& t, const Gradients& g, double eta) {
    Problem moved = given;
    give_parameters(moved, t);
    for (const MovableMatrix& m : movable_matrices(moved, t, false)) {
        const Stage& d = g.at(m.key);
        for (Eigen::Index r = 0; r < m.rows; ++r)
            for (Eigen::Index c = 0; c < m.cols; ++c) m.at(r, c) -= eta * d.data(r, c);
    }
    return moved;
}

void refuse_without_parameters(const Trace& t) {
    if (!t.parameters.empty()) return;
    if (t.mode == Mode::bahdanau)
        throw UsageError("--step-size: Luong's dot score has no weights to learn (it compares the states as they are); "
                         "--score additive or general has some");
    throw UsageError("--step-size: plain mode has no weights to learn (the embeddings are the queries, keys and values); "
                     "-m self or causal learns W_q, W_k and W_v");
}

}  // namespace

LearningStep take_step(const Problem& problem, const TraceOptions& options, const Trace& t, const Gradients& g,
                       double step_size) {
    refuse_without_parameters(t);
    TraceOptions o = options;
    o.query.reset(), o.tiles.reset();
    o.dim.reset();  // the parameters are the input's now
    LearningStep step;
    step.step_size = step_size;
    step.loss_before = g.value;
    for (const Parameter& p : t.parameters) {
        Parameter updated = p;
        updated.data -= step_size * g.at(p.name).data;
        updated.generated = false;
        step.updated.push_back(std::move(updated));
    }
    const Problem moved = moved_by(problem, t, g, step_size);
    try {
        step.after = trace(moved, o);
        step.loss_after = loss_value(step.after, g.loss);
    } catch (const DataError& e) {
        throw DataError(fmt::format("after the step of --step-size {}: {}", step_size, e.what()));
    }
    if (g.loss.kind == LossKind::focus) {
        const int h = heads_apart(t) ? g.loss.head : 0;
        const Stage& weights = t.at(StageId::weights, h);
        step.weight_before = weights.data(g.loss.query, g.loss.key);
        step.focus_query = weights.rows[static_cast<std::size_t>(g.loss.query)];
        step.focus_key = weights.cols[static_cast<std::size_t>(g.loss.key)];
        step.weight_after = step.after.at(StageId::weights, h).data(g.loss.query, g.loss.key);
    }
    if (!(step.loss_after > step.loss_before)) return step;
    for (double eta = step_size / 2; step.halvings_tried < 30; eta /= 2) {
        ++step.halvings_tried;
        double loss = 0;
        try {
            loss = loss_of(moved_by(problem, t, g, eta), o, g.loss);
        } catch (const DataError&) {
            continue;  // this η overflows too
        }
        if (loss < step.loss_before) {
            step.lowering_step = eta, step.lowering_loss = loss;
            break;
        }
    }
    return step;
}

}  // namespace attntrace
