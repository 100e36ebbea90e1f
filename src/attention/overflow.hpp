// The one message for a number that is not finite where a stage computed it (overflow), on
// every path: the trace, the streaming summary, bahdanau's sums inside tanh.
#pragma once

#include "core/error.hpp"
#include "core/stage.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace attntrace {

inline constexpr std::string_view input_too_large = "the input numbers are too large";

// "ORIGIN: the STAGE stage overflows: QUANTITY for "ROW" (row r) and "COL" (column c) is
// VALUE, not a finite number; CAUSE". `row` and `col` are 0-based.
[[noreturn]] inline void throw_overflow(const std::string& origin, StageId stage, std::string_view row_label,
                                        Eigen::Index row, std::string_view col_label, Eigen::Index col, double value,
                                        std::string_view quantity = "the entry", std::string_view cause = input_too_large) {
    throw DataError(fmt::format("{}: the {} stage overflows: {} for \"{}\" (row {}) and \"{}\" (column {}) is {}, not a "
                                "finite number; {}",
                                origin, to_string(stage), quantity, printable(row_label), row + 1, printable(col_label),
                                col + 1, value, cause));
}

// Why scores grew past the largest finite number after a division: a divisor below 1 (the
// scale, or the temperature) when there is one, else the input.
inline std::string division_overflow_cause(double scale, double temperature) {
    if (scale < 1)
        return fmt::format("--scale {} divides by less than 1, which multiplies the scores; use a larger scale", scale);
    if (temperature < 1)
        return fmt::format("--temperature {} divides by less than 1, which multiplies the scores; use a larger temperature",
                           temperature);
    return std::string(input_too_large);
}

}  // namespace attntrace
