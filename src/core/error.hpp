// Errors the user sees. Every failure attntrace reports is one of these two kinds;
// main() turns it into one `attntrace: error: …` line on stderr and the exit code below.
#pragma once

#include <stdexcept>
#include <string>

namespace attntrace {

// The command line asked for something impossible (bad option, bad value, conflict): exit 2.
class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The input (file, JSON, numbers) or the computation on it is not valid: exit 1.
class DataError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

inline constexpr int exit_data_error = 1;
inline constexpr int exit_usage_error = 2;

}  // namespace attntrace
