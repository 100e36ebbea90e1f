// Memory: how much this process may use, and sizes as people write them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace attntrace {

// Physical memory in bytes (sysconf), or 0 when unknown.
std::uint64_t physical_memory();

// What the process's control group still allows: for each cgroup from the process's own up
// to the root, its limit minus its current use (v2: memory.max and memory.current; v1:
// memory.limit_in_bytes and memory.usage_in_bytes), the smallest of them; nothing when no
// level sets a limit. `root` is where the cgroup file systems are mounted and `self` the
// process's cgroup list (both parameters for tests).
std::optional<std::uint64_t> cgroup_memory_available(const std::filesystem::path& root = "/sys/fs/cgroup",
                                                     const std::filesystem::path& self = "/proc/self/cgroup");

// What RLIMIT_AS (ulimit -v) and RLIMIT_DATA still allow beyond the address space the process
// already uses and what `threads` threads will reserve; nothing when neither is set.
std::optional<std::uint64_t> rlimit_memory_available(int threads);

// What the memory guard allows, and for messages where that number came from.
struct MemoryLimit {
    std::uint64_t bytes = 0;
    std::string source;  // "" for --max-memory itself, else why the default is what it is

    // "--max-memory 1.0 MiB" or "the default --max-memory 310.9 MiB (what ulimit -v leaves)".
    std::string describe() const;
};

// Memory counted as it is used, against a limit: reading charges the document it builds and
// the structures made from it, so an input of any shape is refused as soon as it needs more
// than the limit, whatever its size on disk. Not thread-safe: one reader charges it.
class MemoryBudget {
public:
    MemoryBudget(MemoryLimit limit, std::string origin) : limit_(std::move(limit)), origin_(std::move(origin)) {}

    // Throws DataError "ORIGIN: reading it needs more than LIMIT" once the total passes it.
    void charge(std::uint64_t bytes);
    std::uint64_t used() const { return used_; }

private:
    MemoryLimit limit_;
    std::string origin_;
    std::uint64_t used_ = 0;
};

// The default --max-memory: half of physical memory (8 GiB when it cannot be read), or less
// when the cgroup (a container, a JupyterHub pod) or a resource limit allows less.
MemoryLimit default_memory_limit();

// "512M", "2g", "1.5GiB", "4gb", "100000" (bytes); the unit in any case, always binary (k = 1024):
// nothing when the text is not a size.
std::optional<std::uint64_t> parse_size(std::string_view text);

// 1536 → "1.5 KiB", 3·2³⁰ → "3.0 GiB".
std::string format_size(std::uint64_t bytes);

}  // namespace attntrace
