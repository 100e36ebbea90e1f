// The CSV format (docs/output-formats.md): one block per stage, blocks separated by an empty
// line. A block: `stage,NAME`, `formula,…`, `applied,true|false[,reason]`, then for an applied
// stage a header row (`row`, then the column labels) and one row per query. Numbers are rounded
// to --digits; a masked score is -inf. Fields are quoted as RFC 4180 says; lines end in \n.
#include "render/cells.hpp"
#include "render/render.hpp"
#include "render/stage_writers.hpp"

#include <ostream>

namespace attntrace {
namespace {

// Quoted as RFC 4180 says when it holds a comma, a quote or a line break.
std::string quoted(std::string_view text) {
    if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
    std::string out = "\"";
    for (const char c : text) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + '"';
}

}  // namespace

std::string csv_text(std::string_view text) {
    if (text.empty() || std::string_view("=+-@\t\r").find(text.front()) == std::string_view::npos) return quoted(text);
    std::string prefixed(1, '\'');
    prefixed.append(text);
    return quoted(prefixed);
}

namespace {

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

}  // namespace

void write_stage_csv(const Stage& stage, const RenderOptions& options, std::ostream& out) {
    write_row(out, "stage", {stage.name});
    write_row(out, "formula", {stage.formula});
    if (!stage.applied) {
        write_row(out, "applied", {"false", stage.reason});
        return;
    }
    write_row(out, "applied", {"true"});
    const StageText text = stage_text(stage, options.digits);
    write_row(out, "row", text.header);
    for (std::size_t r = 0; r < text.rows.size(); ++r) write_cells(out, text, r);
}

void render_csv(const Trace& trace, const RenderOptions& options, std::ostream& out) {
    bool first = true;
    for (const Stage* stage : selected_stages(trace, options)) {
        if (!first) out << '\n';
        first = false;
        write_stage_csv(*stage, options, out);
    }
}

}  // namespace attntrace
