// Numbers as text: rounded for people, exact for programs.
#pragma once

#include "core/types.hpp"
#include "util/format.hpp"

#include <fmt/compile.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace attntrace {

// Fixed-point with `digits` decimals; "-inf" for −∞; a value that rounds to zero is shown
// without a minus sign ("-0.0000" would only confuse). Magnitudes from 1e7 up switch to
// scientific notation, so one huge entry cannot make a column hundreds of digits wide.
inline std::string format_fixed(double value, int digits) {
    if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
    if (std::abs(value) >= 1e7) return fmt::format("{:.{}e}", value, digits);
    std::string text = fmt::format("{:.{}f}", value, digits);
    if (text.front() == '-' && text.find_first_not_of("-0.") == std::string::npos) text.erase(0, 1);
    return text;
}

// `digits` significant digits (0.1385, 2.134e-05): for weights of long rows, which fixed
// decimals would round to 0.
inline std::string format_significant(double value, int digits) {
    return fmt::format("{:.{}g}", value, std::max(digits, 1));
}

// As format_fixed, without trailing zeros: 0.55 rather than 0.5500 (for worked arithmetic,
// where inputs such as 0.55 should read as they were written).
inline std::string format_compact(double value, int digits) {
    std::string text = format_fixed(value, digits);
    if (text.find('.') == std::string::npos || text.find('e') != std::string::npos) return text;
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
    if (text == "-0") text = "0";
    return text;
}

// The shortest text that reads back as the same number: of a double for float64 traces, of
// a float for float32 traces (whose values are floats widened to double). fmt's "{}", compiled
// (FMT_COMPILE) and written into a small array first: the same bytes as the formatting engine
// gives, without parsing the format or going through a buffer for a back-inserter, which cost
// more than the digits themselves in a large JSON trace (docs/performance.md).
template <typename Out>
void append_exact(Out& out, double value, Dtype dtype) {
    char text[32];  // the longest, "-2.2250738585072014e-308", has 24
    const char* end = dtype == Dtype::float32 ? fmt::format_to(text, FMT_COMPILE("{}"), static_cast<float>(value))
                                              : fmt::format_to(text, FMT_COMPILE("{}"), value);
    out.append(static_cast<const char*>(text), end);
}

}  // namespace attntrace
