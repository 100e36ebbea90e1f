// attntrace rnn: the RNN's hidden states against the test's own plain loops, both influences
// against central differences of plain loops, the drawn weights, the fit of a rate, and the
// command: its numbers recomputed from what it prints, its sentences checked against those
// numbers, an input's own "rnn" weights, and bad input refused.
#include "attention/rnn.hpp"
#include "attention/rnn_compare.hpp"
#include "core/error.hpp"
#include "support/cli.hpp"
#include "support/error_line.hpp"

#include "support/catch.hpp"
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace attntrace;
using Catch::Matchers::Contains;

namespace {

using Grid = std::vector<std::vector<double>>;

Grid grid_of(const nlohmann::json& j) { return j.get<Grid>(); }
Matrix matrix_of(const Grid& g) {
    Matrix m(static_cast<Eigen::Index>(g.size()), static_cast<Eigen::Index>(g[0].size()));
    for (std::size_t i = 0; i < g.size(); ++i)
        for (std::size_t c = 0; c < g[0].size(); ++c) m(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(c)) = g[i][c];
    return m;
}

// h_t = tanh(x_t·W_x + h_{t−1}·W_h + b_h), in plain loops; all the states.
Grid plain_rnn(const Grid& X, const Grid& Wx, const Grid& Wh, const std::vector<double>& b) {
    const std::size_t d_h = Wh.size();
    std::vector<double> h(d_h, 0.0);
    Grid out;
    for (const auto& x : X) {
        std::vector<double> next(d_h);
        for (std::size_t c = 0; c < d_h; ++c) {
            double s = b[c];
            for (std::size_t k = 0; k < x.size(); ++k) s += x[k] * Wx[k][c];
            for (std::size_t k = 0; k < d_h; ++k) s += h[k] * Wh[k][c];
            next[c] = std::tanh(s);
        }
        h = next;
        out.push_back(h);
    }
    return out;
}

// z_i of one head of self-attention, in plain loops.
std::vector<double> plain_attention(const Grid& X, const Grid& Wq, const Grid& Wk, const Grid& Wv,
                                    const std::vector<double>& bq, std::size_t i) {
    const auto row = [](const std::vector<double>& x, const Grid& W, const std::vector<double>* b) {
        std::vector<double> out(W[0].size(), 0.0);
        for (std::size_t c = 0; c < out.size(); ++c) {
            out[c] = b ? (*b)[c] : 0.0;
            for (std::size_t k = 0; k < x.size(); ++k) out[c] += x[k] * W[k][c];
        }
        return out;
    };
    const auto q = row(X[i], Wq, &bq);
    std::vector<double> s;
    for (const auto& x : X) {
        const auto k = row(x, Wk, nullptr);
        double dot = 0;
        for (std::size_t c = 0; c < k.size(); ++c) dot += q[c] * k[c];
        s.push_back(dot / std::sqrt(static_cast<double>(q.size())));
    }
    double top = s[0], total = 0;
    for (double v : s) top = std::max(top, v);
    for (double& v : s) total += (v = std::exp(v - top));
    std::vector<double> z(Wv[0].size(), 0.0);
    for (std::size_t j = 0; j < X.size(); ++j) {
        const auto v = row(X[j], Wv, nullptr);
        for (std::size_t c = 0; c < z.size(); ++c) z[c] += s[j] / total * v[c];
    }
    return z;
}

// ‖∂f/∂x_j‖ for every row j of X, by central differences of `f`.
template <typename F>
std::vector<double> central_influence(const Grid& X, F f) {
    const double h = 1e-6;
    std::vector<double> out;
    for (std::size_t j = 0; j < X.size(); ++j) {
        double sum = 0;
        for (std::size_t c = 0; c < X[j].size(); ++c) {
            Grid up = X, down = X;
            up[j][c] += h, down[j][c] -= h;
            const auto a = f(up), b = f(down);
            for (std::size_t k = 0; k < a.size(); ++k) sum += std::pow((a[k] - b[k]) / (2 * h), 2);
        }
        out.push_back(std::sqrt(sum));
    }
    return out;
}

// Numbers of the test's own, fixed, of no pattern.
Grid numbers(std::size_t rows, std::size_t cols, double salt) {
    Grid g(rows, std::vector<double>(cols));
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t c = 0; c < cols; ++c) g[i][c] = 0.9 * std::sin(salt + 1.7 * static_cast<double>(i) + 2.3 * static_cast<double>(c));
    return g;
}

// The least-squares line through (distance, log v), in the test's own words.
std::pair<double, double> fit(const std::vector<double>& v) {
    const double n = static_cast<double>(v.size());
    double sx = 0, sy = 0, sxx = 0, sxy = 0, syy = 0;
    for (std::size_t j = 0; j < v.size(); ++j) {
        const double x = n - 1 - static_cast<double>(j), y = std::log(v[j]);
        sx += x, sy += y, sxx += x * x, sxy += x * y, syy += y * y;
    }
    const double cxx = sxx - sx * sx / n, cxy = sxy - sx * sy / n, cyy = syy - sy * sy / n;
    return {std::exp(cxy / cxx), cxy * cxy / (cxx * cyy)};
}

}  // namespace

TEST_CASE("rnn: two steps of h_t = tanh(x_t·W_x + h_{t−1}·W_h + b_h) by hand", "[rnn]") {
    RnnWeights w;
    w.W_x = Matrix{{0.5, -1.0}};
    w.W_h = Matrix{{0.2, 0.0}, {0.4, -0.3}};
    w.b_h = Vector{{0.1, 0.0}};
    const Matrix X{{1.0}, {2.0}};
    const Matrix H = rnn_hidden_states(w, X);
    // h_1 = tanh([0.5 + 0.1, −1]) ; h_2 = tanh([1 + 0.1 + 0.2·h11 + 0.4·h12, −2 − 0.3·h12]).
    const double h11 = std::tanh(0.6), h12 = std::tanh(-1.0);
    CHECK(H(0, 0) == Approx(h11).epsilon(1e-15));
    CHECK(H(0, 1) == Approx(h12).epsilon(1e-15));
    CHECK(H(1, 0) == Approx(std::tanh(1.1 + 0.2 * h11 + 0.4 * h12)).epsilon(1e-15));
    CHECK(H(1, 1) == Approx(std::tanh(-2.0 - 0.3 * h12)).epsilon(1e-15));
    CHECK_THROWS_AS(rnn_hidden_states(w, Matrix{{1.0, 2.0}}), DataError);
}

TEST_CASE("rnn: both influences agree with central differences of plain loops", "[rnn]") {
    const Grid X = numbers(6, 3, 0.3), Wx = numbers(3, 4, 1.1), Wh = numbers(4, 4, 2.9);
    const std::vector<double> b{0.1, -0.2, 0.05, 0.0};
    RnnWeights w{matrix_of(Wx), matrix_of(Wh), Vector{{0.1, -0.2, 0.05, 0.0}}};
    const Vector rnn = rnn_influence(w, rnn_hidden_states(w, matrix_of(X)));
    const auto rnn_expected = central_influence(X, [&](const Grid& x) { return plain_rnn(x, Wx, Wh, b).back(); });
    for (std::size_t j = 0; j < X.size(); ++j) CHECK(rnn(static_cast<Eigen::Index>(j)) == Approx(rnn_expected[j]).epsilon(1e-6));

    const Grid Wq = numbers(3, 2, 0.7), Wk = numbers(3, 2, 1.9), Wv = numbers(3, 3, 4.1);
    const std::vector<double> bq{0.3, -0.1};
    Projections p;
    p.query = matrix_of(Wq), p.key = matrix_of(Wk), p.value = matrix_of(Wv);
    p.query_bias = Vector{{0.3, -0.1}};
    for (const std::size_t i : {std::size_t{5}, std::size_t{2}}) {
        INFO("the query is token " << i + 1);
        const Vector attention = attention_influence(p, matrix_of(X), static_cast<Eigen::Index>(i));
        const auto expected = central_influence(X, [&](const Grid& x) { return plain_attention(x, Wq, Wk, Wv, bq, i); });
        for (std::size_t j = 0; j < X.size(); ++j)
            CHECK(attention(static_cast<Eigen::Index>(j)) == Approx(expected[j]).epsilon(1e-6));
    }
    p.output = Matrix::Identity(3, 3);
    CHECK_THROWS_AS(attention_influence(p, matrix_of(X), 5), DataError);
}

TEST_CASE("rnn: drawn weights: orthogonal W_h has every singular value the gain, scaled stays in its range", "[rnn]") {
    const RnnWeights o = draw_rnn(7, 3, 5, RnnInit::orthogonal, 0.8);
    CHECK((o.W_h.transpose() * o.W_h - 0.64 * Matrix::Identity(5, 5)).cwiseAbs().maxCoeff() < 1e-12);
    CHECK(o.W_x.rows() == 3);
    CHECK(o.W_x.cols() == 5);
    CHECK(o.b_h.isZero());
    const RnnWeights s = draw_rnn(7, 3, 5, RnnInit::scaled, 2.0);
    CHECK(s.W_h.cwiseAbs().maxCoeff() <= 2.0 / std::sqrt(5.0));
    CHECK(s.W_x.cwiseAbs().maxCoeff() <= 1.0 / std::sqrt(3.0));
    CHECK(s.W_x == o.W_x);  // W_x comes first from the stream, whatever W_h is
    CHECK(draw_rnn(7, 3, 5, RnnInit::scaled, 2.0).W_h == s.W_h);
    CHECK(draw_rnn(8, 3, 5, RnnInit::scaled, 2.0).W_h != s.W_h);
}

TEST_CASE("rnn: the fitted rate of a geometric influence is its ratio, and a V has no steady rate", "[rnn]") {
    const auto geometric = decay_per_token(Vector{{0.125, 0.25, 0.5, 1.0}});
    REQUIRE(geometric);
    CHECK(geometric->factor == Approx(0.5).epsilon(1e-12));
    CHECK(geometric->r2 == Approx(1.0).epsilon(1e-12));
    const auto v = decay_per_token(Vector{{1.0, 0.1, 1.0}});
    REQUIRE(v);
    CHECK(v->factor == Approx(1.0).epsilon(1e-12));
    CHECK(v->r2 == Approx(0.0).margin(1e-12));
    CHECK_FALSE(decay_per_token(Vector{{1.0, 0.5}}));
    CHECK_FALSE(decay_per_token(Vector{{1.0, 0.0, 0.5}}));
}

TEST_CASE("rnn: the command's states and influences are its printed weights' own, and its sentences hold for them",
          "[rnn]") {
    for (const std::vector<std::string>& extra : {std::vector<std::string>{}, {"--init", "orthogonal"}, {"--gain", "0.5"},
                                                 {"example:teacher_smiled", "--hidden", "3"}}) {
        std::vector<std::string> args{"rnn"};
        args.insert(args.end(), extra.begin(), extra.end());
        INFO(fmt::format("{}", fmt::join(args, " ")));
        auto json_args = args;
        json_args.insert(json_args.end(), {"-f", "json"});
        const auto r = cli::run(json_args);
        REQUIRE(r.exit_code == 0);
        const auto doc = nlohmann::json::parse(r.out);
        const Grid X = grid_of(doc["embeddings"]), Wx = grid_of(doc["rnn"]["parameters"]["W_x"]),
                   Wh = grid_of(doc["rnn"]["parameters"]["W_h"]);
        const auto b = doc["rnn"]["parameters"]["b_h"].get<std::vector<double>>();
        const Grid H = plain_rnn(X, Wx, Wh, b);
        const Grid shown = grid_of(doc["stages"]["hidden_states"]);
        REQUIRE(shown.size() == H.size());
        for (std::size_t t = 0; t < H.size(); ++t)
            for (std::size_t c = 0; c < H[t].size(); ++c) CHECK(shown[t][c] == Approx(H[t][c]).epsilon(1e-12));
        CHECK(doc["final"].get<std::vector<double>>() == shown.back());
        const auto expected = central_influence(X, [&](const Grid& x) { return plain_rnn(x, Wx, Wh, b).back(); });
        std::vector<double> rnn, attention;
        for (std::size_t j = 0; j < X.size(); ++j) {
            const auto& row = doc["influence"][j];
            CHECK(row["distance"] == X.size() - 1 - j);
            CHECK(row["rnn"].get<double>() == Approx(expected[j]).epsilon(1e-6).margin(1e-10));
            rnn.push_back(row["rnn"]);
            attention.push_back(row["attention"]);
        }
        // The sentences of the table, against the test's own fit of the printed influences.
        const auto table = cli::run(args);
        REQUIRE(table.exit_code == 0);
        for (const auto& [name, values] : {std::pair{"the RNN", &rnn}, std::pair{"attention", &attention}}) {
            const auto [factor, r2] = fit(*values);
            INFO(name << ": factor " << factor << ", r2 " << r2);
            const auto [low, high] = std::minmax_element(values->begin(), values->end());
            if (*high <= 1.05 * *low) {
                CHECK_THAT(table.out, Contains(fmt::format("{}: about the same at every distance", name)));
            } else if (r2 >= 0.8) {
                CHECK_THAT(table.out, Contains(fmt::format("{}: ×{:.3f} per token further back, a steady rate", name, factor)));
                CHECK_THAT(table.out, Contains(fmt::format("it {} every {:.1f} tokens", factor < 1 ? "halves" : "doubles",
                                                           std::log(2.0) / std::abs(std::log(factor)))));
            } else {
                CHECK_THAT(table.out, Contains(fmt::format("{}: no steady rate with distance (a line through the logarithms "
                                                           "explains {:.0f}%",
                                                           name, 100 * r2)));
            }
        }
        const auto tokens = doc["tokens"].get<std::vector<std::string>>();
        const auto strongest = [&](const std::vector<double>& v) {
            std::size_t best = 0;
            for (std::size_t j = 1; j + 1 < v.size(); ++j)
                if (v[j] > v[best]) best = j;
            REQUIRE(v[best] > 0);
            const auto alike = std::count(v.begin(), v.end() - 1, v[best]);  // tokens with the same vector tie
            if (alike > 1) return fmt::format("{} earlier tokens, tied", alike);
            return fmt::format("\"{}\" ({} back)", tokens[best], v.size() - 1 - best);
        };
        CHECK_THAT(table.out, Contains(fmt::format("in the RNN {}, in attention {}", strongest(rnn), strongest(attention))));
    }
    // The lecture's sentence with the attention attntrace train learned: the RNN's influence
    // fades at a steady rate and attention's largest reach is the subject, ten words back.
    const auto r = cli::run({"rnn"});
    CHECK_THAT(r.out, Contains("in attention \"teacher\" (10 back)"));
    CHECK_THAT(r.out, Contains("the RNN: ×0.") && Contains("it halves every"));
    CHECK_THAT(r.out, Contains("note: the weights were learned by attntrace train"));
}

TEST_CASE("rnn: an input's own rnn weights are used and said so, and their mistakes are refused", "[rnn]") {
    const std::string input = R"({"tokens": ["a", "b", "c"], "embeddings": [[1, 0], [0, 1], [1, 1]],
        "rnn": {"W_x": [[0.5, 0.1, 0], [0, -0.4, 0.2]], "W_h": [[0.3, 0, 0], [0, 0.3, 0], [0.1, 0, 0.3]], "b_h": [0, 0.1, 0]}})";
    const cli::TempFile file(input);
    const auto r = cli::run({"rnn", file.path(), "-f", "json"});
    REQUIRE(r.exit_code == 0);
    const auto doc = nlohmann::json::parse(r.out);
    CHECK(doc["rnn"]["origin"] == "W_x, W_h and b_h from the input (\"rnn\")");
    const Grid H = plain_rnn({{1, 0}, {0, 1}, {1, 1}}, {{0.5, 0.1, 0}, {0, -0.4, 0.2}}, {{0.3, 0, 0}, {0, 0.3, 0}, {0.1, 0, 0.3}},
                             {0, 0.1, 0});
    const Grid shown = grid_of(doc["stages"]["hidden_states"]);
    for (std::size_t t = 0; t < 3; ++t)
        for (std::size_t c = 0; c < 3; ++c) CHECK(shown[t][c] == Approx(H[t][c]).epsilon(1e-12));
    CHECK(doc["attention"]["origin"] == "W_q, W_k and W_v generated from seed 123 (d_k = d_v = 2), not learned");
    CHECK(cli::run({file.path(), "-m", "self"}).exit_code == 0);  // a trace reads the same input
    cli::require_error_line(cli::run({"rnn", file.path(), "--hidden", "4"}), 2,
                            "--hidden shapes drawn RNN weights, and this input gives its own (\"rnn\")");
    const cli::TempFile wrong(R"({"tokens": ["a"], "embeddings": [[1, 0]], "rnn": {"W_x": [[1], [0]], "W_h": [[1, 0]], "b_h": [0]}})");
    cli::require_error_line(cli::run({"rnn", wrong.path()}), 1, "/rnn/W_h");
    const cli::TempFile missing(R"({"tokens": ["a"], "embeddings": [[1, 0]], "rnn": {"W_x": [[1], [0]]}})");
    cli::require_error_line(cli::run({"rnn", missing.path()}), 1, "/rnn");
    const cli::TempFile pair(R"({"source": {"tokens": ["a"], "states": [[1]]}, "target": {"tokens": ["b"], "states": [[1]]},
        "rnn": {"W_x": [[1]], "W_h": [[1]], "b_h": [0]}})");
    cli::require_error_line(cli::run({"rnn", pair.path()}), 1, "/rnn");
    cli::require_error_line(cli::run({"rnn", "example:teacher_smiled_fr"}), 1, "attntrace rnn reads one sequence");
    cli::require_error_line(cli::run({"rnn", "-f", "markdown"}), 2, "markdown");
    cli::require_error_line(cli::run({"rnn", "--gain", "0"}), 2, "--gain");
}

TEST_CASE("rnn --svg draws both influences in a well-formed picture, and only the file named", "[rnn]") {
    const cli::TempDir folder;
    const auto r = cli::run({"rnn", "--svg", folder / "influence.svg", "-o", folder / "report.txt"});
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.empty());
    CHECK(folder.names() == std::vector<std::string>{"influence.svg", "report.txt"});
    CHECK(cli::run_program({"xmllint", "--noout", folder / "influence.svg"}).exit_code == 0);
    const auto lines = cli::run_program({"xmllint", "--xpath", "count(//*[local-name()='polyline'])", folder / "influence.svg"});
    CHECK(lines.out == "2\n");
    CHECK_THAT(cli::read_file(folder / "report.txt"), Contains("hidden_states"));
}

namespace {

// −log softmax(logits)[c], in the test's own words.
double plain_cross_entropy(const std::vector<double>& logits, std::size_t c) {
    double top = logits[0], total = 0;
    for (double v : logits) top = std::max(top, v);
    for (double v : logits) total += std::exp(v - top);
    return top + std::log(total) - logits[c];
}

// The gradient of `model`'s `entries` (matrices) against central differences of its loss.
template <typename Model, typename Entries>
void check_gradient(Model model, const NamedExample& e, Entries entries) {
    Model gradient = model;
    for (Matrix* m : entries(gradient)) m->setZero();
    Vector logits;
    (void)reader_loss(model, e, logits, &gradient);
    const auto mine = entries(model);
    const auto theirs = entries(gradient);
    const double h = 1e-6;
    for (std::size_t p = 0; p < mine.size(); ++p)
        for (Eigen::Index k = 0; k < mine[p]->size(); ++k) {
            const double kept = mine[p]->data()[k];
            mine[p]->data()[k] = kept + h;
            const double up = reader_loss(model, e, logits, nullptr);
            mine[p]->data()[k] = kept - h;
            const double down = reader_loss(model, e, logits, nullptr);
            mine[p]->data()[k] = kept;
            CHECK(theirs[p]->data()[k] == Approx((up - down) / (2 * h)).epsilon(1e-6).margin(1e-9));
        }
}

}  // namespace

TEST_CASE("rnn --compare-rnn: both readers' losses are plain loops' and their gradients central differences'", "[rnn]") {
    const Grid X = numbers(5, 4, 0.4);
    NamedExample e{matrix_of(X), 2};
    RnnReader rnn = initial_rnn_reader(5, 4, 3, 3);
    rnn.rnn.b_h = Vector{{0.1, -0.1, 0.2}};
    rnn.b_r = Vector{{0.0, 0.3, -0.2}};
    Vector logits;
    // The RNN's loss: its last state in plain loops, read out, then the cross-entropy.
    Grid wx(4, std::vector<double>(3)), wh(3, std::vector<double>(3)), wr(3, std::vector<double>(3));
    for (int i = 0; i < 4; ++i)
        for (int c = 0; c < 3; ++c) wx[i][c] = rnn.rnn.W_x(i, c);
    for (int i = 0; i < 3; ++i)
        for (int c = 0; c < 3; ++c) wh[i][c] = rnn.rnn.W_h(i, c), wr[i][c] = rnn.W_r(i, c);
    const auto h = plain_rnn(X, wx, wh, {0.1, -0.1, 0.2}).back();
    std::vector<double> out{0.0, 0.3, -0.2};
    for (int c = 0; c < 3; ++c)
        for (int k = 0; k < 3; ++k) out[c] += h[k] * wr[k][c];
    CHECK(reader_loss(rnn, e, logits, nullptr) == Approx(plain_cross_entropy(out, 2)).epsilon(1e-13));
    check_gradient(rnn, e, [](RnnReader& m) { return std::vector<Matrix*>{&m.rnn.W_x, &m.rnn.W_h, &m.W_r}; });
    // The biases, by central differences too.
    RnnReader g = rnn;
    g.rnn.W_x.setZero(), g.rnn.W_h.setZero(), g.W_r.setZero(), g.rnn.b_h.setZero(), g.b_r.setZero();
    (void)reader_loss(rnn, e, logits, &g);
    for (Vector* b : {&rnn.rnn.b_h, &rnn.b_r}) {
        Vector* mine = b == &rnn.rnn.b_h ? &g.rnn.b_h : &g.b_r;
        for (Eigen::Index k = 0; k < b->size(); ++k) {
            const double kept = (*b)(k);
            (*b)(k) = kept + 1e-6;
            const double up = reader_loss(rnn, e, logits, nullptr);
            (*b)(k) = kept - 1e-6;
            const double down = reader_loss(rnn, e, logits, nullptr);
            (*b)(k) = kept;
            CHECK((*mine)(k) == Approx((up - down) / 2e-6).epsilon(1e-6).margin(1e-9));
        }
    }
    // Attention's: the last token's context vector in plain loops is the logits.
    AttentionReader a = initial_attention_reader(9, 4, 2, 3);
    Grid wq(4, std::vector<double>(2)), wk(4, std::vector<double>(2)), wv(4, std::vector<double>(3));
    for (int i = 0; i < 4; ++i) {
        for (int c = 0; c < 2; ++c) wq[i][c] = a.W_q(i, c), wk[i][c] = a.W_k(i, c);
        for (int c = 0; c < 3; ++c) wv[i][c] = a.W_v(i, c);
    }
    const auto z = plain_attention(X, wq, wk, wv, {0.0, 0.0}, 4);
    CHECK(reader_loss(a, e, logits, nullptr) == Approx(plain_cross_entropy(z, 2)).epsilon(1e-13));
    check_gradient(a, e, [](AttentionReader& m) { return std::vector<Matrix*>{&m.W_q, &m.W_k, &m.W_v}; });
}

TEST_CASE("rnn --compare-rnn: a row per gap, its defaults said, and what it cannot do refused", "[rnn]") {
    const auto r = cli::run({"train", "who_did_it", "--compare-rnn", "--steps", "40", "-f", "json"});
    REQUIRE(r.exit_code == 0);
    const auto doc = nlohmann::json::parse(r.out);
    std::vector<int> gaps;
    for (const auto& row : doc["gaps"]) {
        gaps.push_back(row["gap"]);
        for (const char* key : {"rnn_accuracy", "attention_accuracy"}) {
            CHECK(row[key].get<double>() >= 0);
            CHECK(row[key].get<double>() <= 1);
        }
    }
    CHECK(gaps == std::vector<int>{2, 4, 8, 16, 32});
    CHECK(doc["classes"] == 10);
    CHECK(doc["dims"]["d"] == 18);
    CHECK(doc["optimizer"]["lr"] == 0.01);  // the comparison's own defaults, where nothing is given
    CHECK(doc["optimizer"]["clip"] == 1);
    const auto given = nlohmann::json::parse(cli::run({"train", "who_did_it", "--compare-rnn", "--steps", "10", "--lr",
                                                       "0.05", "--clip", "0", "-f", "json"}).out);
    CHECK(given["optimizer"]["lr"] == 0.05);
    CHECK(given["optimizer"]["clip"].is_null());
    const auto table = cli::run({"train", "who_did_it", "--compare-rnn", "--steps", "40"});
    CHECK_THAT(table.out, Contains("chance: 10.0% (1 in 10)") && Contains("adam (lr 0.01") && Contains("40 steps"));
    cli::require_error_line(cli::run({"train", "recall", "--compare-rnn"}), 2, "--compare-rnn trains on who_did_it");
    cli::require_error_line(cli::run({"train", "who_did_it", "--compare-rnn", "--embeddings"}), 2,
                            "--compare-rnn trains its own two models");
    cli::require_error_line(cli::run({"train", "who_did_it", "--compare-rnn", "-m", "causal"}), 2, "leave out -m causal");
    cli::require_error_line(cli::run({"train", "who_did_it", "--compare-rnn", "--held-out", "0"}), 2,
                            "--compare-rnn judges both models on held-out examples, and none is held out");
    cli::require_error_line(cli::run({"train", "who_did_it", "--hidden", "4"}), 2,
                            "--hidden sizes the RNN of --compare-rnn, which was not asked for");
    const cli::TempDir dir;
    cli::require_error_line(cli::run({"train", "who_did_it", "--compare-rnn", "-o", dir / "m.json"}), 2,
                            "--compare-rnn trains ten models and saves none");
    CHECK(dir.names().empty());
}

TEST_CASE("rnn: influences that are all 0 or all alike are said so and no token is named from noise", "[rnn]") {
    // Three identical tokens: attention's influence is the same at every distance.
    const cli::TempFile same(R"({"tokens": ["a", "b", "c"], "embeddings": [[1, 0], [1, 0], [1, 0]]})");
    const auto r = cli::run({"rnn", same.path()});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("attention: about the same at every distance"));
    // W_x = 0: no token moves the RNN's state at all.
    const cli::TempFile zero(R"({"tokens": ["a", "b", "c", "d"], "embeddings": [[1, 0], [0, 1], [1, 1], [2, 0]],
        "rnn": {"W_x": [[0, 0], [0, 0]], "W_h": [[0.5, 0], [0, 0.5]], "b_h": [0, 0]}})");
    const auto z = cli::run({"rnn", zero.path()});
    REQUIRE(z.exit_code == 0);
    CHECK_THAT(z.out, Contains("in the RNN no earlier token (every influence 0)"));
    CHECK_THAT(z.out, Contains("reaches h_4 with 0 while \"d\" has none"));
    CHECK(z.out.find("nan") == std::string::npos);
}

TEST_CASE("rnn: work beyond --max-time or --max-memory is refused before it starts, and writes nothing", "[rnn]") {
    // 2,000 steps back through a state of 256 numbers: 2,000 × 256² × (256 + 16) multiply-adds,
    // 36 billion, half a minute here, against a limit of a second.
    const cli::TempDir dir;
    const std::string long_input = dir / "long.json", picture = dir / "influence.svg";
    std::ofstream(long_input) << cli::run({"generate", "--tokens", "2000", "--dim", "16"}).out;
    const auto slow = cli::run({"rnn", long_input, "--hidden", "256", "--max-time", "1s", "--svg", picture});
    cli::require_error_line(slow, 1, "the RNN over 2000 tokens with d_h = 256 takes about");
    CHECK_THAT(slow.err, Contains("on 1 thread of this machine, more than --max-time 1 s"));  // its steps are serial
    // Its report holds each token's embedding and state, and their text: far above 4 MiB.
    const auto large = cli::run({"rnn", long_input, "--hidden", "256", "--max-memory", "4M", "--svg", picture});
    cli::require_error_line(large, 1, "the RNN's report of this input needs about");
    CHECK_FALSE(std::filesystem::exists(picture));
}
