// Enter on a gradient of the backward pass: the cells of the gradients after it (nearer the
// loss) and of the forward stages that its formula reads, as attention/backward*.cpp computes
// them. dA[i, j] = dZ[i, :]·V[j, :] reads row i of dZ and row j of V; dS''[i, j] reads row i of
// A and of dA; dQ[i, c] = dS[i, :]·K[:, c] reads row i of dS and column c of K; and so on back
// to the inputs and the weights.
#include "stepper/stepper.hpp"

#include <fmt/format.h>

namespace attntrace::stepper {
namespace {

Place forward(StageId id, int head = 0) { return {id, head, {}, false}; }
Place backward(StageId id, int head = 0) { return {id, head, {}, true}; }
Place weight(std::string name, bool gradient = false) { return {StageId::parameters, 0, std::move(name), gradient}; }

}  // namespace

// The query heads (1-based; {0} for a run of one head) whose keys and values are those of the
// key/value head of stage `s`.
std::vector<int> Stepper::sharing_heads(const Stage& s) const {
    if (s.head == 0) return {0};
    if (s.kv_head == 0) return {s.head};
    std::vector<int> heads;
    for (int h = 1; h <= trace_.heads; ++h)
        if (const Stage* keys = trace_.find(StageId::keys, h); keys && keys->kv_head == s.kv_head) heads.push_back(h);
    return heads;
}

// The gradient of the projection `y` (Q, K or V) and the weight `w` that made it, for a cell of dX
// (or of d(LN(X))): row r of each head's dY and row c of W.
void Stepper::projection_paths(std::vector<Mark>& marks, StageId y, const char* w, Eigen::Index r, Eigen::Index c) const {
    for (int h = 0; h <= trace_.heads; ++h)
        if (gradients_->find(y, h) && (h > 0 || trace_.heads == 1)) marks.push_back({backward(y, h), r, -1});
    if (trace_.has_parameter(w)) marks.push_back({weight(w), c, -1});
}

// dW_q[r, c] = Σ_i X[i, r]·dQ[i, c]: column r of the projections' input and column c of the
// gradient of the head whose block holds column c. A bias: that column of the gradient alone.
std::vector<Mark> Stepper::weight_gradient_sources(const std::string& name, Eigen::Index r, Eigen::Index c) const {
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
std::vector<Mark> Stepper::core_gradient_sources(const Stage& g) const {
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

std::vector<Mark> Stepper::gradient_sources(const Stage& g) const {
    const int h = g.head;
    const Eigen::Index r = row_, c = col_;
    const bool plain = trace_.mode == Mode::plain;
    const bool rotated = trace_.find(StageId::queries_rotated) != nullptr;
    if (!g.parameter.empty()) return weight_gradient_sources(g.parameter, r, c);
    if (std::vector<Mark> core = core_gradient_sources(g); !core.empty() || g.id == StageId::weights) return core;
    if (trace_.mode == Mode::bahdanau) return {};
    std::vector<Mark> marks;
    switch (g.id) {
        case StageId::context:  // dZ: its block of d(concat), or the loss's own derivative
            if (!gradients_->find(StageId::concat)) return {};
            return {{backward(StageId::concat), r, (std::max(h, 1) - 1) * g.data.cols() + c}};
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

// Why Enter on the cursor's cell of `v` has nothing to follow.
std::string Stepper::nothing_to_follow(const View& v) const {
    const Stage& s = stage_of(v);
    if (v.kind != View::gradient) return fmt::format("{} comes from the input itself: nothing before it to follow", s.name());
    const std::string name = fmt::format("d_{}", s.key());
    if (s.id == StageId::output || (s.id == StageId::context && !gradients_->find(StageId::concat)))
        return fmt::format("{} is the loss's own derivative ({}): nothing before it to follow", name, gradients_->formula);
    if (s.id == StageId::weights) {
        const Loss& loss = gradients_->loss;
        return fmt::format("{} is 0 here: the focus loss reads only the weight [{}, {}]", name, s.rows[static_cast<std::size_t>(loss.query)],
                           s.cols[static_cast<std::size_t>(loss.key)]);
    }
    if (trace_.mode == Mode::bahdanau)
        return fmt::format("in an encoder–decoder run Enter follows the gradients back to the scores; {}'s formula is in "
                           "the pane", name);
    return fmt::format("Enter does not follow {} further; its formula is in the pane", name);
}

}  // namespace attntrace::stepper
