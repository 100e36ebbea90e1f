// --explain for the backward pass: what each gradient means for this run. Every figure is read
// off the gradients and the trace (tests/test_backward_cli.cpp checks each sentence against
// numbers of its own).
#include "render/backward.hpp"

#include "attention/modes.hpp"
#include "render/number.hpp"

#include <fmt/format.h>

#include <cmath>

namespace attntrace {
namespace {

std::string number(double value) { return fmt::format("{:.4g}", value); }

std::string in_quotes(const std::string& label) { return fmt::format("\"{}\"", label); }

// The loss's focus pair as a phrase: "the weight \"smiled\" puts on \"teacher\"".
std::string focus_phrase(const Trace& trace, const Loss& loss) {
    const Stage& w = trace.at(StageId::weights, loss.head);
    return fmt::format("the weight {} puts on {}", in_quotes(w.rows[static_cast<std::size_t>(loss.query)]),
                       in_quotes(w.cols[static_cast<std::size_t>(loss.key)]));
}

// "the context", "the output": what the sum and target losses read.
bool is_result(const Trace& trace, const Stage& d) {
    if (trace.find(StageId::output)) return d.id == StageId::output;
    return d.id == StageId::context;
}

std::string shape_line(const Stage& d, std::string_view forward) {
    return fmt::format("{} is {}×{}, the shape of {}: one number for each of its entries.", gradient_name(d), d.row_count(),
                       d.col_count(), forward);
}

// Two figures tie when they differ by no more than rounding: 1e-12 of the larger.
bool tie(double a, double b) { return std::abs(a - b) <= 1e-12 * std::max(std::abs(a), std::abs(b)); }

// ", tied with 2 other weights": the others that share the extreme value.
std::string tied(std::size_t others, std::string_view one, std::string_view several) {
    if (others == 0) return "";
    return fmt::format(", tied with {} other {}", others, others == 1 ? one : several);
}

// The first entry (row by row) of the largest or the smallest value, and how many others share it.
struct Extreme {
    Eigen::Index row = 0, col = 0;
    double value = 0;
    std::size_t others = 0;
};

Extreme extreme(const Matrix& m, bool largest) {
    Extreme e{0, 0, m(0, 0), 0};
    for (Eigen::Index r = 0; r < m.rows(); ++r)
        for (Eigen::Index c = 0; c < m.cols(); ++c)
            if (largest ? m(r, c) > e.value : m(r, c) < e.value) e = {r, c, m(r, c), 0};
    for (Eigen::Index r = 0; r < m.rows(); ++r)
        for (Eigen::Index c = 0; c < m.cols(); ++c)
            if ((r != e.row || c != e.col) && tie(m(r, c), e.value)) ++e.others;
    return e;
}

// The row with the largest gradient, by its length: "\"x\" (‖dx‖ = 1.2)".
std::string largest_row(const Stage& d, std::string_view symbol) {
    Matrix norms(d.row_count(), 1);
    for (Eigen::Index r = 0; r < d.row_count(); ++r) norms(r, 0) = d.data.row(r).norm();
    const Extreme e = extreme(norms, true);
    return fmt::format("{} (‖{}‖ = {}{})", in_quotes(d.rows[static_cast<std::size_t>(e.row)]), symbol, number(e.value),
                       tied(e.others, "row", "rows"));
}

std::vector<std::string> result_lines(const Trace& trace, const Gradients& g, const Stage& d) {
    const std::string what = d.id == StageId::output ? "output" : "context";
    if (!is_result(trace, d)) {
        if (d.head > 0)
            return {fmt::format("The loss reaches head {}'s context through W_o: its gradient is head {}'s columns of "
                                "d(concat).",
                                d.head, d.head)};
        return {"dZ = d(output)·W_oᵀ: W_o sends the output's gradient back to the numbers of the context it mixes."};
    }
    if (g.loss.kind == LossKind::sum)
        return {fmt::format("L = Σ adds up every number of the {}, so each moves L by as much as it moves itself: every "
                            "entry of the gradient is 1.",
                            what)};
    Eigen::Index far = 0;
    const Matrix gap = d.data;  // Y − T
    for (Eigen::Index r = 1; r < gap.rows(); ++r)
        if (gap.row(r).norm() > gap.row(far).norm()) far = r;
    return {fmt::format("dL/d{0} = {0} − T: each entry is how far that number stands from its target, with its sign. The "
                        "row farthest from its target is {1} (‖y − t‖ = {2}).",
                        what == "output" ? "(output)" : "Z", in_quotes(d.rows[static_cast<std::size_t>(far)]),
                        number(gap.row(far).norm()))};
}

// "L grows fastest with the weight \"a\" puts on \"b\" (dA = 1.2)": the extreme entries of dA.
std::vector<std::string> weights_lines(const Trace& trace, const Gradients& g, const Stage& d) {
    if (g.loss.kind == LossKind::focus) {
        const double a = trace.at(StageId::weights, d.head).data(g.loss.query, g.loss.key);
        return {fmt::format("Only {} is in the loss, so dA is 0 everywhere but there, where it is −1/{} = {}: the larger "
                            "that weight, the smaller L.",
                            focus_phrase(trace, g.loss), number(a), number(-1 / a))};
    }
    const auto pair = [&](const Extreme& e) {
        return fmt::format("the weight {} puts on {} (dA = {}{})", in_quotes(d.rows[static_cast<std::size_t>(e.row)]),
                           in_quotes(d.cols[static_cast<std::size_t>(e.col)]), number(e.value), tied(e.others, "weight", "weights"));
    };
    return {fmt::format("dA_ij = dZ_i·v_j: a weight's gradient is how far its key's value points along its query's context "
                        "gradient. Taken alone, L grows fastest with {} and falls fastest with {}.",
                        pair(extreme(d.data, true)), pair(extreme(d.data, false)))};
}

std::string over_t(const Trace& trace) { return trace.temperature != 1 ? fmt::format(" / {}", number(trace.temperature)) : ""; }

std::vector<std::string> masked_lines(const Trace& trace, const Gradients& g, const Stage& d) {
    const Stage& masked = trace.at(StageId::masked, d.head);
    const Stage& weights = trace.at(StageId::weights, d.head);
    if (trace.normalization == Normalization::sum)
        return {"Dividing by the row sum, backwards: dS''_j = (dA_j − Σ_k a_k·dA_k) / r, r the row's sum of its visible "
                "scores."};
    if (!masked.applied && weights.allowed)
        return {"Softmax's backward of P, the weights before the hidden ones were zeroed: the hidden scores were in "
                "softmax's sums (--mask-after-softmax), so they get gradient as well."};
    std::vector<std::string> lines{fmt::format(
        "Softmax's backward, row by row: dS''_j = a_j·(dA_j − Σ_k a_k·dA_k){}. Each row sums to 0: raising every score of "
        "a row by the same amount leaves its weights, and L, as they are.",
        over_t(trace))};
    if (g.loss.kind == LossKind::focus) {
        const Eigen::Index q = g.loss.query, k = g.loss.key;
        const double a = weights.data(q, k);
        lines.push_back(fmt::format("In the row of {} this is (a − e_k){}: the score of {} gets ({} − 1){} = {}, so raising "
                                    "it lowers L; the score of every other key the row sees gets that key's weight{}, so "
                                    "raising it raises L. The other rows get 0.",
                                    in_quotes(d.rows[static_cast<std::size_t>(q)]), over_t(trace),
                                    in_quotes(d.cols[static_cast<std::size_t>(k)]), number(a), over_t(trace),
                                    number((a - 1) / trace.temperature), over_t(trace)));
    }
    return lines;
}

std::vector<std::string> scaled_lines(const Trace& trace, const Stage& d) {
    const Stage& masked = trace.at(StageId::masked, d.head);
    if (!d.applied || !masked.applied || !masked.allowed) return {};
    const auto hidden = static_cast<std::size_t>((!masked.allowed->array()).count());
    const std::string by = !trace.mask_fill ? "−∞" : fmt::format("the fill {}", number(*trace.mask_fill));
    return {fmt::format("The mask replaced {} of the {} scores by {}: those get exactly 0, since a constant does not change "
                        "with the score it replaced; the others pass through unchanged.",
                        hidden, d.data.size(), by)};
}

std::vector<std::string> projection_lines(const Trace& trace, const Gradients& g, const Stage& d) {
    const bool focus = g.loss.kind == LossKind::focus;
    const bool rope = trace.find(StageId::queries_rotated) != nullptr;
    switch (d.id) {
    case StageId::queries:
        if (focus)
            return {fmt::format("dQ = dS·K{}: each query's gradient mixes the keys by its row of dS. Only {}'s query has a "
                                "gradient other than 0: the loss reads its row alone.",
                                rope ? ", turned back by −φ" : "", in_quotes(d.rows[static_cast<std::size_t>(g.loss.query)]))};
        return {fmt::format("dQ = dS·K{}: each query's gradient mixes the keys by its row of dS. The largest is {}.",
                            rope ? ", turned back by −φ" : "", largest_row(d, "dq"))};
    case StageId::keys:
        return {fmt::format("dK = dSᵀ·Q{}: each key's gradient mixes the queries by its column of dS. The largest is {}.",
                            rope ? ", turned back by −φ" : "", largest_row(d, "dk"))};
    case StageId::values:
        return {fmt::format("dV = Aᵀ·dZ: each value's gradient mixes the context gradients of the queries that read it, each "
                            "by the weight it read it with. The largest is {}.",
                            largest_row(d, "dv"))};
    default: return {};
    }
}

// The lecture's "shorter paths": the focus key's vector gets its gradient in one step.
std::optional<std::string> direct_path(const Trace& trace, const Gradients& g, const Stage& d) {
    switch (family_of(trace.mode)) {  // a key's vector is the input's own only in a single sequence
    case ModeFamily::single_sequence: break;
    case ModeFamily::encoder_decoder: return std::nullopt;
    }
    if (g.loss.kind != LossKind::focus || g.loss.query == g.loss.key) return std::nullopt;
    const double size = d.data.row(g.loss.key).norm();
    if (!(size > 0)) return std::nullopt;
    const Stage& w = trace.at(StageId::weights, g.loss.head);
    return fmt::format("{} stands {} position{} from {}, and the gradient reaches its vector in one attention step, "
                       "through its key (‖dx‖ = {}): the connection is direct, however far apart the two are.",
                       in_quotes(w.cols[static_cast<std::size_t>(g.loss.key)]), std::abs(g.loss.query - g.loss.key),
                       std::abs(g.loss.query - g.loss.key) == 1 ? "" : "s",
                       in_quotes(w.rows[static_cast<std::size_t>(g.loss.query)]), number(size));
}

std::vector<std::string> input_lines(const Trace& trace, const Gradients& g, const Stage& d) {
    std::vector<std::string> lines;
    if (d.id == StageId::embeddings)
        return {"The encodings are fixed numbers added to the embeddings, so the embeddings get the inputs' gradient "
                "unchanged."};
    if (d.id == StageId::layernorm)
        return {"LN(X) is what the projections read, so its gradient is the sum of its three paths, as the inputs' would be "
                "without ln_1."};
    if (trace.find(StageId::layernorm))
        lines.push_back("The inputs reach L only through the layer normalisation, whose backward pass spreads each row's "
                        "gradient over its numbers.");
    else if (trace.has_parameter("W_q"))
        lines.push_back(fmt::format("dX = dQ·W_qᵀ + dK·W_kᵀ + dV·W_vᵀ: each token's vector reaches L {}. The largest "
                                    "gradient is {}.",
                                    g.loss.kind == LossKind::focus
                                        ? "as a query and as a key (the focus loss reads the weights, which the values do "
                                          "not reach)"
                                        : "as a query, as a key and as a value",
                                    largest_row(d, "dx")));
    else
        lines.push_back(fmt::format("X is the queries, the keys and the values at once: dX = dQ + dK + dV. The largest "
                                    "gradient is {}.",
                                    largest_row(d, "dx")));
    if (const auto path = direct_path(trace, g, d)) lines.push_back(*path);
    return lines;
}

std::vector<std::string> state_lines(const Trace& trace, const Gradients& g, const Stage& d) {
    switch (d.id) {
    case StageId::projected_decoder:
    case StageId::projected_encoder:
        if (trace.score == Score::additive)
            return {"Through tanh: each feature's gradient is multiplied by 1 − tanh², which is near 0 where tanh "
                    "saturates (its value near −1 or 1)."};
        return {};
    case StageId::encoder_states:
        if (g.loss.kind == LossKind::focus)
            return {"The focus loss reads the weights, so the encoder states' gradient comes through the scores alone, "
                    "not through the values the context mixes."};
        return {"The encoder states are the values too: their gradient adds what reaches them through the scores and "
                "what reaches them as the values the context mixes."};
    default: return {};
    }
}

// The entry of a parameter: "W_q[x2, q1]", a vector's "v_a[a2]".
std::string entry(const Stage& d, Eigen::Index r, Eigen::Index c) {
    if (d.row_count() == 1 && d.rows.front() == d.parameter)
        return fmt::format("{}[{}]", d.parameter, d.cols[static_cast<std::size_t>(c)]);
    return fmt::format("{}[{}, {}]", d.parameter, d.rows[static_cast<std::size_t>(r)], d.cols[static_cast<std::size_t>(c)]);
}

// What rounding leaves where a gradient is 0: 1e-12 of the largest gradient of the run.
double rounding_floor(const Gradients& g) {
    double largest = 0;
    for (const Stage& stage : g.stages) largest = std::max(largest, stage.data.cwiseAbs().maxCoeff());
    return 1e-12 * largest;
}

std::vector<std::string> parameter_lines(const Trace& trace, const Gradients& g, const Stage& d) {
    const std::string& p = d.parameter;
    const double floor = rounding_floor(g), largest = d.data.cwiseAbs().maxCoeff();
    if (largest <= floor) {
        const bool focus = g.loss.kind == LossKind::focus;
        const bool value = p == "W_v" || p == "b_v", output = p == "W_o" || p == "b_o";
        const std::string why = focus && value    ? " (the focus loss reads the weights, which the values do not reach)"
                                : focus && output ? " (the focus loss reads the weights, before the output)"
                                                  : "";
        const std::string rounding =
            largest > 0 ? fmt::format(", to rounding (no entry beyond {:.2g})", largest) : std::string(why);
        return {fmt::format("The gradient of {} is 0 everywhere{}: to first order, moving {} does not change L.", p,
                            rounding, p)};
    }
    Extreme high = extreme(d.data, true), low = extreme(d.data, false);
    if (high.value <= floor) high.value = 0;  // rounding's sign says nothing
    if (low.value >= -floor) low.value = 0;
    const std::string focus = g.loss.kind == LossKind::focus ? ": it raises " + focus_phrase(trace, g.loss) + " fastest" : "";
    std::string text;
    if (low.value < 0)
        text = fmt::format("Raising {} lowers L fastest (dL/d{} = {} there, the most negative entry{}){}",
                           entry(d, low.row, low.col), p, number(low.value), tied(low.others, "entry", "entries"), focus);
    if (high.value > 0)
        text += fmt::format("{}aising {} raises L fastest ({}{})", text.empty() ? "R" : "; r", entry(d, high.row, high.col),
                            number(high.value), tied(high.others, "entry", "entries"));
    if (low.value >= 0) text += ": no entry of its gradient is negative, so raising any entry alone does not lower L";
    return {text + "."};
}

}  // namespace

std::vector<std::string> gradient_explanation(const Trace& trace, const Gradients& g, const Stage& d) {
    std::vector<std::string> lines;
    if (!d.parameter.empty()) {
        lines = parameter_lines(trace, g, d);
        lines.push_back(shape_line(d, d.parameter));
        return lines;
    }
    switch (d.id) {
    case StageId::context:
    case StageId::output: lines = result_lines(trace, g, d); break;
    case StageId::concat:
        lines = {"d(concat) = d(output)·W_oᵀ: each head's context numbers get the output's gradient through the rows of W_o "
                 "they feed."};
        break;
    case StageId::weights: lines = weights_lines(trace, g, d); break;
    case StageId::masked: lines = masked_lines(trace, g, d); break;
    case StageId::scaled: lines = scaled_lines(trace, d); break;
    case StageId::scores:
        if (d.applied)
            lines = {fmt::format("The scores were divided by {}, so their gradient is divided by it too.", number(trace.scale))};
        break;
    case StageId::queries_rotated:
    case StageId::keys_rotated:
        lines = {"The gradient of the rotated vectors, before RoPE's rotation is undone (each pair turned back by −φ)."};
        break;
    case StageId::queries:
    case StageId::keys:
    case StageId::values: lines = projection_lines(trace, g, d); break;
    case StageId::inputs:
    case StageId::embeddings:
    case StageId::layernorm: lines = input_lines(trace, g, d); break;
    default: lines = state_lines(trace, g, d); break;
    }
    lines.push_back(shape_line(d, d.name()));
    return lines;
}

}  // namespace attntrace
