// load: JSON text → validated Problem. Documented in docs/input-format.md.
#pragma once

#include "core/problem.hpp"
#include "input/source.hpp"
#include "util/memory.hpp"

#include <string>
#include <string_view>

namespace attntrace {

// Throws DataError naming `origin` and the JSON pointer of the first problem found.
// `budget`, when given, is charged for the document and the problem as they are built.
Problem load_problem(std::string_view json_text, const std::string& origin, MemoryBudget* budget = nullptr);

// load_problem on what read_input returned, within `limit` (--max-memory); a file that
// another program shortened while it was read is reported as such
// (InputText::require_unchanged), whatever else went wrong.
Problem load_input(const InputText& input, const MemoryLimit& limit);

}  // namespace attntrace
