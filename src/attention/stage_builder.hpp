// Appends stages to a trace, converting the working precision to the stored double and
// refusing numbers that are not finite (overflow) with a message that names stage and entry.
#pragma once

#include "core/stage.hpp"
#include "attention/overflow.hpp"
#include "core/error.hpp"
#include "util/parallel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

namespace attntrace {

// "x", 3 → x1, x2, x3: column labels for vector dimensions.
inline std::vector<std::string> numbered(std::string_view prefix, Eigen::Index count) {
    std::vector<std::string> labels;
    for (Eigen::Index i = 1; i <= count; ++i) labels.push_back(fmt::format("{}{}", prefix, i));
    return labels;
}

class StageBuilder {
public:
    explicit StageBuilder(Trace& trace) : trace_(trace) {}

    // The stages added from now on belong to (1-based) `head`, reading key/value head
    // `kv_head` (0 for either: one for the run, every head its own).
    void set_head(int head, int kv_head) {
        head_ = head;
        kv_head_ = kv_head;
    }

    // A stage the mode computes. Entries the mask forbids may be −∞; all others must be finite.
    // Stages are stored as double: a float64 matrix given as an rvalue moves in (taken only
    // here, inside, so the other arguments may still read it), anything else is copied or
    // converted.
    template <typename M>
    Stage& add(StageId id, std::string title, std::string formula, Labels rows, Labels cols, M&& data,
               const BoolMatrix* allowed = nullptr) {
        Stage stage;
        stage.id = id;
        stage.head = head_;
        stage.kv_head = kv_head_;
        stage.title = std::move(title);
        stage.formula = std::move(formula);
        stage.rows = std::move(rows);
        stage.cols = std::move(cols);
        if constexpr (std::is_same_v<std::remove_cvref_t<M>, Matrix> && !std::is_lvalue_reference_v<M>)
            stage.data = std::move(data);
        else
            stage.data = data.template cast<double>();
        if (allowed) stage.allowed = *allowed;
        require_finite(stage);
        trace_.stages.push_back(std::move(stage));
        return trace_.stages.back();
    }

    // A stage the mode skips: it passes its input through and says why.
    template <typename M>
    Stage& skip(StageId id, std::string title, std::string formula, Labels rows, Labels cols, M&& passed_through,
                std::string reason) {
        Stage& stage = add(id, std::move(title), std::move(formula), std::move(rows), std::move(cols),
                           std::forward<M>(passed_through));
        stage.applied = false;
        stage.reason = std::move(reason);
        return stage;
    }

private:
    void require_finite(const Stage& stage) const {
        const Eigen::Index rows = stage.data.rows(), cols = stage.data.cols();
        Eigen::Index first = rows * cols;  // the first bad entry in row-major order
#pragma omp parallel for schedule(static) reduction(min : first) if (worth_threads(static_cast<double>(rows) * static_cast<double>(cols)))
        for (Eigen::Index r = 0; r < rows; ++r)
            for (Eigen::Index c = 0; c < cols; ++c)
                if (!std::isfinite(stage.data(r, c)) && !stage.is_masked(r, c)) {
                    first = std::min(first, r * cols + c);
                    break;
                }
        if (first == rows * cols) return;
        const Eigen::Index r = first / cols, c = first % cols;
        throw_overflow(trace_.origin, {stage.id, stage.head}, stage.rows[static_cast<std::size_t>(r)], r,
                       stage.cols[static_cast<std::size_t>(c)], c, stage.data(r, c), "the entry",
                       stage.id == StageId::scaled ? division_overflow_cause(trace_.scale, 1) : std::string(input_too_large));
    }

    Trace& trace_;
    int head_ = 0;
    int kv_head_ = 0;
};

}  // namespace attntrace
