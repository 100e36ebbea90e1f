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
                                hidden_note("the window of 2 (--window 2: a query sees itself and the 1 before it)", false,
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

