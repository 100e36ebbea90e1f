#include "attention/positions.hpp"

#include "core/error.hpp"
#include "util/parallel.hpp"

#include <fmt/format.h>

#include <cmath>

namespace attntrace {

PositionSetting position_setting(const SingleSequenceInput& input, const TraceOptions& options) {
    PositionSetting p;
    p.from_option = options.positions.has_value();
    p.scheme = options.positions.value_or(input.positions.value_or(PositionScheme::none));
    p.first = options.position_offset.value_or(0);
    if (options.position_offset && !p.any())
        throw UsageError("--position-offset moves the positions of --positions sinusoidal or rope, and this run has no "
                         "position information (--positions none)");
    return p;
}

double sinusoid_frequency(Eigen::Index i, Eigen::Index d) {
    return std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(d));
}

double rotary_frequency(Eigen::Index i, Eigen::Index d_head) { return sinusoid_frequency(i, d_head); }

Matrix sinusoidal_encoding(Eigen::Index n, Eigen::Index d, std::int64_t first) {
    Matrix pe(n, d);
    for (Eigen::Index r = 0; r < n; ++r) {
        const double p = static_cast<double>(first + r);
        for (Eigen::Index k = 0; k < d; ++k) {
            const double angle = p * sinusoid_frequency(k / 2, d);  // dimensions 2i and 2i + 1 share ω_i
            pe(r, k) = k % 2 == 0 ? std::sin(angle) : std::cos(angle);
        }
    }
    return pe;
}

Matrix rotary_angles(Eigen::Index n, Eigen::Index d_head, std::int64_t first) {
    const Eigen::Index pairs = d_head / 2;
    Matrix angles(n, pairs);
    for (Eigen::Index r = 0; r < n; ++r)
        for (Eigen::Index i = 0; i < pairs; ++i) angles(r, i) = static_cast<double>(first + r) * rotary_frequency(i, d_head);
    return angles;
}

template <typename T>
MatrixT<T> rotate_half(const MatrixT<T>& x, const Matrix& angles) {
    const Eigen::Index h = x.cols() / 2;
    MatrixT<T> out(x.rows(), x.cols());
    // Each row on its own: the same instructions whatever the number of threads.
#pragma omp parallel for schedule(static) if (worth_threads(10.0 * static_cast<double>(x.size())))
    for (Eigen::Index r = 0; r < x.rows(); ++r)
        for (Eigen::Index i = 0; i < h; ++i) {
            const T c = static_cast<T>(std::cos(angles(r, i))), s = static_cast<T>(std::sin(angles(r, i)));
            out(r, i) = x(r, i) * c - x(r, i + h) * s;
            out(r, i + h) = x(r, i + h) * c + x(r, i) * s;
        }
    return out;
}

template MatrixT<float> rotate_half<float>(const MatrixT<float>&, const Matrix&);
template MatrixT<double> rotate_half<double>(const MatrixT<double>&, const Matrix&);

void require_even_head(const PositionSetting& positions, Eigen::Index d_head, int heads, bool heads_from_option,
                       bool weights_given, const std::string& origin) {
    if (positions.scheme != PositionScheme::rope || d_head % 2 == 0) return;
    const std::string asked = positions.from_option ? "--positions rope" : fmt::format("{}: /positions \"rope\"", origin);
    const std::string split = heads == 1 ? "one head" : fmt::format("{} heads", heads);
    const std::string size =
        weights_given ? fmt::format("/weights/query gives d_head = {} ({} columns for {})", d_head, d_head * heads, split)
                      : fmt::format("the generated weights give d_head = {} (d_model = {} for {}); --dim {} would give an "
                                    "even d_head",
                                    d_head, d_head * heads, split, (d_head + 1) * heads);
    const std::string message = fmt::format("{} turns pairs of numbers (i, i + d_head/2) of each head's queries and keys, "
                                            "so d_head must be even, but {}",
                                            asked, size);
    if (positions.from_option || heads_from_option) throw UsageError(message);
    throw DataError(message);
}

std::string positions_text(PositionScheme scheme, std::int64_t first) {
    if (scheme == PositionScheme::none) return "";
    const std::string name = scheme == PositionScheme::rope ? "RoPE positions" : "sinusoidal positions";
    return first == 0 ? name : fmt::format("{} from {}", name, first);
}

}  // namespace attntrace
