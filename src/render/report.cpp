#include "render/report.hpp"

#include "render/stage_writers.hpp"

namespace attntrace {

void render_report(const Report& report, const RenderOptions& options, std::ostream& out) {
    switch (options.format) {
    case Format::table:
        out << report.title << '\n';
        for (const auto& line : report.preamble) out << line << '\n';
        for (const auto& table : report.tables) {
            out << '\n';
            write_stage_table(table, options, out);
        }
        if (!report.footer.empty()) out << '\n';
        for (const auto& line : report.footer) out << line << '\n';
        return;
    case Format::markdown:
        out << "# " << markdown_cell(report.title) << "\n\n";
        for (const auto& line : report.preamble) out << markdown_cell(line) << "\n\n";
        for (const auto& table : report.tables) write_stage_markdown(table, options, {}, out);
        for (const auto& line : report.footer) out << "- " << markdown_cell(line) << '\n';
        return;
    case Format::csv:
        for (std::size_t i = 0; i < report.tables.size(); ++i) {
            if (i > 0) out << '\n';
            write_stage_csv(report.tables[i], options, out);
        }
        return;
    case Format::json:
        break;  // each command writes its own JSON schema
    }
}

}  // namespace attntrace
