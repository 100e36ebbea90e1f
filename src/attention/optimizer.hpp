// The optimizer of attntrace train, shared by every model it trains: the update of
// torch.optim.SGD and torch.optim.Adam over a flat array of parameters, the gradient clipped by
// its norm as torch.nn.utils.clip_grad_norm_ does, and the order of the examples, drawn again
// for every epoch. Header-only: templates over the working precision.
#pragma once

#include "attention/training.hpp"
#include "core/generator.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

namespace attntrace {

// The optimizer's state and its step, as torch.optim.SGD and torch.optim.Adam take it.
template <typename T>
struct Updater {
    const TrainSettings& s;
    std::vector<T> first, second;  // sgd: the momentum buffer; adam: m and v
    std::int64_t t = 0;

    void step(std::vector<T>& params, std::vector<T>& g) {
        ++t;
        clip(g);
        if (first.empty()) first.assign(params.size(), T(0)), second.assign(params.size(), T(0));
        if (s.optimizer == Optimizer::sgd) {
            const T mu = static_cast<T>(s.momentum), lr = static_cast<T>(s.lr);
            for (std::size_t k = 0; k < params.size(); ++k) {
                first[k] = t == 1 || mu == T(0) ? g[k] : mu * first[k] + g[k];
                params[k] -= lr * first[k];
            }
            return;
        }
        const T b1 = static_cast<T>(s.beta1), b2 = static_cast<T>(s.beta2), eps = static_cast<T>(s.epsilon);
        const T correction1 = T(1) - std::pow(b1, static_cast<T>(t));
        const T correction2 = std::sqrt(T(1) - std::pow(b2, static_cast<T>(t)));
        const T step_size = static_cast<T>(s.lr) / correction1;
        for (std::size_t k = 0; k < params.size(); ++k) {
            first[k] = b1 * first[k] + (T(1) - b1) * g[k];
            second[k] = b2 * second[k] + (T(1) - b2) * g[k] * g[k];
            params[k] -= step_size * first[k] / (std::sqrt(second[k]) / correction2 + eps);
        }
    }

    // torch.nn.utils.clip_grad_norm_: scaled by c / (‖g‖ + 1e-6) when that is below 1.
    void clip(std::vector<T>& g) const {
        if (s.clip <= 0) return;
        T norm = 0;
        for (const T x : g) norm += x * x;
        norm = std::sqrt(norm);
        const T coefficient = static_cast<T>(s.clip) / (norm + static_cast<T>(1e-6));
        if (coefficient < T(1))
            for (T& x : g) x *= coefficient;
    }
};

// The order of the examples, drawn again for every epoch from one stream (Fisher–Yates).
class Order {
public:
    Order(std::size_t count, std::uint64_t seed) : rng_(seed ^ 0xD1B54A32D192ED03ULL), order_(count) {}

    // The next batch of at most `size` examples.
    std::vector<std::size_t> next(std::size_t size) {
        if (position_ == 0) shuffle();
        const std::size_t end = std::min(order_.size(), position_ + size);
        std::vector<std::size_t> batch(order_.begin() + static_cast<std::ptrdiff_t>(position_),
                                       order_.begin() + static_cast<std::ptrdiff_t>(end));
        position_ = end == order_.size() ? 0 : end;
        return batch;
    }
    std::int64_t epochs() const { return epochs_; }

private:
    void shuffle() {
        std::iota(order_.begin(), order_.end(), std::size_t{0});
        for (std::size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[rng_.next() % i]);
        ++epochs_;
    }
    SplitMix64 rng_;
    std::vector<std::size_t> order_;
    std::size_t position_ = 0;
    std::int64_t epochs_ = 0;
};

}  // namespace attntrace
