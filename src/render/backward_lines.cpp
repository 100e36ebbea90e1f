// What the text formats say of a backward pass besides its tables: the loss, -q's row worked
// through (the softmax's Jacobian beside its short form, each entry of dS'' as products of the
// row's numbers, dq as the keys weighted by dS), a learning step's figures; and the choice of
// the format.
#include "render/backward.hpp"
#include "render/html.hpp"

#include "render/number.hpp"
#include "render/reports.hpp"
#include "render/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace attntrace {

void write_backward_table(const BackwardRun& run, const RenderOptions& options, std::ostream& out);
void write_backward_markdown(const BackwardRun& run, const RenderOptions& options, std::ostream& out);
void write_backward_csv(const BackwardRun& run, const RenderOptions& options, std::ostream& out);
void write_backward_json(const BackwardRun& run, const RenderOptions& options, std::ostream& out);

void render_backward(const BackwardRun& run, const RenderOptions& options, std::ostream& out) {
    switch (options.format) {
    case Format::table: return write_backward_table(run, options, out);
    case Format::markdown: return write_backward_markdown(run, options, out);
    case Format::csv: return write_backward_csv(run, options, out);
    case Format::json:
    case Format::jsonl: return write_backward_json(run, options, out);  // jsonl is refused before a trace
    case Format::html: return write_html(run, options, out);
    }
}

namespace {

// Numbers of the row's arithmetic: rounded, trailing zeros dropped, negative factors bracketed.
struct RowWriter {
    int digits;
    std::string number(double v) const { return format_compact(v, digits); }
    std::string factor(double v) const {
        const std::string text = number(v);
        return text.front() == '-' ? "(" + text + ")" : text;
    }
    std::string vector(const Vector& v) const {
        std::string text = "[";
        for (Eigen::Index k = 0; k < v.cols(); ++k) text += (k ? ", " : "") + number(v(k));
        return text + "]";
    }
};

constexpr std::size_t max_row_lines = 16;  // keys written out one a line; more are summarised

std::string head_text(const BackwardRow& w) { return w.head > 0 ? fmt::format(" (head {})", w.head) : ""; }

// "Σ_k a_k·dA_k = 0.1×0 + …": the sum every entry of the short form subtracts.
std::string inner_line(const BackwardRow& w, const RowWriter& f) {
    std::string terms;
    std::size_t shown = 0, left = 0;
    for (Eigen::Index k = 0; k < w.weights.cols(); ++k) {
        const bool counts = w.normalization == Normalization::softmax || w.visible[static_cast<std::size_t>(k)];
        if (!counts || w.weights(k) == 0 || w.d_weights(k) == 0) continue;
        if (shown == max_row_lines) {
            ++left;
            continue;
        }
        terms += fmt::format("{}{}×{}", shown++ ? " + " : "", f.factor(w.weights(k)), f.factor(w.d_weights(k)));
    }
    if (left > 0) terms += fmt::format(" + … ({} more terms)", left);
    if (terms.empty()) terms = "0 (every product is 0)";
    return fmt::format("  Σ_k a_k·dA_k = {} = {}", terms, f.number(w.inner));
}

// One key's entry of dS'' by the short form.
std::string entry_line(const BackwardRow& w, Eigen::Index j, const RowWriter& f, std::size_t width) {
    const std::string name = pad_right(fmt::format("dS''[{}]", w.keys[static_cast<std::size_t>(j)]), width);
    const std::string inner = f.factor(w.inner);
    if (w.normalization == Normalization::sum) {
        if (!w.visible[static_cast<std::size_t>(j)] && w.short_form(j) == 0)
            return fmt::format("  {} = 0 (hidden: not in the row's sum)", name);
        return fmt::format("  {} = ({} − {}) / {} = {}", name, f.number(w.d_weights(j)), inner, f.factor(w.divisor),
                           f.number(w.short_form(j)));
    }
    if (w.weights(j) == 0) return fmt::format("  {} = 0 (its weight is 0)", name);
    const std::string per_t = w.temperature != 1 ? fmt::format(" / {}", f.number(w.temperature)) : "";
    return fmt::format("  {} = {}×({} − {}){} = {}", name, f.number(w.weights(j)), f.number(w.d_weights(j)), inner, per_t,
                       f.number(w.short_form(j)));
}

// dq = Σ_j dS_j·k_j, the keys with a gradient, each weighted by its dS.
std::vector<std::string> mix_lines(const BackwardRow& w, const KeyMix& m, const RowWriter& f) {
    std::vector<std::string> lines;
    const std::string scaled = w.scale != 1 ? fmt::format(" / {}", f.number(w.scale)) : "";
    lines.push_back(fmt::format("{0}, this row's gradient, is the {1} weighted by the row of dS = dS''{2} (0 where "
                                "hidden): {0} = Σ_j dS_j·{3}_j",
                                m.target, m.key == "h" ? "encoder states" : m.key == "x" ? "inputs (the keys of plain mode)" : "keys",
                                scaled, m.key));
    std::string terms;
    std::size_t shown = 0, left = 0;
    for (Eigen::Index j = 0; j < m.d_scores.cols(); ++j) {
        if (m.d_scores(j) == 0) continue;
        if (shown == max_row_lines / 2) {
            ++left;
            continue;
        }
        terms += fmt::format("{}{}×{}", shown++ ? " + " : "", f.factor(m.d_scores(j)), f.vector(m.keys.row(j)));
    }
    if (left > 0) terms += fmt::format(" + … ({} more keys)", left);
    if (terms.empty()) terms = "0 (dS is 0 in this row)";
    lines.push_back(fmt::format("  {} = {} = {}", m.target, terms, f.vector(m.mixed)));
    return lines;
}

}  // namespace

namespace {

// "a = […]", "dA = […]" and the Jacobian's definition: the lines before its table.
std::vector<std::string> row_opening(const BackwardRow& w, const RowWriter& f) {
    std::vector<std::string> lines;
    const bool sum = w.normalization == Normalization::sum;
    lines.push_back(fmt::format("backward through the row of \"{}\"{}: from dA to dS'', the scores {} read", w.query,
                                head_text(w), sum ? "the division by the sum" : "softmax"));
    lines.push_back(fmt::format("  a  = {}{}", f.vector(w.weights),
                                w.after_softmax ? " (softmax's weights before the hidden ones were zeroed)" : ""));
    lines.push_back(fmt::format("  dA = {}{}", f.vector(w.d_weights), w.after_softmax ? " (0 where hidden: dP)" : ""));
    const std::string per_t = w.temperature != 1 ? " / T" : "";
    if (sum)
        lines.push_back(fmt::format("the Jacobian of a = s'' / r (r = Σ s'' over the visible keys = {}): J_jk = ∂a_j/∂s''_k "
                                    "= (δ_jk − a_j) / r",
                                    f.number(w.divisor)));
    else
        lines.push_back(fmt::format("the Jacobian of softmax: J_jk = ∂a_j/∂s''_k = a_j·(δ_jk − a_k){0}, J = (diag(a) − "
                                    "aᵀ·a){0}{1}",
                                    per_t, w.temperature != 1 ? fmt::format(", T = {}", f.number(w.temperature)) : ""));
    if (w.jacobian.size() == 0)
        lines.push_back(fmt::format("  ({} keys: J is {}×{}, written out up to {} keys; the short form below never forms it)",
                                    w.keys.size(), w.keys.size(), w.keys.size(), max_jacobian_keys));
    return lines;
}

Stage jacobian_table(const BackwardRow& w) {
    Stage table;
    table.id = StageId::parameters;  // a table of its own, unshaded
    table.title = "J";
    table.formula = "J_jk = ∂a_j/∂s''_k";
    table.rows = Labels(w.keys);
    table.cols = Labels(w.keys);
    table.data = w.jacobian;
    return table;
}

}  // namespace

RowText backward_row_text(const BackwardRow& w, int digits) {
    const RowWriter f{digits};
    RowText text;
    text.before = row_opening(w, f);
    std::vector<std::string>& lines = text.after;
    if (w.jacobian.size() > 0) {
        text.jacobian = jacobian_table(w);
        lines.push_back(fmt::format("  dS'' = Jᵀ·dA = {}", f.vector(w.from_jacobian)));
    }
    const std::string per_t = w.temperature != 1 ? fmt::format(" / T, T = {}", f.number(w.temperature)) : "";
    lines.push_back(w.normalization == Normalization::sum
                        ? "short form, no n×n matrix: dS''_j = (dA_j − Σ_k a_k·dA_k) / r for each visible key"
                        : fmt::format("short form, no n×n matrix: dS''_j = a_j·(dA_j − Σ_k a_k·dA_k){}", per_t));
    lines.push_back(inner_line(w, f));
    std::size_t width = 0;
    for (const auto& key : w.keys) width = std::max(width, display_width(fmt::format("dS''[{}]", key)));
    const auto n = static_cast<Eigen::Index>(w.keys.size());
    for (Eigen::Index j = 0; j < n; ++j) {
        if (static_cast<std::size_t>(n) > max_row_lines && j == static_cast<Eigen::Index>(max_row_lines / 2)) {
            lines.push_back(fmt::format("  … {} more keys, each the same way", n - static_cast<Eigen::Index>(max_row_lines / 2)));
            break;
        }
        lines.push_back(entry_line(w, j, f, width));
    }
    if (w.mix)
        for (auto& line : mix_lines(w, *w.mix, f)) lines.push_back(std::move(line));
    return text;
}

std::string loss_line(const Gradients& g, int digits) {
    return fmt::format("{} = {}", g.formula, format_fixed(g.value, digits));
}

std::vector<std::string> step_lines(const LearningStep& s, int digits) {
    const auto number = [&](double v) { return format_fixed(v, digits); };
    const auto eta = [&](double v) { return format_compact(v, std::max(digits, 6)); };
    std::vector<std::string> lines;
    const double change = s.loss_after - s.loss_before;
    const std::string moved = change < 0   ? fmt::format("down by {}", number(-change))
                              : change > 0 ? fmt::format("up by {}", number(change))
                                           : std::string("unchanged");
    lines.push_back(fmt::format("loss: {} before the step, {} after ({})", number(s.loss_before), number(s.loss_after), moved));
    if (s.weight_before && s.weight_after) {
        const double d = *s.weight_after - *s.weight_before;
        lines.push_back(fmt::format("the weight \"{}\" puts on \"{}\": {} before, {} after ({})", s.focus_query, s.focus_key,
                                    number(*s.weight_before), number(*s.weight_after),
                                    d > 0 ? "up" : d < 0 ? "down" : "unchanged"));
    }
    if (change > 0 && s.lowering_step)
        lines.push_back(fmt::format("η = {} overshoots: along −dL/dθ the loss falls at first (η = {} lowers it, to {}) and "
                                    "is back above where it started by η = {}; the gradient describes L only near the "
                                    "weights it was taken at",
                                    eta(s.step_size), eta(*s.lowering_step), number(*s.lowering_loss), eta(s.step_size)));
    return lines;
}

std::vector<Stage> updated_tables(const LearningStep& s) {
    std::vector<Stage> tables;
    for (const Parameter& p : s.updated) {
        Stage table = parameter_table(p);
        table.title = fmt::format("{} after the step, moved against its gradient", p.name);
        table.formula = fmt::format("{0} − {1}·d{0}", p.name, format_compact(s.step_size, 6));
        tables.push_back(std::move(table));
    }
    return tables;
}

std::string step_heading(const LearningStep& s) {
    return fmt::format("step · η = {} · one step of gradient descent: every parameter θ ← θ − η·dL/dθ",
                       format_compact(s.step_size, 6));
}

RenderOptions forward_options(const BackwardRun& run, const RenderOptions& options) {
    RenderOptions forward = options;
    // No trace has a similarity table: selecting one alone shows none of the trace's stages.
    if (!run.forward_shown) forward.stages = {StageId::dot};
    return forward;
}

std::vector<const Stage*> after_shown(const BackwardRun& run, const RenderOptions& options) {
    std::vector<const Stage*> shown;
    if (!run.step) return shown;
    for (const Stage& stage : run.step->after.stages)
        if (std::find(run.after_stages.begin(), run.after_stages.end(), stage.id) != run.after_stages.end() &&
            (options.head == 0 || stage.head == 0 || stage.head == options.head))
            shown.push_back(&stage);
    return shown;
}

std::string stage_heading(const Stage& stage) {
    return fmt::format("{}{} · {}×{} · {}{}", stage.name(), stage.head > 0 ? fmt::format(" · head {}", stage.head) : "",
                       stage.row_count(), stage.col_count(), stage.formula, stage.applied ? "" : " · not applied");
}

std::string gradient_heading(const Stage& g) {
    return fmt::format("{}{} · {}×{} · {}{}", gradient_name(g), g.head > 0 ? fmt::format(" · head {}", g.head) : "",
                       g.row_count(), g.col_count(), g.formula, g.applied ? "" : " · not applied");
}

}  // namespace attntrace
