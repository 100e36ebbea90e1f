#include "core/generator.hpp"

#include <cmath>

namespace attntrace {

Matrix random_matrix(SplitMix64& rng, Eigen::Index rows, Eigen::Index cols, double scale) {
    Matrix m(rows, cols);
    for (Eigen::Index r = 0; r < rows; ++r)
        for (Eigen::Index c = 0; c < cols; ++c) m(r, c) = rng.symmetric(scale);
    return m;
}

Projections generate_projections(std::uint64_t seed, Eigen::Index d_in, Eigen::Index d_k) {
    return generate_projections(seed, d_in, d_k, d_k, false);
}

Projections generate_projections(std::uint64_t seed, Eigen::Index d_in, Eigen::Index d_model, Eigen::Index d_kv,
                                 bool output) {
    SplitMix64 rng(seed);
    const double scale = 1.0 / std::sqrt(static_cast<double>(d_in));
    Projections p;
    p.query = random_matrix(rng, d_in, d_model, scale);
    p.key = random_matrix(rng, d_in, d_kv, scale);
    p.value = random_matrix(rng, d_in, d_kv, scale);
    if (output) p.output = random_matrix(rng, d_model, d_model, 1.0 / std::sqrt(static_cast<double>(d_model)));
    return p;
}

AdditiveWeights generate_additive_weights(std::uint64_t seed, Eigen::Index d_s, Eigen::Index d_h,
                                          Eigen::Index d_a) {
    SplitMix64 rng(seed);
    AdditiveWeights w;
    w.W_a = random_matrix(rng, d_s, d_a, 1.0 / std::sqrt(static_cast<double>(d_s)));
    w.U_a = random_matrix(rng, d_h, d_a, 1.0 / std::sqrt(static_cast<double>(d_h)));
    w.v_a = random_matrix(rng, 1, d_a, 1.0 / std::sqrt(static_cast<double>(d_a)));
    return w;
}

Matrix generate_general_weight(std::uint64_t seed, Eigen::Index d_s, Eigen::Index d_h) {
    SplitMix64 rng(seed);
    return random_matrix(rng, d_s, d_h, 1.0 / std::sqrt(static_cast<double>(d_s)));
}

}  // namespace attntrace
