// The CSV format of a backward pass (docs/output-formats.md). Blocks: the trace's, then a
// `loss` block, a block per gradient named `d_NAME` as -s names it, and with --step-size a
// `step` block and the blocks of what came after it (`after_step:W_q`, `after_step:weights`).
// With --tidy, one line per number as the trace's tidy CSV, with a last column `direction`:
// forward, backward (the loss and the gradients, each under its forward stage's or
// parameter's name) or after_step.
#include "render/backward.hpp"

#include "render/number.hpp"
#include "render/reports.hpp"
#include "render/stage_parts.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace attntrace {
namespace {

void write_fields(std::ostream& out, const std::vector<std::string>& fields) {
    for (std::size_t i = 0; i < fields.size(); ++i) out << (i ? "," : "") << csv_field(fields[i]);
    out << '\n';
}

// A block as the trace's: `stage,NAME[,HEAD[,KV_HEAD]]`, `formula,…`, `applied,…`, the table.
void write_block(const std::string& name, const Stage& stage, const RenderOptions& options, std::ostream& out) {
    std::vector<std::string> first{"stage", name};
    if (stage.head > 0) first.push_back(std::to_string(stage.head));
    if (stage.kv_head > 0) first.push_back(std::to_string(stage.kv_head));
    write_fields(out, first);
    write_fields(out, {"formula", stage.formula});
    if (!stage.applied) return write_fields(out, {"applied", "false", stage.reason});
    write_fields(out, {"applied", "true"});
    write_csv_table(stage, options, out);
}

// A 1 × k table of figures (the loss, the step's), as a stage.
Stage figures(const std::string& formula, const std::string& row, std::vector<std::pair<std::string, double>> values) {
    Stage stage;
    stage.id = StageId::parameters;
    stage.formula = formula;
    stage.rows = Labels{row};
    std::vector<std::string> cols;
    stage.data.resize(1, static_cast<Eigen::Index>(values.size()));
    for (std::size_t i = 0; i < values.size(); ++i) {
        cols.push_back(values[i].first);
        stage.data(0, static_cast<Eigen::Index>(i)) = values[i].second;
    }
    stage.cols = Labels(cols);
    return stage;
}

Stage step_figures(const LearningStep& step) {
    std::vector<std::pair<std::string, double>> values{
        {"step_size", step.step_size}, {"loss_before", step.loss_before}, {"loss_after", step.loss_after}};
    if (step.weight_before) values.insert(values.end(), {{"weight_before", *step.weight_before}, {"weight_after", *step.weight_after}});
    return figures("θ ← θ − η·dL/dθ", "step", std::move(values));
}

void write_blocks(const BackwardRun& run, const RenderOptions& options, std::ostream& out) {
    const Gradients& g = run.gradients;
    write_block("loss", figures(g.formula, "loss", {{"L", g.value}}), options, out);
    for (const Stage* gradient : run.shown) {
        out << '\n';
        write_block(gradient_name(*gradient), *gradient, options, out);
    }
    if (!run.step) return;
    out << '\n';
    write_block("step", step_figures(*run.step), options, out);
    const std::vector<Stage> tables = updated_tables(*run.step);
    for (std::size_t i = 0; i < tables.size(); ++i) {
        out << '\n';
        write_block("after_step:" + run.step->updated[i].name, tables[i], options, out);
    }
    for (const Stage* stage : after_shown(run, options)) {
        out << '\n';
        write_block(fmt::format("after_step:{}", stage->name()), *stage, options, out);
    }
}

// Tidy lines: `stage,head,row,col,row_token,col_token,value,masked,direction`. The forward
// stages' hidden entries have no value, as in the trace's tidy CSV; a gradient has a value
// everywhere, and `masked` says where its forward stage was hidden.
class TidyWriter {
public:
    explicit TidyWriter(std::ostream& out) : out_(out) {}

    void matrix(std::string_view name, int head, const Stage& stage, Dtype dtype, std::string_view direction,
                bool values_where_masked) {
        const std::string prefix = csv_field(name) + ',' + (head > 0 ? std::to_string(head) : std::string()) + ',';
        for (Eigen::Index r = 0; r < stage.row_count(); ++r)
            for (Eigen::Index c = 0; c < stage.col_count(); ++c) {
                line_ = fmt::format("{}{},{},{},{},", prefix, r, c, csv_field(stage.rows[static_cast<std::size_t>(r)]),
                                    csv_field(stage.cols[static_cast<std::size_t>(c)]));
                const double value = stage.data(r, c);
                const bool masked = stage.is_masked(r, c);
                const bool fits = std::isfinite(value) &&
                                  (dtype == Dtype::float64 || std::fabs(value) <= std::numeric_limits<float>::max());
                if ((!masked || values_where_masked) && fits) append_exact(line_, value, dtype);
                line_ += masked ? ",true," : ",false,";
                line_ += direction;
                line_ += '\n';
                out_ << line_;
            }
    }
    // The stages of a trace that `options` selects, with its parameters.
    void trace(const Trace& trace, const RenderOptions& options, std::string_view direction) {
        for (const Shown& item : shown_stages(trace, options)) {
            if (!item.stage) {
                for (const Parameter& p : trace.parameters)
                    matrix(p.name, 0, parameter_table(p), Dtype::float64, direction, false);
            } else if (item.stage->applied) {
                matrix(item.stage->name(), item.stage->head, *item.stage, trace.dtype, direction, false);
            }
        }
    }

private:
    std::ostream& out_;
    std::string line_;
};

void write_tidy(const BackwardRun& run, const RenderOptions& options, std::ostream& out) {
    out << "stage,head,row,col,row_token,col_token,value,masked,direction\n";
    TidyWriter tidy(out);
    if (run.forward_shown) tidy.trace(run.trace, options, "forward");
    const Gradients& g = run.gradients;
    tidy.matrix("loss", 0, figures(g.formula, "loss", {{"L", g.value}}), Dtype::float64, "backward", true);
    for (const Stage* d : run.shown) tidy.matrix(d->key(), d->head, *d, Dtype::float64, "backward", true);
    if (!run.step) return;
    const LearningStep& step = *run.step;
    tidy.matrix("step", 0, step_figures(step), Dtype::float64, "after_step", true);
    for (const Parameter& p : step.updated) tidy.matrix(p.name, 0, parameter_table(p), Dtype::float64, "after_step", true);
    for (const Stage* stage : after_shown(run, options))
        if (stage->applied) tidy.matrix(stage->name(), stage->head, *stage, step.after.dtype, "after_step", false);
}

}  // namespace

void write_backward_csv(const BackwardRun& run, const RenderOptions& options, std::ostream& out) {
    if (options.tidy) return write_tidy(run, options, out);
    render(run.trace, forward_options(run, options), out);
    if (run.forward_shown) out << '\n';
    write_blocks(run, options, out);
}

}  // namespace attntrace
