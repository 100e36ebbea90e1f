#include "attention/gradient_check.hpp"

#include "attention/backward.hpp"
#include "attention/moved_parameters.hpp"
#include "attention/trace.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace attntrace {
namespace {

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
    const double smallest_step = std::ldexp(check.step, -check.halvings);
    const double resolved = 100 * std::numeric_limits<double>::epsilon() * std::max(1.0, std::abs(g.value)) / smallest_step;
    check.floor = std::max(1e-6 * (largest > 0 ? largest : 1.0), resolved / check.tolerance);
    const auto relative_error = [&](double an, double fd) {
        return std::abs(an - fd) / std::max({std::abs(an), std::abs(fd), check.floor});
    };
    for (const MovableMatrix& numbers : movable_matrices(moved, base, true)) {
        const Stage& d = gradient_of(g, numbers.key);
        MatrixCheck m;
        m.key = numbers.key;
        for (Eigen::Index r = 0; r < numbers.rows; ++r)
            for (Eigen::Index c = 0; c < numbers.cols; ++c) {
                const double an = d.data(r, c);
                double fd = central_difference(moved, o, loss, numbers.at(r, c), check.step);
                double relative = relative_error(an, fd);
                if (relative > check.tolerance) ++m.refined;
                for (int k = 1; k <= check.halvings && relative > check.tolerance; ++k) {
                    const double finer = central_difference(moved, o, loss, numbers.at(r, c), std::ldexp(check.step, -k));
                    const double finer_relative = relative_error(an, finer);
                    if (finer_relative < relative) fd = finer, relative = finer_relative;
                }
                const double error = std::abs(an - fd);
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
