// A learner's answers for check-answers: any stages they computed, whole, as rows or as single
// cells, each number kept with the decimals it was written with (its precision decides the
// tolerance). JSON (docs/practice.md) or the tidy CSV that `--format csv --tidy` writes.
#pragma once

#include "core/stage.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attntrace {

struct GivenNumber {
    Eigen::Index row = 0, col = 0;  // 0-based
    double value = 0;
    int decimals = 0;     // digits after the point, less the exponent ("0.25" 2, "2.5e-3" 4)
    bool masked = false;  // null, "-inf" or "masked"
    std::string text;     // as written
};

struct GivenStage {
    StageId id = StageId::scores;
    int head = 0;                      // 1-based; 0: not said
    std::string where;                 // "/heads/1/weights": for messages
    std::optional<Eigen::Index> rows, cols;  // a whole matrix: its shape
    std::vector<GivenNumber> numbers;  // in the order written
};

// The decimals a number was written with: digits after the point, less the exponent ("0.25" 2,
// "3" 0, "2.5e-3" 4, "12e2" 0). Its precision decides the tolerance of a check.
int decimals_of(std::string_view text);

// Reads `text` (from `origin`, for messages); throws DataError naming the place of anything it
// cannot read.
std::vector<GivenStage> read_answers(std::string_view text, const std::string& origin);

}  // namespace attntrace
