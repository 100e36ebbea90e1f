#include "input/json_numbers.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>
#include <system_error>

namespace attntrace {
namespace {

// A number's text, checked against the grammar, with its digits as one integer m and a power
// of ten e (m·10^e, the digits beyond the 19th dropped but counted).
struct ScannedNumber {
    std::uint64_t mantissa = 0;
    int significant = 0, exponent = 0;
    bool negative = false;
    bool plain = true;  // no exponent part
};

// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? from `at`; false where the text leaves the
// grammar, with `at` there.
bool scan(std::string_view text, std::size_t& at, ScannedNumber& n) {
    const auto peek = [&] { return at < text.size() ? text[at] : '\0'; };
    const auto digits = [&](bool fraction) {
        const std::size_t from = at;
        for (; at < text.size() && is_ascii_digit(text[at]); ++at) {
            if (n.mantissa == 0 && text[at] == '0') {
                n.exponent -= fraction;
                continue;
            }
            if (++n.significant <= 19) {
                n.mantissa = n.mantissa * 10 + static_cast<std::uint64_t>(text[at] - '0');
                n.exponent -= fraction;
            } else {
                n.exponent += !fraction;  // dropped digits still count in the magnitude
            }
        }
        return at > from;
    };
    n.negative = peek() == '-';
    if (n.negative) ++at;
    if (peek() == '0') ++at;
    else if (!digits(false)) return false;
    if (peek() == '.') {
        ++at;
        if (!digits(true)) return false;
    }
    if (peek() == 'e' || peek() == 'E') {
        n.plain = false;
        ++at;
        if (peek() == '+' || peek() == '-') ++at;
        const std::size_t from = at;
        while (at < text.size() && is_ascii_digit(text[at])) ++at;
        if (at == from) return false;
    }
    return !is_ascii_digit(peek());  // "01"
}

}  // namespace

NumberRead read_number(std::string_view text, std::size_t& at, double& out) {
    if (read_simple_number(text, at, out)) return NumberRead::ok;
    const std::size_t start = at;
    ScannedNumber n;
    if (!scan(text, at, n)) return NumberRead::malformed;
    // Clinger's fast path: m ≤ 2⁵³ and 10^|e| ≤ 10²² are exact doubles, so one IEEE
    // multiplication or division rounds correctly. It covers most of what read_simple_number()
    // leaves, such as "4.35e+2".
    if (n.plain && n.significant <= 19 && n.mantissa <= (std::uint64_t{1} << 53) && n.exponent >= -22 && n.exponent <= 22) {
        const double m = static_cast<double>(n.mantissa);
        const double value = n.exponent < 0 ? m / powers_of_ten[-n.exponent] : m * powers_of_ten[n.exponent];
        out = n.negative ? -value : value;
        return NumberRead::ok;
    }
    const char* first = text.data() + start;
    const char* last = text.data() + at;
    double value = 0;
    const auto [end, error] = std::from_chars(first, last, value);
    if (error == std::errc::result_out_of_range) {
        // Too small underflows to (nearly) 0, which is fine; too large is refused.
        value = std::strtod(std::string(first, last).c_str(), nullptr);
        if (!std::isfinite(value)) return NumberRead::out_of_range;
    } else if (error != std::errc() || end != last) {
        return NumberRead::malformed;
    }
    out = value;
    return NumberRead::ok;
}

bool is_json_number(std::string_view text) {
    if (text.empty() || !(text[0] == '-' || is_ascii_digit(text[0]))) return false;
    std::size_t at = 0;
    double value = 0;
    return read_number(text, at, value) == NumberRead::ok && at == text.size();
}

}  // namespace attntrace
