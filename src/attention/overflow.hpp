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

// A stage as a message names it: "scores", or "scores of head 2".
struct StageRef {
    StageId id;
    int head = 0;
    StageRef(StageId stage, int h = 0) : id(stage), head(h) {}  // NOLINT: a StageId is a StageRef of no head
    std::string text() const {
        return head > 0 ? fmt::format("{} stage of head {}", to_string(id), head) : fmt::format("{} stage", to_string(id));
    }
};

// "ORIGIN: the STAGE stage overflows: QUANTITY for "ROW" (row r) and "COL" (column c) is
// VALUE, not a finite number; CAUSE". `row` and `col` are 0-based.
[[noreturn]] inline void throw_overflow(const std::string& origin, StageRef stage, std::string_view row_label,
                                        Eigen::Index row, std::string_view col_label, Eigen::Index col, double value,
                                        std::string_view quantity = "the entry", std::string_view cause = input_too_large) {
    throw DataError(fmt::format("{}: the {} overflows: {} for \"{}\" (row {}) and \"{}\" (column {}) is {}, not a "
                                "finite number; {}",
                                origin, stage.text(), quantity, printable(row_label), row + 1, printable(col_label),
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
