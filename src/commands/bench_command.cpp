#include "commands/bench_command.hpp"

#include "attention/kernels.hpp"
#include "attention/summary.hpp"
#include "attention/trace.hpp"
#include "commands/guards.hpp"
#include "input/generator.hpp"
#include "render/json_writer.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>

namespace attntrace {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// Median of `repeats` timed runs after one untimed warm-up; a run longer than a quarter of
// a second is its own warm-up and is timed once (its noise is small beside it), which keeps
// the default grid under a minute.
template <typename Job>
double median_seconds(int repeats, Job&& job) {
    auto start = Clock::now();
    job();
    const double first = seconds_since(start);
    if (first > 0.25) return first;
    std::vector<double> times;
    for (int r = 0; r < repeats; ++r) {
        start = Clock::now();
        job();
        times.push_back(seconds_since(start));
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

// The machine's matrix-multiply rate through the same blocked Eigen product the trace path
// uses: a (1024×1024)·(1024×1024) product, 2·1024³ floating-point operations.
template <typename T>
double gemm_gflops(int repeats) {
    SplitMix64 rng(7);
    const MatrixT<T> a = random_matrix(rng, 1024, 1024, 1.0).cast<T>();
    const MatrixT<T> b = random_matrix(rng, 1024, 1024, 1.0).cast<T>();
    MatrixT<T> c;
    const double seconds = median_seconds(repeats, [&] { c = multiply_by_row_blocks<T>(a, b); });
    return 2.0 * 1024 * 1024 * 1024 / seconds / 1e9;
}

struct Run {
    std::string path, mode, dtype;
    int threads = 1;
    std::int64_t n = 0;
    double seconds = 0, gflops = 0, of_gemm = 0;
    double doubling = 0;  // seconds / seconds at n/2 (0: no smaller n measured)
};

Problem random_problem(std::int64_t n, std::int64_t d) {
    SplitMix64 rng(42);
    SingleSequenceInput input;
    input.sequence.vectors = random_matrix(rng, n, d, 1.0);
    for (std::int64_t i = 1; i <= n; ++i) input.sequence.tokens.push_back(fmt::format("t{}", i));
    input.weights = generate_projections(43, d, d);
    Problem problem;
    problem.origin = "bench";
    problem.input = std::move(input);
    return problem;
}

std::string machine_text() {
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);)
        if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
    return "unknown CPU";
}

// The largest run of the grid must fit --max-memory, and the whole grid --max-time, before
// anything starts. Each run is timed 1 + repeats times; a causal run visits half the scores.
void require_grid_limits(const BenchRequest& request) {
    double seconds = 0;
    for (const std::int64_t n : request.sizes)
        for (const auto& path : request.paths) {
            if (path == "trace" && n > request.trace_max) continue;
            WorkShape shape;
            shape.rows = shape.cols = static_cast<double>(n);
            shape.d_in = shape.d_k = shape.d_v = static_cast<double>(request.dim);
            shape.label_bytes = shape.rows * 40;  // "t1" … "t1048576"
            const std::uint64_t need = path == "trace" ? trace_bytes(shape, Dtype::float64, RenderOptions{}, false)
                                                       : summary_bytes(shape, Dtype::float64, false, 3);
            require_memory(need, request.max_memory, "", fmt::format("bench: the {} path at n = {}", path, n),
                           "choose smaller --sizes or --trace-max");
            const double run = path == "trace" ? trace_seconds(shape, Format::json) - 4 * shape.cells() * 100e-9
                                               : summary_seconds(shape);
            const double runs = static_cast<double>(request.modes.size() * request.dtypes.size() *
                                                    std::max<std::size_t>(request.threads.size(), 1)) *
                                (1 + request.repeats);
            seconds += run * runs;
        }
    require_time(seconds, request.max_seconds, "", "bench: this grid", "choose smaller --sizes");
}

}  // namespace

void run_bench(const BenchRequest& request, std::ostream& out) {
    require_grid_limits(request);
    std::vector<int> thread_counts = request.threads;
    if (thread_counts.empty())
        for (int t = 1; t <= omp_get_num_procs(); ++t) thread_counts.push_back(t);

    std::map<std::pair<std::string, int>, double> gemm;  // (dtype, threads) → GFLOP/s
    for (const auto& dtype : request.dtypes)
        for (const int t : thread_counts) {
            omp_set_num_threads(t);
            gemm[{dtype, t}] = *parse_dtype(dtype) == Dtype::float32 ? gemm_gflops<float>(request.repeats)
                                                                     : gemm_gflops<double>(request.repeats);
        }

    std::vector<Run> runs;
    std::map<std::tuple<std::string, std::string, std::string, int, std::int64_t>, double> measured;  // → seconds
    for (const std::int64_t n : request.sizes) {
        const Problem problem = random_problem(n, request.dim);
        for (const auto& path : request.paths) {
            if (path == "trace" && n > request.trace_max) continue;
            for (const auto& mode : request.modes)
                for (const auto& dtype : request.dtypes)
                    for (const int t : thread_counts) {
                        omp_set_num_threads(t);
                        TraceOptions options;
                        options.mode = *parse_mode(mode);
                        options.dtype = *parse_dtype(dtype);
                        const double seconds = median_seconds(request.repeats, [&] {
                            if (path == "trace") (void)trace(problem, options);
                            else (void)summarize(problem, options, SummaryOptions{});
                        });
                        Run run{path, mode, dtype, t, n, seconds, 0, 0, 0};
                        // 4·n²·d for self (Q·Kᵀ and A·V, a multiply and an add each); causal
                        // computes about half of it.
                        const double flops = (options.mode == Mode::causal ? 2.0 : 4.0) * static_cast<double>(n) *
                                             static_cast<double>(n) * static_cast<double>(request.dim);
                        run.gflops = flops / seconds / 1e9;
                        run.of_gemm = run.gflops / gemm[{dtype, t}];
                        if (const auto half = measured.find({path, mode, dtype, t, n / 2});
                            n % 2 == 0 && half != measured.end())
                            run.doubling = seconds / half->second;
                        measured[{path, mode, dtype, t, n}] = seconds;
                        runs.push_back(run);
                    }
        }
    }

    if (request.format == Format::json) {
        fmt::memory_buffer b;
        b.append(std::string_view("{\n  \"schema\": \"attntrace.bench/1\",\n  \"machine\": {\"cpu\": "));
        append_json_string(b, machine_text());
        fmt::format_to(std::back_inserter(b), ", \"cores\": {}}},\n  \"d\": {},\n  \"gemm\": [", omp_get_num_procs(), request.dim);
        bool first = true;
        for (const auto& [key, rate] : gemm) {
            fmt::format_to(std::back_inserter(b), "{}\n    {{\"dtype\": \"{}\", \"threads\": {}, \"gflops\": {:.2f}}}",
                           first ? "" : ",", key.first, key.second, rate);
            first = false;
        }
        b.append(std::string_view("\n  ],\n  \"runs\": ["));
        for (std::size_t i = 0; i < runs.size(); ++i) {
            const Run& r = runs[i];
            fmt::format_to(std::back_inserter(b),
                           "{}\n    {{\"path\": \"{}\", \"mode\": \"{}\", \"dtype\": \"{}\", \"threads\": {}, \"n\": {}, "
                           "\"seconds\": {:.6f}, \"gflops\": {:.2f}, \"of_gemm\": {:.3f}, \"doubling\": {}}}",
                           i ? "," : "", r.path, r.mode, r.dtype, r.threads, r.n, r.seconds, r.gflops, r.of_gemm,
                           r.doubling > 0 ? fmt::format("{:.2f}", r.doubling) : "null");
        }
        b.append(std::string_view("\n  ]\n}\n"));
        out.write(b.data(), static_cast<std::streamsize>(b.size()));
        return;
    }
    out << fmt::format("attntrace bench · {} · {} cores · d = {}\n", machine_text(), omp_get_num_procs(), request.dim);
    out << "GEMM rate (1024³, the trace path's blocked Eigen product):";
    for (const auto& [key, rate] : gemm) out << fmt::format("  {} ×{}: {:.1f}", key.first, key.second, rate);
    out << " GFLOP/s\n";
    out << "GFLOP/s counts 4·n²·d (self) and 2·n²·d (causal); ×doubling = time(n) / time(n/2), 4 for a quadratic cost\n\n";
    out << fmt::format("{:<10} {:<7} {:<8} {:>7} {:>6} {:>10} {:>8} {:>8} {:>10}\n", "path", "mode", "dtype", "threads", "n",
                       "seconds", "GFLOP/s", "of GEMM", "×doubling");
    for (const Run& r : runs)
        out << fmt::format("{:<10} {:<7} {:<8} {:>7} {:>6} {:>10.4f} {:>8.1f} {:>8.2f} {:>10}\n", r.path, r.mode, r.dtype,
                           r.threads, r.n, r.seconds, r.gflops, r.of_gemm,
                           r.doubling > 0 ? fmt::format("{:.2f}", r.doubling) : "");
}

}  // namespace attntrace
