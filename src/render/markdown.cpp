// The markdown format: a heading and a pipe table per stage, ready to paste into notes.
#include "attention/modes.hpp"
#include "attention/positions.hpp"
#include "render/cells.hpp"
#include "render/explain.hpp"
#include "render/formats.hpp"
#include "render/reports.hpp"
#include "render/stage_parts.hpp"
#include "render/summary_text.hpp"
#include "render/worked_text.hpp"

#include <fmt/format.h>

#include <cctype>
#include <string_view>

namespace attntrace {
namespace {

// A fence longer than any run of backticks in `lines` (at least ```), so that a label
// holding backticks cannot end the code block early (CommonMark's rule).
std::string code_fence(const std::vector<std::string>& lines) {
    std::size_t longest = 0;
    for (const auto& line : lines)
        for (std::size_t i = 0, run = 0; i < line.size(); ++i) {
            run = line[i] == '`' ? run + 1 : 0;
            longest = std::max(longest, run);
        }
    return std::string(std::max<std::size_t>(3, longest + 1), '`');
}

// Text that stays text, in a table cell, a heading or prose (a label, a title, a sentence of
// --explain, a reason): every text from a trace goes through it. HTML's characters as
// entities (<pad> would be taken for a tag), and a backslash before each character that could
// start Markdown's markup. An underscore between two letters or digits ("W_q", "d_k") cannot
// (CommonMark's intraword rule) and is left as it is, for notes that read well as they are.
std::string markdown_text(std::string_view text) {
    std::string out;
    const auto word_char = [&](std::size_t i) {
        const auto c = static_cast<unsigned char>(text[i]);
        return std::isalnum(c) || c >= 0x80;  // a letter of another script
    };
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        switch (c) {
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '&': out += "&amp;"; break;
        case '_':
            if (i > 0 && i + 1 < text.size() && word_char(i - 1) && word_char(i + 1)) out += c;
            else out += "\\_";
            break;
        case '|': case '\\': case '*': case '`': case '[': case ']': case '#': case '~':
            out += '\\';
            out += c;
            break;
        default: out += c;
        }
    }
    return out;
}

// `text` as inline code: between runs of backticks longer than any it holds (CommonMark), with
// a space inside them when it starts or ends with one.
std::string code_span(std::string_view text) {
    std::size_t longest = 0;
    for (std::size_t i = 0, run = 0; i < text.size(); ++i) {
        run = text[i] == '`' ? run + 1 : 0;
        longest = std::max(longest, run);
    }
    const std::string fence(longest + 1, '`');
    const bool pad = !text.empty() && (text.front() == '`' || text.back() == '`');
    return fmt::format("{0}{1}{2}{1}{0}", fence, pad ? " " : "", text);
}

void write_table(const Stage& stage, const RenderOptions& options, std::ostream& out) {
    const StageText text = stage_text(stage, options.digits);
    out << "| |";
    std::string rule = "|---|";
    for (std::size_t c = 0; c < text.header.size(); ++c) {
        out << ' ' << markdown_text(text.header[c]) << " |";
        rule += c < text.data_columns || text.header[c] == "Σ" ? "---:|" : "---|";
    }
    out << '\n' << rule << '\n';
    for (std::size_t r = 0; r < text.rows.size(); ++r) {
        out << "| **" << markdown_text(text.row_labels[r]) << "** |";
        for (const auto& value : text.rows[r]) out << ' ' << markdown_text(value) << " |";
        out << '\n';
    }
}

// "## name · shape", the explanation paragraphs, the formula, then a pipe table.
void write_stage(const Stage& stage, const RenderOptions& options, const std::vector<std::string>& explanation,
                 std::ostream& out) {
    out << fmt::format("## {}{} · {}×{}\n\n", stage.name(), stage.head > 0 ? fmt::format(" · head {}", stage.head) : "",
                       stage.row_count(), stage.col_count());
    for (const auto& line : explanation) out << markdown_text(line) << "\n\n";
    out << code_span(stage.formula);
    if (!stage.applied) {
        out << fmt::format(" — not applied: {}\n\n", markdown_text(stage.reason));
        return;
    }
    out << fmt::format(" — {}\n\n", markdown_text(stage.title));
    write_table(stage, options, out);
    out << '\n';
}


// "## parameters", where they came from, then each matrix as a pipe table.
void write_parameters(const Trace& trace, const RenderOptions& options, std::ostream& out) {
    out << "## parameters\n\n";
    if (options.explain)
        for (const auto& line : parameters_explanation(trace)) out << "> " << markdown_text(line) << "\n\n";
    out << markdown_text(parameters_heading(trace)) << "\n\n";
    for (const auto& p : trace.parameters) {
        out << fmt::format("{} — {}\n\n", code_span(p.formula), markdown_text(p.name));
        write_table(parameter_table(p), options, out);
        out << '\n';
    }
}

class MarkdownRenderer final : public TextRenderer, public ShowsGradients {
public:
    void gradients(const StreamGradients& g, const RenderOptions& options, std::ostream& out) const override {
        write_gradients_markdown(g, options, out);
    }

public:
    // Measured on the project's machine, one thread: a full trace of 1000 tokens took 300 ns of
    // CPU time a number, a decode 400 (each step's report and its cells made first),
    // similarity 730; the rates leave a quarter to a third more. Each cell is held as a string.
    RenderCost cost(const RenderOptions& options) const override {
        RenderCost c;
        c.cell_bytes = cell_string_bytes(options.digits);
        c.seconds_per_number = 400e-9;
        c.decode = DecodeLayout::reports;
        c.decode_seconds_per_number = 600e-9;
        c.similarity_pair_bytes = similarity_pair_bytes(options.digits);
        c.similarity_number_chars = options.digits + 8;
        c.similarity_seconds_per_number = 0.9e-6;
        return c;
    }

    void trace(const Trace& trace, const RenderOptions& options, std::ostream& out) const override {
        const std::string positions = positions_text(trace.positions, trace.first_position);
        out << fmt::format("# attntrace: {} mode, {}{} ({})\n\n", to_string(trace.mode), positions.empty() ? "" : positions + ", ",
                           tokens_text(trace), markdown_text(trace.origin));
        if (!trace.description.empty()) out << '*' << markdown_text(trace.description) << "*\n\n";
        for (const auto& note : trace.notes) out << "> Note: " << markdown_text(note) << "\n\n";
        if (trace.weights == WeightsOrigin::generated)
            out << fmt::format("> Weights generated from seed {} (splitmix64), not learned.\n\n", trace.seed);
        for (const Shown& item : shown_stages(trace, options)) {
            if (!item.stage) {
                write_parameters(trace, options, out);
                continue;
            }
            const Stage& stage = *item.stage;
            write_stage(stage, options, options.explain ? explanation(trace, stage) : std::vector<std::string>{}, out);
        }
        if (trace.worked) {
            const auto lines = worked_lines(*trace.worked, options.digits);
            const std::string fence = code_fence(lines);
            out << "## worked example\n\n" << fence << "text\n";
            for (const auto& line : lines) out << line << '\n';
            out << fence << '\n';
        }
    }

    void summary(const Summary& s, const RenderOptions& options, std::ostream& out) const override {
        const std::size_t n = s.tokens.size();
        const std::string positions = positions_text(s.positions, s.first_position);
        out << fmt::format("# attntrace: {} mode, {}summary of {} quer{} ({})\n", to_string(s.mode),
                           positions.empty() ? "" : positions + ", ", n, n == 1 ? "y" : "ies", markdown_text(s.origin));
        for (const HeadSummary& h : s.per_head) {
            out << '\n';
            if (h.head > 0) out << "## " << markdown_text(head_heading(s, h)) << "\n\n";
            out << "| # | query | max | entropy | top keys (weight) |\n|---:|---|---:|---:|---|\n";
            for (std::size_t i = 0; i < n; ++i) {
                if (!shown(i, n)) {
                    if (i == summary_rows_shown) out << fmt::format("| … | {} more | | | |\n", n - 2 * summary_rows_shown);
                    continue;
                }
                out << fmt::format("| {} | {} | {} | {} | {} |\n", i + 1, markdown_text(s.tokens[i]),
                                   format_significant(h.queries[i].max_weight, options.digits),
                                   format_fixed(h.queries[i].entropy, options.digits),
                                   markdown_text(top_text(s, h.queries[i], options.digits)));
            }
        }
    }

    void check(const Trace& trace, const CheckReport& report, const RenderOptions&, std::ostream& out) const override {
        out << fmt::format("# attntrace check: {} ({})\n\n", markdown_text(mode_text(trace)), markdown_text(trace.origin));
        for (const auto& c : report.checks) out << "- **ok** " << markdown_text(c.name + ": " + c.measured) << '\n';
        for (const auto& w : report.warnings) out << "- **warning** " << markdown_text(w) << '\n';
        out << '\n' << markdown_text(check_verdict(report)) << '\n';
    }

    void report(const Report& report, const RenderOptions& options, std::ostream& out) const override {
        out << "# " << markdown_text(report.title) << "\n\n";
        for (const auto& line : report.preamble) out << markdown_text(line) << "\n\n";
        for (const auto& table : report.tables) write_stage(table, options, {}, out);
        for (const auto& line : report.footer) out << "- " << markdown_text(line) << '\n';
    }
};

}  // namespace

std::string markdown_escaped(std::string_view text) { return markdown_text(text); }
std::string markdown_code(std::string_view text) { return code_span(text); }
std::string markdown_fence(const std::vector<std::string>& lines) { return code_fence(lines); }
void write_markdown_table(const Stage& stage, const RenderOptions& options, std::ostream& out) {
    write_table(stage, options, out);
}

const Renderer& markdown_renderer() {
    static const MarkdownRenderer renderer;
    return renderer;
}

}  // namespace attntrace
