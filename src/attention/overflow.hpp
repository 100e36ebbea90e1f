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

// "ORIGIN: the STAGE stage overflows: QUANTITY for "ROW" (row r) and "COL" (column c) is
// VALUE, not a finite number; the input numbers are too large". `row` and `col` are 0-based.
[[noreturn]] inline void throw_overflow(const std::string& origin, StageId stage, std::string_view row_label,
                                        Eigen::Index row, std::string_view col_label, Eigen::Index col, double value,
                                        std::string_view quantity = "the entry") {
    throw DataError(fmt::format("{}: the {} stage overflows: {} for \"{}\" (row {}) and \"{}\" (column {}) is {}, not a "
                                "finite number; the input numbers are too large",
                                origin, to_string(stage), quantity, printable(row_label), row + 1, printable(col_label),
                                col + 1, value));
}

}  // namespace attntrace
