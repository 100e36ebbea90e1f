// load: JSON text → validated Problem. Documented in docs/input-format.md.
#pragma once

#include "input/problem.hpp"

#include <string>
#include <string_view>

namespace attntrace {

// Throws DataError naming `origin` and the JSON pointer of the first problem found.
Problem load_problem(std::string_view json_text, const std::string& origin);

}  // namespace attntrace
