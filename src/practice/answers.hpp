// A learner's answers for check-answers: any stages they computed, whole, as rows or as single
// cells, each number kept with the decimals it was written with (its precision decides the
// tolerance). JSON (docs/practice.md) or the tidy CSV that `--format csv --tidy` writes.
#pragma once

#include "core/stage.hpp"
#include "input/source.hpp"
#include "util/memory.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attntrace {

struct GivenNumber {
    Eigen::Index row = 0, col = 0;  // 0-based
    double value = 0;
    // Small fields together, so that the line costs no byte more per number (a large answers
    // file holds millions): decimals are at most max_decimals.
    std::int16_t decimals = 0;  // digits after the point, less the exponent ("0.25" 2, "2.5e-3" 4)
    bool masked = false;        // null, "-inf" or "masked"
    std::uint32_t line = 0;     // the tidy CSV's line, from 1, for messages (0: JSON, or past 2³² − 1)
    std::string text;           // as written
};

struct GivenStage {
    StageId id = StageId::scores;
    int head = 0;                      // 1-based; 0: not said
    std::string where;                 // "answers.json: /heads/1/weights": for messages
    std::optional<Eigen::Index> rows, cols;  // a whole matrix: its shape
    std::vector<GivenNumber> numbers;  // in the order written
    bool counted_from_zero = false;    // written with rows and columns from 0 (the tidy CSV), said so
    std::string head_where;            // where the head was named apart from the stage ("answers.json: /head")
};

// The most decimals a number counts as written with: beyond 324 its precision, 0.5·10^-d, is
// below the smallest double anyway.
inline constexpr int max_decimals = 330;

// The decimals a number was written with: digits after the point, less the exponent ("0.25" 2,
// "3" 0, "2.5e-3" 4, "12e2" 0), from 0 to max_decimals whatever the exponent
// ("0.0e-2147483647" is max_decimals). Its precision decides the tolerance of a check.
int decimals_of(std::string_view text);

// Reads `text` (from `origin`, for messages); throws DataError naming `origin` and the place
// (line and column for JSON syntax, the JSON pointer or the CSV line otherwise) of anything it
// cannot read: nesting deeper than max_json_depth, ill-formed UTF-8, a number beyond double,
// a head beyond max_heads. `budget`, when given, is charged for what is kept, as it grows.
// Each stage's `where` starts with `origin`, so that later messages name the file too.
std::vector<GivenStage> read_answers(std::string_view text, const std::string& origin, MemoryBudget* budget = nullptr);

// The same on a file read_input() returned: a file that another program shortened while it
// was read is reported as such (InputText::require_unchanged), whatever else went wrong.
std::vector<GivenStage> read_answers(const InputText& input, MemoryBudget* budget);

}  // namespace attntrace
