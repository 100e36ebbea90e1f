// Teaching output: worked examples, explanations, colour, the handout formats, --check,
// and the similarity and compare commands. Expected numbers come from the lecture, hand
// arithmetic, or the reference implementation in attention/reference.hpp.
#include "attention/check.hpp"
#include "attention/trace.hpp"
#include "input/examples.hpp"
#include "input/load.hpp"
#include "support/cli.hpp"
#include "support/text.hpp"
#include "attention/reference.hpp"

#include "support/catch.hpp"
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

using Catch::Contains;
namespace reference = attntrace::reference;
using nlohmann::json;

namespace {

using text::lines_of;

std::vector<std::string> split(const std::string& line, char separator) {
    std::vector<std::string> out;
    std::string field;
    std::istringstream in(line);
    while (std::getline(in, field, separator)) out.push_back(field);
    return out;
}

// RFC 4180 quoting, written here from the rule rather than taken from src/.
std::string csv_quoted(const std::string& text) {
    if (text.find_first_of(",\"\n") == std::string::npos) return text;
    std::string out = "\"";
    for (const char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
}

std::string trim(std::string s) {
    s.erase(0, s.find_first_not_of(' '));
    s.erase(s.find_last_not_of(' ') + 1);
    return s;
}

// The published softmax of the lecture's scores for "journey", worked by hand.
const std::vector<double> journey_scores{0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865};

}  // namespace

TEST_CASE("the worked example spells out the lecture's arithmetic for 'journey'", "[teaching][worked]") {
    const auto r = cli::run({"-q", "journey", "-s", "weights"});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("worked example · query \"journey\" (row 2) · plain mode"));
    CHECK_THAT(r.out, Contains("x_journey = [0.55, 0.87, 0.66]"));
    // The issue's own line: each score as its sum of products.
    CHECK_THAT(r.out, Contains("journey·Your    = 0.55×0.43 + 0.87×0.15 + 0.66×0.89 = 0.9544"));
    CHECK_THAT(r.out, Contains("journey·step    = 0.55×0.05 + 0.87×0.8 + 0.66×0.55 = 1.0865"));
    // Softmax by hand: max 1.495; exp(0.9544 − 1.495) = exp(−0.5406) = 0.5824; Σ = 4.2036.
    double sum = 0;
    for (const double s : journey_scores) sum += std::exp(s - 1.4950);
    CHECK(sum == Approx(4.2036).margin(1e-4).epsilon(0));
    // First as a learner computes it: e^s, their sum 18.7453 (e^1.495 · 4.2036), the same weights.
    double unshifted = 0;
    for (const double s : journey_scores) unshifted += std::exp(s);
    CHECK(unshifted == Approx(18.7453).margin(1e-3).epsilon(0));
    CHECK_THAT(r.out, Contains("softmax: e^s of each score, divided by their sum"));
    CHECK_THAT(r.out, Contains("Your     exp(0.9544) = 2.5971"));
    CHECK_THAT(r.out, Contains("sum = 18.7453"));
    CHECK_THAT(r.out, Contains("2.5971 ÷ 18.7453 = 0.1385"));
    // Then with the max subtracted, said to be for numerical safety only.
    CHECK_THAT(r.out, Contains("the same weights with the row max 1.495 subtracted first"));
    CHECK_THAT(r.out, Contains("only keeps e^x from overflowing"));
    CHECK_THAT(r.out, Contains("exp(0.9544 − 1.495) = exp(-0.5406) = 0.5824"));
    CHECK_THAT(r.out, Contains("sum = 4.2036"));
    CHECK_THAT(r.out, Contains("0.5824 ÷ 4.2036 = 0.1385"));
    // The context as a weighted sum, term by term.
    CHECK_THAT(r.out, Contains("z_journey = 0.1385×[0.43, 0.15, 0.89]"));
    CHECK_THAT(r.out, Contains("+ 0.2379×[0.55, 0.87, 0.66]"));
    CHECK_THAT(r.out, Contains("= [0.4419, 0.6515, 0.5683]"));
    CHECK_THAT(r.out, Contains("scaling: none") && Contains("mask: none"));
    // A position selects the same row.
    CHECK(cli::run({"-q", "2", "-s", "weights"}).out == r.out);
}

TEST_CASE("the worked example in JSON carries the same numbers", "[teaching][worked]") {
    const json doc = json::parse(cli::run({"-q", "journey", "-f", "json", "-s", "weights"}).out);
    const auto& w = doc.at("worked");
    CHECK(w["query"] == "journey");
    CHECK(w["position"] == 2);
    CHECK(w["keys"].size() == 6);
    CHECK(w["dot_scores"][0]["query_vector"] == json({0.55, 0.87, 0.66}));
    CHECK(w["dot_scores"][0]["key_vector"] == json({0.43, 0.15, 0.89}));
    CHECK(w["dot_scores"][0]["score"].get<double>() == Approx(0.9544).margin(0.5e-4).epsilon(0));
    CHECK(w["d_k"].is_null());
    CHECK(w["mask"].is_null());
    CHECK(w["max"].get<double>() == Approx(1.4950).margin(0.5e-4).epsilon(0));
    CHECK(w["sum"].get<double>() == Approx(4.2036).margin(1e-4).epsilon(0));
    CHECK(w["weights"] == doc["stages"][0]["data"][1]);
    for (std::size_t j = 0; j < 6; ++j)
        CHECK(w["exp"][j].get<double>() / w["sum"].get<double>() == Approx(w["weights"][j].get<double>()).epsilon(1e-12));
    const std::vector<double> context{0.4419, 0.6515, 0.5683};
    for (std::size_t k = 0; k < 3; ++k) CHECK(w["context"][k].get<double>() == Approx(context[k]).margin(0.5e-4).epsilon(0));
}

TEST_CASE("a causal worked example shows both ways to mask give one answer", "[teaching][worked]") {
    const auto r = cli::run({"-m", "causal", "-q", "starts", "-s", "weights", "--dim", "2"});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("scaling: each score ÷ √d_k = ÷ √2 = ÷ 1.4142"));
    CHECK_THAT(r.out, Contains("mask: with, one, step excluded (they come after it, and a causal model must not see the future)"));
    CHECK_THAT(r.out, Contains("the other way to mask: softmax over all keys, set the excluded to 0, divide by what is left"));
    const json doc = json::parse(cli::run({"-m", "causal", "-q", "starts", "-f", "json", "-s", "weights", "--dim", "2"}).out);
    const auto& w = doc["worked"];
    REQUIRE(w["zeroed_then_renormalised"].size() == 6);
    for (std::size_t j = 0; j < 6; ++j)
        CHECK(w["zeroed_then_renormalised"][j].get<double>() == Approx(w["weights"][j].get<double>()).margin(1e-15).epsilon(0));
    CHECK(w["mask"]["allowed"] == json({true, true, true, false, false, false}));
    CHECK(w["exp"][3] == 0.0);
    CHECK(w["shifted"][3].is_null());
}

TEST_CASE("a bahdanau worked example shows the tanh features", "[teaching][worked]") {
    const auto r = cli::run({"--example", "black_cat_fr", "-q", "chat", "-s", "weights"});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("worked example · target \"chat\" (row 2) · bahdanau mode"));
    CHECK_THAT(r.out, Contains("s_chat·W_a = [3, 3, 0]"));
    // cat: h·U_a = [0, 0, 2]; s·W_a + h·U_a = [3, 3, 2]; 3·(tanh 3 + tanh 3 + tanh 2) = 8.8624.
    CHECK(3 * (2 * std::tanh(3.0) + std::tanh(2.0)) == Approx(8.8624).margin(0.5e-4).epsilon(0));
    CHECK_THAT(r.out, Contains("cat: h·U_a = [0, 0, 2]; tanh(s·W_a + h·U_a) = tanh([3, 3, 2]) = [0.9951, 0.9951, 0.964]"));
    CHECK_THAT(r.out, Contains("e = 3×0.9951 + 3×0.9951 + 3×0.964 = 8.8624"));
    CHECK_THAT(r.out, Contains("c_chat = 0.0506×[1, 0, 0]"));
    const json doc = json::parse(cli::run({"--example", "black_cat_fr", "-q", "chat", "-f", "json", "-s", "weights"}).out);
    CHECK(doc["worked"]["v_a"] == json({3.0, 3.0, 3.0}));
    CHECK(doc["worked"]["additive_scores"][2]["sum"] == json({3.0, 3.0, 2.0}));
}

TEST_CASE("an unknown query is a usage error", "[teaching][worked][errors]") {
    const auto r = cli::run({"-q", "voyage"});
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Contains("--query: \"voyage\" is neither a token nor a position from 1 to 6"));
    CHECK(cli::run({"-q", "7"}).exit_code == 2);
    CHECK(cli::run({"-q", "0"}).exit_code == 2);
    CHECK(cli::run({"-q", "journey", "-f", "csv"}).exit_code == 2);
}

TEST_CASE("explanations come before each stage only when asked", "[teaching][explain]") {
    const auto plain = cli::run({"-m", "self", "--dim", "2"});
    CHECK_THAT(plain.out, !Contains("→"));
    const auto r = cli::run({"-m", "causal", "--dim", "2", "--explain"});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("Q = X·W_q: (6×3)·(3×2) → 6×2"));
    CHECK_THAT(r.out, Contains("S = Q·Kᵀ: (6×2)·(2×6) → 6×6"));
    CHECK_THAT(r.out, Contains("Z = A·V: (6×6)·(6×2) → 6×2"));
    CHECK_THAT(r.out, Contains("looking for") && Contains("offers") && Contains("hands on"));  // Q, K, V
    CHECK_THAT(r.out, Contains("√d_k") && Contains("must not see"));                          // scaling, mask
    CHECK_THAT(r.out, Contains("do not prove"));                                              // weights ≠ relevance
    // Each explanation sits right before its stage heading.
    CHECK(r.out.find("(6×3)·(3×2) → 6×2\nqueries · 6×2") != std::string::npos);
    const json doc = json::parse(cli::run({"--explain", "-f", "json", "-s", "scores"}).out);
    CHECK_THAT(doc["stages"][0]["explanation"][1].get<std::string>(), Contains("S = X·Xᵀ: (6×3)·(3×6) → 6×6"));
}

TEST_CASE("colour: always, never, NO_COLOR, and none when stdout is not a terminal", "[teaching][color]") {
    const std::string escape = "\x1b[";
    CHECK_THAT(cli::run({"-s", "weights"}).out, !Contains(escape));  // auto, stdout a file
    CHECK_THAT(cli::run({"-s", "weights", "--color", "never"}).out, !Contains(escape));
    const auto always = cli::run({"-s", "weights", "--color", "always"}, "", {{"NO_COLOR", "1"}});
    CHECK_THAT(always.out, Contains("\x1b[48;5;") && Contains("shading: weights on their own scale"));
    CHECK_THAT(cli::run({"-s", "inputs", "--color", "always"}).out, !Contains(escape));  // only scores and weights
    CHECK_THAT(cli::run({"-f", "json", "--color", "always"}).out, !Contains(escape));
    // auto on a terminal colours, unless NO_COLOR is set.
    const auto terminal = cli::run_in_terminal({"-s", "weights"}, {{"NO_COLOR", ""}});
    CHECK(terminal.exit_code == 0);
    CHECK_THAT(terminal.out, Contains("\x1b[48;5;"));
    const auto no_color = cli::run_in_terminal({"-s", "weights"}, {{"NO_COLOR", "1"}});
    CHECK_THAT(no_color.out, !Contains(escape));
    CHECK_THAT(no_color.out, Contains("journey  0.1385"));
}

TEST_CASE("the darkest shade marks the largest weight", "[teaching][color]") {
    const auto table = cli::run({"-s", "weights", "--color", "always", "--shade", "table"});
    // One scale for the table: row "journey"'s largest weight 0.2379 gets the darkest
    // background (17), the smallest in the table (0.0988, row "step") the lightest (231).
    CHECK_THAT(table.out, Contains("\x1b[48;5;17m\x1b[38;5;231m 0.2379\x1b[0m"));
    CHECK_THAT(table.out, Contains("\x1b[48;5;231m\x1b[38;5;16m0.0988\x1b[0m"));
    CHECK_THAT(table.out, Contains("shading: "));
}

TEST_CASE("weights are shaded row by row with --shade row, and --shade table gives one scale", "[teaching][color]") {
    // The xterm colours of the eight steps, lightest first (render/table.cpp's scale, written
    // down again here): a weight w of a row whose largest is m takes step floor(8·w/m), the
    // largest step 7; with one scale, step floor(8·(w − low)/(high − low)) over the table.
    const int backgrounds[] = {231, 189, 147, 105, 63, 21, 19, 17};
    const json doc = json::parse(cli::run({"-m", "causal", "-f", "json", "-s", "weights"}).out);
    const auto& weights = doc["stages"][0]["data"];
    double low = 1, high = 0;
    for (const auto& row : weights)
        for (const auto& w : row)
            if (w.get<double>() > 0) low = std::min(low, w.get<double>()), high = std::max(high, w.get<double>());
    const auto cell = [](const std::string& text, int background, double w) {
        return std::regex_search(text, std::regex(fmt::format("\x1b\\[48;5;{}m\x1b\\[38;5;\\d+m *{:.4f}\x1b\\[0m", background, w)));
    };
    const auto row_shaded = cli::run({"-m", "causal", "-s", "weights", "--color", "always", "--shade", "row"}).out;
    const auto one_scale = cli::run({"-m", "causal", "-s", "weights", "--color", "always", "--shade", "table"}).out;
    std::size_t differ = 0;
    for (std::size_t i = 0; i < weights.size(); ++i) {
        double m = 0;
        for (const auto& w : weights[i]) m = std::max(m, w.get<double>());
        for (std::size_t j = 0; j <= i; ++j) {  // the visible keys
            const double w = weights[i][j];
            const int by_row = std::min(7, static_cast<int>(8 * w / m));
            const int by_table = std::min(7, static_cast<int>(8 * (w - low) / (high - low)));
            INFO("row " << i + 1 << ", key " << j + 1 << ": " << w);
            CHECK(cell(row_shaded, backgrounds[by_row], w));
            CHECK(cell(one_scale, backgrounds[by_table], w));
            differ += by_row != by_table;
        }
    }
    CHECK(differ >= 5);  // the first row's 1.0 no longer washes out the rest
    CHECK_THAT(row_shaded, Contains("shading per row, as a share of the row's largest weight:"));
    CHECK_THAT(row_shaded, Contains("(a flat row looks as dark as a peaked one; --shade absolute: every weight on 0 to 1)"));
    CHECK_THAT(one_scale, Contains("shading: one scale for the whole table, from its smallest entry to its largest:"));
    CHECK_THAT(cli::run({"-m", "causal", "-s", "scores", "--color", "always", "--shade", "row"}).out,
               Contains("shading per row, from the row's smallest entry to its largest:"));
}

TEST_CASE("by default weights are shaded on their own scale, 0 to 1, and scores on one scale for the table", "[teaching][color]") {
    // A weight w takes step floor(8·w) of the eight (render/table.cpp's, written down again
    // here), the same in every row: the lecture's flat rows (0.10 to 0.24) stay light where
    // causal's first row, 1.0, is the darkest.
    const int backgrounds[] = {231, 189, 147, 105, 63, 21, 19, 17};
    const json doc = json::parse(cli::run({"-m", "causal", "-f", "json", "-s", "weights,scores"}).out);
    const auto& weights = doc["stages"][1]["data"];
    const auto cell = [](const std::string& text, int background, double w) {
        return std::regex_search(text, std::regex(fmt::format("\x1b\\[48;5;{}m\x1b\\[38;5;\\d+m *{:.4f}\x1b\\[0m", background, w)));
    };
    const auto shaded = cli::run({"-m", "causal", "-s", "weights", "--color", "always"}).out;
    for (std::size_t i = 0; i < weights.size(); ++i)
        for (std::size_t j = 0; j <= i; ++j) {
            const double w = weights[i][j];
            INFO("row " << i + 1 << ", key " << j + 1 << ": " << w);
            CHECK(cell(shaded, backgrounds[std::min(7, static_cast<int>(8 * w))], w));
        }
    CHECK_THAT(shaded, Contains("shading: weights on their own scale, 0 to 1, the same in every row:"));
    CHECK_THAT(shaded, Contains("(up to 1.0000)  (--shade row: each row on its own scale)"));
    // Scores have no fixed range: one scale from the table's smallest visible score to its largest.
    const auto& scores = doc["stages"][0]["data"];
    double low = INFINITY, high = -INFINITY;
    for (std::size_t i = 0; i < scores.size(); ++i)
        for (std::size_t j = 0; j < scores[i].size(); ++j)
            low = std::min(low, scores[i][j].get<double>()), high = std::max(high, scores[i][j].get<double>());
    const auto score_table = cli::run({"-m", "causal", "-s", "scores", "--color", "always"}).out;
    for (std::size_t i = 0; i < scores.size(); ++i)
        for (std::size_t j = 0; j < scores[i].size(); ++j) {
            const double v = scores[i][j];
            CHECK(cell(score_table, backgrounds[std::min(7, static_cast<int>(8 * (v - low) / (high - low)))], v));
        }
    CHECK_THAT(score_table, Contains("shading: one scale for the whole table, from its smallest entry to its largest (scores "
                                     "have no fixed range):"));
    // decode's table holds three quantities: the legend says how each row is shaded.
    CHECK_THAT(cli::run({"decode", "--step", "3", "--color", "always"}).out,
               Contains("shading: the score and scaled rows each from the row's smallest entry to its largest; the weight "
                        "row: weights on their own scale, 0 to 1:"));
    CHECK_THAT(cli::run({"decode", "--step", "3", "--color", "always", "--shade", "row"}).out,
               Contains("shading per row: the score and scaled rows each from the row's smallest entry to its largest; the "
                        "weight row as a share of its largest weight:"));
}

TEST_CASE("markdown and CSV hold the JSON numbers at the printed precision", "[teaching][formats]") {
    for (const char* mode : {"plain", "causal"}) {
        INFO(mode);
        const json doc = json::parse(cli::run({"-m", mode, "-f", "json"}).out);
        const auto md = lines_of(cli::run({"-m", mode, "-f", "markdown"}).out);
        const auto csv = lines_of(cli::run({"-m", mode, "-f", "csv"}).out);
        for (const auto& stage : doc["stages"]) {
            const std::string name = stage["name"];
            INFO(name);
            // markdown: "## name · r×c", then for applied stages a pipe table.
            const auto heading = std::find(md.begin(), md.end(), "## " + name + " · " +
                                           std::to_string(stage["shape"][0].get<int>()) + "×" +
                                           std::to_string(stage["shape"][1].get<int>()));
            REQUIRE(heading != md.end());
            const auto block = std::find(csv.begin(), csv.end(), "stage," + name);
            REQUIRE(block != csv.end());
            if (!stage["applied"]) {
                CHECK(*(block + 2) == "applied,false," + csv_quoted(stage["reason"].get<std::string>()));
                continue;
            }
            CHECK(*(block + 2) == "applied,true");
            auto md_row = heading + 4;  // heading, blank, formula line, blank → header row
            REQUIRE(md_row->rfind("| |", 0) == 0);
            md_row += 2;  // header, rule
            for (std::size_t r = 0; r < stage["data"].size(); ++r, ++md_row) {
                const auto md_cells = split(*md_row, '|');
                const auto csv_cells = split(*(block + 4 + static_cast<long>(r)), ',');
                CHECK(trim(md_cells[1]) == "**" + stage["rows"][r].get<std::string>() + "**");
                CHECK(csv_cells[0] == stage["rows"][r].get<std::string>());
                for (std::size_t c = 0; c < stage["data"][r].size(); ++c) {
                    const auto& value = stage["data"][r][c];
                    const std::string md_cell = trim(md_cells[c + 2]);
                    const std::string csv_cell = csv_cells[c + 1];
                    if (value.is_null()) {
                        CHECK(md_cell == "-inf");
                        CHECK(csv_cell == "-inf");
                        continue;
                    }
                    const bool masked_weight = stage.contains("allowed") && stage["allowed"][r][c] == false;
                    if (masked_weight) {
                        CHECK(csv_cell == "0");
                        continue;
                    }
                    CHECK(std::stod(md_cell) == Approx(value.get<double>()).margin(0.5e-4 + 1e-12).epsilon(0));
                    CHECK(std::stod(csv_cell) == Approx(value.get<double>()).margin(0.5e-4 + 1e-12).epsilon(0));
                    CHECK(md_cell == csv_cell);
                }
            }
        }
    }
}

TEST_CASE("CSV quotes fields that hold commas or quotes", "[teaching][formats]") {
    cli::TempFile file(R"({"tokens": ["a,b", "say \"hi\""], "embeddings": [[1], [2]]})");
    const auto csv = cli::run({file.path(), "-f", "csv", "-s", "scores"}).out;
    CHECK_THAT(csv, Contains("row,\"a,b\",\"say \"\"hi\"\"\"\n"));
    const auto md = cli::run({file.path(), "-f", "markdown", "-s", "scores"}).out;
    cli::TempFile pipe(R"({"tokens": ["a|b"], "embeddings": [[1]]})");
    CHECK_THAT(cli::run({pipe.path(), "-f", "markdown", "-s", "scores"}).out, Contains("| a\\|b |"));
}

TEST_CASE("check passes on every example in every fitting mode", "[teaching][check]") {
    for (const auto& example : attntrace::examples()) {
        const std::string name(example.name);
        const bool pair = name.ends_with("_fr");
        // An input of several heads adds two checks in self and causal modes: output = concat·W_o,
        // and the heads' contributions adding up to it.
        const auto problem = attntrace::load_problem(example.json, name);
        const auto* single = std::get_if<attntrace::SingleSequenceInput>(&problem.input);
        const bool several_heads = single && single->heads.value_or(1) > 1;
        for (const char* mode : {"plain", "self", "causal", "bahdanau"}) {
            if (pair != (std::string(mode) == "bahdanau")) continue;
            const int checks = several_heads && std::string(mode) != "plain" ? 6 : 4;
            for (const char* normalize : {"softmax", "sum"}) {
                INFO(name << " " << mode << " " << normalize);
                const auto r = cli::run({"--example", name, "-m", mode, "--check", "--normalize", normalize});
                // Dividing by the sum is refused for rows whose scores do not sum to a positive number.
                if (std::string(normalize) == "sum" && r.exit_code == 1 && r.err.find("cannot normalise by the sum") != std::string::npos)
                    continue;
                CHECK(r.exit_code == 0);
                CHECK((r.out.ends_with(fmt::format("\nall {} checks passed\n", checks)) || r.out.ends_with(" warning\n")));
                CHECK(r.out.starts_with("ok       every number is finite: "));
            }
        }
    }
}

TEST_CASE("check names the first invariant a broken trace fails", "[teaching][check]") {
    using namespace attntrace;
    const Problem problem = load_problem(find_example("your_journey")->json, "journey");
    TraceOptions options;
    options.mode = Mode::causal;
    const Trace good = trace(problem, options);
    REQUIRE_FALSE(first_failed_check(good));

    Trace row_sum = good;
    row_sum.stages[7].data(2, 0) += 1e-9;  // weights, row "starts"
    CHECK_THAT(*first_failed_check(row_sum), Contains("the weights of \"starts\" (row 3) sum to") && Contains("not 1"));

    Trace leaked = good;
    leaked.stages[7].data(0, 5) = 0.25;  // a masked weight
    CHECK_THAT(*first_failed_check(leaked), Contains("the masked weight at \"Your\" (row 1), \"step\" (column 6) is 0.25"));

    Trace context = good;
    context.stages[8].data(4, 1) += 1e-6;
    CHECK_THAT(*first_failed_check(context), Contains("the context at \"one\" (row 5), \"z2\" (column 2)"));

    Trace nan = good;
    nan.stages[4].data(1, 1) = std::nan("");
    CHECK_THAT(*first_failed_check(nan), Contains("the scores stage holds nan at \"journey\" (row 2)"));
}

TEST_CASE("similarity: dot products and cosines of the vocabulary", "[teaching][similarity]") {
    const auto r = cli::run({"similarity", "example:fruit_and_pets", "-f", "json"});
    REQUIRE(r.exit_code == 0);
    const json doc = json::parse(r.out);
    CHECK(doc["schema"] == "attntrace.similarity/1");
    CHECK(doc["words"] == json({"apple", "orange", "banana", "dog", "cat", "car"}));
    // By hand: apple = (0.9, 0.7, 0, 0, 0), orange = (0.9, 0.6, 0, 0, 0.05).
    const double dot = 0.9 * 0.9 + 0.7 * 0.6;  // 1.23
    const double cosine = dot / (std::sqrt(0.81 + 0.49) * std::sqrt(0.81 + 0.36 + 0.0025));
    CHECK(doc["dot"][0][1].get<double>() == Approx(dot).epsilon(1e-14));
    CHECK(doc["cosine"][0][1].get<double>() == Approx(cosine).epsilon(1e-14));
    CHECK(cosine == Approx(0.9963).margin(1e-4).epsilon(0));
    CHECK(doc["cosine"][0][3] == 0.0);  // apple ⟂ dog
    CHECK(doc["cosine"][2][2].get<double>() == Approx(1.0).epsilon(1e-15));
    const auto table = cli::run({"similarity", "example:fruit_and_pets"});
    CHECK_THAT(table.out, Contains("most alike (cosine): dog–cat 0.9974, apple–orange 0.9963, apple–banana 0.9956"));
    cli::TempFile zero(R"({"sentence": "a b", "embeddings": {"a": [0, 0], "b": [1, 0]}})");
    const auto bad = cli::run({"similarity", zero.path()});
    CHECK(bad.exit_code == 1);
    CHECK_THAT(bad.err, Contains("the vector of \"a\" is all zeros"));
}

TEST_CASE("compare: one word's context vector in two sentences", "[teaching][compare]") {
    const auto r = cli::run({"compare", "example:big_dream", "example:big_mistake", "--token", "big", "-f", "json"});
    REQUIRE(r.exit_code == 0);
    const json doc = json::parse(r.out);
    CHECK(doc["schema"] == "attntrace.compare/1");
    // Recompute both context vectors with the naive implementation from the files' vectors.
    const auto expected_context = [](const char* name) {
        const auto* e = attntrace::find_example(name);
        const json input = json::parse(e->json);
        reference::Rows x;
        for (const auto& word : {"she", "has", "made", "a", "big", "dream", "mistake"}) (void)word;
        std::vector<std::string> words;
        std::istringstream sentence(input["sentence"].get<std::string>());
        for (std::string w; sentence >> w;) {
            std::string key = w;
            key[0] = static_cast<char>(std::tolower(key[0]));
            x.push_back(input["embeddings"][key].get<std::vector<double>>());
        }
        const auto weights = reference::softmax_rows(reference::matmul(x, reference::transpose(x)));
        return reference::matmul(weights, x)[3];  // "big" is the 4th word
    };
    const auto a = expected_context("big_dream");
    const auto b = expected_context("big_mistake");
    double dot = 0, na = 0, nb = 0;
    for (std::size_t k = 0; k < 4; ++k) {
        CHECK(doc["a"]["context"][k].get<double>() == Approx(a[k]).epsilon(1e-12));
        CHECK(doc["b"]["context"][k].get<double>() == Approx(b[k]).epsilon(1e-12));
        CHECK(doc["difference"][k].get<double>() == Approx(b[k] - a[k]).margin(1e-12).epsilon(0));
        dot += a[k] * b[k], na += a[k] * a[k], nb += b[k] * b[k];
    }
    CHECK(doc["cosine"].get<double>() == Approx(dot / std::sqrt(na * nb)).epsilon(1e-12));
    CHECK(doc["a"]["moved_most"][0]["token"] == "dream");
    CHECK(doc["b"]["moved_most"][0]["token"] == "mistake");
    CHECK(doc["a"]["position"] == 4);

    const auto table = cli::run({"compare", "example:bank_river", "example:bank_money", "-t", "Bank"});
    REQUIRE(table.exit_code == 0);  // case-insensitive match
    CHECK_THAT(table.out, Contains("B − A") && Contains("cosine(A, B) = "));
    CHECK_THAT(table.out, Contains("other words that moved \"Bank\" most in A:\n  river"));

    const auto missing = cli::run({"compare", "example:big_dream", "example:bank_money", "-t", "big"});
    CHECK(missing.exit_code == 2);
    CHECK_THAT(missing.err, Contains("--token: \"big\" does not occur in example:bank_money"));
}

TEST_CASE("the svg option writes the heatmap whole, or not at all", "[teaching][svg][cli]") {
    cli::TempFile dir_marker("", "marker");
    const std::string folder = dir_marker.path().substr(0, dir_marker.path().rfind('/'));
    const std::string svg = folder + "/weights.svg";
    const auto r = cli::run({"-m", "causal", "--svg", svg, "-s", "context"});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("context · 6×3"));  // the usual output still goes to stdout
    std::ifstream in(svg);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK_THAT(text, Contains("<svg") && Contains("</svg>"));
    std::size_t cells = 0, masked = 0;
    for (std::size_t at = 0; (at = text.find("class=\"cell", at)) != std::string::npos; ++at) ++cells;
    for (std::size_t at = 0; (at = text.find("class=\"cell masked", at)) != std::string::npos; ++at) ++masked;
    CHECK(cells == 36);
    CHECK(masked == 15);

    // A failing run leaves an existing file untouched and no temporary behind.
    cli::TempFile bad("{", "bad.json");
    const auto failed = cli::run({bad.path(), "--svg", svg});
    CHECK(failed.exit_code == 1);
    std::ifstream again(svg);
    const std::string after((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>());
    CHECK(after == text);
    const auto unwritable = cli::run({"--svg", folder + "/missing/weights.svg"});
    CHECK(unwritable.exit_code == 1);
    CHECK(unwritable.out.empty());
    CHECK_THAT(unwritable.err, Contains("cannot write " + folder + "/missing/weights.svg"));
    std::size_t files = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(folder)) ++files;
    CHECK(files == 2);  // marker and weights.svg
}

TEST_CASE("markdown keeps labels that look like HTML or emphasis as text", "[teaching][formats]") {
    cli::TempFile file(R"({"tokens": ["<pad>", "*a*", "_b_", "a|b"], "embeddings": [[1], [2], [3], [4]]})");
    const auto md = cli::run({file.path(), "-f", "markdown", "-s", "scores"}).out;
    CHECK_THAT(md, Contains("| &lt;pad&gt; | \\*a\\* | \\_b\\_ | a\\|b |"));
    CHECK_THAT(md, Contains("| **&lt;pad&gt;** |"));
}
