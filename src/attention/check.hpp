// --check: the invariants every trace must satisfy, verified independently of how the
// trace was computed, so a grader (or a test) can trust the numbers.
#pragma once

#include "core/stage.hpp"

#include <optional>
#include <string>

namespace attntrace {

// The first invariant that fails, described in one line; nothing when all hold:
//  1. no NaN or infinity anywhere, except −∞ at masked scores;
//  2. masked weights are exactly 0;
//  3. each weights row sums to 1 (within 1e-12 for float64, 1e-5 for float32), or to 0 when
//     every key of the row is masked;
//  4. the context equals weights · values, recomputed here with plain loops.
std::optional<std::string> first_failed_check(const Trace& trace);

}  // namespace attntrace
