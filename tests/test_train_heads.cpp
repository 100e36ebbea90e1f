// attntrace train --heads: a layer of several heads mixed by W_o, its loss and gradient against
// the test's own plain loops and central differences (the heads' mean weight, one named head,
// a target through W_o), the update against the test's own loop, the saved model read back by
// a trace with its heads, and the options that do not fit refused.
#include "attention/training.hpp"
#include "support/cli.hpp"
#include "support/error_line.hpp"
#include "support/training_loops.hpp"

#include "support/catch.hpp"
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

using namespace attntrace;

namespace {

using namespace training_loops;

// X·W (+ b), columns first … first + count − 1 of W only, in plain loops.
Grid project(const Grid& X, const Matrix& W, const std::optional<Vector>& b, Eigen::Index first, Eigen::Index count) {
    Grid out(X.size(), std::vector<double>(static_cast<std::size_t>(count), 0.0));
    for (std::size_t i = 0; i < X.size(); ++i)
        for (Eigen::Index c = 0; c < count; ++c) {
            double s = b ? (*b)(first + c) : 0.0;
            for (std::size_t k = 0; k < X[i].size(); ++k) s += X[i][k] * W(static_cast<Eigen::Index>(k), first + c);
            out[i][static_cast<std::size_t>(c)] = s;
        }
    return out;
}

// Head h's (0-based) weights, all rows.
Grid head_weights(const Projections& w, const Grid& X, int heads, int h, bool causal) {
    const Eigen::Index d = w.query.cols() / heads;
    const Grid Q = project(X, w.query, w.query_bias, h * d, d), K = project(X, w.key, w.key_bias, h * d, d);
    Grid A;
    for (std::size_t i = 0; i < X.size(); ++i) A.push_back(weights_row(Q, K, i, causal));
    return A;
}

// The example's loss in plain loops: focus, −log of the heads' mean weight (or of head
// `focus_head`'s); target, ½‖[A_1·V_1 … A_H·V_H]·W_o + b_o − T‖².
double naive_loss(const Projections& w, const TrainingExample& e, bool causal, int heads, int focus_head) {
    const Grid X = grid_of(e.inputs);
    double loss = 0;
    if (e.focus) {
        const auto q = static_cast<std::size_t>(e.focus->query), k = static_cast<std::size_t>(e.focus->key);
        double sum = 0;
        int counted = 0;
        for (int h = 0; h < heads; ++h)
            if (focus_head == 0 || focus_head == h + 1) sum += head_weights(w, X, heads, h, causal)[q][k], ++counted;
        loss -= std::log(sum / counted);
    }
    if (e.target) {
        const Eigen::Index dv = w.value.cols() / heads;
        Grid C(X.size(), std::vector<double>(static_cast<std::size_t>(w.value.cols()), 0.0));
        for (int h = 0; h < heads; ++h) {
            const Grid A = head_weights(w, X, heads, h, causal), V = project(X, w.value, w.value_bias, h * dv, dv);
            for (std::size_t i = 0; i < X.size(); ++i)
                for (Eigen::Index c = 0; c < dv; ++c)
                    for (std::size_t j = 0; j < X.size(); ++j)
                        C[i][static_cast<std::size_t>(h * dv + c)] += A[i][j] * V[j][static_cast<std::size_t>(c)];
        }
        for (std::size_t i = 0; i < X.size(); ++i)
            for (Eigen::Index c = 0; c < w.output->cols(); ++c) {
                double o = w.output_bias ? (*w.output_bias)(c) : 0.0;
                for (std::size_t m = 0; m < C[i].size(); ++m) o += C[i][m] * (*w.output)(static_cast<Eigen::Index>(m), c);
                const double d = o - (*e.target)(static_cast<Eigen::Index>(i), c);
                loss += 0.5 * d * d;
            }
    }
    return loss;
}

// Every parameter entry of `w`, W_o and b_o included, for nudging.
std::vector<double*> entries(Projections& w) {
    std::vector<double*> out;
    for (Matrix* m : {&w.query, &w.key, &w.value, w.output ? &*w.output : nullptr})
        if (m)
            for (Eigen::Index i = 0; i < m->size(); ++i) out.push_back(m->data() + i);
    for (auto* b : {&w.query_bias, &w.key_bias, &w.value_bias, &w.output_bias})
        if (*b)
            for (Eigen::Index i = 0; i < (*b)->size(); ++i) out.push_back((*b)->data() + i);
    return out;
}

std::vector<double> differences(Projections w, const TrainingExample& e, bool causal, int heads, int focus_head) {
    std::vector<double> g;
    const double step = 1e-6;
    for (double* x : entries(w)) {
        const double keep = *x;
        *x = keep + step;
        const double up = naive_loss(w, e, causal, heads, focus_head);
        *x = keep - step;
        const double down = naive_loss(w, e, causal, heads, focus_head);
        *x = keep;
        g.push_back((up - down) / (2 * step));
    }
    return g;
}

// Two heads of d_k = d_v = 2 over d_in = 3, W_o 4 × d_out, biases nonzero when asked.
Projections two_heads(bool bias, Eigen::Index d_out) {
    TrainingSet set;
    set.d_in = 3;
    TrainSettings s;
    s.heads = 2, s.d_k = 2, s.d_v = 2, s.d_out = d_out, s.bias = bias, s.seed = 7;
    Projections w = initial_weights(set, s);
    REQUIRE(w.query.cols() == 4);
    REQUIRE(w.output->rows() == 4);
    REQUIRE(w.output->cols() == d_out);
    if (bias) {
        *w.query_bias << 0.1, -0.2, 0.15, 0.05;
        *w.key_bias << 0.3, 0.05, -0.1, 0.2;
        *w.value_bias << -0.1, 0.2, 0.05, -0.3;
        w.output_bias->setLinSpaced(-0.2, 0.2);
    }
    return w;
}

}  // namespace

TEST_CASE("train --heads: each example's loss and gradient agree with plain loops and central differences",
          "[train][heads]") {
    for (const bool focus : {true, false})
        for (const int focus_head : {0, 2})
            for (const bool causal : {false, true})
                for (const bool bias : {false, true}) {
                    if (!focus && focus_head > 0) continue;  // a target example is about every head
                    INFO("focus " << focus << " head " << focus_head << " causal " << causal << " bias " << bias);
                    const TrainingExample e = small_example(focus);
                    const Projections w = two_heads(bias, focus ? 3 : 2);
                    Projections g;
                    const double loss = example_loss(w, e, causal, &g, nullptr, {2, focus_head});
                    CHECK(loss == Approx(naive_loss(w, e, causal, 2, focus_head)).epsilon(1e-12));
                    const std::vector<double> expected = differences(w, e, causal, 2, focus_head);
                    const std::vector<double*> got = entries(g);
                    REQUIRE(got.size() == expected.size());
                    for (std::size_t i = 0; i < got.size(); ++i) CHECK(*got[i] == Approx(expected[i]).margin(1e-8));
                }
}

TEST_CASE("train --heads: the heads' mean weight pushes each head by its share of the weight on the key",
          "[train][heads]") {
    // d(−log Ā)/dW for head h is its own one-head gradient, −d log A_h/dW, times A_h[q, k] / Σ_g A_g[q, k].
    const TrainingExample e = small_example(true);
    const Projections w = two_heads(false, 3);
    Projections mean, one, two;
    (void)example_loss(w, e, false, &mean, nullptr, {2, 0});
    (void)example_loss(w, e, false, &one, nullptr, {2, 1});
    (void)example_loss(w, e, false, &two, nullptr, {2, 2});
    const Grid X = grid_of(e.inputs);
    const double a1 = head_weights(w, X, 2, 0, false)[2][0], a2 = head_weights(w, X, 2, 1, false)[2][0];
    CHECK(mean.query.leftCols(2).isApprox(one.query.leftCols(2) * (a1 / (a1 + a2)), 1e-12));
    CHECK(mean.query.rightCols(2).isApprox(two.query.rightCols(2) * (a2 / (a1 + a2)), 1e-12));
    CHECK(mean.key.rightCols(2).isApprox(two.key.rightCols(2) * (a2 / (a1 + a2)), 1e-12));
    // A focus example reaches neither W_v nor W_o, nor with --focus-head 1 the second head.
    CHECK(mean.value.isZero(0));
    CHECK(mean.output->isZero(0));
    CHECK(one.query.rightCols(2).isZero(0));
    CHECK(one.key.rightCols(2).isZero(0));
}

TEST_CASE("train --heads: full-batch sgd through W_o is W ← W − lr·∇L, step by step", "[train][heads]") {
    const TrainingSet set = small_set();
    TrainSettings s;
    s.heads = 2, s.d_k = 2, s.d_v = 2, s.d_out = 2, s.bias = true, s.seed = 7;
    s.optimizer = Optimizer::sgd, s.momentum = 0, s.lr = 0.3, s.steps = 4, s.batch = 2, s.every = 1;
    const Training t = train(set, s);
    REQUIRE(t.curve.size() == 5);
    Projections w = initial_weights(set, s);
    for (int step = 0; step <= 4; ++step) {
        INFO("step " << step);
        const double mean = (naive_loss(w, set.train[0], false, 2, 0) + naive_loss(w, set.train[1], false, 2, 0)) / 2;
        CHECK(t.curve[static_cast<std::size_t>(step)].loss == Approx(mean).epsilon(1e-9));
        if (step == 4) break;
        const auto g0 = differences(w, set.train[0], false, 2, 0), g1 = differences(w, set.train[1], false, 2, 0);
        const auto xs = entries(w);
        for (std::size_t i = 0; i < xs.size(); ++i) *xs[i] -= 0.3 * (g0[i] + g1[i]) / 2;
    }
    auto learned = t.learned;
    const auto got = entries(learned), mine = entries(w);
    REQUIRE(got.size() == mine.size());
    for (std::size_t i = 0; i < mine.size(); ++i) CHECK(*got[i] == Approx(*mine[i]).margin(1e-7));
}

TEST_CASE("train --heads 2 -o: the model traces with its two heads, each head's weight the report's, recomputed",
          "[train][heads]") {
    cli::TempDir dir;
    const auto report = json_of(cli::run({"train", "who_did_it", "--heads", "2", "--focus-head", "1", "--steps", "80",
                                          "-f", "json", "-o", dir / "m.json"}));
    CHECK(report["dims"]["heads"] == 2);
    CHECK(report["dims"]["d_k"] == 2);
    CHECK(report["dims"]["d_out"] == 8);
    CHECK(report["focus_head"] == 1);
    const auto model = nlohmann::json::parse(cli::read_file(dir / "m.json"));
    CHECK(model["heads"] == 2);
    // The test's own forward pass of the saved weights: row "smiled", column "teacher", per head.
    const auto matrix = [](const nlohmann::json& rows) {
        const auto g = rows.get<Grid>();
        Matrix m(static_cast<Eigen::Index>(g.size()), static_cast<Eigen::Index>(g[0].size()));
        for (std::size_t i = 0; i < g.size(); ++i)
            for (std::size_t j = 0; j < g[i].size(); ++j) m(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = g[i][j];
        return m;
    };
    Projections w;
    w.query = matrix(model["weights"]["query"]), w.key = matrix(model["weights"]["key"]);
    const Grid X = model["embeddings"].get<Grid>();
    const double h1 = head_weights(w, X, 2, 0, false)[11][1], h2 = head_weights(w, X, 2, 1, false)[11][1];
    CHECK(report["focus_by_head"][0].get<double>() == Approx(h1).epsilon(1e-12));
    CHECK(report["focus_by_head"][1].get<double>() == Approx(h2).epsilon(1e-12));
    CHECK(report["curve"].back()["focus"].get<double>() == Approx(h1).epsilon(1e-12));  // --focus-head 1 follows head 1
    CHECK(h1 > 0.9);
    CHECK(model["description"]["self"].get<std::string>().ends_with(
        fmt::format("\"smiled\" gives \"teacher\" {:.2f} of its weight in head 1 and {:.2f} in head 2.", h1, h2)));
    // Only head 1 learned: head 2's columns of W_q and W_k, W_v and W_o are the --steps 0 model's.
    REQUIRE(cli::run({"train", "who_did_it", "--heads", "2", "--steps", "0", "-o", dir / "zero.json"}).exit_code == 0);
    const auto zero = nlohmann::json::parse(cli::read_file(dir / "zero.json"));
    for (const char* name : {"query", "key"})
        CHECK(matrix(model["weights"][name]).rightCols(2) == matrix(zero["weights"][name]).rightCols(2));
    CHECK(matrix(model["weights"]["query"]).leftCols(2) != matrix(zero["weights"]["query"]).leftCols(2));
    CHECK(model["weights"]["value"] == zero["weights"]["value"]);
    CHECK(model["weights"]["output"] == zero["weights"]["output"]);
    // The trace reads the heads from the model and shows the same weights.
    const auto trace = json_of(cli::run({dir / "m.json", "-s", "weights", "-f", "json"}));
    REQUIRE(trace["stages"].size() == 2);
    CHECK(trace["stages"][0]["data"][11][1].get<double>() == Approx(h1).epsilon(1e-12));
    CHECK(trace["stages"][1]["data"][11][1].get<double>() == Approx(h2).epsilon(1e-12));
    const auto text = cli::run({"train", "who_did_it", "--heads", "2", "--focus-head", "1", "--steps", "80"});
    CHECK_THAT(text.out, Catch::Contains(fmt::format("each head's weight of it at the end: head 1 {:.4f}, head 2 {:.4f}\n",
                                                     h1, h2)));
    CHECK_THAT(text.out, Catch::Contains("W_v and W_o: no focus loss reaches them, so they stay as drawn\n"));
    // With one head the report says it of W_v, and it holds too.
    REQUIRE(cli::run({"train", "who_did_it", "--steps", "60", "-o", dir / "one.json"}).exit_code == 0);
    REQUIRE(cli::run({"train", "who_did_it", "--steps", "0", "-o", dir / "one_zero.json"}).exit_code == 0);
    const auto one = nlohmann::json::parse(cli::read_file(dir / "one.json"));
    const auto one_zero = nlohmann::json::parse(cli::read_file(dir / "one_zero.json"));
    CHECK(one["weights"]["value"] == one_zero["weights"]["value"]);
    CHECK(one["weights"]["query"] != one_zero["weights"]["query"]);
    CHECK_THAT(cli::run({"train", "who_did_it", "--steps", "60"}).out,
               Catch::Contains("W_v: no focus loss reaches it, so it stays as drawn\n"));
}

TEST_CASE("train --heads 2: .safetensors keeps the heads in its metadata, and .npz's hint says --heads", "[train][heads]") {
    cli::TempDir dir;
    REQUIRE(cli::run({"train", "who_did_it", "--heads", "2", "--steps", "40", "-o", dir / "m.json"}).exit_code == 0);
    REQUIRE(cli::run({"train", "who_did_it", "--heads", "2", "--steps", "40", "-o", dir / "m.safetensors"}).exit_code == 0);
    const auto json_trace = json_of(cli::run({dir / "m.json", "-s", "weights", "-f", "json"}));
    const auto safe = json_of(cli::run({dir / "m.safetensors", "-s", "weights", "-f", "json"}));
    REQUIRE(safe["stages"].size() == 2);
    CHECK(safe["stages"] == json_trace["stages"]);
    CHECK(safe["description"] == json_trace["description"]);
    const auto saved = cli::run({"train", "who_did_it", "--heads", "2", "--steps", "40", "-o", dir / "n.npz"});
    CHECK_THAT(saved.out, Catch::Contains(dir / "n.npz" + " -m self --heads 2 --layout in_out --tokens"));
    const auto npz = json_of(cli::run({dir / "n.npz", "-m", "self", "--heads", "2", "--layout", "in_out", "--tokens",
                                       "the teacher who was teaching a difficult concept to the students smiled", "-s",
                                       "weights", "-f", "json"}));
    CHECK(npz["stages"] == json_trace["stages"]);
}

TEST_CASE("train --heads: the same bytes for any --threads, and the options that do not fit are refused", "[train][heads]") {
    cli::TempDir dir;
    {
        std::ofstream file(dir / "targets.jsonl");
        for (int i = 0; i < 12; ++i)
            file << fmt::format(R"({{"tokens": ["a", "b", "c"], "embeddings": [[{0}, 1, 0], [0, {0}, 1], [1, 0, {0}]], )"
                                R"("target": [[1, {0}], [0, 1], [{0}, 0]]}})",
                                0.1 * i)
                 << '\n';
    }
    for (const std::string& task : {std::string("who_did_it"), dir / "targets.jsonl"}) {
        INFO(task);
        const auto one = cli::run({"train", task, "--heads", "2", "--bias", "--steps", "30", "--threads", "1", "-o",
                                   dir / "one.json"});
        const auto two = cli::run({"train", task, "--heads", "2", "--bias", "--steps", "30", "--threads", "2", "-o",
                                   dir / "two.json"});
        REQUIRE(one.exit_code == 0);
        REQUIRE(two.exit_code == 0);
        CHECK(cli::read_file(dir / "one.json") == cli::read_file(dir / "two.json"));
    }
    // The targets train W_o: it moves, and the loss falls.
    const auto report = json_of(cli::run({"train", dir / "targets.jsonl", "--heads", "2", "--steps", "200", "-f", "json",
                                          "-o", dir / "after.json"}));
    CHECK(report["dims"]["d_out"] == 2);
    CHECK(report["curve"].back()["loss"].get<double>() < 0.5 * report["curve"][0]["loss"].get<double>());
    REQUIRE(cli::run({"train", dir / "targets.jsonl", "--heads", "2", "--steps", "0", "-o", dir / "before.json"}).exit_code == 0);
    const auto output = [&](const char* name) { return nlohmann::json::parse(cli::read_file(dir / name))["weights"]["output"]; };
    CHECK(output("after.json").size() == 4);
    CHECK(output("after.json") != output("before.json"));
    cli::require_error_line(cli::run({"train", "who_did_it", "--heads", "2", "--focus-head", "3"}), 2,
                            "--focus-head 3 names a head the layer does not have (it has 2");
    cli::require_error_line(cli::run({"train", "who_did_it", "--heads", "3", "--dim", "4"}), 2,
                            "--dim 4 does not split into 3 heads");
    cli::require_error_line(cli::run({"train", "who_did_it", "--compare-rnn", "--heads", "2"}), 2, "leave out --heads");
    cli::require_error_line(cli::run({"train", dir / "targets.jsonl", "--heads", "2", "--focus-head", "1"}), 2,
                            "trains on none");
}
