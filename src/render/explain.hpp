// --explain: a few sentences before each stage saying what it does and why, ending with the
// formula and its shapes, e.g. "S = Q·Kᵀ: (6×2)·(2×6) → 6×6".
#pragma once

#include "core/stage.hpp"

#include <string>
#include <vector>

namespace attntrace {

std::vector<std::string> explanation(const Trace& trace, const Stage& stage);

// The sentences before the parameters section: what the matrices do and where they came from
// (none for a run without parameters).
std::vector<std::string> parameters_explanation(const Trace& trace);

}  // namespace attntrace
