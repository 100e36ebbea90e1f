#include "render/cells.hpp"

#include "render/number.hpp"

#include <fmt/format.h>

namespace attntrace {
namespace {

// A masked score is −∞; a masked weight is exactly 0, shown as "0" rather than rounded. A
// quiz's hidden entry is "?".
std::string cell(const Stage& stage, Eigen::Index r, Eigen::Index c, int digits) {
    if (stage.is_hidden(r, c)) return "?";
    if (stage.is_masked(r, c) && stage.data(r, c) == 0) return "0";
    return format_fixed(stage.data(r, c), digits);
}

}  // namespace

StageText stage_text(const Stage& stage, int digits) {
    StageText text;
    text.header = stage.cols;
    text.row_labels = stage.rows;
    text.data_columns = stage.cols.size();
    if (stage.row_sums) text.header.push_back("Σ");
    if (!stage.strongest.empty()) text.header.push_back("strongest");
    for (Eigen::Index r = 0; r < stage.row_count(); ++r) {
        std::vector<std::string> row;
        for (Eigen::Index c = 0; c < stage.col_count(); ++c) row.push_back(cell(stage, r, c, digits));
        const bool hidden = stage.row_hidden(r);  // its sum and strongest key would give it away
        if (stage.row_sums) row.push_back(hidden ? "?" : format_fixed((*stage.row_sums)(r), digits));
        if (!stage.strongest.empty() && hidden) {
            row.push_back("?");
        } else if (!stage.strongest.empty()) {
            const Eigen::Index column = stage.strongest[static_cast<std::size_t>(r)];
            const Eigen::Index tied = stage.tied.empty() ? 1 : stage.tied[static_cast<std::size_t>(r)];
            row.push_back(column < 0   ? "—"  // all masked
                          : tied > 1 ? fmt::format("{} ({} tied)", stage.cols[static_cast<std::size_t>(column)], tied)
                                     : stage.cols[static_cast<std::size_t>(column)]);
        }
        text.rows.push_back(std::move(row));
    }
    return text;
}

}  // namespace attntrace
