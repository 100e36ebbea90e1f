// The SVG heatmap of one (query, key) stage: scores, scaled scores, masked scores or weights.
// Every position is computed here (render/svg_document.hpp says how text is measured).
#include "render/svg.hpp"

#include "attention/modes.hpp"
#include "render/number.hpp"
#include "render/reports.hpp"
#include "render/svg_document.hpp"
#include "render/text.hpp"
#include "util/format.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace attntrace {
namespace {

using namespace svg;  // the helpers both pictures share

// Sizes in px.
constexpr double subtitle_font = 12;
constexpr double axis_font = 13;
constexpr double max_label_font = 13;  // shrinks with the cells of large matrices
constexpr double value_font = 12;
constexpr double tick_font = 12;
constexpr double fixed_cell = 44;      // fits "-0.00" at value_font with room to spare
constexpr double value_padding = 8;    // a wider value widens the cells by this much beyond it
constexpr double min_cell = 8;
constexpr Eigen::Index max_numbered = 16;  // up to 16×16 cells print their value
// Beyond max_numbered rows or columns, the cells shrink to share out this side length.
constexpr double matrix_budget = fixed_cell * max_numbered;
constexpr std::size_t max_label_columns = 32;  // longer labels are cut; tooltips keep them whole
constexpr double label_gap = 6;                // between the labels and the matrix
constexpr double legend_gap = 24;              // between the matrix and the colour bar
constexpr double bar_width = 14;
constexpr double min_bar_height = 120;  // five tick labels need it beside a one-row matrix
constexpr double caption_gap = 10;      // between the tick labels and the bar's caption
constexpr int tick_count = 5;
constexpr double swatch = 14;  // the hatched square of the masked legend

// What a picture of each drawable stage calls things.
struct StagePicture {
    StageId id;
    std::string_view title;   // the heading's first words
    std::string_view noun;    // one entry of the matrix: "the row's largest weight"
    std::string_view masked;  // the legend of a hatched cell
};
constexpr std::array<StagePicture, 4> stage_pictures{{
    {StageId::scores, "Attention scores", "score", "masked"},
    {StageId::scaled, "Scaled scores", "scaled score", "masked"},
    {StageId::masked, "Masked scores", "score", "masked (score −∞)"},
    {StageId::weights, "Attention weights", "weight", "masked (weight 0)"},
}};

// A gradient of the backward pass (--svg-stage d_weights): signed, with no range of its own.
constexpr std::array<StagePicture, 4> gradient_pictures{{
    {StageId::scores, "Gradient of the scores", "dL/dS", "masked"},
    {StageId::scaled, "Gradient of the scaled scores", "dL/dS'", "masked"},
    {StageId::masked, "Gradient of the masked scores", "dL/dS''", "masked"},
    {StageId::weights, "Gradient of the attention weights", "dL/dA", "masked"},
}};

const StagePicture& picture_of(StageId id, Direction direction = Direction::forward) {
    for (const auto& picture : direction == Direction::forward ? stage_pictures : gradient_pictures)
        if (picture.id == id) return picture;
    throw std::invalid_argument(fmt::format("render_svg: no picture of the {} stage", to_string(id)));
}

struct Rgb {
    double r, g, b;  // 0–255
};
using Palette = std::array<Rgb, 9>;

// ColorBrewer's sequential "Blues" and "Reds", light to dark: each stays ordered in greyscale
// print too, and together they make a diverging scale that colour-blind readers can follow.
constexpr Palette blues{{{247, 251, 255},
                         {222, 235, 247},
                         {198, 219, 239},
                         {158, 202, 225},
                         {107, 174, 214},
                         {66, 146, 198},
                         {33, 113, 181},
                         {8, 81, 156},
                         {8, 48, 107}}};
constexpr Palette reds{{{255, 245, 240},
                        {254, 224, 210},
                        {252, 187, 161},
                        {252, 146, 114},
                        {251, 106, 74},
                        {239, 59, 44},
                        {203, 24, 29},
                        {165, 15, 21},
                        {103, 0, 13}}};

// A palette at `t` in [0, 1], linear between neighbouring stops (as the colour bar's SVG
// gradient interpolates, so bar and cells agree).
Rgb interpolate(const Palette& palette, double t) {
    if (!(t > 0)) t = 0;  // also NaN: the position indexes the palette
    const double position = std::min(t, 1.0) * static_cast<double>(palette.size() - 1);
    const auto i = std::min(static_cast<std::size_t>(position), palette.size() - 2);
    const double f = position - static_cast<double>(i);
    const Rgb& a = palette[i];
    const Rgb& b = palette[i + 1];
    return {a.r + (b.r - a.r) * f, a.g + (b.g - a.g) * f, a.b + (b.b - a.b) * f};
}

// The colour of t in [−1, 1]: blue from light (0) to dark (1), red from light to dark (−1).
Rgb colour_at(double t) { return t < 0 ? interpolate(reds, -t) : interpolate(blues, t); }

std::string hex(const Rgb& colour) {
    const auto byte = [](double v) { return static_cast<int>(std::lround(v)); };
    return fmt::format("#{:02x}{:02x}{:02x}", byte(colour.r), byte(colour.g), byte(colour.b));
}

// Below a relative luminance (WCAG 2) of 0.179, white text has more contrast than black.
bool needs_white_text(const Rgb& colour) {
    const auto linear = [](double v) {
        v /= 255;
        return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4);
    };
    return 0.2126 * linear(colour.r) + 0.7152 * linear(colour.g) + 0.0722 * linear(colour.b) <
           0.179;
}

// Values → colours. Each value is divided by its reach, giving t in [−1, 1]: with --shade
// absolute, a weight's reach is 1 (its own range, the same in every row; widened to the
// largest |weight| when dividing by the row sum left some beyond 1) and a score's the largest
// |value| of the whole table (scores have no fixed range); with --shade table the table's
// largest |value|; with --shade row the row's (a row of weights is one distribution). Masked
// entries are left out. Negative values exist only where some value is negative, and then
// the scale is diverging (red below 0, blue above).
struct Shading {
    Shade shade = Shade::absolute;
    bool per_row = false;  // each row against its own reach
    bool fixed = false;    // weights on their own scale, 0 to 1 (or widened)
    bool diverging = false;
    std::vector<double> reach;  // per row
    double table_reach = 1;     // the reach of the one scale (not per row)

    double t(Eigen::Index row, double value) const { return value / reach[static_cast<std::size_t>(row)]; }
};

Shading shading_of(const Stage& stage, Shade shade) {
    Shading s;
    s.shade = shade;
    s.per_row = shade == Shade::row;
    const bool gradient = stage.direction == Direction::backward;
    s.fixed = shade == Shade::absolute && stage.id == StageId::weights && !gradient;
    s.diverging = gradient;  // a gradient is signed: centred on 0 whatever its numbers
    double table = 0;
    for (Eigen::Index r = 0; r < stage.row_count(); ++r) {
        double row = 0;
        for (Eigen::Index c = 0; c < stage.col_count(); ++c)
            if (!stage.is_masked(r, c)) {
                row = std::max(row, std::abs(stage.data(r, c)));
                s.diverging = s.diverging || stage.data(r, c) < 0;
            }
        s.reach.push_back(row > 0 ? row : 1);  // a row of zeros: any reach will do
        table = std::max(table, row);
    }
    s.table_reach = s.fixed ? std::max(table, 1.0) : table > 0 ? table : 1;
    if (!s.per_row) std::fill(s.reach.begin(), s.reach.end(), s.table_reach);
    return s;
}

// The bar's tick labels from the bottom up: shares of the row's reach, or numbers with at
// least 2 decimals (as in the cells) and one more than the step between ticks needs, so that
// evenly spaced ticks also read evenly spaced (0.000, 0.018, 0.035 rather than 0.00, 0.02,
// 0.04, 0.05).
std::vector<std::string> tick_labels(const Shading& s) {
    const double low = s.diverging ? -1 : 0;
    std::vector<std::string> labels;
    if (s.per_row) {
        for (int i = 0; i < tick_count; ++i)
            labels.push_back(fmt::format("{}%", std::lround(100 * (low + (1 - low) * i / (tick_count - 1)))));
        return labels;
    }
    const double step = s.table_reach * ((1 - low) / (tick_count - 1));  // not (reach·2)/4: no overflow
    const int digits = std::clamp(static_cast<int>(std::ceil(-std::log10(step))) + 1, 2, 8);
    for (int i = 0; i < tick_count; ++i) {
        const double fraction = low + (1 - low) * i / (tick_count - 1);
        labels.push_back(format_fixed(s.table_reach * fraction, digits));
    }
    return labels;
}

// The words of the picture, before any position is known.
struct Content {
    std::string title;
    std::string subtitle;
    std::string shading_note;
    std::string_view row_axis;
    std::string_view col_axis;
    std::vector<std::string> rows;  // cut to max_label_columns
    std::vector<std::string> cols;
    std::vector<std::string> ticks;
    std::string caption;            // beside the colour bar
    std::string masked_legend;
    bool has_mask = false;
};

std::vector<std::string> cut_labels(const std::vector<std::string>& labels) {
    std::vector<std::string> out;
    for (const auto& label : labels) out.push_back(fit_width(label, max_label_columns));
    return out;
}

Content content_of(const Trace& trace, const Stage& stage, const Shading& shading) {
    const StagePicture& picture = picture_of(stage.id, stage.direction);
    const bool gradient = stage.direction == Direction::backward;
    const bool bahdanau = mode_spec(trace.mode).reads_pair;
    const std::string largest = shading.diverging ? fmt::format("|{}|", picture.noun) : std::string(picture.noun);
    Content content;
    content.title = fmt::format("{} · {} · {}", picture.title, mode_text(trace), trace.origin);
    content.subtitle = fmt::format("{}{}{} · {}×{} · {}", gradient ? "d_" : "", stage.name(),
                                   stage.head > 0 ? fmt::format(" · head {} of {}", stage.head, trace.heads) : "",
                                   stage.row_count(), stage.col_count(), stage.formula);
    if (!stage.applied) content.subtitle += fmt::format(" · not applied: {}", stage.reason);
    const std::string_view colours = shading.diverging ? "red below 0, blue above, darkest at" : "from 0 to";
    if (shading.per_row) {
        content.shading_note = fmt::format("Shaded per row: {} the row's largest {}{}", colours, largest,
                                           stage.id == StageId::weights ? " (a flat row looks as dark as a peaked one)" : "");
        content.caption = fmt::format("share of the row's largest {}", largest);
    } else if (gradient) {
        content.shading_note = fmt::format("Gradients are signed: red below 0, blue above, white at 0, darkest at the "
                                           "table's largest {} (one scale for the whole table)",
                                           largest);
        content.caption = fmt::format("{}, one scale for the table", picture.noun);
    } else if (shading.fixed && shading.table_reach == 1) {
        content.shading_note = fmt::format("Shaded on the weights' own scale: {}, the same in every row",
                                           shading.diverging ? "red below 0, blue above, darkest at −1 and 1" : "from 0 to 1");
        content.caption = "weight, one scale for every row";
    } else if (shading.fixed) {
        content.shading_note = fmt::format("Shaded on one scale for every row: {} the largest {}, as some weights lie "
                                           "beyond 1 (divided by the row sum)",
                                           colours, largest);
        content.caption = "weight, one scale for every row";
    } else {
        content.shading_note = fmt::format("Shaded on one scale for the whole table: {} its largest {}{}", colours, largest,
                                           shading.shade == Shade::absolute ? " (scores have no fixed range)" : "");
        content.caption = fmt::format("{}, one scale for the table", picture.noun);
    }
    content.row_axis = bahdanau ? "target" : "query";
    content.col_axis = bahdanau ? "source" : "key";
    content.rows = cut_labels(stage.rows);
    content.cols = cut_labels(stage.cols);
    content.ticks = tick_labels(shading);
    content.masked_legend = picture.masked;
    // --mask-fill leaves hidden scores finite and hidden weights above 0: the legend says so.
    bool as_usual = true;
    for (Eigen::Index r = 0; r < stage.row_count() && stage.allowed; ++r)
        for (Eigen::Index c = 0; c < stage.col_count(); ++c)
            if (stage.is_masked(r, c))
                as_usual = as_usual && (stage.id == StageId::weights ? stage.data(r, c) == 0 : std::isinf(stage.data(r, c)));
    if (!as_usual)
        content.masked_legend = stage.id == StageId::weights ? "masked (weight not 0: a finite fill)"
                                                             : "masked (score: the finite fill)";
    content.has_mask = stage.allowed && !stage.allowed->all();
    return content;
}

// Every position of the picture, derived from the content.
struct HeatmapLayout {
    bool numbered = false;  // cells print their value
    double cell = fixed_cell;
    double label_font = max_label_font;
    double tilt = 45;  // degrees the column labels turn up from the horizontal
    double title_y = 0, subtitle_y = 0, note_y = 0;
    double col_axis_y = 0;  // baseline of the column axis title
    double row_axis_x = 0;  // baseline of the (vertical) row axis title
    double matrix_x = 0, matrix_y = 0, matrix_w = 0, matrix_h = 0;
    double bar_x = 0, bar_h = 0;
    double caption_x = 0;  // baseline of the (vertical) caption beside the bar
    double width = 0, height = 0;

    double sin_tilt() const { return std::sin(tilt * std::numbers::pi / 180); }
    double cos_tilt() const { return std::cos(tilt * std::numbers::pi / 180); }
    // Where a label's baseline starts so that its glyphs, not its baseline, centre on the
    // column: the middle of a glyph is about 0.35 em above the baseline.
    double col_label_x(std::size_t c) const {
        return matrix_x + (static_cast<double>(c) + 0.5) * cell + 0.35 * label_font * sin_tilt();
    }
    double col_label_y() const { return matrix_y - label_gap + 0.35 * label_font * cos_tilt(); }
};

double widest(const std::vector<std::string>& texts, double font) {
    double width = 0;
    for (const auto& text : texts) width = std::max(width, text_width(text, font));
    return width;
}

// The value a cell prints: 2 decimals, as the ticks.
std::string cell_value(double value) { return format_fixed(value, 2); }

double widest_value(const Stage& stage) {
    double width = 0;
    for (Eigen::Index r = 0; r < stage.row_count(); ++r)
        for (Eigen::Index c = 0; c < stage.col_count(); ++c)
            if (!stage.is_masked(r, c)) width = std::max(width, text_width(cell_value(stage.data(r, c)), value_font));
    return width;
}

HeatmapLayout plan(const Stage& stage, const Content& content) {
    HeatmapLayout l;
    const auto rows = static_cast<double>(stage.row_count());
    const auto cols = static_cast<double>(stage.col_count());
    l.numbered = stage.row_count() <= max_numbered && stage.col_count() <= max_numbered;
    l.cell = l.numbered ? std::max(fixed_cell, widest_value(stage) + value_padding)
                        : std::clamp(std::floor(matrix_budget / std::max(rows, cols)), min_cell, fixed_cell);
    l.label_font = std::min(max_label_font, l.cell - 1);
    // Tilted labels read more easily, but only while neighbouring ones do not touch.
    l.tilt = l.cell * std::numbers::sqrt2 / 2 >= 1.2 * l.label_font ? 45 : 90;
    l.matrix_w = l.cell * cols;
    l.matrix_h = l.cell * rows;

    l.title_y = margin + 0.8 * title_font;
    l.subtitle_y = l.title_y + 1.4 * subtitle_font;
    l.note_y = l.subtitle_y + 1.4 * subtitle_font;
    l.col_axis_y = l.note_y + 8 + axis_font;
    double label_height = 0;
    for (const auto& label : content.cols)
        label_height = std::max(label_height, text_width(label, l.label_font) * l.sin_tilt() +
                                                  l.label_font * l.cos_tilt());
    l.matrix_y = l.col_axis_y + 8 + label_height + label_gap;

    l.row_axis_x = margin + 0.8 * axis_font;
    l.matrix_x = margin + axis_font + 10 + widest(content.rows, l.label_font) + label_gap;

    double labels_right = 0;
    for (std::size_t c = 0; c < content.cols.size(); ++c)
        labels_right = std::max(labels_right, l.col_label_x(c) + 0.35 * l.label_font +
                                                  text_width(content.cols[c], l.label_font) *
                                                      l.cos_tilt());
    l.bar_x = l.matrix_x + l.matrix_w + legend_gap;
    l.bar_h = std::max({l.matrix_h, min_bar_height, text_width(content.caption, tick_font) + 16});
    l.caption_x = l.bar_x + bar_width + 8 + widest(content.ticks, tick_font) + caption_gap + 0.8 * tick_font;
    double legend_right = l.caption_x + 0.2 * tick_font;
    double legend_bottom = l.matrix_y + l.bar_h + tick_font / 2;  // the lowest tick label
    if (content.has_mask) {
        legend_right = std::max(legend_right, l.bar_x + swatch + 6 + text_width(content.masked_legend, tick_font));
        legend_bottom = l.matrix_y + l.bar_h + 16 + swatch;
    }
    l.width = std::ceil(std::max({legend_right, labels_right,
                                  margin + svg::bold_factor * text_width(content.title, title_font),
                                  margin + text_width(content.subtitle, subtitle_font),
                                  margin + text_width(content.shading_note, subtitle_font)}) +
                        margin);
    l.height = std::ceil(std::max(l.matrix_y + l.matrix_h, legend_bottom) + margin);
    return l;
}

void write_defs(Buffer& out, const Shading& shading) {
    out.append(std::string_view("<defs>\n"
                                "<pattern id=\"hatch\" width=\"6\" height=\"6\" "
                                "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
                                "<rect width=\"6\" height=\"6\" fill=\"#e6e6e6\"/>"
                                "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#8a8a8a\" "
                                "stroke-width=\"2.5\"/></pattern>\n"
                                "<linearGradient id=\"scale\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">"));
    // From the bottom of the bar up: the reds from dark to light below the middle when the
    // scale is diverging, then the blues from light to dark.
    const double blue_from = shading.diverging ? 0.5 : 0;
    const auto last = static_cast<double>(blues.size() - 1);
    if (shading.diverging)
        for (std::size_t i = reds.size(); i-- > 0;)
            fmt::format_to(std::back_inserter(out), "<stop offset=\"{}\" stop-color=\"{}\"/>",
                           0.5 - 0.5 * static_cast<double>(i) / last, hex(reds[i]));
    for (std::size_t i = 0; i < blues.size(); ++i)
        fmt::format_to(std::back_inserter(out), "<stop offset=\"{}\" stop-color=\"{}\"/>",
                       blue_from + (1 - blue_from) * static_cast<double>(i) / last, hex(blues[i]));
    out.append(std::string_view("</linearGradient>\n</defs>\n"));
}

void write_titles(Buffer& out, const Content& content, const HeatmapLayout& l) {
    svg::append_title(out, content.title);
    svg::append_text(out,
                     fmt::format("x=\"{}\" y=\"{}\" font-size=\"{}\" fill=\"#555555\"", snap(margin),
                                 snap(l.subtitle_y), subtitle_font),
                     content.subtitle);
    svg::append_text(out,
                     fmt::format("class=\"shading\" x=\"{}\" y=\"{}\" font-size=\"{}\" fill=\"#555555\"",
                                 snap(margin), snap(l.note_y), subtitle_font),
                     content.shading_note);

    fmt::format_to(std::back_inserter(out),
                   "<g font-size=\"{}\" font-weight=\"bold\" fill=\"#555555\" text-anchor=\"middle\">\n", axis_font);
    svg::append_text(out, fmt::format("x=\"{}\" y=\"{}\"", snap(l.matrix_x + l.matrix_w / 2), snap(l.col_axis_y)),
                     content.col_axis);
    svg::append_text(out,
                     fmt::format("transform=\"translate({} {}) rotate(-90)\"", snap(l.row_axis_x),
                                 snap(l.matrix_y + l.matrix_h / 2)),
                     content.row_axis);
    out.append(std::string_view("</g>\n"));
}

void write_labels(Buffer& out, const Content& content, const HeatmapLayout& l) {
    fmt::format_to(std::back_inserter(out), "<g font-size=\"{}\">\n", snap(l.label_font));
    for (std::size_t c = 0; c < content.cols.size(); ++c)
        svg::append_text(out,
                         fmt::format("transform=\"translate({} {}) rotate({})\"", snap(l.col_label_x(c)),
                                     snap(l.col_label_y()), -l.tilt),
                         content.cols[c]);
    out.append(std::string_view("</g>\n"));

    fmt::format_to(std::back_inserter(out), "<g font-size=\"{}\" text-anchor=\"end\">\n", snap(l.label_font));
    for (std::size_t r = 0; r < content.rows.size(); ++r) {
        const double middle = l.matrix_y + (static_cast<double>(r) + 0.5) * l.cell;
        svg::append_text(out,
                         fmt::format("x=\"{}\" y=\"{}\"", snap(l.matrix_x - label_gap), snap(middle + 0.35 * l.label_font)),
                         content.rows[r]);
    }
    out.append(std::string_view("</g>\n"));
}

// One rect per entry, with its tooltip: the labels and the exact value (as JSON writes it);
// the white stroke draws the grid between cells.
void write_cells(Buffer& out, const Trace& trace, const Stage& stage, const Shading& shading, const HeatmapLayout& l) {
    out.append(std::string_view("<g stroke=\"#ffffff\" stroke-width=\"1\">\n"));
    for (Eigen::Index r = 0; r < stage.row_count(); ++r)
        for (Eigen::Index c = 0; c < stage.col_count(); ++c) {
            const bool masked = stage.is_masked(r, c);
            fmt::format_to(std::back_inserter(out),
                           "<rect class=\"cell{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
                           "fill=\"{}\"><title>",
                           masked ? " masked" : "", snap(l.matrix_x + static_cast<double>(c) * l.cell),
                           snap(l.matrix_y + static_cast<double>(r) * l.cell), snap(l.cell), snap(l.cell),
                           masked ? "url(#hatch)" : hex(colour_at(shading.t(r, stage.data(r, c)))));
            append_escaped(out, stage.rows[static_cast<std::size_t>(r)]);
            out.append(std::string_view(" → "));
            append_escaped(out, stage.cols[static_cast<std::size_t>(c)]);
            out.append(std::string_view(": "));
            if (masked) out.append(std::string_view("masked"));
            else append_exact(out, stage.data(r, c), stage.direction == Direction::backward ? Dtype::float64 : trace.dtype);
            out.append(std::string_view("</title></rect>\n"));
        }
    out.append(std::string_view("</g>\n"));
}

// The values printed in the cells; they let the pointer through to the cell's tooltip.
void write_values(Buffer& out, const Stage& stage, const Shading& shading, const HeatmapLayout& l) {
    fmt::format_to(std::back_inserter(out),
                   "<g font-size=\"{}\" text-anchor=\"middle\" pointer-events=\"none\">\n", value_font);
    for (Eigen::Index r = 0; r < stage.row_count(); ++r)
        for (Eigen::Index c = 0; c < stage.col_count(); ++c) {
            if (stage.is_masked(r, c)) continue;
            const double value = stage.data(r, c);
            fmt::format_to(std::back_inserter(out), "<text x=\"{}\" y=\"{}\"{}>{}</text>\n",
                           snap(l.matrix_x + (static_cast<double>(c) + 0.5) * l.cell),
                           snap(l.matrix_y + (static_cast<double>(r) + 0.5) * l.cell + 0.35 * value_font),
                           needs_white_text(colour_at(shading.t(r, value))) ? " fill=\"#ffffff\"" : "",
                           cell_value(value));
        }
    out.append(std::string_view("</g>\n"));
}

void write_legend(Buffer& out, const Content& content, const HeatmapLayout& l) {
    fmt::format_to(std::back_inserter(out),
                   "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"url(#scale)\" "
                   "stroke=\"#999999\" stroke-width=\"0.5\"/>\n",
                   snap(l.bar_x), snap(l.matrix_y), bar_width, snap(l.bar_h));
    fmt::format_to(std::back_inserter(out), "<g font-size=\"{}\">\n", tick_font);
    for (int i = 0; i < tick_count; ++i) {
        const double y = l.matrix_y + l.bar_h * (1 - static_cast<double>(i) / (tick_count - 1));
        fmt::format_to(std::back_inserter(out),
                       "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#555555\"/>"
                       "<text x=\"{3}\" y=\"{4}\">{5}</text>\n",
                       snap(l.bar_x + bar_width), snap(y), snap(l.bar_x + bar_width + 4),
                       snap(l.bar_x + bar_width + 8), snap(y + 0.35 * tick_font),
                       content.ticks[static_cast<std::size_t>(i)]);
    }
    svg::append_text(out,
                     fmt::format("class=\"caption\" transform=\"translate({} {}) rotate(-90)\" text-anchor=\"middle\" "
                                 "fill=\"#555555\"",
                                 snap(l.caption_x), snap(l.matrix_y + l.bar_h / 2)),
                     content.caption);
    if (content.has_mask) {
        const double top = l.matrix_y + l.bar_h + 16;
        fmt::format_to(std::back_inserter(out),
                       "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"url(#hatch)\" "
                       "stroke=\"#999999\" stroke-width=\"0.5\"/>",
                       snap(l.bar_x), snap(top), swatch, swatch);
        svg::append_text(out, fmt::format("x=\"{}\" y=\"{}\"", snap(l.bar_x + swatch + 6),
                                          snap(top + swatch / 2 + 0.35 * tick_font)),
                         content.masked_legend);
    }
    out.append(std::string_view("</g>\n"));
}

}  // namespace

std::string svg_stage_choices() {
    std::vector<std::string_view> names;
    for (const StageId id : svg_stages) names.push_back(to_string(id));
    return fmt::format("{} or {}", fmt::join(names.begin(), names.end() - 1, ", "), names.back());
}

void render_svg(const Trace& trace, const SvgOptions& options, std::ostream& out) {
    (void)picture_of(options.stage);
    const Stage* stage = trace.find(options.stage, options.head);
    if (!stage)
        throw std::invalid_argument(fmt::format("render_svg: the trace has no {} stage", to_string(options.stage)));
    render_svg(trace, *stage, options, out);
}

void render_svg(const Trace& trace, const Stage& stage, const SvgOptions& options, std::ostream& out) {
    (void)picture_of(stage.id, stage.direction);
    const Shading shading = shading_of(stage, options.shade);
    const Content content = content_of(trace, stage, shading);
    const HeatmapLayout layout = plan(stage, content);

    Buffer svg;
    svg::open_document(svg, layout.width, layout.height);
    write_defs(svg, shading);
    write_titles(svg, content, layout);
    write_labels(svg, content, layout);
    write_cells(svg, trace, stage, shading, layout);
    if (layout.numbered) write_values(svg, stage, shading, layout);
    write_legend(svg, content, layout);
    svg::close_document(svg, out);
}

}  // namespace attntrace
