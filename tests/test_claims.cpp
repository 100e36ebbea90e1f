// Every sentence attntrace prints is a claim about the run at hand: ties, notes, --check's
// figures, --explain's statements, example descriptions. Each claim is checked here against
// numbers worked out independently for that run.
#include "support/cli.hpp"
#include "support/trace_json.hpp"
#include "support/text.hpp"

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
using trace_json::stage_of;

namespace {

// a and b are the same vector, c is at right angles: in plain mode a's scores are 1, 1, 0,
// so a and b tie for a's largest weight; c's row has one largest (c·c = 1 against 0, 0).
const char* two_tied = R"({"tokens": ["a", "b", "c"], "embeddings": [[1, 0], [1, 0], [0, 1]]})";
// Six copies of one vector: every weight of every row is 1/6.
const char* all_tied = R"({"tokens": ["The", "cat", "sat", "on", "the", "mat"],
                           "embeddings": [[1, 0], [1, 0], [1, 0], [1, 0], [1, 0], [1, 0]]})";

}  // namespace

TEST_CASE("the strongest column says when keys tie for the largest weight, in every format", "[claims][ties]") {
    const cli::TempFile all(all_tied), two(two_tied);
    const auto table = text::lines_of(cli::run({all.path(), "-s", "weights"}).out);
    CHECK(std::count_if(table.begin(), table.end(), [](const std::string& line) {
              return line.ends_with("1.0000  The (6 tied)");
          }) == 6);
    CHECK_THAT(cli::run({all.path(), "-s", "weights", "-f", "csv"}).out, Contains(",1.0000,The (6 tied)\n"));
    CHECK_THAT(cli::run({all.path(), "-s", "weights", "-f", "markdown"}).out, Contains("| 1.0000 | The (6 tied) |\n"));

    const auto rows = text::lines_of(cli::run({two.path(), "-s", "weights"}).out);
    const auto row = [&](const std::string& label) {
        return *std::find_if(rows.begin(), rows.end(), [&](const std::string& line) { return line.starts_with(label + "  "); });
    };
    CHECK(row("a").ends_with("  a (2 tied)"));
    CHECK(row("b").ends_with("  a (2 tied)"));
    CHECK(row("c").ends_with("  c"));
    // Close is not tied: in the lecture example "journey" (0.2379) leads "starts" (0.2333).
    CHECK_THAT(cli::run({"-s", "weights"}).out, !Contains("tied"));
}

TEST_CASE("the worked example names every key that ties for the largest weight", "[claims][ties]") {
    const cli::TempFile all(all_tied), two(two_tied);
    CHECK_THAT(cli::run({all.path(), "-q", "cat", "-s", "weights"}).out,
               Contains("largest weight: 0.1667 on each of The, cat, sat, on, the, mat (6 tied)\n"));
    CHECK(run_json({all.path(), "-q", "cat"})["worked"]["strongest"] ==
          json::parse(R"(["The", "cat", "sat", "on", "the", "mat"])"));
    // a's weights: e/(2e + 1) = 0.4223 for a and b.
    CHECK(std::exp(1.0) / (2 * std::exp(1.0) + 1) == Approx(0.4223).margin(5e-5));
    CHECK_THAT(cli::run({two.path(), "-q", "a", "-s", "weights"}).out, Contains("largest weight: 0.4223 on each of a, b (2 tied)\n"));
    CHECK_THAT(cli::run({two.path(), "-q", "c", "-s", "weights"}).out, Contains("largest weight: 0.5761 on c\n"));
    CHECK(std::exp(1.0) / (std::exp(1.0) + 2) == Approx(0.5761).margin(5e-5));
    CHECK(run_json({two.path(), "-q", "b"})["worked"]["strongest"] == json::parse(R"(["a", "b"])"));
}


TEST_CASE("the check prints each invariant with the figure measured on this run", "[claims][check]") {
    const json t = run_json({"-m", "causal"});
    // Worked out here from the JSON (exact numbers): how many numbers, how many masked, the
    // largest |row sum − 1| summed left to right, the largest |context − weights·values|.
    std::size_t numbers = 0;
    for (const auto& s : t["stages"]) numbers += s["shape"][0].get<std::size_t>() * s["shape"][1].get<std::size_t>();
    const Rows weights = rows_of(stage_of(t, "weights")["data"]);
    const Rows values = rows_of(stage_of(t, "values")["data"]);
    const Rows context = rows_of(stage_of(t, "context")["data"]);
    double row_gap = 0, context_gap = 0;
    for (std::size_t i = 0; i < weights.size(); ++i) {
        double sum = 0;
        for (const double w : weights[i]) sum += w;
        row_gap = std::max(row_gap, std::abs(sum - 1));
        for (std::size_t k = 0; k < context[i].size(); ++k) {
            double z = 0;
            for (std::size_t j = 0; j < weights[i].size(); ++j) z += weights[i][j] * values[j][k];
            context_gap = std::max(context_gap, std::abs(context[i][k] - z));
        }
    }
    const auto r = cli::run({"-m", "causal", "--check"});
    REQUIRE(r.exit_code == 0);
    const auto lines = text::lines_of(r.out);
    REQUIRE(lines.size() == 5);
    // 6 tokens, causal: 5 + 4 + 3 + 2 + 1 = 15 hidden pairs, −∞ in the masked stage.
    CHECK(lines[0] == fmt::format("ok       every number is finite: {} numbers, none infinite or NaN but the 15 masked "
                                  "scores, −∞ by design",
                                  numbers));
    CHECK(lines[1] == "ok       masked weights are exactly 0: largest |masked weight| = 0 over 15 masked entries");
    CHECK(lines[2] == fmt::format("ok       each row of weights sums to 1: largest |row sum − 1| = {:.2g} (tolerance 1e-12)", row_gap));
    CHECK(lines[3] == fmt::format("ok       context = weights · values: largest |context − weights·values| = {:.2g}, "
                                  "recomputed with plain loops (tolerance 1e-12 × (1 + Σ|a·v|))",
                                  context_gap));
    CHECK(lines[4] == "all 4 checks passed");
    CHECK_THAT(cli::run({"--check"}).out, Contains("masked weights are exactly 0: nothing is masked in this run"));
    // The same as JSON, for a grader's script.
    const json j = run_json({"-m", "causal", "--check"});
    CHECK(j["schema"] == "attntrace.check/1");
    CHECK(j["passed"] == true);
    CHECK(j["checks"].size() == 4);
    CHECK(j["checks"][2]["measured"] == fmt::format("largest |row sum − 1| = {:.2g} (tolerance 1e-12)", row_gap));
    CHECK(j["warnings"].empty());
}

TEST_CASE("the check warns when dividing by the row sum gives negative weights", "[claims][check]") {
    // Plain scores: a·a = 1, a·b = −0.5, b·b = 1.25. Row a sums to 0.5: weights 2 and −1;
    // row b sums to 0.75: weights −2/3 and 5/3. Two weights are negative, the smallest −1.
    const cli::TempFile input(R"({"tokens": ["a", "b"], "embeddings": [[1, 0], [-0.5, 1]]})");
    const auto r = cli::run({input.path(), "--normalize", "sum", "--check"});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("\nwarning  2 weights are negative (the smallest -1): dividing by the row sum keeps the sign "
                               "of each score"));
    CHECK(r.out.ends_with("\nall 4 checks passed, with 1 warning\n"));
    CHECK(run_json({input.path(), "--normalize", "sum", "--check"})["warnings"].size() == 1);
    CHECK_THAT(cli::run({input.path(), "--check"}).out, !Contains("warning"));  // softmax: never negative
}

namespace {

// The explanation --explain prints before `stage` (JSON carries it per stage).
std::string explanation_of(const json& trace, const std::string& stage) {
    return stage_of(trace, stage)["explanation"][0].get<std::string>();
}

// Softmax against dividing by the row sum on the rows without negative scores, worked out
// here from the masked stage: rows compared, rows where softmax's top weight is higher, lower,
// and the row where the two differ most.
struct Contrast {
    std::size_t compared = 0, higher = 0, lower = 0;
    std::string row;
    double by_softmax = 0, by_sum = 0;
};

Contrast contrast(const json& trace) {
    const json& masked = stage_of(trace, "masked");
    Contrast c;
    double widest = -1;
    for (std::size_t i = 0; i < masked["data"].size(); ++i) {
        std::vector<double> s;
        for (const auto& v : masked["data"][i])
            if (!v.is_null()) s.push_back(v.get<double>());
        if (std::any_of(s.begin(), s.end(), [](double x) { return x < 0; })) continue;
        double sum = 0, top = 0, exps = 0;
        for (const double x : s) sum += x, top = std::max(top, x);
        if (sum <= 0) continue;
        for (const double x : s) exps += std::exp(x - top);
        const double soft = 1 / exps, by_sum = top / sum;
        ++c.compared;
        c.higher += soft > by_sum;
        c.lower += soft < by_sum;
        if (std::abs(soft - by_sum) > widest) widest = std::abs(soft - by_sum), c.row = masked["rows"][i], c.by_softmax = soft, c.by_sum = by_sum;
    }
    return c;
}

}  // namespace

TEST_CASE("the explanation says whether softmax sharpened the weights on this run, with its figures", "[claims][explain]") {
    // teacher_smiled: small scores, so softmax flattens every row (the issue's 0.35 by the sum
    // against 0.16 by softmax for "smiled").
    const json smiled = run_json({"example:teacher_smiled", "--explain", "-s", "masked,weights"});
    const Contrast a = contrast(smiled);
    REQUIRE(a.compared == 12);
    REQUIRE(a.lower == 12);
    CHECK(a.row == "smiled");
    CHECK(a.by_sum == Approx(0.348).margin(5e-4));
    CHECK_THAT(explanation_of(smiled, "weights"),
               Contains(fmt::format("softmax gives the top key less weight than dividing by the row sum, in all 12 rows: "
                                    "the scores differ too little for it to sharpen; for "
                                    "\"smiled\", {:.4g} by softmax against {:.4g} by the sum.",
                                    a.by_softmax, a.by_sum)));
    CHECK_THAT(explanation_of(smiled, "weights"), !Contains("sharpens the differences"));
    // teacher_smiled_fr: scores far apart, so softmax sharpens every row.
    const json fr = run_json({"example:teacher_smiled_fr", "--explain", "-s", "masked,weights"});
    const Contrast b = contrast(fr);
    REQUIRE(b.higher == 4);
    CHECK_THAT(explanation_of(fr, "weights"),
               Contains(fmt::format("softmax gives the top key more weight than dividing by the row sum, in all 4 rows: "
                                    "the scores differ enough for it to sharpen; for \"{}\", "
                                    "{:.4g} by softmax against {:.4g} by the sum.",
                                    b.row, b.by_softmax, b.by_sum)));
    // The lecture's example: some rows each way.
    const json journey = run_json({"--explain", "-s", "masked,weights"});
    const Contrast c = contrast(journey);
    REQUIRE(c.higher > 0);
    REQUIRE(c.lower > 0);
    CHECK_THAT(explanation_of(journey, "weights"),
               Contains(fmt::format("more weight than dividing by the row sum in {} of the {} rows and less in {}",
                                    c.higher, c.compared, c.lower)));
    // One way in some rows and the same in the others: A's scores are all x_A·x_j = 1 (or 0.01),
    // so both give each of its keys 1/3. C: e²/(e + e^1.5 + e²) = 0.5065 by softmax, 2/4.5 = 0.4444.
    const auto one_way = [](const std::string& embeddings, std::size_t higher, std::size_t lower) {
        const cli::TempFile input(R"({"tokens": ["A", "B", "C"], "embeddings": )" + embeddings + "}");
        const json t = run_json({input.path(), "--explain", "-s", "masked,weights"});
        const Contrast c = contrast(t);
        REQUIRE(c.compared == 3);
        REQUIRE(c.higher == higher);
        REQUIRE(c.lower == lower);
        return explanation_of(t, "weights");
    };
    CHECK_THAT(one_way("[[1, 0], [1, 0.5], [1, 1]]", 2, 0),
               Contains("softmax gives the top key more weight than dividing by the row sum in 2 of the 3 rows and the "
                        "same in 1; for \"C\", 0.5065 by softmax against 0.4444 by the sum."));
    CHECK_THAT(one_way("[[0.1, 0], [0.1, 0.05], [0.1, 0.1]]", 0, 2),
               Contains("softmax gives the top key less weight than dividing by the row sum in 2 of the 3 rows and the "
                        "same in 1"));
    // Negative scores: no comparison is made.
    const json self = run_json({"-m", "self", "--explain", "-s", "masked,weights"});
    REQUIRE(contrast(self).compared == 0);
    CHECK_THAT(explanation_of(self, "weights"), Contains("so the two cannot be compared on this run"));
}

TEST_CASE("the explanation of scaling gives the spread of this run's scores before and after", "[claims][explain]") {
    const auto sd = [](const json& stage) {
        double sum = 0, n = 0;
        for (const auto& row : stage["data"])
            for (const auto& v : row) sum += v.get<double>(), ++n;
        double squares = 0;
        for (const auto& row : stage["data"])
            for (const auto& v : row) squares += (v.get<double>() - sum / n) * (v.get<double>() - sum / n);
        return std::sqrt(squares / n);
    };
    const json t = run_json({"example:sqrt_dk_64", "--explain", "-s", "scores,scaled"});
    const double before = sd(stage_of(t, "scores")), after = sd(stage_of(t, "scaled"));
    CHECK(before / after == Approx(8));
    CHECK_THAT(explanation_of(t, "scaled"), Contains("its variance is d_k times theirs"));
    CHECK_THAT(explanation_of(t, "scaled"),
               Contains(fmt::format("Here the scores spread with a standard deviation of {:.4g}, and {:.4g} after "
                                    "dividing by √64.",
                                    before, after)));
    const json none = run_json({"example:sqrt_dk_64", "--explain", "-s", "scores,scaled", "--scale", "none"});
    CHECK_THAT(explanation_of(none, "scaled"),
               Contains(fmt::format("standard deviation of {:.4g}; --scale none leaves them so", before)));
}

TEST_CASE("the explanation's claim about word order holds: shuffled, each token keeps its context", "[claims][explain]") {
    // The sentence and its reverse, with the same embeddings and (for self) the same weights.
    const char* forward = R"({"tokens": ["a", "b", "c", "d"], "embeddings": [[1, 0.5], [0.2, 1], [0.7, 0.7], [-0.3, 0.9]]})";
    const char* reverse = R"({"tokens": ["d", "c", "b", "a"], "embeddings": [[-0.3, 0.9], [0.7, 0.7], [0.2, 1], [1, 0.5]]})";
    const cli::TempFile f(forward), r(reverse);
    for (const char* mode : {"plain", "self", "causal"}) {
        INFO(mode);
        const json x = run_json({f.path(), "-m", mode, "--explain"}), y = run_json({r.path(), "-m", mode, "--explain"});
        const json& zx = stage_of(x, "context");
        const json& zy = stage_of(y, "context");
        bool same = true;
        for (std::size_t i = 0; i < 4; ++i)
            for (std::size_t k = 0; k < 2; ++k)
                same = same && std::abs(zx["data"][i][k].get<double>() - zy["data"][3 - i][k].get<double>()) < 1e-12;
        const std::string said = explanation_of(x, "context");
        if (std::string(mode) == "causal") {
            CHECK_FALSE(same);
            CHECK_THAT(said, Contains("Word order enters only through the mask"));
        } else {
            CHECK(same);
            CHECK_THAT(said, Contains("Nothing here depends on word order"));
        }
    }
}

TEST_CASE("the explanation names where the weight matrices came from", "[claims][explain]") {
    CHECK_THAT(cli::run({"-m", "self", "--explain", "-s", "parameters"}).out,
               Contains("Here they are generated from seed 123, not learned"));
    CHECK_THAT(cli::run({"example:book_fascinating", "--explain", "-s", "parameters,queries"}).out,
               Contains("Here they are given in the input.") && Contains("given in the input)"));
    CHECK_THAT(cli::run({"--explain", "-s", "queries"}).out, Contains("Plain attention has no weight matrices"));
}
