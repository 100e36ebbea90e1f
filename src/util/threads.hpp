// What the environment asks of OpenMP, checked before the first parallel region: libgomp
// takes OMP_NUM_THREADS and OMP_STACKSIZE as they are, and a huge thread count or a stack
// too small for the kernels ends in a segmentation fault inside the runtime.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace attntrace {

// The most threads attntrace runs (--threads has the same range).
inline constexpr int max_threads = 1024;
// The stack every thread needs: Eigen's products keep up to 128 KiB of packed blocks on it,
// and 256 KiB was measured to be enough; four times that leaves room.
inline constexpr std::uint64_t min_thread_stack = std::uint64_t{1} << 20;

// OMP_STACKSIZE's syntax: a number with an optional B, K, M or G (K when none is given).
std::optional<std::uint64_t> parse_omp_stacksize(std::string_view text);

// Sets the thread count (`requested`: --threads, else OMP_NUM_THREADS, else the cores) and
// makes sure every thread has a stack of at least min_thread_stack: raises the soft
// RLIMIT_STACK of the main thread when the hard limit allows, and the default stack of new
// threads. Throws UsageError when OMP_NUM_THREADS asks for more than max_threads (and no
// --threads overrides it), or when OMP_STACKSIZE, GOMP_STACKSIZE or the hard stack limit
// is below min_thread_stack.
void prepare_threads(std::optional<int> requested);

}  // namespace attntrace
