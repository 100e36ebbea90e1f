// The terminal format: per stage a heading and an aligned table with token labels.
#include "render/number.hpp"
#include "render/render.hpp"
#include "render/text.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace attntrace {
namespace {

constexpr std::size_t max_label_width = 24;
constexpr std::string_view gap = "  ";
constexpr std::string_view ellipsis = "…";

struct Column {
    std::string header;
    std::vector<std::string> cells;
    bool align_left = false;
    std::size_t width = 0;

    void measure() {
        width = display_width(header);
        for (const auto& cell : cells) width = std::max(width, display_width(cell));
    }
    std::string pad(std::string_view text) const {
        return align_left ? pad_right(text, width) : pad_left(text, width);
    }
};

// Which data columns fit beside the fixed ones: all, or the first `left` and the last
// columns from `right` on, with an ellipsis column between them.
struct ColumnWindow {
    std::size_t left = 0;
    std::size_t right = 0;
    bool elided() const { return left < right; }
};

ColumnWindow fit_columns(const std::vector<Column>& data, std::size_t fixed_width, std::size_t limit) {
    std::size_t total = fixed_width;
    for (const auto& column : data) total += gap.size() + column.width;
    if (limit == 0 || total <= limit) return {data.size(), data.size()};

    ColumnWindow window{0, data.size()};
    std::size_t used = fixed_width + gap.size() + 1;  // the ellipsis column
    for (bool take_left = true; window.left < window.right; take_left = !take_left) {
        const std::size_t next = take_left ? window.left : window.right - 1;
        const std::size_t need = gap.size() + data[next].width;
        const bool kept_one = window.left > 0 || window.right < data.size();
        if (used + need > limit && kept_one) break;
        used += need;
        if (take_left) ++window.left;
        else --window.right;
    }
    return window;
}

// A masked score is −∞; a masked weight is exactly 0, shown as "0" rather than rounded.
std::string masked_cell(const Stage& stage, Eigen::Index r, Eigen::Index c, int digits) {
    if (stage.is_masked(r, c) && stage.data(r, c) == 0) return "0";
    return format_fixed(stage.data(r, c), digits);
}

std::vector<std::string> fitted_labels(const std::vector<std::string>& labels) {
    std::vector<std::string> out;
    for (const auto& label : labels) out.push_back(fit_width(label, max_label_width));
    return out;
}

void write_matrix(const Stage& stage, const RenderOptions& options, std::ostream& out) {
    const auto rows = fitted_labels(stage.rows);
    const auto cols = fitted_labels(stage.cols);

    Column labels{"", rows, true};
    std::vector<Column> data;
    for (Eigen::Index c = 0; c < stage.col_count(); ++c) {
        Column column{cols[static_cast<std::size_t>(c)], {}, false};
        for (Eigen::Index r = 0; r < stage.row_count(); ++r)
            column.cells.push_back(masked_cell(stage, r, c, options.digits));
        data.push_back(std::move(column));
    }
    // The weights stage adds each row's sum and the key it weighs most.
    std::vector<Column> extra;
    if (stage.row_sums) {
        Column sums{"Σ", {}, false};
        for (Eigen::Index r = 0; r < stage.row_count(); ++r)
            sums.cells.push_back(format_fixed((*stage.row_sums)(r), options.digits));
        extra.push_back(std::move(sums));
    }
    if (!stage.strongest.empty()) {
        Column strongest{"strongest", {}, true};
        for (const auto c : stage.strongest) strongest.cells.push_back(cols[static_cast<std::size_t>(c)]);
        extra.push_back(std::move(strongest));
    }
    labels.measure();
    for (auto& column : data) column.measure();
    std::size_t fixed = labels.width;
    for (auto& column : extra) {
        column.measure();
        fixed += gap.size() + column.width;
    }
    const ColumnWindow window = fit_columns(data, fixed, options.width);

    const auto write_row = [&](auto&& cell_of) {
        std::string line = labels.pad(cell_of(labels));
        for (std::size_t i = 0; i < data.size(); ++i) {
            if (i == window.left && window.elided()) {
                line += gap;
                line += ellipsis;
                i = window.right;
                if (i == data.size()) break;
            }
            line += gap;
            line += data[i].pad(cell_of(data[i]));
        }
        for (const auto& column : extra) {
            line += gap;
            line += column.pad(cell_of(column));
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out << line << '\n';
    };
    write_row([](const Column& column) -> const std::string& { return column.header; });
    for (std::size_t r = 0; r < rows.size(); ++r)
        write_row([r](const Column& column) -> const std::string& { return column.cells[r]; });
}

std::string dims_text(const Trace& trace) {
    std::string text;
    for (const auto& [name, value] : trace.dims) {
        if (!text.empty()) text += ", ";
        text += fmt::format("{} = {}", name, value);
    }
    return text;
}

void write_preamble(const Trace& trace, std::ostream& out) {
    const std::string tokens =
        trace.mode == Mode::bahdanau
            ? fmt::format("{} source → {} target tokens", trace.source_tokens.size(),
                          trace.target_tokens.size())
            : fmt::format("{} token{}", trace.tokens.size(), trace.tokens.size() == 1 ? "" : "s");
    const std::string mode = trace.mode == Mode::bahdanau
                                 ? fmt::format("bahdanau mode ({} score)", to_string(trace.score))
                                 : fmt::format("{} mode", to_string(trace.mode));
    out << fmt::format("attntrace · {} · {} · {} · {} · {}\n", mode, tokens, dims_text(trace),
                       to_string(trace.normalization), trace.origin);
    if (!trace.description.empty()) out << trace.description << '\n';
    for (const auto& note : trace.notes) out << "note: " << note << '\n';
    if (trace.weights == WeightsOrigin::generated)
        out << fmt::format("weights: generated from seed {} (splitmix64), not learned: the "
                           "pattern shows the mechanics, not meaning; give your own under "
                           "\"weights\"\n",
                           trace.seed);
    out << '\n';
}

}  // namespace

void render_table(const Trace& trace, const RenderOptions& options, std::ostream& out) {
    write_preamble(trace, out);
    bool first = true;
    for (const Stage* stage : selected_stages(trace, options)) {
        if (!first) out << '\n';
        first = false;
        out << fmt::format("{} · {}×{} · {}{}\n", stage->name, stage->row_count(),
                           stage->col_count(), stage->formula,
                           stage->applied ? "" : " · not applied");
        if (!stage->applied) {
            out << stage->reason << '\n';
            continue;
        }
        out << stage->title << '\n';
        write_matrix(*stage, options, out);
    }
}

}  // namespace attntrace
