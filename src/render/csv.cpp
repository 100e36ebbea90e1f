// The CSV format (docs/output-formats.md): one block per stage, blocks separated by an empty
// line. A block: `stage,NAME`, `formula,…`, `applied,true|false[,reason]`, then for an applied
// stage a header row (`row`, then the column labels) and one row per query. Numbers are rounded
// to --digits; a masked score is -inf. Fields are quoted as RFC 4180 says; lines end in \n.
// With --tidy, one line per number instead (write_tidy), for pandas.read_csv and spreadsheets.
#include "render/cells.hpp"
#include "render/formats.hpp"
#include "render/number.hpp"
#include "render/reports.hpp"
#include "render/stage_parts.hpp"
#include "render/summary_text.hpp"

#include <cmath>
#include <limits>
#include <ostream>

namespace attntrace {
namespace {

// Quoted as RFC 4180 says when it holds a comma, a quote or a line break.
std::string csv_quoted(std::string_view text) {
    if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
    std::string out = "\"";
    for (const char c : text) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + '"';
}

// A field of text (a label, a formula): quoted (RFC 4180) when it holds a comma, a quote or a
// line break, and, when it starts with = + - @ or a tab or carriage return, prefixed with '
// so that a spreadsheet shows it instead of running it as a formula (the OWASP advice on CSV
// injection). Numbers are written as they are.
std::string csv_text(std::string_view text) {
    if (text.empty() || std::string_view("=+-@\t\r").find(text.front()) == std::string_view::npos) return csv_quoted(text);
    std::string prefixed(1, '\'');
    prefixed.append(text);
    return csv_quoted(prefixed);
}

void write_row(std::ostream& out, std::string_view first, const std::vector<std::string>& rest) {
    out << csv_text(first);
    for (const auto& item : rest) out << ',' << csv_text(item);
    out << '\n';
}

// A row of a stage's table: its label, then the numbers (written as they are), then the
// extra columns, of which "strongest" is a label.
void write_cells(std::ostream& out, const StageText& text, std::size_t r) {
    out << csv_text(text.row_labels[r]);
    for (std::size_t c = 0; c < text.rows[r].size(); ++c) {
        const bool label = c >= text.data_columns && text.header[c] == "strongest";
        out << ',' << (label ? csv_text(text.rows[r][c]) : text.rows[r][c]);
    }
    out << '\n';
}

// One block of a stage (docs/output-formats.md).
void write_stage(const Stage& stage, const RenderOptions& options, std::ostream& out) {
    std::vector<std::string> name{std::string(stage.name())};
    if (stage.head > 0) name.push_back(std::to_string(stage.head));
    if (stage.kv_head > 0) name.push_back(std::to_string(stage.kv_head));  // grouped-query attention
    write_row(out, "stage", name);
    write_row(out, "formula", {stage.formula});
    if (!stage.applied) {
        write_row(out, "applied", {"false", stage.reason});
        return;
    }
    write_row(out, "applied", {"true"});
    write_csv_table(stage, options, out);
}

// A block per matrix, like a stage's: `stage,parameters`, `formula,NAME: …`, then the table;
// a mode without parameters says so in one block.
void write_parameters(const Trace& trace, const RenderOptions& options, std::ostream& out) {
    if (trace.parameters.empty()) {
        write_row(out, "stage", {"parameters"});
        write_row(out, "formula", {""});
        write_row(out, "applied", {"false", parameters_heading(trace)});
        return;
    }
    for (std::size_t i = 0; i < trace.parameters.size(); ++i) {
        if (i > 0) out << '\n';
        Stage table = parameter_table(trace.parameters[i]);
        table.formula = trace.parameters[i].name + ": " + table.formula;
        write_stage(table, options, out);
    }
}

// --tidy: one line per number of a matrix, `stage,head,row,col,row_token,col_token,value,masked`.
// Rows and columns count from 0, as JSON's arrays do; the value is exact (JSON's numbers) and
// empty where the mask hides the entry; head is empty for what belongs to the run as a whole.
void write_tidy_matrix(std::string_view name, int head, const Stage& stage, Dtype dtype, std::ostream& out) {
    const std::string prefix = csv_text(name) + ',' + (head > 0 ? std::to_string(head) : std::string()) + ',';
    std::string line;
    for (Eigen::Index r = 0; r < stage.row_count(); ++r) {
        const std::string row_label = csv_text(stage.rows[static_cast<std::size_t>(r)]);
        for (Eigen::Index c = 0; c < stage.col_count(); ++c) {
            line = fmt::format("{}{},{},{},{},", prefix, r, c, row_label, csv_text(stage.cols[static_cast<std::size_t>(c)]));
            const double value = stage.data(r, c);
            const bool masked = stage.is_masked(r, c);
            const bool fits = std::isfinite(value) &&
                              (dtype == Dtype::float64 || std::fabs(value) <= std::numeric_limits<float>::max());
            if (!masked && fits) append_exact(line, value, dtype);
            line += masked ? ",true\n" : ",false\n";
            out << line;
        }
    }
}

void write_tidy(const Trace& trace, const RenderOptions& options, std::ostream& out) {
    out << "stage,head,row,col,row_token,col_token,value,masked\n";
    for (const Shown& item : shown_stages(trace, options)) {
        if (!item.stage) {  // the parameters: each matrix under its own name, exact as given
            for (const Parameter& p : trace.parameters) write_tidy_matrix(p.name, 0, parameter_table(p), Dtype::float64, out);
            continue;
        }
        if (item.stage->applied) write_tidy_matrix(item.stage->name(), item.stage->head, *item.stage, trace.dtype, out);
    }
}

class CsvRenderer final : public TextRenderer, public ShowsGradients {
public:
    void gradients(const StreamGradients& g, const RenderOptions& options, std::ostream& out) const override {
        write_gradients_csv(g, options, out);
    }

public:
    // Measured on the project's machine, one thread: a full trace of 1000 tokens took 265 ns of
    // CPU time a number, a decode 1.5 µs a line (one per step, head and cached key), similarity
    // 700 ns a number; the rates leave a quarter to a third more. Each cell is held as a string.
    RenderCost cost(const RenderOptions& options) const override {
        RenderCost c;
        c.cell_bytes = cell_string_bytes(options.digits);
        c.seconds_per_number = 350e-9;
        c.decode = DecodeLayout::cache_lines;
        c.decode_seconds_per_number = 350e-9;
        c.decode_seconds_per_line = 2.5e-6;
        c.similarity_pair_bytes = similarity_pair_bytes(options.digits);
        c.similarity_number_chars = options.digits + 8;
        c.similarity_seconds_per_number = 0.9e-6;
        return c;
    }

    void trace(const Trace& trace, const RenderOptions& options, std::ostream& out) const override {
        if (options.tidy) return write_tidy(trace, options, out);
        bool first = true;
        for (const Shown& item : shown_stages(trace, options)) {
            if (!first) out << '\n';
            first = false;
            if (!item.stage) write_parameters(trace, options, out);
            else write_stage(*item.stage, options, out);
        }
    }

    // One row per query: index, token, max_weight, entropy, then key/weight pairs; with several
    // heads a first column says the head, and each head's rows follow the last's.
    void summary(const Summary& s, const RenderOptions& options, std::ostream& out) const override {
        const bool heads = s.per_head.front().head > 0;
        out << (heads ? "head,index,token,max_weight,entropy" : "index,token,max_weight,entropy");
        for (std::size_t t = 1; t <= s.top; ++t) out << fmt::format(",key{},weight{}", t, t);
        out << '\n';
        for (const HeadSummary& h : s.per_head)
            for (std::size_t i = 0; i < h.queries.size(); ++i) {
                const QuerySummary& q = h.queries[i];
                if (heads) out << h.head << ',';
                out << fmt::format("{},{},{},{}", i, csv_text(s.tokens[i]), format_significant(q.max_weight, options.digits),
                                   format_fixed(q.entropy, options.digits));
                const std::vector<ShownKey> top = shown_top(q, options.digits);
                for (std::size_t t = 0; t < s.top; ++t)
                    if (t < top.size()) out << ',' << csv_text(s.tokens[top[t].index]) << ',' << top[t].weight;
                    else out << ",,";
                out << '\n';
            }
    }

    // Three tables, an empty line between them: a row per (step, head, cached key) with its
    // score, scaled score and weight; a row per (step, head) with its context; a row per way
    // of sharing key/value heads with the cache's bytes.
    void decode(const Decode& d, const RenderOptions& options, std::ostream& out) const override {
        const auto number = [&](double v) { return format_fixed(v, options.digits); };
        out << "position,token,head,kv_head,key_position,key,score,scaled,weight\n";
        for (const DecodeStep& s : d.steps)
            for (const DecodeHead& h : s.heads)
                for (std::size_t j = 0; j < h.scores.size(); ++j)
                    out << fmt::format("{},{},{},{},{},{},{},{},{}\n", s.position, csv_text(s.token), h.head, h.kv_head,
                                       j + 1, csv_text(d.tokens[j]), number(h.scores[j]), number(h.scaled[j]),
                                       number(h.weights[j]));
        out << "\nposition,token,head";
        for (std::int64_t c = 1; c <= d.d_v; ++c) out << ",z" << c;
        out << '\n';
        for (const DecodeStep& s : d.steps)
            for (const DecodeHead& h : s.heads) {
                out << fmt::format("{},{},{}", s.position, csv_text(s.token), h.head);
                for (const double z : h.context) out << ',' << number(z);
                out << '\n';
            }
        out << "\nlayout,kv_heads,numbers_per_token,bytes_per_token,tokens,bytes\n";
        for (const KvFootprint& f : d.footprint)
            out << fmt::format("{},{},{},{},{},{}\n", f.layout, f.kv_heads, f.numbers_per_token, f.bytes_per_token,
                               d.context_tokens, f.bytes);
    }

    // The report's tables only.
    void check(const Trace&, const CheckReport& report, const RenderOptions&, std::ostream& out) const override {
        write_row(out, "check", {"result", "measured"});
        for (const auto& c : report.checks) write_row(out, c.name, {"ok", c.measured});
        for (const auto& w : report.warnings) write_row(out, "warning", {"warning", w});
    }

    void report(const Report& report, const RenderOptions& options, std::ostream& out) const override {
        for (std::size_t i = 0; i < report.tables.size(); ++i) {
            if (i > 0) out << '\n';
            write_stage(report.tables[i], options, out);
        }
    }
};

}  // namespace

std::string csv_field(std::string_view text) { return csv_text(text); }

void write_csv_table(const Stage& stage, const RenderOptions& options, std::ostream& out) {
    const StageText text = stage_text(stage, options.digits);
    write_row(out, "row", text.header);
    for (std::size_t r = 0; r < text.rows.size(); ++r) write_cells(out, text, r);
}

const Renderer& csv_renderer() {
    static const CsvRenderer renderer;
    return renderer;
}

}  // namespace attntrace
