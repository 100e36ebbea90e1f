// Durations as people write them: "90s", "10m", "1.5h", "250ms", "300" (seconds).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace attntrace {

// Seconds; a number with an optional unit ms, s, m (or min) or h (seconds when none). Nothing
// when the text is not a duration.
std::optional<double> parse_duration(std::string_view text);

// An estimate, rounded as estimates are: 0.25 → "0.25 s", 42 → "42 s", 150 → "2.5 min",
// 7200 → "2.0 h".
std::string format_duration(double seconds);

// A limit as it was given, not rounded: 0.1 → "0.1 s", 2.2 → "2.2 s", 300 → "5 min",
// 90 → "1.5 min", 100 → "100 s", 5400 → "1.5 h". The value in its unit is the shortest text
// that reads back as it, so a message never states a limit other than the one in force.
std::string format_limit(double seconds);

}  // namespace attntrace
