#include "commands/compare_command.hpp"

#include "attention/compare.hpp"
#include "attention/stage_builder.hpp"
#include "commands/guards.hpp"
#include "error.hpp"
#include "input/load.hpp"
#include "input/source.hpp"
#include "render/json_reports.hpp"
#include "render/number.hpp"
#include "render/report.hpp"
#include "render/text.hpp"

#include <fmt/format.h>

namespace attntrace {
namespace {

std::string vector_text(const Vector& v, int digits) {
    std::string text = "[";
    for (Eigen::Index k = 0; k < v.size(); ++k) text += (k ? ", " : "") + format_fixed(v(k), digits);
    return text + "]";
}

// One line per other token, largest contribution first, columns aligned.
std::vector<std::string> moved_lines(const ContextIn& in, int digits) {
    std::size_t width = 0;
    for (const auto& c : in.moved_most) width = std::max(width, display_width(c.token));
    std::vector<std::string> lines;
    for (const auto& c : in.moved_most)
        lines.push_back(fmt::format("  {}  weight {} × value = {}  (size {})", pad_right(c.token, width),
                                    format_fixed(c.weight, digits), vector_text(c.vector, digits),
                                    format_fixed(c.size, digits)));
    return lines;
}

Report comparison_report(const Comparison& c, int digits) {
    Report report;
    report.title = fmt::format("attntrace compare · \"{}\" · {} mode", c.token, to_string(c.mode));
    for (const auto& [name, in] : {std::pair{"A", &c.a}, std::pair{"B", &c.b}})
        report.preamble.push_back(fmt::format("{}: {} (token {}){}{}", name, in->origin, in->position + 1,
                                              in->description.empty() ? "" : " — ", in->description));
    Stage table;
    table.name = "context";
    table.title = fmt::format("The context vector of \"{}\" in each input, and how it moved", c.token);
    table.formula = "z = Σ_j a_j·v_j";
    table.rows = {"A", "B", "B − A"};
    table.cols = numbered("z", c.difference.size());
    table.data.resize(3, c.difference.size());
    table.data << c.a.context, c.b.context, c.difference;
    report.tables.push_back(std::move(table));
    report.footer.push_back(fmt::format("cosine(A, B) = {}   |A| = {}   |B| = {}   |B − A| = {}",
                                        c.cosine ? format_fixed(*c.cosine, digits) : "undefined (a zero vector)",
                                        format_fixed(c.norm_a, digits), format_fixed(c.norm_b, digits),
                                        format_fixed(c.norm_difference, digits)));
    for (const auto& [name, in] : {std::pair{"A", &c.a}, std::pair{"B", &c.b}}) {
        report.footer.push_back(fmt::format("other words that moved \"{}\" most in {}:", c.token, name));
        for (auto& line : moved_lines(*in, digits)) report.footer.push_back(std::move(line));
    }
    return report;
}

Trace trace_input(const std::string& path, const CompareRequest& request) {
    const InputText input = read_input(path, request.max_input);
    const Problem problem = load_input(input, request.max_memory);
    if (!std::holds_alternative<SingleSequenceInput>(problem.input))
        throw DataError(fmt::format("{}: compare reads one sentence with its embeddings, not a source "
                                    "and a target",
                                    problem.origin));
    TraceOptions options = request.trace;
    options.mode = resolve_mode(problem, request.mode);
    // Two traces of this size are alive at once, at worst.
    const WorkShape shape = work_shape(problem, options);
    require_memory(2 * trace_bytes(shape, options.dtype, request.render, false), request.max_memory, problem.origin,
                   "comparing two traces of this size", "");
    require_time(2 * trace_seconds(shape, Format::json), request.max_seconds, problem.origin,
                 "comparing two traces of this size", "");
    return trace(problem, options);
}

}  // namespace

void run_compare(CompareRequest request, std::ostream& out) {
    const Trace a = trace_input(request.a, request);
    const Trace b = trace_input(request.b, request);
    if (a.mode != b.mode)
        throw UsageError(fmt::format("the inputs ask for different modes ({} and {}): choose one with --mode",
                                     to_string(a.mode), to_string(b.mode)));
    write_comparison(a, b, request.token, request.render, out);
}

void write_comparison(const Trace& a, const Trace& b, const std::string& token, const RenderOptions& render,
                      std::ostream& out) {
    const Comparison comparison = compare_contexts(a, b, token);
    if (render.format == Format::json) {
        render_comparison_json(comparison, out);
        return;
    }
    render_report(comparison_report(comparison, render.digits), render, out);
}

}  // namespace attntrace
