#include "attention/gradient_check.hpp"

#include "attention/backward.hpp"
#include "attention/modes.hpp"
#include "attention/trace.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace attntrace {
namespace {

// The numbers of one matrix inside a problem, row by row.
struct Numbers {
    double* data = nullptr;
    Eigen::Index rows = 0, cols = 0;
};

template <typename M>
Numbers numbers_of(M& m) {
    return {m.data(), m.rows(), m.cols()};
}

// The trace's parameters written into the problem as its own weights, so that generated
// weights can be moved like given ones (the options then generate nothing: no --dim).
void give_parameters(Problem& problem, const Trace& t) {
    switch (family_of(problem)) {
    case ModeFamily::single_sequence: {
        auto* single = &std::get<SingleSequenceInput>(problem.input);
        single->sequence.materialise();
        if (!t.has_parameter("W_q")) return;  // plain mode: no weights
        Projections w;
        w.query = t.parameter("W_q").data, w.key = t.parameter("W_k").data, w.value = t.parameter("W_v").data;
        if (t.has_parameter("W_o")) w.output = t.parameter("W_o").data;
        const auto bias = [&](const char* name, std::optional<Vector>& b) {
            if (t.has_parameter(name)) b = t.parameter(name).data.row(0);
        };
        bias("b_q", w.query_bias), bias("b_k", w.key_bias), bias("b_v", w.value_bias), bias("b_o", w.output_bias);
        single->weights = std::move(w);
        return;
    }
    case ModeFamily::encoder_decoder: {
        auto& pair = std::get<EncoderDecoderInput>(problem.input);
        pair.source.materialise(), pair.target.materialise();
        if (t.score == Score::additive)
            pair.weights = AdditiveWeights{t.parameter("W_a").data, t.parameter("U_a").data, t.parameter("v_a").data.row(0)};
        if (t.score == Score::general) pair.general_weight = t.parameter("W").data;
        return;
    }
    }
}

// Where each checked matrix lives in the problem, with the key of its gradient.
std::vector<std::pair<std::string, Numbers>> variables(Problem& problem, const Trace& t) {
    std::vector<std::pair<std::string, Numbers>> out;
    switch (family_of(problem)) {
    case ModeFamily::single_sequence: {
        auto* single = &std::get<SingleSequenceInput>(problem.input);
        Projections* w = single->weights ? &*single->weights : nullptr;
        for (const Parameter& p : t.parameters) {
            const std::string& n = p.name;
            if (n == "gamma") out.emplace_back(n, numbers_of(single->layernorm->gamma));
            else if (n == "beta") out.emplace_back(n, numbers_of(single->layernorm->beta));
            else if (n == "W_q") out.emplace_back(n, numbers_of(w->query));
            else if (n == "W_k") out.emplace_back(n, numbers_of(w->key));
            else if (n == "W_v") out.emplace_back(n, numbers_of(w->value));
            else if (n == "W_o") out.emplace_back(n, numbers_of(*w->output));
            else if (n == "b_q") out.emplace_back(n, numbers_of(*w->query_bias));
            else if (n == "b_k") out.emplace_back(n, numbers_of(*w->key_bias));
            else if (n == "b_v") out.emplace_back(n, numbers_of(*w->value_bias));
            else if (n == "b_o") out.emplace_back(n, numbers_of(*w->output_bias));
            else throw std::logic_error("a parameter the gradient check cannot move: " + n);
        }
        out.emplace_back(t.find(StageId::embeddings) ? "embeddings" : "inputs", numbers_of(single->sequence.vectors));
        return out;
    }
    case ModeFamily::encoder_decoder: {
        auto& pair = std::get<EncoderDecoderInput>(problem.input);
        for (const Parameter& p : t.parameters) {
            if (p.name == "W_a") out.emplace_back(p.name, numbers_of(pair.weights->W_a));
            else if (p.name == "U_a") out.emplace_back(p.name, numbers_of(pair.weights->U_a));
            else if (p.name == "v_a") out.emplace_back(p.name, numbers_of(pair.weights->v_a));
            else if (p.name == "W") out.emplace_back(p.name, numbers_of(*pair.general_weight));
            else throw std::logic_error("a parameter the gradient check cannot move: " + p.name);
        }
        out.emplace_back("encoder_states", numbers_of(pair.source.vectors));
        out.emplace_back("decoder_states", numbers_of(pair.target.vectors));
        return out;
    }
    }
    unknown_family();
}

const Stage& gradient_of(const Gradients& g, const std::string& key) {
    if (const Stage* stage = g.find(std::string_view(key))) return *stage;
    if (const auto id = parse_enum<StageId>(key))
        if (const Stage* stage = g.find(*id)) return *stage;
    throw std::logic_error("no gradient for " + key);
}

// The central difference of L at one entry, of fourth order (the five-point stencil):
// (L(θ − 2h) − 8·L(θ − h) + 8·L(θ + h) − L(θ + 2h)) / 12h, the entry restored afterwards.
double central_difference(const Problem& problem, const TraceOptions& options, const Loss& loss, double& entry,
                          double step) {
    const double original = entry;
    const double h = step * std::max(1.0, std::abs(original));
    const auto at = [&](double k) {
        entry = original + k * h;
        const double l = loss_value(trace(problem, options), loss);
        entry = original;
        return l;
    };
    return (at(-2) - 8 * at(-1) + 8 * at(1) - at(2)) / (12 * h);
}

}  // namespace

std::size_t GradientCheck::entries() const {
    std::size_t n = 0;
    for (const MatrixCheck& m : matrices) n += m.entries;
    return n;
}

const MatrixCheck& GradientCheck::worst() const {
    if (matrices.empty()) throw std::logic_error("a gradient check of nothing");
    return *std::max_element(matrices.begin(), matrices.end(),
                             [](const MatrixCheck& a, const MatrixCheck& b) { return a.worst_relative < b.worst_relative; });
}

GradientCheck check_gradients(const Problem& problem, const TraceOptions& options, const Loss& loss) {
    TraceOptions o = options;
    o.dtype = Dtype::float64;
    o.query.reset(), o.tiles.reset();
    Problem moved = problem;
    give_parameters(moved, trace(problem, o));  // generated weights, as numbers of the input
    o.dim.reset();
    const Trace base = trace(moved, o);
    const Gradients g = backward(base, loss);
    GradientCheck check;
    check.loss = g.value;
    double largest = 0;
    for (const Stage& s : g.stages) largest = std::max(largest, s.data.cwiseAbs().maxCoeff());
    check.floor = 1e-6 * (largest > 0 ? largest : 1.0);
    for (auto& [key, numbers] : variables(moved, base)) {
        const Stage& d = gradient_of(g, key);
        MatrixCheck m;
        m.key = key;
        for (Eigen::Index r = 0; r < numbers.rows; ++r)
            for (Eigen::Index c = 0; c < numbers.cols; ++c) {
                const double fd = central_difference(moved, o, loss, numbers.data[r * numbers.cols + c], check.step);
                const double an = d.data(r, c), error = std::abs(an - fd);
                const double relative = error / std::max({std::abs(an), std::abs(fd), check.floor});
                ++m.entries;
                m.worst_absolute = std::max(m.worst_absolute, error);
                if (relative < m.worst_relative || (m.entries > 1 && relative == m.worst_relative)) continue;
                m.worst_relative = relative, m.row = r, m.col = c, m.gradient = an, m.difference = fd;
                m.row_label = d.rows[static_cast<std::size_t>(r)], m.col_label = d.cols[static_cast<std::size_t>(c)];
            }
        check.matrices.push_back(std::move(m));
    }
    return check;
}

}  // namespace attntrace
