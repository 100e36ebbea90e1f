#include "attention/backward.hpp"

#include "attention/backward_chain.hpp"
#include "attention/backward_steps.hpp"
#include "attention/modes.hpp"
#include "attention/stage_builder.hpp"
#include "core/error.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <utility>

namespace attntrace {
namespace backward_detail {
namespace {

void require_finite(const Stage& stage, const std::string& origin) {
    for (Eigen::Index r = 0; r < stage.data.rows(); ++r)
        for (Eigen::Index c = 0; c < stage.data.cols(); ++c)
            if (!std::isfinite(stage.data(r, c)))
                throw DataError(fmt::format("{}: the backward pass overflows: dL/d({}){} at \"{}\" (row {}), \"{}\" "
                                            "(column {}) is {}, not a finite number; the loss's weight is too small or "
                                            "the input numbers are too large",
                                            origin, stage.key(), stage.head > 0 ? fmt::format(" of head {}", stage.head) : "",
                                            printable(stage.rows[static_cast<std::size_t>(r)]), r + 1,
                                            printable(stage.cols[static_cast<std::size_t>(c)]), c + 1, stage.data(r, c)));
}

// "S'", "S''", … with a head's subscript before the primes: "S_2''".
std::string with_head(std::string_view symbol, int head) {
    if (head == 0) return std::string(symbol);
    const std::size_t primes = symbol.find('\'');
    if (primes == std::string_view::npos) return fmt::format("{}_{}", symbol, head);
    return fmt::format("{}_{}{}", symbol.substr(0, primes), head, symbol.substr(primes));
}

}  // namespace

Stage& GradientRecorder::add(const Stage& forward, std::string title, std::string formula, Matrix data) {
    if (data.rows() != forward.data.rows() || data.cols() != forward.data.cols())
        throw std::logic_error("a gradient of another shape than its stage " + std::string(forward.name()));
    Stage stage;
    stage.id = forward.id;
    stage.head = forward.head;
    stage.kv_head = forward.kv_head;
    stage.direction = Direction::backward;
    stage.title = std::move(title);
    stage.formula = std::move(formula);
    stage.rows = forward.rows;
    stage.cols = forward.cols;
    stage.allowed = forward.allowed;
    stage.data = std::move(data);
    require_finite(stage, trace_.origin);
    gradients_.stages.push_back(std::move(stage));
    return gradients_.stages.back();
}

Stage& GradientRecorder::pass(const Stage& forward, std::string title, std::string formula, Matrix data,
                              std::string reason) {
    Stage& stage = add(forward, std::move(title), std::move(formula), std::move(data));
    stage.applied = false;
    stage.reason = std::move(reason);
    return stage;
}

Stage& GradientRecorder::parameter(std::string_view name, std::string formula, Matrix data) {
    const Parameter& p = trace_.parameter(name);
    if (data.rows() != p.data.rows() || data.cols() != p.data.cols())
        throw std::logic_error("a gradient of another shape than its parameter " + p.name);
    Stage stage;
    stage.id = StageId::parameters;
    stage.direction = Direction::backward;
    stage.parameter = p.name;
    stage.title = fmt::format("Gradient of {}: how L changes with each of its numbers", p.name);
    stage.formula = std::move(formula);
    stage.rows = p.vector ? Labels{p.name} : Labels(numbered(p.row_prefix, p.data.rows()));
    stage.cols = numbered(p.col_prefix, p.data.cols());
    stage.data = std::move(data);
    require_finite(stage, trace_.origin);
    gradients_.stages.push_back(std::move(stage));
    return gradients_.stages.back();
}

Symbols single_symbols(int head) {
    return {with_head("Z", head), with_head("A", head), with_head("S''", head), with_head("S'", head),
            with_head("S", head), with_head("V", head), with_head("Q", head), with_head("K", head)};
}

Symbols encoder_decoder_symbols() { return {"c", "α", "e''", "e'", "e", "H", "S", "H"}; }

namespace {

bool masked_after_softmax(const CoreStages& st) { return !st.masked.applied && st.weights.allowed.has_value(); }

// dS'' from dA: the normalisation of each row, backwards.
Matrix normalization_backward(const Trace& trace, const CoreStages& st, const Matrix& d_weights) {
    if (trace.normalization == Normalization::sum)
        return grad::sum_normalize_backward(st.masked.data, st.weights.data, d_weights);
    if (masked_after_softmax(st)) {  // A = P with the hidden weights zeroed, P = softmax(S'' / T)
        const Matrix p = grad::softmax_rows(st.masked.data, trace.temperature);
        return grad::softmax_backward(p, grad::zero_hidden(d_weights, *st.weights.allowed), trace.temperature);
    }
    return grad::softmax_backward(st.weights.data, d_weights, trace.temperature);
}

}  // namespace

CoreGradients core_backward(const Trace& trace, const CoreStages& st, const Matrix* d_context, const Matrix* d_focus) {
    CoreGradients d;
    if (d_context) {
        d.context = *d_context;
        d.weights = d.context * st.values.data.transpose();  // dA = dZ·Vᵀ
        d.values = st.weights.data.transpose() * d.context;  // dV = Aᵀ·dZ
    } else {
        d.weights = *d_focus;
    }
    d.masked = normalization_backward(trace, st, d.weights);
    // A hidden score was replaced by a constant (−∞ or the fill): nothing reaches it.
    d.scaled = st.masked.applied && st.masked.allowed ? grad::zero_hidden(d.masked, *st.masked.allowed) : d.masked;
    d.scores = st.scaled.applied ? Matrix(d.scaled / trace.scale) : d.scaled;
    return d;
}

namespace {

std::string masked_formula(const Trace& trace, const CoreStages& st, const Symbols& s) {
    const std::string per_t = trace.temperature != 1 ? fmt::format(" / T (T = {})", trace.temperature) : "";
    if (trace.normalization == Normalization::sum)
        return fmt::format("d{0}_ij = (d{1}_ij − Σ_k {1}_ik·d{1}_ik) / Σ_k {0}_ik over the visible keys", s.masked,
                           s.weights);
    if (masked_after_softmax(st))
        return fmt::format("d{0} = P ⊙ (dP − rowsum(dP ⊙ P)){1}, P = softmax({0}{2}) before the hidden weights were "
                           "zeroed, dP = d{3} with 0 where hidden",
                           s.masked, per_t, trace.temperature != 1 ? " / T" : "", s.weights);
    return fmt::format("d{0} = {1} ⊙ (d{1} − rowsum(d{1} ⊙ {1})){2}", s.masked, s.weights, per_t);
}

std::string scale_text(const Trace& trace, bool several) {
    switch (trace.scale_rule) {
    case ScaleRule::sqrt: return several ? "√d_head" : "√d_k";
    case ScaleRule::value:
    case ScaleRule::none: break;
    }
    return fmt::format("{}", trace.scale);
}

}  // namespace

void record_core(GradientRecorder& out, const CoreStages& st, const CoreGradients& d, const Symbols& s,
                 const std::string& context_formula) {
    const Trace& trace = out.trace();
    if (d.context.size() > 0)
        out.add(st.context, "Gradient of the context vectors: how L changes with each of their numbers", context_formula,
                d.context);
    out.add(st.weights, "Gradient of the attention weights: how L changes with each weight",
            d.context.size() > 0 ? fmt::format("d{} = d{}·{}ᵀ", s.weights, s.context, s.values)
                                 : fmt::format("d{0} = −1 / {0}[i, j] at the focus pair (i, j), 0 elsewhere", s.weights),
            d.weights);
    const bool sum = trace.normalization == Normalization::sum;
    out.add(st.masked,
            sum                          ? "Gradient of the masked scores: the division by each row's sum, backwards"
            : masked_after_softmax(st) ? "Gradient of the scores softmax read: the softmax backward, row by row, of the "
                                         "weights before the hidden ones were zeroed"
                                       : "Gradient of the masked scores: the softmax backward, row by row",
            masked_formula(trace, st, s), d.masked);
    if (st.masked.applied && st.masked.allowed)
        out.add(st.scaled, "Gradient of the scaled scores: exactly 0 where the mask hid a score",
                fmt::format("d{} = d{} with 0 where hidden (a hidden score was replaced by a constant)", s.scaled, s.masked),
                d.scaled);
    else
        out.pass(st.scaled, "Gradient of the scaled scores", fmt::format("d{} = d{}", s.scaled, s.masked), d.scaled,
                 masked_after_softmax(st)
                     ? "not masked before softmax: the hidden scores were in softmax's sums (--mask-after-softmax), so "
                       "their gradient is not 0"
                     : "no mask: the gradient passes through unchanged");
    if (st.scaled.applied)
        out.add(st.scores, "Gradient of the scores: divided by the scale, as the scores were",
                fmt::format("d{} = d{} / {}", s.scores, s.scaled, scale_text(trace, st.scores.head > 0)), d.scores);
    else
        out.pass(st.scores, "Gradient of the scores", fmt::format("d{} = d{}", s.scores, s.scaled), d.scores,
                 "no scaling: the gradient passes through unchanged");
}

Matrix focus_seed(const Stage& weights, const Loss& loss) {
    Matrix d = Matrix::Zero(weights.data.rows(), weights.data.cols());
    d(loss.query, loss.key) = -1 / weights.data(loss.query, loss.key);
    return d;
}

const Stage& result_stage(const Trace& trace) {
    if (const Stage* output = trace.find(StageId::output)) return *output;
    return trace.at(StageId::context);
}

Matrix result_seed(const Stage& result, const Loss& loss) {
    if (loss.kind == LossKind::sum) return Matrix::Ones(result.data.rows(), result.data.cols());
    return result.data - loss.target;
}

}  // namespace backward_detail

namespace {

using backward_detail::result_stage;

// The weights stage a focus loss reads, after its row, column and head are checked.
const Stage& focus_weights(const Trace& trace, const Loss& loss) {
    const bool several = [&] {
        switch (family_of(trace.mode)) {
        case ModeFamily::single_sequence: return trace.heads > 1;
        case ModeFamily::encoder_decoder: return false;
        }
        unknown_family();
    }();
    if (several ? loss.head < 1 || loss.head > trace.heads : loss.head < 0 || loss.head > 1)
        throw UsageError(several ? fmt::format("the focus loss names head {}, and this run has heads 1 to {}", loss.head,
                                               trace.heads)
                                 : fmt::format("the focus loss names head {}, and this run has one head", loss.head));
    const Stage& weights = trace.at(StageId::weights, several ? loss.head : 0);
    if (loss.query < 0 || loss.query >= weights.row_count() || loss.key < 0 || loss.key >= weights.col_count())
        throw UsageError(fmt::format("the focus loss names query {} and key {}, and the weights have {} queries and {} "
                                     "keys",
                                     loss.query + 1, loss.key + 1, weights.row_count(), weights.col_count()));
    const double a = weights.data(loss.query, loss.key);
    if (!(a > 0))
        throw DataError(fmt::format("{}: the focus loss −log A needs a positive weight, but \"{}\" puts {} on \"{}\"{}", trace.origin,
                                    printable(weights.rows[static_cast<std::size_t>(loss.query)]), a,
                                    printable(weights.cols[static_cast<std::size_t>(loss.key)]),
                                    weights.is_masked(loss.query, loss.key) ? " (the mask hides that key from it)" : ""));
    return weights;
}

// "Z", "output", "c": the result as the losses' formulas name it.
std::string result_symbol(const Trace& trace) {
    if (trace.find(StageId::output)) return "output";
    switch (family_of(trace.mode)) {
    case ModeFamily::single_sequence: return "Z";
    case ModeFamily::encoder_decoder: return "c";
    }
    unknown_family();
}

void describe_loss(const Trace& trace, Gradients& g) {
    const Loss& loss = g.loss;
    switch (loss.kind) {
    case LossKind::focus: {
        const Stage& w = focus_weights(trace, loss);
        const std::string& q = w.rows[static_cast<std::size_t>(loss.query)];
        const std::string& k = w.cols[static_cast<std::size_t>(loss.key)];
        g.title = fmt::format("Loss: the cross-entropy that asks \"{}\" to put its weight on \"{}\"{}", q, k,
                              w.head > 0 ? fmt::format(" in head {}", w.head) : "");
        const std::string a = [&] {  // the weights' symbol
            switch (family_of(trace.mode)) {
            case ModeFamily::single_sequence: return w.head > 0 ? fmt::format("A_{}", w.head) : std::string("A");
            case ModeFamily::encoder_decoder: return std::string("α");
            }
            unknown_family();
        }();
        g.formula = fmt::format("L = −log {}[{}, {}]", a, q, k);
        return;
    }
    case LossKind::target:
        g.title = fmt::format("Loss: half the squared distance of the {} from the target", result_stage(trace).name());
        g.formula = fmt::format("L = ½‖{} − T‖²", result_symbol(trace));
        return;
    case LossKind::sum:
        g.title = fmt::format("Loss: every number of the {} summed", result_stage(trace).name());
        g.formula = fmt::format("L = Σ {}", result_symbol(trace));
        return;
    }
}

}  // namespace

double loss_value(const Trace& trace, const Loss& loss) {
    if (loss.kind == LossKind::focus) {
        const Stage& w = focus_weights(trace, loss);
        return -std::log(w.data(loss.query, loss.key));
    }
    const Stage& result = result_stage(trace);
    if (loss.kind == LossKind::sum) return result.data.sum();
    if (loss.target.rows() != result.row_count() || loss.target.cols() != result.col_count())
        throw DataError(fmt::format("{}: the target has {} rows of {} numbers, and the {} it is compared with has {} "
                                    "rows of {}",
                                    trace.origin, loss.target.rows(), loss.target.cols(), result.name(),
                                    result.row_count(), result.col_count()));
    return 0.5 * (result.data - loss.target).squaredNorm();
}

Gradients backward(const Trace& trace, const Loss& loss) {
    Gradients g;
    g.loss = loss;
    g.value = loss_value(trace, loss);
    describe_loss(trace, g);
    switch (family_of(trace.mode)) {
    case ModeFamily::single_sequence: backward_detail::backward_single_sequence(trace, g); break;
    case ModeFamily::encoder_decoder: backward_detail::backward_encoder_decoder(trace, g); break;
    }
    return g;
}

}  // namespace attntrace
