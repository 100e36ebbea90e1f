// JSON numbers, -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, read to the double nearest to
// them: correctly rounded, the very double std::from_chars gives. The usual short decimal
// ("-0.123456") is read in one tight loop, inline here because the parser reads millions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace attntrace {

// An ASCII digit (std::isdigit depends on the locale and takes an int).
inline bool is_ascii_digit(char c) { return c >= '0' && c <= '9'; }

inline constexpr double powers_of_ten[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                           1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                           1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

// The usual number, "-0.123456": -?(0|[1-9][0-9]*)(\.[0-9]+)? with at most 19 digits in all
// and no exponent, read in one tight loop. Anything else, errors included, returns false with
// `at` unmoved, for read_number to read the general way.
inline bool read_simple_number(std::string_view text, std::size_t& at, double& out) {
    const char* p = text.data() + at;
    const char* const end = text.data() + text.size();
    const bool negative = p < end && *p == '-';
    p += negative;
    const char* const whole = p;
    std::uint64_t m = 0;  // wraps beyond 19 digits, which are refused below
    const auto digits = [&] {  // appends a run of digits to m; how many
        const char* const from = p;
        while (p < end && *p >= '0' && *p <= '9') m = m * 10 + static_cast<unsigned>(*p++ - '0');
        return p - from;
    };
    const std::ptrdiff_t whole_digits = digits();
    if (whole_digits == 0 || (*whole == '0' && whole_digits > 1)) return false;
    std::ptrdiff_t fraction_digits = 0;
    if (p < end && *p == '.') {
        ++p;
        fraction_digits = digits();
        if (fraction_digits == 0) return false;
    }
    if (p < end && (*p == 'e' || *p == 'E' || *p == '.')) return false;
    if (whole_digits + fraction_digits > 19 || m > (std::uint64_t{1} << 53)) return false;
    // m ≤ 2⁵³ and 10^k (k ≤ 19) are exact doubles: one division rounds correctly (Clinger).
    const double value = static_cast<double>(m) / powers_of_ten[fraction_digits];
    out = negative ? -value : value;
    at = static_cast<std::size_t>(p - text.data());
    return true;
}

enum class NumberRead {
    ok,            // `out` holds the number, `at` is just after it
    malformed,     // not the grammar's: `at` is where reading it stopped
    out_of_range,  // beyond a double's range (1e400): `at` is just after it
};

// The number that starts at `at` of `text` (a '-' or a digit), by the grammar above. A number
// too small for a double is read as (nearly) 0, as from_chars and strtod read it.
NumberRead read_number(std::string_view text, std::size_t& at, double& out);

// Whether `text` is one JSON number, whole, that a double holds.
bool is_json_number(std::string_view text);

}  // namespace attntrace
