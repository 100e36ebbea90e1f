// plain, self and causal modes against the reference implementation in attention/reference.hpp.
#include "attention/kernels.hpp"
#include "attention/single.hpp"
#include "attention/streaming.hpp"
#include "attention/trace.hpp"
#include "core/generator.hpp"
#include "render/render.hpp"
#include "attention/reference.hpp"

#include "support/naive.hpp"
#include "support/catch.hpp"
#include <fmt/format.h>
#include <omp.h>

#include <sstream>

using namespace attntrace;

namespace {

reference::Rows rows_of(const Matrix& m) {
    reference::Rows out(static_cast<std::size_t>(m.rows()), std::vector<double>(static_cast<std::size_t>(m.cols())));
    for (Eigen::Index r = 0; r < m.rows(); ++r)
        for (Eigen::Index c = 0; c < m.cols(); ++c) out[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)] = m(r, c);
    return out;
}

void require_close(const Matrix& actual, const reference::Rows& expected, double tolerance, const char* what) {
    REQUIRE(actual.rows() == static_cast<Eigen::Index>(expected.size()));
    for (Eigen::Index r = 0; r < actual.rows(); ++r) {
        REQUIRE(actual.cols() == static_cast<Eigen::Index>(expected[static_cast<std::size_t>(r)].size()));
        for (Eigen::Index c = 0; c < actual.cols(); ++c) {
            INFO(what << " (" << r << ", " << c << ")");
            REQUIRE(actual(r, c) == Approx(expected[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)]).margin(tolerance).epsilon(0));
        }
    }
}

Sequence sequence_of(const Matrix& vectors) {
    Sequence s;
    s.vectors = vectors;
    for (Eigen::Index i = 0; i < vectors.rows(); ++i) s.tokens.push_back(fmt::format("t{}", i + 1));
    return s;
}

Matrix matrix_of(std::initializer_list<std::initializer_list<double>> rows) {
    Matrix m(static_cast<Eigen::Index>(rows.size()), static_cast<Eigen::Index>(rows.begin()->size()));
    Eigen::Index r = 0;
    for (const auto& row : rows) {
        Eigen::Index c = 0;
        for (const double v : row) m(r, c++) = v;
        ++r;
    }
    return m;
}

// Four tokens, d_in = 3, d_k = 2, d_v = 3: small enough to check by hand, shaped so that no
// dimension equals another by accident.
const Matrix x4 = matrix_of({{1.0, 0.0, 0.5}, {0.2, 0.8, 0.1}, {-0.3, 0.4, 0.9}, {0.6, -0.5, 0.2}});
const Projections w4 = naive::projections(matrix_of({{0.5, -0.2}, {0.1, 0.9}, {-0.4, 0.3}}),
                                          matrix_of({{0.3, 0.7}, {-0.6, 0.2}, {0.8, -0.1}}),
                                          matrix_of({{1.0, 0.0, 0.2}, {0.0, 1.0, -0.3}, {0.5, 0.5, 0.5}}));

TraceOptions options_for(Mode mode) {
    TraceOptions o;
    o.mode = mode;
    return o;
}

std::string json_of(const Trace& t) {
    std::ostringstream out;
    RenderOptions r;
    r.format = Format::json;
    render(t, r, out);
    return out.str();
}

}  // namespace

TEST_CASE("self mode by hand: one score worked out on paper", "[modes]") {
    // q_1 = x_1·W_q = [1·0.5 + 0·0.1 + 0.5·(−0.4), 1·(−0.2) + 0·0.9 + 0.5·0.3] = [0.3, −0.05]
    // k_2 = x_2·W_k = [0.2·0.3 + 0.8·(−0.6) + 0.1·0.8, 0.2·0.7 + 0.8·0.2 + 0.1·(−0.1)] = [−0.34, 0.29]
    // S(1,2) = 0.3·(−0.34) + (−0.05)·0.29 = −0.1165; scaled by √2.
    const Trace t = trace_single(sequence_of(x4), &w4, options_for(Mode::self));
    CHECK(t.find(StageId::queries)->data(0, 0) == Approx(0.3).margin(1e-15).epsilon(0));
    CHECK(t.find(StageId::queries)->data(0, 1) == Approx(-0.05).margin(1e-15).epsilon(0));
    CHECK(t.find(StageId::keys)->data(1, 0) == Approx(-0.34).margin(1e-15).epsilon(0));
    CHECK(t.find(StageId::keys)->data(1, 1) == Approx(0.29).margin(1e-15).epsilon(0));
    CHECK(t.find(StageId::scores)->data(0, 1) == Approx(-0.1165).margin(1e-15).epsilon(0));
    CHECK(t.find(StageId::scaled)->data(0, 1) == Approx(-0.1165 / std::sqrt(2.0)).margin(1e-15).epsilon(0));
}

TEST_CASE("self mode matches the naive implementation at every stage", "[modes]") {
    const Trace t = trace_single(sequence_of(x4), &w4, options_for(Mode::self));
    const auto expected = reference::self_attention(rows_of(x4), rows_of(w4.query), rows_of(w4.key),
                                                rows_of(w4.value), false);
    require_close(t.find(StageId::scores)->data, expected.scores, 1e-13, "scores");
    require_close(t.find(StageId::scaled)->data, expected.scaled, 1e-13, "scaled");
    require_close(t.find(StageId::weights)->data, expected.weights, 1e-13, "weights");
    require_close(t.find(StageId::context)->data, expected.context, 1e-13, "context");
    CHECK_FALSE(t.find(StageId::masked)->applied);
    CHECK(t.find(StageId::masked)->reason == "no mask: bidirectional, every position sees every position");
    CHECK(t.dims == std::vector<std::pair<std::string, Eigen::Index>>{{"d_in", 3}, {"d_k", 2}, {"d_v", 3}});
}

TEST_CASE("causal mode matches the naive implementation and hides the future", "[modes]") {
    const Trace t = trace_single(sequence_of(x4), &w4, options_for(Mode::causal));
    const auto expected = reference::self_attention(rows_of(x4), rows_of(w4.query), rows_of(w4.key),
                                                rows_of(w4.value), true);
    require_close(t.find(StageId::weights)->data, expected.weights, 1e-13, "weights");
    require_close(t.find(StageId::context)->data, expected.context, 1e-13, "context");

    const Stage& masked = *t.find(StageId::masked);
    const Stage& weights = *t.find(StageId::weights);
    REQUIRE(masked.applied);
    REQUIRE(masked.allowed);
    REQUIRE(weights.allowed);
    for (Eigen::Index i = 0; i < 4; ++i)
        for (Eigen::Index j = 0; j < 4; ++j) {
            CHECK((*masked.allowed)(i, j) == (j <= i));
            if (j > i) {
                CHECK(masked.data(i, j) == -std::numeric_limits<double>::infinity());
                CHECK(weights.data(i, j) == 0.0);  // exactly
            }
        }
    // The first token can only see itself.
    CHECK(weights.data(0, 0) == 1.0);
}

namespace {

Matrix matrix_from(const reference::Rows& rows) {
    Matrix m(static_cast<Eigen::Index>(rows.size()), static_cast<Eigen::Index>(rows.front().size()));
    for (Eigen::Index r = 0; r < m.rows(); ++r)
        for (Eigen::Index c = 0; c < m.cols(); ++c) m(r, c) = rows[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)];
    return m;
}

// The largest |a − b| over two matrices of one shape, as a fraction of 1 + the largest |b|.
double gap(const Matrix& a, const Matrix& b) {
    REQUIRE(a.rows() == b.rows());
    REQUIRE(a.cols() == b.cols());
    return (a - b).cwiseAbs().maxCoeff() / (1 + b.cwiseAbs().maxCoeff());
}

}  // namespace

// The production path is reference.hpp's function, faster: each kernel of kernels.hpp is one of
// its numbered passes, and the streaming path all of them at once. Held to it on shapes that take
// every way the kernels cut a product (blocks of 32 rows; 256 from 1024 rows on), in both
// precisions, by whichever copy of the kernels this CPU runs (-V says which).
TEST_CASE("the kernels are reference.hpp's passes, pass by pass, and the streaming path all of them", "[modes][reference]") {
    struct Shape {
        std::size_t n, d_in, d_k, d_v;
    };
    for (const Shape shape : {Shape{5, 3, 2, 3}, Shape{70, 48, 16, 24}, Shape{1030, 8, 4, 6}})
        for (const bool causal : {false, true}) {
            INFO("n = " << shape.n << ", d_in = " << shape.d_in << ", causal: " << causal);
            naive::Lcg random{shape.n * 7 + (causal ? 1 : 0)};
            const reference::Rows x = random.grid(shape.n, shape.d_in), w_q = random.grid(shape.d_in, shape.d_k),
                                  w_k = random.grid(shape.d_in, shape.d_k), w_v = random.grid(shape.d_in, shape.d_v);
            const reference::SelfAttention a = reference::self_attention(x, w_q, w_k, w_v, causal);
            const auto n = static_cast<Eigen::Index>(shape.n);
            // pass 1
            const Matrix q = project<double>(matrix_from(x), matrix_from(w_q));
            const Matrix k = project<double>(matrix_from(x), matrix_from(w_k));
            const Matrix v = project<double>(matrix_from(x), matrix_from(w_v));
            CHECK(gap(q, matrix_from(a.q)) < 1e-14);
            CHECK(gap(k, matrix_from(a.k)) < 1e-14);
            CHECK(gap(v, matrix_from(a.v)) < 1e-14);
            // pass 2
            const Matrix scores = dot_scores<double>(q, k);
            const Matrix scaled = scale_scores<double>(scores, std::sqrt(static_cast<double>(shape.d_k)));
            CHECK(gap(scores, matrix_from(a.scores)) < 1e-13);
            CHECK(gap(scaled, matrix_from(a.scaled)) < 1e-13);
            // pass 3
            const Matrix weights = row_softmax<double>(causal ? apply_mask<double>(scaled, causal_mask(n)) : scaled);
            CHECK(gap(weights, matrix_from(a.weights)) < 1e-13);
            // pass 4
            const Matrix context = weighted_sum<double>(weights, v);
            CHECK(gap(context, matrix_from(a.context)) < 1e-13);
            // all four at once, in float32 too (to float's precision)
            StreamOptions options;
            options.causal = causal;
            options.scale = 1 / std::sqrt(static_cast<double>(shape.d_k));
            options.top = 1;
            options.context = true;
            const StreamResult streamed = stream_attention<double>(q, k, v, options);
            CHECK(gap(streamed.context, matrix_from(a.context)) < 1e-13);
            const StreamResult narrow =
                stream_attention<float>(q.cast<float>(), k.cast<float>(), v.cast<float>(), options);
            CHECK(gap(narrow.context, matrix_from(a.context)) < 1e-5);
            const MatrixT<float> narrow_weights =
                row_softmax<float>(causal ? apply_mask<float>(scaled.cast<float>(), causal_mask(n)) : scaled.cast<float>());
            CHECK(gap(narrow_weights.cast<double>(), matrix_from(a.weights)) < 1e-6);
            for (std::size_t i = 0; i < shape.n; ++i) {  // the largest weight of each row, from the streaming path
                const double largest = *std::max_element(a.weights[i].begin(), a.weights[i].end());
                CHECK(streamed.queries[i].max_weight == Approx(largest).epsilon(1e-12));
            }
        }
}

TEST_CASE("every weights row sums to 1", "[modes]") {
    for (const Mode mode : {Mode::plain, Mode::self, Mode::causal}) {
        const Trace t = trace_single(sequence_of(x4), &w4, options_for(mode));
        const Stage& weights = *t.find(StageId::weights);
        for (Eigen::Index i = 0; i < weights.data.rows(); ++i) {
            CHECK(weights.data.row(i).sum() == Approx(1.0).margin(1e-12).epsilon(0));
            CHECK((*weights.row_sums)(i) == Approx(1.0).margin(1e-12).epsilon(0));
        }
    }
}

TEST_CASE("plain mode uses the embeddings as queries, keys and values", "[modes]") {
    const Trace t = trace_single(sequence_of(x4), nullptr, options_for(Mode::plain));
    const auto weights = reference::softmax_rows(reference::matmul(rows_of(x4), reference::transpose(rows_of(x4))));
    require_close(t.find(StageId::weights)->data, weights, 1e-13, "weights");
    require_close(t.find(StageId::context)->data, reference::matmul(weights, rows_of(x4)), 1e-13, "context");
    for (const char* skipped : {"queries", "keys", "values", "scaled", "masked"}) {
        INFO(skipped);
        CHECK_FALSE(t.at(*parse_enum<StageId>(skipped)).applied);
        CHECK_FALSE(t.at(*parse_enum<StageId>(skipped)).reason.empty());
    }
    CHECK(t.find(StageId::scaled)->reason == "no scaling: the simplified version uses raw dot products");
    CHECK(t.weights == WeightsOrigin::none);
}

TEST_CASE("every mode shows every stage, in pipeline order", "[modes]") {
    for (const Mode mode : {Mode::plain, Mode::self, Mode::causal}) {
        const Trace t = trace_single(sequence_of(x4), nullptr, options_for(mode));
        const std::vector<std::string> expected{"inputs", "queries", "keys", "values", "scores", "scaled", "masked", "weights", "context"};
        REQUIRE(t.stages.size() == expected.size());
        for (std::size_t i = 0; i < t.stages.size(); ++i) CHECK(t.stages[i].name() == expected[i]);
    }
}

TEST_CASE("generated weights follow the documented splitmix64 recipe", "[modes][generator]") {
    // Reference outputs of splitmix64 for seed 1234567 (Vigna's splitmix64.c test values).
    SplitMix64 rng(1234567);
    CHECK(rng.next() == 6457827717110365317ULL);
    CHECK(rng.next() == 3203168211198807973ULL);
    CHECK(rng.next() == 9817491932198370423ULL);

    // W_q(0,0) is the first draw: scale·(2u − 1), scale = 1/√d_in, u = (word >> 11)·2⁻⁵³.
    SplitMix64 first(123);
    const double u = static_cast<double>(first.next() >> 11) / 9007199254740992.0;
    const Projections p = generate_projections(123, 3, 2);
    CHECK(p.query(0, 0) == (1 / std::sqrt(3.0)) * (2 * u - 1));
    CHECK(p.query.rows() == 3);
    CHECK(p.query.cols() == 2);
    CHECK(p.value.cols() == 2);
    for (const Matrix* m : {&p.query, &p.key, &p.value})
        CHECK(m->cwiseAbs().maxCoeff() <= 1 / std::sqrt(3.0));

    // Self mode without weights uses exactly these.
    TraceOptions o = options_for(Mode::self);
    o.dim = 2;
    const Trace generated = trace_single(sequence_of(x4), nullptr, o);
    o.dim.reset();  // --dim sizes generated weights only: with given weights it is refused
    const Trace given = trace_single(sequence_of(x4), &p, o);
    CHECK(generated.find(StageId::context)->data == given.find(StageId::context)->data);
    CHECK(generated.weights == WeightsOrigin::generated);
    CHECK(generated.seed == 123);
}

TEST_CASE("the output does not depend on the number of threads", "[modes][threads]") {
    // 100 tokens: several row blocks, so threads really split the work.
    SplitMix64 rng(7);
    const Matrix x = random_matrix(rng, 100, 16, 1.0);
    for (const Mode mode : {Mode::plain, Mode::self, Mode::causal}) {
        omp_set_num_threads(1);
        const std::string one = json_of(trace_single(sequence_of(x), nullptr, options_for(mode)));
        omp_set_num_threads(2);
        const std::string two = json_of(trace_single(sequence_of(x), nullptr, options_for(mode)));
        omp_set_num_threads(3);
        const std::string three = json_of(trace_single(sequence_of(x), nullptr, options_for(mode)));
        CHECK(one == two);
        CHECK(one == three);
    }
}

TEST_CASE("scores that overflow are refused, naming the stage and the pair", "[modes]") {
    const Matrix big = matrix_of({{1e200, 0.0}, {1.0, 1.0}});
    Sequence s = sequence_of(big);
    s.tokens = {"huge", "small"};
    REQUIRE_THROWS_WITH(trace_single(s, nullptr, options_for(Mode::plain), "big.json"),
                        Catch::Contains("big.json: the scores stage overflows") &&
                            Catch::Contains("\"huge\" (row 1) and \"huge\" (column 1)"));
}

TEST_CASE("sum normalisation refuses rows that do not sum to a positive number", "[modes]") {
    const Matrix x = matrix_of({{1.0, 0.0}, {-1.0, 0.0}});
    // Scores: row 1 = [1, −1], sum 0.
    REQUIRE_THROWS_WITH(
        [&] {
            TraceOptions o = options_for(Mode::plain);
            o.normalization = Normalization::sum;
            trace_single(sequence_of(x), nullptr, o);
        }(),
        Catch::Contains("cannot normalise by the sum") && Catch::Contains("\"t1\" (row 1) sum to 0"));
}
