// The SVG heatmap of the weights stage. SVG has no layout of its own and no font is at hand
// to measure with, so every position is computed here from text widths estimated by display
// width; the estimates are generous so that labels are never clipped.
#include "render/svg.hpp"
#include "render/reports.hpp"

#include "attention/modes.hpp"

#include "render/number.hpp"
#include "render/text.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

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

using Buffer = fmt::memory_buffer;

// Sizes in px.
constexpr double margin = 16;
constexpr double title_font = 15;
constexpr double subtitle_font = 12;
constexpr double axis_font = 13;
constexpr double max_label_font = 13;  // shrinks with the cells of large matrices
constexpr double value_font = 12;
constexpr double tick_font = 12;
constexpr double px_per_column = 7.5;  // one display column at 13px; scaled for other sizes
constexpr double bold_factor = 1.1;    // bold glyphs are wider
constexpr double fixed_cell = 44;      // fits "0.00" at value_font with room to spare
constexpr double min_cell = 8;
constexpr Eigen::Index max_numbered = 16;  // up to 16×16 cells print their value
// Beyond max_numbered rows or columns, the cells shrink to share out this side length.
constexpr double matrix_budget = fixed_cell * max_numbered;
constexpr std::size_t max_label_columns = 32;  // longer labels are cut; tooltips keep them whole
constexpr double label_gap = 6;                // between the labels and the matrix
constexpr double legend_gap = 24;              // between the matrix and the colour bar
constexpr double bar_width = 14;
constexpr double min_bar_height = 120;  // five tick labels need it beside a one-row matrix
constexpr int tick_count = 5;
constexpr double swatch = 14;  // the hatched square of the masked legend
constexpr std::string_view masked_legend = "masked (weight 0)";

double text_width(std::string_view text, double font) {
    return static_cast<double>(display_width(text)) * px_per_column * font / 13;
}

// Coordinates go out rounded to 1/100 px and printed shortest-first by fmt, so the bytes do
// not depend on the locale. Adding 0.0 turns a rounded −0 into 0.
double snap(double value) { return std::round(value * 100) / 100 + 0.0; }

// Appends `text` as XML character data, also safe inside a quoted attribute. XML 1.0 cannot
// represent most control characters nor U+FFFE and U+FFFF, even as references, and one of
// them would make the whole document unreadable: they become U+FFFD.
void append_escaped(Buffer& out, std::string_view text) {
    constexpr std::string_view replacement = "\xEF\xBF\xBD";
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        const std::string_view rest = text.substr(i);
        if (rest.starts_with("\xEF\xBF\xBE") || rest.starts_with("\xEF\xBF\xBF")) {
            out.append(replacement);
            i += 2;
            continue;
        }
        switch (c) {
        case '&': out.append(std::string_view("&amp;")); break;
        case '<': out.append(std::string_view("&lt;")); break;
        case '>': out.append(std::string_view("&gt;")); break;
        case '"': out.append(std::string_view("&quot;")); break;
        case '\'': out.append(std::string_view("&apos;")); break;
        default:
            if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r')
                out.append(replacement);
            else
                out.push_back(c);
        }
    }
}

struct Rgb {
    double r, g, b;  // 0–255
};

// ColorBrewer's sequential "Blues", light to dark: it stays ordered in greyscale print too.
constexpr std::array<Rgb, 9> palette{{{247, 251, 255},
                                      {222, 235, 247},
                                      {198, 219, 239},
                                      {158, 202, 225},
                                      {107, 174, 214},
                                      {66, 146, 198},
                                      {33, 113, 181},
                                      {8, 81, 156},
                                      {8, 48, 107}}};

// The palette at `t` in [0, 1], linear between neighbouring stops (as the colour bar's SVG
// gradient interpolates, so bar and cells agree).
Rgb shade(double t) {
    if (!(t > 0)) t = 0;  // also NaN: the position indexes the palette
    const double position = std::min(t, 1.0) * static_cast<double>(palette.size() - 1);
    const auto i = std::min(static_cast<std::size_t>(position), palette.size() - 2);
    const double f = position - static_cast<double>(i);
    const Rgb& a = palette[i];
    const Rgb& b = palette[i + 1];
    return {a.r + (b.r - a.r) * f, a.g + (b.g - a.g) * f, a.b + (b.b - a.b) * f};
}

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

// Weights → palette position. The light end is 0, or the smallest weight when dividing by
// the row sum made some negative; the dark end is the largest weight.
struct Scale {
    double low = 0;
    double high = 1;

    double fraction(double value) const { return (value - low) / (high - low); }
    double tick(int i) const { return low + (high - low) * i / (tick_count - 1); }
};

Scale scale_of(const Matrix& weights) {
    Scale scale{std::min(0.0, weights.minCoeff()), weights.maxCoeff()};
    if (!(scale.high > scale.low)) scale.high = scale.low + 1;  // all zero: any span will do
    return scale;
}

// Tick labels from the bottom of the bar up, with at least 2 decimals (as in the cells) and
// one more than the step between ticks needs, so that evenly spaced ticks also read evenly
// spaced (0.000, 0.018, 0.035 rather than 0.00, 0.02, 0.04, 0.05).
std::vector<std::string> tick_labels(const Scale& scale) {
    const double step = (scale.high - scale.low) / (tick_count - 1);
    const int digits = std::clamp(static_cast<int>(std::ceil(-std::log10(step))) + 1, 2, 8);
    std::vector<std::string> labels;
    for (int i = 0; i < tick_count; ++i) labels.push_back(format_fixed(scale.tick(i), digits));
    return labels;
}

// The words of the picture, before any position is known.
struct Content {
    std::string title;
    std::string subtitle;
    std::string_view row_axis;
    std::string_view col_axis;
    std::vector<std::string> rows;  // cut to max_label_columns
    std::vector<std::string> cols;
    Scale scale;
    std::vector<std::string> ticks;
    bool has_mask = false;
};

std::vector<std::string> cut_labels(const std::vector<std::string>& labels) {
    std::vector<std::string> out;
    for (const auto& label : labels) out.push_back(fit_width(label, max_label_columns));
    return out;
}

Content content_of(const Trace& trace, const Stage& stage) {
    const bool bahdanau = mode_spec(trace.mode).reads_pair;
    Content content;
    content.title = fmt::format("Attention weights · {} · {}", mode_text(trace), trace.origin);
    content.subtitle = stage.formula;
    content.row_axis = bahdanau ? "target" : "query";
    content.col_axis = bahdanau ? "source" : "key";
    content.rows = cut_labels(stage.rows);
    content.cols = cut_labels(stage.cols);
    content.scale = scale_of(stage.data);
    content.ticks = tick_labels(content.scale);
    content.has_mask = stage.allowed && !stage.allowed->all();
    return content;
}

// Every position of the picture, derived from the content.
struct Layout {
    bool numbered = false;  // cells print their value
    double cell = fixed_cell;
    double label_font = max_label_font;
    double tilt = 45;  // degrees the column labels turn up from the horizontal
    double title_y = 0, subtitle_y = 0;
    double col_axis_y = 0;  // baseline of the column axis title
    double row_axis_x = 0;  // baseline of the (vertical) row axis title
    double matrix_x = 0, matrix_y = 0, matrix_w = 0, matrix_h = 0;
    double bar_x = 0, bar_h = 0;
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

Layout plan(const Stage& stage, const Content& content) {
    Layout l;
    const auto rows = static_cast<double>(stage.row_count());
    const auto cols = static_cast<double>(stage.col_count());
    l.numbered = stage.row_count() <= max_numbered && stage.col_count() <= max_numbered;
    l.cell = std::clamp(std::floor(matrix_budget / std::max(rows, cols)), min_cell, fixed_cell);
    l.label_font = std::min(max_label_font, l.cell - 1);
    // Tilted labels read more easily, but only while neighbouring ones do not touch.
    l.tilt = l.cell * std::numbers::sqrt2 / 2 >= 1.2 * l.label_font ? 45 : 90;
    l.matrix_w = l.cell * cols;
    l.matrix_h = l.cell * rows;

    l.title_y = margin + 0.8 * title_font;
    l.subtitle_y = l.title_y + 1.4 * subtitle_font;
    l.col_axis_y = l.subtitle_y + 8 + axis_font;
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
    l.bar_h = std::max(l.matrix_h, min_bar_height);
    double legend_w = bar_width + 8 + widest(content.ticks, tick_font);
    double legend_bottom = l.matrix_y + l.bar_h + tick_font / 2;  // the lowest tick label
    if (content.has_mask) {
        legend_w = std::max(legend_w, swatch + 6 + text_width(masked_legend, tick_font));
        legend_bottom = l.matrix_y + l.bar_h + 16 + swatch;
    }
    l.width = std::ceil(std::max({l.bar_x + legend_w, labels_right,
                                  margin + bold_factor * text_width(content.title, title_font),
                                  margin + text_width(content.subtitle, subtitle_font)}) +
                        margin);
    l.height = std::ceil(std::max(l.matrix_y + l.matrix_h, legend_bottom) + margin);
    return l;
}

void write_start(Buffer& out, const Layout& l) {
    fmt::format_to(std::back_inserter(out),
                   "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                   "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0}\" "
                   "height=\"{1}\" viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" "
                   "fill=\"#222222\">\n",
                   snap(l.width), snap(l.height));
    out.append(std::string_view("<defs>\n"
                                "<pattern id=\"hatch\" width=\"6\" height=\"6\" "
                                "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
                                "<rect width=\"6\" height=\"6\" fill=\"#e6e6e6\"/>"
                                "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#8a8a8a\" "
                                "stroke-width=\"2.5\"/></pattern>\n"
                                "<linearGradient id=\"scale\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">"));
    for (std::size_t i = 0; i < palette.size(); ++i)
        fmt::format_to(std::back_inserter(out), "<stop offset=\"{}\" stop-color=\"{}\"/>",
                       static_cast<double>(i) / static_cast<double>(palette.size() - 1),
                       hex(palette[i]));
    // A white ground, so that the picture reads the same on a dark page.
    out.append(std::string_view("</linearGradient>\n</defs>\n"
                                "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"));
}

void write_titles(Buffer& out, const Content& content, const Layout& l) {
    fmt::format_to(std::back_inserter(out),
                   "<text x=\"{}\" y=\"{}\" font-size=\"{}\" font-weight=\"bold\">", snap(margin),
                   snap(l.title_y), title_font);
    append_escaped(out, content.title);
    fmt::format_to(std::back_inserter(out),
                   "</text>\n<text x=\"{}\" y=\"{}\" font-size=\"{}\" fill=\"#555555\">",
                   snap(margin), snap(l.subtitle_y), subtitle_font);
    append_escaped(out, content.subtitle);
    out.append(std::string_view("</text>\n"));

    fmt::format_to(std::back_inserter(out),
                   "<g font-size=\"{}\" font-weight=\"bold\" fill=\"#555555\" "
                   "text-anchor=\"middle\">\n<text x=\"{}\" y=\"{}\">",
                   axis_font, snap(l.matrix_x + l.matrix_w / 2), snap(l.col_axis_y));
    append_escaped(out, content.col_axis);
    fmt::format_to(std::back_inserter(out),
                   "</text>\n<text transform=\"translate({} {}) rotate(-90)\">",
                   snap(l.row_axis_x), snap(l.matrix_y + l.matrix_h / 2));
    append_escaped(out, content.row_axis);
    out.append(std::string_view("</text>\n</g>\n"));
}

void write_labels(Buffer& out, const Content& content, const Layout& l) {
    fmt::format_to(std::back_inserter(out), "<g font-size=\"{}\">\n", snap(l.label_font));
    for (std::size_t c = 0; c < content.cols.size(); ++c) {
        fmt::format_to(std::back_inserter(out), "<text transform=\"translate({} {}) rotate({})\">",
                       snap(l.col_label_x(c)), snap(l.col_label_y()), -l.tilt);
        append_escaped(out, content.cols[c]);
        out.append(std::string_view("</text>\n"));
    }
    out.append(std::string_view("</g>\n"));

    fmt::format_to(std::back_inserter(out), "<g font-size=\"{}\" text-anchor=\"end\">\n",
                   snap(l.label_font));
    for (std::size_t r = 0; r < content.rows.size(); ++r) {
        const double middle = l.matrix_y + (static_cast<double>(r) + 0.5) * l.cell;
        fmt::format_to(std::back_inserter(out), "<text x=\"{}\" y=\"{}\">",
                       snap(l.matrix_x - label_gap), snap(middle + 0.35 * l.label_font));
        append_escaped(out, content.rows[r]);
        out.append(std::string_view("</text>\n"));
    }
    out.append(std::string_view("</g>\n"));
}

// One rect per entry, with its tooltip; the white stroke draws the grid between cells.
void write_cells(Buffer& out, const Stage& stage, const Scale& scale, const Layout& l) {
    out.append(std::string_view("<g stroke=\"#ffffff\" stroke-width=\"1\">\n"));
    for (Eigen::Index r = 0; r < stage.row_count(); ++r)
        for (Eigen::Index c = 0; c < stage.col_count(); ++c) {
            const bool masked = stage.is_masked(r, c);
            fmt::format_to(std::back_inserter(out),
                           "<rect class=\"cell{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
                           "fill=\"{}\"><title>",
                           masked ? " masked" : "", snap(l.matrix_x + static_cast<double>(c) * l.cell),
                           snap(l.matrix_y + static_cast<double>(r) * l.cell), snap(l.cell),
                           snap(l.cell),
                           masked ? "url(#hatch)" : hex(shade(scale.fraction(stage.data(r, c)))));
            append_escaped(out, stage.rows[static_cast<std::size_t>(r)]);
            out.append(std::string_view(" → "));
            append_escaped(out, stage.cols[static_cast<std::size_t>(c)]);
            out.append(std::string_view(": "));
            out.append(masked ? std::string("masked") : format_fixed(stage.data(r, c), 4));
            out.append(std::string_view("</title></rect>\n"));
        }
    out.append(std::string_view("</g>\n"));
}

// The values printed in the cells; they let the pointer through to the cell's tooltip.
void write_values(Buffer& out, const Stage& stage, const Scale& scale, const Layout& l) {
    fmt::format_to(std::back_inserter(out),
                   "<g font-size=\"{}\" text-anchor=\"middle\" pointer-events=\"none\">\n",
                   value_font);
    for (Eigen::Index r = 0; r < stage.row_count(); ++r)
        for (Eigen::Index c = 0; c < stage.col_count(); ++c) {
            if (stage.is_masked(r, c)) continue;
            const double value = stage.data(r, c);
            fmt::format_to(std::back_inserter(out), "<text x=\"{}\" y=\"{}\"{}>{}</text>\n",
                           snap(l.matrix_x + (static_cast<double>(c) + 0.5) * l.cell),
                           snap(l.matrix_y + (static_cast<double>(r) + 0.5) * l.cell +
                                0.35 * value_font),
                           needs_white_text(shade(scale.fraction(value))) ? " fill=\"#ffffff\"" : "",
                           format_fixed(value, 2));
        }
    out.append(std::string_view("</g>\n"));
}

void write_legend(Buffer& out, const Content& content, const Layout& l) {
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
    if (content.has_mask) {
        const double top = l.matrix_y + l.bar_h + 16;
        fmt::format_to(std::back_inserter(out),
                       "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"url(#hatch)\" "
                       "stroke=\"#999999\" stroke-width=\"0.5\"/>"
                       "<text x=\"{}\" y=\"{}\">{}</text>\n",
                       snap(l.bar_x), snap(top), swatch, swatch, snap(l.bar_x + swatch + 6),
                       snap(top + swatch / 2 + 0.35 * tick_font), masked_legend);
    }
    out.append(std::string_view("</g>\n"));
}

}  // namespace

void render_svg(const Trace& trace, std::ostream& out) {
    const Stage* stage = trace.find(StageId::weights);
    if (!stage) throw std::invalid_argument("render_svg: the trace has no weights stage");
    const Content content = content_of(trace, *stage);
    const Layout layout = plan(*stage, content);

    Buffer svg;
    write_start(svg, layout);
    write_titles(svg, content, layout);
    write_labels(svg, content, layout);
    write_cells(svg, *stage, content.scale, layout);
    if (layout.numbered) write_values(svg, *stage, content.scale, layout);
    write_legend(svg, content, layout);
    svg.append(std::string_view("</svg>\n"));
    out.write(svg.data(), static_cast<std::streamsize>(svg.size()));
}

}  // namespace attntrace
