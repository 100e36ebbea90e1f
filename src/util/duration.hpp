// Durations as people write them: "90s", "10m", "1.5h", "250ms", "300" (seconds).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace attntrace {

// Seconds; a number with an optional unit ms, s, m (or min) or h (seconds when none). Nothing
// when the text is not a duration.
std::optional<double> parse_duration(std::string_view text);

// 42 → "42 s", 150 → "2.5 min", 7200 → "2.0 h".
std::string format_duration(double seconds);

}  // namespace attntrace
