// --summary --backward LOSS on the command line: the streaming backward pass's loss, parameter
// gradients and per-token ‖dL/dx_i‖, against the full trace's --backward of the same run (whose
// gradients test_backward_cli.cpp holds to the tests' own naive layer and finite differences;
// the library's own finite differences are in test_streaming_backward.cpp); the same bytes for
// one thread and two; float32; every format; and the refusals.
#include "core/matrix.hpp"
#include "input/npy.hpp"
#include "support/cli.hpp"
#include "support/error_line.hpp"
#include "support/limited.hpp"

#include "support/catch.hpp"
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using Catch::Contains;
using nlohmann::json;

namespace {

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

json run_json(const std::vector<std::string>& args) {
    const auto r = cli::run(args);
    INFO(fmt::format("{}", fmt::join(args, " ")) << "\n" << r.err);
    REQUIRE(r.exit_code == 0);
    return json::parse(r.out);
}

const std::set<std::string> parameter_names{"W_q", "b_q", "W_k", "b_k", "W_v", "b_v", "W_o", "b_o", "gamma", "beta"};

// The largest |a − b| over two matrices of the same shape, relative to the largest |b| (or 1).
double worst_difference(const json& a, const json& b) {
    REQUIRE(a.size() == b.size());
    double worst = 0, size = 1;
    for (std::size_t r = 0; r < a.size(); ++r) {
        REQUIRE(a[r].size() == b[r].size());
        for (std::size_t c = 0; c < a[r].size(); ++c) {
            worst = std::max(worst, std::abs(a[r][c].get<double>() - b[r][c].get<double>()));
            size = std::max(size, std::abs(b[r][c].get<double>()));
        }
    }
    return worst / size;
}

// The norm of each row of a matrix.
std::vector<double> row_norms(const json& data) {
    std::vector<double> norms;
    for (const auto& row : data) {
        double sum = 0;
        for (const auto& v : row) sum += v.get<double>() * v.get<double>();
        norms.push_back(std::sqrt(sum));
    }
    return norms;
}

// The gradient of what the run reads, from the full trace's gradients: the inputs, else the
// embeddings (sinusoidal positions).
const json& full_input_gradient(const json& full) {
    const json& g = full["gradients"];
    return g.contains("inputs") ? g["inputs"] : g["embeddings"];
}

// The streaming run's document against the full trace's: the loss, every parameter's gradient
// (named, labelled and shaped alike), and each token's ‖dL/dx_i‖, to `tolerance`.
void require_same_gradients(const json& stream, const json& full, double tolerance) {
    CHECK(stream["schema"] == "attntrace.stream-gradients/1");
    CHECK(stream["loss"]["kind"] == full["loss"]["kind"]);
    CHECK(stream["loss"]["formula"] == full["loss"]["formula"]);
    CHECK(stream["loss"]["title"] == full["loss"]["title"]);
    CHECK(std::abs(stream["loss"]["value"].get<double>() - full["loss"]["value"].get<double>()) <=
          tolerance * std::max(1.0, std::abs(full["loss"]["value"].get<double>())));
    std::set<std::string> full_keys, stream_keys;
    for (const auto& [key, value] : full["gradients"].items())
        if (parameter_names.count(key)) full_keys.insert(key);
    for (const auto& [key, value] : stream["gradients"].items()) stream_keys.insert(key);
    CHECK(stream_keys == full_keys);
    for (const std::string& key : stream_keys) {
        if (!full_keys.count(key)) continue;
        INFO(key);
        const json &s = stream["gradients"][key], &f = full["gradients"][key];
        CHECK(s["name"] == f["name"]);
        CHECK(s["shape"] == f["shape"]);
        CHECK(s["rows"] == f["rows"]);
        CHECK(s["cols"] == f["cols"]);
        CHECK(worst_difference(s["data"], f["data"]) <= tolerance);
    }
    const std::vector<double> norms = row_norms(full_input_gradient(full)["data"]);
    const json& streamed = stream["input_gradient_norms"];
    REQUIRE(streamed.size() == norms.size());
    const double largest = std::max(1.0, *std::max_element(norms.begin(), norms.end()));
    for (std::size_t i = 0; i < norms.size(); ++i) {
        INFO("token " << i);
        CHECK(std::abs(streamed[i].get<double>() - norms[i]) <= tolerance * largest);
    }
    CHECK(stream["tokens"].size() == norms.size());
}

// A target file of the result's shape (the output's with W_o), with numbers of the test's own.
std::string target_json(const json& full) {
    const json* result = nullptr;
    for (const auto& s : full["stages"])
        if (s["name"] == "output" || (s["name"] == "context" && !result)) result = &s;
    REQUIRE(result);
    const int rows = (*result)["shape"][0], cols = (*result)["shape"][1];
    json target = json::array();
    for (int r = 0; r < rows; ++r) {
        json row = json::array();
        for (int c = 0; c < cols; ++c) row.push_back(std::sin(1.0 + r * 0.7 + c * 1.3));
        target.push_back(row);
    }
    return json{{"target", target}}.dump();
}

const std::string arrays = std::string(ATTNTRACE_SOURCE_DIR) + "/data/arrays/";

}  // namespace

TEST_CASE("summary backward on the command line gives the full trace's gradients for every loss and single-sequence mode",
          "[streaming_backward][cli]") {
    const std::vector<std::vector<std::string>> runs{
        {"-m", "self", "--dim", "3"},
        {"-m", "causal", "--dim", "4", "--temperature", "0.7"},
        {"-m", "plain"},
        {"-m", "causal", "--heads", "2", "--kv-heads", "1", "--dim", "4"},
        {"-m", "self", "--heads", "2", "--dim", "4", "--positions", "rope"},
        {"-m", "self", "--dim", "3", "--positions", "sinusoidal", "--window", "2"},
        {"example:journey_padded", "-m", "self", "--dim", "3"},
        {arrays + "journey.npz", "-m", "self", "--layout", "out_in"},
        {arrays + "toy_gpt2.safetensors", "--from", "gpt2", "--layer", "1"},
    };
    for (const auto& run : runs) {
        INFO(fmt::format("{}", fmt::join(run, " ")));
        const json plain = run_json(with(run, {"--backward", "sum", "-f", "json"}));
        const cli::TempFile target(target_json(plain), "target.json");
        for (const std::string& loss : {std::string("sum"), "target:" + target.path(),
                                        std::string("focus:2=1")}) {
            INFO(loss);
            const json full = run_json(with(run, {"--backward", loss, "-f", "json"}));
            const json stream = run_json(with(run, {"--summary", "--backward", loss, "-f", "json"}));
            require_same_gradients(stream, full, 1e-10);
        }
    }
    // A focus loss on head 2 of two.
    const std::vector<std::string> heads{"-m", "causal", "--heads", "2", "--dim", "4", "--head", "2"};
    const json full = run_json(with(heads, {"--backward", "focus:5=3", "-f", "json"}));
    const json stream = run_json(with(heads, {"--summary", "--backward", "focus:5=3", "-f", "json"}));
    CHECK(stream["loss"]["head"] == 2);
    CHECK(stream["loss"]["query_position"] == 5);
    CHECK(stream["loss"]["key_position"] == 3);
    require_same_gradients(stream, full, 1e-10);
}

TEST_CASE("summary backward in float32 agrees with the full trace's float64 gradients to float32's rounding",
          "[streaming_backward][cli]") {
    const std::vector<std::string> run{"-m", "causal", "--heads", "2", "--dim", "4", "--backward", "sum"};
    const json full = run_json(with(run, {"-f", "json"}));
    const json narrow = run_json(with(run, {"--summary", "--dtype", "float32", "-f", "json"}));
    CHECK(narrow["dtype"] == "float32");
    require_same_gradients(narrow, full, 1e-5);
    // Not the float64 numbers: some entry differs from them.
    const json wide = run_json(with(run, {"--summary", "-f", "json"}));
    CHECK(narrow["gradients"]["W_q"]["data"] != wide["gradients"]["W_q"]["data"]);
}

TEST_CASE("summary backward writes the same bytes on one thread and two", "[streaming_backward][cli][threads]") {
    // 700 tokens: three tiles of 256 rows, so that key blocks meet query blocks on both threads.
    const cli::TempFile input(cli::run({"generate", "--tokens", "700", "--dim", "16", "--seed", "5"}).out, "long.json");
    const auto values = json::parse(cli::read_file(input.path()));
    for (const char* dtype : {"float64", "float32"})
        for (const std::vector<std::string>& options :
             {std::vector<std::string>{"-m", "causal", "--heads", "2", "--backward", "sum"},
              {"-m", "self", "--backward", "focus:600=3"}}) {
            const std::vector<std::string> args = with(with({input.path(), "--summary", "--dtype", dtype}, options), {"-f", "json"});
            INFO(fmt::format("{}", fmt::join(args, " ")));
            const auto one = cli::run(with(args, {"--threads", "1"}));
            const auto two = cli::run(with(args, {"--threads", "2"}));
            REQUIRE(one.exit_code == 0);
            REQUIRE(two.exit_code == 0);
            CHECK(one.out == two.out);
            CHECK(json::parse(one.out)["input_gradient_norms"].size() == 700);
        }
}

TEST_CASE("summary backward as a table: the heading and the loss then each gradient's table and the tokens' norms",
          "[streaming_backward][cli]") {
    const std::vector<std::string> run{"-m", "self", "--dim", "2", "--backward", "sum"};
    const json full = run_json(with(run, {"-f", "json"}));
    const auto r = cli::run(with(run, {"--summary"}));
    REQUIRE(r.exit_code == 0);
    const std::size_t n = full["tokens"].size();
    CHECK_THAT(r.out, Catch::StartsWith(fmt::format("attntrace · self mode · backward pass of {} tokens · ", n)));
    CHECK_THAT(r.out, Contains(fmt::format("backward · L = Σ Z = {:.4f}\n", full["loss"]["value"].get<double>())));
    CHECK_THAT(r.out, Contains("Loss: every number of the context summed\n"));
    // W_q's gradient, row by row, in four decimals.
    const json& w_q = full["gradients"]["W_q"];
    std::string table = fmt::format("d_W_q · {}×2 · dW_q = Xᵀ·dQ\nGradient of W_q: how L changes with each of its numbers\n",
                                    w_q["shape"][0].get<int>());
    CHECK_THAT(r.out, Contains(table));
    for (std::size_t i = 0; i < w_q["data"].size(); ++i) {
        const auto& row = w_q["data"][i];
        const std::string line = fmt::format("x{}  {:>7.4f}  {:>7.4f}\n", i + 1, row[0].get<double>(), row[1].get<double>());
        CHECK_THAT(r.out, Contains(line));
    }
    // The norms, each token's in four significant digits, and the largest.
    const std::vector<double> norms = row_norms(full["gradients"]["inputs"]["data"]);
    for (std::size_t i = 0; i < n; ++i) {
        const std::string token = full["tokens"][i];
        INFO(token);
        CHECK_THAT(r.out, Contains(fmt::format("{}  {}", i + 1, token)) && Contains(fmt::format("{:.4g}\n", norms[i])));
    }
    const std::size_t top = static_cast<std::size_t>(std::max_element(norms.begin(), norms.end()) - norms.begin());
    CHECK_THAT(r.out, Contains(fmt::format("largest ‖dL/dx_i‖: {:.4g} at #{} \"{}\"\n", norms[top], top + 1,
                                           full["tokens"][top].get<std::string>())));
    // A long input shows its first and last ten tokens.
    const cli::TempFile input(cli::run({"generate", "--tokens", "40", "--dim", "4"}).out, "forty.json");
    const auto long_run = cli::run({input.path(), "--summary", "--backward", "sum"});
    REQUIRE(long_run.exit_code == 0);
    CHECK_THAT(long_run.out, Contains("…  … 20 more tokens (--format json or csv lists them all)"));
}

TEST_CASE("summary backward in markdown and CSV", "[streaming_backward][cli]") {
    const std::vector<std::string> run{"-m", "causal", "--dim", "2", "--backward", "sum", "--summary"};
    const json doc = run_json(with(run, {"-f", "json"}));
    const std::size_t n = doc["tokens"].size();
    const auto md = cli::run(with(run, {"-f", "markdown"}));
    REQUIRE(md.exit_code == 0);
    CHECK_THAT(md.out, Catch::StartsWith(fmt::format("# attntrace: causal mode, backward pass of {} tokens", n)));
    CHECK_THAT(md.out, Contains("## d_W_q · ") && Contains("## d_W_v · ") && Contains("| # | token | ‖dL/dx_i‖ |"));
    const auto csv = cli::run(with(run, {"-f", "csv"}));
    REQUIRE(csv.exit_code == 0);
    CHECK_THAT(csv.out, Catch::StartsWith("loss,sum,L = Σ Z,"));
    CHECK_THAT(csv.out, Contains("\nstage,d_W_k\nformula,dW_k = Xᵀ·dK\n"));
    // Every token, a line each, after the header.
    const std::string tail = csv.out.substr(csv.out.find("index,token,input_gradient_norm\n"));
    CHECK(static_cast<std::size_t>(std::count(tail.begin(), tail.end(), '\n')) == n + 1);
    std::istringstream lines(tail);
    std::string line;
    std::getline(lines, line);
    for (std::size_t i = 0; i < n; ++i) {
        std::getline(lines, line);
        CHECK_THAT(line, Catch::StartsWith(fmt::format("{},", i)));
        const double norm = std::stod(line.substr(line.rfind(',') + 1));
        CHECK(std::abs(norm - doc["input_gradient_norms"][i].get<double>()) <= 1e-3 * std::max(1.0, norm));
    }
}

TEST_CASE("summary backward refuses what the streaming backward pass does not take", "[streaming_backward][cli]") {
    const std::vector<std::string> run{"-m", "causal", "--summary", "--backward", "sum"};
    for (const auto& [extra, fragment] : std::vector<std::pair<std::vector<std::string>, std::string>>{
             {{"--mask-fill", "lowest"}, "--mask-fill and --mask-after-softmax show a wrong way of masking"},
             {{"--mask-after-softmax"}, "--mask-fill and --mask-after-softmax show a wrong way of masking"},
             {{"--normalize", "sum"}, "--normalize sum needs the full trace, which --summary does not build"},
             {{"-q", "2"}, "--query needs the full trace"},
             {{"--explain"}, "--explain needs the full trace"},
             {{"--check"}, "--check needs the full trace"},
             {{"--step-size", "0.1"}, "--step-size needs the full trace"},
             {{"-s", "d_weights"}, "--stage d_weights: --summary --backward shows the loss"},
             {{"-s", "context"}, "no forward stage; --stage context needs --summary without --backward"},
             {{"-f", "jsonl"}, "use --format json"},
             {{"--head", "2"}, "--head 2: this run has 1 head"},
         }) {
        INFO(fmt::format("{}", fmt::join(extra, " ")));
        cli::require_error_line(cli::run(with(run, extra)), 2, fragment);
    }
    cli::require_error_line(cli::run({"-m", "causal", "--summary", "--backward", "focus:2=nothing"}), 2,
                            "--backward focus (the key)");
    cli::require_error_line(cli::run({"example:teacher_smiled_fr", "--summary", "--backward", "sum"}), 2,
                            "--summary --backward is for one sequence");
    // A hidden key has weight 0: −log 0 is no loss (a data error).
    cli::require_error_line(cli::run({"-m", "causal", "--summary", "--backward", "focus:1=2"}), 1,
                            "the focus loss −log A needs a positive weight");
    // A target of another shape.
    const cli::TempFile target(R"({"target": [[1, 2], [3, 4]]})", "target.json");
    const auto wrong = cli::run({"-m", "causal", "--summary", "--backward", "target:" + target.path()});
    CHECK(wrong.exit_code == 1);
    CHECK(wrong.out.empty());
}

TEST_CASE("summary backward is guarded by the memory and time limits", "[streaming_backward][cli][resources]") {
    // 4000 tokens of 64 numbers in a .npy file: reading it takes little, the backward pass more.
    const cli::TempDir dir;
    const std::string rows = dir / "rows.npy";
    attntrace::Matrix x(4000, 64);
    for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = std::cos(0.37 * static_cast<double>(i));
    std::ofstream(rows, std::ios::binary) << attntrace::write_npy(x, attntrace::ElementType::float64);
    cli::require_error_line(cli::run({rows, "-m", "causal", "--summary", "--backward", "sum", "--max-time", "1ms"}), 1,
                            "the streaming backward pass of 4000 tokens takes about");
    // The estimate the refusal states covers the peak the run reaches when allowed (above the
    // built-in example's), and is not far above it.
    const long baseline = limited::run({"-s", "inputs"}).peak_kib;
    for (const char* loss : {"sum", "focus:4000=1"})
        for (const char* dtype : {"float64", "float32"}) {
            const std::vector<std::string> args{rows, "-m", "causal", "--summary", "--backward", loss, "--dtype", dtype,
                                                "-f", "json"};
            INFO(fmt::format("{}", fmt::join(args, " ")));
            const auto run = limited::run(args);
            REQUIRE(run.exit_code == 0);
            const auto refused = cli::run(with(args, {"--max-memory", "6M"}));
            cli::require_error_line(refused, 1, "the streaming backward pass of this input needs about");
            const auto at = refused.err.find("needs about ");
            REQUIRE(at != std::string::npos);
            const double estimate_mib = std::stod(refused.err.substr(at + 12));
            const double peak_mib = static_cast<double>(run.peak_kib - baseline) / 1024;
            INFO("estimate " << estimate_mib << " MiB, measured " << peak_mib << " MiB over the baseline");
            CHECK(estimate_mib >= peak_mib);
            CHECK(estimate_mib <= 3 * peak_mib + 20);
        }
}
