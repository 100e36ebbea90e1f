// The worked example (-q/--query) as lines of arithmetic, for the table and markdown formats.
#pragma once

#include "attention/worked.hpp"

#include <string>
#include <vector>

namespace attntrace {

std::vector<std::string> worked_lines(const WorkedExample& worked, int digits);

}  // namespace attntrace
