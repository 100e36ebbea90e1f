// attntrace train: the loss and its gradient against the test's own plain loops and central
// differences, the training loop against a loop of the test's own, and the command: the same
// bytes for any --threads, the learned model read back by a trace, the report's claims
// recomputed from the saved weights, and bad input refused.
#include "attention/training.hpp"
#include "input/tasks.hpp"
#include "support/cli.hpp"
#include "support/error_line.hpp"
#include "support/training_loops.hpp"

#include "support/catch.hpp"
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <csignal>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace attntrace;
using Catch::Matchers::Contains;

namespace {

using namespace training_loops;

// X·W (+ b) in plain loops.
Grid project(const Grid& X, const Grid& W, const std::vector<double>* b) {
    Grid out(X.size(), std::vector<double>(W[0].size(), 0.0));
    for (std::size_t i = 0; i < X.size(); ++i)
        for (std::size_t c = 0; c < W[0].size(); ++c) {
            double s = b ? (*b)[c] : 0.0;
            for (std::size_t k = 0; k < W.size(); ++k) s += X[i][k] * W[k][c];
            out[i][c] = s;
        }
    return out;
}

std::vector<double> row_of(const std::optional<Vector>& v) {
    return v ? std::vector<double>(v->data(), v->data() + v->size()) : std::vector<double>{};
}

// The example's loss in plain loops: −log A[q, k], or ½‖A·V − T‖².
double naive_loss(const Projections& w, const TrainingExample& e, bool causal) {
    const Grid X = grid_of(e.inputs);
    const auto bq = row_of(w.query_bias), bk = row_of(w.key_bias), bv = row_of(w.value_bias);
    const Grid Q = project(X, grid_of(w.query), w.query_bias ? &bq : nullptr);
    const Grid K = project(X, grid_of(w.key), w.key_bias ? &bk : nullptr);
    double loss = 0;
    if (e.focus) loss -= std::log(weights_row(Q, K, static_cast<std::size_t>(e.focus->query), causal)[static_cast<std::size_t>(e.focus->key)]);
    if (e.target) {
        const Grid V = project(X, grid_of(w.value), w.value_bias ? &bv : nullptr);
        for (std::size_t i = 0; i < X.size(); ++i) {
            const auto a = weights_row(Q, K, i, causal);
            for (std::size_t c = 0; c < V[0].size(); ++c) {
                double z = 0;
                for (std::size_t j = 0; j < X.size(); ++j) z += a[j] * V[j][c];
                const double d = z - (*e.target)(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(c));
                loss += 0.5 * d * d;
            }
        }
    }
    return loss;
}

// Every parameter entry of `w`, for nudging.
std::vector<double*> entries(Projections& w) {
    std::vector<double*> out;
    for (Matrix* m : {&w.query, &w.key, &w.value})
        for (Eigen::Index i = 0; i < m->size(); ++i) out.push_back(m->data() + i);
    for (auto* b : {&w.query_bias, &w.key_bias, &w.value_bias})
        if (*b)
            for (Eigen::Index i = 0; i < (*b)->size(); ++i) out.push_back((*b)->data() + i);
    return out;
}

// The gradient by central differences of naive_loss.
std::vector<double> differences(Projections w, const TrainingExample& e, bool causal) {
    std::vector<double> g;
    const double h = 1e-6;
    for (double* x : entries(w)) {
        const double keep = *x;
        *x = keep + h;
        const double up = naive_loss(w, e, causal);
        *x = keep - h;
        const double down = naive_loss(w, e, causal);
        *x = keep;
        g.push_back((up - down) / (2 * h));
    }
    return g;
}

Projections small_weights(bool bias) {
    TrainingSet set;
    set.d_in = 3;
    TrainSettings s;
    s.d_k = 2, s.d_v = 2, s.bias = bias, s.seed = 7;
    Projections w = initial_weights(set, s);
    if (bias) *w.query_bias << 0.1, -0.2, *w.key_bias << 0.3, 0.05, *w.value_bias << -0.1, 0.2;
    return w;
}

}  // namespace

TEST_CASE("train: each example's loss and gradient agree with plain loops and central differences", "[train]") {
    for (const bool focus : {true, false})
        for (const bool causal : {false, true})
            for (const bool bias : {false, true}) {
                INFO("focus " << focus << " causal " << causal << " bias " << bias);
                const TrainingExample e = small_example(focus);
                const Projections w = small_weights(bias);
                Projections g;
                const double loss = example_loss(w, e, causal, &g);
                CHECK(loss == Approx(naive_loss(w, e, causal)).epsilon(1e-12));
                const std::vector<double> expected = differences(w, e, causal);
                const std::vector<double*> got = entries(g);
                REQUIRE(got.size() == expected.size());
                for (std::size_t i = 0; i < got.size(); ++i) CHECK(*got[i] == Approx(expected[i]).margin(1e-8));
            }
}

TEST_CASE("train: full-batch sgd without momentum is W ← W − lr·∇L, step by step", "[train]") {
    // The test's own loop: the mean loss of the examples, its gradient by central differences,
    // and the plain update, against train()'s curve at every step.
    const TrainingSet set = small_set();
    TrainSettings s;
    s.d_k = 2, s.d_v = 2, s.seed = 7, s.optimizer = Optimizer::sgd, s.momentum = 0, s.lr = 0.3;
    s.steps = 5, s.batch = 2, s.every = 1;
    const Training t = train(set, s);
    REQUIRE(t.curve.size() == 6);
    Projections w = initial_weights(set, s);
    for (int step = 0; step <= 5; ++step) {
        const double mean = (naive_loss(w, set.train[0], false) + naive_loss(w, set.train[1], false)) / 2;
        INFO("step " << step);
        // The differences are good to about 1e-10, and their error builds up over the steps.
        CHECK(t.curve[static_cast<std::size_t>(step)].loss == Approx(mean).epsilon(1e-9));
        if (step == 5) break;
        const auto g0 = differences(w, set.train[0], false), g1 = differences(w, set.train[1], false);
        const auto xs = entries(w);
        for (std::size_t i = 0; i < xs.size(); ++i) *xs[i] -= 0.3 * (g0[i] + g1[i]) / 2;
    }
    const auto learned = entries(const_cast<Projections&>(t.learned));
    const auto mine = entries(w);
    for (std::size_t i = 0; i < mine.size(); ++i) CHECK(*learned[i] == Approx(*mine[i]).margin(1e-7));
}

TEST_CASE("train: adam's first step moves every weight by lr against its gradient's sign", "[train]") {
    // With bias correction, Adam's first step is lr · g / (|g| + ε): lr·sign(g) for any g ≫ ε.
    TrainingSet set;
    set.d_in = 3;
    set.train = {small_example(true)};
    TrainSettings s;
    s.d_k = 2, s.d_v = 2, s.seed = 7, s.lr = 0.01, s.steps = 1, s.batch = 1;
    const Training t = train(set, s);
    Projections start = initial_weights(set, s), g;
    (void)example_loss(start, set.train[0], false, &g);
    const auto before = entries(start), after = entries(const_cast<Projections&>(t.learned)), grad = entries(g);
    for (std::size_t i = 0; i < before.size(); ++i) {
        const double expected = std::abs(*grad[i]) > 1e-6 ? -0.01 * (*grad[i] > 0 ? 1 : -1) : 0.0;
        if (expected != 0) CHECK(*after[i] - *before[i] == Approx(expected).epsilon(1e-6));
        else CHECK(std::abs(*after[i] - *before[i]) <= 0.01);
    }
}

TEST_CASE("train: who_did_it's sentences put the subject 1 to 32 words before the verb, the only person", "[train]") {
    const TrainingSet set = built_in_task("who_did_it", 5, 300, 60);
    CHECK(set.train.size() == 240);
    CHECK(set.held_out.size() == 60);
    std::size_t shortest = 100, longest = 0;
    for (const auto* part : {&set.train, &set.held_out})
        for (const TrainingExample& e : *part) {
            REQUIRE(e.focus);
            CHECK(e.focus->query == static_cast<Eigen::Index>(e.tokens.size()) - 1);
            CHECK(e.focus->key == 1);
            const auto gap = static_cast<std::size_t>(e.focus->query - e.focus->key);
            shortest = std::min(shortest, gap), longest = std::max(longest, gap);
            int singular_people = 0;  // the features: person in column 0, plural in column 1
            for (Eigen::Index i = 0; i < e.inputs.rows(); ++i)
                singular_people += e.inputs(i, 0) == 1 && e.inputs(i, 1) == 0;
            CHECK(singular_people == 1);
        }
    CHECK(shortest == 1);
    CHECK(longest == 32);
    REQUIRE(set.shown);
    CHECK(set.shown->tokens.size() == 12);
    CHECK(set.shown->tokens[1] == "teacher");
    CHECK(set.shown->tokens[11] == "smiled");
}

TEST_CASE("train: the command's numbers are the same bytes for any --threads, and held-out accuracy reaches 95%",
          "[train][threads]") {
    cli::TempDir dir;
    const auto one = cli::run({"train", "who_did_it", "--threads", "1", "--format", "json", "-o", dir / "one.json"});
    const auto two = cli::run({"train", "who_did_it", "--threads", "2", "--format", "json", "-o", dir / "two.json"});
    const auto a = json_of(one), b = json_of(two);
    CHECK(a["curve"] == b["curve"]);
    CHECK(cli::read_file(dir / "one.json") == cli::read_file(dir / "two.json"));
    CHECK(a["curve"].back()["held_out_accuracy"].get<double>() >= 0.95);
    CHECK(a["curve"].front()["step"] == 0);
    CHECK(a["curve"].back()["step"] == 300);
}

TEST_CASE("train: the learned model is an input whose trace says so, and its focus weight is the report's", "[train]") {
    cli::TempDir dir;
    const auto report = json_of(cli::run({"train", "who_did_it", "--steps", "60", "--format", "json", "-o", dir / "m.json"}));
    const auto model = nlohmann::json::parse(cli::read_file(dir / "m.json"));
    // The test's own forward pass of the saved weights: row "smiled" of the weights.
    const auto grid = [](const nlohmann::json& rows) { return rows.get<Grid>(); };
    const Grid X = grid(model["embeddings"]);
    const Grid Q = project(X, grid(model["weights"]["query"]), nullptr);
    const Grid K = project(X, grid(model["weights"]["key"]), nullptr);
    const auto a = weights_row(Q, K, 11, false);
    CHECK(a[1] == Approx(report["curve"].back()["focus"].get<double>()).epsilon(1e-12));
    CHECK(a[1] > 0.9);
    const auto trace = json_of(cli::run({dir / "m.json", "-m", "self", "-s", "weights", "--format", "json"}));
    bool said = false;
    for (const auto& note : trace["notes"])
        said = said || note.get<std::string>().find("learned by attntrace train: task who_did_it, 60 steps of adam") !=
                           std::string::npos;
    CHECK(said);
    // --steps 0 writes the initial weights: those the seed generates for a trace (d_v = d_k).
    json_of(cli::run({"train", "who_did_it", "--steps", "0", "--format", "json", "-o", dir / "zero.json"}));
    const auto zero = nlohmann::json::parse(cli::read_file(dir / "zero.json"));
    const auto generated = json_of(cli::run({dir / "zero.json", "-m", "self", "-s", "weights", "--format", "json"}));
    TrainingSet set;
    set.d_in = 8;
    TrainSettings s;
    const Projections w = initial_weights(set, s);
    CHECK(zero["weights"]["query"].get<Grid>() == grid_of(w.query));
    CHECK(generated["mode"] == "self");
}

TEST_CASE("train: a learner's JSON Lines file trains, and its mistakes are named by line", "[train]") {
    cli::TempDir dir;
    {
        std::ofstream f(dir / "task.jsonl");
        f << R"({"tokens": ["x", "y", "z"], "embeddings": [[1, 0], [0, 1], [1, 1]], "focus": {"query": "z", "key": 1}})"
          << "\n\n"
          << R"({"tokens": ["p", "q"], "embeddings": [[0, 1], [1, 0]], "focus": {"query": 2, "key": "q"}})" << "\n";
    }
    const auto r = json_of(cli::run({"train", dir / "task.jsonl", "--held-out", "0", "--steps", "50", "--format", "json"}));
    CHECK(r["examples"]["train"] == 2);
    CHECK(r["curve"].back()["loss"].get<double>() < r["curve"].front()["loss"].get<double>());
    {
        std::ofstream f(dir / "bad.jsonl");
        f << R"({"tokens": ["x", "y"], "embeddings": [[1, 0], [0, 1]], "focus": {"query": 1, "key": 2}})" << "\n"
          << R"({"tokens": ["x", "y"], "embeddings": [[1, 0]], "focus": {"query": 1, "key": 2}})" << "\n";
    }
    cli::require_error_line(cli::run({"train", dir / "bad.jsonl"}), 1, "bad.jsonl:2: /embeddings: 1 rows, expected 2");
    {
        std::ofstream f(dir / "ahead.jsonl");
        f << R"({"tokens": ["x", "y"], "embeddings": [[1, 0], [0, 1]], "focus": {"query": 1, "key": 2}})" << "\n";
    }
    cli::require_error_line(cli::run({"train", dir / "ahead.jsonl", "-m", "causal"}), 1,
                            "asks token 1 to look at token 2, after it, which the causal mask hides");
    cli::require_error_line(cli::run({"train", "who_did_it", "--lr", "-1"}), 2, "expected a number above 0");
    cli::require_error_line(cli::run({"train", "who_did_it", "-f", "csv"}), 2, "\"csv\" is not one of table, json");
    cli::require_error_line(cli::run({"train", "nothing_here"}), 1, "nothing_here");
}

TEST_CASE("train: example:teacher_learned is what its documented command writes, and it traces", "[train]") {
    cli::TempDir dir;
    json_of(cli::run({"train", "who_did_it", "--format", "json", "-o", dir / "learned.json"}));
    CHECK(cli::read_file(dir / "learned.json") == cli::read_file(cli::data_file("teacher_learned.json")));
    const auto trace = json_of(cli::run({"example:teacher_learned", "-s", "weights", "--format", "json"}));
    CHECK(trace["mode"] == "self");
}

TEST_CASE("train: example:teachers_shortcut is teacher_learned with the plural moved, and its verb finds the wrong noun",
          "[train]") {
    const auto learned = nlohmann::json::parse(cli::read_file(cli::data_file("teacher_learned.json")));
    const auto shortcut = nlohmann::json::parse(cli::read_file(cli::data_file("teachers_shortcut.json")));
    // What its description says was done: the same weights and note, the plural feature (the
    // second number) moved from "students" to the subject, and three words respelled.
    CHECK(shortcut["weights"] == learned["weights"]);
    CHECK(shortcut["learned"] == learned["learned"]);
    auto tokens = learned["tokens"].get<std::vector<std::string>>();
    tokens[1] = "teachers", tokens[3] = "were", tokens[10] = "student";
    CHECK(shortcut["tokens"].get<std::vector<std::string>>() == tokens);
    Grid X = learned["embeddings"].get<Grid>();
    X[1][1] = 1, X[10][1] = 0;
    CHECK(shortcut["embeddings"].get<Grid>() == X);
    // The test's own forward pass: the row of "smiled" looks at "student", not at its subject.
    const Grid Q = project(X, shortcut["weights"]["query"].get<Grid>(), nullptr);
    const Grid K = project(X, shortcut["weights"]["key"].get<Grid>(), nullptr);
    const auto a = weights_row(Q, K, 11, false);
    CHECK(a[10] > 0.995);
    CHECK(a[1] < 0.005);
}

TEST_CASE("train --write-examples writes the task as a file of examples that trains the same way", "[train]") {
    cli::TempDir dir;
    const auto built_in = json_of(cli::run({"train", "who_did_it", "--steps", "40", "--every", "10", "--format", "json",
                                            "--write-examples", dir / "task.jsonl"}));
    const auto from_file = json_of(cli::run({"train", dir / "task.jsonl", "--steps", "40", "--every", "10", "--format", "json"}));
    CHECK(from_file["examples"] == built_in["examples"]);
    REQUIRE(from_file["curve"].size() == built_in["curve"].size());
    for (std::size_t i = 0; i < built_in["curve"].size(); ++i) {
        CHECK(from_file["curve"][i]["loss"] == built_in["curve"][i]["loss"]);
        CHECK(from_file["curve"][i]["held_out_accuracy"] == built_in["curve"][i]["held_out_accuracy"]);
    }
    // The first line is the first training sentence: its verb's focus is on its subject, word 2.
    std::ifstream lines(dir / "task.jsonl");
    std::string first;
    std::getline(lines, first);
    const auto line = nlohmann::json::parse(first);
    CHECK(line["focus"]["key"] == 2);
    CHECK(line["focus"]["query"] == line["tokens"].size());
    cli::require_error_line(cli::run({"train", "who_did_it", "-o", dir / "same", "--write-examples", dir / "same"}), 2,
                            "two outputs go to");
}

TEST_CASE("train shows a progress line on a terminal once it takes a second, and erases it before the report",
          "[train][progress]") {
    // Stopped by Ctrl-C while the line shows: the step, the loss and held-out accuracy of the
    // curve's last point (step 0 here: --every is far away), erased by the signal.
    const auto stopped = cli::run_in_terminal_until({"train", "who_did_it", "--steps", "100000000", "--every", "100000000"},
                                                    "ETA", SIGINT);
    CHECK(stopped.exit_code == 128 + SIGINT);
    const auto first = json_of(cli::run({"train", "who_did_it", "--steps", "0", "--format", "json"}));
    const std::string loss = fmt::format("loss {:.4f}, held-out {:.1f}% at step 0", first["curve"][0]["loss"].get<double>(),
                                         100 * first["curve"][0]["held_out_accuracy"].get<double>());
    const std::size_t bar = stopped.out.rfind("train · step ");
    REQUIRE(bar != std::string::npos);
    CHECK_THAT(stopped.out.substr(bar), Contains(loss) && Contains("elapsed · ETA"));
    CHECK(stopped.out.substr(stopped.out.find("\x1b[K", bar) + 3) == "\r\x1b[K");
    // A run that ends: the line erased, then the report, whole. The steps double from 1,000 until
    // a run lasts 1.5 s, so the case stays short in every build: 1,000 steps take 30 ms in the
    // Release build and over a second under ASan.
    cli::Result ended;
    std::vector<std::string> args;
    std::string steps;
    for (int count = 1000;; count *= 2) {
        REQUIRE(count <= 4096000);
        steps = std::to_string(count);
        args = {"train", "who_did_it", "--steps", steps, "--every", steps};
        const auto start = std::chrono::steady_clock::now();
        ended = cli::run_in_terminal(args);
        if (std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(1500)) break;
    }
    INFO(steps << " steps");
    REQUIRE(ended.exit_code == 0);
    const std::size_t last = ended.out.rfind("train · step ");
    REQUIRE(last != std::string::npos);
    const std::string after = ended.out.substr(ended.out.find("\x1b[K", last) + 3);
    CHECK(after.starts_with("\r\x1b[Ktrain who_did_it: "));
    CHECK_THAT(after, Contains(steps + " steps in"));
    // A short run (10 steps) shows none, and neither does the long run when stderr is not a terminal.
    CHECK(cli::run_in_terminal({"train", "who_did_it", "--steps", "10"}).out.find("train · step") == std::string::npos);
    CHECK(cli::run(args).err.empty());
}

TEST_CASE("train -f jsonl writes the curve a point a line and --snapshots keeps the weights a shorter run ends with",
          "[train]") {
    const auto whole = json_of(cli::run({"train", "who_did_it", "--steps", "6", "--every", "2", "--snapshots", "3",
                                         "--format", "json"}));
    const auto lines = cli::run({"train", "who_did_it", "--steps", "6", "--every", "2", "--snapshots", "3", "--format", "jsonl"});
    REQUIRE(lines.exit_code == 0);
    std::istringstream in(lines.out);
    std::vector<nlohmann::json> points, snapshots;
    for (std::string line; std::getline(in, line);) {
        const auto j = nlohmann::json::parse(line);
        (j["schema"] == "attntrace.train-line/1" ? points : snapshots).push_back(j);
    }
    REQUIRE(points.size() == whole["curve"].size());
    for (std::size_t i = 0; i < points.size(); ++i) {
        auto p = points[i];
        p.erase("schema");
        CHECK(p == whole["curve"][i]);
    }
    // Each snapshot is the model a run of that many steps writes with -o.
    REQUIRE(snapshots.size() == 3);
    REQUIRE(whole["snapshots"].size() == 3);
    cli::TempDir dir;
    for (std::size_t i = 0; i < 3; ++i) {
        const int step = static_cast<int>(3 * i);
        CHECK(snapshots[i]["step"] == step);
        CHECK(snapshots[i]["weights"] == whole["snapshots"][i]["weights"]);
        const std::string model = dir / fmt::format("m{}.json", step);
        REQUIRE(cli::run({"train", "who_did_it", "--steps", std::to_string(step), "-o", model}).exit_code == 0);
        CHECK(snapshots[i]["weights"] == nlohmann::json::parse(cli::read_file(model))["weights"]);
    }
    cli::require_error_line(cli::run({"train", "who_did_it", "--snapshots", "3"}), 2,
                            "--snapshots keeps the weights in the report's JSON: add -f json or -f jsonl");
}

TEST_CASE("train --svg draws the curve's four lines with a point per point of the curve", "[train]") {
    const cli::TempDir dir;
    const auto r = cli::run({"train", "who_did_it", "--every", "30", "--svg", dir / "curve.svg", "--format", "json"});
    REQUIRE(r.exit_code == 0);
    const auto report = json_of(r);
    const std::string svg = dir / "curve.svg";
    CHECK(cli::run_program({"xmllint", "--noout", svg}).exit_code == 0);
    CHECK(cli::run_program({"xmllint", "--xpath", "count(//*[local-name()='polyline'])", svg}).out == "4\n");
    // Each line has a point per point of the curve: pairs "x,y" separated by spaces.
    const std::string text = cli::read_file(svg);
    const std::size_t at = text.find("points=\"");
    REQUIRE(at != std::string::npos);
    const std::string points = text.substr(at + 8, text.find('"', at + 8) - at - 8);
    CHECK(static_cast<std::size_t>(std::count(points.begin(), points.end(), ',')) == report["curve"].size());
    CHECK_THAT(text, Contains("weight smiled → teacher"));
    cli::require_error_line(cli::run({"train", "who_did_it", "--compare-rnn", "--svg", dir / "no.svg"}), 2,
                            "--svg draws train's own curve");
    CHECK_FALSE(std::filesystem::exists(dir / "no.svg"));
}

TEST_CASE("train -o FILE.safetensors or .npz writes the same model as arrays that traces as the JSON one does",
          "[train]") {
    const cli::TempDir dir;
    for (const char* name : {"m.json", "m.safetensors", "m.npz"})
        REQUIRE(cli::run({"train", "who_did_it", "--steps", "60", "-o", dir / name}).exit_code == 0);
    const auto weights = [](const nlohmann::json& trace) { return trace["stages"][0]["data"]; };
    const auto json_trace = json_of(cli::run({dir / "m.json", "-s", "weights", "--format", "json"}));
    // safetensors keeps the tokens, the mode, the description and the note in its metadata.
    const auto safe = json_of(cli::run({dir / "m.safetensors", "-s", "weights", "--format", "json"}));
    CHECK(safe["mode"] == "self");
    CHECK(safe["tokens"] == json_trace["tokens"]);
    CHECK(safe["description"] == json_trace["description"]);
    CHECK(weights(safe) == weights(json_trace));
    bool noted = false;
    for (const auto& note : safe["notes"])
        noted = noted || note.get<std::string>().starts_with("the weights were learned by attntrace train: task who_did_it, 60 steps");
    CHECK(noted);
    // .npz keeps arrays alone, and the report says how to trace it: that command gives the same.
    const auto saved = cli::run({"train", "who_did_it", "--steps", "60", "-o", dir / "n.npz"});
    const std::string hint = "trace it with attntrace ";
    const std::size_t at = saved.out.find(hint);
    REQUIRE(at != std::string::npos);
    const std::string command = saved.out.substr(at + hint.size(), saved.out.find('\n', at) - at - hint.size());
    CHECK(command == dir / "n.npz" + " -m self --layout in_out --tokens \"the teacher who was teaching a difficult concept "
                                    "to the students smiled\"");
    const auto npz = json_of(cli::run({dir / "n.npz", "-m", "self", "--layout", "in_out", "--tokens",
                                       "the teacher who was teaching a difficult concept to the students smiled", "-s",
                                       "weights", "--format", "json"}));
    CHECK(npz["tokens"] == json_trace["tokens"]);
    CHECK(weights(npz) == weights(json_trace));
    CHECK(cli::read_file(dir / "m.npz") == cli::read_file(dir / "n.npz"));
}

TEST_CASE("train --embeddings: the inputs' gradient is central differences' and the learned vectors are the model's",
          "[train]") {
    // The gradient of the inputs, against central differences of the test's own loss.
    for (const bool focus : {true, false})
        for (const bool causal : {false, true}) {
            INFO("focus " << focus << " causal " << causal);
            TrainingExample e = small_example(focus);
            const Projections w = small_weights(true);
            Matrix dX;
            (void)example_loss(w, e, causal, nullptr, &dX);
            for (Eigen::Index i = 0; i < e.inputs.rows(); ++i)
                for (Eigen::Index c = 0; c < e.inputs.cols(); ++c) {
                    const double kept = e.inputs(i, c);
                    e.inputs(i, c) = kept + 1e-6;
                    const double up = naive_loss(w, e, causal);
                    e.inputs(i, c) = kept - 1e-6;
                    const double down = naive_loss(w, e, causal);
                    e.inputs(i, c) = kept;
                    CHECK(dX(i, c) == Approx((up - down) / 2e-6).margin(1e-8));
                }
        }
    // The command: the saved vectors moved, shared by a word's every use, and the report's
    // followed weight is the saved model's, recomputed in plain loops.
    const cli::TempDir dir;
    const auto report = json_of(cli::run({"train", "who_did_it", "--embeddings", "--steps", "40", "--format", "json", "-o",
                                          dir / "m.json"}));
    CHECK(report["embeddings"]["learned"] == true);
    const auto model = nlohmann::json::parse(cli::read_file(dir / "m.json"));
    const auto given = nlohmann::json::parse(cli::read_file(cli::data_file("teacher_learned.json")));
    CHECK(model["tokens"] == given["tokens"]);
    const Grid X = model["embeddings"].get<Grid>();
    CHECK(X != given["embeddings"].get<Grid>());
    CHECK(X[0] == X[9]);  // "the", twice: one vector
    CHECK(model["learned"]["embeddings"] == true);
    const Grid Q = project(X, model["weights"]["query"].get<Grid>(), nullptr);
    const Grid K = project(X, model["weights"]["key"].get<Grid>(), nullptr);
    CHECK(weights_row(Q, K, 11, false)[1] == Approx(report["curve"].back()["focus"].get<double>()).epsilon(1e-12));
    const auto trace = json_of(cli::run({dir / "m.json", "-s", "weights", "--format", "json"}));
    CHECK(trace["notes"][0].get<std::string>().starts_with("the weights and the embeddings were learned by attntrace train"));
    // The same bytes for any thread count, the table's gradients summed in order too.
    const auto one = cli::run({"train", "who_did_it", "--embeddings", "--steps", "40", "--format", "jsonl", "--threads", "1"});
    const auto two = cli::run({"train", "who_did_it", "--embeddings", "--steps", "40", "--format", "jsonl", "--threads", "2"});
    CHECK(one.out == two.out);
    // A word with two vectors cannot share one.
    {
        std::ofstream f(dir / "two.jsonl");
        f << R"({"tokens": ["x", "y"], "embeddings": [[1, 0], [0, 1]], "focus": {"query": 1, "key": 2}})" << "\n"
          << R"({"tokens": ["x", "y"], "embeddings": [[1, 1], [0, 1]], "focus": {"query": 1, "key": 2}})" << "\n";
    }
    cli::require_error_line(cli::run({"train", dir / "two.jsonl", "--embeddings"}), 1,
                            "\"x\" comes with two different vectors, and --embeddings learns one vector per word");
}

TEST_CASE("train --epochs N takes N passes over the training examples, the last batch of each the rest", "[train]") {
    // who_did_it: 500 examples, 20% held out, so 400 trained on.
    for (const auto& [batch, per_epoch] : {std::pair{16, 25}, std::pair{30, 14}, std::pair{400, 1}}) {
        INFO("batch " << batch);
        const auto report = json_of(cli::run({"train", "who_did_it", "--epochs", "3", "--batch", std::to_string(batch), "-f", "json"}));
        CHECK(report["steps"] == 3 * per_epoch);
        CHECK(report["epochs_begun"] == 3);
    }
    // The same run as the steps it stands for.
    const cli::TempDir dir;
    REQUIRE(cli::run({"train", "who_did_it", "--epochs", "2", "--batch", "30", "-o", dir / "epochs.json"}).exit_code == 0);
    REQUIRE(cli::run({"train", "who_did_it", "--steps", "28", "--batch", "30", "-o", dir / "steps.json"}).exit_code == 0);
    CHECK(cli::read_file(dir / "epochs.json") == cli::read_file(dir / "steps.json"));
    cli::require_error_line(cli::run({"train", "who_did_it", "--epochs", "2", "--steps", "10"}), 2, "--epochs");
}
