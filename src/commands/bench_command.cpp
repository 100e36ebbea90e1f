#include "commands/bench_command.hpp"

#include "attention/kernels.hpp"
#include "attention/modes.hpp"
#include "attention/streaming.hpp"
#include "attention/streaming_backward.hpp"
#include "attention/summary.hpp"
#include "attention/trace.hpp"
#include "commands/guards.hpp"
#include "core/error.hpp"
#include "core/generator.hpp"
#include "core/gradients.hpp"
#include "util/format.hpp"

#include <omp.h>
#include <sys/resource.h>

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

// The CPU time of the whole process so far, every thread's, user and system.
double process_cpu_seconds() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// The runs of one configuration must agree within this fraction of the fastest to be a
// measurement; runs are repeated up to this many times as many as must agree.
constexpr double stable_tolerance = 0.10;
constexpr int tries_per_agreeing_run = 3;

// Timed runs after one untimed warm-up, until `repeats` of them agree (time_until_stable). A
// warm-up longer than a quarter of a second needs 2 agreeing runs, not `repeats` (the noise of
// such a run is small beside it), which keeps the default grid near a minute. The warm-up is
// never a timed run: it pays for what a first run alone pays (memory the allocator takes from
// the system and touches, the threads' start).
template <typename Job>
Timing timed(int repeats, Job&& job) {
    auto start = Clock::now();
    job();
    const int agree = seconds_since(start) > 0.25 ? std::min(repeats, 2) : repeats;
    return time_until_stable(
        [&] {
            const double cpu_before = process_cpu_seconds();
            const auto begin = Clock::now();
            job();
            const double wall = seconds_since(begin);
            return RunTime{wall, process_cpu_seconds() - cpu_before};
        },
        agree, tries_per_agreeing_run * agree, stable_tolerance);
}

// The machine's matrix-multiply rate through the same blocked Eigen product the trace path
// uses: a (1024×1024)·(1024×1024) product, 2·1024³ floating-point operations.
template <typename T>
double gemm_gflops(int repeats) {
    SplitMix64 rng(7);
    const MatrixT<T> a = random_matrix(rng, 1024, 1024, 1.0).cast<T>();
    const MatrixT<T> b = random_matrix(rng, 1024, 1024, 1.0).cast<T>();
    MatrixT<T> c;
    const double seconds = timed(repeats, [&] { c = project<T>(a, b); }).seconds;
    return 2.0 * 1024 * 1024 * 1024 / seconds / 1e9;
}

using Run = BenchRun;
using GemmRates = BenchRates;

Problem random_problem(std::int64_t n, std::int64_t d, int heads) {
    SplitMix64 rng(42);
    SingleSequenceInput input;
    input.sequence.vectors = random_matrix(rng, n, d, 1.0);
    for (std::int64_t i = 1; i <= n; ++i) input.sequence.tokens.push_back(fmt::format("t{}", i));
    input.weights = generate_projections(43, d, d);
    if (heads > 1) input.heads = heads;
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
        for (const BenchPath path : request.paths) {
            if (path == BenchPath::trace && n > request.trace_max) continue;
            WorkShape shape;
            shape.rows = shape.cols = static_cast<double>(n);
            shape.d_in = shape.d_k = shape.d_v = static_cast<double>(request.dim);
            shape.heads = request.heads;
            shape.label_bytes = shape.rows * 40;  // "t1" … "t1048576"
            // The backward pass holds about twice the summary's rows (X, Q, K, V, Z and their
            // gradients) and does 2.5 times its products.
            const std::uint64_t summary = summary_bytes(shape, Dtype::float64, false, 3);
            const std::uint64_t need = path == BenchPath::trace      ? trace_bytes(shape, Dtype::float64, RenderOptions{}, {})
                                       : path == BenchPath::backward ? 2 * summary
                                                                     : summary;
            require_memory(need, request.max_memory, "", fmt::format("bench: the {} path at n = {}", to_string(path), n),
                           "choose smaller --sizes or --trace-max");
            const double run = path == BenchPath::trace      ? trace_seconds(shape, Format::json) - 4 * shape.cells() * 100e-9
                               : path == BenchPath::backward ? 2.5 * summary_seconds(shape)
                                                             : summary_seconds(shape);
            const double runs = static_cast<double>(request.modes.size() * request.dtypes.size() *
                                                    std::max<std::size_t>(request.threads.size(), 1)) *
                                (1 + request.repeats);
            seconds += run * runs;
        }
    require_time(seconds, request.max_seconds, "", "bench: this grid", "choose smaller --sizes");
}

std::vector<int> thread_counts(const BenchRequest& request) {
    std::vector<int> counts = request.threads;
    if (counts.empty())
        for (int t = 1; t <= omp_get_num_procs(); ++t) counts.push_back(t);
    return counts;
}

GemmRates measure_gemm(const BenchRequest& request) {
    GemmRates gemm;
    for (const Dtype dtype : request.dtypes)
        for (const int t : thread_counts(request)) {
            omp_set_num_threads(t);
            gemm[{to_string(dtype), t}] = dtype == Dtype::float32 ? gemm_gflops<float>(request.repeats) : gemm_gflops<double>(request.repeats);
        }
    return gemm;
}

// The streaming path's exp rate (streaming.hpp), in G/s, by the same keys: the other part of
// the machine's bound for attention (tests/perf/compare.py; docs/performance.md).
GemmRates measure_exp(const BenchRequest& request) {
    GemmRates exp;
    for (const Dtype dtype : request.dtypes)
        for (const int t : thread_counts(request))
            exp[{to_string(dtype), t}] =
                (dtype == Dtype::float32 ? stream_exp_rate<float>(t) : stream_exp_rate<double>(t)) / 1e9;
    return exp;
}

// One configuration, timed; its rate against the GEMM reference.
Run time_run(const BenchRequest& request, const Problem& problem, Run run, const GemmRates& gemm) {
    omp_set_num_threads(run.threads);
    TraceOptions options;
    options.mode = run.mode;
    options.dtype = run.dtype;
    run.timing = timed(request.repeats, [&] {
        switch (run.path) {
            case BenchPath::trace: (void)trace(problem, options); break;
            case BenchPath::streaming: (void)summarize(problem, options, SummaryOptions{}); break;
            case BenchPath::backward: (void)stream_backward(problem, options, Loss::sum()); break;
        }
    });
    // Two operations (a multiply and an add) per multiply-add of Q·Kᵀ and A·V (and, backward,
    // of the products of the gradients).
    const bool causal = mode_spec(run.mode).causal;
    run.operations = run.path == BenchPath::backward ? backward_operations(run.n, request.dim, causal, request.heads)
                                                     : attention_operations(run.n, request.dim, causal, request.heads);
    run.gflops = 2.0 * static_cast<double>(run.operations.multiply_adds) / run.seconds() / 1e9;
    run.of_gemm = run.gflops / gemm.at({to_string(run.dtype), run.threads});
    return run;
}

std::vector<Run> run_grid(const BenchRequest& request, const GemmRates& gemm) {
    std::vector<Run> runs;
    std::map<std::tuple<BenchPath, Mode, Dtype, int, std::int64_t>, Run> measured;
    for (const std::int64_t n : request.sizes) {
        const Problem problem = random_problem(n, request.dim, request.heads);
        for (const BenchPath path : request.paths) {
            if (path == BenchPath::trace && n > request.trace_max) continue;
            for (const Mode mode : request.modes)
                for (const Dtype dtype : request.dtypes)
                    for (const int t : thread_counts(request)) {
                        Run configuration;
                        configuration.path = path;
                        configuration.mode = mode;
                        configuration.dtype = dtype;
                        configuration.threads = t;
                        configuration.n = n;
                        Run run = time_run(request, problem, configuration, gemm);
                        if (const auto half = measured.find({path, mode, dtype, t, n / 2}); n % 2 == 0 && half != measured.end()) {
                            run.doubling = run.seconds() / half->second.seconds();
                            run.ops_doubling = static_cast<double>(run.operations.multiply_adds) /
                                               static_cast<double>(half->second.operations.multiply_adds);
                            run.doubling_stable = !run.timing.busy && !half->second.timing.busy && run.timing.checked;
                        }
                        measured[{path, mode, dtype, t, n}] = run;
                        runs.push_back(run);
                    }
        }
    }
    return runs;
}

}  // namespace

AttentionOperations attention_operations(std::int64_t n, std::int64_t d, bool causal, int heads) {
    AttentionOperations ops;
    ops.pairs = causal ? n * (n + 1) / 2 : n * n;
    ops.multiply_adds = ops.pairs * 2 * d;
    ops.exps = ops.pairs * heads;
    return ops;
}

AttentionOperations backward_operations(std::int64_t n, std::int64_t d, bool causal, int heads) {
    AttentionOperations ops = attention_operations(n, d, causal, heads);
    ops.multiply_adds = ops.pairs * 5 * d;
    ops.exps = ops.pairs * 2 * heads;
    return ops;
}

void run_bench(const BenchRequest& request, std::ostream& out) {
    if (request.dim % request.heads != 0)
        throw UsageError(fmt::format("--heads {} does not divide --dim {}: each head takes d_head = dim / heads columns",
                                     request.heads, request.dim));
    require_format(request.format, Product::bench);
    require_grid_limits(request);
    BenchReport report;
    report.machine = machine_text();
    report.cores = omp_get_num_procs();
    report.dim = request.dim;
    report.heads = request.heads;
    report.repeats = request.repeats;
    report.tolerance = stable_tolerance;
    report.tries_per_agreeing_run = tries_per_agreeing_run;
    report.gemm = measure_gemm(request);
    report.exp = measure_exp(request);
    report.runs = run_grid(request, report.gemm);
    RenderOptions options;
    options.format = request.format;
    render(report, options, out);
}

}  // namespace attntrace
