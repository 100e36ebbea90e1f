// Bahdanau (additive) attention and Luong's dot/general scores against naive loops.
#include "attention/bahdanau.hpp"
#include "input/examples.hpp"
#include "core/generator.hpp"
#include "input/load.hpp"
#include "support/cli.hpp"
#include "support/schema.hpp"

#include "support/catch.hpp"
#include <nlohmann/json.hpp>

#include <cmath>

using namespace attntrace;
using Catch::Contains;

namespace {

// e_tj = Σ_a v_a[a]·tanh(Σ_i s_t[i]·W_a[i][a] + Σ_i h_j[i]·U_a[i][a]), straight from the formula.
struct NaiveAlignment {
    std::vector<std::vector<double>> scores, weights, context;
};

NaiveAlignment naive_additive(const Matrix& s, const Matrix& h, const AdditiveWeights& w,
                              const std::vector<bool>* mask) {
    const auto n_tgt = static_cast<std::size_t>(s.rows()), n_src = static_cast<std::size_t>(h.rows());
    NaiveAlignment r;
    r.scores.assign(n_tgt, std::vector<double>(n_src));
    r.weights = r.scores;
    r.context.assign(n_tgt, std::vector<double>(static_cast<std::size_t>(h.cols()), 0.0));
    for (std::size_t t = 0; t < n_tgt; ++t) {
        for (std::size_t j = 0; j < n_src; ++j) {
            double e = 0;
            for (Eigen::Index a = 0; a < w.v_a.cols(); ++a) {
                double sw = 0, hu = 0;
                for (Eigen::Index i = 0; i < s.cols(); ++i) sw += s(static_cast<Eigen::Index>(t), i) * w.W_a(i, a);
                for (Eigen::Index i = 0; i < h.cols(); ++i) hu += h(static_cast<Eigen::Index>(j), i) * w.U_a(i, a);
                e += w.v_a(a) * std::tanh(sw + hu);
            }
            r.scores[t][j] = e;
        }
        double sum = 0;
        for (std::size_t j = 0; j < n_src; ++j)
            if (!mask || (*mask)[j]) sum += std::exp(r.scores[t][j]);
        for (std::size_t j = 0; j < n_src; ++j) {
            r.weights[t][j] = (!mask || (*mask)[j]) ? std::exp(r.scores[t][j]) / sum : 0.0;
            for (Eigen::Index i = 0; i < h.cols(); ++i)
                r.context[t][static_cast<std::size_t>(i)] += r.weights[t][j] * h(static_cast<Eigen::Index>(j), i);
        }
    }
    return r;
}

void require_close(const Matrix& actual, const std::vector<std::vector<double>>& expected, const char* what) {
    REQUIRE(actual.rows() == static_cast<Eigen::Index>(expected.size()));
    for (Eigen::Index r = 0; r < actual.rows(); ++r)
        for (Eigen::Index c = 0; c < actual.cols(); ++c) {
            INFO(what << " (" << r << ", " << c << ")");
            REQUIRE(actual(r, c) == Approx(expected[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)]).margin(1e-12).epsilon(0));
        }
}

Sequence labelled(const Matrix& m, const std::string& prefix) {
    Sequence s;
    s.vectors = m;
    for (Eigen::Index i = 0; i < m.rows(); ++i) s.tokens.push_back(prefix + std::to_string(i));
    return s;
}

EncoderDecoderInput random_pair(std::uint64_t seed, Eigen::Index n_src, Eigen::Index n_tgt,
                                Eigen::Index d_h, Eigen::Index d_s, Eigen::Index d_a) {
    SplitMix64 rng(seed);
    EncoderDecoderInput input;
    input.source = labelled(random_matrix(rng, n_src, d_h, 2.0), "h");
    input.target = labelled(random_matrix(rng, n_tgt, d_s, 2.0), "s");
    input.weights = AdditiveWeights{random_matrix(rng, d_s, d_a, 1.0), random_matrix(rng, d_h, d_a, 1.0),
                                    random_matrix(rng, 1, d_a, 1.5)};
    return input;
}

TraceOptions bahdanau_options(Score score = Score::additive) {
    TraceOptions o;
    o.mode = Mode::bahdanau;
    o.score = score;
    return o;
}

}  // namespace

TEST_CASE("additive scores, weights and context match naive loops for many shapes", "[bahdanau]") {
    struct Shape { Eigen::Index n_src, n_tgt, d_h, d_s, d_a; };
    const std::vector<Shape> shapes = {{1, 1, 1, 1, 1}, {1, 4, 3, 2, 5}, {5, 1, 2, 3, 1},
                                       {3, 4, 3, 3, 3}, {7, 8, 4, 6, 2}, {40, 35, 8, 5, 16}};
    std::uint64_t seed = 1;
    for (const auto& shape : shapes) {
        INFO("n_src " << shape.n_src << " n_tgt " << shape.n_tgt << " d_a " << shape.d_a);
        const auto input = random_pair(seed++, shape.n_src, shape.n_tgt, shape.d_h, shape.d_s, shape.d_a);
        const Trace t = trace_bahdanau(input, bahdanau_options());
        const auto expected = naive_additive(input.target.vectors, input.source.vectors, *input.weights, nullptr);
        require_close(t.find(StageId::scores)->data, expected.scores, "scores");
        require_close(t.find(StageId::weights)->data, expected.weights, "weights");
        require_close(t.find(StageId::context)->data, expected.context, "context");
        for (Eigen::Index r = 0; r < shape.n_tgt; ++r)
            CHECK(t.find(StageId::weights)->data.row(r).sum() == Approx(1.0).margin(1e-12).epsilon(0));
        CHECK(t.find(StageId::context)->data.cols() == shape.d_h);
        CHECK(t.find(StageId::projected_decoder)->data.cols() == shape.d_a);
    }
}

TEST_CASE("one source position gets all the weight", "[bahdanau]") {
    const auto input = random_pair(9, 1, 3, 2, 2, 2);
    const Trace t = trace_bahdanau(input, bahdanau_options());
    for (Eigen::Index r = 0; r < 3; ++r) CHECK(t.find(StageId::weights)->data(r, 0) == 1.0);
    // c_t = 1·h_1 for every target step.
    CHECK(t.find(StageId::context)->data.row(2) == input.source.vectors.row(0));
}

TEST_CASE("a source mask gives masked positions weight exactly 0", "[bahdanau]") {
    auto input = random_pair(11, 5, 4, 3, 3, 4);
    input.source_mask = std::vector<bool>{true, false, true, true, false};
    const Trace t = trace_bahdanau(input, bahdanau_options());
    const auto expected = naive_additive(input.target.vectors, input.source.vectors, *input.weights, &*input.source_mask);
    require_close(t.find(StageId::weights)->data, expected.weights, "weights");
    const Stage& masked = *t.find(StageId::masked);
    const Stage& weights = *t.find(StageId::weights);
    REQUIRE(masked.applied);
    REQUIRE(weights.allowed);
    for (Eigen::Index r = 0; r < 4; ++r) {
        CHECK(weights.data(r, 1) == 0.0);
        CHECK(weights.data(r, 4) == 0.0);
        CHECK(masked.data(r, 1) == -std::numeric_limits<double>::infinity());
        CHECK(weights.data.row(r).sum() == Approx(1.0).margin(1e-12).epsilon(0));
    }
}

TEST_CASE("bahdanau stages: names, shapes, labels, skipped steps", "[bahdanau]") {
    const auto input = random_pair(3, 3, 2, 4, 5, 6);
    const Trace t = trace_bahdanau(input, bahdanau_options());
    const std::vector<std::string> expected{"encoder_states", "decoder_states", "projected_decoder", "projected_encoder",
                                            "scores", "scaled", "masked", "weights", "context"};
    REQUIRE(t.stages.size() == expected.size());
    for (std::size_t i = 0; i < t.stages.size(); ++i) CHECK(t.stages[i].name() == expected[i]);
    CHECK(t.find(StageId::encoder_states)->data.rows() == 3);
    CHECK(t.find(StageId::decoder_states)->data.cols() == 5);
    CHECK(t.find(StageId::projected_encoder)->data.cols() == 6);
    CHECK(t.find(StageId::scores)->rows == input.target.tokens);
    CHECK(t.find(StageId::scores)->cols == input.source.tokens);
    CHECK_FALSE(t.find(StageId::scaled)->applied);
    CHECK_THAT(t.find(StageId::scaled)->reason, Contains("additive scores"));
    CHECK_FALSE(t.find(StageId::masked)->applied);
    CHECK_THAT(t.find(StageId::weights)->title, Contains("alignment matrix"));
    CHECK(t.dims == std::vector<std::pair<std::string, Eigen::Index>>{{"d_h", 4}, {"d_s", 5}, {"d_a", 6}});
}

TEST_CASE("Luong's dot and general scores against hand arithmetic", "[bahdanau]") {
    EncoderDecoderInput input;
    input.source = labelled((Matrix(2, 2) << 1, 0, 0.5, 2).finished(), "h");
    input.target = labelled((Matrix(1, 2) << 3, -1).finished(), "s");
    input.general_weight = (Matrix(2, 2) << 1, 2, 0, 1).finished();

    // dot: s·h_1 = 3·1 + (−1)·0 = 3; s·h_2 = 3·0.5 + (−1)·2 = −0.5.
    const Trace dot = trace_bahdanau(input, bahdanau_options(Score::dot));
    CHECK(dot.find(StageId::scores)->data(0, 0) == 3.0);
    CHECK(dot.find(StageId::scores)->data(0, 1) == -0.5);
    CHECK(dot.find(StageId::weights)->data(0, 0) == Approx(std::exp(3.0) / (std::exp(3.0) + std::exp(-0.5))));
    CHECK_FALSE(dot.find(StageId::projected_decoder)->applied);

    // general: s·W = [3·1 + (−1)·0, 3·2 + (−1)·1] = [3, 5]; ·h_1 = 3, ·h_2 = 1.5 + 10 = 11.5.
    const Trace general = trace_bahdanau(input, bahdanau_options(Score::general));
    CHECK(general.find(StageId::projected_decoder)->data(0, 1) == 5.0);
    CHECK(general.find(StageId::scores)->data(0, 0) == 3.0);
    CHECK(general.find(StageId::scores)->data(0, 1) == 11.5);
    CHECK(general.weights == WeightsOrigin::file);
}

TEST_CASE("the dot score needs states of one size", "[bahdanau]") {
    const auto input = random_pair(5, 2, 2, 3, 4, 2);
    REQUIRE_THROWS_WITH(trace_bahdanau(input, bahdanau_options(Score::dot), "pair.json"),
                        Contains("pair.json: the dot score needs") && Contains("d_s = 4") && Contains("d_h = 3"));
}

TEST_CASE("missing weights are generated from the seed and announced", "[bahdanau]") {
    auto input = random_pair(5, 2, 2, 3, 4, 2);
    input.weights.reset();
    TraceOptions o = bahdanau_options();
    o.dim = 7;
    const Trace t = trace_bahdanau(input, o);
    CHECK(t.weights == WeightsOrigin::generated);
    CHECK(t.find(StageId::projected_encoder)->data.cols() == 7);
    const AdditiveWeights w = generate_additive_weights(123, 4, 3, 7);
    const auto expected = naive_additive(input.target.vectors, input.source.vectors, w, nullptr);
    require_close(t.find(StageId::weights)->data, expected.weights, "weights");
}

TEST_CASE("the lecture's French examples align as their descriptions say", "[bahdanau][examples]") {
    const auto strongest_sources = [](std::string_view name, Score score) {
        const Example* e = find_example(name);
        REQUIRE(e != nullptr);
        const Problem p = load_problem(e->json, std::string(name));
        const Trace t = trace_bahdanau(std::get<EncoderDecoderInput>(p.input), bahdanau_options(score));
        std::vector<std::string> out;
        for (const auto column : t.find(StageId::weights)->strongest) out.push_back(t.source_tokens[static_cast<std::size_t>(column)]);
        return out;
    };
    for (const Score score : {Score::additive, Score::dot, Score::general}) {
        CHECK(strongest_sources("teacher_smiled_fr", score) == std::vector<std::string>{"The", "teacher", "smiled", "smiled"});
        CHECK(strongest_sources("black_cat_fr", score) == std::vector<std::string>{"the", "cat", "black"});
        CHECK(strongest_sources("padded_cat_fr", score) == std::vector<std::string>{"the", "cat", "black"});
        CHECK(strongest_sources("boy_apple_fr", score) ==
              std::vector<std::string>{"The", "boy", "ate", "ate", "a", "very", "big", "apple"});
    }
}

TEST_CASE("without its mask the padded example would look at <pad>", "[bahdanau][examples]") {
    const Problem p = load_problem(find_example("padded_cat_fr")->json, "padded");
    auto input = std::get<EncoderDecoderInput>(p.input);
    input.source_mask.reset();
    const Trace t = trace_bahdanau(input, bahdanau_options());
    for (const auto column : t.find(StageId::weights)->strongest) CHECK(t.source_tokens[static_cast<std::size_t>(column)] == "<pad>");
}

TEST_CASE("bahdanau JSON and table output", "[bahdanau][cli]") {
    const auto r = cli::run({"--example", "boy_apple_fr", "-f", "json"});
    REQUIRE(r.exit_code == 0);
    const auto doc = nlohmann::json::parse(r.out);
    schema::require_trace(doc);
    CHECK(doc["score"] == "additive");
    CHECK(doc["target_tokens"][1] == "garçon");
    CHECK(doc["source_tokens"].size() == 7);
    CHECK(doc["stages"].size() == 9);

    const auto masked = nlohmann::json::parse(cli::run({"--example", "padded_cat_fr", "-f", "json", "-s", "masked,weights"}).out);
    schema::require_trace(masked);
    CHECK(masked["stages"][0]["data"][0][3].is_null());
    CHECK(masked["stages"][1]["data"][0][3] == 0.0);
    CHECK(masked["stages"][1]["allowed"][2] == nlohmann::json({true, true, true, false, false}));

    const auto table = cli::run({"--example", "boy_apple_fr", "-s", "weights"});
    CHECK_THAT(table.out, Contains("bahdanau mode (additive score) · 7 source → 8 target tokens"));
    CHECK_THAT(table.out, Contains("the alignment matrix (target rows, source columns)"));
    CHECK_THAT(table.out, Contains("\ngarçon  0.0421  0.7476"));
    CHECK_THAT(table.out, Contains("\nmangé   0.0421  0.0421  0.7476") && Contains("1.0000  ate\n"));
}

TEST_CASE("the score option outside bahdanau mode is a usage error", "[bahdanau][cli][errors]") {
    const auto r = cli::run({"--score", "dot"});
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Contains("--score dot applies to mode bahdanau only"));
    const auto dim = cli::run({"--example", "black_cat_fr", "--score", "dot", "--dim", "4"});
    CHECK(dim.exit_code == 2);
    CHECK_THAT(dim.err, Contains("--dim sets d_a of the additive score"));
}
