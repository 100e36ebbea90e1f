// An example's description is a claim about what one mode shows. Each built-in example
// describes the uses it was written for (a mode, or the similarity command), and every such
// description is checked here, in its mode, against the run's own numbers: with the default
// options and with the options that must not change its story (temperature, scale,
// normalisation, precision; the score where the claim does not name one). Elsewhere the
// description is withheld, and the run says so.
#include "input/examples.hpp"
#include "input/load.hpp"
#include "support/cli.hpp"
#include "support/trace_json.hpp"

#include "support/catch.hpp"
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

using Catch::Contains;
using nlohmann::json;
using trace_json::run_json;

namespace {

// One traced run, read from its JSON: the weights by (row token, column token), and the
// stages a claim may look at.
class Run {
public:
    explicit Run(json trace) : trace_(std::move(trace)) {}

    const json& stage(const std::string& name) const {
        for (const auto& s : trace_["stages"])
            if (s["name"] == name) return s;
        FAIL("no stage " << name);
        return trace_;
    }
    std::size_t row(const std::string& token) const { return index(stage("weights")["rows"], token); }
    std::size_t col(const std::string& token) const { return index(stage("weights")["cols"], token); }
    double weight(const std::string& query, const std::string& key) const {
        return stage("weights")["data"][row(query)][col(key)].get<double>();
    }
    std::vector<double> weights_of(const std::string& query) const {
        return stage("weights")["data"][row(query)].get<std::vector<double>>();
    }
    // The keys of `query`'s row by weight, largest first (ties in key order), skipping `except`.
    std::vector<std::string> ranked(const std::string& query, const std::string& except = "") const {
        const auto& cols = stage("weights")["cols"];
        const std::vector<double> w = weights_of(query);
        std::vector<std::size_t> order(w.size());
        for (std::size_t j = 0; j < order.size(); ++j) order[j] = j;
        std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return w[a] > w[b]; });
        std::vector<std::string> out;
        for (const std::size_t j : order)
            if (cols[j] != except) out.push_back(cols[j]);
        return out;
    }
    std::string top(const std::string& query, const std::string& except = "") const { return ranked(query, except).front(); }
    std::set<std::string> top_set(const std::string& query, std::size_t count) const {
        const auto r = ranked(query);
        return {r.begin(), r.begin() + static_cast<long>(count)};
    }
    // Column k of the context vector of `query`, 0-based.
    std::size_t largest_context_entry(const std::string& query) const {
        const auto z = stage("context")["data"][row(query)].get<std::vector<double>>();
        return static_cast<std::size_t>(std::max_element(z.begin(), z.end()) - z.begin());
    }
    // The token whose weight × value adds the most to entry k of `query`'s context, besides itself.
    std::string largest_contribution(const std::string& query, std::size_t k) const {
        const auto& values = stage("values")["data"];
        const auto& cols = stage("weights")["cols"];
        const std::vector<double> w = weights_of(query);
        std::string best;
        double most = -INFINITY;
        for (std::size_t j = 0; j < w.size(); ++j) {
            if (cols[j] == query) continue;
            const double part = w[j] * values[j][k].get<double>();
            if (part > most) most = part, best = cols[j];
        }
        return best;
    }
    const json& json_doc() const { return trace_; }
    // The run as head h sees it: head h's stages, and the stages no head owns (inputs, concat,
    // output), so that stage("weights") is head h's weights.
    Run head(int h) const {
        json view = trace_;
        view["stages"] = json::array();
        for (const auto& s : trace_["stages"])
            if (!s.contains("head") || s["head"] == h) view["stages"].push_back(s);
        return Run(std::move(view));
    }

private:
    static std::size_t index(const json& labels, const std::string& token) {
        for (std::size_t i = 0; i < labels.size(); ++i)
            if (labels[i] == token) return i;
        FAIL("no token " << token);
        return 0;
    }
    json trace_;
};

// A claim, checked on one run of `example` in its mode with some options.
using Claim = std::function<void(const Run& run, const std::vector<std::string>& options)>;

struct Described {
    Claim check;
    bool any_score = true;  // bahdanau: holds for every --score (else the text names its score)
};

Run run_of(const std::string& example, const std::string& mode, const std::vector<std::string>& options) {
    std::vector<std::string> args{"example:" + example, "-m", mode};
    args.insert(args.end(), options.begin(), options.end());
    return Run(run_json(args));
}

// The row-maximum of every row of the weights.
std::vector<double> row_maxima(const Run& run) {
    std::vector<double> out;
    for (const auto& row : run.stage("weights")["data"]) {
        double m = 0;
        for (const auto& w : row) m = std::max(m, w.get<double>());
        out.push_back(m);
    }
    return out;
}

// journey_padded: no query attends to <pad>, and each word's weights over the six words and
// its context vector are your_journey's, under the same options in `mode`.
std::function<void(const Run&, const std::vector<std::string>&)> same_as_unpadded_journey(std::string mode) {
    return [mode](const Run& r, const std::vector<std::string>& options) {
        const Run original = run_of("your_journey", mode, options);
        const auto& tokens = original.stage("context")["rows"];
        REQUIRE(tokens.size() == 6);
        const auto& weights = r.stage("weights")["data"];
        REQUIRE(weights.size() == 8);
        for (std::size_t i = 0; i < 8; ++i)
            for (const std::size_t pad : {6u, 7u}) CHECK(weights[i][pad].get<double>() == 0.0);
        for (std::size_t i = 0; i < 6; ++i) {
            INFO(tokens[i]);
            const auto theirs = original.stage("weights")["data"][i].get<std::vector<double>>();
            for (std::size_t j = 0; j < 6; ++j) CHECK(weights[i][j].get<double>() == Approx(theirs[j]).margin(1e-12));
            const auto mine = r.stage("context")["data"][i].get<std::vector<double>>();
            const auto context = original.stage("context")["data"][i].get<std::vector<double>>();
            for (std::size_t k = 0; k < mine.size(); ++k) CHECK(mine[k] == Approx(context[k]).margin(1e-12));
        }
    };
}

// two_heads: a position head and a meaning head, W_o adding them. Everything is read from the
// run: the inputs, W_q and W_k, each head's queries and weights, the contexts and the output.
std::function<void(const Run&, const std::vector<std::string>&)> two_heads_story(bool causal) {
    return [causal](const Run& r, const std::vector<std::string>& options) {
        const auto tokens = r.json_doc()["tokens"].get<std::vector<std::string>>();
        REQUIRE(tokens == std::vector<std::string>{"The", "dog", "chased", "the", "ball", "and", "it", "barked"});
        const auto x = trace_json::stage_rows(r.json_doc(), "inputs");
        const double pi = std::acos(-1.0);
        const auto angle = [&](double a, double b) { return std::atan2(b, a) * 180 / pi; };
        // "x4 and x5 put the word on a circle, 45° further round than the word before it";
        // "x6 is a constant 1"; "chased", "it" and "barked" need a creature (x3); "dog" is the creature (x1).
        for (std::size_t i = 0; i < x.size(); ++i) {
            INFO(tokens[i]);
            CHECK(std::hypot(x[i][3], x[i][4]) == Approx(1).margin(1e-4));
            if (i > 0) {
                const double turn = std::remainder(angle(x[i][3], x[i][4]) - angle(x[i - 1][3], x[i - 1][4]), 360.0);
                CHECK(turn == Approx(45).margin(0.01));
            }
            CHECK(x[i][5] == 1);
            const bool needs = tokens[i] == "chased" || tokens[i] == "it" || tokens[i] == "barked";
            CHECK(x[i][2] == (needs ? 1 : 0));
            CHECK(x[i][0] == (tokens[i] == "dog" ? 1 : 0));
        }
        // Head 1 (columns 1–3 of W_q and W_k) reads only x4–x6; head 2 (columns 4–6) only x1, x3, x6.
        for (const char* name : {"W_q", "W_k"}) {
            const auto w = trace_json::rows_of(r.json_doc()["parameters"][name]);
            for (std::size_t c = 0; c < 3; ++c) {
                for (const std::size_t row : {0u, 1u, 2u}) CHECK(w[row][c] == 0);
                for (const std::size_t row : {1u, 3u, 4u}) CHECK(w[row][3 + c] == 0);
            }
        }
        const Run head1 = r.head(1), head2 = r.head(2);
        // W_q turns a word's point back by 45°: head 1's query points where the word before it sits.
        const auto q = trace_json::stage_rows(head1.json_doc(), "queries");
        for (std::size_t i = 1; i < tokens.size(); ++i) {
            INFO(tokens[i]);
            const double turn = std::remainder(angle(q[i][0], q[i][1]) - angle(x[i - 1][3], x[i - 1][4]), 360.0);
            CHECK(turn == Approx(0).margin(0.01));
            CHECK(std::hypot(q[i][0], q[i][1]) > 1);  // stretched
            // each word after the first gives its largest weight to the word just before it
            CHECK(head1.ranked(tokens[i]).front() == tokens[i - 1]);
            if (!causal && options.empty()) CHECK(head1.weights_of(tokens[i])[i - 1] == Approx(0.72).margin(0.005));
        }
        if (causal) {
            CHECK(head1.weight("The", "The") == 1);  // "The" sees only itself
        } else {
            CHECK(head1.top("The") == "barked");  // round the circle to the last word
        }
        // Head 2: the words that need a creature look at "dog"; the others spread their weight
        // evenly over the words they see.
        for (std::size_t i = 0; i < tokens.size(); ++i) {
            INFO(tokens[i]);
            const bool needs = x[i][2] == 1;
            if (needs) {
                CHECK(head2.top(tokens[i]) == "dog");
                if (causal) CHECK(i > 1);  // "dog" comes before each of them
                continue;
            }
            const auto w = head2.weights_of(tokens[i]);
            const std::size_t seen = causal ? i + 1 : w.size();
            for (std::size_t j = 0; j < w.size(); ++j) CHECK(w[j] == Approx(j < seen ? 1.0 / seen : 0).margin(1e-6));
        }
        // W_o adds the two heads' contexts feature by feature, and the creature column (o1) of the
        // output of "it" and "barked" comes mostly from head 2.
        const auto z1 = trace_json::stage_rows(head1.json_doc(), "context");
        const auto z2 = trace_json::stage_rows(head2.json_doc(), "context");
        const auto out = trace_json::stage_rows(r.json_doc(), "output");
        const double tolerance = std::find(options.begin(), options.end(), "float32") != options.end() ? 1e-6 : 1e-12;
        for (std::size_t i = 0; i < tokens.size(); ++i)
            for (std::size_t k = 0; k < 3; ++k) CHECK(out[i][k] == Approx(z1[i][k] + z2[i][k]).margin(tolerance));
        const auto part1 = trace_json::stage_rows(head1.json_doc(), "head_contributions");
        const auto part2 = trace_json::stage_rows(head2.json_doc(), "head_contributions");
        for (const std::size_t i : {6u, 7u}) {
            INFO(tokens[i]);
            CHECK(part2[i][0] > part1[i][0]);
            CHECK(part2[i][0] > 0.5 * out[i][0]);
        }
    };
}

// What each example's description says, use by use ("example/use").
const std::map<std::string, Described>& claims() {
    static const std::map<std::string, Described> table{
        {"your_journey/plain",
         {[](const Run& r, auto&) { CHECK(r.top_set("journey", 2) == std::set<std::string>{"journey", "starts"}); }}},
        {"journey_shuffled/plain",
         {[](const Run& r, const std::vector<std::string>& options) {
             // The same context vector for each word as in your_journey, under the same options.
             const Run original = run_of("your_journey", "plain", options);
             const auto& tokens = r.stage("context")["rows"];
             REQUIRE(tokens.size() == 6);
             for (const auto& token : tokens) {
                 const auto mine = r.stage("context")["data"][r.row(token)].get<std::vector<double>>();
                 const auto theirs = original.stage("context")["data"][original.row(token)].get<std::vector<double>>();
                 for (std::size_t k = 0; k < mine.size(); ++k) CHECK(mine[k] == Approx(theirs[k]).margin(1e-12));
             }
             CHECK(r.json_doc()["tokens"] != original.json_doc()["tokens"]);
         }}},
        {"two_heads/self", {two_heads_story(false)}},
        {"two_heads/causal", {two_heads_story(true)}},
        {"journey_padded/plain", {same_as_unpadded_journey("plain")}},
        {"journey_padded/self", {same_as_unpadded_journey("self")}},
        {"journey_padded/causal", {same_as_unpadded_journey("causal")}},
        {"bank_money/plain",
         {[](const Run& r, auto&) {
             const auto after_itself = r.ranked("bank", "bank");
             CHECK(std::set<std::string>(after_itself.begin(), after_itself.begin() + 2) ==
                   std::set<std::string>{"cash", "deposited"});
             CHECK(r.largest_context_entry("bank") == 0);  // money
         }}},
        {"bank_river/plain",
         {[](const Run& r, auto&) {
             CHECK(r.top("bank", "bank") == "river");
             const auto z = r.stage("context")["data"][r.row("bank")];
             CHECK(z[1].get<double>() > z[0].get<double>());  // water over money
         }}},
        {"big_dream/plain",
         {[](const Run& r, auto&) {
             CHECK(r.largest_contribution("big", 1) == "dream");  // hope
             CHECK(r.largest_contribution("big", 3) == "dream");  // plan
         }}},
        {"big_mistake/plain", {[](const Run& r, auto&) { CHECK(r.largest_contribution("big", 2) == "mistake"); }}},  // harm
        {"book_borrowed/plain", {[](const Run& r, auto&) { CHECK(r.top("fascinating") == "book"); }}},
        {"teacher_smiled/plain", {[](const Run& r, auto&) { CHECK(r.top("smiled") == "teacher"); }}},
        {"teacher_learned/self",
         {[](const Run& r, const std::vector<std::string>& options) {
             CHECK(r.top("smiled") == "teacher");
             if (options.empty()) CHECK(r.weight("smiled", "teacher") == Approx(1.00).margin(0.005));  // "1.00"
         }}},
        {"teachers_shortcut/self",
         {[](const Run& r, const std::vector<std::string>& options) {
             CHECK(r.top("smiled") == "student");
             if (options.empty()) {
                 CHECK(r.weight("smiled", "student") == Approx(1.00).margin(0.005));   // "1.00"
                 CHECK(r.weight("smiled", "teachers") == Approx(0.00).margin(0.005));  // "0.00"
             }
         }}},
        {"fruit_and_pets/plain",
         {[](const Run& r, auto&) {
             CHECK(r.top_set("apple", 3) == std::set<std::string>{"banana", "apple", "orange"});
             CHECK(r.top_set("dog", 2) == std::set<std::string>{"dog", "cat"});
         }}},
        {"book_fascinating/self",
         {[](const Run& r, const std::vector<std::string>& options) {
             CHECK(r.top("fascinating") == "book");
             CHECK(r.largest_context_entry("fascinating") == 0);  // readable thing
             if (options.empty()) CHECK(r.weight("fascinating", "book") == Approx(0.5).margin(0.05));  // "about half"
         }}},
        {"book_fascinating/causal",
         {[](const Run& r, const std::vector<std::string>& options) {
             CHECK(r.top("fascinating") == "book");
             CHECK(r.weight("The", "The") == 1);
             const Run self = run_of("book_fascinating", "self", options);
             const auto causal_row = r.weights_of("fascinating"), self_row = self.weights_of("fascinating");
             for (std::size_t j = 0; j < causal_row.size(); ++j)
                 CHECK(causal_row[j] == Approx(self_row[j]).margin(1e-15));
         }}},
        {"book_fascinating/plain",
         {[](const Run& r, auto&) {
             CHECK(r.top("fascinating") == "book");
             CHECK_THAT(r.json_doc()["notes"].dump(), Contains("weights are not used"));
         }}},
        {"sqrt_dk_64/self",
         // Conditional on the options it names, so checked in those runs whatever the variant.
         {[](const Run&, auto&) {
             const Run scaled = run_of("sqrt_dk_64", "self", {});
             for (const double m : row_maxima(scaled)) CHECK(m < 0.6);
             const Run unscaled = run_of("sqrt_dk_64", "self", {"--scale", "none"});
             const auto maxima = row_maxima(unscaled);
             CHECK(std::count_if(maxima.begin(), maxima.end(), [](double m) { return m > 0.95; }) == 6);
             // "a standard deviation near 8": of all 64 scores, about their mean.
             double sum = 0, squares = 0, n = 0;
             for (const auto& row : scaled.stage("scores")["data"])
                 for (const auto& s : row) sum += s.get<double>(), squares += s.get<double>() * s.get<double>(), ++n;
             const double sd = std::sqrt(squares / n - (sum / n) * (sum / n));
             CHECK(sd > 6);
             CHECK(sd < 10);
         }}},
        {"sqrt_dk_64/plain",
         {[](const Run& r, const std::vector<std::string>& options) {
             const Run other = run_of("sqrt_dk_64", "plain", {"--scale", "sqrt"});
             const bool softmax = std::find(options.begin(), options.end(), "sum") == options.end();
             for (const Run* run : {&r, &other})
                 for (const auto& label : run->stage("weights")["rows"]) {
                     const std::string t = label;
                     if (softmax || run == &other) CHECK(run->weight(t, t) > 0.999);
                     CHECK(run->top(t) == t);
                 }
         }}},
        {"black_cat_fr/bahdanau",
         {[](const Run& r, auto&) {
             CHECK(r.top("chat") == "cat");
             CHECK(r.top("noir") == "black");
         }}},
        {"boy_apple_fr/bahdanau",
         {[](const Run& r, auto&) {
             CHECK(r.top("a") == "ate");
             CHECK(r.top("mangé") == "ate");
         }}},
        {"padded_cat_fr/bahdanau",
         {[](const Run& r, const std::vector<std::string>& options) {
             const Run plain = run_of("black_cat_fr", "bahdanau", options);
             for (const char* word : {"le", "chat", "noir"}) {
                 CHECK(r.weight(word, "<pad>") == 0);
                 CHECK(r.top(word) == plain.top(word));
             }
         }}},
        {"teacher_smiled_fr/bahdanau",
         {[](const Run& r, auto&) {
             CHECK(r.top("professeur") == "teacher");
             CHECK(r.top("a") == "smiled");
             CHECK(r.top("souri") == "smiled");
         }}},
        {"teacher_students_fr/bahdanau",
         {[](const Run& r, auto&) {
              CHECK(r.top("souri") == "smiled");
              CHECK(r.weight("souri", "teacher") > r.weight("souri", "students"));
              CHECK(r.top("professeur") == "teacher");
              CHECK(r.top("élèves") == "students");
          },
          false}},
    };
    return table;
}

// The option sets a description must survive in `mode`.
std::vector<std::vector<std::string>> variants(const std::string& mode, bool any_score) {
    std::vector<std::vector<std::string>> out{{}, {"--temperature", "0.5"}, {"--temperature", "3"}, {"--normalize", "sum"},
                                              {"--dtype", "float32"}};
    if (mode == "plain") out.push_back({"--scale", "sqrt"});
    if (mode == "self" || mode == "causal") out.push_back({"--scale", "none"});
    if (mode == "bahdanau" && any_score) {
        out.push_back({"--score", "dot"});
        out.push_back({"--score", "general"});
    }
    return out;
}

attntrace::Problem load_example(const attntrace::Example& example) {
    return attntrace::load_problem(example.json, std::string(example.name));
}

}  // namespace

TEST_CASE("every description an example prints is one a test checks", "[examples][descriptions]") {
    std::size_t described = 0;
    for (const auto& example : attntrace::examples()) {
        INFO(example.name);
        const auto problem = load_example(example);
        CHECK(problem.description.any.empty());  // written per use, so that each can be checked
        CHECK_FALSE(problem.description.by_use.empty());
        for (const auto& use : problem.description.uses()) {
            if (use == "similarity") continue;  // checked below
            INFO(use);
            CHECK(claims().count(std::string(example.name) + "/" + use) == 1);
            ++described;
        }
    }
    CHECK(described == claims().size());
}

TEST_CASE("each description holds in its mode, at other temperatures, scales, normalisations and precisions", "[examples][descriptions][words]") {
    for (const auto& [key, described] : claims()) {
        const std::string example = key.substr(0, key.find('/')), mode = key.substr(key.find('/') + 1);
        for (const auto& options : variants(mode, described.any_score)) {
            std::vector<std::string> args{"example:" + example, "-m", mode};
            args.insert(args.end(), options.begin(), options.end());
            const auto r = cli::run(args);
            if (r.exit_code == 1 && r.err.find("cannot normalise by the sum") != std::string::npos) continue;
            INFO(fmt::format("{}", fmt::join(args, " ")));
            REQUIRE(r.exit_code == 0);
            // The description is printed in this run, so it must be true of it.
            const auto problem = load_example(*attntrace::find_example(example));
            CHECK_THAT(r.out, Contains(problem.description.for_use(mode)));
            described.check(run_of(example, mode, options), options);
        }
        if (!described.any_score) {
            INFO(key);
            CHECK_THAT(load_example(*attntrace::find_example(example)).description.for_use(mode),
                       Contains("With the additive score"));
        }
    }
}

TEST_CASE("the similarity description of fruit_and_pets holds for its cosines", "[examples][descriptions]") {
    const json s = run_json({"similarity", "example:fruit_and_pets"});
    const auto at = [&](const std::string& a, const std::string& b) {
        const auto& words = s["words"];
        const auto i = std::find(words.begin(), words.end(), a) - words.begin();
        const auto j = std::find(words.begin(), words.end(), b) - words.begin();
        return s["cosine"][i][j].get<double>();
    };
    CHECK(at("apple", "orange") > 0.99);  // "near 1"
    CHECK(at("apple", "dog") == 0);        // "at right angles"
    CHECK_THAT(s["description"].get<std::string>(), Contains("apple and orange point almost the same way"));
}

TEST_CASE("where an example has no description for the mode, the run withholds it and says why", "[examples][descriptions]") {
    const std::string journey = "its weights favour \"journey\" and \"starts\"";
    const auto causal = cli::run({"-m", "causal"});
    CHECK_THAT(causal.out, !Contains(journey));
    CHECK_THAT(causal.out, Contains("note: this input's description is written for plain mode, so it is not shown for "
                                    "causal mode\n"));
    CHECK_THAT(cli::run({}).out, Contains(journey));
    // compare under the causal mask: "dream" is hidden from "big", and the plain story is not told.
    const auto compare = cli::run({"compare", "example:big_dream", "example:big_mistake", "--token", "big", "-m", "causal"});
    REQUIRE(compare.exit_code == 0);
    CHECK_THAT(compare.out, !Contains("takes on hope"));
    CHECK_THAT(compare.out, Contains("note on A: the causal mask hides the token after \"big\" (dream) from it: weight 0"));
    CHECK_THAT(compare.out, Contains("note on A: weights generated from seed 123 (splitmix64), not learned"));
    // similarity has a description of its own, or says it has none.
    CHECK_THAT(cli::run({"similarity", "example:fruit_and_pets"}).out, Contains("apple and orange point almost"));
    CHECK_THAT(cli::run({"similarity", "example:your_journey"}).out,
               Contains("note: this input's description is written for plain mode, so it is not shown for the "
                        "similarity command"));
    CHECK(run_json({"-m", "self"})["description"] == "");
    CHECK(run_json({"-m", "self", "--summary"})["description"] == "");
}

TEST_CASE("a description given as one text is shown in every mode, and one by mode only in its own", "[examples][descriptions]") {
    const cli::TempFile one(R"({"description": "my own words", "tokens": ["a", "b"], "embeddings": [[1, 0], [0, 1]]})");
    for (const char* mode : {"plain", "self", "causal"}) CHECK_THAT(cli::run({one.path(), "-m", mode}).out, Contains("my own words\n"));
    const cli::TempFile by_mode(R"({"description": {"causal": "masked story", "similarity": "angles"},
                                    "tokens": ["a", "b"], "embeddings": [[1, 0], [0, 1]]})");
    CHECK_THAT(cli::run({by_mode.path(), "-m", "causal"}).out, Contains("masked story\n"));
    CHECK_THAT(cli::run({by_mode.path(), "-m", "self"}).out,
               Contains("note: this input's description is written for causal mode and the similarity command, so it "
                        "is not shown for self mode"));
    const cli::TempFile bad(R"({"description": {"casual": "x"}, "tokens": ["a"], "embeddings": [[1]]})");
    const auto refused = cli::run({bad.path()});
    CHECK(refused.exit_code == 1);
    CHECK_THAT(refused.err, Contains("/description/casual: \"casual\" is not a use a description can be for"));
}

TEST_CASE("punctuation dropped from a sentence is noted in every output of the run", "[examples][notes]") {
    const std::string note = "note: 2 punctuation marks were dropped from /sentence: \",\", \".\"";
    const cli::TempFile input(R"({"sentence": "Hello, world.", "embeddings": {"hello": [1, 0], "world": [0, 1]}})");
    CHECK_THAT(cli::run({input.path()}).out, Contains(note));
    CHECK_THAT(cli::run({input.path(), "--summary"}).out, Contains(note));
    CHECK_THAT(cli::run({"similarity", input.path()}).out, Contains(note));
    CHECK_THAT(cli::run({"compare", input.path(), input.path(), "--token", "world"}).out,
               Contains("note on A: 2 punctuation marks were dropped"));
    CHECK(run_json({input.path()})["notes"][0].get<std::string>().starts_with("2 punctuation marks were dropped"));
    // A mark with a vector of its own stays, and nothing is noted.
    const cli::TempFile kept(R"({"sentence": "Hi !", "embeddings": {"hi": [1, 0], "!": [0, 1]}})");
    const auto r = cli::run({kept.path()});
    CHECK_THAT(r.out, !Contains("dropped"));
    CHECK(run_json({kept.path()})["tokens"] == json::parse(R"(["Hi", "!"])"));
}

TEST_CASE("a description is withheld, and said so, under options that change the numbers it was written for", "[descriptions]") {
    const auto notes_and_description = [](const std::vector<std::string>& args) {
        const json t = run_json(args);  // kept whole: its members are read below
        std::vector<std::string> notes;
        for (const auto& note : t["notes"]) notes.push_back(note.get<std::string>());
        return std::pair{t["description"].get<std::string>(), notes};
    };
    const auto says = [](const std::vector<std::string>& notes, const std::string& text) {
        return std::find(notes.begin(), notes.end(), text) != notes.end();
    };
    // The example's own settings: two heads.
    CHECK_FALSE(notes_and_description({"example:two_heads", "-m", "self"}).first.empty());
    CHECK_FALSE(notes_and_description({"example:two_heads", "-m", "self", "--heads", "2"}).first.empty());
    const auto one = notes_and_description({"example:two_heads", "-m", "self", "--heads", "1"});
    CHECK(one.first.empty());
    CHECK(says(one.second, "this input's description is written for its own settings, so it is not shown with 1 head"));
    CHECK_FALSE(notes_and_description({"example:journey_padded", "-m", "self"}).first.empty());
    const auto grouped =
        notes_and_description({"example:journey_padded", "-m", "self", "--heads", "2", "--kv-heads", "1", "--dim", "4"});
    CHECK(grouped.first.empty());
    CHECK(says(grouped.second, "this input's description is written for its own settings, so it is not shown with 2 heads "
                               "with 1 key/value head"));
    const auto window = notes_and_description({"example:book_fascinating", "-m", "self", "--window", "2"});
    CHECK(window.first.empty());
    CHECK(says(window.second, "this input's description is written for its own settings, so it is not shown with --window 2"));
    const auto fill = notes_and_description({"example:your_journey", "--mask-fill", "-1e9"});
    CHECK(fill.first.empty());
    CHECK(says(fill.second, "this input's description is written for its own settings, so it is not shown with --mask-fill"));
    // The summary withholds it alike.
    const auto summary = notes_and_description({"example:two_heads", "-m", "self", "--heads", "1", "--summary"});
    CHECK(summary.first.empty());
    CHECK_FALSE(notes_and_description({"example:two_heads", "-m", "self", "--summary"}).first.empty());
}
