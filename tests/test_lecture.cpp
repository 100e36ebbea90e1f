// The first lecture's running example, "Your journey starts with one step", against the
// numbers the lecture publishes (rounded to 4 decimals there) and hand arithmetic.
#include "attention/trace.hpp"
#include "input/examples.hpp"
#include "input/load.hpp"

#include "support/catch.hpp"

#include <vector>

using namespace attntrace;

namespace {

Trace journey_trace(Normalization normalization) {
    const auto* example = find_example("your_journey");
    REQUIRE(example != nullptr);
    const Problem problem = load_problem(example->json, "your_journey");
    TraceOptions options;
    options.mode = Mode::plain;
    options.normalization = normalization;
    return trace(problem, options);
}

void require_row(const Stage& stage, Eigen::Index row, const std::vector<double>& expected,
                 double tolerance) {
    REQUIRE(stage.data.cols() == static_cast<Eigen::Index>(expected.size()));
    for (std::size_t j = 0; j < expected.size(); ++j) {
        INFO(stage.name() << " column " << j);
        CHECK(stage.data(row, static_cast<Eigen::Index>(j)) ==
              Approx(expected[j]).margin(tolerance).epsilon(0));
    }
}

constexpr Eigen::Index journey = 1;       // the query row of "journey"
constexpr double published = 0.5e-4;      // the lecture rounds to 4 decimals

}  // namespace

TEST_CASE("plain mode: the scores of 'journey' are the lecture's dot products", "[lecture]") {
    const Trace t = journey_trace(Normalization::softmax);
    REQUIRE(t.tokens[1] == "journey");
    const Stage& scores = *t.find(StageId::scores);
    require_row(scores, journey, {0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865}, published);
    // By hand: journey · Your = 0.55×0.43 + 0.87×0.15 + 0.66×0.89.
    CHECK(scores.data(journey, 0) == Approx(0.55 * 0.43 + 0.87 * 0.15 + 0.66 * 0.89).epsilon(1e-14));
    // journey · journey = 0.55² + 0.87² + 0.66²
    CHECK(scores.data(journey, 1) == Approx(0.55 * 0.55 + 0.87 * 0.87 + 0.66 * 0.66).epsilon(1e-14));
}

TEST_CASE("plain mode: softmax weights and the context vector of 'journey'", "[lecture]") {
    const Trace t = journey_trace(Normalization::softmax);
    require_row(*t.find(StageId::weights), journey, {0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581},
                published);
    require_row(*t.find(StageId::context), journey, {0.4419, 0.6515, 0.5683}, published);
}

TEST_CASE("plain mode: dividing by the row sum gives the lecture's first weights", "[lecture]") {
    const Trace t = journey_trace(Normalization::sum);
    const Stage& weights = *t.find(StageId::weights);
    require_row(weights, journey, {0.1455, 0.2278, 0.2249, 0.1285, 0.1077, 0.1656}, published);
    // By hand: 0.9544 / (0.9544 + 1.4950 + 1.4754 + 0.8434 + 0.7070 + 1.0865) = 0.9544 / 6.5617
    const Stage& scores = *t.find(StageId::scores);
    CHECK(weights.data(journey, 0) == Approx(scores.data(journey, 0) / scores.data.row(journey).sum()).epsilon(1e-14));
}

TEST_CASE("plain mode: the shapes are the lecture's 6×3 → 6×6 → 6×3", "[lecture]") {
    const Trace t = journey_trace(Normalization::softmax);
    CHECK(t.find(StageId::inputs)->data.rows() == 6);
    CHECK(t.find(StageId::inputs)->data.cols() == 3);
    CHECK(t.find(StageId::weights)->data.rows() == 6);
    CHECK(t.find(StageId::weights)->data.cols() == 6);
    CHECK(t.find(StageId::context)->data.rows() == 6);
    CHECK(t.find(StageId::context)->data.cols() == 3);
}
