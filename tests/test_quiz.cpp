// attntrace quiz: questions drawn from a seed, answers read from a file, a pipe or a terminal.
// The value of every question is worked out here again, by plain loops over the examples' own
// numbers (data/*.json), and the answers the tests give come from those loops, never from the
// program's output: right ones must be graded right, and a number made by a known mistake must
// be named as that mistake.
#include "support/cli.hpp"
#include "support/error_line.hpp"
#include "support/naive.hpp"

#include "support/catch.hpp"
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <regex>
#include <sstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

using Catch::Contains;
using nlohmann::json;
using namespace naive;

namespace {

constexpr double minus_infinity = -std::numeric_limits<double>::infinity();

json example_json(const std::string& name) { return json::parse(cli::read_file(cli::data_file(name + ".json"))); }

std::vector<std::string> words(const std::string& sentence) {
    std::vector<std::string> out;
    std::string word;
    for (const char c : sentence + " ") {
        if (c != ' ') word += c;
        else if (!word.empty()) out.push_back(std::exchange(word, {}));
    }
    return out;
}

Grid grid(const json& rows) {
    Grid g;
    for (const auto& row : rows) g.push_back(row.get<std::vector<double>>());
    return g;
}

// Tokens and their vectors: a sentence or a token list, vectors by word or by row.
std::pair<std::vector<std::string>, Grid> sequence(const json& tokens_or_sentence, const json& vectors) {
    const std::vector<std::string> tokens =
        tokens_or_sentence.is_string() ? words(tokens_or_sentence.get<std::string>()) : tokens_or_sentence.get<std::vector<std::string>>();
    Grid x;
    for (std::size_t i = 0; i < tokens.size(); ++i)
        x.push_back(vectors.is_object() ? vectors.at(tokens[i]).get<std::vector<double>>() : vectors.at(i).get<std::vector<double>>());
    return {tokens, x};
}

void softmax_rows(Grid& s) {
    for (auto& row : s) {
        double max = minus_infinity, total = 0;
        for (const double v : row) max = std::max(max, v);
        for (double& v : row) total += v = v == minus_infinity ? 0 : std::exp(v - max);
        for (double& v : row) v /= total;
    }
}

// One head of one example in one mode, stage by stage, in plain loops.
struct Pass {
    Grid q, k, v, scores, scaled, masked, weights, context, output;
    Grid pd, pe;  // bahdanau: S·W_a and H·U_a
    std::vector<double> v_a;
    Grid by_sum;  // the weights had each score been divided by its row's sum
};

Pass naive_pass(const std::string& example, const std::string& mode, int head) {
    const json doc = example_json(example);
    Pass p;
    if (mode == "bahdanau") {
        const auto [sources, h] = sequence(doc["source"].contains("sentence") ? doc["source"]["sentence"] : doc["source"]["tokens"],
                                           doc["source"]["states"]);
        const auto [targets, s] = sequence(doc["target"].contains("sentence") ? doc["target"]["sentence"] : doc["target"]["tokens"],
                                           doc["target"]["states"]);
        p.pd = times(s, grid(doc["weights"]["W_a"]));
        p.pe = times(h, grid(doc["weights"]["U_a"]));
        p.v_a = doc["weights"]["v_a"].get<std::vector<double>>();
        p.scores.assign(s.size(), std::vector<double>(h.size(), 0));
        for (std::size_t t = 0; t < s.size(); ++t)
            for (std::size_t j = 0; j < h.size(); ++j)
                for (std::size_t a = 0; a < p.v_a.size(); ++a) p.scores[t][j] += p.v_a[a] * std::tanh(p.pd[t][a] + p.pe[j][a]);
        p.scaled = p.masked = p.scores;
        if (doc["source"].contains("mask"))
            for (auto& row : p.masked)
                for (std::size_t j = 0; j < row.size(); ++j)
                    if (!doc["source"]["mask"][j].get<bool>()) row[j] = minus_infinity;
        p.weights = p.masked;
        softmax_rows(p.weights);
        p.context = times(p.weights, h);
        return p;
    }
    const auto [tokens, x] = sequence(doc.contains("sentence") ? doc["sentence"] : doc["tokens"], doc["embeddings"]);
    const std::size_t n = tokens.size();
    if (mode == "plain") {
        p.q = p.k = p.v = x;
    } else {  // self or causal with the input's own weights (two_heads)
        const std::size_t heads = doc.value("heads", 1);
        const Grid wq = grid(doc["weights"]["query"]), wk = grid(doc["weights"]["key"]), wv = grid(doc["weights"]["value"]);
        const std::size_t d_head = wq[0].size() / heads, d_v = wv[0].size() / heads;
        const auto hh = static_cast<std::size_t>(std::max(head, 1) - 1);
        p.q = columns(times(x, wq), hh * d_head, d_head);
        p.k = columns(times(x, wk), hh * d_head, d_head);
        p.v = columns(times(x, wv), hh * d_v, d_v);
        // The output: every head's context side by side, times W_o.
        Grid concat(n);
        if (doc["weights"].contains("output")) {
            for (std::size_t g = 0; g < heads; ++g) {
                const Grid qg = columns(times(x, wq), g * d_head, d_head), kg = columns(times(x, wk), g * d_head, d_head),
                           vg = columns(times(x, wv), g * d_v, d_v);
                Grid a(n, std::vector<double>(n, 0));
                for (std::size_t i = 0; i < n; ++i)
                    for (std::size_t j = 0; j < n; ++j) {
                        for (std::size_t c = 0; c < d_head; ++c) a[i][j] += qg[i][c] * kg[j][c];
                        a[i][j] /= std::sqrt(static_cast<double>(d_head));
                        if (mode == "causal" && j > i) a[i][j] = minus_infinity;
                    }
                softmax_rows(a);
                const Grid z = times(a, vg);
                for (std::size_t i = 0; i < n; ++i) concat[i].insert(concat[i].end(), z[i].begin(), z[i].end());
            }
            p.output = times(concat, grid(doc["weights"]["output"]));
        }
    }
    p.scores.assign(n, std::vector<double>(n, 0));
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j)
            for (std::size_t c = 0; c < p.q[0].size(); ++c) p.scores[i][j] += p.q[i][c] * p.k[j][c];
    p.scaled = p.scores;
    if (mode != "plain")
        for (auto& row : p.scaled)
            for (double& v : row) v /= std::sqrt(static_cast<double>(p.q[0].size()));
    p.masked = p.scaled;
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j)
            if ((mode == "causal" && j > i) || tokens[j] == "<pad>") p.masked[i][j] = minus_infinity;
    p.weights = p.masked;
    softmax_rows(p.weights);
    p.by_sum = p.masked;
    for (auto& row : p.by_sum) {
        double total = 0;
        for (double& v : row) total += v = v == minus_infinity ? 0 : v;
        for (double& v : row) v /= total;
    }
    p.context = times(p.weights, p.v);
    return p;
}

// The value a question of the JSON report asks for, worked out here; −∞ for a hidden score.
double naive_value(const json& q) {
    const int head = q["head"].is_null() ? 0 : q["head"].get<int>();
    const Pass p = naive_pass(q["example"], q["mode"], head);
    const auto row = q["row"].get<std::size_t>() - 1;
    const std::string kind = q["kind"];
    if (kind == "row_sum") {
        double total = 0;
        for (const double w : p.weights[row]) total += w;
        return total;
    }
    const auto col = q["col"].get<std::size_t>() - 1;
    if (kind == "tanh_feature") {
        const auto a = q["entry"].get<std::size_t>() - 1;
        return std::tanh(p.pd[row][a] + p.pe[col][a]);
    }
    const std::string stage = q["stage"];
    const std::map<std::string, const Grid*> stages{{"queries", &p.q},       {"keys", &p.k},       {"values", &p.v},
                                                    {"scores", &p.scores},   {"scaled", &p.scaled}, {"masked", &p.masked},
                                                    {"weights", &p.weights}, {"context", &p.context}, {"output", &p.output}};
    return (*stages.at(stage))[row][col];
}

// A learner's line for `value`: six decimals, or -inf.
std::string written(double value, int decimals = 6) {
    return value == minus_infinity ? "-inf" : fmt::format("{:.{}f}", value, decimals);
}

// The questions of a run, without answers (every round unanswered): the JSON report.
json questions(const std::vector<std::string>& options) {
    std::vector<std::string> args{"quiz", "-f", "json", "--answers", "/dev/null"};
    args.insert(args.end(), options.begin(), options.end());
    const auto r = cli::run(args);
    INFO(r.err);
    REQUIRE(r.exit_code == 1);  // nothing answered
    return json::parse(r.out)["questions"];
}

cli::Result quiz_with(const std::vector<std::string>& options, const std::vector<std::string>& answers,
                      bool json_format = false) {
    const cli::TempFile file(fmt::format("{}\n", fmt::join(answers, "\n")), "answers.txt");
    std::vector<std::string> args{"quiz", "--answers", file.path()};
    if (json_format) args.insert(args.end(), {"-f", "json"});
    args.insert(args.end(), options.begin(), options.end());
    return cli::run(args, "", {{"NO_COLOR", "1"}, {"COLUMNS", ""}});
}

// The examples and modes whose numbers this file can work out (the input's own weights).
const std::vector<std::vector<std::string>> checked_runs{
    {"--example", "your_journey", "--mode", "plain"}, {"--example", "journey_padded", "--mode", "plain"},
    {"--example", "two_heads", "--mode", "self"},     {"--example", "two_heads", "--mode", "causal"},
    {"--example", "black_cat_fr"},                    {"--example", "padded_cat_fr"}};

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

}  // namespace

TEST_CASE("quiz asks for values that plain loops over the examples give, and grades them right", "[quiz]") {
    std::set<std::string> kinds;
    for (const auto& run : checked_runs) {
        const std::vector<std::string> options = with(run, {"--rounds", "12", "--seed", "5"});
        const json asked = questions(options);
        REQUIRE(asked.size() == 12);
        std::vector<std::string> answers;
        for (const json& q : asked) {
            INFO(q.dump());
            const double value = naive_value(q);
            if (value == minus_infinity) CHECK(q["expected"].is_null());
            else CHECK(q["expected"].get<double>() == Approx(value).margin(1e-12));
            answers.push_back(written(value));
            kinds.insert(q["kind"].get<std::string>());
        }
        const auto r = quiz_with(options, answers);
        INFO(r.out << r.err);
        CHECK(r.exit_code == 0);
        CHECK_THAT(r.out, Contains("\nscore: 12 of 12 right\n"));
        CHECK(r.err.empty());
    }
    // Every kind of question of the issue came up: a dot product, a scaled score, a masked entry, a
    // weight, a row sum, a context entry, Bahdanau's tanh feature, a head's slice and an output entry.
    CHECK(kinds == std::set<std::string>{"score", "scaled_score", "masked_entry", "weight", "row_sum", "context_entry",
                                         "tanh_feature", "projection_entry", "output_entry"});
}

TEST_CASE("quiz names the known mistake that gives a wrong number, and works the entry through", "[quiz]") {
    // A weight of plain mode computed by dividing each score by its row's sum.
    const std::vector<std::string> options{"--example", "your_journey", "--mode", "plain", "--stage", "weights",
                                           "--rounds", "4"};
    const json asked = questions(options);
    std::vector<std::string> answers;
    std::size_t weights = 0;
    for (const json& q : asked) {
        const Pass p = naive_pass("your_journey", "plain", 0);
        if (q["kind"] == "weight") {
            answers.push_back(written(p.by_sum[q["row"].get<std::size_t>() - 1][q["col"].get<std::size_t>() - 1], 4));
            ++weights;
        } else {
            answers.push_back("1");  // a row sum: exactly 1, so a whole number is right
        }
    }
    REQUIRE(weights > 0);
    const auto r = quiz_with(options, answers, true);
    REQUIRE(r.exit_code == 1);
    const json report = json::parse(r.out);
    for (const json& q : report["questions"]) {
        INFO(q.dump());
        if (q["kind"] == "weight") {
            CHECK(q["verdict"] == "wrong");
            CHECK(q["mistake"]["name"] == "sum_instead_of_softmax");
        } else {
            CHECK(q["verdict"] == "right");
        }
    }
    CHECK(report["score"]["wrong"] == weights);
    const auto text = quiz_with(options, answers);
    CHECK_THAT(text.out, Contains("hint (sum_instead_of_softmax): "));
    CHECK_THAT(text.out, Contains("softmax: e^s of each score, divided by their sum"));

    // A scaled score of two_heads not divided by √d_head.
    const json scaled = questions({"--example", "two_heads", "--mode", "causal", "--stage", "scaled", "--rounds", "1"});
    const int head = scaled[0]["head"];
    const Pass p = naive_pass("two_heads", "causal", head);
    const auto i = scaled[0]["row"].get<std::size_t>() - 1, j = scaled[0]["col"].get<std::size_t>() - 1;
    REQUIRE(p.scores[i][j] != p.scaled[i][j]);
    const auto unscaled = quiz_with({"--example", "two_heads", "--mode", "causal", "--stage", "scaled", "--rounds", "1"},
                                    {written(p.scores[i][j])}, true);
    CHECK(json::parse(unscaled.out)["questions"][0]["mistake"]["name"] == "no_scaling");
}

TEST_CASE("quiz takes -inf, masked and −∞ for a hidden score, and a fill as the finite_fill mistake", "[quiz]") {
    // A masked entry that the causal mask hides: the first seed that asks one.
    std::vector<std::string> options;
    for (int seed = 1; seed < 200 && options.empty(); ++seed) {
        const std::vector<std::string> candidate{"--example", "two_heads", "--mode", "causal", "--stage", "masked",
                                                 "--rounds", "1", "--seed", std::to_string(seed)};
        const json q = questions(candidate)[0];
        if (q["col"].get<int>() > q["row"].get<int>()) options = candidate;  // key after the query
    }
    REQUIRE(!options.empty());
    for (const char* marker : {"-inf", "masked", "−∞", "MASKED"}) {
        INFO(marker);
        const auto r = quiz_with(options, {marker});
        CHECK(r.exit_code == 0);
        CHECK_THAT(r.out, Contains("right: the value is −∞ (masked)"));
    }
    const auto fill = quiz_with(options, {"-1e9"}, true);
    CHECK(fill.exit_code == 1);
    CHECK(json::parse(fill.out)["questions"][0]["mistake"]["name"] == "finite_fill");
}

TEST_CASE("quiz checks an answer to the decimals it is written with, and wants at least two", "[quiz]") {
    const std::vector<std::string> options{"--example", "your_journey", "--mode", "plain", "--stage", "scores",
                                           "--rounds", "1", "--seed", "2"};
    const json q = questions(options)[0];
    const double value = naive_value(q);  // a dot product of numbers of two decimals: four decimals at most
    const auto grade = [&](const std::string& answer) {
        const auto r = quiz_with(options, {answer}, true);
        return json::parse(r.out)["questions"][0];
    };
    CHECK(grade(fmt::format("{:.4f}", value))["verdict"] == "right");
    CHECK(grade(fmt::format("{:.2f}", value))["verdict"] == "right");
    CHECK(grade(fmt::format("{:.2f}", value))["tolerance"].get<double>() == Approx(0.005));
    CHECK(grade(fmt::format("{:.4f}", value))["tolerance"].get<double>() == Approx(0.00005));
    CHECK(grade(fmt::format("{:.4f}", value + 0.0003))["verdict"] == "wrong");
    CHECK(grade(fmt::format("{:.3f}", value + 0.0003))["verdict"] == "wrong");
    // Fewer than two decimals: right only when it is the value itself.
    CHECK(std::round(value) != value);
    const auto coarse = quiz_with(options, {fmt::format("{:.0f}", value)});
    CHECK(coarse.exit_code == 1);
    CHECK_THAT(coarse.out, Contains("but an answer needs at least 2 unless it is the value itself"));
    // "?" and an empty line skip; a line that is not a number is wrong (in a file: no one to ask again).
    CHECK(grade("?")["verdict"] == "skipped");
    CHECK(grade("")["verdict"] == "skipped");
    CHECK(grade("abc")["verdict"] == "wrong");
    CHECK(grade("nan")["verdict"] == "wrong");
    CHECK(grade(fmt::format("+{:.4f}", value))["verdict"] == "right");
    // A number beyond a double is a number still, said so; one below the smallest is as good as 0.
    for (const char* huge : {"1e309", "-1e309"}) {
        CHECK(grade(huge)["verdict"] == "wrong");
        const auto said = quiz_with(options, {huge});
        CHECK_THAT(said.out, Contains(fmt::format("wrong: {} is beyond the numbers a double holds (up to about ±1.8e308)", huge)));
        CHECK(said.out.find("is not a number") == std::string::npos);
    }
    REQUIRE(std::fabs(value) > 0.01);
    const auto tiny = quiz_with(options, {"1e-400"});
    CHECK_THAT(tiny.out, Contains("not 1e-400 (") && Contains("330 decimals alone would allow ±5e-331)"));
    CHECK(tiny.out.find("is not a number") == std::string::npos);
}

TEST_CASE("quiz is the same for the same seed, says the seed, and differs for another", "[quiz]") {
    const auto a = cli::run({"quiz", "--answers", "/dev/null", "--rounds", "8"});
    const auto b = cli::run({"quiz", "--answers", "/dev/null", "--rounds", "8", "--seed", "1"});
    CHECK(a.out == b.out);
    CHECK_THAT(a.out, Contains("attntrace quiz · 8 rounds · seed 1 (the same options with --seed 1 ask the same questions)"));
    const json one = questions({"--rounds", "8"}), two = questions({"--rounds", "8", "--seed", "2"});
    CHECK(one != two);
    // Eight rounds of the default examples: no question twice.
    for (std::size_t i = 0; i < one.size(); ++i)
        for (std::size_t k = i + 1; k < one.size(); ++k) {
            json x = one[i], y = one[k];
            x.erase("round"), y.erase("round");
            CHECK(x != y);
        }
    // --mode and --stage narrow the draw.
    for (const json& q : questions({"--mode", "causal,bahdanau", "--stage", "weights,context", "--rounds", "10"})) {
        CHECK((q["mode"] == "causal" || q["mode"] == "bahdanau"));
        CHECK((q["stage"] == "weights" || q["stage"] == "context"));
    }
}

TEST_CASE("quiz shows the trace up to the asked stage with the asked entry hidden", "[quiz]") {
    // A context entry of plain mode: the weights are shown whole, the context without its entry.
    const std::vector<std::string> options{"--example", "your_journey", "--mode", "plain", "--stage", "context",
                                           "--rounds", "1", "--answers", "/dev/null"};
    const json q = questions({"--example", "your_journey", "--mode", "plain", "--stage", "context", "--rounds", "1"})[0];
    const auto r = cli::run(with({"quiz"}, options), "", {{"NO_COLOR", "1"}, {"COLUMNS", ""}});
    CHECK_THAT(r.out, Contains("round 1 of 1 · example:your_journey · plain mode"));
    CHECK_THAT(r.out, Contains("\nweights · 6×6 · "));
    const std::string context = r.out.substr(r.out.find("\ncontext · 6×3") + 1);
    const auto row = q["row"].get<std::size_t>();
    // The asked row, in the context table: its token, then its three entries, one of them "?".
    std::istringstream lines(context);
    std::string line;
    for (std::size_t k = 0; k < 3 + row; ++k) std::getline(lines, line);
    INFO(context);
    CHECK(line.rfind(q["row_token"].get<std::string>(), 0) == 0);
    CHECK(std::count(line.begin(), line.end(), '?') == 1);
    CHECK(std::count(context.begin(), context.end(), '?') == 2);  // and in the question
    // A weight: its whole row is hidden, its sum and strongest key with it.
    const auto w = cli::run({"quiz", "--example", "your_journey", "--mode", "plain", "--stage", "weights", "--rounds", "1",
                             "--answers", "/dev/null", "--seed", "3"});
    const json wq = questions({"--example", "your_journey", "--mode", "plain", "--stage", "weights", "--rounds", "1",
                               "--seed", "3"})[0];
    std::istringstream weight_lines(w.out.substr(w.out.find("\nweights · 6×6") + 1));
    for (std::size_t k = 0; k < 3 + wq["row"].get<std::size_t>(); ++k) std::getline(weight_lines, line);
    INFO(w.out);
    CHECK(line.rfind(wq["row_token"].get<std::string>(), 0) == 0);
    if (wq["kind"] == "weight") {
        CHECK(std::count(line.begin(), line.end(), '?') == 8);  // six weights, Σ and the strongest key
    } else {  // a row sum: no row's Σ is shown at all
        REQUIRE(wq["kind"] == "row_sum");
        CHECK(std::count(line.begin(), line.end(), '?') == 7);
        CHECK(w.out.find("  Σ  ") == std::string::npos);
    }
    CHECK(w.out.find("\ncontext · ") == std::string::npos);  // nothing after the asked stage
}

TEST_CASE("quiz typed at a terminal: the questions come one at a time, a line that is no number is asked again",
          "[quiz][terminal]") {
    const std::vector<std::string> options{"--example", "your_journey", "--mode", "plain", "--rounds", "3", "--seed", "3"};
    const json asked = questions(options);
    std::vector<std::string> right;
    for (const json& q : asked) right.push_back(written(naive_value(q), 4));
    const auto r = cli::run_typing_in_terminal(with({"quiz"}, options), "your answer: ",
                                               {"0,25", right[0], right[1], "?"}, {{"NO_COLOR", "1"}});
    std::string screen = r.out;
    for (std::size_t at; (at = screen.find("\r\n")) != std::string::npos;) screen.replace(at, 2, "\n");
    INFO(screen);
    CHECK(r.exit_code == 1);  // one skipped
    // Each answer follows its question: typed after the prompt, echoed by the terminal.
    const std::size_t first = screen.find("question 1: ");
    REQUIRE(first != std::string::npos);
    const std::size_t again = screen.find("your answer: 0,25\n\"0,25\" is not a number: type one such as 0.25", first);
    CHECK(again != std::string::npos);
    CHECK(screen.find("your answer: " + right[0] + "\nright: the value is ", again) != std::string::npos);
    CHECK(screen.find("question 2: ") > screen.find("your answer: " + right[0]));
    CHECK(screen.find("your answer: " + right[1] + "\nright: ") > screen.find("question 2: "));
    CHECK(screen.find("your answer: ?\nskipped: the value is ") > screen.find("question 3: "));
    CHECK_THAT(screen, Contains("\nscore: 2 of 3 right (1 skipped)\n"));

    // Ctrl-D ends the quiz with the score so far.
    const auto ended = cli::run_typing_in_terminal(with({"quiz"}, options), "your answer: ", {right[0], "\x04"},
                                                   {{"NO_COLOR", "1"}});
    CHECK(ended.exit_code == 1);
    CHECK_THAT(ended.out, Contains("no answer: the answers ended, so the quiz stops after 1 of 3 rounds"));
    CHECK_THAT(ended.out, Contains("score: 1 of 3 right (2 not answered)"));
    CHECK(ended.out.find("question 3: ") == std::string::npos);

    // Every answer right: exit 0. In colour, a hidden entry is not shaded (its shade would tell).
    std::vector<std::string> all = right;
    const auto pass =
        cli::run_typing_in_terminal(with({"quiz"}, options), "your answer: ", all, {{"NO_COLOR", ""}, {"TERM", "xterm"}});
    CHECK(pass.exit_code == 0);
    CHECK_THAT(pass.out, Contains("\x1b[48;5;"));
    CHECK_THAT(pass.out, Contains("?"));
    CHECK(!std::regex_search(pass.out, std::regex("\x1b\\[38;5;[0-9]+m *\\?\x1b\\[0m")));

    // -f json wants answers from a file or a pipe.
    const auto json_typed = cli::run_typing_in_terminal({"quiz", "-f", "json"}, "your answer: ", {});
    CHECK(json_typed.exit_code == 2);
    CHECK_THAT(json_typed.out, Contains("attntrace: error: quiz -f json is for course tooling"));
}

TEST_CASE("quiz reads answers from a pipe and ends early with the score when they run out", "[quiz]") {
    const std::vector<std::string> options{"--example", "black_cat_fr", "--rounds", "3", "--seed", "4"};
    const json asked = questions(options);
    const auto r = cli::run(with({"quiz"}, options), written(naive_value(asked[0])) + "\n", {{"NO_COLOR", "1"}});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.out, Contains("your answer: " + written(naive_value(asked[0])) + "\nright: "));
    CHECK_THAT(r.out, Contains("no answer: the answers ended, so the quiz stops after 1 of 3 rounds\n\nscore: 1 of 3 right (2 not answered)\n"));
}

TEST_CASE("quiz refuses bad choices and bad answers files with one error line", "[quiz][errors]") {
    const auto refused = [](const std::vector<std::string>& args, int code, const std::string& message) {
        cli::require_error_line(cli::run(args), code, message);
    };
    refused({"quiz", "--mode", "plain", "--stage", "scaled"}, 2, "no question fits");
    refused({"quiz", "--example", "black_cat_fr", "--mode", "causal"}, 2, "black_cat_fr cannot be traced in mode causal");
    refused({"quiz", "--example", "nope"}, 2, "\"nope\" is not one of");
    refused({"quiz", "--stage", "parameters"}, 2, "\"parameters\" is not one of");
    refused({"quiz", "--rounds", "0"}, 2, "--rounds");
    refused({"quiz", "--answers", "/nonexistent/answers.txt"}, 1, "cannot read /nonexistent/answers.txt");
}

TEST_CASE("quiz refuses an answers file beyond its limit without naming an option it does not take", "[quiz][errors]") {
    // A sparse file of 1 GiB and one byte: beyond the 1 GiB quiz reads, and quiz has no --max-input.
    const cli::TempFile big("", "answers.txt");
    std::filesystem::resize_file(big.path(), (std::uintmax_t{1} << 30) + 1);
    const auto r = cli::run({"quiz", "--answers", big.path()});
    cli::require_error_line(r, 1, big.path() + ": input larger than 1073741824 bytes, the largest answers file quiz reads\n");
    CHECK_THAT(r.err, !Catch::Contains("--max-input"));
    CHECK_THAT(cli::run({"quiz", "--max-input", "2G"}).err, Catch::Contains("--max-input"));  // an unknown option
}
