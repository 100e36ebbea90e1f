// `attntrace bench`: time both paths through the core over growing n, against the machine's
// own matrix-multiply rate measured in the same process. A benchmark, not a test.
#pragma once

#include "core/bench.hpp"
#include "render/render.hpp"
#include "util/memory.hpp"

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace attntrace {

struct BenchRequest {
    std::vector<std::int64_t> sizes{512, 1024, 2048, 4096, 8192, 16384};
    std::int64_t dim = 64;
    int heads = 1;                         // each of d_head = dim / heads
    std::vector<Mode> modes{Mode::self, Mode::causal};
    std::vector<Dtype> dtypes{Dtype::float32, Dtype::float64};
    std::vector<int> threads;              // empty: 1 … the number of cores
    std::vector<BenchPath> paths{BenchPath::streaming, BenchPath::trace};
    std::int64_t trace_max = 4096;         // the trace path holds n×n matrices: larger n are skipped
    int repeats = 3;                       // timed runs per configuration (median reported)
    MemoryLimit max_memory;                // the grid is refused if one run would need more
    double max_seconds = 0;                // or if the whole grid would take longer (0: no limit)
    Format format = Format::table;
};

void run_bench(const BenchRequest& request, std::ostream& out);

// The operations of attention for n tokens of d numbers (AttentionOperations), exactly; with
// several heads (d = heads·d_head) each head has its own softmax: an exp per pair and head.
AttentionOperations attention_operations(std::int64_t n, std::int64_t d, bool causal, int heads = 1);
// ... and of the streaming backward pass of the loss sum, its forward pass included: per
// visible pair 5·d multiply-adds (the forward's score and share of a value, the score again,
// and its shares of dK and dQ; the sum's dZ is the same row for every token (ones, or with W_o
// its row sums), so dP = dZ·Vᵀ and dV = Pᵀ·dZ are sums, not products) and two exps (the
// forward's, and the backward's again).
AttentionOperations backward_operations(std::int64_t n, std::int64_t d, bool causal, int heads = 1);

// How a configuration is timed (Timing): runs until the `agree` fastest lie within `tolerance` of
// the fastest (relative), at most `max_runs`.
// `run_once` runs the job once and returns its RunTime (the benchmark times the job; a test
// gives timings of its own).
template <typename RunOnce>
Timing time_until_stable(RunOnce&& run_once, int agree, int max_runs, double tolerance);

}  // namespace attntrace

#include <algorithm>
#include <numeric>

namespace attntrace {

template <typename RunOnce>
Timing time_until_stable(RunOnce&& run_once, int agree, int max_runs, double tolerance) {
    Timing t;
    agree = std::max(agree, 1);
    max_runs = std::max(max_runs, agree);
    t.checked = agree > 1;
    std::vector<RunTime> runs;
    // The median, spread and time off the CPU of the `count` fastest runs.
    const auto settle = [&](std::size_t count) {
        std::vector<std::size_t> order(runs.size());
        std::iota(order.begin(), order.end(), std::size_t{0});
        std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return runs[a].wall < runs[b].wall; });
        order.resize(count);
        const double fastest = runs[order.front()].wall, slowest = runs[order.back()].wall;
        t.spread = fastest > 0 ? (slowest - fastest) / fastest : 0;
        t.seconds = runs[order[count / 2]].wall;
        for (const std::size_t i : order)
            if (runs[i].wall > 0) t.off_cpu = std::max(t.off_cpu, 1 - runs[i].cpu / runs[i].wall);
        t.busy = t.checked && (!t.stable || t.off_cpu > tolerance);
    };
    while (static_cast<int>(runs.size()) < max_runs) {
        runs.push_back(run_once());
        t.runs.push_back(runs.back().wall);
        if (static_cast<int>(runs.size()) < agree) continue;
        std::vector<double> sorted = t.runs;
        std::sort(sorted.begin(), sorted.end());
        const auto k = static_cast<std::size_t>(agree);
        if (!t.checked || sorted[k - 1] - sorted[0] <= tolerance * sorted[0]) {
            t.stable = t.checked;
            settle(k);
            return t;
        }
    }
    settle(runs.size());
    return t;
}

}  // namespace attntrace
