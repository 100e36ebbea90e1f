// The text of one stage's table, shared by the table, markdown and CSV formats: a header of
// column labels and one row per query, with the weights stage's row sum and strongest key
// appended as extra columns.
#pragma once

#include "core/stage.hpp"

#include <string>
#include <vector>

namespace attntrace {

struct StageText {
    std::vector<std::string> header;             // data column labels, then extra columns
    std::vector<std::string> row_labels;
    std::vector<std::vector<std::string>> rows;  // per row: data cells, then extra cells
    std::size_t data_columns = 0;                // the leading columns that hold matrix entries
};

// Cells rounded to `digits` decimals; a masked score is "-inf", a masked weight "0", a quiz's
// hidden entry "?".
StageText stage_text(const Stage& stage, int digits);

}  // namespace attntrace
