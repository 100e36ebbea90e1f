#include "stepper/frame.hpp"

#include "util/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace attntrace::stepper {
namespace {

constexpr int smallest_width = 40, smallest_height = 12;

// `text` cut to at most `width` columns (… at the cut), by whole characters.
std::string fit(const std::string& text, std::size_t width) {
    if (display_width(text) <= width) return text;
    std::string out;
    std::size_t used = 0;
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t length = std::max<std::size_t>(1, utf8_sequence_length(std::string_view(text).substr(i)));
        const std::string one = text.substr(i, length);
        const std::size_t w = display_width(one);
        if (used + w + 1 > width) break;
        out += one, used += w, i += length;
    }
    return out + "…";
}

// `text` padded with spaces to `width` columns, on the left (`right`: aligned right) or the right.
std::string pad(const std::string& text, std::size_t width, bool right) {
    const std::string cut = fit(text, width);
    const std::string spaces(width - std::min(width, display_width(cut)), ' ');
    return right ? spaces + cut : cut + spaces;
}

std::string cell_text(double x, int digits) {
    if (std::isinf(x)) return x < 0 ? "−∞" : "∞";
    return fmt::format("{:.{}f}", x, digits);
}

// Words of `text` on lines of at most `width` columns.
std::vector<std::string> wrap(const std::string& text, std::size_t width) {
    std::vector<std::string> lines;
    std::string line;
    std::size_t at = 0;
    while (at < text.size()) {
        std::size_t end = text.find(' ', at);
        if (end == std::string::npos) end = text.size();
        const std::string word = text.substr(at, end - at);
        if (!line.empty() && display_width(line) + 1 + display_width(word) > width) lines.push_back(line), line.clear();
        line += (line.empty() ? "" : " ") + word;
        at = end + 1;
    }
    if (!line.empty() || lines.empty()) lines.push_back(fit(line, width));
    return lines;
}

// The stages, the current one in [brackets], as many as fit around it.
Line stage_strip(const Stepper& s, std::size_t width) {
    std::vector<std::string> names;
    for (const View& v : s.views()) {
        std::string name = s.view_name(v);
        if (const auto dot = name.find(" · head "); dot != std::string::npos) name = name.substr(0, dot);
        names.push_back(name);
    }
    std::size_t first = s.current(), last = s.current() + 1, used = display_width(names[s.current()]) + 2;
    while (true) {  // widen around the current stage, alternately, while the names fit
        bool grown = false;
        if (last < names.size() && used + display_width(names[last]) + 1 + 2 <= width) used += display_width(names[last++]) + 1, grown = true;
        if (first > 0 && used + display_width(names[first - 1]) + 1 + 2 <= width) used += display_width(names[--first]) + 1, grown = true;
        if (!grown) break;
    }
    Line line;
    if (first > 0) line.push_back({"… ", Span::plain});
    for (std::size_t i = first; i < last; ++i) {
        if (i > first) line.push_back({" ", Span::plain});
        if (i == s.current()) line.push_back({"[" + names[i] + "]", Span::current});
        else line.push_back({names[i], Span::plain});
    }
    if (last < names.size()) line.push_back({" …", Span::plain});
    return line;
}

// The matrix, `rows` lines including its column labels, scrolled to keep the cursor in sight.
std::vector<Line> matrix_lines(const Stepper& s, std::size_t width, std::size_t rows, std::string& extent) {
    const View v = s.view();
    const Matrix& m = s.matrix(v);
    const Labels& row_labels = s.row_labels(v);
    const std::vector<std::string> cols = s.col_labels(v);
    std::size_t label = 2;
    for (Eigen::Index r = 0; r < m.rows(); ++r) {
        const std::size_t at = static_cast<std::size_t>(r);
        label = std::max(label, display_width(at < row_labels.size() ? row_labels[at] : fmt::format("{}", r + 1)));
    }
    label = std::min<std::size_t>(label, 12) + 1;  // and a space before the first cell
    const std::size_t cell = static_cast<std::size_t>(s.digits()) + 4, slot = cell + 2;
    const auto shown_rows = static_cast<Eigen::Index>(std::max<std::size_t>(1, rows - 1));
    const auto shown_cols = static_cast<Eigen::Index>(std::max<std::size_t>(1, (width - label) / slot));
    const Eigen::Index top = s.row() < shown_rows ? 0 : s.row() - shown_rows + 1;
    const Eigen::Index left = s.col() < shown_cols ? 0 : s.col() - shown_cols + 1;
    const Eigen::Index bottom = std::min(m.rows(), top + shown_rows), right = std::min(m.cols(), left + shown_cols);
    if (top > 0 || bottom < m.rows() || left > 0 || right < m.cols())
        extent = fmt::format(" · rows {}–{} of {}, columns {}–{} of {}", top + 1, bottom, m.rows(), left + 1, right, m.cols());
    std::vector<Line> lines;
    Line head{{std::string(label, ' '), Span::plain}};
    for (Eigen::Index c = left; c < right; ++c)
        head.push_back({" " + pad(static_cast<std::size_t>(c) < cols.size() ? cols[static_cast<std::size_t>(c)] : "", cell, true) + " ",
                        Span::heading});
    lines.push_back(head);
    for (Eigen::Index r = top; r < bottom; ++r) {
        const std::size_t at = static_cast<std::size_t>(r);
        const std::string name = at < row_labels.size() ? row_labels[at] : fmt::format("{}", r + 1);
        Line line{{pad(fit(name, label - 1), label, false), Span::heading}};
        for (Eigen::Index c = left; c < right; ++c) {
            const std::string value = pad(cell_text(m(r, c), s.digits()), cell, true);
            if (r == s.row() && c == s.col()) line.push_back({"[" + value + "]", Span::cursor});
            else if (s.marked(v, r, c)) line.push_back({"{" + value + "}", Span::mark});
            else line.push_back({" " + value + " ", Span::plain});
        }
        lines.push_back(line);
    }
    return lines;
}

}  // namespace

std::vector<Line> draw(const Stepper& s, int width, int height) {
    std::vector<Line> frame;
    if (width < smallest_width || height < smallest_height) {
        frame.push_back({{fit(fmt::format("attntrace step needs {}×{} at least (this is {}×{}); q quits", smallest_width,
                                          smallest_height, width, height),
                              static_cast<std::size_t>(std::max(1, width))),
                          Span::plain}});
        frame.resize(static_cast<std::size_t>(std::max(1, height)));
        return frame;
    }
    const auto w = static_cast<std::size_t>(width);
    const std::size_t h = static_cast<std::size_t>(height);
    const View v = s.view();
    frame.push_back({{fit(fmt::format("attntrace step · {} · {} of {}: {}", printable(s.trace().origin), s.current() + 1,
                                      s.views().size(), s.view_name(v)),
                          w),
                      Span::heading}});
    frame.push_back(stage_strip(s, w));
    const std::size_t pane_rows = std::clamp<std::size_t>(h / 3, 3, 8);
    const std::size_t matrix_rows = h - 3 - pane_rows - 2;
    if (s.help_shown()) {
        frame.push_back({{"Keys", Span::heading}});
        for (const auto& line : help_lines())
            if (frame.size() < h - 2) frame.push_back({{fit(line, w), Span::plain}});
    } else {
        std::string extent;
        std::vector<Line> body = matrix_lines(s, w, matrix_rows, extent);
        const Matrix& m = s.matrix(v);
        const std::string formula = v.kind == View::parameter ? s.trace().parameters[v.index].formula : s.stage_of(v).formula;
        frame.push_back({{fit(fmt::format("{} · {}×{} · {}{}", s.view_name(v), m.rows(), m.cols(), formula, extent), w),
                          Span::heading}});
        for (auto& line : body) frame.push_back(std::move(line));
        frame.resize(3 + matrix_rows);
        std::vector<std::string> pane;
        for (const auto& text : s.pane())
            for (auto& line : wrap(text, w)) pane.push_back(std::move(line));
        for (std::size_t i = 0; i < pane_rows; ++i)
            frame.push_back(i < pane.size() ? Line{{pane[i], Span::plain}} : Line{});
    }
    frame.resize(h - 2);
    frame.push_back({{fit(s.message(), w), Span::plain}});
    frame.push_back({{fit(s.status(), w), Span::heading}});
    return frame;
}

std::string frame_text(const std::vector<Line>& frame) {
    std::string out;
    for (const Line& line : frame) {
        std::string text;
        for (const Span& span : line) text += span.text;
        while (!text.empty() && text.back() == ' ') text.pop_back();
        out += text + '\n';
    }
    return out;
}

namespace {

void append_line(std::string& out, const Line& line) {
    for (const Span& span : line) {
        const char* style = span.style == Span::cursor                                   ? "\x1b[7m"
                            : span.style == Span::mark                                   ? "\x1b[4m"
                            : span.style == Span::heading || span.style == Span::current ? "\x1b[1m"
                                                                                         : "";
        out += style;
        out += span.text;
        if (*style) out += "\x1b[0m";
    }
    out += "\x1b[K";
}

}  // namespace

std::string frame_ansi(const std::vector<Line>& frame) {
    std::string out = "\x1b[H";
    for (std::size_t i = 0; i < frame.size(); ++i) {
        append_line(out, frame[i]);
        if (i + 1 < frame.size()) out += "\r\n";
    }
    return out;
}

std::string frame_ansi_changes(const std::vector<Line>& before, const std::vector<Line>& frame) {
    if (before.size() != frame.size()) return frame_ansi(frame);
    std::string out;
    for (std::size_t i = 0; i < frame.size(); ++i) {
        if (frame[i] == before[i]) continue;
        out += fmt::format("\x1b[{};1H", i + 1);
        append_line(out, frame[i]);
    }
    return out;
}

}  // namespace attntrace::stepper
