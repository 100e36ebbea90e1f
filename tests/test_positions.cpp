// Position information (--positions sinusoidal and rope) against a second implementation
// written here in plain loops (no Eigen products, its own way to the frequencies): every
// stage of every head, for several shapes, head and key/value head counts, causal and not,
// from position 0 and from a later one; RoPE's shift invariance; the shuffled sentence; the
// worked example, the formats and the refusals.
#include "attention/single.hpp"
#include "attention/trace.hpp"
#include "support/cli.hpp"
#include "support/schema.hpp"
#include "support/trace_json.hpp"
#include "support/naive.hpp"

#include "support/catch.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

using namespace attntrace;
using Catch::Contains;
using trace_json::run_json;

namespace {

using namespace naive;  // Grid, Lcg and the loop products (support/naive.hpp)


// 1 / 10000^(2i/d), by way of the logarithm (attntrace takes a power).
double frequency(std::size_t i, std::size_t d) {
    return std::exp(-std::log(10000.0) * static_cast<double>(2 * i) / static_cast<double>(d));
}

// Vaswani et al.: row r for position first + r; even (0-based) columns sines, odd ones cosines.
Grid sinusoids(std::size_t n, std::size_t d, std::int64_t first) {
    Grid pe(n, std::vector<double>(d));
    for (std::size_t r = 0; r < n; ++r)
        for (std::size_t c = 0; c < d; ++c) {
            const double angle = static_cast<double>(first + static_cast<std::int64_t>(r)) * frequency(c / 2, d);
            pe[r][c] = c % 2 == 0 ? std::sin(angle) : std::cos(angle);
        }
    return pe;
}

// The angle of pair k (0-based) at row r.
double angle(std::size_t r, std::size_t k, std::size_t d_head, std::int64_t first) {
    return static_cast<double>(first + static_cast<std::int64_t>(r)) * frequency(k, d_head);
}

// "Rotate half": numbers k and k + d/2 of each row turned together by the row's angle for pair k.
Grid rotated(const Grid& x, std::int64_t first) {
    const std::size_t d = x[0].size(), h = d / 2;
    Grid out = x;
    for (std::size_t r = 0; r < x.size(); ++r)
        for (std::size_t k = 0; k < h; ++k) {
            const double phi = angle(r, k, d, first);
            out[r][k] = x[r][k] * std::cos(phi) - x[r][k + h] * std::sin(phi);
            out[r][k + h] = x[r][k + h] * std::cos(phi) + x[r][k] * std::sin(phi);
        }
    return out;
}

struct NaiveHead {
    Grid q, k, v, q_rot, k_rot, scores, scaled, masked, weights, context;
};
struct Naive {
    Grid embeddings, encoding, x, angles;
    std::vector<NaiveHead> heads;
    Grid concat, output;
};

Naive naive_layer(const Grid& e, const Grid& w_q, const Grid& w_k, const Grid& w_v, const Grid& w_o, int heads, int kv_heads,
            bool causal, PositionScheme scheme, std::int64_t first) {
    const std::size_t n = e.size(), d_in = e[0].size();
    const std::size_t d_head = w_q[0].size() / static_cast<std::size_t>(heads);
    const std::size_t d_v = w_v[0].size() / static_cast<std::size_t>(kv_heads);
    Naive out;
    out.embeddings = e;
    out.x = e;
    if (scheme == PositionScheme::sinusoidal) {
        out.encoding = sinusoids(n, d_in, first);
        for (std::size_t r = 0; r < n; ++r)
            for (std::size_t c = 0; c < d_in; ++c) out.x[r][c] += out.encoding[r][c];
    }
    if (scheme == PositionScheme::rope) {
        out.angles.assign(n, std::vector<double>(d_head / 2));
        for (std::size_t r = 0; r < n; ++r)
            for (std::size_t k = 0; k < d_head / 2; ++k) out.angles[r][k] = angle(r, k, d_head, first);
    }
    const Grid q = times(out.x, w_q), k = times(out.x, w_k), v = times(out.x, w_v);
    out.concat.assign(n, {});
    for (int h = 0; h < heads; ++h) {
        const auto g = static_cast<std::size_t>(h / (heads / kv_heads));  // consecutive heads share
        NaiveHead head;
        head.q = columns(q, static_cast<std::size_t>(h) * d_head, d_head);
        head.k = columns(k, g * d_head, d_head);
        head.v = columns(v, g * d_v, d_v);
        const bool rope = scheme == PositionScheme::rope;
        if (rope) head.q_rot = rotated(head.q, first), head.k_rot = rotated(head.k, first);
        const Grid& qs = rope ? head.q_rot : head.q;
        const Grid& ks = rope ? head.k_rot : head.k;
        head.scores.assign(n, std::vector<double>(n, 0.0));
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < n; ++j)
                for (std::size_t c = 0; c < d_head; ++c) head.scores[i][j] += qs[i][c] * ks[j][c];
        head.scaled = head.scores;
        for (auto& row : head.scaled)
            for (double& s : row) s /= std::sqrt(static_cast<double>(d_head));
        head.masked = head.scaled;
        if (causal)
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t j = i + 1; j < n; ++j) head.masked[i][j] = -std::numeric_limits<double>::infinity();
        head.weights = head.masked;
        for (auto& row : head.weights) {
            double top = -std::numeric_limits<double>::infinity(), sum = 0;
            for (const double s : row) top = std::max(top, s);
            for (double& s : row) sum += s = std::exp(s - top);
            for (double& s : row) s /= sum;
        }
        head.context = times(head.weights, head.v);
        for (std::size_t i = 0; i < n; ++i) out.concat[i].insert(out.concat[i].end(), head.context[i].begin(), head.context[i].end());
        out.heads.push_back(std::move(head));
    }
    out.output = times(out.concat, w_o);
    return out;
}

void require_stage(const Trace& t, StageId id, int head, const Grid& expected, double tolerance) {
    INFO(to_string(id) << " of head " << head);
    const Stage* stage = t.find(id, head);
    REQUIRE(stage != nullptr);
    CHECK(stage->head == head);
    REQUIRE(stage->row_count() == static_cast<Eigen::Index>(expected.size()));
    REQUIRE(stage->col_count() == static_cast<Eigen::Index>(expected[0].size()));
    for (std::size_t i = 0; i < expected.size(); ++i)
        for (std::size_t j = 0; j < expected[0].size(); ++j) {
            const double want = expected[i][j], got = stage->data(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j));
            if (std::isinf(want)) CHECK(got == want);
            else CHECK(got == Approx(want).margin(tolerance).epsilon(0));
        }
}

void require_rows(const trace_json::Rows& got, const Grid& want, double tolerance) {
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
        REQUIRE(got[i].size() == want[i].size());
        for (std::size_t j = 0; j < want[i].size(); ++j)
            if (std::isinf(want[i][j])) CHECK(got[i][j] == want[i][j]);
            else CHECK(got[i][j] == Approx(want[i][j]).margin(tolerance).epsilon(0));
    }
}

struct Shape {
    std::size_t n, d_in;
    int heads, kv_heads;
    std::size_t d_head, d_v, d_out;
};

// The stages of `name` in a JSON trace, in order (one per head).
std::vector<const nlohmann::json*> stages_named(const nlohmann::json& t, const std::string& name) {
    std::vector<const nlohmann::json*> out;
    for (const auto& s : t["stages"])
        if (s["name"] == name) out.push_back(&s);
    return out;
}

void usage_error(const std::vector<std::string>& args, const std::string& message) {
    const auto r = cli::run(args);
    INFO(fmt::format("{}", fmt::join(args, " ")) << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Contains("attntrace: error: ") && Contains(message));
}

void data_error(const std::vector<std::string>& args, const std::string& message) {
    const auto r = cli::run(args);
    INFO(fmt::format("{}", fmt::join(args, " ")) << ": " << r.err);
    CHECK(r.exit_code == 1);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Contains("attntrace: error: ") && Contains(message));
}

}  // namespace

TEST_CASE("every stage with positions matches a naive implementation", "[positions]") {
    const Shape shapes[] = {{5, 3, 2, 2, 2, 2, 4}, {6, 4, 4, 2, 2, 2, 3}, {7, 6, 3, 1, 4, 3, 5},
                            {4, 2, 1, 1, 6, 1, 2}, {8, 5, 6, 3, 2, 2, 6}, {3, 3, 2, 1, 4, 2, 3}};
    Lcg rng{20261201};
    for (const Shape& s : shapes)
        for (const PositionScheme scheme : {PositionScheme::sinusoidal, PositionScheme::rope})
            for (const bool causal : {false, true})
                for (const std::int64_t first : {std::int64_t{0}, std::int64_t{37}})
                    for (const Dtype dtype : {Dtype::float64, Dtype::float32}) {
                        INFO("n " << s.n << ", d_in " << s.d_in << ", " << s.heads << " heads of " << s.d_head << ", "
                                  << s.kv_heads << " kv heads, d_v " << s.d_v << ", " << to_string(scheme)
                                  << (causal ? ", causal" : "") << ", from " << first
                                  << (dtype == Dtype::float32 ? ", float32" : ""));
                        const Grid e = rng.grid(s.n, s.d_in);
                        const Grid w_q = rng.grid(s.d_in, s.d_head * static_cast<std::size_t>(s.heads));
                        const Grid w_k = rng.grid(s.d_in, s.d_head * static_cast<std::size_t>(s.kv_heads));
                        const Grid w_v = rng.grid(s.d_in, s.d_v * static_cast<std::size_t>(s.kv_heads));
                        const Grid w_o = rng.grid(s.d_v * static_cast<std::size_t>(s.heads), s.d_out);
                        Sequence sequence;
                        sequence.vectors = matrix_of(e);
                        for (std::size_t i = 0; i < s.n; ++i) sequence.tokens.push_back(fmt::format("t{}", i + 1));
                        const Projections w = projections(matrix_of(w_q), matrix_of(w_k), matrix_of(w_v), matrix_of(w_o));
                        TraceOptions options;
                        options.mode = causal ? Mode::causal : Mode::self;
                        options.heads = s.heads;
                        options.kv_heads = s.kv_heads;
                        options.dtype = dtype;
                        options.positions = scheme;
                        if (first != 0) options.position_offset = first;
                        const Trace t = trace_single(sequence, &w, options);
                        const Naive want = naive_layer(e, w_q, w_k, w_v, w_o, s.heads, s.kv_heads, causal, scheme, first);
                        const double tolerance = dtype == Dtype::float64 ? 1e-12 : 3e-5;
                        CHECK(t.positions == scheme);
                        CHECK(t.first_position == first);
                        if (scheme == PositionScheme::sinusoidal) {
                            require_stage(t, StageId::embeddings, 0, want.embeddings, tolerance);
                            require_stage(t, StageId::positions, 0, want.encoding, tolerance);
                            CHECK(t.find(StageId::queries_rotated) == nullptr);
                        } else {
                            require_stage(t, StageId::positions, 0, want.angles, 1e-12);
                            CHECK(t.find(StageId::embeddings) == nullptr);
                        }
                        require_stage(t, StageId::inputs, 0, want.x, tolerance);
                        for (int h = 0; h < s.heads; ++h) {
                            const NaiveHead& head = want.heads[static_cast<std::size_t>(h)];
                            const int number = s.heads > 1 ? h + 1 : 0;
                            require_stage(t, StageId::queries, number, head.q, tolerance);
                            require_stage(t, StageId::keys, number, head.k, tolerance);
                            require_stage(t, StageId::values, number, head.v, tolerance);
                            if (scheme == PositionScheme::rope) {
                                require_stage(t, StageId::queries_rotated, number, head.q_rot, tolerance);
                                require_stage(t, StageId::keys_rotated, number, head.k_rot, tolerance);
                                if (s.kv_heads < s.heads)
                                    CHECK(t.find(StageId::keys_rotated, number)->kv_head == h / (s.heads / s.kv_heads) + 1);
                            }
                            require_stage(t, StageId::scores, number, head.scores, tolerance);
                            require_stage(t, StageId::scaled, number, head.scaled, tolerance);
                            require_stage(t, StageId::masked, number, head.masked, tolerance);
                            require_stage(t, StageId::weights, number, head.weights, tolerance);
                            require_stage(t, StageId::context, number, head.context, tolerance);
                        }
                        if (s.heads > 1) require_stage(t, StageId::concat, 0, want.concat, tolerance);
                        require_stage(t, StageId::output, 0, want.output, tolerance);
                    }
}

TEST_CASE("positions through the command line: JSON header, stage order and numbers", "[positions][json]") {
    SECTION("RoPE with two heads sharing one key/value head, causal") {
        const auto t = run_json({"-m", "causal", "--dim", "8", "--heads", "2", "--kv-heads", "1", "--positions", "rope"});
        CHECK(t["positions"] == "rope");
        CHECK(t["first_position"] == 0);
        std::vector<std::string> order;
        for (const auto& stage : t["stages"])
            order.push_back(std::string(stage["name"]) + (stage.contains("head") ? std::to_string(stage["head"].get<int>()) : ""));
        const std::vector<std::string> expected{
            "inputs",   "positions", "queries1", "keys1",    "values1",  "queries_rotated1", "keys_rotated1", "scores1",
            "scaled1",  "masked1",   "weights1", "context1", "queries2", "keys2",            "values2",       "queries_rotated2",
            "keys_rotated2", "scores2", "scaled2", "masked2", "weights2", "context2", "concat", "output",
            "head_contributions1", "head_contributions2"};
        CHECK(order == expected);
        // From the JSON's own inputs and parameters, the naive way.
        const Grid x = trace_json::stage_rows(t, "inputs");
        const Grid w_q = trace_json::rows_of(t["parameters"]["W_q"]);
        const Grid w_k = trace_json::rows_of(t["parameters"]["W_k"]);
        const Grid w_v = trace_json::rows_of(t["parameters"]["W_v"]);
        const Grid w_o = trace_json::rows_of(t["parameters"]["W_o"]);
        const Naive want = naive_layer(x, w_q, w_k, w_v, w_o, 2, 1, true, PositionScheme::rope, 0);
        require_rows(trace_json::stage_rows(t, "positions"), want.angles, 1e-15);
        const auto q_rot = stages_named(t, "queries_rotated"), k_rot = stages_named(t, "keys_rotated");
        const auto scores = stages_named(t, "scores");
        REQUIRE(q_rot.size() == 2);
        for (std::size_t h = 0; h < 2; ++h) {
            require_rows(trace_json::rows_of((*q_rot[h])["data"]), want.heads[h].q_rot, 1e-12);
            require_rows(trace_json::rows_of((*k_rot[h])["data"]), want.heads[h].k_rot, 1e-12);
            CHECK((*k_rot[h])["kv_head"] == 1);
            require_rows(trace_json::rows_of((*scores[h])["data"]), want.heads[h].scores, 1e-12);
        }
        require_rows(trace_json::stage_rows(t, "output"), want.output, 1e-12);
    }
    SECTION("sinusoidal from position 5, one head") {
        const auto t = run_json({"-m", "self", "--positions", "sinusoidal", "--position-offset", "5"});
        schema::require_trace(t);
        schema::require_trace(run_json({"-m", "causal", "--positions", "rope", "--dim", "4"}));
        CHECK(t["positions"] == "sinusoidal");
        CHECK(t["first_position"] == 5);
        std::vector<std::string> order;
        for (const auto& stage : t["stages"]) order.push_back(stage["name"]);
        CHECK(order == std::vector<std::string>{"embeddings", "positions", "inputs", "queries", "keys", "values", "scores",
                                                "scaled", "masked", "weights", "context"});
        // The journey example's vectors, by hand from data/your_journey.json, then the encodings.
        const Grid e{{0.43, 0.15, 0.89}, {0.55, 0.87, 0.66}, {0.57, 0.85, 0.64},
                     {0.22, 0.58, 0.33}, {0.77, 0.25, 0.10}, {0.05, 0.80, 0.55}};
        const Grid w_q = trace_json::rows_of(t["parameters"]["W_q"]);
        const Grid w_k = trace_json::rows_of(t["parameters"]["W_k"]);
        const Grid w_v = trace_json::rows_of(t["parameters"]["W_v"]);
        const Naive want = naive_layer(e, w_q, w_k, w_v, Grid{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, 1, 1, false,
                                 PositionScheme::sinusoidal, 5);
        require_rows(trace_json::stage_rows(t, "embeddings"), e, 0);
        require_rows(trace_json::stage_rows(t, "positions"), want.encoding, 1e-15);
        require_rows(trace_json::stage_rows(t, "inputs"), want.x, 1e-15);
        require_rows(trace_json::stage_rows(t, "context"), want.heads[0].context, 1e-12);
        // Position 5's first pair by hand: sin 5 and cos 5.
        CHECK(trace_json::stage_rows(t, "positions")[0][0] == Approx(-0.9589242746631385).margin(1e-15));
        CHECK(trace_json::stage_rows(t, "positions")[0][1] == Approx(0.28366218546322625).margin(1e-15));
    }
    SECTION("without --positions the header says none and no position stage appears") {
        const auto t = run_json({"-m", "self"});
        CHECK(t["positions"] == "none");
        CHECK_FALSE(t.contains("first_position"));
        for (const auto& stage : t["stages"])
            for (const char* name : {"embeddings", "positions", "queries_rotated", "keys_rotated"}) CHECK(stage["name"] != name);
    }
}

TEST_CASE("RoPE: shifting every position by the same amount leaves the scores unchanged", "[positions]") {
    for (const std::vector<std::string>& shape :
         {std::vector<std::string>{"-m", "self", "--dim", "4"}, {"-m", "causal", "--dim", "8", "--heads", "2"},
          {"-m", "self", "--dim", "12", "--heads", "3", "--kv-heads", "1"}, {"example:teacher_smiled", "-m", "self"}}) {
        INFO(fmt::format("{}", fmt::join(shape, " ")));
        auto args = shape;
        args.insert(args.end(), {"--positions", "rope"});
        const auto base = run_json(args);
        const auto base_scores = stages_named(base, "scores");
        for (const std::string offset : {"1", "10", "1000"}) {
            INFO("offset " << offset);
            auto shifted_args = args;
            shifted_args.insert(shifted_args.end(), {"--position-offset", offset});
            const auto shifted = run_json(shifted_args);
            // The rotated queries themselves do move with the positions ...
            CHECK(stages_named(shifted, "queries_rotated")[0]->at("data") != stages_named(base, "queries_rotated")[0]->at("data"));
            // ... their scores against the keys do not.
            const auto scores = stages_named(shifted, "scores");
            REQUIRE(scores.size() == base_scores.size());
            for (std::size_t h = 0; h < scores.size(); ++h) {
                const auto want = trace_json::rows_of((*base_scores[h])["data"]);
                require_rows(trace_json::rows_of((*scores[h])["data"]), want, 1e-12);
            }
        }
    }
    // Sinusoidal encodings are added before the projections: shifting them changes the scores.
    const auto a = run_json({"-m", "self", "--positions", "sinusoidal"});
    const auto b = run_json({"-m", "self", "--positions", "sinusoidal", "--position-offset", "10"});
    double largest = 0;
    const auto sa = trace_json::stage_rows(a, "scores"), sb = trace_json::stage_rows(b, "scores");
    for (std::size_t i = 0; i < sa.size(); ++i)
        for (std::size_t j = 0; j < sa[i].size(); ++j) largest = std::max(largest, std::abs(sa[i][j] - sb[i][j]));
    CHECK(largest > 0.01);
}

TEST_CASE("RoPE: for tokens with one vector, a score depends only on the distance between the two", "[positions]") {
    const cli::TempFile file(R"({"sentence": "la la la la la la la",
                                 "embeddings": {"la": [0.3, -0.8, 0.5, 0.1, 0.9]}})");
    for (const std::string dim : {"4", "6", "10"}) {
        INFO("--dim " << dim);
        const auto t = run_json({file.path(), "-m", "self", "--dim", dim, "--positions", "rope"});
        const auto s = trace_json::stage_rows(t, "scores");
        // Without positions every score would be the same; with RoPE the diagonals are constant.
        for (std::size_t i = 0; i + 1 < s.size(); ++i)
            for (std::size_t j = 0; j + 1 < s.size(); ++j) CHECK(s[i + 1][j + 1] == Approx(s[i][j]).margin(1e-12));
        double spread = 0;
        for (std::size_t j = 1; j < s.size(); ++j) spread = std::max(spread, std::abs(s[0][j] - s[0][0]));
        CHECK(spread > 1e-3);
    }
}

TEST_CASE("the shuffled sentence: permuted context vectors without positions, other ones with them", "[positions]") {
    // journey_shuffled holds the words of your_journey, with the same vectors, in reverse order.
    const auto max_gap = [](const std::vector<std::string>& options) {
        auto a_args = std::vector<std::string>{"example:your_journey", "-m", "self"};
        auto b_args = std::vector<std::string>{"example:journey_shuffled", "-m", "self"};
        a_args.insert(a_args.end(), options.begin(), options.end());
        b_args.insert(b_args.end(), options.begin(), options.end());
        const auto a = run_json(a_args), b = run_json(b_args);
        const auto& a_tokens = a["tokens"];
        const auto& b_tokens = b["tokens"];
        REQUIRE(a_tokens.size() == b_tokens.size());
        const auto za = trace_json::stage_rows(a, "context"), zb = trace_json::stage_rows(b, "context");
        double gap = 0;
        for (std::size_t i = 0; i < a_tokens.size(); ++i)
            for (std::size_t j = 0; j < b_tokens.size(); ++j)
                if (a_tokens[i] == b_tokens[j])
                    for (std::size_t c = 0; c < za[i].size(); ++c) gap = std::max(gap, std::abs(za[i][c] - zb[j][c]));
        return gap;
    };
    CHECK(max_gap({}) < 1e-12);
    CHECK(max_gap({"--positions", "none"}) < 1e-12);
    CHECK(max_gap({"--positions", "sinusoidal"}) > 0.01);
    CHECK(max_gap({"--positions", "rope", "--dim", "4"}) > 0.01);
}

TEST_CASE("the worked example shows the encoding of the query, or the rotations of its query and a key", "[positions]") {
    SECTION("sinusoidal") {
        const auto t = run_json({"-m", "self", "--positions", "sinusoidal", "-q", "starts", "--position-offset", "3"});
        const auto& p = t["worked"]["positions"];
        CHECK(p["scheme"] == "sinusoidal");
        CHECK(p["position"] == 5);  // the third token, counted from 3
        const Grid pe = sinusoids(1, 3, 5);
        for (std::size_t c = 0; c < 3; ++c) {
            CHECK(p["encoding"][c].get<double>() == Approx(pe[0][c]).margin(1e-15));
            CHECK(t["worked"]["inputs"][0]["values"][c].get<double>() ==
                  Approx(p["embedding"][c].get<double>() + pe[0][c]).margin(1e-15));
        }
        CHECK(p["embedding"] == nlohmann::json({0.57, 0.85, 0.64}));
        const auto text = cli::run({"-m", "self", "--positions", "sinusoidal", "-q", "starts", "--position-offset", "3",
                                    "-s", "context"});
        CHECK_THAT(text.out, Contains("position encoding: \"starts\" stands at position 5 (counted from 3); ω_i = "
                                      "10000^(−2i/3) = [1, 0.0022]"));
        CHECK_THAT(text.out, Contains("  e_starts = [0.57, 0.85, 0.64]\n"
                                      "  pe_starts = [sin(5×1), cos(5×1), sin(5×0.0022)] = [-0.9589, 0.2837, 0.0108]\n"
                                      "  x_starts = e_starts + pe_starts = [-0.3889, 1.1337, 0.6508]\n"
                                      "q_starts = x_starts·W_q = ["));
    }
    SECTION("RoPE") {
        const auto t = run_json({"-m", "causal", "--dim", "4", "--positions", "rope", "-q", "with"});
        const auto& p = t["worked"]["positions"];
        CHECK(p["scheme"] == "rope");
        CHECK(p["position"] == 3);
        REQUIRE(p["rotations"].size() == 2);
        const std::vector<double> weights = trace_json::stage_rows(t, "weights")[3];
        const auto strongest = static_cast<std::size_t>(std::max_element(weights.begin(), weights.end()) - weights.begin());
        CHECK(p["rotations"][1]["vector"] == "k_" + t["tokens"][strongest].get<std::string>());
        CHECK(p["rotations"][1]["position"] == strongest);
        for (const auto& r : p["rotations"]) {
            const auto before = r["before"].get<std::vector<double>>();
            const Grid want = rotated(Grid{before}, r["position"].get<std::int64_t>());
            for (std::size_t c = 0; c < 4; ++c) CHECK(r["after"][c].get<double>() == Approx(want[0][c]).margin(1e-15));
        }
        // The dot products of the worked example use the rotated vectors.
        const auto k_rot = trace_json::stage_rows(t, "keys_rotated");
        CHECK(t["worked"]["dot_scores"][1]["key_vector"].get<std::vector<double>>() == k_rot[1]);
        const auto text = cli::run({"-m", "causal", "--dim", "4", "--positions", "rope", "-q", "with", "-s", "context"});
        CHECK_THAT(text.out, Contains("RoPE: \"with\" stands at position 3 (counted from 0); pair k, numbers k and k + 2, "
                                      "turns by φk = p·θ_k, θ_k = 10000^(−2(k−1)/4) = [1, 0.01]\n"
                                      "  q_with at position 3: φ = [3, 0.03]\n"
                                      "    pair 1: "));
        CHECK_THAT(text.out, Contains("(the key with the largest weight) at position"));
        CHECK_THAT(text.out, Contains("scores: the rotated query's dot product with every rotated key"));
    }
}

TEST_CASE("every format shows the position stages", "[positions][formats]") {
    const std::vector<std::string> rope{"-m", "self", "--dim", "4", "--heads", "2", "--positions", "rope", "-s",
                                        "positions,queries_rotated,keys_rotated"};
    const auto with = [](std::vector<std::string> args, std::vector<std::string> more) {
        args.insert(args.end(), more.begin(), more.end());
        return cli::run(args);
    };
    const auto table = with(rope, {});
    CHECK_THAT(table.out, Contains("attntrace · self mode · RoPE positions · 6 tokens"));
    CHECK_THAT(table.out, Contains("positions · 6×1 · φk = p·θ_k, θ_k = 10000^(−2(k−1)/2)"));
    CHECK_THAT(table.out, Contains("queries_rotated · head 2 · 6×2 · RoPE(Q_2): numbers (k, k + 1) as (a, b) → (a·cos "
                                   "φk − b·sin φk, b·cos φk + a·sin φk)"));
    CHECK_THAT(table.out, Contains("keys_rotated · head 1 · 6×2 · RoPE(K_1)"));
    const auto markdown = with(rope, {"-f", "markdown"});
    CHECK_THAT(markdown.out, Contains("# attntrace: self mode, RoPE positions, 6 tokens"));
    CHECK_THAT(markdown.out, Contains("## queries_rotated · head 1 · 6×2"));
    const auto csv = with(rope, {"-f", "csv"});
    CHECK_THAT(csv.out, Contains("stage,positions\n"));
    CHECK_THAT(csv.out, Contains("stage,keys_rotated,2\n"));
    const auto json = with(rope, {"-f", "json"});
    CHECK_THAT(json.out, Contains("\"name\": \"queries_rotated\""));
    const auto sinusoidal = cli::run({"-m", "causal", "--positions", "sinusoidal", "--position-offset", "2", "-f", "csv",
                                      "-s", "embeddings,positions,inputs"});
    CHECK_THAT(sinusoidal.out, Contains("stage,embeddings\nformula,E\n"));
    CHECK_THAT(sinusoidal.out, Contains("stage,inputs\nformula,X = E + PE\n"));
    CHECK_THAT(cli::run({"-m", "causal", "--positions", "sinusoidal", "--position-offset", "2", "-s", "inputs"}).out,
               Contains("attntrace · causal mode · sinusoidal positions from 2 · 6 tokens"));
}

TEST_CASE("the explanation says what each scheme does and names the other RoPE pairing", "[positions][explain]") {
    const auto rope = cli::run({"-m", "self", "--dim", "4", "--positions", "rope", "--explain", "-s",
                                "positions,queries_rotated,keys_rotated,context"});
    REQUIRE(rope.exit_code == 0);
    CHECK_THAT(rope.out, Contains("\"rotate half\" pairing of GPT-NeoX and LLaMA"));
    CHECK_THAT(rope.out, Contains("interleaved pairing of the RoFormer paper and GPT-J"));
    CHECK_THAT(rope.out, Contains("down to θ_2 = 0.01"));
    CHECK_THAT(rope.out, Contains("Word order enters through the rotations of the queries and keys"));
    CHECK_THAT(rope.out, !Contains("Nothing here depends on word order"));
    const auto sinusoidal = cli::run({"-m", "causal", "--positions", "sinusoidal", "--explain", "-s", "positions,inputs,context"});
    REQUIRE(sinusoidal.exit_code == 0);
    CHECK_THAT(sinusoidal.out, Contains("Sinusoidal encodings (Vaswani et al., 2017)"));
    CHECK_THAT(sinusoidal.out, Contains("X = E + PE: (6×3) + (6×3) → 6×3"));
    CHECK_THAT(sinusoidal.out, Contains("Word order enters through the position encodings added to the embeddings and "
                                        "through the mask"));
}

TEST_CASE("the check passes with positions", "[positions][check]") {
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"-m", "self", "--positions", "sinusoidal"},
          {"-m", "causal", "--dim", "8", "--heads", "2", "--kv-heads", "1", "--positions", "rope", "--position-offset", "9"},
          {"-m", "causal", "--dim", "4", "--positions", "rope", "--dtype", "float32"}}) {
        auto with_check = args;
        with_check.push_back("--check");
        const auto r = cli::run(with_check);
        INFO(fmt::format("{}", fmt::join(with_check, " ")) << ": " << r.err);
        CHECK(r.exit_code == 0);
        CHECK_THAT(r.out, Contains("checks passed"));
    }
}

TEST_CASE("a description is withheld when position information changes the numbers it describes", "[positions][descriptions]") {
    const auto plain = run_json({"example:book_fascinating", "-m", "self"});
    CHECK_FALSE(plain["description"].get<std::string>().empty());
    const auto t = run_json({"example:book_fascinating", "-m", "self", "--positions", "sinusoidal"});
    CHECK(t["description"] == "");
    CHECK(t["notes"].back() == "this input's description is written for its own settings, so it is not shown with "
                               "sinusoidal positions");
    const auto later = run_json({"example:book_fascinating", "-m", "causal", "--positions", "rope", "--position-offset", "4"});
    CHECK(later["notes"].back() == "this input's description is written for its own settings, so it is not shown with "
                                   "RoPE positions from 4");
    // An input that asks for positions itself describes the run with them.
    const cli::TempFile file(R"({"description": "Two words, RoPE from the file.", "positions": "rope",
                                 "sentence": "a b", "embeddings": {"a": [1, 0], "b": [0, 1]}})");
    const auto own = run_json({file.path(), "-m", "self"});
    CHECK(own["positions"] == "rope");
    CHECK(own["description"] == "Two words, RoPE from the file.");
    const auto other = run_json({file.path(), "-m", "self", "--positions", "none"});
    CHECK(other["positions"] == "none");
    CHECK(other["notes"] == nlohmann::json({"this input's description is written for its own settings, so it is not "
                                            "shown with --positions none"}));
    const auto moved = run_json({file.path(), "-m", "causal", "--position-offset", "2"});
    CHECK(moved["notes"] == nlohmann::json({"this input's description is written for its own settings, so it is not "
                                            "shown with RoPE positions from 2"}));
    // plain mode does not use the file's positions, so its description stands
    const auto plain_run = run_json({file.path(), "-m", "plain"});
    CHECK(plain_run["description"] == "Two words, RoPE from the file.");
}

TEST_CASE("positions that do not fit the run are refused, saying why", "[positions][errors]") {
    usage_error({"-m", "self", "--positions", "rope"},
                "--positions rope turns pairs of numbers (i, i + d_head/2) of each head's queries and keys, so d_head must "
                "be even, but the generated weights give d_head = 3 (d_model = 3 for one head); --dim 4 would give an "
                "even d_head");
    usage_error({"-m", "self", "--dim", "6", "--heads", "2", "--positions", "rope"},
                "d_head = 3 (d_model = 6 for 2 heads); --dim 8 would give an even d_head");
    usage_error({"-m", "plain", "--positions", "sinusoidal"},
                "--positions and --position-offset apply to modes self and causal, the Transformer's self-attention: "
                "plain mode is the lecture's first version, without weights or positions (try --mode self)");
    usage_error({"example:teacher_smiled_fr", "--positions", "rope"}, "--positions and --position-offset apply to modes self and causal");
    usage_error({"-m", "self", "--position-offset", "3"},
                "--position-offset moves the positions of --positions sinusoidal or rope, and this run has no position "
                "information (--positions none)");
    usage_error({"-m", "self", "--positions", "sideways"}, "\"sideways\" is not one of none, sinusoidal, rope");
    usage_error({"-m", "self", "--positions", "sinusoidal", "--position-offset", "-1"}, "--position-offset");
    // From the input: data errors at the field.
    const cli::TempFile odd(R"({"positions": "rope", "sentence": "a b", "embeddings": {"a": [1, 0, 0], "b": [0, 1, 0]},
        "weights": {"query": [[1, 0, 0], [0, 1, 0], [0, 0, 1]], "key": [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
                    "value": [[1, 0], [0, 1], [0, 0]]}})");
    data_error({odd.path(), "-m", "self"},
               "/positions \"rope\" turns pairs of numbers (i, i + d_head/2) of each head's queries and keys, so d_head "
               "must be even, but /weights/query gives d_head = 3 (3 columns for one head)");
    // ... unless an option asked for the odd heads
    usage_error({odd.path(), "-m", "self", "--positions", "rope"}, "/weights/query gives d_head = 3");
    const cli::TempFile unknown(R"({"positions": "learned", "sentence": "a", "embeddings": {"a": [1, 0]}})");
    data_error({unknown.path()}, "/positions: unknown position scheme \"learned\" (expected one of: none, sinusoidal, rope)");
    const cli::TempFile pair(R"({"positions": "rope", "source": {"tokens": ["a"], "states": [[1]]},
                                 "target": {"tokens": ["x"], "states": [[1]]}})");
    data_error({pair.path()}, "/positions: positions belong to self-attention (modes self and causal)");
    const cli::TempFile misnamed(R"({"positional_encoding": "rope", "sentence": "a", "embeddings": {"a": [1, 0]}})");
    data_error({misnamed.path()}, "the position scheme (none, sinusoidal or rope) goes under \"positions\"");
    // plain mode reads a file that asks for positions, and says they are not used
    const cli::TempFile asks(R"({"positions": "sinusoidal", "sentence": "a b", "embeddings": {"a": [1, 0], "b": [0, 1]}})");
    const auto r = cli::run({asks.path()});
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("note: the input's positions (\"sinusoidal\") are not used: plain mode has no position "
                               "information (try --mode self)"));
    CHECK_THAT(r.out, !Contains("positions ·"));
}

TEST_CASE("RoPE's interleaved pairing gives the same scores once W_q's and W_k's columns are reordered", "[positions]") {
    // The RoFormer paper and GPT-J pair numbers 2i and 2i + 1 (0-based) of a head; attntrace
    // pairs i and i + d_head/2. Computed here the interleaved way, in plain loops ...
    Lcg rng{7};
    const std::size_t n = 5, d_in = 3, d_head = 6, h = d_head / 2;
    const int heads = 2;
    const Grid x = rng.grid(n, d_in);
    const Grid w_q = rng.grid(d_in, d_head * heads), w_k = rng.grid(d_in, d_head * heads), w_v = rng.grid(d_in, 4);
    const auto interleaved = [&](const Grid& v) {
        Grid out = v;
        for (std::size_t r = 0; r < n; ++r)
            for (std::size_t i = 0; i < h; ++i) {
                const double phi = static_cast<double>(r) * std::pow(10000.0, -2.0 * static_cast<double>(i) / d_head);
                out[r][2 * i] = v[r][2 * i] * std::cos(phi) - v[r][2 * i + 1] * std::sin(phi);
                out[r][2 * i + 1] = v[r][2 * i + 1] * std::cos(phi) + v[r][2 * i] * std::sin(phi);
            }
        return out;
    };
    // ... and the same weights with each head's columns reordered: the even 0-based ones (the
    // first of each interleaved pair) first, then the odd ones.
    const auto reordered = [&](const Grid& w) {
        Grid out = w;
        for (std::size_t c = 0; c < d_in; ++c)
            for (int b = 0; b < heads; ++b)
                for (std::size_t i = 0; i < h; ++i) {
                    const std::size_t base = static_cast<std::size_t>(b) * d_head;
                    out[c][base + i] = w[c][base + 2 * i];
                    out[c][base + i + h] = w[c][base + 2 * i + 1];
                }
        return out;
    };
    Sequence sequence;
    sequence.vectors = matrix_of(x);
    for (std::size_t i = 0; i < n; ++i) sequence.tokens.push_back(fmt::format("t{}", i + 1));
    const Projections w = projections(matrix_of(reordered(w_q)), matrix_of(reordered(w_k)), matrix_of(w_v), matrix_of(rng.grid(4, 2)));
    TraceOptions options;
    options.mode = Mode::self;
    options.heads = heads;
    options.positions = PositionScheme::rope;
    const Trace t = trace_single(sequence, &w, options);
    const Grid q = times(x, w_q), k = times(x, w_k);
    for (int b = 0; b < heads; ++b) {
        const Grid q_rot = interleaved(columns(q, static_cast<std::size_t>(b) * d_head, d_head));
        const Grid k_rot = interleaved(columns(k, static_cast<std::size_t>(b) * d_head, d_head));
        Grid scores(n, std::vector<double>(n, 0.0));
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < n; ++j)
                for (std::size_t c = 0; c < d_head; ++c) scores[i][j] += q_rot[i][c] * k_rot[j][c];
        require_stage(t, StageId::scores, b + 1, scores, 1e-12);
    }
    // Without the reordering the scores differ: the layouts are not interchangeable as they are.
    const Projections unordered = projections(matrix_of(w_q), matrix_of(w_k), matrix_of(w_v), matrix_of(rng.grid(4, 2)));
    const Trace plain = trace_single(sequence, &unordered, options);
    const Grid q_rot = interleaved(columns(q, 0, d_head)), k_rot = interleaved(columns(k, 0, d_head));
    double largest = 0;
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j) {
            double s = 0;
            for (std::size_t c = 0; c < d_head; ++c) s += q_rot[i][c] * k_rot[j][c];
            largest = std::max(largest, std::abs(s - plain.at(StageId::scores, 1).data(static_cast<Eigen::Index>(i),
                                                                                        static_cast<Eigen::Index>(j))));
        }
    CHECK(largest > 1e-3);
}
