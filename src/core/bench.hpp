// What `attntrace bench` measures: each configuration of its grid timed, its arithmetic
// counted exactly, its rate set against the machine's own matrix-multiply rate. Plain data, for
// commands/bench_command (which measures) and render/bench_report.cpp (which writes it).
#pragma once

#include "core/types.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attntrace {

// The two paths through the core that bench times.
// The streaming forward path (--summary), the trace path, and the streaming backward pass of
// the loss sum (--summary --backward sum: its forward pass and its backward pass).
enum class BenchPath { streaming, trace, backward };
inline constexpr NameTable<BenchPath, 3> bench_path_names{
    {{BenchPath::streaming, "streaming"}, {BenchPath::trace, "trace"}, {BenchPath::backward, "backward"}}};
constexpr const auto& names_of(BenchPath) { return bench_path_names; }

// The arithmetic attention itself defines for n tokens of d numbers (whatever the heads: their
// d_head add up to d), counted exactly: the (query, key) pairs a query may see (n², or n(n+1)/2
// under the causal mask), a score (d multiply-adds) and a share of a value (d more) per pair,
// and one exponential per pair. The projections (3·n·d² multiply-adds, linear in n) are not in it.
struct AttentionOperations {
    std::int64_t pairs = 0, multiply_adds = 0, exps = 0;
};

// One timed run: its wall-clock seconds and the CPU seconds the process spent in it (every
// thread's). A run that computes the whole time is on the CPU at least as long as the wall
// clock runs; less means other work had the CPU for part of it.
struct RunTime {
    double wall = 0, cpu = 0;
};

// How a configuration was timed: runs until the `agree` fastest lie within `tolerance` of the
// fastest (relative), at most `max_runs`. The time is the median of those agreeing runs, or of
// every run when they never agreed. With `agree` = 1 nothing is compared and `checked` is
// false. The machine was busy when the runs never agreed, or when a run the time comes from
// spent more than `tolerance` of its wall time off the CPU.
struct Timing {
    std::vector<double> runs;  // every timed run's wall seconds, in order
    double seconds = 0;
    bool checked = false;  // at least two runs were compared
    bool stable = false;   // checked, and `agree` runs agreed
    double spread = 0;     // (slowest − fastest) / fastest of the runs the time is the median of
    double off_cpu = 0;    // the largest share of those runs' wall time the process was off the CPU
    bool busy = false;     // checked, and not stable or off the CPU more than the tolerance
};

// One configuration of the grid, timed.
struct BenchRun {
    BenchPath path;
    Mode mode;
    Dtype dtype;
    int threads = 1;
    std::int64_t n = 0;
    Timing timing;
    AttentionOperations operations;
    double gflops = 0, of_gemm = 0;
    double doubling = 0;      // seconds / seconds at n/2 (0: no smaller n measured)
    double ops_doubling = 0;  // multiply-adds / multiply-adds at n/2, exactly (0: as doubling)
    bool doubling_stable = false;  // neither time is from a busy machine (Timing::busy)
    double seconds() const { return timing.seconds; }
};

// The machine's rates (GEMM in GFLOP/s, exp in G/s) by (dtype name, threads), listed in the
// order of the names.
using BenchRates = std::map<std::pair<std::string_view, int>, double>;

// What bench reports: the machine, the grid's shape, how each configuration was timed, the
// machine's rates and the runs.
struct BenchReport {
    std::string machine;  // the CPU's model name
    int cores = 0;
    std::int64_t dim = 0;
    int heads = 1;
    int repeats = 0;             // the runs of a configuration that must agree
    double tolerance = 0;        // how closely they must agree (relative to the fastest)
    int tries_per_agreeing_run = 0;  // runs are repeated up to this many times as many as must agree
    BenchRates gemm, exp;
    std::vector<BenchRun> runs;
};

}  // namespace attntrace
