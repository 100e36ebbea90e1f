// bench's report: a table of the grid's runs (the machine's rates and how each time was
// measured first), or JSON (attntrace.bench/1).
#include "core/bench.hpp"
#include "render/formats.hpp"
#include "render/json_writer.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>

namespace attntrace {

void write_bench_json(JsonWriter& json, const BenchReport& report) {
    using Layout = JsonWriter::Layout;
    json.key("schema").string("attntrace.bench/1");
    json.key("machine").object(Layout::inline_).key("cpu").string(report.machine).key("cores").integer(report.cores).end();
    json.key("d").integer(report.dim);
    json.key("heads").integer(report.heads);
    // The machine's rates, one object per (dtype, threads).
    const auto rates = [&](const char* name, const BenchRates& by_key, const char* field, const char* format) {
        json.key(name).array();
        for (const auto& [key, rate] : by_key)
            json.object(Layout::inline_)
                .key("dtype").string(key.first)
                .key("threads").integer(key.second)
                .key(field).literal(fmt::format(fmt::runtime(format), rate))
                .end();
        json.end();
    };
    rates("gemm", report.gemm, "gflops", "{:.2f}");
    rates("exp", report.exp, "g_per_s", "{:.3f}");
    json.key("runs").array();
    for (const BenchRun& r : report.runs)
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
    json.end();
}

namespace {

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

// The modes of the runs that pass `keep`, named once each: those that see every pair (plain,
// self), and whether causal (the triangle) is among them.
template <typename Keep>
std::pair<std::vector<std::string>, bool> modes_of(const std::vector<BenchRun>& runs, Keep&& keep) {
    std::vector<std::string> full;
    bool causal = false;
    for (const BenchRun& r : runs) {
        if (!keep(r)) continue;
        const std::string name(to_string(r.mode));
        if (r.mode == Mode::causal) causal = true;
        else if (std::find(full.begin(), full.end(), name) == full.end()) full.push_back(name);
    }
    return {full, causal};
}

// "n²·2d for self, n(n+1)/2·2d for causal": `per_pair`·d multiply-adds per visible pair.
std::string counts_of(const std::pair<std::vector<std::string>, bool>& modes, int per_pair) {
    std::vector<std::string> counts;
    if (!modes.first.empty()) counts.push_back(fmt::format("n²·{}d for {}", per_pair, fmt::join(modes.first, " and ")));
    if (modes.second) counts.push_back(fmt::format("n(n+1)/2·{}d for causal", per_pair));
    return fmt::format("{}", fmt::join(counts, ", "));
}

// What the operation counts are, for the paths and modes timed: the forward passes' and the
// backward pass's.
void write_counts(const std::vector<BenchRun>& runs, int heads, std::ostream& out) {
    const std::string of_heads = heads > 1 ? " and head" : "";
    const auto forward = modes_of(runs, [](const BenchRun& r) { return r.path != BenchPath::backward; });
    const auto backward = modes_of(runs, [](const BenchRun& r) { return r.path == BenchPath::backward; });
    const bool projected = std::any_of(runs.begin(), runs.end(), [](const BenchRun& r) {
        return r.path != BenchPath::backward && r.mode != Mode::plain;
    });
    if (!forward.first.empty() || forward.second)
        out << fmt::format("multiply-adds: {} (a score and a share of a value per visible pair), exps: one per visible "
                           "pair{}, both exact{}; GFLOP/s = 2·multiply-adds / seconds\n",
                           counts_of(forward, 2), of_heads, projected ? " (the projections' 3·n·d² are not counted)" : "");
    if (!backward.first.empty() || backward.second)
        out << fmt::format("backward (the loss sum, its forward pass included), multiply-adds: {} (per visible pair the "
                           "score and the share of a value, the score again, and its shares of dK and dQ; the sum's dZ "
                           "is the same row for every token, so dP and dV are sums), exps: two per visible pair{}, both "
                           "exact (the projections and the gradients of the weights and the inputs, a multiple of n·d², "
                           "are not counted); GFLOP/s = 2·multiply-adds / seconds\n",
                           counts_of(backward, 5), of_heads);
    const auto all = modes_of(runs, [](const BenchRun&) { return true; });
    out << fmt::format("×ops = multiply-adds(n) / multiply-adds(n/2), exactly{}; ×time = time(n) / time(n/2), the "
                       "measured counterpart\n",
                       all.first.empty() ? "" : fmt::format(" (4 for {})", fmt::join(all.first, " and ")));
}

}  // namespace

void write_bench_text(const BenchReport& report, std::ostream& out) {
    const std::vector<BenchRun>& runs = report.runs;
    const double stable_tolerance = report.tolerance;
    const int tries_per_agreeing_run = report.tries_per_agreeing_run;
    const int cores = report.cores;
    out << fmt::format("attntrace bench · {} · {} core{} · d = {}{}\n", report.machine, cores, cores == 1 ? "" : "s", report.dim,
                       report.heads > 1 ? fmt::format(", {} heads of d_head = {}", report.heads, report.dim / report.heads)
                                        : "");
    out << "GEMM rate (1024³, the trace path's blocked Eigen product):";
    for (const auto& [key, rate] : report.gemm) out << fmt::format("  {} ×{}: {:.1f}", key.first, key.second, rate);
    out << " GFLOP/s\n";
    out << "exp rate (the streaming path's vectorised exp, 4096 numbers per thread in cache):";
    for (const auto& [key, rate] : report.exp) out << fmt::format("  {} ×{}: {:.2f}", key.first, key.second, rate);
    out << " G/s\n";
    write_counts(runs, report.heads, out);
    // As bench times them: one run alone is compared with nothing; a long warm-up asks 2 to agree.
    if (report.repeats == 1)
        out << "each time is one timed run after a warm-up\n\n";
    else
        out << fmt::format("each time is the median of {} timed runs after a warm-up{} that agree within {:.0f}% of the "
                           "fastest, timed up to {} times as often until they do\n\n",
                           report.repeats,
                           report.repeats > 2 ? " (2 when the warm-up takes over a quarter of a second)" : "",
                           stable_tolerance * 100, tries_per_agreeing_run);
    out << fmt::format("{:<10} {:<7} {:<8} {:>7} {:>6} {:>10} {:>6} {:>14} {:>12} {:>8} {:>8} {:>8} {:>8}\n", "path", "mode",
                       "dtype", "threads", "n", "seconds", "runs", "multiply-adds", "exps", "×ops", "×time", "GFLOP/s",
                       "of GEMM");
    std::size_t busy = 0, unchecked = 0;
    for (const BenchRun& r : runs) {
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

}  // namespace attntrace
