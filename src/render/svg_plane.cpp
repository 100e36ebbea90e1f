// The SVG picture of `similarity --svg`: each word's vector as an arrow from the origin,
// labelled with the word, on axes of one scale (so that angles are drawn true). Positions are
// computed in the plot's own frame (its top-left corner at 0, 0, y down) and the plot is then
// moved below the heading and clear of everything that sticks out of it.
#include "render/svg.hpp"

#include "render/number.hpp"
#include "render/svg_document.hpp"
#include "render/text.hpp"
#include "util/format.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

namespace attntrace {
namespace {

using namespace svg;  // the helpers both pictures share

// Sizes in px.
constexpr double line_font = 12;  // the lines under the title
constexpr double axis_font = 13;
constexpr double tick_font = 11;
constexpr double word_font = 12;
constexpr double plot_side = 440;  // the longer side of the data's box
constexpr double tick_length = 4;
constexpr double head_length = 9;  // of an arrowhead
constexpr double head_half_width = 3.5;
constexpr double word_gap = 5;  // between a tip and its label
constexpr int max_placement_tries = 9;
constexpr std::size_t max_placed_words = 400;  // beyond, labels go where they fall
constexpr std::size_t max_label_columns = 32;
constexpr std::size_t max_terms = 5;
constexpr double min_text_width = 460;  // the heading's sentences wrap at the plot's width, or this  // of an axis's formula in the input's dimensions
constexpr std::string_view arrow_colour = "#2171b5";

struct Point {
    double x = 0, y = 0;
};

// The box a label's glyphs take, for telling whether two overlap.
struct Box {
    double left = 0, top = 0, right = 0, bottom = 0;
    bool overlaps(const Box& o) const { return left < o.right && o.left < right && top < o.bottom && o.top < bottom; }
};

struct Label {
    std::string text;
    Point at;                // the baseline's anchor
    std::string_view anchor;  // start, middle or end
    Box box;
};

Box box_of(const Label& l) {
    const double w = text_width(l.text, word_font);
    const double left = l.anchor == "start" ? l.at.x : l.anchor == "end" ? l.at.x - w : l.at.x - w / 2;
    return {left, l.at.y - 0.8 * word_font, left + w, l.at.y + 0.25 * word_font};
}

// A share as a percentage that does not round to 100% or 0% unless it is that: 87%, 99.96%.
std::string percent_text(double share) {
    if (share >= 1 - 1e-12) return "100%";
    for (int digits = 0; digits < 12; ++digits) {
        const std::string text = fmt::format("{:.{}f}", 100 * share, digits);
        if (text != fmt::format("{:.{}f}", 100.0, digits) && text.find_first_not_of("0.") != std::string::npos)
            return text + "%";
    }
    return fmt::format("{:.3g}%", 100 * share);
}

// "PC1 ≈ 0.66·x1 + 0.52·x2 − 0.10·x5 + …": the terms that show at two decimals, the largest
// few, in the order of the dimensions.
std::string axis_formula(const std::string& name, const Vector& direction) {
    std::vector<Eigen::Index> terms;
    for (Eigen::Index k = 0; k < direction.size(); ++k)
        if (std::abs(direction(k)) >= 0.005) terms.push_back(k);
    std::stable_sort(terms.begin(), terms.end(),
                     [&](Eigen::Index a, Eigen::Index b) { return std::abs(direction(a)) > std::abs(direction(b)); });
    if (terms.size() > max_terms) terms.resize(max_terms);
    std::sort(terms.begin(), terms.end());
    std::string text = name + " ≈";
    for (std::size_t i = 0; i < terms.size(); ++i) {
        const double c = direction(terms[i]);
        text += fmt::format(" {}{}·x{}", i == 0 ? (c < 0 ? "−" : "") : (c < 0 ? "− " : "+ "), format_fixed(std::abs(c), 2),
                            terms[i] + 1);
    }
    const auto nonzero = static_cast<std::size_t>((direction.array() != 0).count());
    if (terms.size() < nonzero) text += terms.empty() ? " …" : " + …";
    return text;
}

// The sentences under the title, before they are wrapped.
std::vector<std::string> heading_sentences(const WordPlane& plane) {
    if (plane.dimension == 1)
        return {"Each word's number as an arrow from 0 along the one axis, x1. Arrows that point the same way have "
                "cosine similarity 1, opposite ways −1."};
    if (!plane.projected())
        return {"Each word's vector as an arrow from the origin, drawn as it is: x1 across, x2 up. The angle between two "
                "arrows is the angle whose cosine the similarity table gives."};
    std::vector<std::string> sentences{fmt::format(
        "The {}-d vectors projected onto the plane of their first two principal directions, PC1 and PC2, found without "
        "centring the vectors, so that the origin stays put: the plane keeps {} of the {} squared length.",
        plane.dimension, percent_text(plane.kept), plane.words.size() == 1 ? "vector's" : "vectors' total")};
    if (plane.kept < 1 - 1e-12)
        sentences.push_back("Angles between the arrows are those of the projections; the cosine table has the vectors' own.");
    for (Eigen::Index a = 0; a < 2; ++a)
        sentences.push_back(axis_formula(plane.axes[static_cast<std::size_t>(a)], plane.directions.row(a)));
    return sentences;
}

// `text` broken at spaces into lines of at most `width` px (a longer word gets a line of its own).
std::vector<std::string> wrapped(const std::string& text, double width, double font) {
    std::vector<std::string> lines;
    std::string line;
    std::size_t from = 0;
    while (from <= text.size()) {
        const std::size_t space = std::min(text.find(' ', from), text.size());
        const std::string word = text.substr(from, space - from);
        const std::string longer = line.empty() ? word : line + " " + word;
        if (!line.empty() && text_width(longer, font) > width) {
            lines.push_back(line);
            line = word;
        } else {
            line = longer;
        }
        from = space + 1;
    }
    if (!line.empty()) lines.push_back(line);
    return lines;
}

// Tick marks at multiples of one step of 1, 2 or 5 × 10^e, in the data's own units.
struct Ticks {
    double step = 0;  // in units of the scale (see Frame)
    int exponent = 0;
    int mantissa = 1;
    long first = 0, last = -1;  // the multiples of step inside the box

    std::string label(long k) const {
        const long units = k * mantissa;
        if (units == 0) return "0";
        if (exponent >= 0 && exponent <= 6) return fmt::format("{}", units * static_cast<long>(std::pow(10, exponent)));
        if (exponent < 0 && exponent >= -6) return format_fixed(static_cast<double>(units) * std::pow(10.0, exponent), -exponent);
        // Scientific: 15 units of 1e149 read 1.5e150.
        long digits = std::abs(units);
        int power = exponent;
        while (digits % 10 == 0) digits /= 10, ++power;
        const std::string all = std::to_string(digits);
        const std::string_view rest = std::string_view(all).substr(1);
        return fmt::format("{}{}{}{}e{}", units < 0 ? "-" : "", all.front(), rest.empty() ? "" : ".", rest,
                           power + static_cast<int>(rest.size()));
    }
};

// Where the data goes: coordinates are divided by `unit` (the largest magnitude) first, so that
// vectors of any size map to pixels without overflow; px = (value/unit − low)·scale.
struct Frame {
    double unit = 1;
    double low_x = 0, high_x = 0, low_y = 0, high_y = 0;  // the box, in units
    double scale = 1;                                        // px per unit
    double width = 0, height = 0;
    Ticks ticks;
    bool vertical = true;  // a y axis (two dimensions)

    Point at(double x, double y) const {
        return {(x / unit - low_x) * scale, (high_y - y / unit) * scale};
    }
};

// Ticks about a fifth of the data's `span` apart (in units of `unit`), from `low` to `high`.
Ticks ticks_for(double span, double unit, double low, double high) {
    Ticks t;
    // The step in the data's units is about span·unit / 5; its exponent from logarithms, so
    // that neither a huge nor a tiny unit overflows.
    const double log_step = std::log10(span / 5) + std::log10(unit);
    t.exponent = static_cast<int>(std::floor(log_step));
    const double rest = std::pow(10.0, log_step - t.exponent);
    t.mantissa = rest < 1.5 ? 1 : rest < 3.5 ? 2 : rest < 7.5 ? 5 : 10;
    if (t.mantissa == 10) t.mantissa = 1, ++t.exponent;
    t.step = t.mantissa * std::pow(10.0, t.exponent - std::log10(unit));
    if (!(t.step > 0) || !std::isfinite(t.step)) return t;  // no ticks
    t.first = static_cast<long>(std::ceil(low / t.step));
    t.last = static_cast<long>(std::floor(high / t.step));
    return t;
}

Frame frame_of(const WordPlane& plane) {
    Frame f;
    f.vertical = plane.points.cols() == 2;
    const double largest = plane.points.size() == 0 ? 0 : plane.points.cwiseAbs().maxCoeff();
    f.unit = largest > 0 ? largest : 1;
    for (Eigen::Index i = 0; i < plane.points.rows(); ++i) {
        const double x = plane.points(i, 0) / f.unit;
        f.low_x = std::min(f.low_x, x), f.high_x = std::max(f.high_x, x);
        if (f.vertical) {
            const double y = plane.points(i, 1) / f.unit;
            f.low_y = std::min(f.low_y, y), f.high_y = std::max(f.high_y, y);
        }
    }
    const double span = std::max({f.high_x - f.low_x, f.high_y - f.low_y, 1e-3});
    const double pad = 0.08 * span;
    f.low_x -= pad, f.high_x += pad, f.low_y -= pad, f.high_y += pad;
    f.ticks = ticks_for(span, f.unit, std::min(f.low_x, f.low_y), std::max(f.high_x, f.high_y));
    f.scale = plot_side / (span + 2 * pad);
    f.width = (f.high_x - f.low_x) * f.scale;
    f.height = (f.high_y - f.low_y) * f.scale;
    return f;
}

// Labels at the tips, beyond them along the arrow (in one dimension, above them); a label
// that would cover an earlier one moves up or down a line at a time, a few times at most.
std::vector<Label> place_labels(const WordPlane& plane, const Frame& f, const std::vector<Point>& tips, Point origin) {
    std::vector<Label> labels;
    const double line = word_font + 2;
    for (std::size_t i = 0; i < tips.size(); ++i) {
        Label l;
        l.text = fit_width(plane.words[i], max_label_columns);
        Point u{0, -1};
        const double dx = tips[i].x - origin.x, dy = tips[i].y - origin.y, length = std::hypot(dx, dy);
        if (f.vertical && length > 0) u = {dx / length, dy / length};
        const Point a{tips[i].x + word_gap * u.x, tips[i].y + word_gap * u.y};
        l.anchor = u.x > 0.3 ? "start" : u.x < -0.3 ? "end" : "middle";
        l.at = {a.x, u.y < -0.3 ? a.y : u.y > 0.3 ? a.y + 0.8 * word_font : a.y + 0.35 * word_font};
        const Point first = l.at;
        for (int attempt = 0; attempt < max_placement_tries; ++attempt) {
            // 0, 1, −1, 2, −2 … lines away from the origin first; in one dimension only upwards.
            const int away = u.y > 0 ? 1 : -1;
            const int step = f.vertical ? (attempt + 1) / 2 * (attempt % 2 ? away : -away) : -attempt;
            l.at = {first.x, first.y + step * line};
            l.box = box_of(l);
            if (i >= max_placed_words ||
                std::none_of(labels.begin(), labels.end(), [&](const Label& o) { return o.box.overlaps(l.box); }))
                break;
            if (attempt + 1 == max_placement_tries) l.at = first, l.box = box_of(l);
        }
        labels.push_back(std::move(l));
    }
    return labels;
}

// Every position of the picture: the plot's content in its own frame, and where the frame
// goes once the heading and everything sticking out of the frame have room.
struct Layout {
    std::vector<std::string> lines;  // under the title
    Frame frame;
    Point origin;
    std::vector<Point> tips;
    std::vector<Label> labels;
    double y_tick_room = 0;  // the widest label of the vertical axis
    double plot_x = 0, plot_y = 0;  // the frame's top-left corner in the picture
    double width = 0, height = 0;

    double x_title_y() const { return frame.height + tick_length + tick_font + 6 + axis_font; }
    double y_title_x() const { return -tick_length - 3 - y_tick_room - 6; }
};

bool in_range(double v, double low, double high) { return v >= low && v <= high; }

Layout plan(const WordPlane& plane, const std::string& title) {
    Layout l;
    l.frame = frame_of(plane);
    const Frame& f = l.frame;
    l.origin = f.at(0, 0);
    for (Eigen::Index i = 0; i < plane.points.rows(); ++i)
        l.tips.push_back(f.at(plane.points(i, 0), f.vertical ? plane.points(i, 1) : 0.0));
    l.labels = place_labels(plane, f, l.tips, l.origin);
    for (long k = f.ticks.first; k <= f.ticks.last; ++k)
        if (f.vertical && in_range(static_cast<double>(k) * f.ticks.step, f.low_y, f.high_y))
            l.y_tick_room = std::max(l.y_tick_room, text_width(f.ticks.label(k), tick_font));

    // What sticks out of the frame on each side: tick labels, axis titles, word labels.
    double left = f.vertical ? -(l.y_title_x() - axis_font) : 0, top = 0, right = 0;
    const double bottom = l.x_title_y() + 0.3 * axis_font - f.height;
    for (long k = f.ticks.first; k <= f.ticks.last; ++k) {
        const double v = static_cast<double>(k) * f.ticks.step;
        if (!in_range(v, f.low_x, f.high_x)) continue;
        const double half = text_width(f.ticks.label(k), tick_font) / 2, x = (v - f.low_x) * f.scale;
        left = std::max(left, half - x);
        right = std::max(right, x + half - f.width);
    }
    for (const Label& label : l.labels) {
        left = std::max(left, -label.box.left);
        top = std::max(top, -label.box.top);
        right = std::max(right, label.box.right - f.width);
    }
    double bottom_words = bottom;
    for (const Label& label : l.labels) bottom_words = std::max(bottom_words, label.box.bottom - f.height);

    // The sentences are wrapped to the width of the plot or the title, or a readable minimum.
    double heading_width = svg::bold_factor * text_width(title, title_font);
    const double text_room = std::max({left + f.width + right, heading_width, min_text_width});
    for (const auto& sentence : heading_sentences(plane))
        for (auto& line : wrapped(sentence, text_room, line_font)) l.lines.push_back(std::move(line));
    for (const auto& line : l.lines) heading_width = std::max(heading_width, text_width(line, line_font));
    const double heading_bottom = margin + title_font + 1.4 * line_font * static_cast<double>(l.lines.size());
    l.plot_x = margin + left;
    l.plot_y = heading_bottom + 16 + top;
    l.width = std::ceil(std::max(l.plot_x + f.width + right, margin + heading_width) + margin);
    l.height = std::ceil(l.plot_y + f.height + bottom_words + margin);
    return l;
}

void write_heading(Buffer& out, const std::string& title, const Layout& l) {
    svg::append_title(out, title);
    double y = margin + title_font;
    fmt::format_to(std::back_inserter(out), "<g class=\"heading\" font-size=\"{}\" fill=\"#555555\">\n", line_font);
    for (const auto& line : l.lines) {
        y += 1.4 * line_font;
        svg::append_text(out, fmt::format("x=\"{}\" y=\"{}\"", snap(margin), snap(y)), line);
    }
    out.append(std::string_view("</g>\n"));
}

// The grid at the ticks, the axes through the origin, the frame, the ticks and their labels,
// and the axes' names.
void write_axes(Buffer& out, const WordPlane& plane, const Layout& l) {
    const Frame& f = l.frame;
    const auto x_of = [&](double v) { return (v - f.low_x) * f.scale; };
    const auto y_of = [&](double v) { return (f.high_y - v) * f.scale; };
    Buffer grid, ticks;
    for (long k = f.ticks.first; k <= f.ticks.last; ++k) {
        const double v = static_cast<double>(k) * f.ticks.step;
        const std::string label = f.ticks.label(k);
        if (in_range(v, f.low_x, f.high_x)) {
            fmt::format_to(std::back_inserter(grid), "<line x1=\"{0}\" y1=\"0\" x2=\"{0}\" y2=\"{1}\"/>\n", snap(x_of(v)),
                           snap(f.height));
            fmt::format_to(std::back_inserter(ticks),
                           "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>"
                           "<text x=\"{0}\" y=\"{3}\" text-anchor=\"middle\" stroke=\"none\">{4}</text>\n",
                           snap(x_of(v)), snap(f.height), snap(f.height + tick_length),
                           snap(f.height + tick_length + tick_font), label);
        }
        if (f.vertical && in_range(v, f.low_y, f.high_y)) {
            fmt::format_to(std::back_inserter(grid), "<line x1=\"0\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\"/>\n", snap(y_of(v)),
                           snap(f.width));
            fmt::format_to(std::back_inserter(ticks),
                           "<line x1=\"{0}\" y1=\"{1}\" x2=\"0\" y2=\"{1}\"/>"
                           "<text x=\"{2}\" y=\"{3}\" text-anchor=\"end\" stroke=\"none\">{4}</text>\n",
                           snap(-tick_length), snap(y_of(v)), snap(-tick_length - 3), snap(y_of(v) + 0.35 * tick_font),
                           label);
        }
    }
    out.append(std::string_view("<g stroke=\"#eeeeee\">\n"));
    out.append(grid);
    out.append(std::string_view("</g>\n<g stroke=\"#999999\">\n"));
    fmt::format_to(std::back_inserter(out), "<line class=\"axis\" x1=\"0\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\"/>\n",
                   snap(l.origin.y), snap(f.width));
    if (f.vertical)
        fmt::format_to(std::back_inserter(out), "<line class=\"axis\" x1=\"{0}\" y1=\"0\" x2=\"{0}\" y2=\"{1}\"/>\n",
                       snap(l.origin.x), snap(f.height));
    fmt::format_to(std::back_inserter(out), "<rect width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#bbbbbb\"/>\n</g>\n",
                   snap(f.width), snap(f.height));
    fmt::format_to(std::back_inserter(out), "<g font-size=\"{}\" fill=\"#555555\" stroke=\"#555555\">\n", tick_font);
    out.append(ticks);
    out.append(std::string_view("</g>\n"));

    fmt::format_to(std::back_inserter(out),
                   "<g font-size=\"{}\" font-weight=\"bold\" fill=\"#555555\" text-anchor=\"middle\">\n", axis_font);
    svg::append_text(out, fmt::format("x=\"{}\" y=\"{}\"", snap(f.width / 2), snap(l.x_title_y())), plane.axes[0]);
    if (f.vertical)
        svg::append_text(out,
                         fmt::format("transform=\"translate({} {}) rotate(-90)\"", snap(l.y_title_x()), snap(f.height / 2)),
                         plane.axes[1]);
    out.append(std::string_view("</g>\n"));
}

// "apple: x1 = 0.9, x2 = 0.7", or in the plane "apple: PC1 = 1.14, PC2 = 0.0312; the plane
// keeps 99.7% of its squared length".
void append_tooltip(Buffer& out, const WordPlane& plane, std::size_t i) {
    const auto row = static_cast<Eigen::Index>(i);
    append_escaped(out, plane.words[i]);
    out.append(std::string_view(": "));
    for (Eigen::Index a = 0; a < plane.points.cols(); ++a) {
        fmt::format_to(std::back_inserter(out), "{}{} = ", a == 0 ? "" : ", ", plane.axes[static_cast<std::size_t>(a)]);
        if (plane.projected()) out.append(format_significant(plane.points(row, a), 4));
        else append_exact(out, plane.points(row, a), Dtype::float64);
    }
    if (plane.projected())
        fmt::format_to(std::back_inserter(out), "; the plane keeps {} of its squared length", percent_text(plane.kept_each[i]));
}

// One group per word: its tooltip, the shaft from the origin and the head at its tip (a dot
// where the arrow is too short to draw); then the words.
void write_arrows(Buffer& out, const WordPlane& plane, const Layout& l) {
    fmt::format_to(std::back_inserter(out), "<g stroke=\"{0}\" fill=\"{0}\" stroke-width=\"1.6\">\n", arrow_colour);
    for (std::size_t i = 0; i < l.tips.size(); ++i) {
        const Point o = l.origin, t = l.tips[i];
        const double length = std::hypot(t.x - o.x, t.y - o.y);
        out.append(std::string_view("<g class=\"arrow\"><title>"));
        append_tooltip(out, plane, i);
        out.append(std::string_view("</title>"));
        if (length < 1) {
            fmt::format_to(std::back_inserter(out), "<circle cx=\"{}\" cy=\"{}\" r=\"2.5\"/>", snap(o.x), snap(o.y));
        } else {
            const Point u{(t.x - o.x) / length, (t.y - o.y) / length};
            const double head = std::min(head_length, length), half = head_half_width * head / head_length;
            const Point base{t.x - head * u.x, t.y - head * u.y};
            fmt::format_to(std::back_inserter(out),
                           "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>"
                           "<polygon points=\"{},{} {},{} {},{}\" stroke-width=\"0.5\"/>",
                           snap(o.x), snap(o.y), snap(base.x), snap(base.y), snap(t.x), snap(t.y),
                           snap(base.x - half * u.y), snap(base.y + half * u.x), snap(base.x + half * u.y),
                           snap(base.y - half * u.x));
        }
        out.append(std::string_view("</g>\n"));
    }
    out.append(std::string_view("</g>\n"));
    fmt::format_to(std::back_inserter(out), "<g font-size=\"{}\">\n", word_font);
    for (const Label& label : l.labels)
        svg::append_text(out,
                         fmt::format("class=\"word\" x=\"{}\" y=\"{}\" text-anchor=\"{}\"", snap(label.at.x),
                                     snap(label.at.y), label.anchor),
                         label.text);
    out.append(std::string_view("</g>\n"));
}

}  // namespace

void render_svg(const WordPlane& plane, std::ostream& out) {
    const std::size_t n = plane.words.size();
    const std::string title = fmt::format("Word vectors as arrows · {} word{} · d = {} · {}", n, n == 1 ? "" : "s",
                                          plane.dimension, plane.origin);
    const Layout layout = plan(plane, title);
    Buffer svg;
    svg::open_document(svg, layout.width, layout.height);
    write_heading(svg, title, layout);
    fmt::format_to(std::back_inserter(svg), "<g transform=\"translate({} {})\">\n", snap(layout.plot_x), snap(layout.plot_y));
    write_axes(svg, plane, layout);
    write_arrows(svg, plane, layout);
    svg.append(std::string_view("</g>\n"));
    svg::close_document(svg, out);
}

}  // namespace attntrace
