// The third round of "every sentence is a claim about this run" (issue 28): what compare
// says hid a token, decode's narration, --explain's counts, the tiles' reasons, the shading's
// legend, bench's operation counts and its verdict on the machine, the padding rows of
// --normalize sum. Each expected text is built here from numbers worked out independently of
// the program (by the rules of the mask, by hand, or by a naive loop over the trace's inputs).
#include "commands/bench_command.hpp"
#include "input/tokenize.hpp"

#include "support/cli.hpp"
#include "support/error_line.hpp"
#include "support/trace_json.hpp"
#include "support/text.hpp"

#include "support/catch.hpp"
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <regex>
#include <string>
#include <vector>

using Catch::Contains;
using Catch::StartsWith;
using nlohmann::json;
using trace_json::run_json;
using trace_json::stage_of;
using trace_json::stage_rows;

namespace {

std::vector<std::string> tokens_of(const json& trace) { return trace["tokens"].get<std::vector<std::string>>(); }

std::size_t index_of(const std::vector<std::string>& tokens, const std::string& token) {
    return static_cast<std::size_t>(std::find(tokens.begin(), tokens.end(), token) - tokens.begin());
}

// "the 3 tokens", "the token".
std::string the_tokens(std::size_t n) { return n == 1 ? "the token" : fmt::format("the {} tokens", n); }

// The note compare prints for one cause, from the tokens it hides before and after the word.
std::string hidden_note(const std::string& cause, bool several, const std::string& word,
                        const std::vector<std::string>& before, const std::vector<std::string>& after,
                        const std::string& effect = ": weight 0, no part in its context") {
    std::string which;
    if (!before.empty()) which = fmt::format("{} before \"{}\" ({})", the_tokens(before.size()), word, fmt::join(before, ", "));
    if (!after.empty())
        which += before.empty() ? fmt::format("{} after \"{}\" ({})", the_tokens(after.size()), word, fmt::join(after, ", "))
                                : fmt::format(" and {} after it ({})", the_tokens(after.size()), fmt::join(after, ", "));
    return fmt::format("{} hide{} {} from it{}", cause, several ? "" : "s", which, effect);
}

}  // namespace

TEST_CASE("compare says what hid each token, the window, the causal mask or padding, before or after the word", "[claims][compare]") {
    // bank_river: We sat on the bank of the river. A window of 2 without the causal mask hides
    // the keys 2 or more positions away, on both sides.
    const std::vector<std::string> river = tokens_of(run_json({"example:bank_river", "-s", "inputs"}));
    const std::vector<std::string> money = tokens_of(run_json({"example:bank_money", "-s", "inputs"}));
    const auto window_sides = [](const std::vector<std::string>& tokens, std::size_t i, long w, bool causal) {
        std::pair<std::vector<std::string>, std::vector<std::string>> sides;
        for (std::size_t j = 0; j < tokens.size(); ++j) {
            const long gap = static_cast<long>(i) - static_cast<long>(j);
            if (causal ? gap >= w : std::labs(gap) >= w) (j < i ? sides.first : sides.second).push_back(tokens[j]);
        }
        return sides;
    };
    const auto r = cli::run({"compare", "example:bank_river", "example:bank_money", "--token", "bank", "--window", "2"});
    REQUIRE(r.exit_code == 0);
    const std::string window = "the window of 2 (--window 2: a query sees the keys less than 2 away)";
    const auto [river_before, river_after] = window_sides(river, index_of(river, "bank"), 2, false);
    CHECK(river_before == std::vector<std::string>{"We", "sat", "on"});  // by hand
    CHECK(river_after == std::vector<std::string>{"the", "river"});
    CHECK_THAT(r.out, Contains("note on A: " + hidden_note(window, false, "bank", river_before, river_after) + "\n"));
    const auto [money_before, money_after] = window_sides(money, index_of(money, "bank"), 2, false);
    CHECK_THAT(r.out, Contains("note on B: " + hidden_note(window, false, "bank", money_before, money_after) + "\n"));
    CHECK_THAT(r.out, !Contains("mode hides"));

    // Padding, not the mode, hides the <pad> tokens, after "journey".
    const auto padded = cli::run({"compare", "example:journey_padded", "example:your_journey", "--token", "journey"});
    REQUIRE(padded.exit_code == 0);
    CHECK_THAT(padded.out,
               Contains("note on A: " + hidden_note("the padding mask", false, "journey", {}, {"<pad>", "<pad>"}) + "\n"));
    CHECK_THAT(padded.out, !Contains("mode hides") && !Contains("note on B: the"));

    // Causal: the mask hides the words after "journey", and the <pad> tokens for two reasons.
    const auto causal = cli::run({"compare", "example:journey_padded", "example:your_journey", "--token", "journey", "-m", "causal"});
    REQUIRE(causal.exit_code == 0);
    const std::vector<std::string> later{"starts", "with", "one", "step"};
    CHECK_THAT(causal.out, Contains("note on A: " + hidden_note("the causal mask", false, "journey", {}, later) + "\n"));
    CHECK_THAT(causal.out, Contains("note on A: " + hidden_note("the causal mask and the padding mask", true, "journey", {},
                                                                {"<pad>", "<pad>"}) + "\n"));
    CHECK_THAT(causal.out, Contains("note on B: " + hidden_note("the causal mask", false, "journey", {}, later) + "\n"));

    // A causal window: the mask hides what follows "one", the window what lies 2 or more before it.
    const auto journey = tokens_of(run_json({"-s", "inputs"}));
    const auto cw = cli::run({"compare", "example:your_journey", "example:journey_shuffled", "--token", "one", "-m", "causal",
                              "--window", "2"});
    REQUIRE(cw.exit_code == 0);
    const auto [cw_before, cw_after] = window_sides(journey, index_of(journey, "one"), 2, true);
    CHECK(cw_before == std::vector<std::string>{"Your", "journey", "starts"});
    CHECK(cw_after.empty());
    CHECK_THAT(cw.out, Contains("note on A: " + hidden_note("the causal mask", false, "one", {}, {"step"}) + "\n"));
    CHECK_THAT(cw.out, Contains("note on A: " +
                                hidden_note("the window of 2 (--window 2: a query sees itself and the one before it)", false,
                                            "one", cw_before, {}) + "\n"));
}

TEST_CASE("compare says when a finite fill leaves hidden tokens weight, and zeroing after softmax does not", "[claims][compare]") {
    // With --mask-fill -1 the keys after "journey" keep weight: the largest, read from the
    // weights stage of the same run, is what the note gives.
    const json t = run_json({"-m", "causal", "--mask-fill", "-1", "-s", "weights"});
    const auto w = stage_rows(t, "weights");
    double largest = 0;
    for (std::size_t j = 2; j < w[1].size(); ++j) largest = std::max(largest, w[1][j]);
    REQUIRE(largest > 0);
    const auto r = cli::run({"compare", "example:your_journey", "example:journey_shuffled", "--token", "journey", "-m", "causal",
                             "--mask-fill", "-1"});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("note on A: " +
                               hidden_note("the causal mask", false, "journey", {}, {"starts", "with", "one", "step"},
                                           fmt::format(", yet the finite --mask-fill leaves them weight (up to {:.4g}), so "
                                                       "they still move its context",
                                                       largest)) +
                               "\n"));
    const auto after = cli::run({"compare", "example:your_journey", "example:journey_shuffled", "--token", "journey", "-m",
                                 "causal", "--mask-after-softmax"});
    REQUIRE(after.exit_code == 0);
    CHECK_THAT(after.out, Contains("note on A: " + hidden_note("the causal mask", false, "journey", {},
                                                               {"starts", "with", "one", "step"}) + "\n"));
}

TEST_CASE("decode names a step by its position, as --step does", "[claims][decode]") {
    const auto r = cli::run({"decode", "--step", "4"});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("\nstep 4 (of steps 2–6) · \"with\" · the cache now holds 4 tokens\n"));
    CHECK_THAT(r.out, !Contains("step 3 of"));
    const auto prefilled = cli::run({"decode", "--prefill", "2"});
    REQUIRE(prefilled.exit_code == 0);
    for (int p = 3; p <= 6; ++p) CHECK_THAT(prefilled.out, Contains(fmt::format("\nstep {} (of steps 3–6) · ", p)));
}

TEST_CASE("decode's heading and formula say the temperature and the scale apart", "[claims][decode]") {
    const auto both = cli::run({"decode", "--step", "3", "--temperature", "0.5", "--scale", "none"});
    REQUIRE(both.exit_code == 0);
    // The trace's own heading for the same options gives the same words.
    CHECK_THAT(cli::run({"-m", "causal", "-s", "inputs", "--temperature", "0.5", "--scale", "none"}).out,
               Contains(" · softmax at T = 0.5 · scores unscaled · "));
    CHECK_THAT(both.out, Contains(" · float64 · softmax at T = 0.5 · scores unscaled · example:your_journey\n"));
    CHECK_THAT(both.out, Contains("score = q·K_cacheᵀ, scaled = score (--scale none), weight = softmax(scaled / T) at T = 0.5"));
    const auto scale = cli::run({"decode", "--step", "3", "--scale", "0.5"});
    REQUIRE(scale.exit_code == 0);
    CHECK_THAT(scale.out, Contains(" · float64 · softmax · scores ÷ 0.5 · example:your_journey\n"));
    CHECK_THAT(scale.out, Contains("score = q·K_cacheᵀ, scaled = score / 0.5 (--scale), weight = softmax(scaled)"));
    const auto plain = cli::run({"decode", "--step", "3"});
    REQUIRE(plain.exit_code == 0);
    CHECK_THAT(plain.out, Contains(" · float64 · example:your_journey\n"));
    CHECK_THAT(plain.out, Contains("score = q·K_cacheᵀ, scaled = score / √d_head (√3), weight = softmax(scaled)"));
}

TEST_CASE("decode's narration names the biases and, after ln_1, LN(x)", "[claims][decode]") {
    // data/arrays/make_arrays.py: x_t3 = (0, 0.5, 1); W_q = [[0.5, −0.5], [1, 0], [0, 1]],
    // b_q = (0.1, −0.1); W_k = [[1, 0.5], [0, 1], [−0.5, 0]], b_k = (0, 0.2); W_v = [[0.5, 0],
    // [0, 0.5], [1, 1]], b_v = (0.5, 0). By hand: q = (0.6, 0.9), k = (−0.5, 0.7), v = (1.5, 1.25).
    const auto r = cli::run_in(ATTNTRACE_SOURCE_DIR, {"decode", "data/arrays/journey.npz", "--layout", "out_in", "--step", "3",
                                                      "--explain"});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("x_t3 = [0, 0.5, 1]\n"));
    CHECK_THAT(r.out, Contains("k_t3 = x·W_k + b_k = [-0.5, 0.7], v_t3 = x·W_v + b_v = [1.5, 1.25]: appended to the cache\n"));
    CHECK_THAT(r.out, Contains("q_t3 = x·W_q + b_q = [0.6, 0.9]: used by this step only, not cached\n"));
    CHECK_THAT(r.out, Contains("Here k_j = x_j·W_k + b_k and v_j = x_j·W_v + b_v depend on token j alone"));
    // Without biases the narration names none.
    const auto journey = cli::run({"decode", "--step", "3", "--explain"});
    CHECK_THAT(journey.out, Contains("k_starts = x·W_k = [") && !Contains("b_k"));

    // GPT-2's layer: the projections read LN(x), which the step prints under that name. LN is
    // worked out here from the hidden state and γ, β (ε = 1e-5, GPT-2's).
    const std::vector<std::string> gpt2{"data/arrays/toy_gpt2.safetensors", "--from", "gpt2", "--layer", "0"};
    std::vector<std::string> args = gpt2;
    args.insert(args.end(), {"-f", "json"});
    const json t = json::parse(cli::run_in(ATTNTRACE_SOURCE_DIR, args).out);
    const auto x = stage_rows(t, "inputs")[2];
    const auto gamma = t["parameters"]["gamma"].get<std::vector<double>>();  // vectors (docs/json-output.md)
    const auto beta = t["parameters"]["beta"].get<std::vector<double>>();
    double mean = 0, var = 0;
    for (double v : x) mean += v / static_cast<double>(x.size());
    for (double v : x) var += (v - mean) * (v - mean) / static_cast<double>(x.size());
    std::vector<double> ln;
    for (std::size_t k = 0; k < x.size(); ++k) ln.push_back((x[k] - mean) / std::sqrt(var + 1e-5) * gamma[k] + beta[k]);
    std::vector<std::string> decode_args{"decode"};
    decode_args.insert(decode_args.end(), gpt2.begin(), gpt2.end());
    decode_args.insert(decode_args.end(), {"--step", "3"});
    const auto text = cli::run_in(ATTNTRACE_SOURCE_DIR, decode_args);
    REQUIRE(text.exit_code == 0);
    CHECK_THAT(text.out, Contains("\nLN(x_t3) = [") && Contains("]: the token's vector after ln_1, what the projections read\n"));
    CHECK_THAT(text.out, Contains("k_t3 = LN(x)·columns 1–4 of W_k + entries 1–4 of b_k = ["));
    CHECK_THAT(text.out, Contains("q_t3 (head 2) = LN(x)·columns 5–8 of W_q + entries 5–8 of b_q = ["));
    decode_args.insert(decode_args.end(), {"-f", "json"});
    const json d = json::parse(cli::run_in(ATTNTRACE_SOURCE_DIR, decode_args).out);
    const auto printed = d["steps"][0]["x"].get<std::vector<double>>();
    REQUIRE(printed.size() == ln.size());
    for (std::size_t k = 0; k < ln.size(); ++k) CHECK(printed[k] == Approx(ln[k]).margin(1e-5));
    CHECK(std::abs(printed[0] - x[0]) > 1e-3);  // not the hidden state itself
}

namespace {

// The rows of a masked stage as the comparison of softmax and the sum sorts them, worked out
// from the numbers: compared (no visible score below 0, a positive largest), negative, all 0,
// or seeing no key; and in the compared rows, where softmax's top weight is higher or lower.
struct RowKinds {
    std::size_t compared = 0, negative = 0, zero = 0, blind = 0, higher = 0, lower = 0;
};

RowKinds row_kinds(const json& trace) {
    RowKinds k;
    for (const auto& row : stage_rows(trace, "masked")) {
        std::vector<double> seen;
        for (double s : row)
            if (std::isfinite(s)) seen.push_back(s);
        if (seen.empty()) { ++k.blind; continue; }
        if (*std::min_element(seen.begin(), seen.end()) < 0) { ++k.negative; continue; }
        const double top = *std::max_element(seen.begin(), seen.end());
        if (top == 0) { ++k.zero; continue; }
        double exps = 0, sum = 0;
        for (double s : seen) exps += std::exp(s - top), sum += s;
        const double soft = 1 / exps, by_sum = top / sum;
        ++k.compared;
        k.higher += soft > by_sum;
        k.lower += soft < by_sum;
    }
    return k;
}

std::string explanation_of(const json& trace, const std::string& stage) {
    for (const auto& s : trace["stages"])
        if (s["name"] == stage && s.contains("explanation")) return s["explanation"][0].get<std::string>();
    return "";
}

}  // namespace

TEST_CASE("the explanation counts every row: compared, or left out with the reason", "[claims][explain]") {
    // book_fascinating: the six words whose query is 0 (feature 4 is 0: the, that, the,
    // borrowed, from, the) score 0 against every key; the other five are compared.
    const json book = run_json({"example:book_fascinating", "--explain", "-s", "masked,weights"});
    const RowKinds k = row_kinds(book);
    CHECK(k.compared == 5);
    CHECK(k.zero == 6);
    CHECK(k.compared + k.negative + k.zero + k.blind == 11);
    const std::string text = explanation_of(book, "weights");
    CHECK_THAT(text, Contains(fmt::format("in {} of the 5 rows where both give weights and less in {}", k.higher, k.lower)));
    CHECK_THAT(text, Contains("Not compared: 6 rows whose scores are all 0, where a sum of 0 cannot divide and softmax gives "
                              "even weights."));
    CHECK_THAT(text, !Contains("rows without negative scores"));

    // Causal, padded: some rows have negative scores, the <pad> rows' are all 0; none compared.
    const json padded = run_json({"example:journey_padded", "-m", "causal", "--explain", "-s", "masked,weights"});
    const RowKinds p = row_kinds(padded);
    REQUIRE(p.compared == 0);
    CHECK(p.negative + p.zero + p.blind == 8);
    CHECK_THAT(explanation_of(padded, "weights"),
               Contains(fmt::format("no row here has them ({} rows with a negative score, where dividing gives no "
                                    "distribution and {} rows whose scores are all 0",
                                    p.negative, p.zero)));

    // Whatever the run, the sentence accounts for every row: "all N rows" only when every row
    // was compared, else the rows left out, each kind with its count.
    const std::vector<std::vector<std::string>> runs{{"example:teacher_smiled"},
                                                     {"example:book_borrowed", "-m", "causal"},
                                                     {"example:journey_padded"},
                                                     {"example:your_journey", "-m", "causal", "--window", "2"},
                                                     {"example:big_dream", "-m", "self", "--temperature", "2"}};
    for (auto args : runs) {
        INFO(fmt::format("{}", fmt::join(args, " ")));
        args.insert(args.end(), {"--explain", "-s", "masked,weights"});
        const json t = run_json(args);
        const RowKinds r = row_kinds(t);
        const std::string sentence = explanation_of(t, "weights");
        const std::size_t n = stage_rows(t, "masked").size();
        const bool all = r.compared == n;
        if (r.compared == 0) {
            CHECK_THAT(sentence, Contains("so the two cannot be compared on this run"));
        } else if (all) {
            CHECK_THAT(sentence, !Contains("Not compared"));
            if (r.higher == n || r.lower == n) CHECK_THAT(sentence, Contains(n == 1 ? "in the one row" : fmt::format("in all {} rows", n)));
        } else {
            CHECK_THAT(sentence, Contains("Not compared: "));
        }
        if (r.negative > 0) CHECK_THAT(sentence, Contains(fmt::format("{} row{} with a negative score", r.negative, r.negative == 1 ? "" : "s")));
        if (r.zero > 0) CHECK_THAT(sentence, Contains(fmt::format("{} row{} whose scores are all 0", r.zero, r.zero == 1 ? "" : "s")));
        if (r.blind > 0) CHECK_THAT(sentence, Contains(fmt::format("{} row{} that see", r.blind, r.blind == 1 ? "" : "s")));
    }
}

TEST_CASE("the tiles blame the rescales only when a later tile raised m", "[claims][tiles]") {
    // The row of "journey" scores 0.9544, 1.4950, 1.4754, … (README): the first key does not
    // hold the row's max, so one key per tile raises m once, at "journey"; "Your" holds its
    // row's max first, so its tiles never rescale; one tile of all six never does.
    const auto scores = stage_rows(run_json({"-s", "scores"}), "scores");
    const auto raises = [&](std::size_t row, std::size_t tile) {
        std::size_t count = 0;
        double m = -INFINITY;
        for (std::size_t first = 0; first < scores[row].size(); first += tile) {
            double top = -INFINITY;
            for (std::size_t j = first; j < std::min(scores[row].size(), first + tile); ++j) top = std::max(top, scores[row][j]);
            if (std::isfinite(m) && top > m) ++count;
            m = std::max(m, top);
        }
        return count;
    };
    REQUIRE(raises(1, 1) == 1);
    REQUIRE(raises(1, 100) == 0);
    REQUIRE(raises(0, 1) == 0);
    const auto last_line = [](const std::vector<std::string>& args) {
        const auto lines = text::lines_of(cli::run(args).out);
        return lines.back();
    };
    for (const auto& [query, tile] : {std::pair{"journey", "100"}, {"journey", "2"}, {"Your", "1"}}) {
        const std::string line = last_line({"-q", query, "--tiles", tile, "--width", "0"});
        INFO(query << " in tiles of " << tile << ": " << line);
        CHECK_THAT(line, !Contains("rescale"));
    }
    const std::string one = last_line({"-q", "journey", "--tiles", "1", "--width", "0"});
    INFO(one);
    if (one.find("rescale") != std::string::npos) CHECK_THAT(one, Contains("went through 1 rescale by"));
    // float32: the reason is the two precisions.
    CHECK_THAT(last_line({"-q", "journey", "--tiles", "2", "--dtype", "float32", "--width", "0"}),
               Contains("the full trace computed this row in float32, the tiles compute it in float64") ||
                   Contains("to the last bit"));
}

TEST_CASE("dividing by the row sum leaves the padding rows it cannot divide at 0 and says so", "[claims][padding]") {
    const json t = run_json({"example:journey_padded", "--normalize", "sum"});
    const auto masked = stage_rows(t, "masked");
    const auto weights = stage_rows(t, "weights");
    const auto tokens = tokens_of(t);
    for (std::size_t i = 0; i < weights.size(); ++i) {
        double sum = 0;
        for (double s : masked[i])
            if (std::isfinite(s)) sum += s;
        for (std::size_t j = 0; j < weights[i].size(); ++j) {
            INFO(tokens[i] << " → " << tokens[j]);
            if (tokens[i] == "<pad>") CHECK(weights[i][j] == 0);  // the padding rows: not divided
            else CHECK(weights[i][j] == Approx(std::isfinite(masked[i][j]) ? masked[i][j] / sum : 0).margin(1e-15));
        }
    }
    const auto notes = t["notes"].get<std::vector<std::string>>();
    CHECK(std::count_if(notes.begin(), notes.end(), [](const std::string& n) {
              return n.starts_with("--normalize sum: the scores of the padding rows <pad> (position 7), <pad> (position 8) "
                                   "do not sum to a positive number");
          }) == 1);
    CHECK(std::none_of(notes.begin(), notes.end(), [](const std::string& n) { return n.find("computed like any other") != std::string::npos; }));
    const auto check = cli::run({"example:journey_padded", "--normalize", "sum", "--check"});
    CHECK(check.exit_code == 0);
    CHECK_THAT(check.out, Contains("; 2 padding rows left at 0 (their scores could not be divided by their sums) sum to 0"));
    const auto table = cli::run({"example:journey_padded", "--normalize", "sum", "-s", "weights", "--explain"});
    CHECK_THAT(table.out, Contains("<pad>    0.0000   0.0000  0.0000  0.0000  0.0000  0.0000      0      0  0.0000  —\n"));
    CHECK_THAT(table.out, Contains("Here 2 padding rows could not be divided"));
    CHECK_THAT(cli::run({"example:journey_padded", "--normalize", "sum", "-q", "8"}).out,
               Contains("weights: the visible scores sum to 0, which cannot divide them; this padding row stands for nothing") &&
                   !Contains("0 ÷ 0"));
    // A row that is not padding and cannot divide is still refused, by name.
    const cli::TempFile zero(R"({"tokens": ["a", "b", "<pad>"], "embeddings": [[1, 0], [0, 0], [0, 0]]})");
    cli::require_error_line(cli::run({zero.path(), "--normalize", "sum"}), 1,
                            "cannot normalise by the sum: the scores of \"b\" (row 2) sum to 0");
}

TEST_CASE("bench counts the operations of attention exactly", "[claims][bench]") {
    // n = 4, d = 3: 16 pairs, or 4·5/2 = 10 under the causal mask; 2·d multiply-adds a pair.
    const attntrace::AttentionOperations self = attntrace::attention_operations(4, 3, false);
    CHECK(self.pairs == 16);
    CHECK(self.multiply_adds == 96);
    CHECK(self.exps == 16);
    const attntrace::AttentionOperations causal = attntrace::attention_operations(4, 3, true);
    CHECK(causal.pairs == 10);
    CHECK(causal.multiply_adds == 60);
    CHECK(causal.exps == 10);
    const auto r = cli::run({"bench", "--sizes", "16,32", "--dim", "4", "--dtypes", "float64", "--threads", "1", "--repeats", "2",
                             "--paths", "streaming", "-f", "json"});
    REQUIRE(r.exit_code == 0);
    const json doc = json::parse(r.out);
    REQUIRE(doc["runs"].size() == 4);
    for (const auto& run : doc["runs"]) {
        const std::int64_t n = run["n"];
        const bool is_causal = run["mode"] == "causal";
        const std::int64_t pairs = is_causal ? n * (n + 1) / 2 : n * n;
        INFO(run.dump());
        CHECK(run["pairs"] == pairs);
        CHECK(run["multiply_adds"] == pairs * 2 * 4);
        CHECK(run["exps"] == pairs);
        CHECK(run["timed_runs"].get<int>() >= 2);
        CHECK(run["timed_runs"].get<int>() <= 6);
        if (n == 32) {
            CHECK(run["operations_doubling"].get<double>() == Approx(is_causal ? 32.0 * 33 / (16.0 * 17) : 4).margin(5e-5));
            // the ratio is called stable only when neither of its times came from a busy machine
            bool half_busy = true;
            for (const auto& other : doc["runs"])
                if (other["n"] == 16 && other["mode"] == run["mode"]) half_busy = other["busy"].get<bool>();
            CHECK(run["doubling_stable"].get<bool>() == (!run["busy"].get<bool>() && !half_busy));
        }
        // busy: the runs never agreed, or a run was off the CPU for more than 10% of its time
        // (off_cpu is printed to 3 decimals: within half of the last one of 0.1 either is right)
        const double off_cpu = run["off_cpu"].get<double>();
        if (std::abs(off_cpu - 0.1) > 5e-4) CHECK(run["busy"].get<bool>() == (!run["stable"].get<bool>() || off_cpu > 0.1));
    }
    const auto table = cli::run({"bench", "--sizes", "16", "--dim", "4", "--dtypes", "float64", "--threads", "1", "--repeats",
                                 "1", "--paths", "streaming", "--modes", "self"});
    REQUIRE(table.exit_code == 0);
    CHECK_THAT(table.out, Contains("multiply-adds") && Contains("×ops") && Contains("×time"));
    CHECK_THAT(table.out, Contains(fmt::format("{:>14} {:>12}", 16 * 16 * 8, 16 * 16)));
    // One configuration, one timed run: said for one, and no agreement claimed of a single run.
    CHECK_THAT(table.out, Contains("\nThe one configuration had one timed run (--repeats 1), so whether its times are stable "
                                   "was not checked\n"));
    CHECK_THAT(table.out, Contains("\neach time is one timed run after a warm-up\n"));
    CHECK_THAT(table.out, !Contains("median") && !Contains("1 of the 1"));
    // The counts named are those of the modes timed, and only theirs.
    CHECK_THAT(table.out, Contains("multiply-adds: n²·2d for self (a score and a share of a value per visible pair)") &&
                              Contains("exactly (4 for self);") && !Contains("causal") && !Contains("plain"));
    const auto bench_of = [&](const char* modes) {
        const auto b = cli::run({"bench", "--sizes", "16", "--dim", "4", "--dtypes", "float64", "--threads", "1",
                                 "--repeats", "1", "--paths", "trace", "--modes", modes});
        REQUIRE(b.exit_code == 0);
        return b.out;
    };
    const std::string plain = bench_of("plain");
    CHECK_THAT(plain, Contains("multiply-adds: n²·2d for plain (a score") && Contains("exactly (4 for plain);"));
    CHECK_THAT(plain, !Contains("self") && !Contains("causal") && !Contains("projections"));
    const std::string causal_only = bench_of("causal");
    CHECK_THAT(causal_only, Contains("multiply-adds: n(n+1)/2·2d for causal (a score") && Contains("exactly; ×time"));
    CHECK_THAT(causal_only, !Contains("n²·2d") && !Contains("(4 for"));
    CHECK_THAT(bench_of("plain,self,causal"), Contains("multiply-adds: n²·2d for plain and self, n(n+1)/2·2d for causal ("));
}

TEST_CASE("bench times the streaming backward pass per doubling of n and counts its operations exactly",
          "[claims][bench][backward]") {
    // n = 4, d = 3: 16 pairs, or 10 under the causal mask; per pair 5·d multiply-adds (forward:
    // the score and the share of a value; backward: the score again, dK's and dQ's shares) and
    // two exps.
    const attntrace::AttentionOperations self = attntrace::backward_operations(4, 3, false);
    CHECK(self.pairs == 16);
    CHECK(self.multiply_adds == 16 * 15);
    CHECK(self.exps == 32);
    const attntrace::AttentionOperations causal = attntrace::backward_operations(4, 3, true);
    CHECK(causal.pairs == 10);
    CHECK(causal.multiply_adds == 10 * 15);
    CHECK(causal.exps == 20);
    const auto r = cli::run({"bench", "--sizes", "16,32", "--dim", "4", "--dtypes", "float64", "--threads", "1",
                             "--repeats", "1", "--paths", "backward", "-f", "json"});
    REQUIRE(r.exit_code == 0);
    const json doc = json::parse(r.out);
    REQUIRE(doc["runs"].size() == 4);
    for (const auto& run : doc["runs"]) {
        INFO(run.dump());
        const std::int64_t n = run["n"];
        const bool is_causal = run["mode"] == "causal";
        const std::int64_t pairs = is_causal ? n * (n + 1) / 2 : n * n;
        CHECK(run["path"] == "backward");
        CHECK(run["multiply_adds"] == pairs * 5 * 4);
        CHECK(run["exps"] == 2 * pairs);
        CHECK(run["seconds"].get<double>() > 0);
        if (n == 32) CHECK(run["operations_doubling"].get<double>() == Approx(is_causal ? 32.0 * 33 / (16.0 * 17) : 4).margin(5e-5));
        else CHECK(run["operations_doubling"].is_null());
    }
    // The text names the backward pass's counts, and the forward's only where a forward path ran.
    const auto bench_of = [&](const char* paths, const char* modes) {
        const auto b = cli::run({"bench", "--sizes", "16", "--dim", "4", "--dtypes", "float64", "--threads", "1",
                                 "--repeats", "1", "--paths", paths, "--modes", modes});
        REQUIRE(b.exit_code == 0);
        return b.out;
    };
    const std::string alone = bench_of("backward", "causal");
    CHECK_THAT(alone, Contains("backward (the loss sum, its forward pass included), multiply-adds: n(n+1)/2·5d for causal (") &&
                          Contains("exps: two per visible pair"));
    CHECK_THAT(alone, !Contains("a score and a share of a value per visible pair") && !Contains("n²") &&
                          !Contains("(4 for"));
    CHECK_THAT(alone, Contains(fmt::format("{:>14} {:>12}", 16 * 17 / 2 * 20, 16 * 17)));
    const std::string both = bench_of("streaming,backward", "self");
    CHECK_THAT(both, Contains("multiply-adds: n²·2d for self (a score and a share of a value per visible pair)") &&
                         Contains("multiply-adds: n²·5d for self (per visible pair") && Contains("exactly (4 for self);"));
    CHECK_THAT(both, Contains(fmt::format("{:>14} {:>12}", 16 * 16 * 8, 16 * 16)) &&
                         Contains(fmt::format("{:>14} {:>12}", 16 * 16 * 20, 2 * 16 * 16)));
    CHECK_THAT(bench_of("trace", "self"), !Contains("backward"));
    // With two heads each head has its softmax: the exps are per pair and head, the
    // multiply-adds the same (d = 2·d_head summed over the heads).
    const auto heads = cli::run({"bench", "--sizes", "16", "--dim", "4", "--heads", "2", "--dtypes", "float64", "--threads",
                                 "1", "--repeats", "1", "--paths", "streaming,backward", "--modes", "self", "-f", "json"});
    REQUIRE(heads.exit_code == 0);
    const json two = json::parse(heads.out);
    REQUIRE(two["runs"].size() == 2);
    for (const auto& run : two["runs"]) {
        INFO(run.dump());
        const bool backward = run["path"] == "backward";
        CHECK(run["multiply_adds"] == 16 * 16 * (backward ? 5 : 2) * 4);
        CHECK(run["exps"] == 16 * 16 * (backward ? 2 : 1) * 2);
    }
    const auto heads_text = cli::run({"bench", "--sizes", "16", "--dim", "4", "--heads", "2", "--dtypes", "float64",
                                      "--threads", "1", "--repeats", "1", "--paths", "streaming,backward", "--modes", "self"});
    CHECK_THAT(heads_text.out, Contains("exps: one per visible pair and head, both exact") &&
                                   Contains("exps: two per visible pair and head, both exact"));
    CHECK_THAT(alone, Contains("exps: two per visible pair, both exact"));
}

TEST_CASE("bench repeats a configuration until its runs agree, or says the machine was busy", "[claims][bench]") {
    // Runs that had the CPU all the time they ran (cpu = wall), unless given otherwise.
    const auto timed = [](std::vector<double> seconds, int agree, int max_runs, double on_cpu = 1) {
        std::size_t next = 0;
        return attntrace::time_until_stable(
            [&] {
                const double wall = seconds.at(next++);
                return attntrace::RunTime{wall, wall * on_cpu};
            },
            agree, max_runs, 0.10);
    };
    // Three runs within 5%: done after three, the median of them.
    const attntrace::Timing calm = timed({1.0, 1.05, 1.02}, 3, 9);
    CHECK(calm.runs.size() == 3);
    CHECK(calm.checked);
    CHECK(calm.stable);
    CHECK(calm.seconds == 1.02);
    CHECK(calm.spread == Approx(0.05));
    CHECK(!calm.busy);
    CHECK(calm.off_cpu == 0);
    // A slow first run: a fourth makes three agree (1.0, 1.03, 1.05).
    const attntrace::Timing settles = timed({2.0, 1.0, 1.03, 1.05}, 3, 9);
    CHECK(settles.runs.size() == 4);
    CHECK(settles.stable);
    CHECK(settles.seconds == 1.03);
    // Never three within 10% in six runs: busy, the median of all six (sorted 1.0, 1.4, 1.5,
    // 2.0, 2.2, 3.0: the fourth).
    const attntrace::Timing busy = timed({1.0, 2.0, 1.5, 3.0, 1.4, 2.2}, 3, 6);
    CHECK(busy.runs.size() == 6);
    CHECK(busy.checked);
    CHECK(!busy.stable);
    CHECK(busy.seconds == 2.0);
    CHECK(busy.spread == Approx(2.0));
    CHECK(busy.busy);
    // Runs that agree but had the CPU for half their time only: other work had it, busy too.
    const attntrace::Timing shared = timed({1.0, 1.01, 1.02}, 3, 9, 0.5);
    CHECK(shared.stable);
    CHECK(shared.off_cpu == Approx(0.5));
    CHECK(shared.busy);
    // Two threads on the CPU count twice the wall time: not off the CPU.
    const attntrace::Timing parallel = timed({1.0, 1.01, 1.02}, 3, 9, 2);
    CHECK(parallel.off_cpu == 0);
    CHECK(!parallel.busy);
    // One run asked for: nothing to compare.
    const attntrace::Timing one = timed({1.0}, 1, 3);
    CHECK(one.runs.size() == 1);
    CHECK(!one.checked);
    CHECK(!one.stable);
    CHECK(!one.busy);  // not judged
    CHECK(one.seconds == 1.0);
}

namespace {

std::vector<std::string> words_of(std::string_view sentence) {
    const attntrace::SplitWords words = attntrace::split_sentence(sentence);
    std::vector<std::string> out;
    for (std::size_t i = 0; i < words.size(); ++i) out.push_back(words.texts[i] + (words.punctuation[i] ? "(p)" : ""));
    return out;
}

}  // namespace

TEST_CASE("a special token in brackets is one word, and a lone bracket stays punctuation", "[claims][tokenize]") {
    CHECK(words_of("the black cat <pad>") == std::vector<std::string>{"the", "black", "cat", "<pad>"});
    CHECK(words_of("cat<pad>.") == std::vector<std::string>{"cat", "<pad>", ".(p)"});
    CHECK(words_of("the cat <pad>.") == std::vector<std::string>{"the", "cat", "<pad>", ".(p)"});  // docs/input-format.md
    CHECK(words_of("</s> <|endoftext|> [CLS] x [SEP]") ==
          std::vector<std::string>{"</s>", "<|endoftext|>", "[CLS]", "x", "[SEP]"});
    CHECK(words_of("a < b > c") == std::vector<std::string>{"a", "<(p)", "b", ">(p)", "c"});
    CHECK(words_of("<3 <> [ ] <a b>") ==
          std::vector<std::string>{"<(p)", "3", "<(p)", ">(p)", "[(p)", "](p)", "<(p)", "a", "b", ">(p)"});
    CHECK(words_of("<<pad>>") == std::vector<std::string>{"<(p)", "<pad>", ">(p)"});
}

TEST_CASE("docs/input-format.md's Bahdanau input with a <pad> in its sentence traces", "[claims][tokenize]") {
    // The page's example, with black_cat_fr's numbers and a state for <pad> that would
    // outscore every word if the mask did not hide it.
    const cli::TempFile input(R"({
      "mode": "bahdanau",
      "source": {"sentence": "the black cat <pad>",
                 "states": {"the": [1, 0, 0], "black": [0, 1, 0], "cat": [0, 0, 1], "<pad>": [1, 1, 1]},
                 "mask": [true, true, true, false]},
      "target": {"sentence": "le chat noir", "states": [[1, 0, 0], [0, 0, 1], [0, 1, 0]]},
      "weights": {"W_a": [[0, 3, 3], [3, 0, 3], [3, 3, 0]], "U_a": [[2, 0, 0], [0, 2, 0], [0, 0, 2]], "v_a": [3, 3, 3]}})");
    const json t = run_json({input.path()});
    CHECK(t["source_tokens"] == json::parse(R"(["the", "black", "cat", "<pad>"])"));
    // e_tj = v_a · tanh(s_t·W_a + h_j·U_a), softmax over the three visible words, by hand.
    const double W_a[3][3] = {{0, 3, 3}, {3, 0, 3}, {3, 3, 0}};
    const double s[3][3] = {{1, 0, 0}, {0, 0, 1}, {0, 1, 0}};
    const double h[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    const auto weights = stage_rows(t, "weights");
    for (int i = 0; i < 3; ++i) {
        double e[3], total = 0;
        for (int j = 0; j < 3; ++j) {
            e[j] = 0;
            for (int k = 0; k < 3; ++k) {
                double sw = 0;
                for (int m = 0; m < 3; ++m) sw += s[i][m] * W_a[m][k];
                e[j] += 3 * std::tanh(sw + 2 * h[j][k]);
            }
        }
        const double top = std::max({e[0], e[1], e[2]});
        for (double v : e) total += std::exp(v - top);
        for (int j = 0; j < 3; ++j) CHECK(weights[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] == Approx(std::exp(e[j] - top) / total).margin(1e-15));
        CHECK(weights[static_cast<std::size_t>(i)][3] == 0);
    }
}

// ---- Counts of one and ranges of one (issue 28): each text below is run with exactly one
// item, where a plural or an "a–a" range would be false, and with several, where it stays.

namespace {

// The lines of `text` that start with `start`.
std::vector<std::string> lines_starting(const std::string& text, const std::string& start) {
    std::vector<std::string> out;
    std::size_t from = 0;
    while (from < text.size()) {
        const std::size_t end = std::min(text.find('\n', from), text.size());
        const std::string line = text.substr(from, end - from);
        if (line.rfind(start, 0) == 0) out.push_back(line);
        from = end + 1;
    }
    return out;
}

}  // namespace

TEST_CASE("the check of the output brackets the product it subtracts, |output − (concat·W_o + b_o)|", "[claims][check]") {
    // One head with W_o and b_o, and the same split into two heads: the bias is inside the
    // brackets; without a bias there is nothing to bracket.
    const cli::TempFile input(R"({"tokens": ["a", "b"], "embeddings": {"a": [1, 0], "b": [0, 1]},
      "weights": {"query": [[1, 0], [0, 1]], "key": [[1, 0], [0, 1]], "value": [[1, 2], [3, 4]],
                  "output": [[1, 0], [0, 1]], "output_bias": [0.5, -0.5]}})");
    const auto one = cli::run({input.path(), "-m", "self", "--check"});
    REQUIRE(one.exit_code == 0);
    CHECK_THAT(one.out, Contains("ok       output = context · W_o + b_o: largest |output − (context·W_o + b_o)| = "));
    const auto two = cli::run({input.path(), "-m", "self", "--heads", "2", "--check"});
    REQUIRE(two.exit_code == 0);
    CHECK_THAT(two.out, Contains("ok       output = concat · W_o + b_o: largest |output − (concat·W_o + b_o)| = "));
    CHECK_THAT(two.out, Contains("largest |output − (Σ contributions + b_o)| = "));
    const auto unbiased = cli::run({"example:two_heads", "--check"});
    REQUIRE(unbiased.exit_code == 0);
    CHECK_THAT(unbiased.out, Contains("largest |output − concat·W_o| = "));
    for (const auto* r : {&one, &two, &unbiased}) CHECK_THAT(r->out, !Contains("W_o + b_o|"));
}

TEST_CASE("the checks count one masked score, one masked entry and one row that sees no key in the singular", "[claims][check]") {
    // Causal over two tokens hides exactly one pair (row 1, key 2): n(n − 1)/2 = 1.
    const cli::TempFile two(R"({"tokens": ["a", "b"], "embeddings": {"a": [1, 0], "b": [0, 1]}})");
    const auto one = cli::run({two.path(), "-m", "causal", "--check"});
    REQUIRE(one.exit_code == 0);
    CHECK_THAT(one.out, Contains("none infinite or NaN but the 1 masked score, −∞ by design\n"));
    CHECK_THAT(one.out, Contains("over 1 masked entry\n"));
    // Six tokens hide 6·5/2 = 15 pairs.
    const auto three = cli::run({"example:your_journey", "-m", "causal", "--check"});
    CHECK_THAT(three.out, Contains("but the 15 masked scores, −∞ by design") && Contains("over 15 masked entries"));
    // A source mask of no word, for one target word: one row sees no key.
    const cli::TempFile blind(R"({"source": {"tokens": ["le", "chat"], "states": [[1, 0], [0, 1]], "mask": [false, false]},
                                  "target": {"tokens": ["the"], "states": [[0, 1]]}})");
    const auto row = cli::run({blind.path(), "--check"});
    REQUIRE(row.exit_code == 0);
    CHECK_THAT(row.out, Contains("; 1 row with every key masked sums to 0\n"));
    const cli::TempFile blind_two(R"({"source": {"tokens": ["le", "chat"], "states": [[1, 0], [0, 1]], "mask": [false, false]},
                                      "target": {"tokens": ["the", "cat"], "states": [[0, 1], [1, 0]]}})");
    CHECK_THAT(cli::run({blind_two.path(), "--check"}).out, Contains("; 2 rows with every key masked sum to 0\n"));
}

TEST_CASE("decode with one step says one step, not a range of one", "[claims][decode]") {
    // your_journey has 6 tokens: a prefill of 5 leaves the one step, position 6.
    const auto r = cli::run({"decode", "example:your_journey", "--prefill", "5"});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("fill the cache; then one step, position 6\n"));
    CHECK_THAT(r.out, Contains("\nstep 6 (the only step) · \"step\" · the cache now holds 6 tokens\n"));
    CHECK_THAT(r.out, Contains("\nthe one step equals its row of the full causal trace "));
    CHECK_THAT(r.out, !Contains("6–6") && !Contains("positions 6") && !Contains("equal their rows"));
    const auto step = cli::run({"decode", "example:your_journey", "--prefill", "5", "--step", "3"});
    cli::require_error_line(step, 2, "--step 3: the only step is position 6 (after a prefill of 5)");
    // Several steps keep their range.
    const auto many = cli::run({"decode", "example:your_journey", "--prefill", "4"});
    CHECK_THAT(many.out, Contains("then one step per token, positions 5–6\n") && Contains("\nstep 5 (of steps 5–6) · "));
    CHECK_THAT(many.out, Contains("\nall 2 steps equal their rows of the full causal trace "));
    cli::require_error_line(cli::run({"decode", "example:your_journey", "--prefill", "4", "--step", "3"}), 2,
                            "--step 3: the steps are positions 5 to 6 (after a prefill of 4)");
}

TEST_CASE("headings count one token, one target token and one query in the singular", "[claims][render]") {
    const cli::TempFile solo(R"({"tokens": ["solo"], "embeddings": {"solo": [1, 2, 3]}})");
    CHECK_THAT(cli::run({solo.path(), "-m", "self"}).out, StartsWith("attntrace · self mode · 1 token · "));
    CHECK_THAT(cli::run({solo.path(), "-m", "self", "-f", "markdown"}).out,
               StartsWith("# attntrace: self mode, 1 token (" + solo.path() + ")\n"));
    CHECK_THAT(cli::run({solo.path(), "-m", "self", "--summary"}).out, StartsWith("attntrace · self mode · summary of 1 query · "));
    CHECK_THAT(cli::run({solo.path(), "-m", "self", "--summary", "-f", "markdown"}).out,
               StartsWith("# attntrace: self mode, summary of 1 query (" + solo.path() + ")\n"));
    const cli::TempFile pair(R"({"source": {"tokens": ["le"], "states": [[1, 0]]}, "target": {"tokens": ["the"], "states": [[0, 1]]}})");
    CHECK_THAT(cli::run({pair.path()}).out, Contains(" · 1 source → 1 target token · "));
    CHECK_THAT(cli::run({pair.path(), "-f", "markdown"}).out,
               StartsWith("# attntrace: bahdanau mode, 1 source → 1 target token (" + pair.path() + ")\n"));
    // Several target tokens: "tokens".
    CHECK_THAT(cli::run({"example:black_cat_fr"}).out, Contains(" · 3 source → 3 target tokens · "));
    CHECK_THAT(cli::run({"example:black_cat_fr", "-f", "markdown"}).out, Contains(", 3 source → 3 target tokens ("));
    CHECK_THAT(cli::run({"example:your_journey", "-f", "markdown"}).out, Contains("mode, 6 tokens ("));
    const cli::TempFile word(R"({"tokens": ["w"], "embeddings": {"w": [1, 2]}})");
    CHECK_THAT(cli::run({"similarity", word.path()}).out, StartsWith("attntrace similarity · 1 word · d = 2 · "));
    CHECK_THAT(cli::run({"similarity", "example:fruit_and_pets"}).out, Contains(" words · d = "));
}

TEST_CASE("the note on rows that see no key says its for one row and their for several", "[claims][render]") {
    const cli::TempFile one(R"({"source": {"tokens": ["le", "chat"], "states": [[1, 0], [0, 1]], "mask": [false, false]},
                                "target": {"tokens": ["the"], "states": [[0, 1]]}})");
    const json t = run_json({one.path(), "-s", "weights"});
    CHECK(t["notes"] == json::array({"every key is masked for the: its weights are all 0 (a softmax over no keys would be "
                                     "0/0) and its context vector 0"}));
    const cli::TempFile two(R"({"source": {"tokens": ["le", "chat"], "states": [[1, 0], [0, 1]], "mask": [false, false]},
                                "target": {"tokens": ["the", "cat"], "states": [[0, 1], [1, 0]]}})");
    CHECK(run_json({two.path(), "-s", "weights"})["notes"] ==
          json::array({"every key is masked for the, cat: their weights are all 0 (a softmax over no keys would be 0/0) "
                       "and their context vectors 0"}));
    // A finite fill shares the row's weight out: causal, the first token padding, one row sees
    // only padding; with two padding tokens first, two rows do.
    const auto filled_note = [](const std::vector<std::string>& tokens) {
        json doc = {{"tokens", tokens}, {"embeddings", {{"<pad>", {0, 1}}, {"b", {1, 0}}}}, {"padding", {"<pad>"}}};
        const cli::TempFile file(doc.dump());
        const json trace = run_json({file.path(), "-m", "causal", "--mask-fill", "-1e9", "-s", "weights"});
        for (const auto& note : trace["notes"])
            if (note.get<std::string>().starts_with("every key is masked for ")) return note.get<std::string>();
        return std::string();
    };
    CHECK_THAT(filled_note({"<pad>", "b"}), StartsWith("every key is masked for <pad>, yet its weights are not 0: "));
    CHECK_THAT(filled_note({"<pad>", "<pad>", "b"}), StartsWith("every key is masked for <pad> (position 1), <pad> (position 2), yet their weights are not 0: "));
    // --normalize sum and one padding row it cannot divide (a <pad> of zeros scores 0 with every key).
    const cli::TempFile padded(R"({"tokens": ["a", "b", "<pad>"], "embeddings": {"a": [1, 0], "b": [0, 1], "<pad>": [0, 0]},
                                   "padding": ["<pad>"]})");
    const json sum = run_json({padded.path(), "--normalize", "sum", "-s", "weights"});
    bool said = false;
    for (const auto& note : sum["notes"])
        said = said || note.get<std::string>().find("the padding row <pad> (position 3) do not sum to a positive number, so "
                                                    "dividing by the sum gives no weights there; a model ignores padding "
                                                    "rows, so its weights are left 0 (and its context vector 0), not "
                                                    "divided") != std::string::npos;
    CHECK(said);
}

TEST_CASE("the explanation of one token counts it in the singular and says the mask hides nothing", "[claims][explain]") {
    const cli::TempFile solo(R"({"tokens": ["solo"], "embeddings": {"solo": [1, 2, 3]}})");
    const auto r = cli::run({solo.path(), "-m", "causal", "--explain", "--width", "0"});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("\n  X: 1 token × 3 numbers\n"));
    // Causal over one token hides nothing: no sentence about hidden scores becoming −∞.
    CHECK_THAT(r.out, Contains("\n  The mask hides nothing on this run: every query may see every key it meets, so the "
                               "scores pass through unchanged.\n  S'' = S' with −∞ where key j > query i: 1×1 (0 entries hidden)\n"));
    CHECK_THAT(r.out, !Contains("Their scores become"));
    // One key a row: softmax and the sum give the one key weight 1 alike (a score of 1 by hand:
    // x·x = 1 + 4 + 9 = 14 > 0 in plain mode, so the sum can divide it).
    const auto plain = cli::run({solo.path(), "-m", "plain", "--explain", "--width", "0", "-s", "weights"});
    CHECK_THAT(plain.out, Contains("On this run softmax gives the top key the same weight as dividing by the row sum, in the "
                                   "one row; for \"solo\", 1 by softmax against 1 by the sum."));
    CHECK_THAT(plain.out, !Contains("0 of the 1 rows"));
    const cli::TempFile narrow(R"({"tokens": ["a", "b", "c"], "embeddings": {"a": [1], "b": [2], "c": [-1]}})");
    CHECK_THAT(cli::run({narrow.path(), "--explain", "--width", "0", "-s", "inputs"}).out, Contains("\n  X: 3 tokens × 1 number\n"));
    const cli::TempFile pair(R"({"source": {"tokens": ["le"], "states": [[1, 0]]}, "target": {"tokens": ["the"], "states": [[0, 1]]}})");
    const auto b = cli::run({pair.path(), "--explain", "--width", "0"});
    CHECK_THAT(b.out, Contains("\n  H: 1 source token × d_h = 2\n") && Contains("\n  S: 1 target step × d_s = 2\n"));
    const auto many = cli::run({"example:black_cat_fr", "--explain", "--width", "0"});
    CHECK_THAT(many.out, Contains("\n  H: 3 source tokens × d_h = 3\n") && Contains("\n  S: 3 target steps × d_s = 3\n"));
    // A window that hides keys still says what −∞ does.
    CHECK_THAT(cli::run({"example:your_journey", "-m", "causal", "--explain", "--width", "0", "-s", "masked"}).out,
               Contains("Their scores become −∞"));
}

TEST_CASE("a window of one is one key and a query that sees only itself", "[claims][compare]") {
    // b after a: a window of 1 hides a from b, causal or not; a window of 2 in causal mode
    // leaves b and the one token before it.
    const cli::TempFile three(R"({"tokens": ["a", "b", "c"], "embeddings": {"a": [1, 0], "b": [0, 1], "c": [1, 1]}})");
    for (const char* mode : {"causal", "self"}) {
        INFO(mode);
        CHECK_THAT(cli::run({"compare", three.path(), three.path(), "-t", "b", "-m", mode, "--window", "1"}).out,
                   Contains("the window of 1 (--window 1: a query sees only itself) hides the token before \"b\" (a)"));
    }
    CHECK_THAT(cli::run({"compare", three.path(), three.path(), "-t", "c", "-m", "causal", "--window", "2"}).out,
               Contains("the window of 2 (--window 2: a query sees itself and the one before it) hides the token before "
                        "\"c\" (a)"));
    CHECK_THAT(cli::run({"compare", "example:your_journey", "example:your_journey", "-t", "step", "-m", "causal",
                         "--window", "3"}).out,
               Contains("(--window 3: a query sees itself and the 2 before it)"));
    // check-answers: weights without the window, softmax over every key of plain scores
    // S = X·Xᵀ, worked out here from the inputs.
    const json inputs = run_json({"example:your_journey", "-m", "plain", "-s", "inputs"});
    const auto x = stage_rows(inputs, "inputs");
    std::vector<std::vector<double>> weights(x.size(), std::vector<double>(x.size()));
    for (std::size_t i = 0; i < x.size(); ++i) {
        std::vector<double> s(x.size());
        for (std::size_t j = 0; j < x.size(); ++j)
            for (std::size_t k = 0; k < x[i].size(); ++k) s[j] += x[i][k] * x[j][k];
        const double top = *std::max_element(s.begin(), s.end());
        double total = 0;
        for (double& v : s) total += (v = std::exp(v - top));
        for (std::size_t j = 0; j < x.size(); ++j) weights[i][j] = s[j] / total;
    }
    const cli::TempFile answers(json({{"weights", weights}}).dump());
    const auto r = cli::run({"check-answers", "example:your_journey", "-m", "plain", "--window", "1", answers.path()});
    CHECK_THAT(r.out, Contains("the window of 1 key (--window) was not applied"));
    CHECK_THAT(cli::run({"check-answers", "example:your_journey", "-m", "plain", "--window", "2", answers.path()}).out,
               Contains("the window of 2 keys (--window) was not applied"));
}

TEST_CASE("bench says one core and one timed run for one", "[claims][bench]") {
    // taskset leaves the run one CPU, which OpenMP counts as its processors.
    const auto r = cli::run_program({"taskset", "-c", "0", ATTNTRACE_BINARY, "bench", "--sizes", "16", "--dim", "4", "--dtypes",
                                     "float64", "--threads", "1", "--repeats", "1", "--paths", "streaming", "--modes", "self"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(lines_starting(r.out, "attntrace bench · ").size() == 1);
    CHECK_THAT(r.out, Contains(" · 1 core · d = 4\n"));
    CHECK_THAT(cli::run({"bench", "--sizes", "16", "--dim", "4", "--dtypes", "float64", "--threads", "1", "--repeats", "2",
                         "--paths", "streaming", "--modes", "self", "-f", "table"})
                   .out,
               Contains("\neach time is the median of 2 timed runs after a warm-up that agree within 10% of the fastest"));
}

TEST_CASE("quiz says one round and any mode as they are", "[claims][quiz]") {
    const auto ended = cli::run({"quiz", "-n", "1", "--answers", "/dev/null"});
    CHECK_THAT(ended.out, Contains("no answer: the answers ended, so the quiz stops before its one round\n"));
    cli::require_error_line(cli::run({"quiz", "--example", "black_cat_fr", "-s", "queries", "--answers", "/dev/null"}), 2,
                            "no question fits: black_cat_fr in any mode has no queries stage to ask about");
    cli::require_error_line(cli::run({"quiz", "--example", "your_journey", "-m", "plain", "-s", "scaled", "--answers", "/dev/null"}),
                            2, "no question fits: your_journey in mode plain has no scaled stage to ask about");
}
