#include "commands/bench_command.hpp"

#include "attention/kernels.hpp"
#include "attention/modes.hpp"
#include "attention/streaming.hpp"
#include "attention/summary.hpp"
#include "attention/trace.hpp"
#include "commands/guards.hpp"
#include "core/error.hpp"
#include "core/generator.hpp"
#include "render/json_writer.hpp"
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

struct Run {
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

// The rates of the GEMM reference, by (dtype name, threads): listed in the order of the names.
using GemmRates = std::map<std::pair<std::string_view, int>, double>;

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
            const std::uint64_t need = path == BenchPath::trace ? trace_bytes(shape, Dtype::float64, RenderOptions{}, false)
                                                                : summary_bytes(shape, Dtype::float64, false, 3);
            require_memory(need, request.max_memory, "", fmt::format("bench: the {} path at n = {}", to_string(path), n),
                           "choose smaller --sizes or --trace-max");
            const double run = path == BenchPath::trace ? trace_seconds(shape, Format::json) - 4 * shape.cells() * 100e-9
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
        if (run.path == BenchPath::trace) (void)trace(problem, options);
        else (void)summarize(problem, options, SummaryOptions{});
    });
    // Two operations (a multiply and an add) per multiply-add of Q·Kᵀ and A·V.
    run.operations = attention_operations(run.n, request.dim, mode_spec(run.mode).causal);
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

void write_json(const BenchRequest& request, const GemmRates& gemm, const GemmRates& exp, const std::vector<Run>& runs,
                std::ostream& os) {
    using Layout = JsonWriter::Layout;
    fmt::memory_buffer out;
    JsonWriter json(out);
    json.object().key("schema").string("attntrace.bench/1");
    json.key("machine").object(Layout::inline_).key("cpu").string(machine_text()).key("cores").integer(omp_get_num_procs()).end();
    json.key("d").integer(request.dim);
    json.key("heads").integer(request.heads);
    // The machine's rates, one object per (dtype, threads).
    const auto rates = [&](const char* name, const GemmRates& by_key, const char* field, const char* format) {
        json.key(name).array();
        for (const auto& [key, rate] : by_key)
            json.object(Layout::inline_)
                .key("dtype").string(key.first)
                .key("threads").integer(key.second)
                .key(field).literal(fmt::format(fmt::runtime(format), rate))
                .end();
        json.end();
    };
    rates("gemm", gemm, "gflops", "{:.2f}");
    rates("exp", exp, "g_per_s", "{:.3f}");
    json.key("runs").array();
    for (const Run& r : runs)
        json.object(Layout::inline_)
            .key("path").string(to_string(r.path))
            .key("mode").string(to_string(r.mode))
            .key("dtype").string(to_string(r.dtype))
            .key("threads").integer(r.threads)
            .key("n").integer(r.n)
            .key("seconds").literal(fmt::format("{:.6f}", r.seconds()))
            .key("timed_runs").integer(static_cast<std::int64_t>(r.timing.runs.size()))
            .key("spread").literal(fmt::format("{:.3f}", r.timing.spread))
            .key("stable").literal(r.timing.checked ? (r.timing.stable ? "true" : "false") : "null")
            .key("off_cpu").literal(fmt::format("{:.3f}", r.timing.off_cpu))
            .key("busy").literal(r.timing.checked ? (r.timing.busy ? "true" : "false") : "null")
            .key("pairs").integer(r.operations.pairs)
            .key("multiply_adds").integer(r.operations.multiply_adds)
            .key("exps").integer(r.operations.exps)
            .key("gflops").literal(fmt::format("{:.2f}", r.gflops))
            .key("of_gemm").literal(fmt::format("{:.3f}", r.of_gemm))
            .key("doubling").literal(r.doubling > 0 ? fmt::format("{:.2f}", r.doubling) : "null")
            .key("operations_doubling").literal(r.ops_doubling > 0 ? fmt::format("{:.4f}", r.ops_doubling) : "null")
            .key("doubling_stable").literal(r.doubling > 0 && r.timing.checked ? (r.doubling_stable ? "true" : "false") : "null")
            .end();
    json.end().end();
    out.push_back('\n');
    flush(out, os);
}

// "the one configuration", "all 4 configurations", "2 of the 6 configurations".
std::string some_of(std::size_t part, std::size_t whole) {
    if (whole == 1) return "the one configuration";
    if (part == whole) return fmt::format("all {} configurations", whole);
    return fmt::format("{} of the {} configurations", part, whole);
}

std::string capitalised(std::string text) {
    if (!text.empty() && text[0] >= 'a' && text[0] <= 'z') text[0] = static_cast<char>(text[0] - 'a' + 'A');
    return text;
}

void write_table(const BenchRequest& request, const GemmRates& gemm, const GemmRates& exp, const std::vector<Run>& runs,
                 std::ostream& out) {
    const int cores = omp_get_num_procs();
    out << fmt::format("attntrace bench · {} · {} core{} · d = {}{}\n", machine_text(), cores, cores == 1 ? "" : "s", request.dim,
                       request.heads > 1 ? fmt::format(", {} heads of d_head = {}", request.heads, request.dim / request.heads)
                                         : "");
    out << "GEMM rate (1024³, the trace path's blocked Eigen product):";
    for (const auto& [key, rate] : gemm) out << fmt::format("  {} ×{}: {:.1f}", key.first, key.second, rate);
    out << " GFLOP/s\n";
    out << "exp rate (the streaming path's vectorised exp, 4096 numbers per thread in cache):";
    for (const auto& [key, rate] : exp) out << fmt::format("  {} ×{}: {:.2f}", key.first, key.second, rate);
    out << " G/s\n";
    out << "multiply-adds: n²·2d for self, n(n+1)/2·2d for causal (a score and a share of a value per visible pair), "
           "exps: one per visible pair, both exact (the projections' 3·n·d² are not counted); GFLOP/s = 2·multiply-adds / "
           "seconds\n";
    out << "×ops = multiply-adds(n) / multiply-adds(n/2), exactly (4 for self); ×time = time(n) / time(n/2), the "
           "measured counterpart\n";
    // As timed() times them: one run alone is compared with nothing; a long warm-up asks 2 to agree.
    if (request.repeats == 1)
        out << "each time is one timed run after a warm-up\n\n";
    else
        out << fmt::format("each time is the median of {} timed runs after a warm-up{} that agree within {:.0f}% of the "
                           "fastest, timed up to {} times as often until they do\n\n",
                           request.repeats,
                           request.repeats > 2 ? " (2 when the warm-up takes over a quarter of a second)" : "",
                           stable_tolerance * 100, tries_per_agreeing_run);
    out << fmt::format("{:<10} {:<7} {:<8} {:>7} {:>6} {:>10} {:>6} {:>14} {:>12} {:>8} {:>8} {:>8} {:>8}\n", "path", "mode",
                       "dtype", "threads", "n", "seconds", "runs", "multiply-adds", "exps", "×ops", "×time", "GFLOP/s",
                       "of GEMM");
    std::size_t busy = 0, unchecked = 0;
    for (const Run& r : runs) {
        const bool marked = r.doubling > 0 && r.timing.checked && !r.doubling_stable;
        busy += r.timing.busy;
        unchecked += !r.timing.checked;
        out << fmt::format("{:<10} {:<7} {:<8} {:>7} {:>6} {:>10.4f} {:>6} {:>14} {:>12} {:>8} {:>8} {:>8.1f} {:>8.2f}\n",
                           to_string(r.path), to_string(r.mode), to_string(r.dtype), r.threads, r.n, r.seconds(),
                           fmt::format("{}{}", r.timing.runs.size(), r.timing.busy ? "*" : ""),
                           r.operations.multiply_adds, r.operations.exps,
                           r.ops_doubling > 0 ? fmt::format("{:.2f}", r.ops_doubling) : "",
                           r.doubling > 0 ? fmt::format("{:.2f}{}", r.doubling, marked ? "*" : "") : "", r.gflops, r.of_gemm);
    }
    if (busy > 0)
        out << fmt::format("\n* the machine was busy: in {} the runs never agreed within {:.0f}% in {} times as many "
                           "tries, or the process was off the CPU for more than {:.0f}% of a run's time (other work had "
                           "it), so {} times, and each ×time that uses one, measure the load as much as the cost; ×ops "
                           "is the cost\n",
                           some_of(busy, runs.size()), stable_tolerance * 100, tries_per_agreeing_run,
                           stable_tolerance * 100, busy == 1 ? "its" : "their");
    if (unchecked > 0)
        out << fmt::format("\n{} one timed run (--repeats 1), so whether {} times are stable was not checked\n",
                           capitalised(some_of(unchecked, runs.size())) + " had",
                           unchecked == 1 ? "its" : "their");
}

}  // namespace

AttentionOperations attention_operations(std::int64_t n, std::int64_t d, bool causal) {
    AttentionOperations ops;
    ops.pairs = causal ? n * (n + 1) / 2 : n * n;
    ops.multiply_adds = ops.pairs * 2 * d;
    ops.exps = ops.pairs;
    return ops;
}

void run_bench(const BenchRequest& request, std::ostream& out) {
    if (request.dim % request.heads != 0)
        throw UsageError(fmt::format("--heads {} does not divide --dim {}: each head takes d_head = dim / heads columns",
                                     request.heads, request.dim));
    require_grid_limits(request);
    const GemmRates gemm = measure_gemm(request);
    const GemmRates exp = measure_exp(request);
    const std::vector<Run> runs = run_grid(request, gemm);
    if (request.format == Format::json) write_json(request, gemm, exp, runs, out);
    else write_table(request, gemm, exp, runs, out);
}

}  // namespace attntrace
