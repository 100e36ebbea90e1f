// The streaming backward pass (--summary --backward) in the text formats: the run's heading,
// the loss, each parameter's gradient as a table (as the full backward pass shows it), and the
// length of each token's gradient ‖dL/dx_i‖ (table and markdown: the first and last rows of a
// long list, as the summary's; CSV: every token).
#include "attention/stage_builder.hpp"
#include "attention/streaming_backward.hpp"
#include "render/formats.hpp"
#include "render/number.hpp"
#include "render/reports.hpp"
#include "render/stage_parts.hpp"
#include "render/summary_text.hpp"
#include "render/text.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace attntrace {
namespace {

// A parameter's gradient as a backward stage, labelled as the trace labels the parameter.
Stage gradient_stage(const ParameterGradient& p) {
    Stage stage;
    stage.id = StageId::parameters;
    stage.direction = Direction::backward;
    stage.parameter = p.name;
    stage.title = fmt::format("Gradient of {}: how L changes with each of its numbers", p.name);
    stage.formula = p.formula;
    stage.rows = p.vector ? Labels{p.name} : Labels(numbered(p.row_prefix, p.data.rows()));
    stage.cols = numbered(p.col_prefix, p.data.cols());
    stage.data = p.data;
    return stage;
}

std::string heading(const ParameterGradient& p) {
    return fmt::format("d_{} · {}×{} · {}", p.name, p.data.rows(), p.data.cols(), p.formula);
}

constexpr std::string_view norms_title =
    "How strongly L pulls on each token's vector: the length ‖dL/dx_i‖ of its gradient, the sum of its paths through "
    "Q, K and V";

std::string norms_heading(const StreamGradients& g) {
    return fmt::format("d_inputs · {} token{} · ‖dL/dx_i‖", g.tokens.size(), g.tokens.size() == 1 ? "" : "s");
}

// "largest ‖dL/dx_i‖: 0.1234 at #3 "cat""; empty for no token.
std::string largest_line(const StreamGradients& g, int digits) {
    if (g.input_norms.empty()) return {};
    const auto top = std::max_element(g.input_norms.begin(), g.input_norms.end());
    const std::size_t i = static_cast<std::size_t>(top - g.input_norms.begin());
    return fmt::format("largest ‖dL/dx_i‖: {} at #{} \"{}\"", format_significant(*top, digits), i + 1, g.tokens[i]);
}

}  // namespace

void write_gradients_table(const StreamGradients& g, const RenderOptions& options, std::ostream& out) {
    const std::size_t n = g.tokens.size(), width = options.width;
    const std::string weighting = weighting_text(g);
    put_wrapped(out,
                fmt::format("attntrace · {} · backward pass of {} token{} · {} · {}{} · {}", mode_text(g), n,
                            n == 1 ? "" : "s", dims_text(g.dims), to_string(g.dtype),
                            weighting == "softmax" ? "" : " · " + weighting, g.origin),
                width);
    if (!g.description.empty()) put_wrapped(out, g.description, width);
    for (const auto& note : g.notes) put_wrapped(out, "note: " + note, width);
    if (g.weights == WeightsOrigin::generated)
        put_wrapped(out, fmt::format("weights: generated from seed {} (splitmix64), not learned", g.seed), width);
    out << '\n';
    put_wrapped(out, fmt::format("backward · {} = {}", g.formula, format_fixed(g.value, options.digits)), width);
    put_wrapped(out, g.title, width);
    RenderOptions plain = options;
    plain.color = false;
    for (const ParameterGradient& p : g.parameters) {
        out << '\n';
        put_wrapped(out, heading(p), width);
        const Stage stage = gradient_stage(p);
        put_wrapped(out, stage.title, width);
        write_table_matrix(stage, plain, out);
    }
    out << '\n';
    put_wrapped(out, norms_heading(g), width);
    put_wrapped(out, std::string(norms_title), width);
    std::size_t token_width = display_width("token");
    for (std::size_t i = 0; i < n; ++i)
        if (shown(i, n)) token_width = std::max(token_width, display_width(fit_width(g.tokens[i], 24)));
    const std::size_t index_width = std::max<std::size_t>(1, fmt::formatted_size("{}", n));
    out << fmt::format("{:>{}}  {}  {}\n", "#", index_width, pad_right("token", token_width), "‖dL/dx_i‖");
    for (std::size_t i = 0; i < n; ++i) {
        if (!shown(i, n)) {
            if (i == summary_rows_shown)
                out << fmt::format("{:>{}}  … {} more tokens (--format json or csv lists them all)\n", "…", index_width,
                                   n - 2 * summary_rows_shown);
            continue;
        }
        out << fmt::format("{:>{}}  {}  {}\n", i + 1, index_width, pad_right(fit_width(g.tokens[i], 24), token_width),
                           format_significant(g.input_norms[i], options.digits));
    }
    if (n > 0) put_wrapped(out, largest_line(g, options.digits), width);
}

void write_gradients_markdown(const StreamGradients& g, const RenderOptions& options, std::ostream& out) {
    const std::size_t n = g.tokens.size();
    out << fmt::format("# attntrace: {}, backward pass of {} token{} ({})\n\n", markdown_escaped(mode_text(g)), n,
                       n == 1 ? "" : "s", markdown_escaped(g.origin));
    out << markdown_code(fmt::format("{} = {}", g.formula, format_fixed(g.value, options.digits))) << " — "
        << markdown_escaped(g.title) << "\n\n";
    for (const ParameterGradient& p : g.parameters) {
        const Stage stage = gradient_stage(p);
        out << fmt::format("## d_{} · {}×{}\n\n", markdown_escaped(p.name), p.data.rows(), p.data.cols());
        out << markdown_code(p.formula) << " — " << markdown_escaped(stage.title) << "\n\n";
        write_markdown_table(stage, options, out);
        out << '\n';
    }
    out << fmt::format("## d_inputs · {} token{}\n\n{}\n\n", n, n == 1 ? "" : "s", markdown_escaped(norms_title));
    out << "| # | token | ‖dL/dx_i‖ |\n|---:|---|---:|\n";
    for (std::size_t i = 0; i < n; ++i) {
        if (!shown(i, n)) {
            if (i == summary_rows_shown) out << fmt::format("| … | {} more | |\n", n - 2 * summary_rows_shown);
            continue;
        }
        out << fmt::format("| {} | {} | {} |\n", i + 1, markdown_escaped(g.tokens[i]),
                           format_significant(g.input_norms[i], options.digits));
    }
    if (n > 0) out << '\n' << markdown_escaped(largest_line(g, options.digits)) << '\n';
}

// A block per gradient, as the trace's stages in CSV (`stage,d_W_q`, `formula,…`, the table),
// then `index,token,norm`, a line per token.
void write_gradients_csv(const StreamGradients& g, const RenderOptions& options, std::ostream& out) {
    out << "loss," << csv_field(to_string(g.loss.kind)) << ',' << csv_field(g.formula) << ','
        << format_fixed(g.value, options.digits) << '\n';
    for (const ParameterGradient& p : g.parameters) {
        out << "\nstage," << csv_field("d_" + p.name) << "\nformula," << csv_field(p.formula) << '\n';
        write_csv_table(gradient_stage(p), options, out);
    }
    out << "\nindex,token,input_gradient_norm\n";
    for (std::size_t i = 0; i < g.tokens.size(); ++i)
        out << fmt::format("{},{},{}\n", i, csv_field(g.tokens[i]), format_significant(g.input_norms[i], options.digits));
}

}  // namespace attntrace
