#include "attention/moved_parameters.hpp"

#include <stdexcept>
#include <variant>

namespace attntrace {
namespace {

template <typename M>
MovableMatrix movable(std::string key, M& m) {
    return {std::move(key), m.data(), m.rows(), m.cols()};
}

}  // namespace

void give_parameters(Problem& problem, const Trace& t) {
    if (auto* single = std::get_if<SingleSequenceInput>(&problem.input)) {
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
    auto& pair = std::get<EncoderDecoderInput>(problem.input);
    pair.source.materialise(), pair.target.materialise();
    if (t.score == Score::additive)
        pair.weights = AdditiveWeights{t.parameter("W_a").data, t.parameter("U_a").data, t.parameter("v_a").data.row(0)};
    if (t.score == Score::general) pair.general_weight = t.parameter("W").data;
}

std::vector<MovableMatrix> movable_matrices(Problem& problem, const Trace& t, bool inputs) {
    std::vector<MovableMatrix> out;
    if (auto* single = std::get_if<SingleSequenceInput>(&problem.input)) {
        Projections* w = single->weights ? &*single->weights : nullptr;
        for (const Parameter& p : t.parameters) {
            const std::string& n = p.name;
            if (n == "gamma") out.push_back(movable(n, single->layernorm->gamma));
            else if (n == "beta") out.push_back(movable(n, single->layernorm->beta));
            else if (n == "W_q") out.push_back(movable(n, w->query));
            else if (n == "W_k") out.push_back(movable(n, w->key));
            else if (n == "W_v") out.push_back(movable(n, w->value));
            else if (n == "W_o") out.push_back(movable(n, *w->output));
            else if (n == "b_q") out.push_back(movable(n, *w->query_bias));
            else if (n == "b_k") out.push_back(movable(n, *w->key_bias));
            else if (n == "b_v") out.push_back(movable(n, *w->value_bias));
            else if (n == "b_o") out.push_back(movable(n, *w->output_bias));
            else throw std::logic_error("a parameter the backward pass cannot move: " + n);
        }
        if (inputs) out.push_back(movable(t.find(StageId::embeddings) ? "embeddings" : "inputs", single->sequence.vectors));
        return out;
    }
    auto& pair = std::get<EncoderDecoderInput>(problem.input);
    for (const Parameter& p : t.parameters) {
        if (p.name == "W_a") out.push_back(movable(p.name, pair.weights->W_a));
        else if (p.name == "U_a") out.push_back(movable(p.name, pair.weights->U_a));
        else if (p.name == "v_a") out.push_back(movable(p.name, pair.weights->v_a));
        else if (p.name == "W") out.push_back(movable(p.name, *pair.general_weight));
        else throw std::logic_error("a parameter the backward pass cannot move: " + p.name);
    }
    if (inputs) {
        out.push_back(movable("encoder_states", pair.source.vectors));
        out.push_back(movable("decoder_states", pair.target.vectors));
    }
    return out;
}

}  // namespace attntrace
