#include "util/duration.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace attntrace {

std::optional<double> parse_duration(std::string_view text) {
    double value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end == text.data() || !(value >= 0) || !std::isfinite(value)) return std::nullopt;
    const std::string_view unit = text.substr(static_cast<std::size_t>(end - text.data()));
    if (unit.empty() || unit == "s") return value;
    if (unit == "ms") return value / 1000;
    if (unit == "m" || unit == "min") return value * 60;
    if (unit == "h") return value * 3600;
    return std::nullopt;
}

std::string format_duration(double seconds) {
    if (seconds < 90) return fmt::format("{:.0f} s", std::max(seconds, 1.0));
    if (seconds < 5400) return fmt::format("{:.1f} min", seconds / 60);
    return fmt::format("{:.1f} h", seconds / 3600);
}

}  // namespace attntrace
