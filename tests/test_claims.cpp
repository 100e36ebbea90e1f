// Every sentence attntrace prints is a claim about the run at hand: ties, notes, --check's
// figures, --explain's statements, example descriptions. Each claim is checked here against
// numbers worked out independently for that run.
#include "support/cli.hpp"
#include "support/text.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

using Catch::Contains;
using nlohmann::json;

namespace {

json run_json(std::vector<std::string> args) {
    args.insert(args.end(), {"-f", "json"});
    const auto r = cli::run(args);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return json::parse(r.out);
}

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
