// Memory: how much the machine has, and sizes as people write them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace attntrace {

// Physical memory in bytes (sysconf), or 0 when unknown.
std::uint64_t physical_memory();

// The default --max-memory: half of physical memory (8 GiB when it cannot be read).
std::uint64_t default_memory_limit();

// "512M", "2G", "1.5GiB", "100000" (bytes): nothing when the text is not a size.
std::optional<std::uint64_t> parse_size(std::string_view text);

// 1536 → "1.5 KiB", 3·2³⁰ → "3.0 GiB".
std::string format_size(std::uint64_t bytes);

}  // namespace attntrace
