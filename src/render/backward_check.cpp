// --check with --backward: each parameter's and the inputs' comparison with central
// differences, the worst relative error and where it is, in every format (JSON:
// attntrace.gradient-check/1).
#include "render/backward.hpp"

#include "render/json_writer.hpp"
#include "render/reports.hpp"
#include "render/stage_parts.hpp"
#include "render/text.hpp"

#include <fmt/format.h>

namespace attntrace {
namespace {

std::string figure(double value) { return fmt::format("{:.2g}", value); }

std::string where(const MatrixCheck& m) { return fmt::format("{} at ({}, {})", m.key, m.row_label, m.col_label); }

std::string matrix_line(const MatrixCheck& m) {
    const std::string refined =
        m.refined == 0 ? "" : fmt::format(" ({} of them with a smaller h)", m.refined);
    return fmt::format("{}: {} entr{}{}, worst relative error {} at ({}, {}): gradient {}, difference {}", m.key, m.entries,
                       m.entries == 1 ? "y" : "ies", refined, figure(m.worst_relative), m.row_label, m.col_label,
                       fmt::format("{:.10g}", m.gradient), fmt::format("{:.10g}", m.difference));
}

std::string method_line(const GradientCheck& c) {
    std::size_t refined = 0;
    for (const MatrixCheck& m : c.matrices) refined += m.refined;
    const std::string halved =
        refined == 0 ? ""
                     : fmt::format("; where that was off by more than {}, h was halved up to {} times and the difference "
                                   "nearest the gradient kept ({} entr{})",
                                   figure(c.tolerance), c.halvings, refined, refined == 1 ? "y" : "ies");
    return fmt::format("each entry θ moved by ±h and ±2h, h = {}·max(1, |θ|), the whole trace run again each time; the "
                       "difference (L(θ − 2h) − 8·L(θ − h) + 8·L(θ + h) − L(θ + 2h)) / 12h against the gradient{}",
                       c.step, halved);
}

std::string verdict(const GradientCheck& c, double tolerance) {
    const MatrixCheck& w = c.worst();
    return fmt::format("all {} entries agree with their central differences: worst relative error {} ({}), within {}",
                       c.entries(), figure(w.worst_relative), where(w), figure(tolerance));
}

void write_json(const Trace& trace, const Gradients& g, const GradientCheck& c, double tolerance, std::ostream& os) {
    using Layout = JsonWriter::Layout;
    const Dtype f64 = Dtype::float64;
    fmt::memory_buffer out;
    JsonWriter json(out);
    json.object();
    json.key("schema").string("attntrace.gradient-check/1");
    json.key("mode").string(to_string(trace.mode));
    json.key("input").string(trace.origin);
    json.key("loss").object(Layout::inline_).key("kind").string(to_string(g.loss.kind)).key("formula").string(g.formula);
    json.key("value").number(c.loss, f64).end();
    json.key("step").number(c.step, f64).key("halvings").integer(c.halvings).key("floor").number(c.floor, f64);
    json.key("tolerance").number(tolerance, f64);
    json.key("entries").integer(static_cast<std::int64_t>(c.entries()));
    json.key("passed").boolean(c.worst().worst_relative <= tolerance);
    json.key("worst").string(c.worst().key);
    json.key("matrices").array();
    for (const MatrixCheck& m : c.matrices)
        json.object(Layout::inline_)
            .key("key").string(m.key)
            .key("entries").integer(static_cast<std::int64_t>(m.entries))
            .key("refined").integer(static_cast<std::int64_t>(m.refined))
            .key("worst_relative").number(m.worst_relative, f64)
            .key("worst_absolute").number(m.worst_absolute, f64)
            .key("row").integer(m.row).key("col").integer(m.col)
            .key("row_label").string(m.row_label).key("col_label").string(m.col_label)
            .key("gradient").number(m.gradient, f64).key("difference").number(m.difference, f64)
            .end();
    json.end();
    json.end();
    out.push_back('\n');
    flush(out, os);
}

void write_csv(const GradientCheck& c, std::ostream& out) {
    out << "matrix,entries,refined,worst_relative,worst_absolute,row,col,row_label,col_label,gradient,difference\n";
    for (const MatrixCheck& m : c.matrices)
        out << fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", csv_field(m.key), m.entries, m.refined, m.worst_relative,
                           m.worst_absolute, m.row, m.col, csv_field(m.row_label), csv_field(m.col_label), m.gradient,
                           m.difference);
}

}  // namespace

void render_gradient_check(const Trace& trace, const Gradients& g, const GradientCheck& c, double tolerance,
                           const RenderOptions& options, std::ostream& out) {
    switch (options.format) {
    case Format::html: return require_format(options.format, Product::check);  // refused: a page shows no check
    case Format::json:
    case Format::jsonl: return write_json(trace, g, c, tolerance, out);
    case Format::csv: return write_csv(c, out);
    case Format::markdown:
        out << fmt::format("# attntrace gradient check: {} ({})\n\n", markdown_escaped(mode_text(trace)),
                           markdown_escaped(trace.origin));
        out << markdown_code(loss_line(g, options.digits)) << " — " << markdown_escaped(method_line(c)) << "\n\n";
        for (const MatrixCheck& m : c.matrices) out << "- **ok** " << markdown_escaped(matrix_line(m)) << '\n';
        out << '\n' << markdown_escaped(verdict(c, tolerance)) << '\n';
        return;
    case Format::table:
        put_wrapped(out, "gradient check · " + loss_line(g, options.digits), options.width);
        put_wrapped(out, method_line(c), options.width);
        for (const MatrixCheck& m : c.matrices) put_wrapped(out, "ok  " + matrix_line(m), options.width);
        put_wrapped(out, verdict(c, tolerance), options.width);
        return;
    }
}

}  // namespace attntrace
