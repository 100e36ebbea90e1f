#include "attention/rnn.hpp"

#include "core/error.hpp"
#include "core/generator.hpp"

#include <Eigen/QR>
#include <fmt/format.h>

#include <cmath>
#include <vector>

namespace attntrace {

RnnWeights draw_rnn(std::uint64_t seed, Eigen::Index d_in, Eigen::Index d_h, RnnInit init, double gain) {
    SplitMix64 rng(seed);
    RnnWeights w;
    w.W_x = random_matrix(rng, d_in, d_h, 1.0 / std::sqrt(static_cast<double>(d_in)));
    if (init == RnnInit::scaled) {
        w.W_h = random_matrix(rng, d_h, d_h, gain / std::sqrt(static_cast<double>(d_h)));
    } else {
        const Matrix drawn = random_matrix(rng, d_h, d_h, 1.0);
        const Eigen::HouseholderQR<Matrix> qr(drawn);
        Matrix q = qr.householderQ();
        const Matrix r = qr.matrixQR().triangularView<Eigen::Upper>();
        for (Eigen::Index c = 0; c < d_h; ++c)
            if (r(c, c) < 0) q.col(c) = -q.col(c);
        w.W_h = gain * q;
    }
    w.b_h = Vector::Zero(d_h);
    return w;
}

Matrix rnn_hidden_states(const RnnWeights& w, const Matrix& X) {
    const Eigen::Index d_h = w.W_h.rows();
    if (w.W_x.rows() != X.cols() || w.W_x.cols() != d_h || w.W_h.cols() != d_h || w.b_h.size() != d_h)
        throw DataError(fmt::format("rnn: W_x is {}×{}, W_h {}×{} and b_h {} numbers for inputs of {}: expected W_x "
                                    "d_in × d_h, W_h d_h × d_h and b_h d_h",
                                    w.W_x.rows(), w.W_x.cols(), w.W_h.rows(), w.W_h.cols(), w.b_h.size(), X.cols()));
    Matrix H(X.rows(), d_h);
    Vector h = Vector::Zero(d_h);
    for (Eigen::Index t = 0; t < X.rows(); ++t) {
        h = (X.row(t) * w.W_x + h * w.W_h + w.b_h).array().tanh().matrix();
        H.row(t) = h;
    }
    return H;
}

Vector rnn_influence(const RnnWeights& w, const Matrix& H) {
    const Eigen::Index n = H.rows(), d_h = H.cols();
    Vector out(n);
    Matrix chain = Matrix::Identity(d_h, d_h);  // ∂h_n/∂h_t, walked back from t = n
    for (Eigen::Index t = n - 1; t >= 0; --t) {
        const Vector slope = (1.0 - H.row(t).array().square()).matrix();
        const Matrix through = chain * slope.asDiagonal();  // ∂h_n/∂(the pre-activation of h_t)
        out(t) = (through * w.W_x.transpose()).norm();
        chain = through * w.W_h.transpose();
    }
    return out;
}

Vector attention_influence(const Projections& p, const Matrix& X, Eigen::Index i) {
    if (p.output) throw DataError("rnn: the input's attention has an output weight W_o; attntrace rnn compares with one "
                                  "head of attention, without W_o");
    if (p.query.rows() != X.cols())
        throw DataError(fmt::format("rnn: W_q has {} rows for inputs of {}", p.query.rows(), X.cols()));
    const double root = std::sqrt(static_cast<double>(p.query.cols()));
    Vector q = X.row(i) * p.query;
    if (p.query_bias) q += *p.query_bias;
    Matrix K = X * p.key, V = X * p.value;
    if (p.key_bias) K.rowwise() += *p.key_bias;
    if (p.value_bias) V.rowwise() += *p.value_bias;
    const Vector s = (K * q.transpose()).transpose() / root;
    Vector a = (s.array() - s.maxCoeff()).exp().matrix();
    a /= a.sum();
    const Vector z = a * V;
    const Vector through_key = q * p.key.transpose() / root;  // ∂s_j/∂x_j = (W_k·q_i)ᵀ/√d_k
    // Each J_j is made and measured in turn, but J_i, which waits for the sum through the query
    // (x_i moves the query too): d_v × d_in numbers at a time, not n of them.
    Matrix through_query = Matrix::Zero(V.cols(), X.cols());  // Σ_m a_m·(v_m − z_i)·(W_q·k_m)ᵀ/√d_k
    Matrix J_i;
    Vector out(X.rows());
    for (Eigen::Index j = 0; j < X.rows(); ++j) {
        const Vector moved = V.row(j) - z;
        Matrix J = a(j) * p.value.transpose() + a(j) * moved.transpose() * through_key;
        through_query += a(j) * moved.transpose() * (K.row(j) * p.query.transpose()) / root;
        if (j == i) J_i = std::move(J);
        else out(j) = J.norm();
    }
    out(i) = (J_i + through_query).norm();
    return out;
}

std::optional<DecayFit> decay_per_token(const Vector& influence) {
    const Eigen::Index n = influence.size();
    if (n < 3 || (influence.array() <= 0).any()) return std::nullopt;
    const double m = static_cast<double>(n);
    const double mean_x = (m - 1) / 2;
    double mean_y = 0;
    for (Eigen::Index j = 0; j < n; ++j) mean_y += std::log(influence(j)) / m;
    double sxx = 0, sxy = 0, syy = 0;
    for (Eigen::Index j = 0; j < n; ++j) {
        const double x = static_cast<double>(n - 1 - j) - mean_x, y = std::log(influence(j)) - mean_y;
        sxx += x * x, sxy += x * y, syy += y * y;
    }
    const double slope = sxy / sxx;
    return DecayFit{std::exp(slope), syy > 0 ? slope * sxy / syy : 1.0};
}

}  // namespace attntrace
