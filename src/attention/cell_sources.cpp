// Where a cell of a trace comes from (attention/cell_sources.hpp): the cells its formula reads,
// in the forward stages and, for a gradient, in the gradients nearer the loss. Enter in
// attntrace step marks them, and the HTML page highlights them.
//
// A gradient: dA[i, j] = dZ[i, :]·V[j, :] reads row i of dZ and row j of V; dS''[i, j] reads row
// i of A and of dA; dQ[i, c] = dS[i, :]·K[:, c] reads row i of dS and column c of K; and so on back
// to the inputs and the weights, as attention/backward*.cpp computes them.
#include "attention/cell_sources.hpp"

#include <algorithm>

namespace attntrace {
namespace {

Place forward(StageId id, int head = 0) { return {id, head, {}, false}; }
Place backward(StageId id, int head = 0) { return {id, head, {}, true}; }
Place weight(std::string name, bool gradient = false) { return {StageId::parameters, 0, std::move(name), gradient}; }

// One cell of one trace (and its gradients) and the rules of each stage.
class Sources {
public:
    Sources(const Trace& trace, const Gradients* gradients, Eigen::Index row, Eigen::Index col)
        : trace_(trace), gradients_(gradients), row_(row), col_(col) {}
    std::vector<Mark> sources_of(const Stage& s) const;
    std::vector<Mark> gradient_sources(const Stage& g) const;

private:
    std::vector<Mark> encoder_decoder_sources(const Stage& s) const;
    std::vector<Mark> core_gradient_sources(const Stage& g) const;
    std::vector<Mark> weight_gradient_sources(const std::string& name, Eigen::Index r, Eigen::Index c) const;
    void projection_paths(std::vector<Mark>& marks, StageId y, const char* w, Eigen::Index r, Eigen::Index c) const;
    std::vector<int> sharing_heads(const Stage& s) const;

    const Trace& trace_;
    const Gradients* gradients_;
    Eigen::Index row_, col_;
};

// The cells the cursor's cell of `s` was computed from: empty for a stage that comes from the
// input itself.
// Bahdanau's and Luong's cells: from the decoder's and encoder's states, as projected.
std::vector<Mark> Sources::encoder_decoder_sources(const Stage& s) const {
    const Eigen::Index r = row_, c = col_;
    const auto shown = [&](StageId id) { const Stage* st = trace_.find(id); return st && st->applied; };
    const bool additive = trace_.has_parameter("W_a");
    switch (s.id) {
        case StageId::scores:
            return {{{shown(StageId::projected_decoder) ? StageId::projected_decoder : StageId::decoder_states, 0, {}}, r, -1},
                    {{shown(StageId::projected_encoder) ? StageId::projected_encoder : StageId::encoder_states, 0, {}}, c, -1}};
        case StageId::context: return {{{StageId::weights, 0, {}}, r, -1}, {{StageId::encoder_states, 0, {}}, -1, c}};
        case StageId::projected_decoder:
            if (!s.applied) return {};
            return {{{StageId::decoder_states, 0, {}}, r, -1}, {{StageId::parameters, 0, additive ? "W_a" : "W"}, -1, c}};
        case StageId::projected_encoder:
            if (!s.applied) return {};
            return {{{StageId::encoder_states, 0, {}}, r, -1}, {{StageId::parameters, 0, "U_a"}, -1, c}};
        default: return {};
    }
}

// The cells the cursor's cell of `s` was computed from: empty for a stage that comes from the
// input itself.
std::vector<Mark> Sources::sources_of(const Stage& s) const {
    const int h = s.head;
    const bool plain = trace_.mode == Mode::plain;
    const Eigen::Index r = row_, c = col_;
    if (trace_.mode == Mode::bahdanau && s.id != StageId::scaled && s.id != StageId::masked && s.id != StageId::weights)
        return encoder_decoder_sources(s);
    // The first of the parameter's columns this stage reads: its query head's block, or for keys
    // and values its key/value head's (grouped-query attention).
    const auto first_column = [&](const Stage& st) {
        const int block = st.kv_head > 0 && st.id != StageId::queries ? st.kv_head : st.head;
        return block > 0 ? (block - 1) * st.data.cols() : Eigen::Index{0};
    };
    const bool rotated = trace_.find(StageId::queries_rotated) != nullptr;  // RoPE: the scores use the turned vectors
    switch (s.id) {
        case StageId::scores:
            if (plain) return {{{StageId::inputs, 0, {}}, r, -1}, {{StageId::inputs, 0, {}}, c, -1}};
            return {{{rotated ? StageId::queries_rotated : StageId::queries, h, {}}, r, -1},
                    {{rotated ? StageId::keys_rotated : StageId::keys, h, {}}, c, -1}};
        case StageId::scaled: return {{{StageId::scores, h, {}}, r, c}};
        case StageId::masked: return {{{StageId::scaled, h, {}}, r, c}};
        case StageId::weights: return {{{StageId::masked, h, {}}, r, -1}};
        case StageId::context:
            return {{{StageId::weights, h, {}}, r, -1}, {{plain ? StageId::inputs : StageId::values, plain ? 0 : h, {}}, -1, c}};
        case StageId::queries:
        case StageId::keys:
        case StageId::values: {
            if (plain) return {};
            const char* name = s.id == StageId::queries ? "W_q" : s.id == StageId::keys ? "W_k" : "W_v";
            const bool from_layernorm = trace_.find(StageId::layernorm) != nullptr;
            return {{{from_layernorm ? StageId::layernorm : StageId::inputs, 0, {}}, r, -1},
                    {{StageId::parameters, 0, name}, -1, first_column(s) + c}};
        }
        case StageId::concat: {
            const Eigen::Index d_v = std::max<Eigen::Index>(1, s.data.cols() / std::max(1, trace_.heads));
            return {{{StageId::context, static_cast<int>(c / d_v) + 1, {}}, r, c % d_v}};
        }
        case StageId::output: return {{{StageId::concat, 0, {}}, r, -1}, {{StageId::parameters, 0, "W_o"}, -1, c}};
        case StageId::head_contributions: return {{{StageId::context, h, {}}, r, -1}, {{StageId::parameters, 0, "W_o"}, -1, c}};
        case StageId::queries_rotated: return {{{StageId::queries, h, {}}, r, -1}};
        case StageId::keys_rotated: return {{{StageId::keys, h, {}}, r, -1}};
        case StageId::inputs:
            if (trace_.find(StageId::embeddings))
                return {{{StageId::embeddings, 0, {}}, r, c}, {{StageId::positions, 0, {}}, r, c}};
            return {};
        default: return {};
    }
}

// The query heads (1-based; {0} for a run of one head) whose keys and values are those of the
// key/value head of stage `s`.
std::vector<int> Sources::sharing_heads(const Stage& s) const {
    if (s.head == 0) return {0};
    if (s.kv_head == 0) return {s.head};
    std::vector<int> heads;
    for (int h = 1; h <= trace_.heads; ++h)
        if (const Stage* keys = trace_.find(StageId::keys, h); keys && keys->kv_head == s.kv_head) heads.push_back(h);
    return heads;
}

// The gradient of the projection `y` (Q, K or V) and the weight `w` that made it, for a cell of dX
// (or of d(LN(X))): row r of each head's dY and row c of W.
void Sources::projection_paths(std::vector<Mark>& marks, StageId y, const char* w, Eigen::Index r, Eigen::Index c) const {
    for (int h = 0; h <= trace_.heads; ++h)
        if (gradients_->find(y, h) && (h > 0 || trace_.heads == 1)) marks.push_back({backward(y, h), r, -1});
    if (trace_.has_parameter(w)) marks.push_back({weight(w), c, -1});
}

// dW_q[r, c] = Σ_i X[i, r]·dQ[i, c]: column r of the projections' input and column c of the
// gradient of the head whose block holds column c. A bias: that column of the gradient alone.
std::vector<Mark> Sources::weight_gradient_sources(const std::string& name, Eigen::Index r, Eigen::Index c) const {
    const char kind = name.size() == 3 ? name[2] : ' ';  // W_q / b_q → q
    const StageId y = kind == 'q' ? StageId::queries : kind == 'k' ? StageId::keys : StageId::values;
    if (name == "W_o" || name == "b_o") {
        std::vector<Mark> marks{{backward(StageId::output), -1, c}};
        if (name == "W_o") marks.insert(marks.begin(), {forward(trace_.find(StageId::concat) ? StageId::concat : StageId::context), -1, r});
        return marks;
    }
    if (name == "gamma" || name == "beta") return {{backward(StageId::layernorm), -1, c}, {forward(StageId::layernorm), -1, c}};
    if (kind != 'q' && kind != 'k' && kind != 'v') return {};
    const Stage* first = trace_.find(y);
    if (!first) return {};
    const Eigen::Index width = std::max<Eigen::Index>(1, first->data.cols());
    const int block = static_cast<int>(c / width) + 1;  // a head's block, or a key/value head's
    int head = 0;
    if (trace_.heads > 1)
        for (int h = 1; h <= trace_.heads && head == 0; ++h)
            if (const Stage* st = trace_.find(y, h); st && (y == StageId::queries || st->kv_head == 0 ? h : st->kv_head) == block)
                head = h;
    std::vector<Mark> marks{{backward(y, head), -1, c % width}};
    if (name[0] == 'W')
        marks.insert(marks.begin(), {forward(trace_.find(StageId::layernorm) ? StageId::layernorm : StageId::inputs), -1, r});
    return marks;
}

// The chain from the weights back to the scores, which every mode shares.
std::vector<Mark> Sources::core_gradient_sources(const Stage& g) const {
    const int h = g.head;
    const Eigen::Index r = row_, c = col_;
    const StageId values = trace_.mode == Mode::bahdanau ? StageId::encoder_states : trace_.mode == Mode::plain ? StageId::inputs : StageId::values;
    switch (g.id) {
        case StageId::weights:
            if (!gradients_->find(StageId::context, h)) {  // a focus loss: −1 / A[i, j] at its pair
                const Loss& loss = gradients_->loss;
                if (r != loss.query || c != loss.key) return {};
                return {{forward(StageId::weights, h), r, c}};
            }
            return {{backward(StageId::context, h), r, -1}, {forward(values, values == StageId::values ? h : 0), c, -1}};
        case StageId::masked: return {{backward(StageId::weights, h), r, -1}, {forward(StageId::weights, h), r, -1}};
        case StageId::scaled: return {{backward(StageId::masked, h), r, c}};
        case StageId::scores: return {{backward(StageId::scaled, h), r, c}};
        default: return {};
    }
}

std::vector<Mark> Sources::gradient_sources(const Stage& g) const {
    const int h = g.head;
    const Eigen::Index r = row_, c = col_;
    const bool plain = trace_.mode == Mode::plain;
    const bool rotated = trace_.find(StageId::queries_rotated) != nullptr;
    if (!g.parameter.empty()) return weight_gradient_sources(g.parameter, r, c);
    if (std::vector<Mark> core = core_gradient_sources(g); !core.empty() || g.id == StageId::weights) return core;
    if (trace_.mode == Mode::bahdanau) return {};
    std::vector<Mark> marks;
    switch (g.id) {
        case StageId::context:  // dZ: its block of d(concat), d(output)·W_oᵀ, or the loss's own derivative
            if (gradients_->find(StageId::concat)) return {{backward(StageId::concat), r, (std::max(h, 1) - 1) * g.data.cols() + c}};
            if (gradients_->find(StageId::output)) return {{backward(StageId::output), r, -1}, {weight("W_o"), c, -1}};
            return {};
        case StageId::concat: return {{backward(StageId::output), r, -1}, {weight("W_o"), c, -1}};
        case StageId::queries_rotated:
            return {{backward(StageId::scores, h), r, -1}, {forward(StageId::keys_rotated, h), -1, c}};
        case StageId::queries:
            if (rotated) return {{backward(StageId::queries_rotated, h), r, -1}};
            return {{backward(StageId::scores, h), r, -1}, {forward(plain ? StageId::inputs : StageId::keys, plain ? 0 : h), -1, c}};
        case StageId::keys_rotated:
        case StageId::keys:
            if (g.id == StageId::keys && rotated) return {{backward(StageId::keys_rotated, h), r, -1}};
            for (const int q : sharing_heads(g)) {
                marks.push_back({backward(StageId::scores, q), -1, r});
                marks.push_back({forward(g.id == StageId::keys_rotated ? StageId::queries_rotated : plain ? StageId::inputs : StageId::queries, plain ? 0 : q), -1, c});
            }
            return marks;
        case StageId::values:
            for (const int q : sharing_heads(g)) {
                marks.push_back({forward(StageId::weights, q), -1, r});
                marks.push_back({backward(StageId::context, q), -1, c});
            }
            return marks;
        case StageId::layernorm:
        case StageId::inputs:
            if (g.id == StageId::inputs && trace_.find(StageId::layernorm))
                return {{backward(StageId::layernorm), r, -1}, {forward(StageId::inputs), r, -1}, {weight("gamma"), 0, -1}};
            if (plain) return {{backward(StageId::queries), r, c}, {backward(StageId::keys), r, c}, {backward(StageId::values), r, c}};
            projection_paths(marks, StageId::queries, "W_q", r, c);
            projection_paths(marks, StageId::keys, "W_k", r, c);
            projection_paths(marks, StageId::values, "W_v", r, c);
            return marks;
        case StageId::embeddings: return {{backward(StageId::inputs), r, c}};
        default: return {};
    }
}

}  // namespace

std::vector<Mark> forward_sources(const Trace& trace, const Stage& stage, Eigen::Index row, Eigen::Index col) {
    return Sources(trace, nullptr, row, col).sources_of(stage);
}

std::vector<Mark> gradient_sources(const Trace& trace, const Gradients& gradients, const Stage& gradient, Eigen::Index row,
                                   Eigen::Index col) {
    return Sources(trace, &gradients, row, col).gradient_sources(gradient);
}

}  // namespace attntrace
