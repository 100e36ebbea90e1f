// The product of the backward pass (attention/backward.hpp): for one loss L, dL/d(every forward
// stage the loss depends on) and dL/d(every parameter), each a backward Stage of the same id,
// head, shape and labels as the matrix it is the gradient of, in reverse pipeline order.
// Renderers only format this.
#pragma once

#include "core/matrix.hpp"
#include "core/stage.hpp"
#include "core/types.hpp"

#include <stdexcept>
#include <type_traits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attntrace {

enum class LossKind { focus, target, sum };
inline constexpr NameTable<LossKind, 3> loss_kind_names{
    {{LossKind::focus, "focus"}, {LossKind::target, "target"}, {LossKind::sum, "sum"}}};
constexpr const auto& names_of(LossKind) { return loss_kind_names; }

// What the backward pass differentiates. "The result" below is the context Z, or the output
// when the run has one (a W_o, or several heads).
//  focus:  L = −log A[query, key], the weight of one (query, key) pair: the cross-entropy that
//          asks the query to put its weight on that key (of `head`, with several heads);
//  target: L = ½‖Y − T‖², Y the result, T of its shape;
//  sum:    L = Σ Y, every number of the result: an upstream gradient of ones.
struct Loss {
    LossKind kind = LossKind::sum;
    Eigen::Index query = 0, key = 0;  // focus: 0-based row and column of the weights
    int head = 0;                     // focus: 1-based head; 0 for a run of one head
    Matrix target;                    // target: T

    static Loss sum() { return {}; }
    static Loss focus(Eigen::Index query, Eigen::Index key, int head = 0) {
        Loss loss;
        loss.kind = LossKind::focus;
        loss.query = query, loss.key = key, loss.head = head;
        return loss;
    }
    static Loss towards(Matrix target) {
        Loss loss;
        loss.kind = LossKind::target;
        loss.target = std::move(target);
        return loss;
    }
};

struct Gradients {
    Loss loss;
    double value = 0;     // L
    std::string title;    // "Loss: how little weight \"smiled\" puts on \"teacher\""
    std::string formula;  // "L = −log A[smiled, teacher]"
    // Direction::backward, in reverse pipeline order: the stages of the forward pass that the
    // loss reaches (keyed by their StageId and head) and every parameter of the run (id
    // `parameters`, keyed by `parameter`), a parameter's gradient where it is first known.
    std::vector<Stage> stages;

    // The gradient of stage `id` of `head` (0: the first of that id, whatever its head).
    const Stage* find(StageId id, int head = 0) const {
        for (const Stage& stage : stages)
            if (stage.id == id && stage.parameter.empty() && (head == 0 || stage.head == head)) return &stage;
        return nullptr;
    }
    // The gradient of the parameter called `name` ("W_q").
    const Stage* find(std::string_view name) const {
        for (const Stage& stage : stages)
            if (!stage.parameter.empty() && stage.parameter == name) return &stage;
        return nullptr;
    }
    template <typename Key>
    const Stage& at(Key key, int head = 0) const {
        const Stage* stage = nullptr;
        if constexpr (std::is_same_v<Key, StageId>) stage = find(key, head);
        else stage = find(std::string_view(key));
        if (!stage) throw std::out_of_range("no gradient of that stage or parameter");
        return *stage;
    }
};

}  // namespace attntrace
