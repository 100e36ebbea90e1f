// The weights a run uses, shown in every format, and what --scale and --temperature do. The
// expected numbers come from naive loops written here (matrix products, softmax), never from
// attntrace's own code.
#include "support/cli.hpp"
#include "support/trace_json.hpp"

#include "support/catch.hpp"
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

using Catch::Contains;
using nlohmann::json;
using trace_json::rows_of;
using trace_json::Rows;
using trace_json::run_json;

namespace {
Rows stage(const json& trace, const std::string& name) { return trace_json::stage_rows(trace, name); }
}  // namespace

namespace {

Rows product(const Rows& a, const Rows& b) {
    Rows out(a.size(), std::vector<double>(b[0].size(), 0.0));
    for (std::size_t i = 0; i < a.size(); ++i)
        for (std::size_t k = 0; k < b.size(); ++k)
            for (std::size_t j = 0; j < b[0].size(); ++j) out[i][j] += a[i][k] * b[k][j];
    return out;
}

Rows transposed(const Rows& a) {
    Rows out(a[0].size(), std::vector<double>(a.size()));
    for (std::size_t i = 0; i < a.size(); ++i)
        for (std::size_t j = 0; j < a[0].size(); ++j) out[j][i] = a[i][j];
    return out;
}

Rows divided(Rows a, double d) {
    for (auto& row : a)
        for (double& v : row) v /= d;
    return a;
}

// Softmax of each row, −∞ entries getting 0.
Rows softmax(const Rows& s) {
    Rows out = s;
    for (auto& row : out) {
        const double m = *std::max_element(row.begin(), row.end());
        double sum = 0;
        for (double& v : row) sum += v = std::exp(v - m);
        for (double& v : row) v /= sum;
    }
    return out;
}

void require_close(const Rows& actual, const Rows& expected, double tolerance = 1e-12) {
    REQUIRE(actual.size() == expected.size());
    for (std::size_t i = 0; i < actual.size(); ++i) {
        REQUIRE(actual[i].size() == expected[i].size());
        for (std::size_t j = 0; j < actual[i].size(); ++j) {
            INFO("(" << i + 1 << ", " << j + 1 << ")");
            if (std::isinf(expected[i][j])) CHECK(actual[i][j] == expected[i][j]);
            else CHECK(actual[i][j] == Approx(expected[i][j]).margin(tolerance).epsilon(0));
        }
    }
}

// Each row's largest entry.
std::vector<double> row_max(const Rows& rows) {
    std::vector<double> out;
    for (const auto& row : rows) out.push_back(*std::max_element(row.begin(), row.end()));
    return out;
}

const char* own_weights = R"({
  "tokens": ["a", "b", "c"],
  "embeddings": [[1, 0, 2], [0, 1, -1], [0.5, 0.25, 0]],
  "weights": {
    "query": [[0.1, 0.2], [0.3, -0.4], [0.5, 0.6]],
    "key":   [[0.7, 0.8], [-0.9, 1.0], [0.15, 0.35]],
    "value": [[1, 0, 0.3], [0, 1, 0.7], [0.5, 0.5, 0.1]]
  }
})";

}  // namespace

TEST_CASE("the parameters of a self run give its queries, keys and values", "[parameters]") {
    for (const std::string dim : {"3", "2", "5"}) {
        INFO("--dim " << dim);
        const json t = run_json({"-m", "self", "--dim", dim});
        const Rows x = stage(t, "inputs");
        const json& p = t["parameters"];
        REQUIRE(p.size() == 3);
        for (const char* name : {"W_q", "W_k", "W_v"}) {
            REQUIRE(p[name].size() == 3);  // d_in rows
            CHECK(p[name][0].size() == std::stoul(dim));
        }
        require_close(stage(t, "queries"), product(x, rows_of(p["W_q"])));
        require_close(stage(t, "keys"), product(x, rows_of(p["W_k"])));
        require_close(stage(t, "values"), product(x, rows_of(p["W_v"])));
    }
}

TEST_CASE("weights given in the input are shown exactly as given", "[parameters]") {
    const cli::TempFile input(own_weights);
    const json t = run_json({input.path(), "-m", "causal"});
    CHECK(t["parameters"]["W_q"] == json::parse("[[0.1, 0.2], [0.3, -0.4], [0.5, 0.6]]"));
    CHECK(t["parameters"]["W_k"] == json::parse("[[0.7, 0.8], [-0.9, 1.0], [0.15, 0.35]]"));
    CHECK(t["parameters"]["W_v"] == json::parse("[[1, 0, 0.3], [0, 1, 0.7], [0.5, 0.5, 0.1]]"));
    // The table: a section before the queries, each matrix with its rows x1… and columns q1….
    const auto r = cli::run({input.path(), "-m", "causal"});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("parameters · W_q, W_k, W_v · given in the input\nW_q · 3×2 · Q = X·W_q\n"));
    CHECK_THAT(r.out, Contains("x2  0.3000  -0.4000\n"));
    CHECK(r.out.find("parameters ·") < r.out.find("queries ·"));
    CHECK(r.out.find("inputs ·") < r.out.find("parameters ·"));
}

TEST_CASE("bahdanau shows the weights of its score, and plain and dot say they have none", "[parameters]") {
    const json additive = run_json({"example:teacher_smiled_fr", "-s", "parameters"});
    CHECK(additive["parameters"]["W_a"] == json::parse("[[0, 3, 3], [3, 0, 3], [3, 3, 0]]"));  // data/teacher_smiled_fr.json
    CHECK(additive["parameters"]["U_a"] == json::parse("[[2, 0, 0], [0, 2, 0], [0, 0, 2]]"));
    CHECK(additive["parameters"]["v_a"] == json::parse("[3, 3, 3]"));  // a vector, as in the input
    const json general = run_json({"example:teacher_smiled_fr", "--score", "general", "-s", "parameters"});
    CHECK(general["parameters"].size() == 1);
    CHECK(general["parameters"].contains("W"));
    CHECK(run_json({"example:teacher_smiled_fr", "--score", "dot"})["parameters"].empty());
    CHECK(run_json({})["parameters"].empty());

    const auto plain = cli::run({"-s", "parameters"});
    CHECK(plain.out.find("parameters · none · plain attention has no trainable weights") != std::string::npos);
    const auto dot = cli::run({"example:teacher_smiled_fr", "--score", "dot", "-s", "parameters"});
    CHECK_THAT(dot.out, Contains("parameters · none · Luong's dot score compares decoder and encoder states as they are"));
}

TEST_CASE("the parameters section is what --stage parameters selects, in every format", "[parameters]") {
    const auto table = cli::run({"-m", "self", "-s", "parameters"});
    CHECK_THAT(table.out, Contains("W_v · 3×3 · V = X·W_v"));
    CHECK(table.out.find("queries ·") == std::string::npos);
    const auto markdown = cli::run({"-m", "self", "-s", "parameters", "-f", "markdown"});
    CHECK_THAT(markdown.out, Contains("## parameters\n\n"));
    CHECK_THAT(markdown.out, Contains("`K = X·W_k` — W_k\n\n|"));
    const auto csv = cli::run({"-m", "self", "-s", "parameters", "-f", "csv"});
    CHECK_THAT(csv.out, Contains("stage,parameters\nformula,W_q: Q = X·W_q\n"));
    // JSON: the parameters object goes with the selection, like the stages.
    const json only = run_json({"-m", "self", "-s", "parameters"});
    CHECK(only["parameters"].size() == 3);
    CHECK(only["stages"].empty());
    CHECK_FALSE(run_json({"-m", "self", "-s", "weights"}).contains("parameters"));
}

TEST_CASE("the scores are divided by the square root of d_k, by nothing, or by the number --scale gives", "[parameters][scale]") {
    struct Case {
        std::vector<std::string> args;
        double divisor;
    };
    const std::vector<Case> cases{
        {{"-m", "self"}, std::sqrt(3.0)},
        {{"-m", "self", "--dim", "5"}, std::sqrt(5.0)},
        {{"-m", "self", "--scale", "none"}, 1},
        {{"-m", "causal", "--scale", "8"}, 8},
        {{"-m", "plain"}, 1},
        {{"-m", "plain", "--scale", "sqrt"}, std::sqrt(3.0)},
        {{"-m", "plain", "--scale", "0.25"}, 0.25},
    };
    for (const auto& c : cases) {
        INFO(fmt::format("{}", fmt::join(c.args, " ")));
        const json t = run_json(c.args);
        require_close(stage(t, "scaled"), divided(stage(t, "scores"), c.divisor));
        CHECK(t["scale"]["divisor"].get<double>() == Approx(c.divisor).epsilon(1e-15));
    }
    // The heading says when --scale changed the mode's own rule.
    CHECK_THAT(cli::run({"-m", "self", "--scale", "none"}).out, Contains("softmax · scores unscaled ·"));
    CHECK_THAT(cli::run({"-m", "plain", "--scale", "sqrt"}).out, Contains("softmax · scores ÷ √3 ·"));
    CHECK_THAT(cli::run({"-m", "self", "--scale", "none", "-s", "scaled"}).out,
               Contains("no scaling: --scale none leaves the scores as they are"));
    const auto refused = cli::run({"example:teacher_smiled_fr", "--scale", "2"});
    CHECK(refused.exit_code == 2);
    CHECK_THAT(refused.err, Contains("--scale: bahdanau mode's scores are used as they are"));
    for (const char* bad : {"0", "-1", "nan", "inf", "sqrtx", ""}) {
        const auto r = cli::run({"--scale", bad});
        CHECK(r.exit_code == 2);
        CHECK(r.out.empty());
    }
}

TEST_CASE("a temperature T takes the softmax of the scores divided by T", "[parameters][temperature]") {
    std::vector<double> previous;
    for (const double t : {0.25, 0.5, 1.0, 2.0, 4.0}) {
        INFO("T = " << t);
        const json trace = run_json({"-m", "self", "--temperature", fmt::format("{}", t)});
        const Rows weights = stage(trace, "weights");
        require_close(weights, softmax(divided(stage(trace, "scaled"), t)));
        CHECK(trace["temperature"].get<double>() == t);
        // Lower T sharpens: each row's top weight falls as T rises.
        const std::vector<double> top = row_max(weights);
        if (!previous.empty())
            for (std::size_t i = 0; i < top.size(); ++i) CHECK(top[i] < previous[i]);
        previous = top;
    }
    // The causal mask stays exact at any temperature.
    const Rows causal = stage(run_json({"-m", "causal", "--temperature", "0.3"}), "weights");
    CHECK(causal[0][1] == 0);
    CHECK(causal[0][0] == 1);
    // Sum normalisation does not depend on T, and says so.
    const auto sum = cli::run({"--normalize", "sum", "--temperature", "0.5"});
    CHECK_THAT(sum.out, Contains("--temperature 0.5 changes nothing here"));
    CHECK(stage(run_json({"--normalize", "sum", "--temperature", "0.5"}), "weights") ==
          stage(run_json({"--normalize", "sum"}), "weights"));
    CHECK_THAT(cli::run({"-m", "self", "--temperature", "0.5", "-s", "weights"}).out,
               Contains("A = softmax(S' / T) per row\nAttention weights: softmax of each row at temperature T = 0.5"));
}

TEST_CASE("a scale or temperature so small that the scores overflow is named as the cause", "[parameters][scale][temperature]") {
    const auto scale = cli::run({"-m", "self", "--scale", "1e-320"});
    CHECK(scale.exit_code == 1);
    CHECK(scale.out.empty());
    CHECK_THAT(scale.err, Contains("the scaled stage overflows") && Contains("--scale 1e-320 divides by less than 1"));
    const auto temperature = cli::run({"-m", "self", "--temperature", "1e-320"});
    CHECK(temperature.exit_code == 1);
    CHECK_THAT(temperature.err, Contains("S' / T for") && Contains("--temperature 1e-320 divides by less than 1"));
    const auto summary = cli::run({"-m", "self", "--temperature", "1e-320", "--summary"});
    CHECK(summary.exit_code == 1);
    CHECK_THAT(summary.err, Contains("--temperature 1e-320 divides by less than 1"));
}

TEST_CASE("the streaming summary agrees with the trace under --scale and --temperature", "[parameters][streaming]") {
    for (const std::vector<std::string>& extra : {std::vector<std::string>{"--scale", "none"}, {"--scale", "0.5"},
                                                 {"--temperature", "0.2"}, {"--scale", "2", "--temperature", "3"}}) {
        for (const char* mode : {"self", "causal", "plain"}) {
            std::vector<std::string> args{"-m", mode};
            args.insert(args.end(), extra.begin(), extra.end());
            INFO(fmt::format("{}", fmt::join(args, " ")));
            const json trace = run_json(args);
            const std::vector<double> top = row_max(stage(trace, "weights"));
            args.push_back("--summary");
            const json summary = run_json(args);
            REQUIRE(summary["queries"].size() == top.size());
            for (std::size_t i = 0; i < top.size(); ++i)
                CHECK(summary["queries"][i]["max_weight"].get<double>() == Approx(top[i]).margin(1e-12));
            CHECK(summary["temperature"] == trace["temperature"]);
            CHECK(summary["scale"] == trace["scale"]);
        }
    }
}

namespace {

// A number as the worked example prints it at 4 decimals: trailing zeros cut, negatives in
// parentheses when they are a factor.
std::string compact(double v) {
    std::string text = fmt::format("{:.4f}", v);
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
    return text == "-0" ? "0" : text;
}
std::string factor(double v) {
    const std::string text = compact(v);
    return text[0] == '-' ? "(" + text + ")" : text;
}

}  // namespace

TEST_CASE("the worked example multiplies the query's input by each column of W_q", "[parameters][worked]") {
    const json t = run_json({"-m", "self", "-q", "journey"});
    const Rows w_q = rows_of(t["parameters"]["W_q"]);
    const std::vector<double> x = stage(t, "inputs")[1];  // journey, row 2
    const json& p = t["worked"]["projections"];
    REQUIRE(p.size() == 1);
    CHECK(p[0]["output"] == "q_journey");
    CHECK(p[0]["input"] == "x_journey");
    CHECK(rows_of(p[0]["columns"]) == transposed(w_q));
    const Rows q = product(Rows{x}, w_q);
    require_close(Rows{p[0]["result"].get<std::vector<double>>()}, q);
    require_close(Rows{stage(t, "queries")[1]}, q);

    const auto r = cli::run({"-m", "self", "-q", "journey", "-s", "weights"});
    CHECK_THAT(r.out, Contains("  entry k of q_journey is x_journey times column k of W_q:\n"));
    for (std::size_t k = 0; k < 3; ++k) {
        const std::string line = fmt::format("  entry {} = 0.55×{} + 0.87×{} + 0.66×{} = {}   (column {} of W_q: [{}, {}, {}])\n",
                                             k + 1, factor(w_q[0][k]), factor(w_q[1][k]), factor(w_q[2][k]), compact(q[0][k]),
                                             k + 1, compact(w_q[0][k]), compact(w_q[1][k]), compact(w_q[2][k]));
        CHECK_THAT(r.out, Contains(line));
    }
    // Bahdanau's s·W_a, from data/teacher_smiled_fr.json: s_professeur = [0, 1, 0] picks row 2 of W_a.
    const auto b = cli::run({"example:teacher_smiled_fr", "-q", "professeur", "-s", "weights"});
    CHECK_THAT(b.out, Contains("  entry 1 = 0×0 + 1×3 + 0×3 = 3   (column 1 of W_a: [0, 3, 3])\n"));
    CHECK_THAT(b.out, Contains("  entry 2 = 0×3 + 1×0 + 0×3 = 0   (column 2 of W_a: [3, 0, 3])\n"));
    CHECK(cli::run({"-q", "journey"}).out.find("entry k of") == std::string::npos);  // plain: no W_q
}

TEST_CASE("the worked softmax at a temperature divides by T first", "[parameters][worked][temperature]") {
    const json t = run_json({"-m", "self", "-q", "journey", "--temperature", "0.5"});
    const json& w = t["worked"];
    const Rows tempered = divided(Rows{stage(t, "scaled")[1]}, 0.5);
    require_close(Rows{w["tempered"].get<std::vector<double>>()}, tempered);
    require_close(Rows{w["weights"].get<std::vector<double>>()}, softmax(tempered));
    CHECK(w["temperature"] == 0.5);
    const auto r = cli::run({"-m", "self", "-q", "journey", "--temperature", "0.5", "-s", "weights"});
    CHECK_THAT(r.out, Contains("temperature: each score ÷ T = ÷ 0.5 (T < 1 widens the gaps: sharper weights)\n"));
    CHECK_THAT(r.out, Contains(fmt::format("  {} ÷ 0.5 = {}\n", compact(tempered[0][0] * 0.5), compact(tempered[0][0]))));
    CHECK_THAT(r.out, Contains("softmax: e^(s/T) of each score, divided by their sum\n"));
    CHECK_THAT(cli::run({"-m", "self", "-q", "1", "--temperature", "3", "-s", "weights"}).out,
               Contains("(T > 1 narrows the gaps: flatter weights)"));
    CHECK(run_json({"-m", "self", "-q", "journey"})["worked"]["tempered"].is_null());
}

TEST_CASE("where e^s would overflow, the worked example says that is why the max is subtracted", "[parameters][worked]") {
    // Plain scores x·x: 30² = 900, and e^900 is beyond the largest double (about e^709.8).
    const cli::TempFile input(R"({"tokens": ["big", "small"], "embeddings": [[30, 0], [0, 1]]})");
    const json t = run_json({input.path(), "-q", "big"});
    CHECK(t["worked"]["exp_unshifted"].is_null());
    CHECK(t["worked"]["sum_unshifted"].is_null());
    CHECK(t["worked"]["weights"][0] == 1.0);  // e^(0 − 900) is 0 in a double
    const auto r = cli::run({input.path(), "-q", "big", "-s", "weights"});
    CHECK_THAT(r.out, Contains("softmax: e^s would overflow for scores this large (e^710 is beyond the largest double), "
                               "so subtract the row max 900 first"));
    // The other row is small enough for both ways: e^0 = 1 and e^1 = 2.7183, sum 3.7183.
    const auto small = cli::run({input.path(), "-q", "small", "-s", "weights"});
    CHECK_THAT(small.out, Contains("  sum = 3.7183\n"));
}

TEST_CASE("in float32, e^s overflows near e^88.7: the worked example says so, and the JSON stays JSON", "[parameters][worked]") {
    // Found by the fuzzer: plain scores of the middle row are 50·6 + 25 = 325, 50² + 25 = 2525
    // and 275. e^325 fits a double (about 1e141) but not a float32 (largest about 3.4e38, e^88.7),
    // so a float32 run must not claim the unshifted exps; writing them gave "inf" in the JSON.
    const cli::TempFile input(R"({"tokens":["a","b","c"],"embeddings":[[6,5],[50,5],[5,5]]})");
    const json wide = run_json({input.path(), "-q", "1"});  // scores 61, 325, 55: e^325 ≈ 1.4e141
    CHECK(wide["worked"]["exp_unshifted"].is_array());
    const json narrow = run_json({input.path(), "-q", "1", "--dtype", "float32"});
    CHECK(narrow["worked"]["exp_unshifted"].is_null());
    CHECK(narrow["worked"]["sum_unshifted"].is_null());
    const auto r = cli::run({input.path(), "-q", "1", "--dtype", "float32", "-s", "weights"});
    CHECK_THAT(r.out, Contains("softmax: e^s would overflow for scores this large (this run is float32, and e^89 is "
                               "beyond the largest float32), so subtract the row max 325 first"));
    // Small scores fit both: x·x = 9 and 0 give e^9 ≈ 8103 and 1, kept in float32 too.
    const cli::TempFile mild(R"({"tokens":["a","b"],"embeddings":[[3,0],[0,2]]})");
    const json small = run_json({mild.path(), "-q", "1", "--dtype", "float32"});
    REQUIRE(small["worked"]["exp_unshifted"].is_array());
    CHECK(small["worked"]["exp_unshifted"][0].get<double>() == Approx(std::exp(9.0)).epsilon(1e-6));
}

TEST_CASE("the query row is found whatever the case of the word, and two spellings that match are refused", "[parameters][worked]") {
    const auto exact = cli::run({"-q", "journey", "-s", "weights"});
    const auto upper = cli::run({"-q", "JOURNEY", "-s", "weights"});
    CHECK(upper.exit_code == 0);
    CHECK(upper.out == exact.out);
    const cli::TempFile input(R"({"tokens": ["The", "cat", "saw", "the", "dog"],
                                  "embeddings": [[1, 0], [0, 1], [1, 1], [1, 0], [0, 2]]})");
    CHECK(cli::run({input.path(), "-q", "the", "-s", "weights"}).out.find("query \"the\" (row 4)") != std::string::npos);
    const auto both = cli::run({input.path(), "-q", "THE"});
    CHECK(both.exit_code == 2);
    CHECK(both.out.empty());
    CHECK(both.err == "attntrace: error: --query: \"THE\" matches \"The\" (position 1), \"the\" (position 4) when case is "
                      "ignored; give one as spelled, or its position\n");
}
