// The online softmax tile by tile (-q TOKEN --tiles B): every tile's m, l, rescale and
// accumulator against a recurrence written here, and the end against a full softmax written
// here, for tiles of 1, 2, n and a size that does not divide n, causal and not, with fully
// masked tiles (padding inside the row, a window before any key is seen); the refusals.
#include "support/cli.hpp"
#include "support/trace_json.hpp"
#include "support/naive.hpp"

#include "support/catch.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using Catch::Contains;
using trace_json::run_json;
using nlohmann::json;

namespace {

using namespace naive;  // Grid, Lcg and the loop products (support/naive.hpp)

constexpr double minus_infinity = -std::numeric_limits<double>::infinity();

// A document for attntrace: tokens and their embeddings.
std::string input_json(const std::vector<std::string>& tokens, const Grid& x) {
    json doc;
    doc["tokens"] = tokens;
    json embeddings = json::object();
    for (std::size_t i = 0; i < tokens.size(); ++i) embeddings[tokens[i]] = x[i];
    doc["embeddings"] = embeddings;
    return doc.dump();
}

}  // namespace

namespace {

// The online softmax of one row written out here: tiles of `size` keys over `scores` (−∞:
// hidden), skipping (when causal) the tiles after `row`; the tiles' m, l and accumulator.
struct NaiveTile {
    bool skipped = false, hidden = false;
    double tile_max = 0, m_before = 0, m_after = 0, rescale = 1, l = 0;
    std::vector<double> accumulator;
};
struct NaiveTiles {
    std::vector<NaiveTile> tiles;
    std::vector<double> weights, context;
};
NaiveTiles naive_tiles(const std::vector<double>& scores, const Grid& values, std::size_t size, bool causal, std::size_t row) {
    NaiveTiles out;
    double m = minus_infinity, l = 0;
    std::vector<double> acc(values[0].size(), 0.0);
    for (std::size_t first = 0; first < scores.size(); first += size) {
        NaiveTile t;
        const std::size_t end = std::min(scores.size(), first + size);
        t.tile_max = minus_infinity;
        for (std::size_t j = first; j < end; ++j) t.tile_max = std::max(t.tile_max, scores[j]);
        t.m_before = t.m_after = m;
        t.skipped = causal && first > row;
        t.hidden = !t.skipped && t.tile_max == minus_infinity;
        if (!t.skipped && !t.hidden) {
            const double m_new = std::max(m, t.tile_max);
            t.rescale = m == minus_infinity ? 0.0 : std::exp(m - m_new);
            l *= t.rescale;
            for (double& a : acc) a *= t.rescale;
            for (std::size_t j = first; j < end; ++j) {
                if (scores[j] == minus_infinity) continue;
                const double e = std::exp(scores[j] - m_new);
                l += e;
                for (std::size_t c = 0; c < acc.size(); ++c) acc[c] += e * values[j][c];
            }
            m = t.m_after = m_new;
        }
        t.l = l;
        t.accumulator = acc;
        out.tiles.push_back(t);
    }
    out.weights.assign(scores.size(), 0.0);
    out.context.assign(acc.size(), 0.0);
    if (l > 0) {
        for (std::size_t j = 0; j < scores.size(); ++j)
            if (scores[j] != minus_infinity) out.weights[j] = std::exp(scores[j] - m) / l;
        for (std::size_t c = 0; c < acc.size(); ++c) out.context[c] = acc[c] / l;
    }
    return out;
}

// The full softmax of the visible scores, and the context it mixes: the other way.
void naive_softmax(const std::vector<double>& scores, const Grid& values, std::vector<double>& weights,
                   std::vector<double>& context) {
    double top = minus_infinity, sum = 0;
    for (const double s : scores) top = std::max(top, s);
    weights.assign(scores.size(), 0.0);
    context.assign(values[0].size(), 0.0);
    if (top == minus_infinity) return;
    for (std::size_t j = 0; j < scores.size(); ++j)
        if (scores[j] != minus_infinity) sum += weights[j] = std::exp(scores[j] - top);
    for (double& w : weights) w /= sum;
    for (std::size_t j = 0; j < scores.size(); ++j)
        for (std::size_t c = 0; c < context.size(); ++c) context[c] += weights[j] * values[j][c];
}

double number_or_minus_infinity(const json& v) { return v.is_null() ? minus_infinity : v.get<double>(); }

// Runs -q QUERY --tiles SIZE on `args` and checks every tile against the naive recurrence.
// Returns the worked object.
json check_tiles(std::vector<std::string> args, const std::string& query, std::size_t size, bool causal) {
    args.insert(args.end(), {"-q", query, "--tiles", std::to_string(size)});
    const json t = run_json(args);
    const json w = t["worked"];
    const std::size_t row = w["position"].get<std::size_t>() - 1;
    // the scores softmax reads: the scaled row, −∞ where the mask hides a key
    std::vector<double> scores;
    for (std::size_t j = 0; j < w["scaled"].size(); ++j)
        scores.push_back(w["mask"].is_null() || w["mask"]["allowed"][j].get<bool>() ? w["scaled"][j].get<double>()
                                                                                   : minus_infinity);
    Grid values;
    for (const json& v : w["values"]) values.push_back(v["values"].get<std::vector<double>>());
    const NaiveTiles want = naive_tiles(scores, values, size, causal, row);
    const json& tiles = w["tiles"];
    REQUIRE(w["tile_size"] == size);
    REQUIRE(tiles.size() == want.tiles.size());
    REQUIRE(tiles.size() == (scores.size() + size - 1) / size);
    for (std::size_t k = 0; k < tiles.size(); ++k) {
        INFO("tile " << k + 1);
        const NaiveTile& n = want.tiles[k];
        CHECK(tiles[k]["keys"].size() == std::min(size, scores.size() - k * size));
        CHECK(tiles[k]["skipped"] == n.skipped);
        CHECK(tiles[k]["every_key_hidden"] == n.hidden);
        CHECK(number_or_minus_infinity(tiles[k]["m_before"]) == Approx(n.m_before).margin(1e-12));
        CHECK(number_or_minus_infinity(tiles[k]["m_after"]) == Approx(n.m_after).margin(1e-12));
        CHECK(number_or_minus_infinity(tiles[k]["tile_max"]) == Approx(n.tile_max).margin(1e-12));
        CHECK(tiles[k]["rescale"].get<double>() == Approx(n.rescale).margin(1e-12));
        CHECK(tiles[k]["l"].get<double>() == Approx(n.l).margin(1e-12));
        for (std::size_t c = 0; c < n.accumulator.size(); ++c)
            CHECK(tiles[k]["accumulator"][c].get<double>() == Approx(n.accumulator[c]).margin(1e-12));
    }
    std::vector<double> weights, context;
    naive_softmax(scores, values, weights, context);
    for (std::size_t j = 0; j < weights.size(); ++j) {
        CHECK(w["tiled_weights"][j].get<double>() == Approx(weights[j]).margin(1e-12));
        CHECK(w["weights"][j].get<double>() == Approx(weights[j]).margin(1e-12));
    }
    for (std::size_t c = 0; c < context.size(); ++c)
        CHECK(w["tiled_context"][c].get<double>() == Approx(context[c]).margin(1e-12));
    CHECK(w["matches_full_softmax"] == true);
    CHECK(w["tiles_max_difference"].get<double>() <= 1e-12);
    return w;
}

}  // namespace

TEST_CASE("the tiled worked example equals the full softmax for tiles of 1 and 2 and n and 4 of 6", "[tiles]") {
    for (const std::string mode : {"plain", "self", "causal"})
        for (const std::size_t size : {std::size_t{1}, std::size_t{2}, std::size_t{6}, std::size_t{4}})
            for (const std::string query : {"Your", "with", "step"}) {
                INFO(mode << ", tiles of " << size << ", query " << query);
                check_tiles({"example:your_journey", "-m", mode}, query, size, mode == "causal");
            }
    // causal, query 2 of 6 in tiles of 2: tiles 2 and 3 lie after it and are skipped
    const json w = check_tiles({"example:your_journey", "-m", "causal"}, "journey", 2, true);
    CHECK(w["tiles"][0]["skipped"] == false);
    CHECK(w["tiles"][1]["skipped"] == true);
    CHECK(w["tiles"][2]["skipped"] == true);
}

TEST_CASE("a fully masked tile leaves m and l and the accumulator as they were", "[tiles]") {
    SECTION("padding in the middle of the row") {
        // keys a, b | <pad>, <pad> | c, d: the second tile of 2 has no key to see
        Lcg rng{99};
        const cli::TempFile file(input_json({"a", "b", "<pad>", "<pad>", "c", "d"}, rng.grid(6, 3)));
        for (const std::string mode : {"self", "causal"}) {
            INFO(mode);
            const json w = check_tiles({file.path(), "-m", mode}, "d", 2, mode == "causal");
            const json& hidden = w["tiles"][1];
            CHECK(hidden["every_key_hidden"] == true);
            CHECK(hidden["m_before"] == hidden["m_after"]);
            CHECK(hidden["l"] == w["tiles"][0]["l"]);
            CHECK(hidden["accumulator"] == w["tiles"][0]["accumulator"]);
            CHECK(hidden["rescale"] == 1);
            // the table says why nothing changes: m is finite here, so the rescale would be 1
            const auto r = cli::run({file.path(), "-m", mode, "-q", "d", "--tiles", "2", "--width", "0"});
            REQUIRE(r.exit_code == 0);
            CHECK_THAT(r.out, Contains("  tile 2 · <pad>, <pad> · scores [−∞, −∞]\n    every key is hidden by the mask: m, l "
                                       "and the accumulator stay as they were"));
            CHECK_THAT(r.out, Contains("the tile's max, −∞, does not raise m, so the rescale would be e^0 = 1"));
            CHECK(r.out.find("with no key seen yet") == std::string::npos);
        }
    }
    SECTION("a window hides the first tiles, before any key is seen") {
        // causal, window 2: query 6 sees keys 5 and 6 only; tiles 1 and 2 are hidden while m is −∞
        const json w = check_tiles({"example:your_journey", "-m", "causal", "--window", "2"}, "step", 2, true);
        CHECK(w["tiles"][0]["every_key_hidden"] == true);
        CHECK(w["tiles"][0]["m_after"].is_null());
        CHECK(w["tiles"][1]["every_key_hidden"] == true);
        CHECK(w["tiles"][1]["l"] == 0);
        CHECK(w["tiles"][2]["rescale"] == 0);  // e^(−∞ − m): nothing before to rescale
        const auto r = cli::run({"example:your_journey", "-m", "causal", "--window", "2", "-q", "step", "--tiles", "2",
                                 "--width", "0"});
        REQUIRE(r.exit_code == 0);
        CHECK_THAT(r.out, Contains("(m = −∞, l = 0); nothing is rescaled: with no key seen yet, e^(m_old − m_new) would be "
                                   "e^(−∞ + ∞), which is no number"));
        CHECK_THAT(r.out, Contains("rescale e^(m_old − m_new) = e^(−∞) = 0 (nothing before)"));
    }
    SECTION("padding at the end of a bidirectional row") {
        check_tiles({"example:journey_padded", "-m", "self"}, "step", 2, false);
        check_tiles({"example:journey_padded", "-m", "self"}, "step", 3, false);
    }
}

TEST_CASE("the tiled worked example in the table says what it measured", "[tiles]") {
    const auto r = cli::run({"example:your_journey", "-m", "causal", "-q", "with", "--tiles", "3", "--width", "0"});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("online softmax in tiles of 3 keys"));
    CHECK_THAT(r.out, Contains("  tile 1 · Your, journey, starts · scores ["));
    CHECK_THAT(r.out, Contains("m: −∞ → "));
    CHECK_THAT(r.out, Contains("rescale e^(m_old − m_new) = e^(−∞) = 0 (nothing before)"));
    CHECK_THAT(r.out, Contains("  tile 2 · with, one, step · scores ["));
    const json w = run_json({"example:your_journey", "-m", "causal", "-q", "with", "--tiles", "3"})["worked"];
    const double d = w["tiles_max_difference"].get<double>();
    if (d == 0) CHECK_THAT(r.out, Contains("to the last bit (largest difference 0)"));
    else CHECK_THAT(r.out, Contains(fmt::format("largest difference {:.1e}", d)));
}

TEST_CASE("tiles are refused without a query or with the sum or below 1", "[tiles]") {
    struct Refusal {
        std::vector<std::string> args;
        std::string message;
    };
    const Refusal refusals[] = {
        {{"example:your_journey", "--tiles", "2"}, "--tiles works through one query's row: add -q TOKEN"},
        {{"example:your_journey", "-q", "one", "--tiles", "2", "--normalize", "sum"}, "--normalize sum"},
        {{"example:your_journey", "-q", "one", "--tiles", "0"}, "--tiles"},
        {{"example:your_journey", "-q", "one", "--tiles", "2", "--summary"}, "--query needs the full trace"},
    };
    for (const Refusal& r : refusals) {
        INFO(fmt::format("{}", fmt::join(r.args, " ")));
        const auto result = cli::run(r.args);
        INFO(result.err);
        CHECK(result.exit_code == 2);
        CHECK(result.out.empty());
        CHECK(result.err.rfind("attntrace: error: ", 0) == 0);
        CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
        CHECK_THAT(result.err, Contains(r.message));
    }
}
