// Masks beyond causal: a sliding window, padding tokens, and both with causal, against a mask
// and an attention written here in plain loops; the reason of each hidden pair; and the ways
// of masking that go wrong (a finite fill, zeroing after softmax), worked out by hand.
#include "attention/single.hpp"
#include "attention/trace.hpp"
#include "support/cli.hpp"
#include "support/trace_json.hpp"
#include "support/naive.hpp"

#include "support/catch.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

using namespace attntrace;
using Catch::Contains;
using trace_json::run_json;
using nlohmann::json;

namespace {

using namespace naive;  // Grid, Lcg and the loop products (support/naive.hpp)

constexpr double minus_infinity = -std::numeric_limits<double>::infinity();

// May query i see key j: the rules of the issue, written out once more.
bool naive_allowed(std::size_t i, std::size_t j, bool causal, std::optional<std::size_t> window,
                   const std::vector<bool>& pad) {
    const auto distance = static_cast<long>(i) - static_cast<long>(j);
    if (causal && distance < 0) return false;
    if (window && (causal ? distance >= static_cast<long>(*window) : std::labs(distance) >= static_cast<long>(*window)))
        return false;
    return !pad[j];
}

// Plain attention (Q = K = V = X, no scaling) with the mask: masked scores, weights, context.
struct NaivePlain {
    Grid masked, weights, context;
};
NaivePlain naive_plain(const Grid& x, bool causal, std::optional<std::size_t> window, const std::vector<bool>& pad) {
    const std::size_t n = x.size(), d = x[0].size();
    NaivePlain out{Grid(n, std::vector<double>(n)), Grid(n, std::vector<double>(n, 0.0)), Grid(n, std::vector<double>(d, 0.0))};
    for (std::size_t i = 0; i < n; ++i) {
        double top = minus_infinity;
        for (std::size_t j = 0; j < n; ++j) {
            double s = 0;
            for (std::size_t c = 0; c < d; ++c) s += x[i][c] * x[j][c];
            out.masked[i][j] = naive_allowed(i, j, causal, window, pad) ? s : minus_infinity;
            top = std::max(top, out.masked[i][j]);
        }
        if (top == minus_infinity) continue;  // every key hidden: weights and context stay 0
        double sum = 0;
        for (std::size_t j = 0; j < n; ++j) sum += out.weights[i][j] = std::exp(out.masked[i][j] - top);
        for (std::size_t j = 0; j < n; ++j) {
            out.weights[i][j] /= sum;
            for (std::size_t c = 0; c < d; ++c) out.context[i][c] += out.weights[i][j] * x[j][c];
        }
    }
    return out;
}

void require_grid(const Stage& stage, const Grid& expected) {
    INFO(stage.name());
    REQUIRE(stage.row_count() == static_cast<Eigen::Index>(expected.size()));
    for (std::size_t i = 0; i < expected.size(); ++i)
        for (std::size_t j = 0; j < expected[i].size(); ++j) {
            const double got = stage.data(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j));
            if (std::isinf(expected[i][j])) CHECK(got == expected[i][j]);
            else CHECK(got == Approx(expected[i][j]).margin(1e-12).epsilon(0));
        }
}

std::string input_of(const std::vector<std::string>& tokens, const Grid& x, const std::string& extra = "") {
    std::vector<std::string> quoted, rows;
    for (const auto& t : tokens) quoted.push_back('"' + t + '"');
    for (const auto& row : x) rows.push_back(fmt::format("[{}]", fmt::join(row, ", ")));
    return fmt::format(R"({{"tokens": [{}], "embeddings": [{}]{}}})", fmt::join(quoted, ", "), fmt::join(rows, ", "), extra);
}

}  // namespace

TEST_CASE("causal, window and padding masks match a naive mask and attention", "[masks]") {
    Lcg rng{4242};
    for (const std::size_t n : {5u, 8u})
        for (const bool causal : {false, true})
            for (const std::size_t window : {0u, 1u, 2u, 3u})
                for (const bool padded : {false, true}) {
                    INFO("n " << n << (causal ? ", causal" : "") << ", window " << window << (padded ? ", padded" : ""));
                    Sequence sequence;
                    std::vector<bool> pad(n, false);
                    Grid x(n, std::vector<double>(3));
                    for (std::size_t i = 0; i < n; ++i) {
                        for (double& v : x[i]) v = rng.next();
                        pad[i] = padded && (i == 1 || i + 1 == n);  // one inside, one at the end
                        sequence.tokens.push_back(pad[i] ? "<pad>" : fmt::format("t{}", i + 1));
                    }
                    sequence.vectors.resize(static_cast<Eigen::Index>(n), 3);
                    for (std::size_t i = 0; i < n; ++i)
                        for (std::size_t c = 0; c < 3; ++c) sequence.vectors(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(c)) = x[i][c];
                    TraceOptions options;
                    options.mode = Mode::plain;
                    if (window > 0) options.window = static_cast<Eigen::Index>(window);
                    if (causal) {  // plain has no causal mode: causal with --scale none has the same arithmetic
                        options.mode = Mode::causal;
                        options.scale = ScaleRule::none;
                    }
                    // causal mode projects; give it identity weights so Q = K = V = X as in plain.
                    const Matrix identity = Matrix::Identity(3, 3);
                    const Projections same = projections(identity, identity, identity);
                    const Trace t = trace_single(sequence, causal ? &same : nullptr, options);
                    const NaivePlain want = naive_plain(x, causal, window ? std::optional<std::size_t>(window) : std::nullopt, pad);
                    const Stage& masked = t.at(StageId::masked);
                    const bool any_hidden = causal || window > 0 || padded;
                    CHECK(masked.applied == any_hidden);
                    if (any_hidden) {
                        REQUIRE(masked.allowed);
                        REQUIRE(masked.mask_reasons);
                        for (std::size_t i = 0; i < n; ++i)
                            for (std::size_t j = 0; j < n; ++j) {
                                const auto r = static_cast<Eigen::Index>(i), c = static_cast<Eigen::Index>(j);
                                CHECK((*masked.allowed)(r, c) == naive_allowed(i, j, causal, window ? std::optional<std::size_t>(window) : std::nullopt, pad));
                                CHECK(((*masked.mask_reasons)(r, c) == 0) == (*masked.allowed)(r, c));
                            }
                    }
                    require_grid(masked, want.masked);
                    require_grid(t.at(StageId::weights), want.weights);
                    require_grid(t.at(StageId::context), want.context);
                }
}

TEST_CASE("the masked stage gives each hidden pair its reason in JSON", "[masks][json]") {
    // Four tokens, the second a padding token, causal with a window of 2: query i sees keys
    // i − 1 and i, minus the padding. Worked out by hand (rows are queries, 0-based i, j):
    // key 1 is padding everywhere; j > i is causal; i − j ≥ 2 is outside the window.
    const cli::TempFile input(input_of({"a", "<pad>", "c", "d"}, {{1, 0}, {0, 1}, {1, 1}, {0.5, 0}}));
    const json t = run_json({input.path(), "-m", "causal", "--window", "2", "-s", "masked"});
    const json& masked = trace_json::stage_of(t, "masked");
    const json expected = json::parse(R"([
        [null, "causal+padding", "causal", "causal"],
        [null, "padding", "causal", "causal"],
        ["window", "padding", null, "causal"],
        ["window", "window+padding", null, null]])");
    CHECK(masked["mask_reason"] == expected);
    CHECK(masked["title"] == "Masked scores: later positions, keys outside the window of 2 and padding excluded");
    CHECK(masked["formula"] == "S'' = S' with −∞ where key j > query i or i − j ≥ 2 or key j is padding");
    // Without causal, the window reaches both ways: |i − j| < 2.
    const json both = run_json({input.path(), "-m", "self", "--window", "2", "-s", "masked"});
    CHECK(trace_json::stage_of(both, "masked")["mask_reason"][2] == json::parse(R"(["window", "padding", null, null])"));
    // The padding tokens' own rows are said to stand for nothing.
    bool said = false;
    for (const auto& note : t["notes"]) said = said || note.get<std::string>().find("no query attends to <pad> (position 2)") != std::string::npos;
    CHECK(said);
}

TEST_CASE("the input names its padding tokens, and <pad> is padding when it names none", "[masks][load]") {
    const cli::TempFile own(input_of({"a", "_", "<pad>"}, {{1, 0}, {0, 1}, {1, 1}}, R"(, "padding": ["_"])"));
    const json t = run_json({own.path(), "-s", "masked"});
    CHECK(trace_json::stage_of(t, "masked")["mask_reason"][0] == json::parse(R"([null, "padding", null])"));
    const cli::TempFile none(input_of({"a", "<pad>"}, {{1, 0}, {0, 1}}, R"(, "padding": [])"));
    CHECK(trace_json::stage_of(run_json({none.path(), "-s", "masked"}), "masked")["applied"] == false);
    const cli::TempFile wrong(input_of({"a", "b"}, {{1, 0}, {0, 1}}, R"(, "padding": "<pad>")"));
    const auto r = cli::run({wrong.path()});
    CHECK(r.exit_code == 1);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Contains("/padding: expected an array of tokens"));
    const cli::TempFile alias(input_of({"a", "b"}, {{1, 0}, {0, 1}}, R"(, "pad_token": "<pad>")"));
    CHECK_THAT(cli::run({alias.path()}).err, Contains("\"padding\""));
}

TEST_CASE("a finite mask fill leaks weight to hidden keys, as worked out by hand", "[masks]") {
    // Plain mode, --window 1: each token sees only itself. Scores x·x of a=(1,0), b=(0,1), c=(1,1):
    // row a is [1, 0, 1]. With the fill −1 the row becomes [1, −1, −1]: weights e/(e + 2/e) and
    // (1/e)/(e + 2/e) twice.
    const cli::TempFile input(input_of({"a", "b", "c"}, {{1, 0}, {0, 1}, {1, 1}}));
    const double e = std::exp(1.0), denominator = e + 2 / e;
    const json leaky = run_json({input.path(), "--window", "1", "--mask-fill", "-1", "-s", "masked,weights"});
    const auto weights = trace_json::stage_rows(leaky, "weights");
    CHECK(weights[0][0] == Approx(e / denominator).epsilon(1e-14));
    CHECK(weights[0][1] == Approx(1 / e / denominator).epsilon(1e-14));
    CHECK(trace_json::stage_rows(leaky, "masked")[0][1] == -1.0);
    bool said = false;
    for (const auto& note : leaky["notes"])
        said = said || note.get<std::string>().find(fmt::format("the largest weight a hidden key got in this run is {:.6g}",
                                                                1 / e / denominator)) != std::string::npos;
    CHECK(said);
    // −1e9 is far enough below these scores: e^(−1e9 − 1) underflows to 0, and the weights are the −∞ ones.
    const json far = run_json({input.path(), "--window", "1", "--mask-fill", "-1e9", "-s", "weights"});
    const json right = run_json({input.path(), "--window", "1", "-s", "weights"});
    CHECK(trace_json::stage_rows(far, "weights") == trace_json::stage_rows(right, "weights"));
    // --check sees the leak.
    const auto check = cli::run({input.path(), "--window", "1", "--mask-fill", "-1", "--check"});
    CHECK(check.exit_code != 0);
    CHECK(check.out.empty());
    CHECK_THAT(check.err, Contains(fmt::format("attntrace: error: {}: check failed: the masked weight at \"a\" (row 1), "
                                               "\"b\" (column 2) is {:.13}",
                                               input.path(), 1 / e / denominator)));
    CHECK_THAT(check.err, Contains(", not exactly 0\n"));
}

TEST_CASE("with every key hidden, −∞ gives weights 0 and a finite fill spreads the row evenly", "[masks]") {
    // Causal, the first token is padding: query 1 may see only key 1, which is padding.
    const cli::TempFile input(input_of({"<pad>", "b"}, {{1, 0}, {0, 1}}));
    const json right = run_json({input.path(), "-m", "causal", "-s", "weights"});
    CHECK(trace_json::stage_rows(right, "weights")[0] == std::vector<double>{0, 0});
    const json filled = run_json({input.path(), "-m", "causal", "--mask-fill", "-1e9", "-s", "weights"});
    CHECK(trace_json::stage_rows(filled, "weights")[0] == std::vector<double>{0.5, 0.5});  // both filled alike
    bool said = false;
    for (const auto& note : filled["notes"])
        said = said || note.get<std::string>().find("every key is masked for <pad>, yet its weights are not 0") != std::string::npos;
    CHECK(said);
}

TEST_CASE("a row whose every key is hidden is named by its position when its token is not the only one so spelled",
          "[masks]") {
    // journey_padded: six words, then <pad> at positions 7 and 8. Causal with a window of 2,
    // position 7 still sees position 6 ("step"); position 8 sees only 7 and 8, both padding.
    const auto note_of = [](const std::string& window) {
        const json doc = run_json({"example:journey_padded", "-m", "causal", "--window", window, "-s", "weights"});
        for (const auto& note : doc["notes"])
            if (note.get<std::string>().starts_with("every key is masked for ")) return note.get<std::string>();
        return std::string();
    };
    CHECK(note_of("2") == "every key is masked for <pad> (position 8): its weights are all 0 (a softmax over no keys "
                          "would be 0/0) and its context vector 0");
    // A window of 1: each of them sees only itself, padding.
    CHECK(note_of("1") == "every key is masked for <pad> (position 7), <pad> (position 8): their weights are all 0 (a "
                          "softmax over no keys would be 0/0) and their context vectors 0");
}

TEST_CASE("zeroing after softmax without dividing again leaves rows that sum to less than 1", "[masks]") {
    // Row a of plain scores is [1, 0, 1]; softmax gives e/(2e + 1), 1/(2e + 1), e/(2e + 1); the
    // window of 1 keeps only the first, so the row sums to e/(2e + 1) ≈ 0.4223.
    const cli::TempFile input(input_of({"a", "b", "c"}, {{1, 0}, {0, 1}, {1, 1}}));
    const double e = std::exp(1.0);
    const json t = run_json({input.path(), "--window", "1", "--mask-after-softmax", "-s", "masked,weights"});
    const auto weights = trace_json::stage_rows(t, "weights");
    CHECK(weights[0][0] == Approx(e / (2 * e + 1)).epsilon(1e-14));
    CHECK(weights[0][1] == 0.0);
    CHECK(weights[0][2] == 0.0);
    CHECK(trace_json::stage_of(t, "masked")["applied"] == false);
    // a = (20, 20), b = (−20, −20): each row scores itself 800 and the other −800, and
    // e^(−800 − 800) is 0 in a double, so zeroing the hidden key after softmax takes nothing
    // away, and the note says the rows still sum to 1.
    const cli::TempFile far(input_of({"a", "b"}, {{20, 20}, {-20, -20}}));
    bool said = false;
    const json kept = run_json({far.path(), "--window", "1", "--mask-after-softmax", "-s", "weights"});
    for (const auto& note : kept["notes"])
        said = said || note.get<std::string>().find("already 0 to the last digits, so every row still sums to 1") != std::string::npos;
    CHECK(said);
    const auto check = cli::run({input.path(), "--window", "1", "--mask-after-softmax", "--check"});
    CHECK(check.exit_code != 0);
    CHECK(check.out.empty());
    CHECK_THAT(check.err, Contains("check failed: the weights of \"a\" (row 1) sum to 0.422318798251518"));
}

TEST_CASE("the JSON header records a window and a way of masking other than the standard one", "[masks][json]") {
    // The standard run: no window, −∞ before softmax, so none of the three fields.
    const json standard = run_json({"-m", "causal", "-s", "weights"});
    CHECK_FALSE(standard.contains("window"));
    CHECK_FALSE(standard.contains("mask_fill"));
    CHECK_FALSE(standard.contains("mask_after_softmax"));
    CHECK(run_json({"-m", "self", "--window", "3", "-s", "weights"})["window"] == 3);
    CHECK(run_json({"-m", "causal", "--mask-fill", "-1e9", "-s", "weights"})["mask_fill"] == -1e9);
    // lowest: the number type's lowest, as that type holds it.
    CHECK(run_json({"-m", "causal", "--mask-fill", "lowest", "-s", "weights"})["mask_fill"] ==
          -1.7976931348623157e308);
    // float32 numbers are written to be read back as float32 (docs/json-output.md).
    const json single = run_json({"-m", "causal", "--mask-fill", "lowest", "--dtype", "float32", "-s", "weights"});
    CHECK(static_cast<float>(single["mask_fill"].get<double>()) == -3.40282347e38f);
    const json after = run_json({"-m", "causal", "--mask-after-softmax", "-s", "weights"});
    CHECK(after["mask_after_softmax"] == true);
    CHECK_FALSE(after.contains("mask_fill"));
    // The summary's header too (the window; --summary masks the standard way only).
    const auto summary = cli::run({"-m", "causal", "--window", "2", "--summary", "-f", "json"});
    REQUIRE(summary.exit_code == 0);
    CHECK(json::parse(summary.out)["window"] == 2);
    CHECK_FALSE(json::parse(cli::run({"-m", "causal", "--summary", "-f", "json"}).out).contains("window"));
}

TEST_CASE("mask options that do not fit the run are refused", "[masks][cli]") {
    const auto refused = [](std::vector<std::string> args, const std::string& message) {
        INFO(fmt::format("{}", fmt::join(args, " ")));
        const auto r = cli::run(args);
        CHECK(r.exit_code == 2);
        CHECK(r.out.empty());
        CHECK_THAT(r.err, Contains(message));
    };
    refused({"example:teacher_smiled_fr", "--window", "2"}, "--window applies to modes");
    refused({"-m", "causal", "--mask-fill", "-1e9", "--normalize", "sum"}, "--normalize sum has no softmax");
    refused({"-m", "causal", "--mask-fill", "big"}, "expected -inf, lowest or a number");
    refused({"-m", "causal", "--mask-fill", "-1", "--mask-after-softmax"}, "do not go together");
    refused({"-m", "causal", "--mask-fill", "-1", "-q", "2"}, "--query works through the standard mask");
    refused({"-m", "causal", "--mask-fill", "-1e9", "--summary"}, "--summary masks the right way only");
    refused({"--window", "0"}, "--window");
    // Nothing masked: the fill is said to change nothing.
    const json t = run_json({"-m", "self", "--mask-fill", "-1e9", "-s", "weights"});
    bool said = false;
    for (const auto& note : t["notes"]) said = said || note.get<std::string>() == "--mask-fill changes nothing here: nothing is masked in this run";
    CHECK(said);
}

TEST_CASE("explain says why each kind of hidden key is hidden, and counts them", "[masks][explain]") {
    const auto window = cli::run({"-m", "self", "--window", "2", "-s", "masked", "--explain", "--width", "0"});
    CHECK_THAT(window.out, Contains("A sliding window lets each query see only the keys near it, on either side"));
    CHECK_THAT(window.out, !Contains("A causal model"));
    CHECK_THAT(window.out, Contains("(20 entries hidden)"));  // 6 tokens: 36 − 6 − 2·5 seen
    const auto causal = cli::run({"-m", "causal", "-s", "masked", "--explain", "--width", "0"});
    CHECK_THAT(causal.out, Contains("A causal model learns to predict the next token"));
    CHECK_THAT(causal.out, !Contains("sliding window"));
    CHECK_THAT(causal.out, Contains("(15 entries hidden)"));
    const auto filled = cli::run({"-m", "causal", "-s", "masked", "--explain", "--width", "0", "--mask-fill", "-1e9"});
    CHECK_THAT(filled.out, Contains("a finite number (--mask-fill) rather than −∞"));
}
