// The portable generator behind every generated weight and generated input.
//
// splitmix64 (Steele, Lea and Flood, 2014) turns a 64-bit seed into a stream of 64-bit
// words; the top 53 bits of a word make a double u in [0, 1). Only integer arithmetic and
// one exact scaling are involved, so every platform and standard library gives the same
// numbers (std::*_distribution does not promise that).
#pragma once

#include "core/matrix.hpp"
#include "core/types.hpp"
#include "core/problem.hpp"

#include <cstdint>

namespace attntrace {

inline constexpr std::uint64_t default_seed = 123;

class SplitMix64 {
public:
    explicit SplitMix64(std::uint64_t seed) : state_(seed) {}

    std::uint64_t next() {
        std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }

    // u in [0, 1) with 53 random bits.
    double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

    // In [-scale, scale): scale · (2u − 1).
    double symmetric(double scale) { return scale * (2.0 * uniform() - 1.0); }

private:
    std::uint64_t state_;
};

// rows × cols, filled row by row with symmetric(scale).
Matrix random_matrix(SplitMix64& rng, Eigen::Index rows, Eigen::Index cols, double scale);

// W_q, W_k (d_in × d_k) and W_v (d_in × d_k), drawn in that order from one stream seeded
// with `seed`, each entry in [-1/√d_in, 1/√d_in) so projections keep the inputs' scale.
Projections generate_projections(std::uint64_t seed, Eigen::Index d_in, Eigen::Index d_k);

// The same for several heads: W_q (d_in × d_model), then W_k and W_v (d_in × d_kv, the
// columns of the key/value heads), then W_o (d_model × d_model, entries in
// [-1/√d_model, 1/√d_model)) when `output` — one stream, so with d_kv = d_model and no
// W_o the three matrices are those of generate_projections.
Projections generate_projections(std::uint64_t seed, Eigen::Index d_in, Eigen::Index d_model, Eigen::Index d_kv,
                                 bool output);

// W_a (d_s × d_a), U_a (d_h × d_a) and v_a (d_a), drawn in that order from one stream, each
// entry in [-1/√fan_in, 1/√fan_in) with fan_in = d_s, d_h and d_a respectively.
AdditiveWeights generate_additive_weights(std::uint64_t seed, Eigen::Index d_s, Eigen::Index d_h,
                                          Eigen::Index d_a);

// W (d_s × d_h) for Luong's general score, entries in [-1/√d_s, 1/√d_s).
Matrix generate_general_weight(std::uint64_t seed, Eigen::Index d_s, Eigen::Index d_h);

}  // namespace attntrace
