// The backward pass (attention/backward.hpp) against central finite differences of a forward
// pass written here in plain loops (support/naive_layer.hpp), for every mode and option: each
// gradient stage and parameter is compared with the difference quotient of the naive loss
// when that one entry is nudged (through the naive pass's hook, for an intermediate stage).
// A few cases are also worked by hand in the comments. Nothing here takes its expected numbers
// from the program's own backward pass.
#include "attention/backward.hpp"
#include "attention/backward_steps.hpp"
#include "attention/gradient_check.hpp"
#include "attention/trace.hpp"
#include "core/error.hpp"
#include "input/examples.hpp"
#include "input/load.hpp"
#include "support/naive_layer.hpp"

#include "support/catch.hpp"
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

using namespace attntrace;

namespace {

using naive::Grid;
using naive::LayerSpec;
using naive::LossSpec;
using naive::PairSpec;
using naive::Vars;

Grid grid_of(const Matrix& m) {
    Grid g(static_cast<std::size_t>(m.rows()), std::vector<double>(static_cast<std::size_t>(m.cols())));
    for (Eigen::Index r = 0; r < m.rows(); ++r)
        for (Eigen::Index c = 0; c < m.cols(); ++c) g[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)] = m(r, c);
    return g;
}

// A run: its problem and options, and the naive pass that computes the same function.
struct Case {
    Problem problem;
    TraceOptions options;
    LayerSpec layer;
    PairSpec pair;
    bool is_pair = false;
};

Problem example(std::string_view name) { return load_problem(find_example(name)->json, std::string(name)); }

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

Case single_case(Problem problem, Mode mode, std::size_t d_head) {
    Case c{std::move(problem), {}, {}, {}, false};
    c.options.mode = mode;
    c.layer.plain = mode == Mode::plain;
    c.layer.causal = mode == Mode::causal;
    c.layer.scale = mode == Mode::plain ? 1.0 : std::sqrt(static_cast<double>(d_head));
    return c;
}

// The independent variables at the trace's numbers: its parameters and the problem's vectors.
Vars vars_of(const Case& c, const Trace& t) {
    Vars vars;
    for (const Parameter& p : t.parameters) vars[p.name] = grid_of(p.data);
    if (const auto* single = std::get_if<SingleSequenceInput>(&c.problem.input)) {
        vars[c.layer.sinusoidal ? "embeddings" : "inputs"] = grid_of(single->sequence.vectors);
    } else {
        const auto& pair = std::get<EncoderDecoderInput>(c.problem.input);
        vars["encoder_states"] = grid_of(pair.source.vectors);
        vars["decoder_states"] = grid_of(pair.target.vectors);
    }
    return vars;
}

LossSpec spec_of(const Loss& loss) {
    LossSpec s;
    s.kind = loss.kind == LossKind::focus ? LossSpec::Kind::focus
             : loss.kind == LossKind::sum ? LossSpec::Kind::sum
                                          : LossSpec::Kind::target;
    s.query = static_cast<std::size_t>(loss.query), s.key = static_cast<std::size_t>(loss.key), s.head = loss.head;
    if (loss.kind == LossKind::target) s.target = grid_of(loss.target);
    return s;
}

double naive_loss(const Case& c, const Vars& vars, const LossSpec& loss, const naive::Hook& hook = {}) {
    return c.is_pair ? naive::pair_loss(c.pair, vars, loss, hook) : naive::layer_loss(c.layer, vars, loss, hook);
}

constexpr double step = 1e-5;

// dL/d(vars[name][r][c]) by a central difference of the naive loss.
double difference_of_var(const Case& c, Vars vars, const LossSpec& loss, const std::string& name, std::size_t r,
                         std::size_t col) {
    double& x = vars.at(name)[r][col];
    const double original = x;
    x = original + step;
    const double up = naive_loss(c, vars, loss);
    x = original - step;
    const double down = naive_loss(c, vars, loss);
    return (up - down) / (2 * step);
}

// dL/d(entry (r, col) of an intermediate matrix) by a central difference: the hook nudges it
// as the naive pass makes it.
double difference_of_stage(const Case& c, const Vars& vars, const LossSpec& loss, const std::string& stage, int head,
                           std::size_t r, std::size_t col) {
    const auto at = [&](double delta) {
        bool seen = false;
        const naive::Hook hook = [&](const std::string& s, int h, Grid& m) {
            if (s == stage && h == head) m[r][col] += delta, seen = true;
        };
        const double l = naive_loss(c, vars, loss, hook);
        REQUIRE(seen);  // the naive pass has this stage
        return l;
    };
    return (at(step) - at(-step)) / (2 * step);
}

// Where a gradient stage lives in the naive pass: its hook's name and head, and the column
// offset of a head's block in the full Q, K or V.
struct Place {
    std::string stage;
    int head = 0;
    std::size_t column = 0;
};

Place place_of(const Case& c, const Stage& g) {
    const int per = c.layer.heads / (c.layer.kv_heads > 0 ? c.layer.kv_heads : c.layer.heads);
    const int group = g.kv_head > 0 ? g.kv_head : std::max(g.head, 1);
    const auto width = static_cast<std::size_t>(g.col_count());
    switch (g.id) {
    case StageId::queries: return {"queries", 0, static_cast<std::size_t>(std::max(g.head, 1) - 1) * width};
    case StageId::keys: return {"keys", 0, static_cast<std::size_t>(group - 1) * width};
    case StageId::values: return {"values", 0, static_cast<std::size_t>(group - 1) * width};
    case StageId::keys_rotated: return {"keys_rotated", g.head > 0 ? (group - 1) * per + 1 : 0, 0};
    default: return {std::string(g.name()), g.head, 0};
    }
}

// Every gradient of `loss` on the case's trace compared with the naive pass's differences;
// returns how many entries were compared.
std::size_t check_case(const Case& c, const Loss& loss, double tolerance = 1e-6) {
    const Trace t = attntrace::trace(c.problem, c.options);
    const Gradients g = backward(t, loss);
    const Vars vars = vars_of(c, t);
    const LossSpec spec = spec_of(loss);
    // the naive pass is the same function as the trace's, or the comparison would mean nothing
    REQUIRE(naive_loss(c, vars, spec) == Approx(g.value).epsilon(1e-12).margin(1e-12));
    for (const auto& [name, grid] : vars) {
        INFO("a gradient for every variable: " << name);
        const auto id = parse_enum<StageId>(name);
        CHECK((g.find(std::string_view(name)) != nullptr || (id && g.find(*id) != nullptr)));
    }
    std::size_t compared = 0;
    for (const Stage& d : g.stages) {
        REQUIRE(d.direction == Direction::backward);
        const Place where = place_of(c, d);
        double worst = 0, got_there = 0, want_there = 0;
        Eigen::Index wr = 0, wc = 0;
        for (Eigen::Index r = 0; r < d.row_count(); ++r)
            for (Eigen::Index col = 0; col < d.col_count(); ++col) {
                const auto ur = static_cast<std::size_t>(r), uc = static_cast<std::size_t>(col);
                const std::string key(d.key());  // a variable (parameter, inputs), or a stage the hook nudges
                const double want = vars.count(key) > 0
                                        ? difference_of_var(c, vars, spec, key, ur, uc)
                                        : difference_of_stage(c, vars, spec, where.stage, where.head, ur, uc + where.column);
                const double error = std::abs(d.data(r, col) - want) / std::max(1.0, std::abs(want));
                ++compared;
                if (error >= worst) worst = error, wr = r, wc = col, got_there = d.data(r, col), want_there = want;
            }
        INFO("gradient of " << d.key() << " (head " << d.head << ") at (" << wr << ", " << wc << "): " << got_there
                            << " against the difference " << want_there);
        CHECK(worst < tolerance);
    }
    return compared;
}

// Of the result's shape (the output, or the context), numbers of the test's own.
Matrix target_for(const Case& c) {
    const Trace t = attntrace::trace(c.problem, c.options);
    const Stage& result = t.find(StageId::output) ? t.at(StageId::output) : t.at(StageId::context);
    naive::Lcg rng{99};
    return naive::matrix_of(rng.grid(static_cast<std::size_t>(result.row_count()), static_cast<std::size_t>(result.col_count())));
}

// The three losses on one case; each compares some entries.
void check_losses(const Case& c, Eigen::Index query, Eigen::Index key, int head = 0) {
    CHECK(check_case(c, Loss::sum()) > 0);
    CHECK(check_case(c, Loss::towards(target_for(c))) > 0);
    CHECK(check_case(c, Loss::focus(query, key, head)) > 0);
}

Projections random_projections(std::size_t d_in, std::size_t d_model, std::size_t d_kv, bool output, bool biases,
                               std::uint64_t seed) {
    naive::Lcg rng{seed};
    Projections w;
    w.query = naive::matrix_of(rng.grid(d_in, d_model));
    w.key = naive::matrix_of(rng.grid(d_in, d_kv));
    w.value = naive::matrix_of(rng.grid(d_in, d_kv));
    if (output) w.output = naive::matrix_of(rng.grid(d_model, 3));  // every use here has heads·d_v = d_model
    if (biases) {
        w.query_bias = naive::matrix_of(rng.grid(1, d_model)).row(0);
        w.key_bias = naive::matrix_of(rng.grid(1, d_kv)).row(0);
        w.value_bias = naive::matrix_of(rng.grid(1, d_kv)).row(0);
        if (output) w.output_bias = naive::matrix_of(rng.grid(1, 3)).row(0);
    }
    return w;
}

}  // namespace

TEST_CASE("backward: self and causal attention on the lecture's six words, every loss", "[backward]") {
    for (const Mode mode : {Mode::self, Mode::causal}) {
        INFO(to_string(mode));
        check_losses(single_case(example("your_journey"), mode, 3), 1, 0);  // "journey" looking at "Your"
    }
}

TEST_CASE("backward: plain mode, where X is the queries, the keys and the values", "[backward]") {
    check_losses(single_case(example("your_journey"), Mode::plain, 3), 1, 2);
}

TEST_CASE("backward: several heads through W_o and the concatenation", "[backward]") {
    Case c = single_case(example("two_heads"), Mode::causal, 3);
    c.layer.heads = 2;
    check_losses(c, 6, 1, 2);  // head 2: "it" looking at "dog"
    Case generated = single_case(sentence(5, 4, 11), Mode::self, 2);  // W_o drawn from the seed
    generated.options.heads = 2;
    generated.layer.heads = 2;
    check_losses(generated, 3, 0, 1);
}

TEST_CASE("backward: grouped-query attention sums each key and value head over its query heads", "[backward]") {
    Case c = single_case(sentence(5, 4, 21, random_projections(4, 4, 2, true, false, 5)), Mode::causal, 1);
    c.options.heads = 4, c.options.kv_heads = 2;
    c.layer.heads = 4, c.layer.kv_heads = 2;
    check_losses(c, 4, 2, 3);
    // dK of key/value head 1 is the sum of what its query heads 1 and 2 each send back:
    // nudging head 1's own copy of the keys, then head 2's, and adding the two differences.
    const Trace t = attntrace::trace(c.problem, c.options);
    const Gradients g = backward(t, Loss::sum());
    const Vars vars = vars_of(c, t);
    const Stage& dk1 = g.at(StageId::keys, 1);
    const Stage& dk2 = g.at(StageId::keys, 2);
    CHECK(dk1.kv_head == 1);
    for (std::size_t r = 0; r < 5; ++r) {
        const double first = difference_of_stage(c, vars, spec_of(Loss::sum()), "keys_share", 1, r, 0);
        const double second = difference_of_stage(c, vars, spec_of(Loss::sum()), "keys_share", 2, r, 0);
        CHECK(dk1.data(static_cast<Eigen::Index>(r), 0) == Approx(first + second).margin(1e-8));
        CHECK(dk2.data(static_cast<Eigen::Index>(r), 0) == dk1.data(static_cast<Eigen::Index>(r), 0));
        if (r > 0) CHECK(std::abs(first - second) > 1e-6);  // two real shares, not one counted twice
    }
}

TEST_CASE("backward: RoPE's rotations are turned back", "[backward]") {
    Case c = single_case(sentence(5, 4, 31, random_projections(4, 4, 4, true, false, 6)), Mode::causal, 2);
    c.options.heads = 2, c.options.positions = PositionScheme::rope, c.options.position_offset = 3;
    c.layer.heads = 2, c.layer.rope = true, c.layer.first_position = 3;
    check_losses(c, 2, 1, 1);
    // One pair turned by φ = π/2: (a, b) → (−b, a). Then ∂y₁/∂a = cos φ = 0 and ∂y₁/∂b = −sin φ
    // = −1, so dy = (1, 0) comes back as dx = (0, −1); dy = (0, 1) as (1, 0).
    Matrix angle(1, 1);
    angle << std::acos(-1.0) / 2;
    Matrix dy(2, 2);
    dy << 1, 0, 0, 1;
    const Matrix dx = grad::rotate_back(dy, Matrix(angle.replicate(2, 1)));
    CHECK(dx(0, 0) == Approx(0).margin(1e-15));
    CHECK(dx(0, 1) == Approx(-1));
    CHECK(dx(1, 0) == Approx(1));
    CHECK(dx(1, 1) == Approx(0).margin(1e-15));
}

TEST_CASE("backward: sinusoidal positions pass the inputs' gradient to the embeddings", "[backward]") {
    Case c = single_case(sentence(4, 4, 41), Mode::self, 4);
    c.options.positions = PositionScheme::sinusoidal, c.options.position_offset = 2;
    c.layer.sinusoidal = true, c.layer.first_position = 2;
    check_losses(c, 0, 3);
    const Gradients g = backward(attntrace::trace(c.problem, c.options), Loss::sum());
    CHECK(g.at(StageId::embeddings).data == g.at(StageId::inputs).data);
}

TEST_CASE("backward: biases and a W_o with one head", "[backward]") {
    check_losses(single_case(sentence(4, 3, 51, random_projections(3, 2, 2, true, true, 7)), Mode::self, 2), 2, 3);
}

TEST_CASE("backward: layer normalisation before the projections", "[backward]") {
    Problem p = sentence(4, 3, 61, random_projections(3, 3, 3, false, true, 8));
    LayerNorm ln;
    ln.gamma = naive::matrix_of(naive::Lcg{62}.grid(1, 3)).row(0);
    ln.beta = naive::matrix_of(naive::Lcg{63}.grid(1, 3)).row(0);
    ln.epsilon = 0.01;  // large enough that a forgotten ε would show
    ln.name = "test.ln_1";
    std::get<SingleSequenceInput>(p.input).layernorm = ln;
    Case c = single_case(std::move(p), Mode::causal, 3);
    c.layer.layernorm = true, c.layer.epsilon = 0.01;
    check_losses(c, 3, 1);
    // a GPT-2 layer's shape: ln_1, then two heads with every bias and W_o with b_o
    Problem gpt = sentence(5, 4, 64, random_projections(4, 4, 4, true, true, 9));
    auto& in = std::get<SingleSequenceInput>(gpt.input);
    in.layernorm = ln;
    in.layernorm->gamma = naive::matrix_of(naive::Lcg{65}.grid(1, 4)).row(0);
    in.layernorm->beta = naive::matrix_of(naive::Lcg{66}.grid(1, 4)).row(0);
    in.heads = 2;
    Case layer = single_case(std::move(gpt), Mode::causal, 2);
    layer.layer.layernorm = true, layer.layer.epsilon = 0.01, layer.layer.heads = 2;
    check_losses(layer, 4, 2, 2);
}

TEST_CASE("backward: every mask, and every way of applying one", "[backward]") {
    Problem p = sentence(6, 3, 71);
    auto& in = std::get<SingleSequenceInput>(p.input);
    in.sequence.tokens[4] = "<pad>";
    Case c = single_case(std::move(p), Mode::causal, 3);
    c.options.window = 3;
    c.layer.window = 3;
    c.layer.padding = {false, false, false, false, true, false};
    SECTION("causal, window and padding") { check_losses(c, 5, 3); }
    SECTION("a finite fill") {
        c.options.mask_method.fill = MaskMethod::Fill::value, c.options.mask_method.value = -2;
        c.layer.fill = LayerSpec::Fill::value, c.layer.fill_value = -2;
        check_losses(c, 5, 4);  // the fill leaves the padding key some weight to focus on
    }
    SECTION("the lowest number as the fill") {
        c.options.mask_method.fill = MaskMethod::Fill::lowest;  // the same as −∞ for the naive pass
        check_losses(c, 5, 3);
    }
    SECTION("zeroed after softmax") {
        c.options.mask_method.after_softmax = true;
        c.layer.after_softmax = true;
        check_losses(c, 5, 3);
    }
    SECTION("without the causal mask: a window both ways") {
        c.options.mode = Mode::self, c.layer.causal = false;
        check_losses(c, 0, 2);
    }
}

TEST_CASE("backward: temperature, every scale rule and division by the row sum", "[backward]") {
    Case c = single_case(sentence(4, 3, 81), Mode::causal, 3);
    SECTION("temperature 0.5 and 3") {
        for (const double t : {0.5, 3.0}) {
            c.options.temperature = c.layer.temperature = t;
            check_losses(c, 3, 1);
        }
    }
    SECTION("--scale none and --scale 2") {
        c.options.scale = ScaleRule::none, c.layer.scale = 1;
        check_losses(c, 3, 1);
        c.options.scale = ScaleRule::value, c.options.scale_value = c.layer.scale = 2;
        check_losses(c, 3, 1);
    }
    SECTION("--normalize sum on positive scores") {
        Problem p = sentence(4, 3, 82);
        auto& x = std::get<SingleSequenceInput>(p.input).sequence.vectors;
        x = x.cwiseAbs();  // plain mode: scores are dot products of positive vectors, all positive
        Case s = single_case(std::move(p), Mode::plain, 3);
        s.options.normalization = Normalization::sum, s.layer.sum_normalize = true;
        s.options.temperature = 2;  // which dividing by the sum ignores
        check_losses(s, 2, 0);
        s.options.mode = Mode::causal, s.layer.plain = false, s.layer.causal = true;
        s.problem = sentence(4, 3, 83, random_projections(3, 3, 3, false, false, 84));
        auto& w = std::get<SingleSequenceInput>(s.problem.input).weights;
        w->query = w->query.cwiseAbs(), w->key = w->key.cwiseAbs();
        auto& y = std::get<SingleSequenceInput>(s.problem.input).sequence.vectors;
        y = y.cwiseAbs();
        s.layer.scale = std::sqrt(3.0);
        check_losses(s, 3, 2);
    }
}

namespace {

Case pair_case(Score score, bool masked) {
    Case c{example(masked ? "padded_cat_fr" : "black_cat_fr"), {}, {}, {}, true};
    c.options.mode = Mode::bahdanau;
    c.options.score = score;
    c.pair.score = score == Score::additive ? PairSpec::Score::additive
                   : score == Score::dot    ? PairSpec::Score::dot
                                            : PairSpec::Score::general;
    if (masked) c.pair.source_mask = *std::get<EncoderDecoderInput>(c.problem.input).source_mask;
    return c;
}

}  // namespace

TEST_CASE("backward: Bahdanau's additive score through tanh, and Luong's dot and general", "[backward]") {
    for (const Score score : {Score::additive, Score::dot, Score::general})
        for (const bool masked : {false, true}) {
            INFO(to_string(score) << (masked ? " with the source mask" : ""));
            Case c = pair_case(score, masked);
            check_losses(c, 1, 2);
            c.options.temperature = c.pair.temperature = 0.7;
            CHECK(check_case(c, Loss::sum()) > 0);
        }
    Case by_sum = pair_case(Score::additive, true);  // v_a = (3, 3, 3) and tanh > 0 here: positive scores
    by_sum.options.normalization = Normalization::sum, by_sum.pair.sum_normalize = true;
    check_losses(by_sum, 2, 0);
}

TEST_CASE("backward: a float32 trace's gradients, in float64 from its stored stages", "[backward]") {
    Case c = single_case(example("your_journey"), Mode::causal, 3);
    c.options.dtype = Dtype::float32;
    // the forward numbers are float32's, so the naive float64 pass agrees to float32 rounding
    const Trace t = attntrace::trace(c.problem, c.options);
    const Gradients g = backward(t, Loss::sum());
    const Vars vars = vars_of(c, t);
    CHECK(naive::layer_loss(c.layer, vars, spec_of(Loss::sum())) == Approx(g.value).epsilon(1e-6));
    const Stage& dw = g.at("W_q");
    for (std::size_t r = 0; r < 3; ++r)
        for (std::size_t k = 0; k < 3; ++k)
            CHECK(dw.data(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(k)) ==
                  Approx(difference_of_var(c, vars, spec_of(Loss::sum()), "W_q", r, k)).margin(1e-5));
}

namespace {

Trace trace_of(std::vector<std::string> tokens, Matrix x, Mode mode) {
    SingleSequenceInput in;
    in.sequence.tokens = std::move(tokens);
    in.sequence.vectors = std::move(x);
    Problem p;
    p.origin = "hand";
    p.input = std::move(in);
    TraceOptions o;
    o.mode = mode;
    return attntrace::trace(p, o);
}

}  // namespace

TEST_CASE("backward by hand: plain mode on two one-number tokens, L = Σ Z", "[backward]") {
    // X = [1; 0], plain mode: S = X·Xᵀ = [[1, 0], [0, 0]], no scale, no mask.
    //   row 1: a = softmax(1, 0) = (σ(1), σ(−1)) = (0.7310586, 0.2689414); row 2: (½, ½).
    //   Z = A·X: z1 = σ(1), z2 = ½; L = σ(1) + ½.
    // dZ = 1, dA = dZ·Xᵀ = [[1, 0], [1, 0]].
    // dS″ row 1 = a ⊙ (dA − a·dA) = (a1·(1 − a1), a2·(0 − a1)) = (a1·a2, −a1·a2), a1·a2 = e/(1 + e)²
    //   = 0.19661193; row 2 = (½·½, ½·(−½)) = (¼, −¼).
    // dQ = dS·K = dS·X: (a1·a2, ¼). dK = dSᵀ·Q: key 1 gets dS11·x1 + dS21·x2 = a1·a2, key 2 gets
    //   dS12·x1 + dS22·x2 = −a1·a2. dV = Aᵀ·dZ = (a1 + ½, a2 + ½).
    // dX = dQ + dK + dV: x1 gets 2·a1·a2 + a1 + ½ = 1.62428244, x2 gets ¼ − a1·a2 + a2 + ½ = 0.82232949.
    Matrix x(2, 1);
    x << 1, 0;
    const Gradients g = backward(trace_of({"a", "b"}, x, Mode::plain), Loss::sum());
    const double e = std::exp(1.0), a1 = e / (1 + e), a2 = 1 / (1 + e), a12 = e / ((1 + e) * (1 + e));
    CHECK(g.value == Approx(a1 + 0.5).epsilon(1e-15));
    const Matrix& ds = g.at(StageId::masked).data;
    CHECK(ds(0, 0) == Approx(a12).epsilon(1e-14));
    CHECK(ds(0, 1) == Approx(-a12).epsilon(1e-14));
    CHECK(ds(1, 0) == Approx(0.25).epsilon(1e-14));
    CHECK(ds(1, 1) == Approx(-0.25).epsilon(1e-14));
    CHECK(g.at(StageId::values).data(0, 0) == Approx(a1 + 0.5).epsilon(1e-14));
    CHECK(g.at(StageId::keys).data(1, 0) == Approx(-a12).epsilon(1e-14));
    CHECK(g.at(StageId::inputs).data(0, 0) == Approx(2 * a12 + a1 + 0.5).epsilon(1e-14));
    CHECK(g.at(StageId::inputs).data(1, 0) == Approx(0.25 - a12 + a2 + 0.5).epsilon(1e-14));
    CHECK(g.at(StageId::inputs).data(0, 0) == Approx(1.62428244).epsilon(1e-8));
    CHECK(g.at(StageId::inputs).data(1, 0) == Approx(0.82232949).epsilon(1e-8));
}

TEST_CASE("backward by hand: a focus loss gives dS″ = a − e_j, the softmax's cross-entropy gradient", "[backward]") {
    // L = −log a_j: dA is −1/a_j at j and 0 elsewhere, so rowsum(dA ⊙ A) = −1 and
    // dS″_k = a_k·(dA_k + 1): a_j − 1 at k = j, a_k elsewhere. Then dS = dS″ / √d_k.
    Case c = single_case(example("your_journey"), Mode::self, 3);
    const Trace t = attntrace::trace(c.problem, c.options);
    const Gradients g = backward(t, Loss::focus(1, 2));
    const Stage& a = t.at(StageId::weights);
    const Stage& ds2 = g.at(StageId::masked);
    for (Eigen::Index k = 0; k < 6; ++k) {
        CHECK(ds2.data(1, k) == Approx(a.data(1, k) - (k == 2 ? 1.0 : 0.0)).margin(1e-15));
        CHECK(g.at(StageId::scores).data(1, k) == Approx((a.data(1, k) - (k == 2 ? 1.0 : 0.0)) / std::sqrt(3.0)).margin(1e-15));
        CHECK(ds2.data(0, k) == 0.0);  // other rows: the loss does not read them
    }
    CHECK(g.value == Approx(-std::log(a.data(1, 2))).epsilon(1e-15));
    CHECK(g.find(StageId::context) == nullptr);  // the loss is on the weights: nothing after them
    CHECK(g.find(StageId::values) == nullptr);
    CHECK(g.at("W_v").data.isZero(0));          // and W_v does not reach them
}

TEST_CASE("backward: hidden positions get exactly 0 under every mask and fill", "[backward]") {
    const auto zero_where_hidden = [](const Gradients& g, const Trace& t, StageId id, int head) {
        const Stage& d = g.at(id, head);
        const BoolMatrix& allowed = *t.at(StageId::weights, head).allowed;
        std::size_t hidden = 0;
        for (Eigen::Index r = 0; r < d.row_count(); ++r)
            for (Eigen::Index c = 0; c < d.col_count(); ++c)
                if (!allowed(r, c)) {
                    ++hidden;
                    CHECK(d.data(r, c) == 0.0);
                    CHECK_FALSE(std::signbit(d.data(r, c)));
                }
        CHECK(hidden > 0);
    };
    Problem p = sentence(6, 4, 91);
    std::get<SingleSequenceInput>(p.input).sequence.tokens[2] = "<pad>";
    for (const int fill : {0, 1, 2}) {  // −∞, the lowest number, −1
        TraceOptions o;
        o.mode = Mode::causal, o.window = 3, o.heads = 2;
        if (fill == 1) o.mask_method.fill = MaskMethod::Fill::lowest;
        if (fill == 2) o.mask_method.fill = MaskMethod::Fill::value, o.mask_method.value = -1;
        const Trace t = attntrace::trace(p, o);
        for (const Loss& loss : {Loss::sum(), Loss::focus(5, 4, 2)}) {
            const Gradients g = backward(t, loss);
            for (const StageId id : {StageId::scaled, StageId::scores}) zero_where_hidden(g, t, id, 2);
            if (fill < 2) zero_where_hidden(g, t, StageId::masked, 2);  // their weights are exactly 0
        }
    }
    const Case c = pair_case(Score::additive, true);
    const Trace t = attntrace::trace(c.problem, c.options);
    const Gradients g = backward(t, Loss::sum());
    for (const StageId id : {StageId::masked, StageId::scaled, StageId::scores}) zero_where_hidden(g, t, id, 0);
}

TEST_CASE("backward: --mask-after-softmax lets gradient reach the hidden scores", "[backward]") {
    // Zeroing after softmax leaves the hidden scores inside softmax's sum, so L depends on them:
    // their gradient is not 0 (and check_case above holds it to the differences).
    Case c = single_case(sentence(5, 3, 95), Mode::causal, 3);
    c.options.mask_method.after_softmax = true;
    const Trace t = attntrace::trace(c.problem, c.options);
    const Gradients g = backward(t, Loss::sum());
    CHECK(std::abs(g.at(StageId::scores).data(0, 1)) > 1e-6);
    CHECK_FALSE(g.at(StageId::scaled).applied);
}

TEST_CASE("backward: one row's softmax Jacobian is diag(a) − a·aᵀ, and J·dA is the short form", "[backward]") {
    const std::vector<double> s = {0.3, -1.2, 2.0, 0.5};
    const double temperature = 0.8;
    const std::vector<double> a = naive::normalise_row(s, temperature, false);
    Vector row(4);
    for (Eigen::Index j = 0; j < 4; ++j) row(j) = a[static_cast<std::size_t>(j)];
    const Matrix jac = grad::softmax_jacobian(row, temperature);
    for (std::size_t k = 0; k < 4; ++k) {  // column k: how every weight moves with s_k
        std::vector<double> up = s, down = s;
        up[k] += step, down[k] -= step;
        const std::vector<double> au = naive::normalise_row(up, temperature, false);
        const std::vector<double> ad = naive::normalise_row(down, temperature, false);
        for (std::size_t j = 0; j < 4; ++j)
            CHECK(jac(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(k)) == Approx((au[j] - ad[j]) / (2 * step)).margin(1e-9));
        double column = 0;  // the weights always sum to 1, so each column sums to 0
        for (std::size_t j = 0; j < 4; ++j) column += jac(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(k));
        CHECK(column == Approx(0).margin(1e-15));
    }
    CHECK(jac.isApprox(jac.transpose(), 0));
    Matrix da(1, 4);
    da << 0.7, -0.1, 0.4, 2.5;
    const Matrix short_form = grad::softmax_backward(Matrix(row), da, temperature);
    const Matrix full = da * jac;  // J is symmetric: dS″ = J·dA = dA·J
    for (Eigen::Index j = 0; j < 4; ++j) CHECK(short_form(0, j) == Approx(full(0, j)).margin(1e-15));
}

TEST_CASE("backward: the gradient check moves every entry and agrees with the naive differences", "[backward]") {
    for (const Mode mode : {Mode::self, Mode::causal}) {
        Case c = single_case(example("your_journey"), mode, 3);
        c.options.heads = 1;
        const GradientCheck check = check_gradients(c.problem, c.options, Loss::focus(1, 0));
        REQUIRE(check.matrices.size() == 4);  // W_q, W_k, W_v, inputs
        CHECK(check.matrices[0].key == "W_q");
        CHECK(check.matrices[3].key == "inputs");
        CHECK(check.entries() == 3 * 9 + 6 * 3);
        INFO(check.worst().key << ": " << check.worst().gradient << " against " << check.worst().difference);
        CHECK(check.worst().worst_relative < 1e-6);
        // its difference at the worst entry is the naive pass's difference there
        const Trace t = attntrace::trace(c.problem, c.options);
        const MatrixCheck& w = check.worst();
        const double naive_difference = difference_of_var(c, vars_of(c, t), spec_of(Loss::focus(1, 0)), w.key,
                                                          static_cast<std::size_t>(w.row), static_cast<std::size_t>(w.col));
        CHECK(w.difference == Approx(naive_difference).margin(1e-7));
        CHECK(check.loss == Approx(loss_value(t, Loss::focus(1, 0))).epsilon(1e-15));
    }
    const Case pair = pair_case(Score::additive, true);
    const GradientCheck check = check_gradients(pair.problem, pair.options, Loss::sum());
    CHECK(check.matrices.size() == 5);  // W_a, U_a, v_a, encoder_states, decoder_states
    const MatrixCheck& w = check.worst();
    INFO(w.key << " (" << w.row_label << ", " << w.col_label << "): " << w.gradient << " against " << w.difference
               << ", floor " << check.floor);
    CHECK(w.worst_relative < 1e-6);
}

TEST_CASE("backward: where L curves sharply the check takes its difference again with a smaller h", "[backward]") {
    // 12 tokens of 4 numbers up to 18 in size: scores in the hundreds, a nearly saturated
    // softmax. The first five-point difference of some entries is off by more than 1e-6 from a
    // right gradient (its h⁴ term); with h halved it agrees.
    std::string text = R"({"tokens": [)";
    for (int i = 0; i < 12; ++i) text += fmt::format("{}\"t{}\"", i ? ", " : "", i + 1);
    text += R"(], "embeddings": [)";
    for (int i = 0; i < 12; ++i) {
        text += i ? ", [" : "[";
        for (int j = 0; j < 4; ++j) text += fmt::format("{}{:.3f}", j ? ", " : "", 18 * std::sin(1.3 * i + 0.7 * j));
        text += "]";
    }
    text += "]}";
    Problem problem = load_problem(text, "sines");
    TraceOptions options;
    options.mode = Mode::self;
    const GradientCheck check = check_gradients(problem, options, Loss::sum());
    CHECK(check.worst().worst_relative <= check.tolerance);
    const MatrixCheck& inputs = check.matrices.back();
    REQUIRE(inputs.key == "inputs");
    // The inputs' gradient against the test's own five-point differences at h, h/2, h/4, h/8:
    // the entries whose first one is off are those the check took again, and each agrees at
    // some smaller h.
    const Gradients g = backward(attntrace::trace(problem, options), Loss::sum());
    const Stage& dx = *g.find(StageId::inputs);
    Matrix& x = std::get<SingleSequenceInput>(problem.input).sequence.vectors;
    const auto relative = [&](double a, double b) { return std::abs(a - b) / std::max({std::abs(a), std::abs(b), check.floor}); };
    std::size_t off = 0;
    for (Eigen::Index r = 0; r < x.rows(); ++r)
        for (Eigen::Index c = 0; c < x.cols(); ++c) {
            const double original = x(r, c);
            const auto quotient = [&](double step) {
                const double h = step * std::max(1.0, std::abs(original));
                double l[4];
                const double k[4] = {-2, -1, 1, 2};
                for (int i = 0; i < 4; ++i) {
                    x(r, c) = original + k[i] * h;
                    l[i] = loss_value(attntrace::trace(problem, options), Loss::sum());
                }
                x(r, c) = original;
                return (l[0] - 8 * l[1] + 8 * l[2] - l[3]) / (12 * h);
            };
            if (relative(dx.data(r, c), quotient(1e-3)) <= check.tolerance) continue;
            ++off;
            INFO("inputs at (" << r << ", " << c << ")");
            double best = relative(dx.data(r, c), quotient(5e-4));
            for (const double step : {2.5e-4, 1.25e-4}) best = std::min(best, relative(dx.data(r, c), quotient(step)));
            CHECK(best <= check.tolerance);
        }
    CHECK(off >= 1);
    CHECK(inputs.refined == off);
}

TEST_CASE("backward: losses that cannot be taken are refused", "[backward]") {
    Case c = single_case(example("your_journey"), Mode::causal, 3);
    const Trace t = attntrace::trace(c.problem, c.options);
    CHECK_THROWS_AS(backward(t, Loss::focus(0, 3)), DataError);  // a hidden key: −log 0
    CHECK_THROWS_WITH(backward(t, Loss::focus(0, 3)), Catch::Contains("the mask hides that key"));
    CHECK_THROWS_AS(backward(t, Loss::focus(6, 0)), UsageError);
    CHECK_THROWS_AS(backward(t, Loss::focus(1, 0, 2)), UsageError);
    CHECK_THROWS_AS(backward(t, Loss::towards(Matrix::Zero(6, 2))), DataError);
}
