// attntrace rnn's report: the RNN's parameters and hidden states, the one vector it hands on,
// and each token's influence on the last output beside attention's, as tables (a Report the
// text formats print), as JSON, and as a picture.
#include "attention/rnn.hpp"
#include "render/formats.hpp"
#include "render/json_writer.hpp"
#include "render/number.hpp"
#include "render/reports.hpp"
#include "render/svg.hpp"
#include "render/svg_chart.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <ostream>

namespace attntrace {
namespace {

std::vector<std::string> numbered_labels(std::string_view prefix, Eigen::Index count) {
    std::vector<std::string> out;
    for (Eigen::Index i = 1; i <= count; ++i) out.push_back(fmt::format("{}{}", prefix, i));
    return out;
}

Stage table(StageId id, std::string title, std::string formula, Labels rows, Labels cols, Matrix data,
            std::string parameter = "") {
    Stage s;
    s.id = id;
    s.parameter = std::move(parameter);
    s.title = std::move(title);
    s.formula = std::move(formula);
    s.rows = std::move(rows);
    s.cols = std::move(cols);
    s.data = std::move(data);
    return s;
}

// A line through the logarithms that explains this share of them is called a steady rate.
constexpr double steady = 0.8;

// "the RNN: ×0.612 per token further back, a steady rate (…): it halves every 1.4 tokens"; an
// influence whose largest is within 5% of its smallest is the same at every distance, whatever
// a line through its rounding noise explains.
std::string decay_text(std::string_view name, const DecayFit& fit, const Vector& influence) {
    if (influence.maxCoeff() <= 1.05 * influence.minCoeff())
        return fmt::format("{}: about the same at every distance (the largest within 5% of the smallest)", name);
    const double rate = std::log(fit.factor);
    if (fit.r2 < steady)
        return fmt::format("{}: no steady rate with distance (a line through the logarithms explains {:.0f}% of "
                           "their variance)",
                           name, 100 * fit.r2);
    std::string text = fmt::format("{}: ×{:.3f} per token further back, a steady rate (the line explains {:.0f}% of "
                                   "the logarithms' variance)",
                                   name, fit.factor, 100 * fit.r2);
    if (std::abs(rate) < 1e-12) return text;
    return text + fmt::format(": it {} every {:.1f} tokens", rate < 0 ? "halves" : "doubles", std::log(2.0) / std::abs(rate));
}

// The earlier token that reaches the last output most, and how far back it is: "teacher" (10
// back); or that none does, or that several tie.
std::string strongest_earlier(const RnnReport& r, const Vector& influence) {
    const Eigen::Index n = influence.size();
    Eigen::Index best = 0;
    for (Eigen::Index j = 1; j + 1 < n; ++j)
        if (influence(j) > influence(best)) best = j;
    if (influence(best) <= 0) return "no earlier token (every influence 0)";
    Eigen::Index ties = 0;
    for (Eigen::Index j = 0; j + 1 < n; ++j) ties += influence(j) == influence(best);
    if (ties > 1) return fmt::format("{} earlier tokens, tied", ties);
    return fmt::format("\"{}\" ({} back)", printable(r.tokens[static_cast<std::size_t>(best)]), n - 1 - best);
}

std::vector<std::string> influence_sentences(const RnnReport& r) {
    std::vector<std::string> lines;
    const Eigen::Index n = r.rnn_influence.size();
    const std::string last = printable(r.tokens.back());
    std::vector<std::string> fits;
    if (r.rnn_decay) fits.push_back(decay_text("the RNN", *r.rnn_decay, r.rnn_influence));
    if (r.attention_decay) fits.push_back(decay_text("attention", *r.attention_decay, r.attention_influence));
    if (!fits.empty())
        lines.push_back(fmt::format("each influence's logarithm against its distance, by least squares: {}",
                                    fmt::join(fits, "; ")));
    if (n >= 2) {
        const auto kept = [&](const Vector& v) {
            return v(n - 1) > 0 ? format_significant(v(0) / v(n - 1), 3) + fmt::format(" of the influence \"{}\" has on it", last)
                                : fmt::format("{} while \"{}\" has none", format_significant(v(0), 3), last);
        };
        lines.push_back(fmt::format("the first token, {} back, reaches h_{} with {}; it reaches attention's z_{} with {}",
                                    n - 1, n, kept(r.rnn_influence), n, kept(r.attention_influence)));
    }
    if (n >= 3)
        lines.push_back(fmt::format("beside \"{}\" itself, the token that reaches the last output most: in the RNN {}, in "
                                    "attention {}",
                                    last, strongest_earlier(r, r.rnn_influence), strongest_earlier(r, r.attention_influence)));
    return lines;
}

}  // namespace

Report rnn_text_report(const RnnReport& r) {
    const Eigen::Index n = r.hidden.rows(), d_h = r.hidden.cols(), d_in = r.inputs.cols();
    Report report;
    report.title = fmt::format("attntrace rnn · {} token{} · d_in = {}, d_h = {} · {}", n, n == 1 ? "" : "s", d_in, d_h,
                               r.origin);
    report.preamble.push_back("An RNN encoder (Elman's) reads the tokens one at a time, each step folding one more "
                              "into its state: h_t = tanh(x_t·W_x + h_{t−1}·W_h + b_h), with h_0 = 0.");
    report.preamble.push_back("RNN weights: " + r.rnn_origin + ".");
    report.preamble.push_back("Attention, beside it (one head of self-attention over the same embeddings): " +
                              r.attention_origin + ".");
    for (const auto& note : r.notes) report.preamble.push_back("note: " + note);
    const Labels tokens(r.tokens), hidden_cols(numbered_labels("h", d_h));
    report.tables.push_back(table(StageId::parameters, "The input's weight into the state", "W_x (d_in × d_h)",
                                  numbered_labels("x", d_in), hidden_cols, r.rnn.W_x, "W_x"));
    report.tables.push_back(table(StageId::parameters, "The state's weight into the next state", "W_h (d_h × d_h)",
                                  hidden_cols, hidden_cols, r.rnn.W_h, "W_h"));
    report.tables.push_back(table(StageId::parameters, "The bias of the state", "b_h", Labels{"b_h"}, hidden_cols,
                                  Matrix(r.rnn.b_h), "b_h"));
    report.tables.push_back(table(StageId::hidden_states, "Hidden states: the RNN's state after each token",
                                  "h_t = tanh(x_t·W_x + h_{t−1}·W_h + b_h)", tokens, hidden_cols, r.hidden));
    report.tables.push_back(table(StageId::hidden_states,
                                  fmt::format("The encoder's one vector: h_{}, all that an encoder–decoder hands its "
                                              "decoder{}",
                                              n, n > 1 ? fmt::format("; every token before reaches it only through {} "
                                                                     "number{}",
                                                                     d_h, d_h == 1 ? "" : "s")
                                                       : ""),
                                  fmt::format("h_{}", n), Labels{fmt::format("h_{}", n)}, hidden_cols, Matrix(r.hidden.bottomRows(1))));
    Matrix influence(n, 2);
    std::vector<std::string> back;
    for (Eigen::Index j = 0; j < n; ++j) {
        influence.row(j) << r.rnn_influence(j), r.attention_influence(j);
        back.push_back(fmt::format("{} ({})", r.tokens[static_cast<std::size_t>(j)], n - 1 - j));
    }
    report.tables.push_back(table(StageId::influence,
                                  "Influence: how much each token (in brackets, how many tokens back) moves the last "
                                  "output, by the gradient (the Frobenius norm of its Jacobian)",
                                  fmt::format("‖∂h_{0}/∂x_j‖ (RNN) and ‖∂z_{0}/∂x_j‖ (attention)", n), Labels(back),
                                  Labels{"RNN", "attention"}, std::move(influence)));
    report.footer = influence_sentences(r);
    return report;
}

void write_rnn_json(JsonWriter& json, const RnnReport& r) {
    using Layout = JsonWriter::Layout;
    const Eigen::Index n = r.hidden.rows();
    json.key("schema").string("attntrace.rnn/1");
    json.key("input").string(r.origin);
    json.key("tokens").strings(r.tokens);
    json.key("dims").object(Layout::inline_).key("d_in").integer(r.inputs.cols()).key("d_h").integer(r.hidden.cols()).end();
    json.key("embeddings").matrix(r.inputs, Dtype::float64);
    json.key("rnn").object();
    json.key("formula").string("h_t = tanh(x_t·W_x + h_{t−1}·W_h + b_h), h_0 = 0");
    json.key("origin").string(r.rnn_origin);
    json.key("parameters").object();
    json.key("W_x").matrix(r.rnn.W_x, Dtype::float64).key("W_h").matrix(r.rnn.W_h, Dtype::float64);
    json.key("b_h").numbers(r.rnn.b_h, Dtype::float64);
    json.end().end();
    json.key("attention").object(Layout::inline_).key("origin").string(r.attention_origin).end();
    json.key("notes").strings(r.notes);
    json.key("stages").object();
    json.key("hidden_states").matrix(r.hidden, Dtype::float64);
    json.end();
    json.key("final").numbers(r.hidden.row(n - 1), Dtype::float64);
    json.key("influence").array();
    for (Eigen::Index j = 0; j < n; ++j)
        json.object(Layout::inline_)
            .key("token").string(r.tokens[static_cast<std::size_t>(j)])
            .key("position").integer(j + 1)
            .key("distance").integer(n - 1 - j)
            .key("rnn").number(r.rnn_influence(j), Dtype::float64)
            .key("attention").number(r.attention_influence(j), Dtype::float64)
            .end();
    json.end();
    json.key("decay_per_token").object(Layout::inline_);
    for (const auto& [name, value] : {std::pair{"rnn", &r.rnn_decay}, std::pair{"attention", &r.attention_decay}}) {
        json.key(name);
        if (*value)
            json.object(Layout::inline_).key("factor").number((*value)->factor, Dtype::float64)
                .key("r2").number((*value)->r2, Dtype::float64).end();
        else
            json.null();
    }
    json.end();
}

// The two influences against distance, on a logarithmic scale: a line each.
void write_rnn_svg(const RnnReport& r, std::ostream& stream) {
    const Eigen::Index n = r.rnn_influence.size();
    svg::Panel panel;
    panel.log_y = true;
    panel.x_label = "distance back from the last token (tokens)";
    panel.y_label = fmt::format("influence on the last output (h_{0} for the RNN, z_{0} for attention)", n);
    svg::Series rnn{"RNN ‖∂h_n/∂x_j‖", "#c0392b", {}}, attention{"attention ‖∂z_n/∂x_j‖", "#2471a3", {}};
    for (Eigen::Index j = n - 1; j >= 0; --j) {
        const auto distance = static_cast<double>(n - 1 - j);
        rnn.points.emplace_back(distance, r.rnn_influence(j));
        attention.points.emplace_back(distance, r.attention_influence(j));
    }
    svg::Buffer out;
    svg::open_document(out, panel.left + panel.width + svg::legend_width, panel.top + panel.height + 56);
    svg::append_title(out, fmt::format("The RNN's influence against attention's, by distance ({})", r.origin));
    svg::append_panel(out, panel, {rnn, attention});
    svg::close_document(out, stream);
}

}  // namespace attntrace
