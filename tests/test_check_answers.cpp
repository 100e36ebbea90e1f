// attntrace check-answers: a learner's numbers against the trace. Each known mistake is made
// here, by a naive pipeline of plain loops written for this test, and the answers it gives must
// be diagnosed as that mistake; right answers (the equivalent way of masking among them) pass.
#include "support/cli.hpp"
#include "support/limited.hpp"
#include "support/naive.hpp"

#include "support/catch.hpp"
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

using Catch::Contains;
using nlohmann::json;
using namespace naive;

namespace {

constexpr double minus_infinity = -std::numeric_limits<double>::infinity();

// Five tokens of six numbers, W_q, W_k, W_v of 6 × 6 from the test's own generator.
struct Fixture {
    Grid x, w_q, w_k, w_v;
    int heads = 1;
    bool causal = true;
    bool sum = false;  // --normalize sum

    // `positive`: every number's magnitude, so that every score is positive (rows that can be
    // divided by their sum).
    explicit Fixture(int h, bool positive = false) : heads(h) {
        Lcg lcg{11};
        for (Grid* g : {&x, &w_q, &w_k, &w_v}) {
            *g = lcg.grid(g == &x ? 5 : 6, 6);
            if (positive)
                for (auto& row : *g)
                    for (double& v : row) v = std::fabs(v);
        }
    }

    static std::string grid_text(const Grid& g) {
        std::vector<std::string> rows;
        for (const auto& row : g) rows.push_back(fmt::format("[{:.17g}]", fmt::join(row, ", ")));
        return fmt::format("[{}]", fmt::join(rows, ", "));
    }
    std::string input() const {
        return fmt::format(R"({{"sentence": "a b c d e", "embeddings": {}, "heads": {},
            "weights": {{"query": {}, "key": {}, "value": {}}}}})",
                           grid_text(x), heads, grid_text(w_q), grid_text(w_k), grid_text(w_v));
    }
    std::vector<std::string> options() const {
        std::vector<std::string> o{"-m", causal ? "causal" : "self"};
        if (sum) o.insert(o.end(), {"--normalize", "sum"});
        return o;
    }
};

Grid transpose(const Grid& a) {
    Grid t(a[0].size(), std::vector<double>(a.size()));
    for (std::size_t i = 0; i < a.size(); ++i)
        for (std::size_t j = 0; j < a[0].size(); ++j) t[j][i] = a[i][j];
    return t;
}

// Head h's block of columns, or, the wrong way, the matrix read row by row and cut in pieces.
Grid split(const Grid& full, std::size_t h, std::size_t width, bool by_rows) {
    if (!by_rows) return columns(full, h * width, width);
    std::vector<double> flat;
    for (const auto& row : full) flat.insert(flat.end(), row.begin(), row.end());
    Grid out(full.size(), std::vector<double>(width));
    for (std::size_t i = 0; i < full.size(); ++i)
        for (std::size_t c = 0; c < width; ++c) out[i][c] = flat[h * full.size() * width + i * width + c];
    return out;
}

struct Stages {
    Grid scores, scaled, masked, weights, context;
};

// Head `head` (1-based) of the fixture, with `mistake` made ("" for none).
Stages naive_run(const Fixture& f, int head, const std::string& mistake, double fill = 0) {
    const std::size_t n = f.x.size(), d_head = 6 / static_cast<std::size_t>(f.heads);
    const auto w = [&](const Grid& m, const char* name) { return mistake == name ? transpose(m) : m; };
    const bool by_rows = mistake == "wrong_head_split";
    const auto h = static_cast<std::size_t>(head - 1);
    const Grid q = split(times(f.x, w(f.w_q, "transposed_w_q")), h, d_head, by_rows);
    const Grid k = split(times(f.x, w(f.w_k, "transposed_w_k")), h, d_head, by_rows);
    const Grid v = split(times(f.x, w(f.w_v, "transposed_w_v")), h, d_head, by_rows);
    Stages s;
    s.scores.assign(n, std::vector<double>(n, 0));
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j)
            for (std::size_t c = 0; c < d_head; ++c)
                s.scores[i][j] += mistake == "keys_times_queries" ? k[i][c] * q[j][c] : q[i][c] * k[j][c];
    double divisor = std::sqrt(static_cast<double>(d_head));
    if (mistake == "no_scaling") divisor = 1;
    if (mistake == "sqrt_d_model") divisor = std::sqrt(6.0);
    if (mistake == "divided_by_d_k") divisor = static_cast<double>(d_head);
    s.scaled = s.scores;
    for (auto& row : s.scaled)
        for (double& x : row) x /= divisor;
    const bool after = mistake == "mask_after_softmax" || mistake == "renormalised_after_softmax";
    s.masked = s.scaled;
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = i + 1; j < n; ++j)
            if (f.causal && !after) s.masked[i][j] = mistake == "finite_fill" ? fill : minus_infinity;
    const bool use_softmax = mistake == "sum_instead_of_softmax" ? false : (mistake == "softmax_instead_of_sum" ? true : !f.sum);
    Grid a = s.masked;
    if (mistake == "softmax_over_columns") a = transpose(a);
    for (auto& row : a) {
        double total = 0, max = minus_infinity;
        for (double x : row) max = std::max(max, x);
        for (double& x : row) {
            x = use_softmax ? std::exp(x - max) : (x == minus_infinity ? 0 : x);
            total += x;
        }
        for (double& x : row) x /= total;
    }
    if (mistake == "softmax_over_columns") a = transpose(a);
    if (after)
        for (std::size_t i = 0; i < n; ++i) {
            double total = 0;
            for (std::size_t j = 0; j < n; ++j) {
                if (j > i) a[i][j] = 0;
                total += a[i][j];
            }
            if (mistake == "renormalised_after_softmax")
                for (double& x : a[i]) x /= total;
        }
    s.weights = a;
    Grid mix = a;
    if (mistake == "context_from_scores")
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < n; ++j) mix[i][j] = s.masked[i][j] == minus_infinity ? 0 : s.masked[i][j];
    s.context = times(mix, mistake == "context_from_inputs" ? f.x : v);
    return s;
}

// A matrix as a learner writes it: six decimals, hidden entries as "-inf".
std::string answer_text(const Grid& g, int decimals = 6) {
    std::vector<std::string> rows;
    for (const auto& row : g) {
        std::vector<std::string> cells;
        for (double x : row) cells.push_back(x == minus_infinity ? "\"-inf\"" : fmt::format("{:.{}f}", x, decimals));
        rows.push_back(fmt::format("[{}]", fmt::join(cells, ", ")));
    }
    return fmt::format("[{}]", fmt::join(rows, ", "));
}

struct Checked {
    cli::Result result;
    json doc;
};

Checked check(const Fixture& f, const std::string& answers, const std::vector<std::string>& extra = {"-f", "json"}) {
    cli::TempDir dir;
    std::ofstream(dir / "input.json") << f.input();
    std::ofstream(dir / "answers.json") << answers;
    std::vector<std::string> args{"check-answers", dir / "input.json", dir / "answers.json"};
    for (const auto& o : f.options()) args.push_back(o);
    args.insert(args.end(), extra.begin(), extra.end());
    Checked c{cli::run(args), {}};
    INFO(c.result.err);
    if (!extra.empty() && extra[0] == "-f" && c.result.exit_code <= 1) c.doc = json::parse(c.result.out);
    return c;
}

// The answers for one stage of head `head`, where the run has that many heads.
std::string stage_answer(const Fixture& f, int head, const std::string& stage, const Grid& g) {
    if (f.heads == 1) return fmt::format(R"({{"{}": {}}})", stage, answer_text(g));
    return fmt::format(R"({{"heads": {{"{}": {{"{}": {}}}}}}})", head, stage, answer_text(g));
}

const Grid& pick(const Stages& s, const std::string& stage) {
    if (stage == "scores") return s.scores;
    if (stage == "scaled") return s.scaled;
    if (stage == "masked") return s.masked;
    if (stage == "weights") return s.weights;
    return s.context;
}

void require_diagnosis(Fixture f, int head, const std::string& stage, const std::string& mistake, double fill = 0) {
    INFO(mistake << " at " << stage << ", head " << head << " of " << f.heads);
    const Checked c = check(f, stage_answer(f, head, stage, pick(naive_run(f, head, mistake, fill), stage)));
    REQUIRE(c.result.exit_code == 1);
    CHECK(c.result.err.empty());
    const json& s = c.doc.at("stages").at(0);
    CHECK(c.doc.at("verdict") == "fail");
    CHECK(s.at("name") == stage);
    CHECK(s.at("agree") == false);
    REQUIRE(s.at("diagnosis").is_object());
    CHECK(s.at("diagnosis").at("mistake") == mistake);
}

}  // namespace

TEST_CASE("check-answers passes every stage of right answers with several heads", "[check-answers]") {
    Fixture f(2);
    std::vector<std::string> heads;
    for (int h = 1; h <= 2; ++h) {
        const Stages s = naive_run(f, h, "");
        heads.push_back(fmt::format(R"("{}": {{"scores": {}, "scaled": {}, "masked": {}, "weights": {}, "context": {}}})", h,
                                    answer_text(s.scores), answer_text(s.scaled), answer_text(s.masked),
                                    answer_text(s.weights), answer_text(s.context)));
    }
    const Checked c = check(f, fmt::format(R"({{"heads": {{{}}}}})", fmt::join(heads, ", ")));
    REQUIRE(c.result.exit_code == 0);
    CHECK(c.doc.at("verdict") == "pass");
    REQUIRE(c.doc.at("stages").size() == 10);
    for (const auto& s : c.doc.at("stages")) {
        CHECK(s.at("agree") == true);
        CHECK(s.at("checked") == (s.at("name") == "context" ? 15 : 25));  // 5 × 5, and 5 × d_head
    }
    // Pipeline order: head 1's five stages, then head 2's.
    CHECK(c.doc.at("stages").at(0).at("name") == "scores");
    CHECK(c.doc.at("stages").at(4).at("name") == "context");
    CHECK(c.doc.at("stages").at(5).at("head") == 2);
}

TEST_CASE("check-answers accepts masking after softmax with the rows divided again and says it is equivalent",
          "[check-answers]") {
    Fixture f(2);
    const Checked c = check(f, stage_answer(f, 1, "weights", naive_run(f, 1, "renormalised_after_softmax").weights));
    REQUIRE(c.result.exit_code == 0);
    CHECK(c.doc.at("stages").at(0).at("equivalent_masking") == true);
    const Checked text = check(f, stage_answer(f, 1, "weights", naive_run(f, 1, "renormalised_after_softmax").weights), {});
    CHECK(text.result.exit_code == 0);
    CHECK_THAT(text.result.out, Contains("it is equivalent to hiding the scores before the softmax"));
    CHECK_THAT(text.result.out, Contains("verdict: pass"));
}

TEST_CASE("check-answers names each known mistake of one head from the numbers it produces", "[check-answers]") {
    Fixture f(1);
    require_diagnosis(f, 1, "scores", "transposed_w_q");
    require_diagnosis(f, 1, "scores", "transposed_w_k");
    require_diagnosis(f, 1, "context", "transposed_w_v");
    require_diagnosis(f, 1, "scores", "keys_times_queries");
    require_diagnosis(f, 1, "scaled", "no_scaling");
    require_diagnosis(f, 1, "scaled", "divided_by_d_k");
    require_diagnosis(f, 1, "weights", "no_scaling");  // found from the weights alone too
    require_diagnosis(f, 1, "weights", "finite_fill", 0);
    require_diagnosis(f, 1, "weights", "finite_fill", -1);
    require_diagnosis(f, 1, "weights", "mask_after_softmax");
    require_diagnosis(f, 1, "weights", "softmax_over_columns");
    require_diagnosis(f, 1, "weights", "sum_instead_of_softmax");
    require_diagnosis(f, 1, "context", "context_from_scores");
    require_diagnosis(f, 1, "context", "context_from_inputs");
    Fixture summed(1, true);
    summed.sum = true;
    require_diagnosis(summed, 1, "weights", "softmax_instead_of_sum");
}

TEST_CASE("check-answers names the mistakes of several heads", "[check-answers]") {
    Fixture f(2);
    require_diagnosis(f, 1, "scaled", "sqrt_d_model");
    require_diagnosis(f, 2, "scaled", "sqrt_d_model");
    require_diagnosis(f, 2, "scaled", "divided_by_d_k");
    require_diagnosis(f, 1, "scores", "wrong_head_split");
    require_diagnosis(f, 2, "weights", "wrong_head_split");
    require_diagnosis(f, 2, "scores", "transposed_w_q");
    require_diagnosis(f, 1, "weights", "softmax_over_columns");
}

TEST_CASE("check-answers reads a single row and a single cell counted from 1", "[check-answers]") {
    Fixture f(1);
    const Grid wrong = naive_run(f, 1, "softmax_over_columns").weights;
    const Checked row = check(f, fmt::format(R"({{"weights": {{"row": 3, "values": [{:.6f}, {:.6f}, {:.6f}, 0, 0]}}}})",
                                             wrong[2][0], wrong[2][1], wrong[2][2]));
    REQUIRE(row.result.exit_code == 1);
    const json& s = row.doc.at("stages").at(0);
    CHECK(s.at("checked") == 5);
    CHECK(s.at("first_difference").at("row") == 3);
    CHECK(s.at("diagnosis").at("mistake") == "softmax_over_columns");
    const Grid right = naive_run(f, 1, "").weights;
    const Checked cell = check(f, fmt::format(R"({{"weights": {{"cell": [4, 2], "value": {:.4f}}}}})", right[3][1]));
    CHECK(cell.result.exit_code == 0);
    CHECK(cell.doc.at("stages").at(0).at("checked") == 1);
}

TEST_CASE("check-answers takes the tolerance from the decimals each number is written with", "[check-answers]") {
    Fixture f(1);
    const double w = naive_run(f, 1, "").weights[4][1];
    // Four decimals: within ±5e-5 of the right value passes, 1.2e-4 away fails.
    const auto with = [&](double value, int decimals) {
        return check(f, fmt::format(R"({{"weights": {{"cell": [5, 2], "value": {:.{}f}}}}})", value, decimals))
            .result.exit_code;
    };
    CHECK(with(w, 4) == 0);
    CHECK(with(w + 1.2e-4, 4) == 1);
    CHECK(with(w + 1.2e-4, 2) == 0);  // two decimals: ±5e-3
    // An exponent counts: 2.5e-3 has four decimals.
    const Checked c = check(f, fmt::format(R"({{"weights": {{"cell": [5, 2], "value": {:.3e}}}}})", w + 1e-3));
    REQUIRE(c.result.exit_code == 1);
    const double tolerance = c.doc.at("stages").at(0).at("first_difference").at("tolerance");
    CHECK(tolerance == Approx(0.5 * std::pow(10.0, -(3 - static_cast<int>(std::floor(std::log10(w)))))));
}

TEST_CASE("check-answers without a matching mistake says so and works the row through", "[check-answers]") {
    Fixture f(1);
    Grid s = naive_run(f, 1, "").scores;
    s[1][0] += 0.25;
    const Checked c = check(f, fmt::format(R"({{"scores": {}}})", answer_text(s)), {});
    REQUIRE(c.result.exit_code == 1);
    CHECK_THAT(c.result.out, Contains("scores: differs at row 2 (b), column 1 (a)"));
    CHECK_THAT(c.result.out, Contains("No known mistake reproduces these numbers. Row 2 worked through:"));
    CHECK_THAT(c.result.out, Contains("verdict: fail (0 of 1 stage agree)"));
    const Checked j = check(f, fmt::format(R"({{"scores": {}}})", answer_text(s)));
    CHECK(j.doc.at("stages").at(0).at("diagnosis").is_null());
    CHECK(j.doc.at("stages").at(0).at("first_difference").at("expected").get<double>() ==
          Approx(s[1][0] - 0.25).margin(1e-12));
}

TEST_CASE("check-answers reads the tidy CSV that --format csv --tidy writes", "[check-answers]") {
    Fixture f(2);
    cli::TempDir dir;
    std::ofstream(dir / "input.json") << f.input();
    const auto csv = cli::run({dir / "input.json", "-m", "causal", "-f", "csv", "--tidy", "-s", "scores,weights"});
    REQUIRE(csv.exit_code == 0);
    std::ofstream(dir / "answers.csv") << csv.out;
    const auto c = cli::run({"check-answers", dir / "input.json", dir / "answers.csv", "-m", "causal", "-f", "json"});
    REQUIRE(c.exit_code == 0);
    CHECK(json::parse(c.out).at("stages").size() == 4);
    // A wrong cell in it is found.
    std::string changed = csv.out;
    const std::size_t at = changed.find("weights,1,1,0,");
    REQUIRE(at != std::string::npos);
    std::size_t value = at;  // after the sixth comma: stage,head,row,col,row_token,col_token,
    for (int comma = 0; comma < 6; ++comma) value = changed.find(',', value) + 1;
    changed.replace(value, changed.find(',', value) - value, "0.123");
    std::ofstream(dir / "wrong.csv") << changed;
    const auto w = cli::run({"check-answers", dir / "input.json", dir / "wrong.csv", "-m", "causal"});
    CHECK(w.exit_code == 1);
    CHECK_THAT(w.out, Contains("weights (head 1): differs at row 2 (b), column 1 (a)"));
}

TEST_CASE("check-answers refuses bad answers with one error line and nothing on stdout", "[check-answers]") {
    Fixture f(2);
    for (const std::string& bad : {std::string(R"({"weights": [[1, 2]]})"), std::string(R"({"weights": )"),
                                   std::string(R"({"attention": [[1]]})"), std::string(R"({"heads": {"3": {"scores": [[1]]}}})"),
                                   std::string(R"({"heads": {"1": {"weights": {"cell": [9, 1], "value": 0.5}}}})")}) {
        INFO(bad);
        const Checked c = check(f, bad, {});
        CHECK(c.result.exit_code == 1);
        CHECK(c.result.out.empty());
        CHECK(c.result.err.starts_with("attntrace: error: "));
        CHECK(std::count(c.result.err.begin(), c.result.err.end(), '\n') == 1);
    }
    const auto usage = cli::run({"check-answers", "example:teacher_smiled"});
    CHECK(usage.exit_code == 2);
    CHECK(usage.out.empty());
}

TEST_CASE("check-answers tries the one fill a learner wrote in the hidden scores, and not every number written there",
          "[check-answers]") {
    Fixture f(1);
    // The hidden scores set to -5, a fill of the learner's own: named, with that number.
    const Stages filled = naive_run(f, 1, "finite_fill", -5);
    const Checked c = check(f, fmt::format(R"({{"masked": {}, "weights": {}}})", answer_text(filled.masked),
                                           answer_text(filled.weights)),
                            {});
    REQUIRE(c.result.exit_code == 1);
    CHECK_THAT(c.result.out, Contains("masked: differs at row 1 (a), column 2 (b): expected hidden (−∞), given -5.000000\n"));
    CHECK_THAT(c.result.out, Contains("Likely cause (finite_fill), reproducing all 25 numbers given: the hidden scores "
                                      "were set to -5 instead of −∞"));
    CHECK_THAT(c.result.out, Contains("weights: differs at row 1 (a), column 1 (a)"));
    // Different numbers in every hidden cell are no fill: nothing is named, the row is worked through.
    Grid scattered = filled.masked;
    for (std::size_t i = 0; i < scattered.size(); ++i)
        for (std::size_t j = i + 1; j < scattered.size(); ++j) scattered[i][j] = -5.0 - static_cast<double>(i * 5 + j);
    const Checked none = check(f, fmt::format(R"({{"masked": {}}})", answer_text(scattered)));
    REQUIRE(none.result.exit_code == 1);
    CHECK(none.doc.at("stages").at(0).at("diagnosis").is_null());
}

TEST_CASE("check-answers of a masked stage with thousands of different fills stays within --max-memory", "[check-answers]") {
    // Issue 29: 100 causal tokens, 4,950 hidden scores each written as a number of its own.
    cli::TempDir dir;
    const auto generated = cli::run({"generate", "-n", "100", "-d", "4", "-o", dir / "input.json"});
    REQUIRE(generated.exit_code == 0);
    std::string rows;
    std::size_t distinct = 0;
    for (std::size_t i = 0; i < 100; ++i) {
        std::vector<std::string> cells;
        for (std::size_t j = 0; j < 100; ++j)
            cells.push_back(j > i ? fmt::format("{:.4f}", -1.0 - 0.001 * static_cast<double>(distinct++)) : "0.0000");
        rows += fmt::format("{}[{}]", i ? ", " : "", fmt::join(cells, ", "));
    }
    REQUIRE(distinct == 4950);
    std::ofstream(dir / "answers.json") << fmt::format(R"({{"masked": [{}]}})", rows);
    const auto r = limited::run({"check-answers", dir / "input.json", dir / "answers.json", "-m", "causal", "-f", "json",
                                 "--max-memory", "64M"});
    INFO(r.err);
    REQUIRE(r.exit_code == 1);
    CHECK(r.err.empty());
    const json doc = json::parse(r.out);
    CHECK(doc.at("stages").at(0).at("agree") == false);
    CHECK(doc.at("stages").at(0).at("diagnosis").is_null());
    INFO("peak " << r.peak_kib << " KiB");
    CHECK(r.peak_kib < 64 * 1024);
    // The memory of the recomputations is charged to --max-memory: a run far too large for it is refused first.
    const auto refused = cli::run({"check-answers", dir / "input.json", dir / "answers.json", "-m", "causal",
                                   "--max-memory", "1M"});
    CHECK(refused.exit_code == 1);
    CHECK(refused.out.empty());
    CHECK_THAT(refused.err, Contains("checking answers against a trace of this size needs about"));
    // And their time to --max-time: 1000 tokens of 16 numbers, each of about two dozen passes
    // of 1000 × 1000 scores (about 45 million operations, 1.5 ns each: about 1.8 s).
    const auto longer = cli::run({"generate", "-n", "1000", "-d", "16", "-o", dir / "long.json"});
    REQUIRE(longer.exit_code == 0);
    const auto slow = cli::run({"check-answers", dir / "long.json", dir / "answers.json", "-m", "causal", "--max-time", "1"});
    CHECK(slow.exit_code == 1);
    CHECK(slow.out.empty());
    CHECK_THAT(slow.err, Contains("(and, where a stage differs, against each known mistake) takes about"));
}

TEST_CASE("check-answers says about how much memory it needs: no less than it takes, and not twice it", "[check-answers][resources]") {
    // 1000 causal tokens of 64 numbers, and weights that differ everywhere (each 0.001): the
    // trace, its copy, every mistake's recomputation and a row worked through. The estimate is
    // what a refusal says; the peak is the run's resident set, the answers' million numbers too.
    cli::TempDir dir;
    REQUIRE(cli::run({"generate", "-n", "1000", "-d", "64", "-o", dir / "input.json"}).exit_code == 0);
    std::string rows;
    const std::string row = fmt::format("[{}]", fmt::join(std::vector<std::string>(1000, "0.001"), ", "));
    for (int i = 0; i < 1000; ++i) rows += (i ? ", " : "") + row;
    std::ofstream(dir / "answers.json") << fmt::format(R"({{"weights": [{}]}})", rows);
    const std::vector<std::string> args{"check-answers", dir / "input.json", dir / "answers.json", "-m", "causal"};
    std::vector<std::string> refused_args = args;
    refused_args.insert(refused_args.end(), {"--max-memory", "1M"});
    const auto refused = cli::run(refused_args);
    REQUIRE(refused.exit_code == 1);
    const std::string says = "needs about ";
    const std::size_t at = refused.err.find(says);
    REQUIRE(at != std::string::npos);
    REQUIRE(refused.err.find(" MiB,", at) != std::string::npos);
    const double estimate_mib = std::stod(refused.err.substr(at + says.size()));
    const auto r = limited::run(args);
    REQUIRE(r.exit_code == 1);
    CHECK_THAT(r.out, Contains("weights: differs at row 1"));
    const double peak_mib = static_cast<double>(r.peak_kib) / 1024;
    INFO("estimate " << estimate_mib << " MiB, peak " << peak_mib << " MiB");
    CHECK(estimate_mib >= peak_mib);
    CHECK(estimate_mib < 2 * peak_mib);
}
