// What the SVG pictures share: text widths (SVG has no layout of its own and no font is at
// hand to measure with, so positions are computed from widths estimated by display width,
// generously, so that labels are never clipped), coordinates written the same way on every
// machine, escaped text, and the start and end of a document.
#pragma once

#include "util/format.hpp"
#include "util/utf8.hpp"

#include <cmath>
#include <ostream>
#include <string_view>

namespace attntrace::svg {

using Buffer = fmt::memory_buffer;

// The look both pictures share, in px.
constexpr double margin = 16;
constexpr double title_font = 15;
constexpr double px_per_column = 7.5;  // one display column at 13px; scaled for other sizes
constexpr double bold_factor = 1.1;    // bold glyphs are wider

inline double text_width(std::string_view text, double font) {
    return static_cast<double>(display_width(text)) * px_per_column * font / 13;
}

// Coordinates go out rounded to 1/100 px and printed shortest-first by fmt, so the bytes do
// not depend on the locale. Adding 0.0 turns a rounded −0 into 0.
inline double snap(double value) { return std::round(value * 100) / 100 + 0.0; }

// Appends `text` as XML character data, also safe inside a quoted attribute. XML 1.0 cannot
// represent most control characters nor U+FFFE and U+FFFF, even as references, and one of
// them would make the whole document unreadable: they become U+FFFD.
inline void append_escaped(Buffer& out, std::string_view text) {
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

// `<text ATTRIBUTES>TEXT</text>` and a line break; `attributes` is written as it is.
inline void append_text(Buffer& out, std::string_view attributes, std::string_view text) {
    fmt::format_to(std::back_inserter(out), "<text {}>", attributes);
    append_escaped(out, text);
    out.append(std::string_view("</text>\n"));
}

// The XML declaration, the <svg> element of the given size, and a white ground, so that the
// picture reads the same on a dark page.
inline void open_document(Buffer& out, double width, double height) {
    fmt::format_to(std::back_inserter(out),
                   "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                   "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0}\" "
                   "height=\"{1}\" viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" "
                   "fill=\"#222222\">\n"
                   "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n",
                   snap(width), snap(height));
}

// The picture's title, bold, in the top-left corner.
inline void append_title(Buffer& out, std::string_view title) {
    append_text(out,
                fmt::format("x=\"{}\" y=\"{}\" font-size=\"{}\" font-weight=\"bold\"", snap(margin),
                            snap(margin + 0.8 * title_font), title_font),
                title);
}

inline void close_document(Buffer& out, std::ostream& stream) {
    out.append(std::string_view("</svg>\n"));
    stream.write(out.data(), static_cast<std::streamsize>(out.size()));
}

}  // namespace attntrace::svg
