// The tests' own model of a run that attntrace traced with --backward: the forward pass of
// support/naive_layer.hpp set up from the numbers of the run's JSON document (its inputs and
// parameters, its mode and options), and finite differences of that pass. The expected
// gradients of tests/test_backward_cli.cpp and test_backward_claims.cpp come from here, never
// from the program's own backward pass.
#pragma once

#include "support/naive_layer.hpp"
#include "support/trace_json.hpp"

#include "support/catch.hpp"
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace backward_model {

using naive::Grid;
using nlohmann::json;

// Numbers of a JSON matrix (a vector: one row).
inline Grid grid_of(const json& value) {
    Grid g;
    if (!value.empty() && value[0].is_number()) return {value.get<std::vector<double>>()};
    for (const auto& row : value) g.push_back(row.get<std::vector<double>>());
    return g;
}

struct Model {
    bool is_pair = false;
    naive::LayerSpec layer;
    naive::PairSpec pair;
    naive::Vars vars;
    int heads = 1;
    std::vector<std::string> queries, keys;  // the weights' row and column labels
};

// The forward stage `name` (of `head`, 1-based; 0: the first) of a trace document.
inline const json& forward_stage(const json& doc, const std::string& name, int head = 0) {
    for (const auto& s : doc["stages"])
        if (s["name"] == name && (head == 0 || s.value("head", 0) == head)) return s;
    FAIL("the trace has no stage " << name << " of head " << head);
    return doc;
}

inline Model model_of(const json& doc) {
    Model m;
    const std::string mode = doc["mode"];
    if (doc.contains("parameters"))
        for (const auto& [name, value] : doc["parameters"].items()) m.vars[name] = grid_of(value);
    const json& weights = forward_stage(doc, "weights");
    m.queries = weights["rows"].get<std::vector<std::string>>();
    m.keys = weights["cols"].get<std::vector<std::string>>();
    if (mode == "bahdanau") {
        m.is_pair = true;
        const std::string score = doc["score"];
        m.pair.score = score == "dot" ? naive::PairSpec::Score::dot
                       : score == "general" ? naive::PairSpec::Score::general
                                            : naive::PairSpec::Score::additive;
        m.pair.temperature = doc["temperature"];
        m.pair.sum_normalize = doc["normalize"] == "sum";
        const json& masked = forward_stage(doc, "masked");
        if (masked.contains("allowed")) m.pair.source_mask = masked["allowed"][0].get<std::vector<bool>>();
        m.vars["encoder_states"] = grid_of(forward_stage(doc, "encoder_states")["data"]);
        m.vars["decoder_states"] = grid_of(forward_stage(doc, "decoder_states")["data"]);
        return m;
    }
    naive::LayerSpec& l = m.layer;
    l.plain = mode == "plain";
    l.causal = mode == "causal";
    const json& dims = doc["dims"];
    m.heads = l.heads = dims.value("heads", 1);
    l.kv_heads = dims.value("kv_heads", 0);
    l.scale = doc["scale"]["divisor"];
    l.temperature = doc["temperature"];
    l.sum_normalize = doc["normalize"] == "sum";
    l.window = doc.value("window", 0L);
    if (doc.contains("mask_fill")) l.fill = naive::LayerSpec::Fill::value, l.fill_value = doc["mask_fill"];
    l.after_softmax = doc.value("mask_after_softmax", false);
    l.sinusoidal = doc["positions"] == "sinusoidal";
    l.rope = doc["positions"] == "rope";
    l.first_position = doc.value("first_position", 0L);
    l.layernorm = m.vars.count("gamma") > 0;
    const json& masked = forward_stage(doc, "masked");
    if (masked.contains("mask_reason")) {
        l.padding.assign(m.keys.size(), false);
        for (const auto& row : masked["mask_reason"])
            for (std::size_t j = 0; j < row.size(); ++j)
                if (row[j].is_string() && row[j].get<std::string>().find("padding") != std::string::npos) l.padding[j] = true;
    }
    const std::string x = l.sinusoidal ? "embeddings" : "inputs";
    m.vars[x] = grid_of(forward_stage(doc, x)["data"]);
    return m;
}

inline std::size_t index_of(const std::vector<std::string>& labels, const std::string& label) {
    const auto at = std::find(labels.begin(), labels.end(), label);
    REQUIRE(at != labels.end());
    return static_cast<std::size_t>(at - labels.begin());
}

// The loss of the run, by the test's own pass; `hook` sees (and may nudge) every stage.
inline double loss_of(const Model& m, const naive::Vars& vars, const naive::LossSpec& loss, const naive::Hook& hook = {}) {
    return m.is_pair ? naive::pair_loss(m.pair, vars, loss, hook) : naive::layer_loss(m.layer, vars, loss, hook);
}

// dL/d(vars[name][r][c]) by the five-point central difference (error of order h⁴).
inline double d_var(const Model& m, naive::Vars vars, const naive::LossSpec& loss, const std::string& name, std::size_t r,
                    std::size_t c) {
    double& x = vars.at(name)[r][c];
    const double original = x, h = 1e-3 * std::max(1.0, std::abs(original));
    const auto at = [&](double k) {
        x = original + k * h;
        return loss_of(m, vars, loss);
    };
    const double d = (at(-2) - 8 * at(-1) + 8 * at(1) - at(2)) / (12 * h);
    x = original;
    return d;
}

inline Grid d_var_grid(const Model& m, const naive::LossSpec& loss, const std::string& name) {
    Grid g = m.vars.at(name);
    for (std::size_t r = 0; r < g.size(); ++r)
        for (std::size_t c = 0; c < g[r].size(); ++c) g[r][c] = d_var(m, m.vars, loss, name, r, c);
    return g;
}

// dL/d(entry (r, c) of the stage the hook calls `stage`, of `head`) by a central difference.
inline double d_stage(const Model& m, const naive::LossSpec& loss, const std::string& stage, int head, std::size_t r,
                      std::size_t c) {
    constexpr double h = 1e-5;
    const auto at = [&](double delta) {
        const naive::Hook hook = [&](const std::string& s, int hd, Grid& g) {
            if (s == stage && hd == head) g[r][c] += delta;
        };
        return loss_of(m, m.vars, loss, hook);
    };
    return (at(h) - at(-h)) / (2 * h);
}

// The whole stage's gradient: `rows` × `cols` entries from column `first` on.
inline Grid d_stage_grid(const Model& m, const naive::LossSpec& loss, const std::string& stage, int head, std::size_t rows,
                         std::size_t cols, std::size_t first = 0) {
    Grid g(rows, std::vector<double>(cols));
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < cols; ++c) g[r][c] = d_stage(m, loss, stage, head, r, first + c);
    return g;
}

// The largest |difference| between two grids of one shape, relative to max(1, |want|).
inline double worst_error(const Grid& got, const Grid& want) {
    REQUIRE(got.size() == want.size());
    double worst = 0;
    for (std::size_t r = 0; r < got.size(); ++r) {
        REQUIRE(got[r].size() == want[r].size());
        for (std::size_t c = 0; c < got[r].size(); ++c)
            worst = std::max(worst, std::abs(got[r][c] - want[r][c]) / std::max(1.0, std::abs(want[r][c])));
    }
    return worst;
}

// The gradient entries of `key` in a document's "gradients": one, or one per head.
inline std::vector<json> gradient_entries(const json& doc, const std::string& key) {
    const json& g = doc["gradients"].at(key);
    if (g.is_array()) return g.get<std::vector<json>>();
    return {g};
}

}  // namespace backward_model
