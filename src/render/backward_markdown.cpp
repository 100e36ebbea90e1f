// The markdown format of a backward pass: the trace as markdown prints it, then "## backward"
// with the loss, a section per gradient like a stage's, -q's row in a code block and a
// learning step.
#include "render/backward.hpp"

#include "render/stage_parts.hpp"

#include <fmt/format.h>

namespace attntrace {
namespace {

void write_code_block(const std::string& title, const std::vector<std::string>& lines, std::ostream& out) {
    const std::string fence = markdown_fence(lines);
    out << "### " << markdown_escaped(title) << "\n\n" << fence << "text\n";
    for (const auto& line : lines) out << line << '\n';
    out << fence << "\n\n";
}

// "## heading", the explanation, the formula and title, the pipe table.
void write_markdown_section(const std::string& heading, const Stage& stage, const std::vector<std::string>& explanation,
                            const RenderOptions& options, std::ostream& out) {
    out << "## " << markdown_escaped(heading) << "\n\n";
    for (const auto& line : explanation) out << markdown_escaped(line) << "\n\n";
    out << markdown_code(stage.formula);
    if (!stage.applied) {
        out << " — not applied: " << markdown_escaped(stage.reason) << "\n\n";
        return;
    }
    out << " — " << markdown_escaped(stage.title) << "\n\n";
    write_markdown_table(stage, options, out);
    out << '\n';
}

std::string shape_heading(const std::string& name, const Stage& stage) {
    return fmt::format("{}{} · {}×{}", name, stage.head > 0 ? fmt::format(" · head {}", stage.head) : "", stage.row_count(),
                       stage.col_count());
}

void write_markdown_row(const BackwardRow& row, const RenderOptions& options, std::ostream& out) {
    const RowText text = backward_row_text(row, options.digits);
    write_code_block("one row, backward", text.before, out);
    if (text.jacobian) {
        out << markdown_code(text.jacobian->formula) << "\n\n";
        write_markdown_table(*text.jacobian, options, out);
        out << '\n';
    }
    write_code_block("the short form", text.after, out);
}

void write_markdown_step(const BackwardRun& run, const RenderOptions& options, std::ostream& out) {
    const LearningStep& step = *run.step;
    out << "## " << markdown_escaped(step_heading(step)) << "\n\n";
    for (const std::string& line : step_lines(step, options.digits)) out << "- " << markdown_escaped(line) << '\n';
    out << '\n';
    const std::vector<Stage> tables = updated_tables(step);
    for (std::size_t i = 0; i < tables.size(); ++i)
        write_markdown_section(shape_heading(step.updated[i].name + " after the step", tables[i]), tables[i], {}, options, out);
    for (const Stage* stage : after_shown(run, options))
        write_markdown_section(shape_heading(fmt::format("{} after the step", stage->name()), *stage), *stage, {}, options, out);
}

}  // namespace

void write_backward_markdown(const BackwardRun& run, const RenderOptions& options, std::ostream& out) {
    render(run.trace, forward_options(run, options), out);
    if (run.trace.worked) out << '\n';  // the worked example's code block ends without an empty line
    const Gradients& g = run.gradients;
    out << "## backward\n\n" << markdown_code(loss_line(g, options.digits)) << " — " << markdown_escaped(g.title) << "\n\n";
    for (const Stage* gradient : run.shown)
        write_markdown_section(shape_heading(gradient_name(*gradient), *gradient),
                               *gradient, options.explain ? gradient_explanation(run.trace, g, *gradient) : std::vector<std::string>{},
                               options, out);
    if (run.row) write_markdown_row(*run.row, options, out);
    if (run.step) write_markdown_step(run, options, out);
}

}  // namespace attntrace
