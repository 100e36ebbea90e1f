#include "util/threads.hpp"

#include "core/error.hpp"
#include "util/memory.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>
#include <omp.h>
#include <pthread.h>
#include <sys/resource.h>

#include <alloca.h>
#include <charconv>
#include <cstdlib>

namespace attntrace {
namespace {

// The first number of OMP_NUM_THREADS ("8" or a nesting list "8,2"); nothing when unset or
// not a number (libgomp ignores such a value too).
std::optional<long long> environment_threads() {
    const char* text = std::getenv("OMP_NUM_THREADS");
    if (!text) return std::nullopt;
    std::string_view value(text);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    long long count = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), count);
    if (error == std::errc::result_out_of_range) return std::numeric_limits<long long>::max();
    if (error != std::errc() || end == value.data()) return std::nullopt;
    // The number is read whole: what may follow it is spaces, then the end or a nesting list
    // (libgomp ignores "4abc" as a whole, not as 4).
    std::string_view rest = value.substr(static_cast<std::size_t>(end - value.data()));
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    if (!rest.empty() && rest.front() != ',') return std::nullopt;
    return count;
}

void require_stack_variable(const char* name) {
    const char* text = std::getenv(name);
    if (!text) return;
    const auto size = parse_omp_stacksize(text);
    if (size && *size < min_thread_stack)
        throw UsageError(fmt::format("{}={} gives each thread less stack than attntrace's kernels need ({}): "
                                     "unset it or raise it",
                                     name, printable(text), format_size(min_thread_stack)));
}

// The main thread's stack grows up to the soft RLIMIT_STACK, which may be raised up to the
// hard one; new threads take their default stack size from it as the program started.
void ensure_stack() {
    rlimit stack{};
    if (::getrlimit(RLIMIT_STACK, &stack) != 0 || stack.rlim_cur == RLIM_INFINITY || stack.rlim_cur >= min_thread_stack)
        return;
    if (stack.rlim_max != RLIM_INFINITY && stack.rlim_max < min_thread_stack)
        throw UsageError(fmt::format("the stack limit (ulimit -s) is {}, less than attntrace's kernels need ({})",
                                     format_size(stack.rlim_max), format_size(min_thread_stack)));
    stack.rlim_cur = min_thread_stack;
    ::setrlimit(RLIMIT_STACK, &stack);
    pthread_attr_t attributes;
    if (::pthread_attr_init(&attributes) != 0) return;
    if (::pthread_attr_setstacksize(&attributes, min_thread_stack) == 0) ::pthread_setattr_default_np(&attributes);
    ::pthread_attr_destroy(&attributes);
}

// Under ulimit -v the main thread's stack may be unable to grow later, once the heap has
// taken the address space, and a stack that cannot grow is a segmentation fault, not an
// error attntrace could report. So it is grown now, by what the kernels need (other threads'
// stacks are mapped whole when they start).
[[gnu::noinline]] void grow_main_stack() {
    constexpr std::size_t bytes = 512 << 10;
    volatile char* block = static_cast<volatile char*>(alloca(bytes));
    for (std::size_t i = 0; i < bytes; i += 4096) block[i] = 0;
}

bool address_space_limited() {
    rlimit limit{};
    return ::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY;
}

}  // namespace

std::optional<std::uint64_t> parse_omp_stacksize(std::string_view text) {
    while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
    while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end == text.data()) return std::nullopt;
    const std::string_view unit = text.substr(static_cast<std::size_t>(end - text.data()));
    int shift = 10;  // K by default
    if (unit == "B" || unit == "b") shift = 0;
    else if (unit == "M" || unit == "m") shift = 20;
    else if (unit == "G" || unit == "g") shift = 30;
    else if (!unit.empty() && unit != "K" && unit != "k") return std::nullopt;
    if (value > (std::numeric_limits<std::uint64_t>::max() >> shift)) return std::numeric_limits<std::uint64_t>::max();
    return value << shift;
}

void prepare_threads(std::optional<int> requested) {
    if (!requested)
        if (const auto asked = environment_threads(); asked && *asked > max_threads)
            throw UsageError(fmt::format("OMP_NUM_THREADS asks for {} threads, more than attntrace runs ({}): "
                                         "lower it, or choose with --threads N",
                                         *asked, max_threads));
    require_stack_variable("OMP_STACKSIZE");
    require_stack_variable("GOMP_STACKSIZE");
    ensure_stack();
    if (address_space_limited()) grow_main_stack();
    if (requested) omp_set_num_threads(*requested);
}

}  // namespace attntrace
