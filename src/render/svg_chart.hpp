// Line charts for the SVG pictures of attntrace rnn (influence against distance) and train (the
// curve against steps): a panel with its frame, grid, ticks and labels, a line per series, and
// a legend to its right.
#pragma once

#include "render/svg_document.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace attntrace::svg {

struct Series {
    std::string name;    // in the legend
    std::string colour;  // "#c0392b"
    std::vector<std::pair<double, double>> points;  // (x, y); on a logarithmic axis y ≤ 0 is left out
};

struct Panel {
    double left = 70, top = 56, width = 520, height = 240;  // the plot area, px
    std::string x_label, y_label;
    bool log_y = false;  // decades 1e−k … 1e+k
    std::optional<std::pair<double, double>> y_range;  // a linear axis's range (absent: the data's)
};

// The width of the legend to the right of a panel, px.
constexpr double legend_width = 190;

void append_panel(Buffer& out, const Panel& panel, const std::vector<Series>& series);

}  // namespace attntrace::svg
