// The catalogue of a learner's mistakes, each made here by the plain loops of
// support/learner.hpp (not attntrace's own recomputation), handed to check-answers stage by
// stage and to the quiz entry by entry: that mistake, and nothing else, must be named at every
// stage where it changes the numbers, in words true for the run.
#include "support/cli.hpp"
#include "support/learner.hpp"
#include "support/limited.hpp"

#include "support/catch.hpp"
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

using Catch::Contains;
using nlohmann::json;
using learner::Grid;
using learner::Model;
using learner::Way;

namespace {

constexpr int written_decimals = 9;

std::string grid_json(const Grid& g) {
    std::vector<std::string> rows;
    for (const auto& row : g) rows.push_back(fmt::format("[{:.17g}]", fmt::join(row, ", ")));
    return fmt::format("[{}]", fmt::join(rows, ", "));
}

// A number as a learner writes it: nine decimals, −∞ as "-inf", a NaN (0 ÷ 0, ∞ ÷ ∞) as null.
std::string written(double v, int decimals = written_decimals) {
    if (std::isnan(v)) return "null";
    if (std::isinf(v)) return v < 0 ? "\"-inf\"" : "null";
    return fmt::format("{:.{}f}", v, decimals);
}

std::string answer_grid(const Grid& g) {
    std::vector<std::string> rows;
    for (const auto& row : g) {
        std::vector<std::string> cells;
        for (const double v : row) cells.push_back(written(v));
        rows.push_back(fmt::format("[{}]", fmt::join(cells, ", ")));
    }
    return fmt::format("[{}]", fmt::join(rows, ", "));
}

// The grid as the learner's file gives it back: each number read from its nine decimals.
Grid as_written(const Grid& g) {
    Grid out = g;
    for (auto& row : out)
        for (double& v : row)
            if (std::isfinite(v)) v = std::stod(fmt::format("{:.{}f}", v, written_decimals));
            else v = std::isinf(v) && v < 0 ? learner::minus_inf : std::nan("");
    return out;
}

bool same_shape(const Grid& a, const Grid& b) { return !a.empty() && a.size() == b.size() && a[0].size() == b[0].size(); }

// Does a stage made another way give every number written? A hidden entry is matched by
// anything that is not a number, and in the weights by 0 too.
bool reproduces(const Grid& given, const Grid& other, const std::string& stage) {
    if (!same_shape(given, other)) return false;
    for (std::size_t i = 0; i < given.size(); ++i)
        for (std::size_t j = 0; j < given[i].size(); ++j) {
            const double g = given[i][j], o = other[i][j];
            if (!std::isfinite(g)) {
                if (std::isfinite(o) && !(stage == "weights" && o == 0)) return false;
            } else if (!learner::gives(g, written_decimals, o)) {
                return false;
            }
        }
    return true;
}

// Where a mistake's numbers are its own: masking after the softmax leaves no mask before it,
// so a masked stage without one is no_mask's (docs/practice.md).
bool shown_as_own(const std::string& mistake, const std::string& stage) {
    return !(mistake == "mask_after_softmax" && stage == "masked");
}

// A run of check-answers: the input, its options, and the stages a learner would give.
struct Fixture {
    std::string name;
    Model model;
    std::string input;
    std::vector<std::string> options;
    std::vector<std::string> per_head, after_heads;  // the stages given
    // Every mistake's numbers differ from every other's (false where two coincide: with
    // d_head = 2 in two heads, √(H·d_head) = √4 = d_head, and both mistakes are named).
    bool distinct = true;
};

std::vector<std::string> tokens_of(std::size_t n, const std::vector<std::size_t>& pads) {
    std::vector<std::string> t;
    for (std::size_t i = 0; i < n; ++i)
        t.push_back(std::find(pads.begin(), pads.end(), i) != pads.end() ? "<pad>" : std::string(1, static_cast<char>('a' + i)));
    return t;
}

struct Shape {
    std::size_t n = 5, d_in = 6, d_out = 6;  // d_out: heads·d_head of W_q, W_k, W_v
    int heads = 1;
    bool causal = true, sum = false, output = false, positive = false;
    double scale = 1;  // every embedding times this (large scores)
    std::vector<std::size_t> pads;
    std::uint64_t seed = 11;
    std::string layout;  // "out_in": the weights written (out, in)
    bool layout_by_option = false;  // said by --layout rather than the input's "layout"
    std::string positions;
    std::size_t window = 0;  // --window
};

Fixture single(const std::string& name, const Shape& s) {
    naive::Lcg lcg{s.seed};
    Fixture f;
    f.name = name;
    Model& m = f.model;
    m.name = name;
    m.learned = true;
    m.heads = s.heads;
    m.causal = s.causal;
    m.sum = s.sum;
    m.window = s.window;
    m.x = lcg.grid(s.n, s.d_in);
    m.wq = lcg.grid(s.d_in, s.d_out);
    m.wk = lcg.grid(s.d_in, s.d_out);
    m.wv = lcg.grid(s.d_in, s.d_out);
    if (s.output) m.wo = lcg.grid(s.d_out, s.d_in);
    for (Grid* g : {&m.x, &m.wq, &m.wk, &m.wv})
        for (auto& row : *g)
            for (double& v : row) v = s.positive ? std::fabs(v) : v;
    for (auto& row : m.x)
        for (double& v : row) v *= s.scale;
    const std::vector<std::string> tokens = tokens_of(s.n, s.pads);
    for (const auto& t : tokens) m.pad.push_back(t == "<pad>");
    const auto stored = [&](const Grid& w) { return s.layout == "out_in" ? learner::transpose(w) : w; };
    f.input = fmt::format(R"({{"tokens": {}, "embeddings": {}, "heads": {}, {}"weights": {{"query": {}, "key": {}, "value": {}{}}}}})",
                          json(tokens).dump(), grid_json(m.x), s.heads,
                          s.layout.empty() || s.layout_by_option ? "" : fmt::format(R"("layout": "{}", )", s.layout),
                          grid_json(stored(m.wq)),
                          grid_json(stored(m.wk)), grid_json(stored(m.wv)),
                          m.wo ? fmt::format(R"(, "output": {})", grid_json(stored(*m.wo))) : "");
    f.options = {"-m", s.causal ? "causal" : "self"};
    if (s.sum) f.options.insert(f.options.end(), {"--normalize", "sum"});
    if (!s.positions.empty()) f.options.insert(f.options.end(), {"--positions", s.positions});
    if (s.layout_by_option) f.options.insert(f.options.end(), {"--layout", s.layout});
    if (s.window) f.options.insert(f.options.end(), {"--window", std::to_string(s.window)});
    f.per_head = {"queries", "keys", "values", "scores", "scaled", "masked", "weights", "context"};
    if (s.positions == "rope") f.per_head.insert(f.per_head.begin() + 3, {"queries_rotated", "keys_rotated"});
    if (s.heads > 1) f.after_heads.push_back("concat");
    if (m.wo) f.after_heads.push_back("output");
    if (m.wo && s.heads > 1) f.per_head.push_back("head_contributions");
    return f;
}

// RoPE's angles as docs/positions.md defines them: position p, pair k of d: p·10000^(−2k/d).
Grid rope_angles(std::size_t n, std::size_t d_head) {
    Grid a(n, std::vector<double>(d_head / 2));
    for (std::size_t p = 0; p < n; ++p)
        for (std::size_t k = 0; k < d_head / 2; ++k)
            a[p][k] = static_cast<double>(p) * std::pow(10000.0, -2.0 * static_cast<double>(k) / static_cast<double>(d_head));
    return a;
}

json data_json(const std::string& name) { return json::parse(cli::read_file(cli::data_file(name + ".json"))); }

Grid grid_from(const json& rows) {
    Grid g;
    for (const auto& row : rows) g.push_back(row.get<std::vector<double>>());
    return g;
}

std::vector<std::string> split_words(const std::string& sentence) {
    std::vector<std::string> out;
    std::string word;
    for (const char c : sentence + " ") {
        if (c != ' ') word += c;
        else if (!word.empty()) out.push_back(std::exchange(word, {}));
    }
    return out;
}

// States by token (an object) or by row (an array).
Grid states_of(const json& side) {
    const std::vector<std::string> tokens = side.contains("tokens") ? side["tokens"].get<std::vector<std::string>>()
                                                                    : split_words(side["sentence"].get<std::string>());
    Grid g;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        if (side["states"].is_array()) {
            g.push_back(side["states"].at(i).get<std::vector<double>>());
            continue;
        }
        std::string lower = tokens[i];  // the examples' words are ASCII, found case-insensitively
        std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        g.push_back(side["states"].at(lower).get<std::vector<double>>());
    }
    return g;
}

// A Bahdanau example of data/, additive score, as its file gives it.
Model bahdanau_model(const std::string& example) {
    const json doc = data_json(example);
    Model m;
    m.name = example;
    m.pair = true;
    m.s = states_of(doc["target"]);
    m.h = states_of(doc["source"]);
    m.wa = grid_from(doc["weights"]["W_a"]);
    m.ua = grid_from(doc["weights"]["U_a"]);
    m.va = doc["weights"]["v_a"].get<std::vector<double>>();
    m.visible.assign(m.h.size(), true);
    if (doc["source"].contains("mask")) m.visible = doc["source"]["mask"].get<std::vector<bool>>();
    return m;
}

// A run of a built-in example with generated weights (--heads among `options`): the example's
// embeddings and the weights the run's JSON shows, to compute from.
Fixture example_fixture(const std::string& example, const std::vector<std::string>& options) {
    std::vector<std::string> args{"--example", example, "-f", "json"};
    args.insert(args.end(), options.begin(), options.end());
    const auto r = cli::run(args);
    REQUIRE(r.exit_code == 0);
    const json doc = json::parse(r.out);
    Fixture f;
    f.name = example + " " + fmt::format("{}", fmt::join(options, " "));
    f.options = options;
    Model& m = f.model;
    m.name = f.name;
    for (const json& s : doc["stages"])
        if (s["name"] == "inputs") m.x = grid_from(s["data"]);
    m.learned = true;
    m.causal = doc["mode"] == "causal";
    m.heads = doc["dims"].value("heads", 1);
    m.wq = grid_from(doc["parameters"]["W_q"]), m.wk = grid_from(doc["parameters"]["W_k"]), m.wv = grid_from(doc["parameters"]["W_v"]);
    if (doc["parameters"].contains("W_o")) m.wo = grid_from(doc["parameters"]["W_o"]);
    for (const json& t : doc["tokens"]) m.pad.push_back(t == "<pad>");
    f.per_head = {"queries", "keys", "values", "scores", "scaled", "masked", "weights", "context"};
    if (m.heads > 1) f.after_heads.push_back("concat");
    if (m.wo) f.after_heads.push_back("output");
    if (m.wo && m.heads > 1) f.per_head.push_back("head_contributions");
    return f;
}

// The learner's answers for every stage given, under a mistake: those of the run's shape (the
// context of X in place of V is d_in wide, which the run's concat is not).
std::string answers_for(const Fixture& f, const learner::Stages& s, const learner::Stages& right) {
    std::vector<std::string> top;
    const auto add = [&](std::vector<std::string>& to, const std::string& stage, std::size_t head) {
        const Grid& g = learner::stage_of(s, stage, head);
        if (same_shape(g, learner::stage_of(right, stage, head))) to.push_back(fmt::format(R"("{}": {})", stage, answer_grid(g)));
    };
    for (const auto& stage : f.after_heads) add(top, stage, 0);
    if (f.model.heads == 1) {
        for (const auto& stage : f.per_head) add(top, stage, 0);
        return fmt::format("{{{}}}", fmt::join(top, ", "));
    }
    std::vector<std::string> heads;
    for (int h = 0; h < f.model.heads; ++h) {
        std::vector<std::string> stages;
        for (const auto& stage : f.per_head) add(stages, stage, static_cast<std::size_t>(h));
        heads.push_back(fmt::format(R"("{}": {{{}}})", h + 1, fmt::join(stages, ", ")));
    }
    top.push_back(fmt::format(R"("heads": {{{}}})", fmt::join(heads, ", ")));
    return fmt::format("{{{}}}", fmt::join(top, ", "));
}

// The mistakes (by the test's own account) whose ways reproduce the learner's stage.
std::set<std::string> reproducing(const Model& m, const Grid& given, const std::string& stage, std::size_t head) {
    std::set<std::string> out;
    for (const std::string& mistake : learner::catalogue()) {
        if (!shown_as_own(mistake, stage)) continue;
        for (const Way& way : learner::ways(m, mistake))
            if (reproduces(given, learner::stage_of(learner::run(m, way), stage, head), stage)) {
                out.insert(mistake);
                break;
            }
    }
    return out;
}

using Coverage = std::set<std::pair<std::string, std::string>>;  // (mistake, stage)

// Every way of every mistake of the fixture, given as the learner's stages in one file: each
// stage the mistake changes must be named as that mistake alone; the others agree.
void check_every_mistake(const Fixture& f, Coverage& covered, const std::string& input_path = "",
                         const std::vector<std::string>& extra = {}) {
    cli::TempDir dir;
    const std::string input = input_path.empty() ? dir / "input.json" : input_path;
    if (input_path.empty()) std::ofstream(input) << f.input;
    const learner::Stages right = learner::run(f.model, {});
    for (const std::string& mistake : learner::catalogue()) {
        for (const Way& way : learner::ways(f.model, mistake)) {
            INFO(f.name << ": " << learner::describe(way));
            const learner::Stages wrong = learner::run(f.model, way);
            std::ofstream(dir / "answers.json") << answers_for(f, wrong, right);
            std::vector<std::string> args{"check-answers", input, dir / "answers.json", "-f", "json"};
            args.insert(args.end(), f.options.begin(), f.options.end());
            args.insert(args.end(), extra.begin(), extra.end());
            const auto r = cli::run(args);
            INFO(r.err);
            REQUIRE((r.exit_code == 0 || r.exit_code == 1));
            const json doc = json::parse(r.out);
            for (const json& s : doc.at("stages")) {
                const std::string stage = s.at("name");
                const std::size_t head = s.at("head").is_null() ? 0 : s.at("head").get<std::size_t>() - 1;
                INFO(stage << " of head " << head + 1);
                const Grid& mine = learner::stage_of(wrong, stage, head);
                const bool differs = !reproduces(as_written(mine), learner::stage_of(right, stage, head), stage);
                CHECK(s.at("agree") == !differs);
                if (!differs) continue;
                const std::set<std::string> expected = reproducing(f.model, as_written(mine), stage, head);
                if (!shown_as_own(mistake, stage)) {
                    CHECK(expected == std::set<std::string>{"no_mask"});
                } else {
                    CHECK(expected.contains(mistake));
                    if (f.distinct) CHECK(expected == std::set<std::string>{mistake});  // the fixture tells the mistakes apart
                }
                REQUIRE(s.at("diagnosis").is_object());
                std::set<std::string> named{s.at("diagnosis").at("mistake").get<std::string>()};
                if (s.at("diagnosis").contains("also"))
                    for (const json& a : s.at("diagnosis").at("also")) named.insert(a.at("mistake").get<std::string>());
                CHECK(named == expected);
                if (named == std::set<std::string>{mistake}) covered.insert({mistake, stage});
            }
        }
    }
}

// The stages where each mistake can show, by the test's own account.
std::map<std::string, std::set<std::string>> where_they_show() {
    const std::set<std::string> from_scores{"scores", "scaled", "masked", "weights", "context", "concat", "output", "head_contributions"};
    const std::set<std::string> from_scaled{"scaled", "masked", "weights", "context", "concat", "output", "head_contributions"};
    const std::set<std::string> from_masked{"masked", "weights", "context", "concat", "output", "head_contributions"};
    const std::set<std::string> from_weights{"weights", "context", "concat", "output", "head_contributions"};
    const std::set<std::string> context{"context", "concat", "output", "head_contributions"};
    const auto with = [](std::set<std::string> a, std::initializer_list<std::string> b) {
        a.insert(b);
        return a;
    };
    return {
        {"transposed_w_q", with(from_scores, {"queries", "queries_rotated"})},
        {"transposed_w_k", with(from_scores, {"keys", "keys_rotated"})},
        {"transposed_w_v", with(context, {"values"})},
        {"wrong_head_split", with(from_scores, {"queries", "keys", "values"})},
        {"keys_times_queries", from_scores},
        {"no_tanh", {"scores", "scaled", "masked", "weights", "context"}},
        {"no_scaling", from_scaled},
        {"sqrt_d_model", from_scaled},
        {"divided_by_d_k", from_scaled},
        {"no_mask", from_masked},
        {"finite_fill", from_masked},
        {"mask_after_softmax", from_weights},
        {"softmax_over_columns", from_weights},
        {"softmax_overflow", {"weights", "context"}},
        {"sum_instead_of_softmax", from_weights},
        {"softmax_instead_of_sum", {"weights", "context"}},
        {"context_from_scores", context},
        {"context_from_inputs", context},
    };
}

}  // namespace

TEST_CASE("check-answers names each mistake of the catalogue, alone, at every stage it reaches", "[check-answers][mistakes][words]") {
    Coverage covered;
    // One head, causal: the projections (square), the scores, the scaling, the mask.
    check_every_mistake(single("one head", {}), covered);
    // Two heads with W_o: the head split, √(H·d_head), the heads side by side and the output.
    Shape two;
    two.heads = 2, two.output = true;
    check_every_mistake(single("two heads", two), covered);
    // One head of d_in = 3 projected to d_k = 2: √d_in, which one head's d_model is.
    Shape narrow;
    narrow.d_in = 3, narrow.d_out = 2, narrow.causal = false;
    check_every_mistake(single("d_in 3, d_k 2", narrow), covered);
    // Two heads of 3 from d_in = 4: √(H·d_head) = √6 and √d_in = √4 are two ways.
    Shape wide;
    wide.d_in = 4, wide.heads = 2, wide.causal = false;
    check_every_mistake(single("d_in 4, two heads of 3", wide), covered);
    // X as wide as a head's values: the context of X instead of V has the run's shape, in
    // one head with W_o and in two heads side by side.
    Shape with_output;
    with_output.output = true;
    check_every_mistake(single("one head with W_o", with_output), covered);
    Shape as_wide;
    as_wide.d_in = 3, as_wide.heads = 2, as_wide.output = true;
    check_every_mistake(single("d_in 3, two heads of 3, W_o", as_wide), covered);
    // Causal with padding: the causal mask or the padding forgotten alone.
    Shape padded;
    padded.n = 6, padded.pads = {2, 5};
    check_every_mistake(single("causal and padding", padded), covered);
    // Causal with a window: the causal mask or the window forgotten alone, or the window taken
    // on both sides as self mode takes it; and all three parts with padding.
    Shape windowed;
    windowed.n = 6, windowed.window = 2;
    check_every_mistake(single("causal, window 2", windowed), covered);
    windowed.window = 3, windowed.pads = {4};
    check_every_mistake(single("causal, window 3 and padding", windowed), covered);
    windowed.causal = false;
    check_every_mistake(single("self, window 3 and padding", windowed), covered);
    // Scores large enough that e^s overflows float64 unless the row max is subtracted.
    Shape large;
    large.scale = 30, large.seed = 5;
    const Fixture overflow = single("large scores", large);
    double largest = 0;
    const learner::Stages plain_run = learner::run(overflow.model, {});
    for (const auto& row : plain_run.heads[0].masked)
        for (const double v : row) largest = std::max(largest, v);
    REQUIRE(largest > 710);  // e^710 is beyond float64
    check_every_mistake(overflow, covered);
    // --normalize sum, positive numbers so that every row can be divided by its sum.
    Shape summed;
    summed.sum = true, summed.positive = true;
    check_every_mistake(single("--normalize sum", summed), covered);
    // RoPE: the queries and keys turned by their positions after the projection.
    Shape rope;
    rope.positions = "rope";
    Fixture rotated = single("rope", rope);
    rotated.model.angles = rope_angles(5, 6);
    check_every_mistake(rotated, covered);
    // Weights stored (out, in), as nn.Linear keeps them, said by the input and by --layout: a
    // learner who multiplies them as stored computes X·Wᵀ of attntrace's W.
    Shape stored;
    stored.layout = "out_in", stored.heads = 2, stored.output = true;
    check_every_mistake(single("layout out_in", stored), covered);
    stored.layout_by_option = true, stored.heads = 1, stored.causal = false;
    check_every_mistake(single("--layout out_in", stored), covered);
    // Generated weights, heads from --heads: big_dream's d_in = 4 in two heads of 2, W_q square.
    Fixture generated = example_fixture("big_dream", {"-m", "causal", "--heads", "2"});
    generated.distinct = false;
    check_every_mistake(generated, covered, "example:big_dream");
    check_every_mistake(example_fixture("your_journey", {"-m", "self"}), covered, "example:your_journey");
    // Bahdanau, additive, with a source mask, and without.
    for (const char* example : {"padded_cat_fr", "teacher_smiled_fr"}) {
        Fixture f;
        f.name = example;
        f.model = bahdanau_model(example);
        f.per_head = {"scores", "scaled", "masked", "weights", "context"};
        check_every_mistake(f, covered, cli::data_file(std::string(example) + ".json"));
    }
    for (const auto& [mistake, stages] : where_they_show())
        for (const std::string& stage : stages) {
            INFO(mistake << " at " << stage);
            CHECK(covered.contains({mistake, stage}));
        }
}

namespace {

// A run the quiz draws from, as the test knows it: the example's numbers, and the weights a
// run of it uses (its own, or those generated from the seed, read from the run's JSON; the
// arithmetic on them is the test's).
Model quiz_model(const std::string& example, const std::string& mode) {
    const json data = data_json(example);
    const auto r = cli::run({"--example", example, "-m", mode, "-f", "json"});
    REQUIRE(r.exit_code == 0);
    const json doc = json::parse(r.out);
    if (mode == "bahdanau") return bahdanau_model(example);
    Model m;
    m.name = example + " " + mode;
    for (const json& s : doc["stages"])
        if (s["name"] == "inputs") m.x = grid_from(s["data"]);
    m.learned = mode != "plain";
    m.scaled = mode != "plain";
    m.causal = mode == "causal";
    m.heads = data.value("heads", 1);
    if (m.learned) {
        m.wq = grid_from(doc["parameters"]["W_q"]);
        m.wk = grid_from(doc["parameters"]["W_k"]);
        m.wv = grid_from(doc["parameters"]["W_v"]);
        if (doc["parameters"].contains("W_o")) m.wo = grid_from(doc["parameters"]["W_o"]);
    }
    for (const json& t : doc["tokens"]) m.pad.push_back(t == "<pad>");
    return m;
}

struct Asked {
    json question;
    std::string where;  // the stage, or the kind for a row sum and a tanh feature
};

std::string where_of(const json& q) {
    if (q["kind"] == "row_sum") return "row_sum";
    if (q["kind"] == "tanh_feature") return "tanh_feature";
    return q["stage"];
}

// A run made one way, kept to answer every question from.
struct Made {
    Way way;
    learner::Stages stages;
};

// The value a question asks for, in a run made `made.way`; nullopt where it has no such number.
std::optional<double> value_of(const Model& m, const Made& made, const json& q) {
    const auto row = q["row"].get<std::size_t>() - 1;
    if (q["kind"] == "tanh_feature") {
        const auto col = q["col"].get<std::size_t>() - 1, a = q["entry"].get<std::size_t>() - 1;
        const double sum = naive::times(m.s, m.wa)[row][a] + naive::times(m.h, m.ua)[col][a];
        return made.way.mistake == "no_tanh" ? sum : std::tanh(sum);
    }
    const std::size_t head = q["head"].is_null() ? 0 : q["head"].get<std::size_t>() - 1;
    const Grid& g = learner::stage_of(made.stages, q["stage"], head);
    if (g.empty()) return std::nullopt;
    if (q["kind"] == "row_sum") {
        double sum = 0;
        for (const double v : g[row])
            if (std::isfinite(v)) sum += v;
        return sum;
    }
    const auto col = q["col"].get<std::size_t>() - 1;
    if (row >= g.size() || col >= g[row].size()) return std::nullopt;
    return g[row][col];
}

// An answer as a learner types it: nine decimals, a large fill in full, −∞ as -inf.
std::string typed(double v) {
    if (std::isinf(v) && v < 0) return "-inf";
    if (std::fabs(v) >= 1e6) return fmt::format("{}", v);
    return fmt::format("{:.9f}", v);
}

bool quiz_gives(const std::string& text, double value) {
    if (text == "-inf") return std::isinf(value) && value < 0;
    return learner::gives(std::stod(text), 9, value);
}

// The quiz's examples in each mode that reads them.
std::vector<std::pair<std::string, std::string>> quiz_runs() {
    std::vector<std::pair<std::string, std::string>> runs;
    for (const char* e : {"your_journey", "big_dream", "journey_padded"})
        for (const char* m : {"plain", "self", "causal"}) runs.emplace_back(e, m);
    runs.emplace_back("two_heads", "self");
    runs.emplace_back("two_heads", "causal");
    for (const char* e : {"black_cat_fr", "teacher_smiled_fr", "padded_cat_fr"}) runs.emplace_back(e, "bahdanau");
    return runs;
}

}  // namespace

TEST_CASE("the quiz names each mistake of the catalogue from one number, alone, at every kind of question it reaches",
          "[quiz][mistakes][words]") {
    Coverage covered;
    for (const auto& [example, mode] : quiz_runs()) {
        const Model m = quiz_model(example, mode);
        const Made right_run{{}, learner::run(m, {})};
        std::vector<std::pair<std::string, std::vector<Made>>> made;  // each mistake, each of its ways
        for (const std::string& mistake : learner::catalogue()) {
            made.emplace_back(mistake, std::vector<Made>{});
            for (const Way& way : learner::ways(m, mistake)) made.back().second.push_back({way, learner::run(m, way)});
        }
        const std::vector<std::string> options{"--example", example, "--mode", mode, "--rounds", "400", "--seed", "7"};
        std::vector<std::string> args{"quiz", "-f", "json", "--answers", "/dev/null"};
        args.insert(args.end(), options.begin(), options.end());
        const auto asked = cli::run(args);
        REQUIRE(asked.exit_code == 1);
        const json questions = json::parse(asked.out)["questions"];
        // Each round answered as one mistake gives it; every mistake that gives that number must
        // be named (one, nearly always: a weight of a visible key is the same whether the mask was
        // forgotten or applied after the softmax).
        std::vector<std::string> answers;
        std::vector<std::set<std::string>> meant;
        std::map<std::pair<std::string, std::string>, int> used;
        for (const json& q : questions) {
            INFO(m.name << ": " << q.dump());
            const std::string where = where_of(q);
            const double right = *value_of(m, right_run, q);
            if (std::isinf(right)) CHECK(q["expected"].is_null());
            else CHECK(q["expected"].get<double>() == Approx(right).margin(1e-12));
            std::string best, best_text;
            std::set<std::string> best_set;
            for (const auto& [mistake, ways] : made) {
                if (!shown_as_own(mistake, q["stage"])) continue;
                for (const Made& one : ways) {
                    const auto v = value_of(m, one, q);
                    if (!v || std::isnan(*v)) continue;
                    const std::string text = typed(*v);
                    if (quiz_gives(text, right)) continue;  // the right number: no mistake to name
                    std::set<std::string> giving;  // every mistake that gives it, by any of its ways
                    for (const auto& [other, other_ways] : made) {
                        if (!shown_as_own(other, q["stage"])) continue;
                        for (const Made& w : other_ways) {
                            const auto o = value_of(m, w, q);
                            if (o && quiz_gives(text, *o)) giving.insert(other);
                        }
                    }
                    if (best.empty() || used[{mistake, where}] < used[{best, where}])
                        best = mistake, best_text = text, best_set = giving;
                    break;  // the first way that changes the number
                }
            }
            if (!best.empty()) ++used[{best, where}];
            answers.push_back(best.empty() ? "?" : best_text);
            meant.push_back(best_set);
        }
        const cli::TempFile file(fmt::format("{}\n", fmt::join(answers, "\n")), "answers.txt");
        std::vector<std::string> graded{"quiz", "-f", "json", "--answers", file.path()};
        graded.insert(graded.end(), options.begin(), options.end());
        const auto r = cli::run(graded);
        INFO(r.err);
        REQUIRE(r.exit_code == 1);
        const json report = json::parse(r.out)["questions"];
        REQUIRE(report.size() == questions.size());
        for (std::size_t i = 0; i < report.size(); ++i) {
            const json& q = report[i];
            INFO(m.name << ": " << q.dump());
            if (meant[i].empty()) {
                CHECK(q["verdict"] == "skipped");
                continue;
            }
            CHECK(q["verdict"] == "wrong");
            REQUIRE(q["mistake"].is_object());
            std::set<std::string> named{q["mistake"]["name"].get<std::string>()};
            if (q["mistake"].contains("also"))
                for (const json& a : q["mistake"]["also"]) named.insert(a["name"].get<std::string>());
            CHECK(named == meant[i]);
            if (named == meant[i])
                for (const std::string& mistake : named) covered.insert({mistake, where_of(q)});
        }
        // The examples' scores are small: e^s never overflows, so that mistake cannot show here.
        for (const json& q : questions) {
            if (q["kind"] != "weight" && q["kind"] != "context_entry") continue;
            for (const auto& [mistake, ways] : made)
                if (mistake == "softmax_overflow")
                    for (const Made& one : ways) CHECK(quiz_gives(typed(*value_of(m, one, q)), *value_of(m, right_run, q)));
        }
    }
    const std::set<std::string> scores{"scores", "scaled", "masked", "weights", "context", "output"};
    const std::set<std::string> scaled{"scaled", "masked", "weights", "context", "output"};
    const std::set<std::string> masked{"masked", "weights", "context", "output"};
    const std::set<std::string> normalised{"weights", "row_sum", "context", "output"};
    const std::map<std::string, std::set<std::string>> expected{
        {"transposed_w_q", {"queries", "scores", "scaled", "masked", "weights", "context", "output"}},
        {"transposed_w_k", {"keys", "scores", "scaled", "masked", "weights", "context", "output"}},
        {"transposed_w_v", {"values", "context", "output"}},
        {"wrong_head_split", {"queries", "keys", "values", "scores", "scaled", "masked", "weights", "context", "output"}},
        {"keys_times_queries", scores},
        {"no_tanh", {"scores", "tanh_feature", "masked", "weights", "context"}},
        {"no_scaling", scaled},
        {"sqrt_d_model", scaled},
        {"divided_by_d_k", scaled},
        {"no_mask", masked},
        {"finite_fill", masked},
        {"mask_after_softmax", normalised},
        {"softmax_over_columns", normalised},
        {"sum_instead_of_softmax", {"weights", "context", "output"}},
        {"context_from_scores", {"context", "output"}},
        {"context_from_inputs", {"context"}},  // two_heads' X (6 wide) is no head's V (3): no output
    };
    for (const auto& [mistake, stages] : expected)
        for (const std::string& stage : stages) {
            INFO(mistake << " at " << stage);
            CHECK(covered.contains({mistake, stage}));
        }
}

namespace {

// One stage's table as the transcript shows it: the header's labels, and each row's cells.
struct Shown {
    std::vector<std::string> header;
    std::vector<std::vector<std::string>> rows;  // without the row label
};

std::vector<std::string> fields(const std::string& line) {
    std::vector<std::string> out;
    std::string word;
    for (const char c : line + " ") {
        if (c != ' ') word += c;
        else if (!word.empty()) out.push_back(std::exchange(word, {}));
    }
    return out;
}

// The table of `stage` (of head `head`, 0: one head) in `text`: after its heading line and its
// title, the labels, then a row a line up to the blank line.
std::optional<Shown> table_of(const std::string& text, const std::string& stage, int head) {
    const std::string heading = head > 0 ? fmt::format("\n{} · head {} · ", stage, head) : fmt::format("\n{} · ", stage);
    const std::size_t at = text.find(heading);
    if (at == std::string::npos) return std::nullopt;
    std::vector<std::string> lines;
    std::size_t from = text.find('\n', at + 1) + 1;
    while (from < text.size()) {
        const std::size_t end = text.find('\n', from);
        const std::string line = text.substr(from, end - from);
        if (line.empty()) break;
        lines.push_back(line);
        from = end + 1;
    }
    if (lines.size() < 2) return std::nullopt;
    Shown t;
    t.header = fields(lines[1]);
    for (std::size_t i = 2; i < lines.size(); ++i) {
        auto cells = fields(lines[i]);
        cells.erase(cells.begin());
        t.rows.push_back(std::move(cells));
    }
    return t;
}

}  // namespace

TEST_CASE("the quiz hides every entry that would give the answer away, in every mode and stage", "[quiz][mistakes]") {
    std::set<std::string> kinds;
    for (const auto& [example, mode] : quiz_runs()) {
        const Model m = quiz_model(example, mode);
        const Made right{{}, learner::run(m, {})};
        const std::vector<std::string> options{"--example", example, "--mode", mode, "--rounds", "120", "--seed", "11"};
        std::vector<std::string> args{"quiz", "-f", "json", "--answers", "/dev/null"};
        args.insert(args.end(), options.begin(), options.end());
        const json questions = json::parse(cli::run(args).out)["questions"];
        std::string every_skipped;
        for (std::size_t i = 0; i < questions.size(); ++i) every_skipped += "?\n";
        const cli::TempFile skips(every_skipped, "answers.txt");
        std::vector<std::string> shown_args{"quiz", "--answers", skips.path()};
        shown_args.insert(shown_args.end(), options.begin(), options.end());
        const auto transcript = cli::run(shown_args, "", {{"NO_COLOR", "1"}, {"COLUMNS", "400"}});
        for (std::size_t k = 0; k < questions.size(); ++k) {
            const json& q = questions[k];
            INFO(m.name << ": " << q.dump());
            kinds.insert(q["kind"].get<std::string>());
            const std::size_t begin = transcript.out.find(fmt::format("\nround {} of {} ", k + 1, questions.size()));
            const std::size_t end = transcript.out.find(fmt::format("\nquestion {}: ", k + 1), begin);
            REQUIRE(begin != std::string::npos);
            REQUIRE(end != std::string::npos);
            const std::string round = transcript.out.substr(begin, end - begin);
            if (q["kind"] == "tanh_feature") continue;  // the features are not shown at all
            const std::string stage = q["stage"];
            const int head = q["head"].is_null() ? 0 : q["head"].get<int>();
            const auto table = table_of(round, stage, head);
            REQUIRE(table);
            INFO(round);
            const auto row = q["row"].get<std::size_t>() - 1;
            const std::size_t cols = learner::stage_of(right.stages, stage, head > 0 ? static_cast<std::size_t>(head - 1) : 0)[0].size();
            const auto hidden = [&](std::size_t r, std::size_t c) { return table->rows.at(r).at(c) == "?"; };
            if (q["kind"] == "row_sum") {
                CHECK(std::find(table->header.begin(), table->header.end(), "Σ") == table->header.end());
                for (std::size_t c = 0; c < cols; ++c) CHECK(hidden(row, c));
                continue;
            }
            const auto col = q["col"].get<std::size_t>() - 1;
            CHECK(hidden(row, col));
            if (q["kind"] == "masked_entry") {  // the other rows would show which keys the mask hides
                for (std::size_t r = 0; r < table->rows.size(); ++r)
                    for (std::size_t c = 0; c < cols; ++c) CHECK(hidden(r, c));
                continue;
            }
            if (stage == "weights")  // a row's other weights and its sum pin each of its weights
                for (std::size_t r = 0; r < table->rows.size(); ++r) {
                    const bool any = std::any_of(table->rows[r].begin(), table->rows[r].begin() + static_cast<long>(cols),
                                                 [](const std::string& s) { return s == "?"; });
                    if (any)
                        for (std::size_t c = 0; c < table->rows[r].size(); ++c) CHECK(hidden(r, c));
                }
            const double expected = *value_of(m, right, q);
            if (!std::isfinite(expected) || (stage == "weights" && learner::hidden(m, row, col))) continue;
            // No other entry shown holds the asked number: not in the asked stage (a mirror, a
            // repeated token), nor, for a projection, in the other projections.
            std::vector<std::string> scanned{stage};
            if (stage == "queries" || stage == "keys" || stage == "values") scanned = {"queries", "keys", "values"};
            for (const std::string& other : scanned) {
                const auto t = other == stage ? table : table_of(round, other, head);
                if (!t) continue;
                const Grid& values = learner::stage_of(right.stages, other, head > 0 ? static_cast<std::size_t>(head - 1) : 0);
                for (std::size_t r = 0; r < values.size(); ++r)
                    for (std::size_t c = 0; c < values[r].size(); ++c) {
                        INFO(other << " row " << r + 1 << ", column " << c + 1);
                        if (t->rows.at(r).at(c) != "?") CHECK(std::fabs(values[r][c] - expected) > 1e-11 * std::max(1.0, std::fabs(expected)));
                    }
            }
        }
    }
    CHECK(kinds == std::set<std::string>{"score", "scaled_score", "masked_entry", "weight", "row_sum", "context_entry",
                                         "tanh_feature", "projection_entry", "output_entry"});
}

TEST_CASE("the quiz hides the mirror of a score in plain mode, where S = X·Xᵀ is symmetric", "[quiz]") {
    // docs/practice.md's example: round 2 asks the score of "starts" for "Your".
    const auto r = cli::run({"quiz", "--example", "your_journey", "--mode", "plain", "--rounds", "2", "--seed", "3",
                             "--answers", cli::data_file("practice/quiz_answers.txt")},
                            "", {{"NO_COLOR", "1"}, {"COLUMNS", ""}});
    const std::string round = r.out.substr(r.out.find("round 2 of 2"));
    const auto t = table_of(round, "scores", 0);
    REQUIRE(t);
    CHECK(t->rows[2][0] == "?");  // starts · Your, asked
    CHECK(t->rows[0][2] == "?");  // Your · starts, the same dot product
    std::size_t hidden = 0;
    for (const auto& row : t->rows) hidden += static_cast<std::size_t>(std::count(row.begin(), row.end(), "?"));
    CHECK(hidden == 2);
}

namespace {

// check-answers' text report of `answers` on `input` with `options`.
cli::Result report(const std::string& input, const std::string& answers, const std::vector<std::string>& options) {
    const cli::TempFile file(answers, "answers.json");
    std::vector<std::string> args{"check-answers", input, file.path()};
    args.insert(args.end(), options.begin(), options.end());
    return cli::run(args, "", {{"COLUMNS", ""}});
}

std::string stage_answer(const std::string& stage, const Grid& g) { return fmt::format(R"({{"{}": {}}})", stage, answer_grid(g)); }

}  // namespace

TEST_CASE("each diagnosis says what is true of its run", "[check-answers][mistakes]") {
    // √d_model in one head: your_journey (d_in = 3) projected to d_k = 2, weights from S/√3.
    {
        Model m = quiz_model("your_journey", "causal");
        const auto r = cli::run({"--example", "your_journey", "-m", "causal", "--dim", "2", "-f", "json"});
        const json doc = json::parse(r.out);
        m.wq = grid_from(doc["parameters"]["W_q"]), m.wk = grid_from(doc["parameters"]["W_k"]), m.wv = grid_from(doc["parameters"]["W_v"]);
        REQUIRE(m.d_head() == 2);
        Way way{"sqrt_d_model"};
        way.width = 3;
        const auto c = report("example:your_journey", stage_answer("weights", learner::run(m, way).heads[0].weights),
                              {"-m", "causal", "--dim", "2"});
        CHECK(c.exit_code == 1);
        CHECK_THAT(c.out, Contains("Likely cause (sqrt_d_model), reproducing all 36 numbers given: the scores were divided "
                                   "by √d_in = √3 ≈ 1.732, the width of the embeddings (d_model), instead of √d_k = √2 ≈ "
                                   "1.414, the width of the queries and keys"));
        // Generated weights are said to be generated, not the input's.
        const auto t = report("example:your_journey", stage_answer("queries", learner::run(m, {"transposed_w_q"}).heads[0].q),
                              {"-m", "causal", "--dim", "2"});
        CHECK_THAT(t.out, Contains("No known mistake reproduces these numbers. Row 1 worked through:"));  // W_q is 3 × 2
        Model square = quiz_model("your_journey", "self");
        const auto u = report("example:your_journey", stage_answer("queries", learner::run(square, {"transposed_w_q"}).heads[0].q),
                              {"-m", "self"});
        CHECK_THAT(u.out, Contains("Likely cause (transposed_w_q), reproducing all 18 numbers given: Q was computed as "
                                   "X·W_qᵀ, with W_q transposed: this run's W_q (generated from seed 123) is d_in × d_k = "
                                   "3 × 3"));
        // A row of queries that no mistake gives is worked through, column by column.
        Grid q = learner::run(square, {}).heads[0].q;
        q[1][0] += 0.25;
        const auto w = report("example:your_journey", stage_answer("queries", q), {"-m", "self"});
        CHECK_THAT(w.out, Contains("queries: differs at row 2 (journey), column 1 (q1)"));
        CHECK_THAT(w.out, Contains("No known mistake reproduces these numbers. Row 2 worked through:\n    q_journey = x_journey·W_q\n"));
    }
    // Several heads: W_q is as wide as all heads' queries side by side, d_in × (H·d_k).
    {
        const Model m = quiz_model("two_heads", "self");
        REQUIRE(m.heads == 2);
        const learner::Stages s = learner::run(m, {"transposed_w_q"});
        const auto c = report("example:two_heads",
                              fmt::format(R"({{"heads": {{"1": {{"queries": {}}}, "2": {{"queries": {}}}}}}})",
                                          answer_grid(s.heads[0].q), answer_grid(s.heads[1].q)),
                              {"-m", "self"});
        CHECK_THAT(c.out, Contains("Q was computed as X·W_qᵀ, with W_q transposed: the input's W_q is d_in × (H·d_k) = "
                                   "6 × 6, to be used as it stands"));
        CHECK(c.out.find("d_in × d_k = 6 × 6") == std::string::npos);
    }
    // Causal with a window of 2, taken on both sides: said so, with the keys it let in, and the
    // same weights from the causal mask alone are not called that.
    {
        Model m = quiz_model("your_journey", "causal");
        m.window = 2;
        Way two_sided{"no_mask"};
        two_sided.forgot = "two_sided";
        const Grid wrong = learner::run(m, two_sided).heads[0].weights;
        CHECK(wrong[0][1] > 0);  // the key after the first query took weight
        const auto c = report("example:your_journey", stage_answer("weights", wrong), {"-m", "causal", "--window", "2"});
        CHECK(c.exit_code == 1);
        CHECK_THAT(c.out, Contains("Likely cause (no_mask), reproducing all 36 numbers given: the window of 2 keys was taken "
                                   "on both sides, |i − j| < 2, as without the causal mask, so queries also weighed the keys "
                                   "up to 1 position after them: hide every key after its query too (j > i); with the causal "
                                   "mask a window of 2 keeps a query and at most 1 key before it."));
        Way causal_forgotten{"no_mask"};
        causal_forgotten.forgot = "causal";
        const auto d = report("example:your_journey", stage_answer("weights", learner::run(m, causal_forgotten).heads[0].weights),
                              {"-m", "causal", "--window", "2"});
        CHECK_THAT(d.out, Contains("Likely cause (no_mask), reproducing all 36 numbers given: the causal mask was not applied "
                                   "(the window of 2 keys (--window) was)"));
        CHECK(d.out.find("both sides") == std::string::npos);
    }
    // A fill that leaves the hidden keys exactly 0 says so; one that leaves them weight says how much.
    {
        const Fixture f = single("one head", {});
        cli::TempFile input(f.input);
        Way huge{"finite_fill"};
        huge.fill = -1e9;
        const learner::Stages s = learner::run(f.model, huge);
        const auto c = report(input.path(), fmt::format(R"({{"masked": {}, "weights": {}}})", answer_grid(s.heads[0].masked),
                                                        answer_grid(s.heads[0].weights)),
                              f.options);
        CHECK_THAT(c.out, Contains("masked: differs at row 1 (a), column 2 (b): expected hidden (−∞), given -1000000000.000000000\n"));
        CHECK_THAT(c.out, Contains("the hidden scores were set to -1e9 instead of −∞; in this run their weights still come "
                                   "out exactly 0, so only this stage shows it"));
        CHECK_THAT(c.out, Contains("weights: 25 numbers given, all agree"));
        CHECK(c.out.find("still leaves them some weight") == std::string::npos);
        CHECK(c.out.find("±inf") == std::string::npos);
        Way zero{"finite_fill"};
        const learner::Stages z = learner::run(f.model, zero);
        double leaked = 0;
        for (std::size_t i = 0; i < 5; ++i)
            for (std::size_t j = i + 1; j < 5; ++j) leaked = std::max(leaked, z.heads[0].weights[i][j]);
        const auto d = report(input.path(), stage_answer("weights", z.heads[0].weights), f.options);
        CHECK_THAT(d.out, Contains(fmt::format("the hidden scores were set to 0 instead of −∞, and a finite score still "
                                               "takes part in the softmax (in this run a hidden key gets a weight of {:.4g})",
                                               leaked)));
        // A hidden key's weight is expected as 0, with the tolerance of the number given.
        const auto h = report(input.path(), R"({"weights": {"cell": [1, 2], "value": 0.5}})", f.options);
        CHECK_THAT(h.out, Contains("weights: differs at row 1 (a), column 2 (b): expected 0 (a hidden key), given 0.5 (±0.05 for 1 decimal)\n"));
        // Sixteen decimals: the run's rounding is the wider tolerance, and said to be.
        const double right = learner::run(f.model, {}).heads[0].weights[1][0];
        const auto p = report(input.path(), fmt::format(R"({{"weights": {{"cell": [2, 1], "value": {:.16f}}}}})", right + 3e-9),
                              f.options);
        CHECK_THAT(p.out, Contains("(±1e-09, the rounding a float64 run allows here; 16 decimals alone would allow ±5e-17)\n"));
    }
    // Dividing by the sum with negative scores: the first row whose "weights" leave [0, 1].
    {
        const Fixture f = single("one head", {});
        cli::TempFile input(f.input);
        const learner::Stages s = learner::run(f.model, {"sum_instead_of_softmax"});
        std::string expected;
        for (std::size_t i = 0; i < 5 && expected.empty(); ++i) {
            bool negative = false, below = false, above = false;
            for (std::size_t j = 0; j <= i; ++j) {  // causal: the keys up to the query
                negative = negative || s.heads[0].masked[i][j] < 0;
                below = below || s.heads[0].weights[i][j] < 0;
                above = above || s.heads[0].weights[i][j] > 1;
            }
            if (negative && (below || above))
                expected = fmt::format("; with negative scores, as in row {} ({}), the division by their sum gives {}, which "
                                       "softmax never does (e^s is never negative).",
                                       i + 1, static_cast<char>('a' + i),
                                       below && above ? "negative weights and weights above 1"
                                       : below        ? "negative weights"
                                                      : "weights above 1");
        }
        REQUIRE(!expected.empty());
        const auto c = report(input.path(), stage_answer("weights", s.heads[0].weights), f.options);
        CHECK_THAT(c.out, Contains("Likely cause (sum_instead_of_softmax), reproducing all 25 numbers given: each score was "
                                   "divided by its row's sum: softmax takes e to the power of each score first, then "
                                   "divides by the row's sum of those" + expected));
    }
    // Weights stored (out, in), multiplied as stored.
    {
        Shape stored;
        stored.layout = "out_in";
        const Fixture f = single("layout", stored);
        cli::TempFile input(f.input);
        const auto c = report(input.path(), stage_answer("keys", learner::run(f.model, {"transposed_w_k"}).heads[0].k), f.options);
        CHECK_THAT(c.out, Contains("K was computed as X·W_kᵀ: the input stores W_k as nn.Linear keeps a weight, (out, in) = "
                                   "6 × 6, and it was multiplied as stored; turn it first"));
    }
    // Bahdanau's words: target steps, and the encoder states that the weights multiply.
    {
        const Model m = bahdanau_model("teacher_smiled_fr");
        const std::string input = cli::data_file("teacher_smiled_fr.json");
        const auto c = report(input, stage_answer("context", learner::run(m, {"context_from_scores"}).heads[0].context), {});
        CHECK_THAT(c.out, Contains("multiply the weights (the softmax of each row of scores) by the encoder states H."));
        CHECK(c.out.find(" by V") == std::string::npos);
        const auto o = report(input, stage_answer("weights", learner::run(m, {"softmax_over_columns"}).heads[0].weights), {});
        CHECK_THAT(o.out, Contains("so that each target step's weights sum to 1."));
        CHECK(o.out.find("query") == std::string::npos);
        const auto t = report(input, stage_answer("scores", learner::run(m, {"no_tanh"}).heads[0].scores), {});
        CHECK_THAT(t.out, Contains("Likely cause (no_tanh), reproducing all 12 numbers given: the additive score was "
                                   "computed without its tanh"));
    }
    // Overflow: the row, its largest score and float64's limit.
    {
        Shape large;
        large.scale = 30, large.seed = 5;
        const Fixture f = single("large", large);
        cli::TempFile input(f.input);
        const learner::Stages s = learner::run(f.model, {"softmax_overflow"});
        std::size_t row = 0;
        double max = 0;
        for (std::size_t i = 0; i < 5 && max <= 709.78; ++i) {
            max = *std::max_element(s.heads[0].masked[i].begin(), s.heads[0].masked[i].end());
            row = i;
        }
        const auto c = report(input.path(), stage_answer("weights", s.heads[0].weights), f.options);
        CHECK_THAT(c.out, Contains(fmt::format("in row {} ({}) the largest score is {:.6g}, and e^{:.6g} is beyond float64 "
                                               "(whose largest number is about e^709.78), so it is ∞",
                                               row + 1, static_cast<char>('a' + row), max, max)));
    }
}

TEST_CASE("the quiz hints at a mistake only for the number that mistake gives", "[quiz][mistakes]") {
    // The issue's round: a hidden masked entry of your_journey in causal mode.
    const std::vector<std::string> options{"--mode", "causal", "--stage", "masked", "--example", "your_journey",
                                           "--rounds", "1", "--seed", "2"};
    std::vector<std::string> args{"quiz", "-f", "json", "--answers", "/dev/null"};
    args.insert(args.end(), options.begin(), options.end());
    const json q = json::parse(cli::run(args).out)["questions"][0];
    const auto row = q["row"].get<std::size_t>() - 1, col = q["col"].get<std::size_t>() - 1;
    REQUIRE(col > row);  // a key after the query: hidden
    const Model m = quiz_model("your_journey", "causal");
    const double unmasked = learner::run(m, {}).heads[0].scaled[row][col];
    const auto hint = [&](const std::string& answer) {
        std::vector<std::string> a{"quiz", "-f", "json"};
        a.insert(a.end(), options.begin(), options.end());
        const auto r = cli::run(a, answer + "\n");
        return json::parse(r.out)["questions"][0]["mistake"];
    };
    CHECK(hint(fmt::format("{:.4f}", unmasked))["name"] == "no_mask");  // the score, left unmasked
    CHECK(hint("-1e9")["name"] == "finite_fill");
    CHECK(hint("-0.5").is_null());  // a number no mistake gives: no hint
    CHECK(hint(fmt::format("{:.4f}", unmasked + 0.01)).is_null());
    std::vector<std::string> t{"quiz"};
    t.insert(t.end(), options.begin(), options.end());
    const auto text = cli::run(t, fmt::format("{:.4f}\n", unmasked), {{"NO_COLOR", "1"}, {"COLUMNS", ""}});
    CHECK_THAT(text.out, Contains(fmt::format("hint (no_mask): {:.4f} is what this entry becomes when the causal mask was "
                                              "not applied",
                                              unmasked)));
    CHECK(text.out.find("finite_fill") == std::string::npos);
    // A weight of the row asked, from a fill of 0: the hint quotes that row's leak, not the run's.
    std::vector<std::string> w{"quiz", "-f", "json", "--answers", "/dev/null", "--mode", "causal", "--stage", "weights",
                               "--example", "your_journey", "--rounds", "1", "--seed", "2"};
    const json wq = json::parse(cli::run(w).out)["questions"][0];
    const auto wrow = wq["row"].get<std::size_t>() - 1, wcol = wq["col"].get<std::size_t>() - 1;
    Way zero{"finite_fill"};
    const Grid leaky = learner::run(m, zero).heads[0].weights;
    double in_row = 0, in_run = 0;
    for (std::size_t i = 0; i < leaky.size(); ++i)
        for (std::size_t j = i + 1; j < leaky[i].size(); ++j) {
            in_run = std::max(in_run, leaky[i][j]);
            if (i == wrow) in_row = std::max(in_row, leaky[i][j]);
        }
    REQUIRE(in_row > 0);
    REQUIRE(fmt::format("{:.4g}", in_row) != fmt::format("{:.4g}", in_run));  // the two figures tell apart
    std::vector<std::string> wt(w.begin(), w.end());
    wt.erase(wt.begin() + 1, wt.begin() + 5);  // the text quiz, answering on stdin
    const auto leak = cli::run(wt, fmt::format("{:.4f}\n", leaky[wrow][wcol]), {{"NO_COLOR", "1"}, {"COLUMNS", ""}});
    CHECK_THAT(leak.out, Contains(fmt::format("(in row {} ({}) a hidden key gets a weight of {:.4g})", wrow + 1,
                                              wq["row_token"].get<std::string>(), in_row)));
    CHECK(leak.out.find("in this run a hidden key") == std::string::npos);
}
