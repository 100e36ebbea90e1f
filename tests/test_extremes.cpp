// Numbers at the edges: near the double range, huge scores, subnormals, equal scores, rows
// with every key masked. Results stay finite and correct, or the run ends with a clear error.
#include "attention/bahdanau.hpp"
#include "attention/check.hpp"
#include "attention/decode.hpp"
#include "attention/summary.hpp"
#include "attention/trace.hpp"
#include "core/error.hpp"
#include "input/load.hpp"
#include "practice/answers.hpp"
#include "support/cli.hpp"

#include "support/catch.hpp"
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <limits>

using namespace attntrace;
using Catch::Contains;

namespace {

Trace traced(const std::string& json, Mode mode, Normalization normalization = Normalization::softmax) {
    const Problem problem = load_problem(json, "edge");
    TraceOptions options;
    options.mode = mode;
    options.normalization = normalization;
    return trace(problem, options);
}

void require_finite_and_checked(const Trace& t) {
    for (const auto& stage : t.stages) {
        INFO(stage.name());
        for (Eigen::Index r = 0; r < stage.data.rows(); ++r)
            for (Eigen::Index c = 0; c < stage.data.cols(); ++c)
                CHECK((std::isfinite(stage.data(r, c)) || stage.is_masked(r, c)));
    }
    const auto failure = first_failed_check(t);
    CHECK_FALSE(failure);
}

}  // namespace

TEST_CASE("inputs near the double range stay finite while the products do", "[extremes]") {
    // x·x = 2·(1e154)² = 2e308 would overflow; x·y = 1e308 − 1e308 = 0 does not. Use a pair
    // whose every product fits: 0.9e154 · 0.9e154 · 2 = 1.62e308 < 1.797e308.
    const Trace t = traced(R"({"sentence": "x y", "embeddings": {"x": [0.9e154, 0.9e154], "y": [-0.9e154, 0.9e154]}})", Mode::plain);
    require_finite_and_checked(t);
    // Scores 1.62e308 on the diagonal, 0 off it: softmax puts all the weight on the diagonal.
    CHECK(t.find(StageId::weights)->data(0, 0) == 1.0);
    CHECK(t.find(StageId::weights)->data(0, 1) == 0.0);
}

TEST_CASE("huge score differences give one-hot weights, never NaN", "[extremes]") {
    const Trace t = traced(R"({"tokens": ["a", "b", "c"], "embeddings": [[1e150], [1e150], [-1e150]]})", Mode::plain);
    require_finite_and_checked(t);
    const Stage& w = *t.find(StageId::weights);
    CHECK(w.data(0, 0) == 0.5);  // a and b tie at 1e300, c is at −1e300
    CHECK(w.data(0, 1) == 0.5);
    CHECK(w.data(0, 2) == 0.0);
    CHECK(w.data(2, 2) == 1.0);
}

TEST_CASE("subnormal inputs are computed, not refused", "[extremes]") {
    const Trace t = traced(R"({"tokens": ["a", "b"], "embeddings": [[1e-310, 2e-310], [4.9e-324, 0]]})", Mode::causal);
    require_finite_and_checked(t);
    // Scores underflow to 0: every visible weight is the same.
    CHECK(t.find(StageId::weights)->data(1, 0) == 0.5);
    CHECK(t.find(StageId::weights)->data(1, 1) == 0.5);
}

TEST_CASE("all-equal scores give uniform weights", "[extremes]") {
    for (const Mode mode : {Mode::plain, Mode::self, Mode::causal}) {
        const Trace t = traced(R"({"tokens": ["a", "a", "a", "a"], "embeddings": [[5, 5], [5, 5], [5, 5], [5, 5]]})", mode);
        require_finite_and_checked(t);
        const Stage& w = *t.find(StageId::weights);
        for (Eigen::Index i = 0; i < 4; ++i)
            for (Eigen::Index j = 0; j <= (mode == Mode::causal ? i : 3); ++j)
                CHECK(w.data(i, j) == Approx(1.0 / static_cast<double>(mode == Mode::causal ? i + 1 : 4)).epsilon(1e-15));
    }
}

TEST_CASE("a row whose every key is masked: weights 0, said so, never NaN", "[extremes]") {
    const std::string json = R"({"mode": "bahdanau", "source": {"tokens": ["a", "b"], "states": [[1], [2]], "mask": [false, false]},
                                 "target": {"tokens": ["x", "y"], "states": [[1], [0.5]]}})";
    for (const Normalization normalization : {Normalization::softmax, Normalization::sum}) {
        const Trace t = traced(json, Mode::bahdanau, normalization);
        require_finite_and_checked(t);
        const Stage& w = *t.find(StageId::weights);
        CHECK(w.data.isZero(0));
        CHECK(t.find(StageId::context)->data.isZero(0));
        CHECK(w.strongest == std::vector<Eigen::Index>{-1, -1});
        REQUIRE(t.notes.size() == 1);
        CHECK_THAT(t.notes[0], Contains("every key is masked for x, y"));
    }
    cli::TempFile file(json);
    const auto r = cli::run({file.path(), "-f", "json", "-q", "x"});
    REQUIRE(r.exit_code == 0);
    const auto doc = nlohmann::json::parse(r.out);  // no NaN or Infinity, or this throws
    CHECK(doc["worked"]["max"].is_null());
    CHECK(doc["worked"]["weights"] == nlohmann::json({0.0, 0.0}));
    const auto table = cli::run({file.path(), "-s", "weights"});
    CHECK_THAT(table.out, Contains("x  0  0  0.0000  —"));
}

TEST_CASE("overflow is refused on both paths, naming the stage and the pair", "[extremes]") {
    const std::string json = R"({"tokens": ["small", "big"], "embeddings": [[1e10, 1], [1e300, 1]]})";
    REQUIRE_THROWS_WITH(traced(json, Mode::plain),
                        Contains("the scores stage overflows: the entry for \"small\" (row 1) and \"big\" (column 2)"));
    const Problem problem = load_problem(json, "edge");
    TraceOptions options;
    options.mode = Mode::plain;
    REQUIRE_THROWS_WITH(summarize(problem, options, SummaryOptions{}),
                        Contains("the scores stage overflows: the entry for \"small\" (row 1) and \"big\" (column 2)"));
    options.dtype = Dtype::float32;
    REQUIRE_THROWS_WITH(summarize(load_problem(R"({"tokens": ["a"], "embeddings": [[1e39]]})", "edge"), options, SummaryOptions{}),
                        Contains("the inputs stage overflows"));
}

// --- counts and sizes computed from input never wrap round (issue 29) -------------------------

TEST_CASE("the decimals of an answer stay within their range whatever its exponent", "[extremes][answers]") {
    CHECK(decimals_of("0.25") == 2);
    CHECK(decimals_of("3") == 0);
    CHECK(decimals_of("2.5e-3") == 4);
    CHECK(decimals_of("12e2") == 0);
    CHECK(decimals_of("1.5E+1") == 0);
    // 1 − (−2147483647) wrapped round to a negative int, taken as 0 decimals: ±0.5.
    CHECK(decimals_of("0.0e-2147483647") == max_decimals);
    CHECK(decimals_of("0.0e-99999999999999999999999") == max_decimals);
    CHECK(decimals_of("5e+2147483647") == 0);
    CHECK(decimals_of("0." + std::string(1000, '1')) == max_decimals);
}

TEST_CASE("an answer written with an exponent of -2147483647 is held to its precision", "[extremes][answers]") {
    // Every weight of this run is far from 0 (a softmax over 12 keys): an answer of 0 must
    // differ, in JSON and in CSV. Before, its tolerance was ±0.5 and it "agreed".
    const auto trace = cli::run({"example:teacher_smiled", "-m", "self", "-s", "weights", "-f", "json"});
    REQUIRE(trace.exit_code == 0);
    const double expected = nlohmann::json::parse(trace.out)["stages"][0]["data"][0][0].get<double>();
    REQUIRE(expected > 0.01);
    cli::TempFile json_answers(R"({"weights": {"cell": [1, 1], "value": 0.0e-2147483647}})", "answers.json");
    cli::TempFile csv_answers("stage,head,row,col,value\nweights,,0,0,0.0e-2147483647\n", "answers.csv");
    for (const auto* answers : {&json_answers, &csv_answers}) {
        const auto r = cli::run({"check-answers", "example:teacher_smiled", answers->path(), "-m", "self"});
        INFO(r.out << r.err);
        CHECK(r.exit_code == 1);
        CHECK_THAT(r.out, Contains("weights: differs at row 1") && Contains("verdict: fail"));
        // Half a unit of the 330th decimal is below every double, and is said as it is, not as ±0.
        CHECK_THAT(r.out, Contains("330 decimals alone would allow ±5e-331)"));
        CHECK(r.out.find("±0)") == std::string::npos);
    }
    // The same cell written as the trace has it agrees.
    cli::TempFile right(fmt::format(R"({{"weights": {{"cell": [1, 1], "value": {:.6f}}}}})", expected), "right.json");
    const auto agree = cli::run({"check-answers", "example:teacher_smiled", right.path(), "-m", "self"});
    CHECK(agree.exit_code == 0);
}

TEST_CASE("the K/V cache's bytes are counted in 64 bits or refused", "[extremes][decode]") {
    CHECK(kv_cache_bytes(8, 128, 128, 2, 4096) == std::int64_t{2} * 8 * 128 * 2 * 4096);
    // 2 · 524288 numbers of 8 bytes for 2⁴⁰ tokens is 2⁶³ bytes: it printed −9223372036854775808.
    CHECK_THROWS_AS(kv_cache_bytes(1, 524288, 524288, 8, std::int64_t{1} << 40), DataError);
    CHECK(kv_cache_bytes(1, 524288, 524288, 8, (std::int64_t{1} << 40) - 1) ==
          std::int64_t{2} * 524288 * 8 * ((std::int64_t{1} << 40) - 1));
    const auto r = cli::run({"decode", "--dim", "524288", "--context", "1099511627776", "-f", "json"});
    CHECK(r.exit_code == 1);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Contains("the K/V cache of 1099511627776 tokens") && Contains("more than 2^63 bytes"));
    CHECK_THAT(r.err, !Contains("-9223372036854775808"));
}
