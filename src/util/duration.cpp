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
    if (seconds < 9.95) return fmt::format("{:.2g} s", seconds);  // 0.0012 s, 0.25 s, 3.5 s
    if (seconds < 90) return fmt::format("{:.0f} s", seconds);
    if (seconds < 5400) return fmt::format("{:.1f} min", seconds / 60);
    return fmt::format("{:.1f} h", seconds / 3600);
}

std::string format_limit(double seconds) {
    // In minutes or hours only where that is exact to a tenth: 90 s is 1.5 min, 100 s stays 100 s.
    const auto whole_tenths = [&](double unit) {
        const double tenths = seconds / unit * 10;
        return seconds >= unit && tenths == std::round(tenths) && tenths < 1e15;
    };
    if (whole_tenths(3600)) return fmt::format("{} h", seconds / 3600);
    if (whole_tenths(60)) return fmt::format("{} min", seconds / 60);
    return fmt::format("{} s", seconds);
}

}  // namespace attntrace
