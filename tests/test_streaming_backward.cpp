// The streaming backward pass (attention/streaming_backward.hpp) against two others that share
// nothing with it: the stage-by-stage backward of a full trace (attention/backward.hpp, itself
// held to finite differences by test_backward.cpp), on many shapes, tile sizes that do not
// divide n, every mask, heads, grouped heads and positions; and central differences of the
// tests' own forward pass in plain loops (support/naive_layer.hpp). Then float32 against
// float64, the same bytes for one thread and two, and the refusals.
#include "attention/backward.hpp"
#include "attention/streaming_backward.hpp"
#include "attention/trace.hpp"
#include "core/error.hpp"
#include "input/examples.hpp"
#include "input/load.hpp"
#include "support/naive_layer.hpp"

#include "support/catch.hpp"
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace attntrace;

namespace {

Problem sentence(std::size_t n, std::size_t d, std::uint64_t seed, std::optional<Projections> w = std::nullopt) {
    naive::Lcg rng{seed};
    SingleSequenceInput in;
    for (std::size_t i = 0; i < n; ++i) in.sequence.tokens.push_back(fmt::format("t{}", i + 1));
    in.sequence.vectors = naive::matrix_of(rng.grid(n, d));
    in.weights = std::move(w);
    Problem p;
    p.origin = "test";
    p.input = std::move(in);
    return p;
}

Problem example(std::string_view name) { return load_problem(find_example(name)->json, std::string(name)); }

Vector row_of(naive::Lcg& rng, std::size_t d) { return naive::matrix_of(rng.grid(1, d)).row(0); }

// W_q (d_in × d_model), W_k and W_v (d_in × d_kv), optionally W_o (d_model × d_out) and
// every bias, from the tests' own generator.
Projections weights(std::size_t d_in, std::size_t d_model, std::size_t d_kv, std::size_t d_out, bool biases,
                    std::uint64_t seed) {
    naive::Lcg rng{seed};
    Projections w;
    w.query = naive::matrix_of(rng.grid(d_in, d_model));
    w.key = naive::matrix_of(rng.grid(d_in, d_kv));
    w.value = naive::matrix_of(rng.grid(d_in, d_kv));
    if (d_out > 0) w.output = naive::matrix_of(rng.grid(d_model, d_out));
    if (biases) {
        w.query_bias = row_of(rng, d_model);
        w.key_bias = row_of(rng, d_kv);
        w.value_bias = row_of(rng, d_kv);
        if (d_out > 0) w.output_bias = row_of(rng, d_out);
    }
    return w;
}

Problem with_layer_norm(Problem p, std::uint64_t seed) {
    auto& in = std::get<SingleSequenceInput>(p.input);
    naive::Lcg rng{seed};
    LayerNorm ln;
    const auto d = static_cast<std::size_t>(in.sequence.vectors.cols());
    ln.gamma = row_of(rng, d);
    ln.beta = row_of(rng, d);
    ln.epsilon = 0.01;
    ln.name = "test.ln_1";
    in.layernorm = ln;
    return p;
}

// The target of a target loss, of the result's shape, from the tests' generator.
Matrix target_of(Eigen::Index rows, Eigen::Index cols, std::uint64_t seed) {
    naive::Lcg rng{seed};
    return naive::matrix_of(rng.grid(static_cast<std::size_t>(rows), static_cast<std::size_t>(cols)));
}

// |a − b| over the largest |b| (at least 1), the worst entry.
double relative_difference(const Matrix& a, const Matrix& b) {
    REQUIRE(a.rows() == b.rows());
    REQUIRE(a.cols() == b.cols());
    if (a.size() == 0) return 0;
    return (a - b).cwiseAbs().maxCoeff() / std::max(1.0, b.cwiseAbs().maxCoeff());
}

struct Run {
    Problem problem;
    TraceOptions options;
};

// The stage-by-stage backward's gradient of stage `id` for query head h (0-based), or of the
// first query head of key/value head h: the columns of the streaming pass's wide matrix.
Matrix head_stage(const Gradients& g, StageId id, int head, bool several) {
    const Stage* s = g.find(id, several ? head + 1 : 0);
    return s ? s->data : Matrix();
}

// Every gradient of the streaming pass against the stage-by-stage backward of the full trace,
// to `tolerance` of each matrix's largest entry: with the queries held, and made again per tile.
void same_as_stages(const Run& run, const Loss& loss, Eigen::Index tile, double tolerance = 1e-10) {
    const Trace t = attntrace::trace(run.problem, run.options);
    const Gradients g = backward(t, loss);
    for (const bool made : {false, true}) {
        StreamBackwardOptions so;
        so.inputs = so.stages = true;
        so.tile = tile;
        so.make_queries = made;
        const StreamGradients s = stream_backward(run.problem, run.options, loss, so);
        INFO("tile " << tile << ", loss " << to_string(loss.kind) << ", " << to_string(run.options.mode) << ", "
                     << t.heads << " heads, " << t.kv_heads << " key/value heads, queries "
                     << (made ? "made" : "held"));
        CHECK(s.value == Approx(g.value).epsilon(1e-12).margin(1e-12));
        // the same parameters, each with the same gradient
        std::size_t parameters = 0;
        for (const Stage& stage : g.stages) {
            if (stage.parameter.empty()) continue;
            ++parameters;
            const Matrix* mine = s.parameter(stage.parameter);
            INFO("parameter " << stage.parameter);
            REQUIRE(mine != nullptr);
            CHECK(relative_difference(*mine, stage.data) < tolerance);
        }
        CHECK(s.parameters.size() == parameters);
        // dX, of what the run reads, and its rows' norms
        const Stage* inputs = g.find(StageId::embeddings) ? g.find(StageId::embeddings) : g.find(StageId::inputs);
        REQUIRE(inputs != nullptr);
        REQUIRE(s.inputs.has_value());
        CHECK(relative_difference(*s.inputs, inputs->data) < tolerance);
        REQUIRE(s.input_norms.size() == static_cast<std::size_t>(inputs->row_count()));
        for (Eigen::Index i = 0; i < inputs->row_count(); ++i)
            CHECK(s.input_norms[static_cast<std::size_t>(i)] ==
                  Approx(inputs->data.row(i).norm()).epsilon(tolerance).margin(tolerance));
        // dZ, dQ, dK, dV of every head
        const bool several = t.heads > 1;
        const Eigen::Index d_head = s.queries->cols() / t.heads, d_v = s.context->cols() / t.heads;
        const int per = t.heads / t.kv_heads;
        for (int h = 0; h < t.heads; ++h) {
            INFO("head " << h + 1);
            // a focus on one head reaches no other head's queries: no stage there, and 0 here
            const Matrix dq = head_stage(g, StageId::queries, h, several);
            if (dq.size() > 0) CHECK(relative_difference(s.queries->middleCols(h * d_head, d_head), dq) < tolerance);
            else CHECK((loss.kind == LossKind::focus && s.queries->middleCols(h * d_head, d_head).isZero(0)));
            const Matrix dz = head_stage(g, StageId::context, h, several);
            if (dz.size() > 0) CHECK(relative_difference(s.context->middleCols(h * d_v, d_v), dz) < tolerance);
            else CHECK(s.context->middleCols(h * d_v, d_v).isZero(0));  // focus: the loss is on the weights
        }
        for (int kv = 0; kv < t.kv_heads; ++kv) {
            INFO("key/value head " << kv + 1);
            const Matrix dk = head_stage(g, StageId::keys, kv * per, several);
            if (dk.size() > 0) CHECK(relative_difference(s.keys->middleCols(kv * d_head, d_head), dk) < tolerance);
            else CHECK((loss.kind == LossKind::focus && s.keys->middleCols(kv * d_head, d_head).isZero(0)));
            const Matrix dv = head_stage(g, StageId::values, kv * per, several);
            if (dv.size() > 0) CHECK(relative_difference(s.values->middleCols(kv * d_v, d_v), dv) < tolerance);
            else CHECK(s.values->middleCols(kv * d_v, d_v).isZero(0));
        }
    }
}

// Sum, a target of the result's shape, and a focus on (query, key) of `head`, each at `tiles`.
void every_loss(const Run& run, std::initializer_list<Eigen::Index> tiles, Eigen::Index query, Eigen::Index key,
                int head = 0) {
    const Trace t = attntrace::trace(run.problem, run.options);
    const Stage& result = t.find(StageId::output) ? t.at(StageId::output) : t.at(StageId::context);
    const Loss target = Loss::towards(target_of(result.row_count(), result.col_count(), 7));
    for (const Eigen::Index tile : tiles)
        for (const Loss& loss : {Loss::sum(), target, Loss::focus(query, key, head)}) same_as_stages(run, loss, tile);
}

Run run_of(Problem p, Mode mode) {
    Run r{std::move(p), {}};
    r.options.mode = mode;
    return r;
}

}  // namespace

TEST_CASE("streaming backward: self and causal equal the stage-by-stage backward, tiles that do not divide n",
          "[streaming_backward]") {
    for (const Mode mode : {Mode::self, Mode::causal}) {
        INFO(to_string(mode));
        every_loss(run_of(sentence(37, 5, 1), mode), {1, 5, 8, 36, 37, 256}, 30, 2);  // weights drawn from the seed
        every_loss(run_of(sentence(23, 4, 2, weights(4, 3, 3, 0, true, 3)), mode), {4, 7}, 22,
                   0);  // biases, d_k ≠ d_in
    }
    every_loss(run_of(example("your_journey"), Mode::causal), {2, 4}, 1, 0);
}

TEST_CASE("streaming backward: plain mode, where X is the queries, the keys and the values", "[streaming_backward]") {
    every_loss(run_of(sentence(29, 6, 11), Mode::plain), {4, 10}, 28, 3);
}

TEST_CASE("streaming backward: heads through W_o, grouped key/value heads, biases", "[streaming_backward]") {
    Run two = run_of(sentence(41, 6, 21, weights(6, 8, 8, 5, true, 22)), Mode::causal);
    two.options.heads = 2;
    every_loss(two, {6, 16}, 40, 12, 2);
    Run grouped = run_of(sentence(33, 4, 23, weights(4, 8, 4, 3, false, 24)), Mode::self);
    grouped.options.heads = 4, grouped.options.kv_heads = 2;
    every_loss(grouped, {5, 33}, 10, 31, 3);
    Run one_group = run_of(sentence(19, 4, 25), Mode::causal);  // W_o drawn from the seed
    one_group.options.heads = 2, one_group.options.kv_heads = 1;
    every_loss(one_group, {3}, 18, 17, 1);
    Run with_output = run_of(sentence(17, 3, 26, weights(3, 4, 4, 2, true, 27)), Mode::self);  // one head and a W_o
    every_loss(with_output, {4}, 16, 0);
}

TEST_CASE("streaming backward: RoPE and sinusoidal positions, and ln_1", "[streaming_backward]") {
    Run rope = run_of(sentence(30, 4, 31, weights(4, 8, 8, 4, false, 32)), Mode::causal);
    rope.options.heads = 2, rope.options.positions = PositionScheme::rope, rope.options.position_offset = 5;
    every_loss(rope, {7, 30}, 29, 4, 1);
    Run sinusoidal = run_of(sentence(26, 6, 33), Mode::self);
    sinusoidal.options.positions = PositionScheme::sinusoidal, sinusoidal.options.position_offset = 2;
    every_loss(sinusoidal, {5}, 3, 25);
    Run gpt = run_of(with_layer_norm(sentence(21, 4, 35, weights(4, 4, 4, 4, true, 36)), 37), Mode::causal);
    gpt.options.heads = 2;
    every_loss(gpt, {4, 21}, 20, 7, 2);
}

TEST_CASE("streaming backward: windows and padding, with rows that see no key", "[streaming_backward]") {
    Problem p = sentence(31, 4, 41);
    auto& tokens = std::get<SingleSequenceInput>(p.input).sequence.tokens;
    for (const std::size_t i : {3u, 9u, 10u, 11u, 30u}) tokens[i] = "<pad>";
    for (const Mode mode : {Mode::causal, Mode::self}) {
        INFO(to_string(mode));
        Run r = run_of(p, mode);
        for (const Eigen::Index window : {1, 3, 12}) {
            INFO("window " << window);
            r.options.window = window;
            every_loss(r, {4, 8}, 29, window == 1 ? 29 : 28);  // window 1: a query sees itself alone
        }
    }
    // window 1 with padding: query 10 sees only itself, a padding token: no key at all
    Run r = run_of(p, Mode::causal);
    r.options.window = 1;
    const Trace t = attntrace::trace(r.problem, r.options);
    CHECK(t.at(StageId::weights).data.row(10).isZero(0));
    StreamBackwardOptions so;
    so.stages = true, so.tile = 4;
    const StreamGradients s = stream_backward(r.problem, r.options, Loss::sum(), so);
    CHECK(s.queries->row(10).isZero(0));
}

TEST_CASE("streaming backward: temperature, every scale rule, one token, and the default tiles",
          "[streaming_backward]") {
    Run r = run_of(sentence(20, 3, 51), Mode::causal);
    r.options.temperature = 0.6;
    every_loss(r, {6}, 19, 1);
    r.options.scale = ScaleRule::none;
    every_loss(r, {6}, 19, 1);
    r.options.scale = ScaleRule::value, r.options.scale_value = 2.5, r.options.temperature = 2;
    every_loss(r, {6}, 19, 1);
    every_loss(run_of(sentence(1, 3, 52), Mode::self), {1, 256}, 0, 0);
    // n = 300 with the tiles of 256: two query blocks and two key blocks of unequal sizes
    Run longer = run_of(sentence(300, 8, 53), Mode::causal);
    longer.options.heads = 2;
    for (const Loss& loss : {Loss::sum(), Loss::focus(299, 3, 2)}) same_as_stages(longer, loss, backward_tile);
    Run self = run_of(sentence(257, 4, 54), Mode::self);
    same_as_stages(self, Loss::towards(target_of(257, 4, 55)), backward_tile);
}

namespace {

naive::Grid grid_of(const Matrix& m) {
    naive::Grid g(static_cast<std::size_t>(m.rows()), std::vector<double>(static_cast<std::size_t>(m.cols())));
    for (Eigen::Index r = 0; r < m.rows(); ++r)
        for (Eigen::Index c = 0; c < m.cols(); ++c)
            g[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)] = m(r, c);
    return g;
}

// dL/d(vars[name][r][c]) by a central difference of the naive loss.
double difference(const naive::LayerSpec& spec, naive::Vars vars, const naive::LossSpec& loss, const std::string& name,
                  std::size_t r, std::size_t c) {
    constexpr double step = 1e-5;
    double& x = vars.at(name)[r][c];
    const double original = x;
    x = original + step;
    const double up = naive::layer_loss(spec, vars, loss);
    x = original - step;
    const double down = naive::layer_loss(spec, vars, loss);
    return (up - down) / (2 * step);
}

}  // namespace

TEST_CASE("streaming backward: long inputs whose shapes are whole vector registers", "[streaming_backward]") {
    // 300 tokens, heads of d_head = d_v = 8 (whole registers of doubles on every x86-64 copy of
    // the kernels), tiles of 64 and 256: on a CPU with AVX-512 these tiles go through
    // own_product.hpp's kernels (the scores and dP from each key block's Kᵀ and Vᵀ, dSᵀ·Q and
    // Pᵀ·dZ read transposed where they are), elsewhere through Eigen; the same gradients.
    Problem p = sentence(300, 8, 56, weights(8, 16, 8, 0, true, 57));
    auto& tokens = std::get<SingleSequenceInput>(p.input).sequence.tokens;
    for (const std::size_t i : {0u, 70u, 71u, 299u}) tokens[i] = "<pad>";
    for (const Mode mode : {Mode::causal, Mode::self}) {
        INFO(to_string(mode));
        Run r = run_of(p, mode);
        r.options.heads = 2, r.options.kv_heads = 1;
        every_loss(r, {64, 256}, 298, 200, 1);
        r.options.window = 70;
        every_loss(r, {64}, 298, 250, 1);
    }
}

TEST_CASE("streaming backward: every parameter and input against central differences of a naive layer",
          "[streaming_backward]") {
    // Two heads, biases, W_o and b_o, ln_1, causal with a window and a padding token: n = 9 in
    // tiles of 4. The naive layer is written from the formulas, in plain loops of doubles.
    Problem p = with_layer_norm(sentence(9, 4, 61, weights(4, 4, 4, 3, true, 62)), 63);
    auto& in = std::get<SingleSequenceInput>(p.input);
    in.sequence.tokens[5] = "<pad>";
    Run run = run_of(p, Mode::causal);
    run.options.heads = 2, run.options.window = 6, run.options.temperature = 0.8;
    naive::LayerSpec spec;
    spec.heads = 2, spec.causal = true, spec.window = 6, spec.temperature = 0.8, spec.scale = std::sqrt(2.0);
    spec.padding = {false, false, false, false, false, true, false, false, false};
    spec.layernorm = true, spec.epsilon = 0.01;
    naive::Vars vars;
    const Projections& w = *in.weights;
    vars["inputs"] = grid_of(in.sequence.vectors);
    vars["W_q"] = grid_of(w.query), vars["W_k"] = grid_of(w.key), vars["W_v"] = grid_of(w.value);
    vars["W_o"] = grid_of(*w.output);
    vars["b_q"] = grid_of(Matrix(*w.query_bias)), vars["b_k"] = grid_of(Matrix(*w.key_bias));  // one row each
    vars["b_v"] = grid_of(Matrix(*w.value_bias)), vars["b_o"] = grid_of(Matrix(*w.output_bias));
    vars["gamma"] = grid_of(Matrix(in.layernorm->gamma));
    vars["beta"] = grid_of(Matrix(in.layernorm->beta));
    const Matrix target = target_of(9, 3, 64);
    for (const int kind : {0, 1, 2}) {
        naive::LossSpec loss;
        Loss ours;
        if (kind == 0) loss.kind = naive::LossSpec::Kind::sum, ours = Loss::sum();
        if (kind == 1)
            loss.kind = naive::LossSpec::Kind::target, loss.target = grid_of(target), ours = Loss::towards(target);
        if (kind == 2)
            loss.kind = naive::LossSpec::Kind::focus, loss.query = 8, loss.key = 4, loss.head = 2,
            ours = Loss::focus(8, 4, 2);
        INFO("loss " << to_string(ours.kind));
        for (const Dtype dtype : {Dtype::float64, Dtype::float32}) {
            INFO(to_string(dtype));
            run.options.dtype = dtype;
            StreamBackwardOptions so;
            so.inputs = true, so.tile = 4;
            const StreamGradients s = stream_backward(run.problem, run.options, ours, so);
            const double tolerance = dtype == Dtype::float64 ? 1e-7 : 2e-4;
            CHECK(s.value == Approx(naive::layer_loss(spec, vars, loss)).epsilon(tolerance));
            std::size_t compared = 0;
            for (const auto& [name, grid] : vars) {
                const Matrix* mine = name == "inputs" ? &*s.inputs : s.parameter(name);
                INFO(name);
                REQUIRE(mine != nullptr);
                for (std::size_t r = 0; r < grid.size(); ++r)
                    for (std::size_t c = 0; c < grid[0].size(); ++c) {
                        const double want = difference(spec, vars, loss, name, r, c);
                        CHECK((*mine)(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)) ==
                              Approx(want).margin(tolerance).epsilon(tolerance));
                        ++compared;
                    }
            }
            CHECK(compared == 9 * 4 + 3 * 16 + 4 * 3 + 3 * 4 + 3 + 2 * 4);
            for (std::size_t i = 0; i < 9; ++i)  // the per-row summary is the norm of dX's row
                CHECK(s.input_norms[i] == Approx(s.inputs->row(static_cast<Eigen::Index>(i)).norm()).epsilon(1e-12));
        }
    }
}

TEST_CASE("streaming backward: float32 agrees with float64 to float32's rounding", "[streaming_backward]") {
    Run r = run_of(sentence(300, 16, 71, weights(16, 16, 16, 0, true, 72)), Mode::causal);
    for (const Mode mode : {Mode::causal, Mode::self})
        for (const bool target : {false, true}) {
            INFO(to_string(mode) << (target ? ", target" : ", sum"));
            r.options.mode = mode;
            const Loss loss = target ? Loss::towards(target_of(300, 16, 73)) : Loss::sum();
            StreamBackwardOptions so;
            so.inputs = true, so.tile = 64;
            r.options.dtype = Dtype::float64;
            const StreamGradients wide = stream_backward(r.problem, r.options, loss, so);
            r.options.dtype = Dtype::float32;
            const StreamGradients narrow = stream_backward(r.problem, r.options, loss, so);
            CHECK(narrow.dtype == Dtype::float32);
            CHECK(narrow.value == Approx(wide.value).epsilon(1e-5));
            REQUIRE(narrow.parameters.size() == wide.parameters.size());
            for (std::size_t i = 0; i < wide.parameters.size(); ++i) {
                INFO(wide.parameters[i].name);
                CHECK(relative_difference(narrow.parameters[i].data, wide.parameters[i].data) < 1e-4);
                CHECK(relative_difference(narrow.parameters[i].data, wide.parameters[i].data) > 0);  // two computations
            }
            CHECK(relative_difference(*narrow.inputs, *wide.inputs) < 1e-4);
        }
}

namespace {

bool same_bytes(const Matrix& a, const Matrix& b) {
    return a.rows() == b.rows() && a.cols() == b.cols() &&
           std::memcmp(a.data(), b.data(), sizeof(double) * static_cast<std::size_t>(a.size())) == 0;
}

// The run's pass on one thread and on two (tiles of `tile`, dX asked): the same bytes in L,
// every parameter's gradient, dX and its rows' norms.
void same_bytes_on_one_and_two_threads(const Run& r, const Loss& loss, Eigen::Index tile) {
    StreamBackwardOptions so;
    so.inputs = true, so.tile = tile;
    omp_set_num_threads(1);
    const StreamGradients one = stream_backward(r.problem, r.options, loss, so);
    omp_set_num_threads(2);
    const StreamGradients two = stream_backward(r.problem, r.options, loss, so);
    CHECK(std::memcmp(&one.value, &two.value, sizeof(double)) == 0);
    REQUIRE(one.parameters.size() == two.parameters.size());
    for (std::size_t i = 0; i < one.parameters.size(); ++i) {
        INFO(one.parameters[i].name);
        CHECK(same_bytes(one.parameters[i].data, two.parameters[i].data));
    }
    CHECK(same_bytes(*one.inputs, *two.inputs));
    CHECK(std::memcmp(one.input_norms.data(), two.input_norms.data(), sizeof(double) * one.input_norms.size()) == 0);
}

}  // namespace

TEST_CASE("streaming backward: the same bytes for one thread and two", "[streaming_backward][threads]") {
    // Long enough for both phases to start the second thread (worth_threads), in tiles of 32
    // so that the key blocks' tasks wait for each other's turns at dQ.
    Run r = run_of(sentence(640, 16, 81, weights(16, 16, 8, 6, true, 82)), Mode::causal);
    r.options.heads = 2, r.options.kv_heads = 1;
    const int before = omp_get_max_threads();
    for (const Mode mode : {Mode::causal, Mode::self})
        for (const Dtype dtype : {Dtype::float32, Dtype::float64})
            for (const bool target : {false, true}) {
                INFO(to_string(mode) << ", " << to_string(dtype) << (target ? ", target" : ", sum"));
                r.options.mode = mode, r.options.dtype = dtype;
                same_bytes_on_one_and_two_threads(r, target ? Loss::towards(target_of(640, 6, 83)) : Loss::sum(), 32);
            }
    // and with heads of whole registers in tiles of 64 (on AVX-512, own_product.hpp's kernels)
    Run whole = run_of(sentence(640, 16, 84, weights(16, 32, 16, 0, true, 85)), Mode::causal);
    whole.options.heads = 2, whole.options.kv_heads = 1;
    for (const Dtype dtype : {Dtype::float32, Dtype::float64}) {
        INFO(to_string(dtype) << ", target, heads of 16");
        whole.options.dtype = dtype;
        same_bytes_on_one_and_two_threads(whole, Loss::towards(target_of(640, 32, 86)), 64);
    }
    omp_set_num_threads(before);
}

TEST_CASE("streaming backward: what it cannot take is refused", "[streaming_backward]") {
    const Problem p = sentence(6, 3, 91);
    const auto refused = [&](TraceOptions o, const Loss& loss, const std::string& words) {
        CHECK_THROWS_WITH(stream_backward(p, o, loss), Catch::Contains(words));
    };
    TraceOptions o;
    o.mode = Mode::causal;
    refused(o, Loss::focus(0, 3), "the mask hides that key");  // −log 0
    CHECK_THROWS_AS(stream_backward(p, o, Loss::focus(0, 3)), DataError);
    CHECK_THROWS_AS(stream_backward(p, o, Loss::focus(6, 0)), UsageError);
    CHECK_THROWS_AS(stream_backward(p, o, Loss::focus(1, 0, 2)), UsageError);
    CHECK_THROWS_AS(stream_backward(p, o, Loss::towards(Matrix::Zero(6, 2))), DataError);
    refused(o, Loss::towards(Matrix::Zero(5, 3)), "the target has 5 rows of 3 numbers");
    TraceOptions fill = o;
    fill.mask_method.fill = MaskMethod::Fill::value;
    CHECK_THROWS_AS(stream_backward(p, fill, Loss::sum()), UsageError);
    TraceOptions by_sum = o;
    by_sum.normalization = Normalization::sum;
    CHECK_THROWS_AS(stream_backward(p, by_sum, Loss::sum()), UsageError);
    StreamBackwardOptions no_tiles;
    no_tiles.tile = 0;
    CHECK_THROWS_AS(stream_backward(p, o, Loss::sum(), no_tiles), UsageError);
    const Problem pair = example("black_cat_fr");
    TraceOptions bahdanau;
    bahdanau.mode = Mode::bahdanau;
    CHECK_THROWS_AS(stream_backward(pair, bahdanau, Loss::sum()), UsageError);
    // numbers too large for float32: the overflow is an error, not an infinite gradient. The
    // sizes are far from float32's largest number (3.4e38), so that rounding cannot decide:
    // 1e39 is past it before any arithmetic, and at 1e25 the inputs, queries and keys fit but
    // every score (a product of two of them, ~1e50) does not.
    TraceOptions narrow = o;
    narrow.dtype = Dtype::float32;
    Problem too_large = sentence(6, 3, 92);
    std::get<SingleSequenceInput>(too_large.input).sequence.vectors *= 1e39;
    CHECK_THROWS_WITH(stream_backward(too_large, narrow, Loss::sum()), Catch::Contains("too large for float32"));
    Problem huge = sentence(6, 3, 92);
    std::get<SingleSequenceInput>(huge.input).sequence.vectors *= 1e25;
    CHECK_THROWS_AS(stream_backward(huge, narrow, Loss::sum()), DataError);
    CHECK_NOTHROW(stream_backward(huge, o, Loss::sum()));  // float64 holds 1e50
}
