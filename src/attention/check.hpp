// --check: the invariants every trace must satisfy, verified independently of how the
// trace was computed, so a grader (or a test) can trust the numbers; each with the figure
// measured on this trace.
#pragma once

#include "core/stage.hpp"

#include <optional>
#include <string>
#include <vector>

namespace attntrace {

// One invariant, as measured: what was checked, the figure found, and whether it holds
// (nothing to check counts as holding, and says so).
struct CheckResult {
    std::string name;      // "rows sum to 1"
    std::string measured;  // "largest |row sum − 1| = 2.2e-16 (tolerance 1e-12)"
    bool passed = true;
    std::string failure;   // the first entry that breaks it, when it fails
};

struct CheckReport {
    std::vector<CheckResult> checks;
    std::vector<std::string> warnings;  // true of this trace and worth knowing, not failures
    bool passed() const;
    // The first failure, described in one line.
    std::optional<std::string> first_failure() const;
};

// The invariants, in this order:
//  1. no NaN or infinity anywhere, except −∞ at masked scores;
//  2. masked weights are exactly 0;
//  3. each weights row sums to 1 (within 1e-12 for float64, 1e-5 for float32), or to 0 when
//     every key of the row is masked;
//  4. the context equals weights · values, recomputed here with plain loops.
// A warning when some weights are negative (sum normalisation of mixed-sign scores).
CheckReport check_trace(const Trace& trace);

// The first invariant that fails, described in one line; nothing when all hold.
std::optional<std::string> first_failed_check(const Trace& trace);

}  // namespace attntrace
