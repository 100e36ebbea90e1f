// The streaming path (--summary) against the trace path, the summary outputs, the memory
// guard, generated inputs and the benchmark's output shape (it is run tiny: not a timed test).
#include "attention/kernels.hpp"
#include "attention/packet_exp.hpp"
#include "attention/summary.hpp"
#include "attention/trace.hpp"
#include "render/render.hpp"
#include "core/generator.hpp"
#include "input/examples.hpp"
#include "input/load.hpp"
#include "support/cli.hpp"
#include "support/error_line.hpp"

#include "support/catch.hpp"
#include <array>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <tuple>
#include <memory>
#include <filesystem>
#include <fstream>

using namespace attntrace;
using Catch::Contains;
using nlohmann::json;

namespace {

Problem random_problem(Eigen::Index n, Eigen::Index d_in, Eigen::Index d_k, std::uint64_t seed) {
    SplitMix64 rng(seed);
    SingleSequenceInput input;
    // Spread 3 makes the weights uneven, so the top keys are clear-cut.
    input.sequence.vectors = random_matrix(rng, n, d_in, 3.0);
    for (Eigen::Index i = 0; i < n; ++i) input.sequence.tokens.push_back(fmt::format("t{}", i + 1));
    Projections w;
    w.query = random_matrix(rng, d_in, d_k, 1.0);
    w.key = random_matrix(rng, d_in, d_k, 1.0);
    w.value = random_matrix(rng, d_in, d_k + 1, 1.0);  // d_v ≠ d_k on purpose
    input.weights = w;
    Problem problem;
    problem.origin = "random";
    problem.input = std::move(input);
    return problem;
}

void require_same_summary(const Summary& streamed, const Summary& reference, double tolerance) {
    REQUIRE(streamed.per_head.size() == reference.per_head.size());
    CHECK(streamed.dims == reference.dims);
    CHECK(streamed.context_is_output == reference.context_is_output);
    for (std::size_t h = 0; h < streamed.per_head.size(); ++h) {
    INFO("head " << streamed.per_head[h].head);
    CHECK(streamed.per_head[h].head == reference.per_head[h].head);
    CHECK(streamed.per_head[h].kv_head == reference.per_head[h].kv_head);
    const auto& streamed_queries = streamed.per_head[h].queries;
    const auto& reference_queries = reference.per_head[h].queries;
    REQUIRE(streamed_queries.size() == reference_queries.size());
    for (std::size_t i = 0; i < streamed_queries.size(); ++i) {
        INFO("query " << i);
        const auto& s = streamed_queries[i];
        const auto& r = reference_queries[i];
        CHECK(s.max_weight == Approx(r.max_weight).margin(tolerance).epsilon(0));
        CHECK(s.entropy == Approx(r.entropy).margin(tolerance * 10).epsilon(0));
        REQUIRE(s.top.size() == r.top.size());
        for (std::size_t t = 0; t < s.top.size(); ++t) {
            CHECK(s.top[t].weight == Approx(r.top[t].weight).margin(tolerance).epsilon(0));
            // Indices must agree unless two weights are too close to tell apart.
            const bool tied = (t > 0 && std::abs(r.top[t].weight - r.top[t - 1].weight) < 10 * tolerance) ||
                              (t + 1 < r.top.size() && std::abs(r.top[t].weight - r.top[t + 1].weight) < 10 * tolerance);
            if (!tied) CHECK(s.top[t].index == r.top[t].index);
        }
    }
    }
    REQUIRE(streamed.context);
    REQUIRE(reference.context);
    REQUIRE(streamed.context->rows() == reference.context->rows());
    CHECK((*streamed.context - *reference.context).cwiseAbs().maxCoeff() <= tolerance);
}

}  // namespace

TEST_CASE("streaming equals the trace path on many shapes", "[streaming]") {
    // n = 1, 2, around a vector's width (4, 8 and 16 numbers), around the query and key
    // blocks (256 each) and two of them, and primes.
    const std::vector<Eigen::Index> sizes{1, 2, 3, 7, 9, 17, 63, 97, 255, 256, 257, 331, 511, 512, 513};
    SummaryOptions options;
    options.top = 4;
    options.context = true;
    std::uint64_t seed = 1;
    for (const Eigen::Index n : sizes)
        for (const Mode mode : {Mode::plain, Mode::self, Mode::causal})
            for (const Dtype dtype : {Dtype::float64, Dtype::float32}) {
                INFO("n " << n << " " << to_string(mode) << " " << to_string(dtype));
                const Problem problem = random_problem(n, 8, 5, seed++);
                TraceOptions trace_options;
                trace_options.mode = mode;
                trace_options.dtype = dtype;
                const Summary streamed = summarize(problem, trace_options, options);
                const Summary reference = summarize_trace(trace(problem, trace_options), options);
                require_same_summary(streamed, reference, dtype == Dtype::float64 ? 1e-10 : 1e-4);
                // Causal row i sees i + 1 keys: the first query puts all its weight on itself.
                if (mode == Mode::causal) {
                    const QuerySummary& first = streamed.per_head.front().queries[0];
                    CHECK(first.top.size() == 1);
                    CHECK(first.max_weight == Approx(1.0));
                    CHECK(first.entropy == Approx(0.0).margin(1e-6).epsilon(0));
                }
            }
}

// Tagged [summary] rather than [streaming]: it is long, and the thread sanitizer's selection
// covers the heads' parallel loop with the thread-count test above instead.
TEST_CASE("streaming equals the trace path with heads, grouped heads, windows and padding", "[summary][heads][masks]") {
    SummaryOptions options;
    options.top = 3;
    options.context = true;
    std::uint64_t seed = 100;
    struct Heads {
        int heads, kv_heads;
    };
    for (const Eigen::Index n : {5, 70, 300})
        for (const Heads h : {Heads{1, 1}, Heads{2, 2}, Heads{4, 2}, Heads{4, 1}})
            for (const Eigen::Index window : {0, 3, 70})
                for (const bool padded : {false, true})
                    for (const Mode mode : {Mode::self, Mode::causal}) {
                        INFO("n " << n << ", " << h.heads << " heads, " << h.kv_heads << " kv heads, window " << window
                                  << (padded ? ", padded" : "") << ", " << to_string(mode));
                        SplitMix64 rng(seed++);
                        SingleSequenceInput input;
                        input.sequence.vectors = random_matrix(rng, n, 6, 3.0);
                        for (Eigen::Index i = 0; i < n; ++i)  // the first token, and every seventh, is padding
                            input.sequence.tokens.push_back(padded && i % 7 == 0 ? "<pad>" : fmt::format("t{}", i + 1));
                        const Eigen::Index d_head = 2, d_v = 3;
                        Projections w;
                        w.query = random_matrix(rng, 6, d_head * h.heads, 1.0);
                        w.key = random_matrix(rng, 6, d_head * h.kv_heads, 1.0);
                        w.value = random_matrix(rng, 6, d_v * h.kv_heads, 1.0);
                        w.output = random_matrix(rng, d_v * h.heads, 5, 1.0);
                        input.weights = w;
                        input.heads = h.heads;
                        input.kv_heads = h.kv_heads;
                        Problem problem;
                        problem.origin = "random";
                        problem.input = std::move(input);
                        TraceOptions trace_options;
                        trace_options.mode = mode;
                        if (window > 0) trace_options.window = window;
                        // Position information in turn: none, sinusoidal, RoPE from position 5.
                        const PositionScheme schemes[] = {PositionScheme::none, PositionScheme::sinusoidal, PositionScheme::rope};
                        trace_options.positions = schemes[seed % 3];
                        if (trace_options.positions == PositionScheme::rope) trace_options.position_offset = 5;
                        INFO("positions " << to_string(*trace_options.positions));
                        for (const Dtype dtype : {Dtype::float64, Dtype::float32}) {
                            if (dtype == Dtype::float32 && n > 70) continue;  // the smaller n cover float32, in less time
                            trace_options.dtype = dtype;
                            const Summary streamed = summarize(problem, trace_options, options);
                            const Summary reference = summarize_trace(trace(problem, trace_options), options);
                            CHECK(streamed.context_is_output);
                            CHECK(streamed.per_head.size() == static_cast<std::size_t>(h.heads));
                            require_same_summary(streamed, reference, dtype == Dtype::float64 ? 1e-10 : 1e-4);
                            if (padded && mode == Mode::causal) {  // query 1 sees only itself, padding: nothing
                                const QuerySummary& first = streamed.per_head.front().queries[0];
                                CHECK(first.top.empty());
                                CHECK(first.max_weight == 0);
                                CHECK(streamed.context->row(0).isZero(0));
                            }
                        }
                    }
}

TEST_CASE("the summary of the lecture example, by hand", "[streaming]") {
    // Query "journey": the lecture's softmax row [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581].
    const std::vector<double> row{0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581};
    double entropy = 0;
    for (const double a : row) entropy -= a * std::log(a);
    const auto r = cli::run({"--summary", "-f", "json", "--top", "2"});
    REQUIRE(r.exit_code == 0);
    const json doc = json::parse(r.out);
    const auto& journey = doc["queries"][1];
    CHECK(journey["index"] == 1);
    CHECK(journey["token"] == "journey");
    CHECK(journey["top"][0]["token"] == "journey");
    CHECK(journey["top"][0]["weight"].get<double>() == Approx(0.2379).margin(0.5e-4).epsilon(0));
    CHECK(journey["top"][1]["token"] == "starts");
    CHECK(journey["max_weight"].get<double>() == Approx(0.2379).margin(0.5e-4).epsilon(0));
    CHECK(journey["entropy"].get<double>() == Approx(entropy).margin(1e-3).epsilon(0));
}

TEST_CASE("summary JSON holds every field and, on request, the context", "[streaming][json]") {
    cli::TempFile file(cli::run({"generate", "--tokens", "100", "--dim", "8", "--seed", "5"}).out);
    const json doc = json::parse(cli::run({file.path(), "--summary", "-f", "json", "-m", "causal", "-s", "context"}).out);
    CHECK(doc["schema"] == "attntrace.summary/1");
    CHECK(doc["mode"] == "causal");
    CHECK(doc["n"] == 100);
    CHECK(doc["top"] == 3);
    CHECK(doc["dims"] == json({{"d_in", 8}, {"d_k", 8}, {"d_v", 8}}));
    CHECK(doc["weights"]["source"] == "input");
    REQUIRE(doc["queries"].size() == 100);
    for (const auto& q : doc["queries"]) {
        REQUIRE(q.contains("index"));
        REQUIRE(q.contains("token"));
        REQUIRE(q["top"].size() == std::min<std::size_t>(3, q["index"].get<std::size_t>() + 1));
        for (const auto& key : q["top"]) {
            CHECK(key["index"].get<std::size_t>() <= q["index"].get<std::size_t>());  // causal
            CHECK(key["weight"].get<double>() <= q["max_weight"].get<double>() + 1e-15);
        }
        CHECK(q["entropy"].get<double>() >= 0);
        CHECK(q["entropy"].get<double>() <= std::log(static_cast<double>(q["index"].get<int>() + 1)) + 1e-12);
    }
    REQUIRE(doc["context"].size() == 100);
    CHECK(doc["context"][0].size() == 8);
    // The context of the first token is its own value: weight 1 on itself.
    const json full = json::parse(cli::run({file.path(), "-f", "json", "-m", "causal", "-s", "values"}).out);
    for (std::size_t k = 0; k < 8; ++k)
        CHECK(doc["context"][0][k].get<double>() == Approx(full["stages"][0]["data"][0][k].get<double>()).margin(1e-12).epsilon(0));
}

TEST_CASE("summary bytes do not depend on the thread count", "[streaming][threads]") {
    cli::TempFile file(cli::run({"generate", "--tokens", "600", "--dim", "16"}).out);  // 3 query blocks
    // One head; then 4 heads with a window and RoPE, whose (head, query block) pairs are handed
    // out to the threads together.
    const std::vector<std::vector<std::string>> variants{
        {}, {"--heads", "4", "--window", "40", "--positions", "rope"}};
    for (const auto& variant : variants)
        for (const char* mode : {"self", "causal"})
            for (const char* dtype : {"float64", "float32"}) {
                INFO(mode << " " << dtype << " " << fmt::format("{}", fmt::join(variant, " ")));
                std::vector<std::string> args{file.path(), "--summary", "-f", "json", "-m", mode, "--dtype", dtype, "-s", "context"};
                args.insert(args.end(), variant.begin(), variant.end());
                auto with_threads = [&](const char* threads) {
                    std::vector<std::string> all = args;
                    all.insert(all.end(), {"--threads", threads});
                    return cli::run(all);
                };
                const auto one = with_threads("1");
                const auto two = with_threads("2");
                REQUIRE(one.exit_code == 0);
                CHECK(one.out == two.out);
            }
}

TEST_CASE("long inputs switch tables to the summary and say so", "[streaming][cli]") {
    cli::TempFile file(cli::run({"generate", "--tokens", "80", "--dim", "4"}).out);
    const auto r = cli::run({file.path()});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("summary of 80 queries"));
    CHECK_THAT(r.out, Contains("note: 80 tokens make tables too wide to read, so this is the summary"));
    CHECK_THAT(r.out, Contains("… 60 more queries"));
    const auto table = cli::run({file.path(), "-s", "weights", "--width", "0"});
    CHECK_THAT(table.out, Contains("weights · 80×80"));
    CHECK_THAT(cli::run({file.path(), "-f", "json"}).out, Contains("\"schema\": \"attntrace.trace/1\""));
    CHECK_THAT(cli::run({"--example", "teacher_smiled"}).out, !Contains("summary"));  // small: full tables
    // Sum normalisation has no streaming form: the table stays the full trace.
    std::string positive = R"({"tokens": [)";
    for (int i = 1; i <= 80; ++i) positive += fmt::format("{}\"t{}\"", i > 1 ? "," : "", i);
    positive += R"(], "embeddings": [)";
    for (int i = 1; i <= 80; ++i) positive += fmt::format("{}[1, {}]", i > 1 ? "," : "", i / 80.0);
    cli::TempFile sums(positive + "]}");
    const auto sum_table = cli::run({sums.path(), "--normalize", "sum", "-s", "weights", "--width", "0"});
    CHECK(sum_table.exit_code == 0);
    CHECK_THAT(sum_table.out, Contains("weights · 80×80") && !Contains("summary of"));
    const auto auto_switch = cli::run({sums.path(), "--normalize", "sum"});
    CHECK_THAT(auto_switch.out, Contains("weights · 80×80") && !Contains("summary of"));
}

TEST_CASE("summary refuses what needs the full matrices", "[streaming][cli][errors]") {
    for (const std::vector<std::string>& extra : std::vector<std::vector<std::string>>{
             {"-q", "1"}, {"--explain"}, {"--check"}, {"--svg", "x.svg"}, {"-s", "weights"}}) {
        auto args = extra;
        args.push_back("--summary");
        const auto r = cli::run(args);
        INFO(r.err);
        CHECK(r.exit_code == 2);
        CHECK(r.out.empty());
    }
    const auto pair = cli::run({"--example", "black_cat_fr", "--summary"});
    CHECK(pair.exit_code == 2);
    CHECK_THAT(pair.err, Contains("--summary covers modes plain, self and causal"));
}

TEST_CASE("a full trace too large for --max-memory is refused before it starts", "[streaming][memory]") {
    cli::TempFile file(cli::run({"generate", "--tokens", "600", "--dim", "8"}).out);
    const auto r = cli::run({file.path(), "-f", "json", "--max-memory", "4M"});
    CHECK(r.exit_code == 1);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Contains("a full trace of this input needs about") && Contains("MiB, more than --max-memory 4.0 MiB") &&
                          Contains("--summary"));
    // The same limit lets the summary run: O(n), and per thread one block of scratch (1 MiB).
    CHECK(cli::run({file.path(), "--summary", "--max-memory", "4M", "--threads", "2"}).exit_code == 0);
    CHECK(cli::run({file.path(), "-f", "json", "--max-memory", "1G"}).exit_code == 0);
    CHECK(cli::run({"--max-memory", "lots"}).exit_code == 2);
    // 2¹⁶ tokens: refused at once under the default limit, before any n×n allocation.
    cli::TempFile huge(cli::run({"generate", "--tokens", "65536", "--dim", "2"}).out);
    const auto refused = cli::run({huge.path(), "-f", "json"});
    CHECK(refused.exit_code == 1);
    CHECK_THAT(refused.err, Contains("GiB, more than the default --max-memory"));
}

TEST_CASE("generate writes the same bytes for the same seed, and a complete input", "[streaming][generate]") {
    const auto a = cli::run({"generate", "--tokens", "7", "--dim", "3", "--seed", "9"});
    const auto b = cli::run({"generate", "--tokens", "7", "--dim", "3", "--seed", "9"});
    const auto c = cli::run({"generate", "--tokens", "7", "--dim", "3", "--seed", "10"});
    REQUIRE(a.exit_code == 0);
    CHECK(a.out == b.out);
    CHECK(a.out != c.out);
    const json doc = json::parse(a.out);
    CHECK(doc["tokens"].size() == 7);
    CHECK(doc["embeddings"].size() == 7);
    CHECK(doc["embeddings"][0].size() == 3);
    for (const char* w : {"query", "key", "value"}) {
        CHECK(doc["weights"][w].size() == 3);
        for (const auto& row : doc["weights"][w])
            for (const auto& x : row) CHECK(std::abs(x.get<double>()) <= 1 / std::sqrt(3.0));
    }
    // The documented recipe: the first embedding entry is round(10⁶·(2u − 1))/10⁶ of the first draw.
    SplitMix64 rng(9);
    CHECK(doc["embeddings"][0][0].get<double>() == std::round(rng.symmetric(1.0) * 1e6) / 1e6);
    // It loads as it is, and -o writes the same bytes to a file.
    CHECK_NOTHROW(load_problem(a.out, "generated"));
    cli::TempFile marker("", "marker");
    const std::string path = marker.path() + ".json";
    REQUIRE(cli::run({"generate", "--tokens", "7", "--dim", "3", "--seed", "9", "-o", path}).exit_code == 0);
    std::ifstream in(path);
    const std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(written == a.out);
    std::filesystem::remove(path);
}

TEST_CASE("the benchmark reports every configuration it ran", "[streaming][bench]") {
    // 48 is not twice 32: its ×doubling stays empty; 64 is twice 32.
    const auto r = cli::run({"bench", "--sizes", "32,48,64", "--dtypes", "float32", "--threads", "1", "--repeats", "1", "-f", "json"});
    REQUIRE(r.exit_code == 0);
    const json doc = json::parse(r.out);
    CHECK(doc["schema"] == "attntrace.bench/1");
    CHECK(doc["gemm"].size() == 1);
    CHECK(doc["gemm"][0]["gflops"].get<double>() > 0);
    REQUIRE(doc["exp"].size() == 1);  // the streaming path's exp rate, per dtype and thread count
    CHECK(doc["exp"][0]["dtype"] == "float32");
    CHECK(doc["exp"][0]["threads"] == 1);
    CHECK(doc["exp"][0]["g_per_s"].get<double>() > 0);
    REQUIRE(doc["runs"].size() == 3 * 2 * 2);  // sizes × paths × modes
    for (const auto& run : doc["runs"]) {
        CHECK(run["seconds"].get<double>() > 0);
        CHECK(run["gflops"].get<double>() > 0);
        if (run["n"] == 64) {
            // time(64) / time(32) of the same configuration
            double at_32 = 0;
            for (const auto& other : doc["runs"])
                if (other["n"] == 32 && other["path"] == run["path"] && other["mode"] == run["mode"])
                    at_32 = other["seconds"].get<double>();
            REQUIRE(at_32 > 0);
            // seconds are written to 6 decimals, the ratio to 2: bound it by both roundings
            const double at_64 = run["seconds"].get<double>(), doubling = run["doubling"].get<double>();
            CHECK(doubling >= (at_64 - 5e-7) / (at_32 + 5e-7) - 0.005);
            CHECK(doubling <= (at_64 + 5e-7) / (at_32 - 5e-7) + 0.005);
        } else {
            CHECK(run["doubling"].is_null());
        }
    }
}

TEST_CASE("the benchmark times several heads and refuses heads that do not divide d", "[streaming][bench]") {
    const auto r = cli::run({"bench", "--sizes", "64", "--dim", "8", "--heads", "2", "--modes", "causal", "--dtypes", "float64",
                             "--threads", "1", "--repeats", "1", "--paths", "streaming", "-f", "json"});
    REQUIRE(r.exit_code == 0);
    const json doc = json::parse(r.out);
    CHECK(doc["d"] == 8);
    CHECK(doc["heads"] == 2);
    REQUIRE(doc["runs"].size() == 1);
    CHECK(doc["runs"][0]["seconds"].get<double>() > 0);
    const auto table = cli::run({"bench", "--sizes", "64", "--dim", "8", "--heads", "2", "--threads", "1", "--repeats", "1",
                                 "--paths", "streaming"});
    REQUIRE(table.exit_code == 0);
    CHECK_THAT(table.out, Contains("d = 8, 2 heads of d_head = 4"));
    cli::require_error_line(cli::run({"bench", "--sizes", "64", "--dim", "8", "--heads", "3"}), 2,
                            "--heads 3 does not divide --dim 8");
}

TEST_CASE("float32 traces stay close to float64", "[streaming][dtype]") {
    const Problem problem = random_problem(50, 6, 4, 77);
    TraceOptions f64, f32;
    f64.mode = f32.mode = Mode::causal;
    f32.dtype = Dtype::float32;
    const Trace a = trace(problem, f64);
    const Trace b = trace(problem, f32);
    CHECK(b.dtype == Dtype::float32);
    CHECK((a.find(StageId::weights)->data - b.find(StageId::weights)->data).cwiseAbs().maxCoeff() < 1e-5);
    CHECK((a.find(StageId::context)->data - b.find(StageId::context)->data).cwiseAbs().maxCoeff() < 1e-4);
}

TEST_CASE("a progress bar shows on a terminal for long work, and only there", "[streaming][progress]") {
    // The bar waits one second. The work starts small and doubles until a run lasts 1.5 s,
    // so the test stays short in every build (a sanitizer build is ten times slower).
    std::unique_ptr<cli::TempFile> file;
    std::vector<std::string> args;
    cli::Result terminal;
    for (int tokens = 4096;; tokens *= 2) {
        INFO(tokens << " tokens");
        REQUIRE(tokens <= 65536);
        file = std::make_unique<cli::TempFile>(
            cli::run({"generate", "--tokens", std::to_string(tokens), "--dim", "64"}).out);
        args = {file->path(), "--summary", "--dtype", "float64", "--threads", "1"};
        const auto start = std::chrono::steady_clock::now();
        terminal = cli::run_in_terminal(args);
        if (std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(1500)) break;
    }
    CHECK(terminal.exit_code == 0);
    CHECK_THAT(terminal.out, Contains("\rattention [") && Contains("%"));
    CHECK_THAT(terminal.out, Contains("\r\x1b[K"));  // erased before the output
    const auto piped = cli::run(args);
    CHECK(piped.exit_code == 0);
    CHECK(piped.err.empty());
}

// The float64 summary's exp (packet_exp.hpp), for the vector width this test binary is built
// with (a native build: the machine's widest; a portable one: SSE2, which the baseline kernels
// use), against the C library's exp, a number at a time.
// The streaming path computes the scores and P·V with kernels of its own where the CPU has
// 32 vector registers (AVX-512): the scores from a transposed copy of K for inputs without a
// window or with one of 512 keys or more (whose first key block then starts before the
// window), P·V when d_v is a whole number of registers (16 floats, 8 doubles). These shapes
// reach every branch of them on such a CPU (tiles of 6 rows and the 1 to 5 left, 4, 2 and 1
// registers of columns, a last key block cut short, grouped heads sharing one K); elsewhere
// they run Eigen's products, and the same comparison holds. ([avx512_kernels]: a sanitizer build
// without the AVX-512 copy leaves it out, tests/CMakeLists.txt.)
TEST_CASE("streaming equals the trace path with vector-wide values and long windows", "[summary][kernels][avx512_kernels]") {
    SummaryOptions options;
    options.top = 3;
    options.context = true;
    std::uint64_t seed = 500;
    struct Shape {
        Eigen::Index n, d_head, d_v, heads, kv_heads, window;
    };
    const Shape shapes[] = {
        {5, 16, 16, 1, 1, 0},      {300, 16, 48, 1, 1, 0},   {517, 64, 64, 1, 1, 0},    {517, 8, 128, 2, 1, 0},
        {1100, 16, 24, 2, 2, 600}, {700, 16, 32, 4, 2, 513}, {700, 16, 16, 1, 1, 100},  {263, 16, 112, 1, 1, 0}};
    for (const Shape& shape : shapes)
        for (const Mode mode : {Mode::self, Mode::causal})
            for (const Dtype dtype : {Dtype::float64, Dtype::float32}) {
                INFO("n " << shape.n << ", d_head " << shape.d_head << ", d_v " << shape.d_v << ", " << shape.heads
                          << " heads, " << shape.kv_heads << " kv heads, window " << shape.window << ", "
                          << to_string(mode) << ", " << to_string(dtype));
                SplitMix64 rng(seed++);
                SingleSequenceInput input;
                const Eigen::Index d_in = 12;
                input.sequence.vectors = random_matrix(rng, shape.n, d_in, 1.5);
                for (Eigen::Index i = 0; i < shape.n; ++i)
                    input.sequence.tokens.push_back(i % 11 == 3 ? "<pad>" : fmt::format("t{}", i + 1));
                Projections w;
                w.query = random_matrix(rng, d_in, shape.d_head * shape.heads, 1.0);
                w.key = random_matrix(rng, d_in, shape.d_head * shape.kv_heads, 1.0);
                w.value = random_matrix(rng, d_in, shape.d_v * shape.kv_heads, 1.0);
                input.weights = w;
                input.heads = static_cast<int>(shape.heads);
                input.kv_heads = static_cast<int>(shape.kv_heads);
                Problem problem;
                problem.origin = "random";
                problem.input = std::move(input);
                TraceOptions trace_options;
                trace_options.mode = mode;
                trace_options.dtype = dtype;
                if (shape.window > 0) trace_options.window = shape.window;
                const Summary streamed = summarize(problem, trace_options, options);
                const Summary reference = summarize_trace(trace(problem, trace_options), options);
                require_same_summary(streamed, reference, dtype == Dtype::float64 ? 1e-10 : 1e-4);
            }
}

// The trace's products by a row-major matrix (X·W, A·V) go through the same kernel for
// inputs of 256 rows or more (projections.cpp, own_product.hpp), where the CPU has 32 vector
// registers: against plain loops here, since the streaming path, compared with the trace
// above, shares them.
TEST_CASE("the kernels' products of long inputs equal plain loops", "[kernels]") {
    SplitMix64 rng(77);
    // The own kernels' tile edges (whole registers, 256 rows and more), Eigen's products for
    // the other widths, and Eigen's blocks of 256 rows for 1024 rows and more (a width that
    // is not whole registers, or a B of more than 64K numbers).
    std::vector<std::array<Eigen::Index, 3>> shapes;
    for (const Eigen::Index rows : {255, 256, 300, 517})
        for (const Eigen::Index depth : {7, 64})
            for (const Eigen::Index width : {8, 16, 40, 48, 64, 128}) shapes.push_back({rows, depth, width});
    for (const Eigen::Index rows : {1024, 1300}) {
        shapes.push_back({rows, 64, 40});
        shapes.push_back({rows, 300, 256});
    }
    for (const auto& [rows, depth, width] : shapes) {
        INFO(rows << " × " << depth << " times " << depth << " × " << width);
        const Matrix a = random_matrix(rng, rows, depth, 1.0), b = random_matrix(rng, depth, width, 1.0);
        const MatrixT<float> a32 = a.cast<float>(), b32 = b.cast<float>();
        const Matrix y64 = project<double>(a, b), z64 = weighted_sum<double>(a, b);
        const MatrixT<float> y32 = project<float>(a32, b32);
        REQUIRE(y64.rows() == rows);
        REQUIRE(y64.cols() == width);
        double worst64 = 0, worst32 = 0;
        for (Eigen::Index i = 0; i < rows; ++i)
            for (Eigen::Index j = 0; j < width; ++j) {
                double exact = 0, size = 0, exact32 = 0;
                for (Eigen::Index k = 0; k < depth; ++k) {
                    exact += a(i, k) * b(k, j);
                    size += std::abs(a(i, k) * b(k, j));
                    exact32 += static_cast<double>(a32(i, k)) * static_cast<double>(b32(k, j));
                }
                worst64 = std::max({worst64, std::abs(y64(i, j) - exact) / size, std::abs(z64(i, j) - exact) / size});
                worst32 = std::max(worst32, std::abs(static_cast<double>(y32(i, j)) - exact32) / size);
            }
        CHECK(worst64 < 1e-14);
        CHECK(worst32 < 1e-6);
    }
}

// The summary's projections run in one parallel region, X converted block by block as it is
// read (project_filled): each product must still be project()'s, to the last bit, whichever
// kernel and blocks it takes, and every row of X must be filled once, before it is read.
template <typename T>
void check_projections_at_once(SplitMix64& rng, Eigen::Index rows, Eigen::Index depth,
                               const std::vector<Eigen::Index>& widths) {
    INFO(rows << " rows, depth " << depth << ", widths " << fmt::format("{}", widths)
              << (sizeof(T) == 4 ? ", float" : ", double"));
    const Matrix source = random_matrix(rng, rows, depth, 1.0);
    std::vector<MatrixT<T>> w;
    for (const Eigen::Index width : widths) w.push_back(random_matrix(rng, depth, width, 1.0).cast<T>());
    MatrixT<T> x(rows, depth);
    std::vector<int> filled(static_cast<std::size_t>(rows), 0);
    const std::vector<MatrixT<T>> at_once = project_filled<T>(x, w, [&](Eigen::Index first, Eigen::Index count) {
        x.middleRows(first, count) = source.middleRows(first, count).cast<T>();
        for (Eigen::Index r = first; r < first + count; ++r) ++filled[static_cast<std::size_t>(r)];
    });
    CHECK(std::all_of(filled.begin(), filled.end(), [](int times) { return times == 1; }));
    REQUIRE(at_once.size() == w.size());
    const MatrixT<T> x_whole = source.cast<T>();
    for (std::size_t i = 0; i < w.size(); ++i) {
        const MatrixT<T> one_by_one = project<T>(x_whole, w[i]);
        REQUIRE(at_once[i].rows() == rows);
        REQUIRE(at_once[i].cols() == w[i].cols());
        CHECK(std::memcmp(at_once[i].data(), one_by_one.data(),
                          sizeof(T) * static_cast<std::size_t>(one_by_one.size())) == 0);
    }
}

TEST_CASE("the projections at once equal the projections one by one, bit for bit", "[kernels]") {
    SplitMix64 rng(78);
    // Short inputs (Eigen, one block); the own kernels' widths; widths that are not whole
    // registers; and, at 1024 rows and more, a W of more than 64K numbers, whose product goes
    // to Eigen 256 rows at a time beside products of 32-row blocks.
    const std::vector<std::tuple<Eigen::Index, Eigen::Index, std::vector<Eigen::Index>>> shapes{
        {5, 7, {3, 3, 2}},        {300, 64, {64, 64, 64}},    {517, 64, {16, 40, 128}},
        {1300, 64, {64, 64, 40}}, {1300, 300, {256, 64, 48}}, {2100, 512, {512, 512, 512}}};
    for (const auto& [rows, depth, widths] : shapes) {
        check_projections_at_once<float>(rng, rows, depth, widths);
        check_projections_at_once<double>(rng, rows, depth, widths);
    }
}

TEST_CASE("the division-free exp of doubles is within 2 ulps of std::exp", "[streaming][exp]") {
    namespace ei = Eigen::internal;
    using Packet = ei::packet_traits<double>::type;
    constexpr int lanes = ei::packet_traits<double>::size;
    auto exp_of = [](double x) {
        alignas(64) double in[lanes], out[lanes];
        for (double& v : in) v = x;
        ei::pstoreu(out, ATTNTRACE_ISA::exp_without_division(ei::ploadu<Packet>(in)));
        for (int l = 1; l < lanes; ++l) REQUIRE(out[l] == out[0]);
        return out[0];
    };
    std::vector<double> xs{0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 709.0, -708.39, 1e-300, -1e-300};
    const double ln2 = std::log(2.0);
    for (int k = -1021; k <= 1022; k += 7)  // either side of each rounding point of k = x / ln 2
        for (const double half : {-0.5, 0.5})
            for (const double nudge : {-1e-12, 0.0, 1e-12}) xs.push_back((k + half) * ln2 + nudge);
    for (int i = 0; i <= 200000; ++i) xs.push_back(-708.39 + (708.39 + 709.0) * i / 200000.0);  // the whole range
    for (int i = 0; i <= 20000; ++i) xs.push_back(-40.0 * i / 20000.0);  // where the weights are
    std::size_t checked = 0;
    for (const double x : xs) {
        if (x < -708.39 || x > 709) continue;
        const double want = std::exp(x);
        const double got = exp_of(x);
        const double ulp = std::nextafter(want, std::numeric_limits<double>::infinity()) - want;
        INFO("x = " << x << ": " << got << " against " << want);
        REQUIRE(std::abs(got - want) <= 2 * ulp);
        ++checked;
    }
    CHECK(checked > 220000);
    CHECK(exp_of(0.0) == 1.0);
    // Below −708.39 (e^x subnormal or 0), the result is exactly 0, down to −∞ and the lowest
    // double, which the streaming path gives a masked score.
    for (const double x : {-708.4, -709.0, -745.2, -1e4, -std::numeric_limits<double>::max(),
                           -std::numeric_limits<double>::infinity()}) {
        INFO("x = " << x);
        CHECK(exp_of(x) == 0.0);
    }
}

TEST_CASE("equal scores rank the earlier key first across key blocks in the streaming path", "[streaming]") {
    // Every token has the same vector, so every score in a row is equal and every weight is
    // 1/(keys seen): the top keys must be the first ones, however the blocks split them.
    const Eigen::Index n = 300;  // more than one key block (256)
    SingleSequenceInput input;
    input.sequence.vectors = Matrix::Constant(n, 4, 0.5);
    for (Eigen::Index i = 0; i < n; ++i) input.sequence.tokens.push_back(fmt::format("t{}", i + 1));
    Problem problem;
    problem.origin = "equal";
    problem.input = std::move(input);
    SummaryOptions options;
    options.top = 3;
    for (const Mode mode : {Mode::plain, Mode::causal}) {
        TraceOptions trace_options;
        trace_options.mode = mode;
        const Summary summary = summarize(problem, trace_options, options);
        for (const Eigen::Index row : {Eigen::Index{0}, Eigen::Index{1}, Eigen::Index{257}, n - 1}) {
            INFO(to_string(mode) << " row " << row);
            const auto& query = summary.per_head.front().queries[static_cast<std::size_t>(row)];
            const Eigen::Index seen = mode == Mode::causal ? row + 1 : n;
            REQUIRE(query.top.size() == static_cast<std::size_t>(std::min<Eigen::Index>(3, seen)));
            for (std::size_t t = 0; t < query.top.size(); ++t) {
                CHECK(query.top[t].index == static_cast<Eigen::Index>(t));
                CHECK(query.top[t].weight == Approx(1.0 / static_cast<double>(seen)));
            }
        }
    }
}

TEST_CASE("keys whose weights print the same are listed in key order in the table, markdown and CSV",
          "[streaming][render]") {
    // Weights that are equal in exact arithmetic can differ in their last bit, one way on one
    // CPU's kernels and the other way on another's. The summary ranks them exactly; what is
    // printed must not depend on that bit.
    SingleSequenceInput input;
    input.sequence.vectors = Matrix::Constant(4, 2, 0.5);
    input.sequence.tokens = {"t1", "t2", "t3", "t4"};
    Problem problem;
    problem.origin = "ties";
    problem.input = std::move(input);
    Summary summary = summarize(problem, TraceOptions{}, SummaryOptions{});
    const double w = 0.136;
    std::vector<KeyWeight>& top = summary.per_head.front().queries[0].top;
    top = {{0, 0.5}, {3, std::nextafter(w, 1.0)}, {1, w}};            // t4 above t2 by one bit
    summary.per_head.front().queries[1].top = {{3, 0.1361}, {1, w}};  // printed apart: stays
    for (const Format format : {Format::table, Format::markdown, Format::csv}) {
        INFO(to_string(format));
        RenderOptions options;
        options.format = format;
        std::ostringstream out;
        render(summary, options, out);
        const std::string text = out.str();
        const bool csv = format == Format::csv;
        CHECK_THAT(text, Contains(csv ? "t1,0.5,t2,0.136,t4,0.136" : "t1 0.5, t2 0.136, t4 0.136"));
        CHECK_THAT(text, Contains(csv ? "t4,0.1361,t2,0.136" : "t4 0.1361, t2 0.136"));
    }
}

namespace {

#if defined(__SANITIZE_THREAD__)
constexpr bool under_tsan = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool under_tsan = true;
#else
constexpr bool under_tsan = false;
#endif
#else
constexpr bool under_tsan = false;
#endif

// How many threads this process has now (its tasks in /proc), not counting ThreadSanitizer's
// own: its runtime starts a background thread when the program starts its first thread.
std::size_t threads_now() {
    std::size_t count = 0;
    for ([[maybe_unused]] const auto& task : std::filesystem::directory_iterator("/proc/self/task")) ++count;
    return under_tsan && count > 1 ? count - 1 : count;
}

}  // namespace

// Issue 18: small work runs on the calling thread, so the lecture's examples never wait for
// another thread (or for a core another process holds). OpenMP's threads, once started, stay
// for the life of the process, so a process that has not started them yet (ctest runs each
// test case in a process of its own) still has one thread after tracing every example in every
// mode it reads, with heads, positions and the summary; a long input then starts them.
TEST_CASE("the lecture examples run on the calling thread alone", "[streaming][threads]") {
    const std::size_t before = threads_now();
    if (before != 1) {
        WARN("this process already runs " << before << " threads (other test cases ran in it): run this one alone, "
                                                       "as ctest does, to check it");
        return;
    }
    omp_set_num_threads(2);
    for (const auto& example : examples()) {
        const Problem problem = load_problem(example.json, std::string(example.name));
        const bool pair = std::holds_alternative<EncoderDecoderInput>(problem.input);
        const std::vector<Mode> modes = pair ? std::vector<Mode>{Mode::bahdanau} : std::vector<Mode>{Mode::plain, Mode::self, Mode::causal};
        for (const Mode mode : modes) {
            INFO(example.name << " " << to_string(mode));
            TraceOptions options;
            options.mode = mode;
            (void)trace(problem, options);
            if (mode == Mode::plain || pair) continue;
            options.dtype = Dtype::float32;
            (void)summarize(problem, options, {});
            options.positions = PositionScheme::sinusoidal;
            (void)trace(problem, options);
        }
    }
    CHECK(threads_now() == 1);
    // 2048 tokens: enough work to be shared, and the threads start.
    Problem long_input;
    long_input.origin = "long";
    SingleSequenceInput single;
    for (int i = 0; i < 2048; ++i) single.sequence.tokens.push_back(fmt::format("t{}", i + 1));
    single.sequence.vectors = Matrix::Random(2048, 16);
    long_input.input = std::move(single);
    TraceOptions causal;
    causal.mode = Mode::causal;
    (void)summarize(long_input, causal, {});
    CHECK(threads_now() == 2);  // the calling thread and OpenMP's second
}
