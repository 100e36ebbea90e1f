// Running the built attntrace under resource limits (ulimit -v, -s) and measuring its peak
// resident memory, for the tests of the guards: through the small launcher
// tests/support/measure.cpp, whose own memory does not count.
#pragma once

#include "support/cli.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace limited {

struct Limits {
    std::optional<unsigned long> address_space;  // RLIMIT_AS in bytes (ulimit -v)
    std::optional<unsigned long> stack_soft;     // RLIMIT_STACK (ulimit -Ss)
    std::optional<unsigned long> stack_hard;     // (ulimit -Hs)
};

struct Result : cli::Result {
    long peak_kib = 0;  // the child's largest resident set (getrusage ru_maxrss)
};

// Runs ATTNTRACE_BINARY with `args` under `limits`; `env` as for cli::run.
Result run(const std::vector<std::string>& args, const Limits& limits = {},
           const std::map<std::string, std::string>& env = {});

}  // namespace limited
