#include "util/memory.hpp"

#include "core/error.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cctype>
#include <cmath>
#include <algorithm>
#include <fstream>
#include <omp.h>
#include <sys/resource.h>
#include <unistd.h>

namespace attntrace {

std::uint64_t physical_memory() {
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page_size = ::sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page_size <= 0) return 0;
    return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size);
}

namespace {

// The first line of a file as a number of bytes; nothing for "max", a missing file or text.
std::optional<std::uint64_t> read_bytes(const std::filesystem::path& file) {
    std::ifstream in(file);
    std::string line;
    if (!std::getline(in, line)) return std::nullopt;
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(line.data(), line.data() + line.size(), value);
    if (error != std::errc() || end == line.data()) return std::nullopt;
    // The whole line, or nothing: "4096abc" is not 4096 (white space after it is allowed).
    if (std::string_view(end, static_cast<std::size_t>(line.data() + line.size() - end)).find_first_not_of(" \t\r") !=
        std::string_view::npos)
        return std::nullopt;
    return value;
}

// v1 reports "no limit" as a number near 2⁶³.
constexpr std::uint64_t no_limit_from = std::uint64_t{1} << 62;

// min over the levels from `leaf` up to `mount` of limit − use.
std::optional<std::uint64_t> available_along(const std::filesystem::path& mount, std::string_view leaf,
                                             const char* limit_file, const char* use_file) {
    std::optional<std::uint64_t> available;
    std::filesystem::path below = std::filesystem::path(leaf).relative_path();  // the levels under the mount
    while (true) {
        const std::filesystem::path level = below.empty() ? mount : mount / below;
        const auto limit = read_bytes(level / limit_file);
        if (limit && *limit < no_limit_from) {
            const std::uint64_t used = read_bytes(level / use_file).value_or(0);
            const std::uint64_t left = *limit > used ? *limit - used : 0;
            available = std::min(available.value_or(left), left);
        }
        if (below.empty()) return available;
        below = below.parent_path();
    }
}

std::optional<std::uint64_t> smaller(std::optional<std::uint64_t> a, std::optional<std::uint64_t> b) {
    if (!a) return b;
    if (!b) return a;
    return std::min(*a, *b);
}

}  // namespace

std::optional<std::uint64_t> cgroup_memory_available(const std::filesystem::path& root,
                                                     const std::filesystem::path& self) {
    // Lines "ID:CONTROLLERS:PATH": v2 is "0::PATH", v1's memory controller "N:memory:PATH".
    std::ifstream in(self);
    std::optional<std::uint64_t> available;
    for (std::string line; std::getline(in, line);) {
        const auto first = line.find(':'), second = line.find(':', first + 1);
        if (first == std::string::npos || second == std::string::npos) continue;
        const std::string_view controllers = std::string_view(line).substr(first + 1, second - first - 1);
        const std::string_view path = std::string_view(line).substr(second + 1);
        if (line.starts_with("0::"))
            available = smaller(available, available_along(root, path, "memory.max", "memory.current"));
        else if (controllers == "memory" || controllers.find(",memory") != std::string_view::npos ||
                 controllers.starts_with("memory,"))
            available = smaller(available,
                                available_along(root / "memory", path, "memory.limit_in_bytes", "memory.usage_in_bytes"));
    }
    return available;
}

std::optional<std::uint64_t> rlimit_memory_available(int threads) {
    std::optional<std::uint64_t> limit;
    for (const int resource : {RLIMIT_AS, RLIMIT_DATA}) {
        rlimit r{};
        if (::getrlimit(resource, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
            limit = smaller(limit, static_cast<std::uint64_t>(r.rlim_cur));
    }
    if (!limit) return std::nullopt;
    // /proc/self/statm: the address space in use, in pages, first.
    std::ifstream statm("/proc/self/statm");
    std::uint64_t pages = 0;
    statm >> pages;
    const long page_size = ::sysconf(_SC_PAGE_SIZE);
    const std::uint64_t used = pages * static_cast<std::uint64_t>(page_size > 0 ? page_size : 4096);
    // Each further thread reserves address space it mostly never touches: its stack (8 MiB
    // by default) and a glibc malloc arena (64 MiB), which ulimit -v counts all the same.
    const std::uint64_t reserved = static_cast<std::uint64_t>(std::max(threads - 1, 0)) * (std::uint64_t{72} << 20);
    return *limit > used + reserved ? *limit - used - reserved : 0;
}

MemoryLimit default_memory_limit() {
    const std::uint64_t total = physical_memory();
    MemoryLimit limit{total > 0 ? total / 2 : std::uint64_t{8} << 30,
                      total > 0 ? "half of the machine's memory" : "the machine's memory is unknown"};
    if (const auto cgroup = cgroup_memory_available(); cgroup && *cgroup < limit.bytes)
        limit = {*cgroup, "what the cgroup's memory limit leaves"};
    if (const auto rlimit = rlimit_memory_available(omp_get_max_threads()); rlimit && *rlimit < limit.bytes)
        limit = {*rlimit, "what ulimit -v leaves"};
    return limit;
}

void MemoryBudget::charge(std::uint64_t bytes) {
    used_ += bytes;
    if (used_ <= limit_.bytes) return;
    throw DataError(fmt::format("{}: reading it needs more than {}; the input is too large for this limit",
                                origin_, limit_.describe()));
}

namespace {

// A size given on the command line, not rounded: in the largest unit that shows it exactly
// to a tenth (4M "4.0 MiB", 1.5G "1.5 GiB"), else in a smaller one (1500 "1500 B").
std::string exact_size(std::uint64_t bytes) {
    constexpr const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    for (int unit = 5; unit >= 1; --unit) {
        const double scale = std::ldexp(1.0, 10 * unit), tenths = static_cast<double>(bytes) / scale * 10;
        if (static_cast<double>(bytes) >= scale && tenths == std::round(tenths) && tenths < 1e15)
            return fmt::format("{:.1f} {}", tenths / 10, units[unit - 1]);
    }
    return fmt::format("{} B", bytes);
}

}  // namespace

std::string MemoryLimit::describe() const {
    if (source.empty()) return fmt::format("--max-memory {}", exact_size(bytes));
    return fmt::format("the default --max-memory {} ({})", format_size(bytes), source);
}

std::optional<std::uint64_t> parse_size(std::string_view text) {
    double value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || !(value >= 0) || !std::isfinite(value)) return std::nullopt;
    // The unit in any case: 4g, 4G, 4GB, 4GiB, 4gib (all binary: 4 × 2³⁰ bytes), or bytes.
    std::string unit(text.substr(static_cast<std::size_t>(end - text.data())));
    for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (unit.ends_with("ib") && unit.size() > 2) unit.resize(unit.size() - 2);
    else if (unit.ends_with("b")) unit.pop_back();
    double scale = 1;
    if (unit == "k") scale = 1024.0;
    else if (unit == "m") scale = 1024.0 * 1024;
    else if (unit == "g") scale = 1024.0 * 1024 * 1024;
    else if (unit == "t") scale = 1024.0 * 1024 * 1024 * 1024;
    else if (!unit.empty()) return std::nullopt;
    const double bytes = value * scale;
    if (bytes >= 1.8e19) return std::nullopt;
    return static_cast<std::uint64_t>(bytes);
}

std::string format_size(std::uint64_t bytes) {
    constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double value = static_cast<double>(bytes);
    std::size_t unit = 0;
    while (value >= 1024 && unit + 1 < std::size(units)) value /= 1024, ++unit;
    return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", value, units[unit]);
}

}  // namespace attntrace
