// The terminal format of a backward pass: the trace as the table format prints it, then the
// loss, the gradients in the order the backward pass reached them (each with a heading like a
// stage's), -q's row and a learning step. Gradients are not shaded: their scale is signed,
// and the terminal's shades run one way (--svg draws them on a diverging scale).
#include "render/backward.hpp"

#include "render/stage_parts.hpp"
#include "render/text.hpp"

#include <fmt/format.h>

namespace attntrace {
namespace {

void put_lines(const std::vector<std::string>& lines, std::size_t width, std::ostream& out, std::string_view indent = "") {
    for (const auto& line : lines) put_wrapped(out, std::string(indent) + line, width);
}

// A heading, then the title and the table (or the reason the step was skipped).
void write_table_stage(const std::string& heading, const Stage& stage, const RenderOptions& options, std::ostream& out) {
    put_wrapped(out, heading, options.width);
    if (!stage.applied) return put_wrapped(out, stage.reason, options.width);
    put_wrapped(out, stage.title, options.width);
    write_table_matrix(stage, options, out);
}

void write_table_step(const BackwardRun& run, const RenderOptions& options, std::ostream& out) {
    const LearningStep& step = *run.step;
    out << '\n';
    put_wrapped(out, step_heading(step), options.width);
    const std::vector<Stage> tables = updated_tables(step);
    for (std::size_t i = 0; i < tables.size(); ++i) {
        const Stage& table = tables[i];
        out << '\n';
        write_table_stage(fmt::format("{} after the step · {}×{} · {}", step.updated[i].name, table.row_count(),
                                      table.col_count(), table.formula),
                          table, options, out);
    }
    out << '\n';
    put_lines(step_lines(step, options.digits), options.width, out);
    const std::vector<const Stage*> after = after_shown(run, options);
    if (after.empty()) return;
    out << '\n';
    put_wrapped(out, "the trace after the step:", options.width);
    for (const Stage* stage : after) {
        out << '\n';
        write_table_stage(stage_heading(*stage), *stage, options, out);
    }
}

}  // namespace

void write_backward_table(const BackwardRun& run, const RenderOptions& options, std::ostream& out) {
    render(run.trace, forward_options(run, options), out);
    const Gradients& g = run.gradients;
    RenderOptions plain = options;
    plain.color = false;
    if (run.forward_shown || run.trace.worked) out << '\n';  // the trace's heading ends in an empty line
    put_wrapped(out, "backward · " + loss_line(g, options.digits), options.width);
    put_wrapped(out, g.title, options.width);
    for (const Stage* gradient : run.shown) {
        out << '\n';
        if (options.explain) put_lines(gradient_explanation(run.trace, g, *gradient), options.width, out, "  ");
        write_table_stage(gradient_heading(*gradient), *gradient, plain, out);
    }
    if (run.row) {
        const RowText text = backward_row_text(*run.row, options.digits);
        out << '\n';
        put_lines(text.before, options.width, out);
        if (text.jacobian) write_table_matrix(*text.jacobian, plain, out);
        put_lines(text.after, options.width, out);
    }
    if (run.step) write_table_step(run, plain, out);
}

}  // namespace attntrace
