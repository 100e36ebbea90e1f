#include "render/svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace attntrace::svg {
namespace {

void append_line(Buffer& out, double x1, double y1, double x2, double y2, std::string_view style) {
    fmt::format_to(std::back_inserter(out), "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" {}/>\n", snap(x1), snap(y1),
                   snap(x2), snap(y2), style);
}

// The y axis's range: decades on a logarithmic axis, the given or the data's range otherwise.
std::pair<double, double> y_extent(const Panel& p, const std::vector<Series>& series) {
    double lo = INFINITY, hi = -INFINITY;
    for (const Series& s : series)
        for (const auto& [x, y] : s.points)
            if (std::isfinite(y) && (!p.log_y || y > 0)) lo = std::min(lo, p.log_y ? std::log10(y) : y), hi = std::max(hi, p.log_y ? std::log10(y) : y);
    if (p.log_y) {
        if (!(lo <= hi)) return {-1, 0};
        return {std::floor(lo), std::max(std::floor(lo) + 1, std::ceil(hi))};
    }
    if (p.y_range) return *p.y_range;
    if (!(lo <= hi)) return {0, 1};
    return lo == hi ? std::pair{lo - 1, hi + 1} : std::pair{lo, hi};
}

}  // namespace

void append_panel(Buffer& out, const Panel& p, const std::vector<Series>& series) {
    double x_lo = INFINITY, x_hi = -INFINITY;
    for (const Series& s : series)
        for (const auto& point : s.points) x_lo = std::min(x_lo, point.first), x_hi = std::max(x_hi, point.first);
    if (!(x_lo < x_hi)) x_lo = std::isfinite(x_lo) ? x_lo - 1 : 0, x_hi = x_lo + 2;
    const std::pair<double, double> extent = y_extent(p, series);
    const double y_lo = extent.first, y_hi = extent.second;
    const auto x_of = [&](double x) { return p.left + (x - x_lo) / (x_hi - x_lo) * p.width; };
    const auto y_of = [&](double y) {
        const double v = p.log_y ? std::log10(y) : y;
        return p.top + p.height * (y_hi - v) / (y_hi - y_lo);
    };
    fmt::format_to(std::back_inserter(out),
                   "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999999\"/>\n", snap(p.left),
                   snap(p.top), snap(p.width), snap(p.height));
    // The grid: each decade, or five steps of a linear range.
    const int steps = p.log_y ? static_cast<int>(y_hi - y_lo) : 4;
    for (int k = 0; k <= steps; ++k) {
        const double v = y_lo + (y_hi - y_lo) * k / steps;
        const double y = p.top + p.height * (y_hi - v) / (y_hi - y_lo);
        append_line(out, p.left, y, p.left + p.width, y, "stroke=\"#dddddd\"");
        append_text(out, fmt::format("x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\"", snap(p.left - 6), snap(y + 4)),
                    p.log_y ? fmt::format("1e{}", static_cast<int>(v)) : fmt::format("{:g}", snap(v)));
    }
    const bool whole = x_hi - x_lo >= 4;  // steps and distances: ticks on whole numbers
    for (int k = 0; k <= 4; ++k) {
        double x = x_lo + (x_hi - x_lo) * k / 4;
        if (whole) x = std::round(x);
        append_text(out, fmt::format("x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\"", snap(x_of(x)),
                                     snap(p.top + p.height + 16)),
                    fmt::format("{:g}", std::round(x * 100) / 100));
    }
    append_text(out, fmt::format("x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\"", snap(p.left + p.width / 2),
                                 snap(p.top + p.height + 34)),
                p.x_label);
    append_text(out, fmt::format("x=\"{}\" y=\"{}\" font-size=\"12\"", snap(p.left), snap(p.top - 8)), p.y_label);
    for (std::size_t k = 0; k < series.size(); ++k) {
        const Series& s = series[k];
        out.append(std::string_view("<polyline fill=\"none\" stroke-width=\"2\" stroke=\""));
        out.append(s.colour);
        out.append(std::string_view("\" points=\""));
        for (const auto& [x, y] : s.points)
            if (std::isfinite(y) && (!p.log_y || y > 0)) fmt::format_to(std::back_inserter(out), "{},{} ", snap(x_of(x)), snap(y_of(y)));
        out.append(std::string_view("\"/>\n"));
        const double ly = p.top + 12 + 18 * static_cast<double>(k);
        append_line(out, p.left + p.width + 10, ly, p.left + p.width + 30, ly,
                    fmt::format("stroke-width=\"2\" stroke=\"{}\"", s.colour));
        append_text(out, fmt::format("x=\"{}\" y=\"{}\" font-size=\"11\"", snap(p.left + p.width + 34), snap(ly + 4)), s.name);
    }
}

}  // namespace attntrace::svg
