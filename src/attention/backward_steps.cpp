#include "attention/backward_steps.hpp"

#include "attention/affine.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attntrace::grad {

Matrix softmax_backward(const Matrix& weights, const Matrix& d_weights, double temperature) {
    Matrix d(weights.rows(), weights.cols());
    for (Eigen::Index i = 0; i < weights.rows(); ++i) {
        double inner = 0;  // Σ_k a_k·da_k
        for (Eigen::Index k = 0; k < weights.cols(); ++k) inner += weights(i, k) * d_weights(i, k);
        for (Eigen::Index j = 0; j < weights.cols(); ++j)
            d(i, j) = weights(i, j) == 0 ? 0.0 : weights(i, j) * (d_weights(i, j) - inner) / temperature;
    }
    return d;
}

Matrix softmax_jacobian(const Vector& weights, double temperature) {
    const Eigen::Index n = weights.cols();
    Matrix j(n, n);
    for (Eigen::Index r = 0; r < n; ++r)
        for (Eigen::Index c = 0; c < n; ++c) j(r, c) = ((r == c ? weights(r) : 0.0) - weights(r) * weights(c)) / temperature;
    return j;
}

Matrix sum_normalize_backward(const Matrix& scores, const Matrix& weights, const Matrix& d_weights) {
    Matrix d = Matrix::Zero(scores.rows(), scores.cols());
    for (Eigen::Index i = 0; i < scores.rows(); ++i) {
        double sum = 0, inner = 0;
        bool any = false;
        for (Eigen::Index k = 0; k < scores.cols(); ++k)
            if (std::isfinite(scores(i, k))) sum += scores(i, k), inner += weights(i, k) * d_weights(i, k), any = true;
        if (!any) continue;  // every key hidden: the weights were left at 0, whatever the scores
        for (Eigen::Index j = 0; j < scores.cols(); ++j)
            if (std::isfinite(scores(i, j))) d(i, j) = (d_weights(i, j) - inner) / sum;
    }
    return d;
}

Matrix softmax_rows(const Matrix& scores, double temperature) {
    Matrix a(scores.rows(), scores.cols());
    for (Eigen::Index i = 0; i < scores.rows(); ++i) {
        double top = -std::numeric_limits<double>::infinity(), sum = 0;
        for (Eigen::Index k = 0; k < scores.cols(); ++k) top = std::max(top, scores(i, k) / temperature);
        for (Eigen::Index k = 0; k < scores.cols(); ++k) sum += a(i, k) = std::exp(scores(i, k) / temperature - top);
        a.row(i) /= sum;
    }
    return a;
}

Matrix zero_hidden(Matrix d, const BoolMatrix& allowed) {
    for (Eigen::Index i = 0; i < d.rows(); ++i)
        for (Eigen::Index j = 0; j < d.cols(); ++j)
            if (!allowed(i, j)) d(i, j) = 0.0;
    return d;
}

Matrix rotate_back(const Matrix& d_rotated, const Matrix& angles) {
    const Eigen::Index h = d_rotated.cols() / 2;
    Matrix d(d_rotated.rows(), d_rotated.cols());
    for (Eigen::Index r = 0; r < d.rows(); ++r)
        for (Eigen::Index i = 0; i < h; ++i) {
            const double c = std::cos(angles(r, i)), s = std::sin(angles(r, i));
            d(r, i) = d_rotated(r, i) * c + d_rotated(r, i + h) * s;
            d(r, i + h) = d_rotated(r, i + h) * c - d_rotated(r, i) * s;
        }
    return d;
}

Vector column_sums(const Matrix& d) { return d.colwise().sum(); }

LayerNormGradients layer_norm_backward(const Matrix& x, const Matrix& d_y, const Vector& gamma, double epsilon) {
    const Eigen::Index n = x.rows(), d = x.cols();
    LayerNormGradients out{Matrix(n, d), Vector::Zero(d), Vector::Zero(d)};
    for (Eigen::Index i = 0; i < n; ++i) {
        const RowMoments m = row_moments(x.row(i));  // the forward pass's own mean and variance
        const double sigma = std::sqrt(m.variance + epsilon);
        Vector x_hat(d), g(d);
        for (Eigen::Index k = 0; k < d; ++k) {
            x_hat(k) = (x(i, k) - m.mean) / sigma;
            g(k) = d_y(i, k) * gamma(k);
            out.d_gamma(k) += d_y(i, k) * x_hat(k);
            out.d_beta(k) += d_y(i, k);
        }
        const double mean_g = g.mean(), mean_gx = g.cwiseProduct(x_hat).mean();
        for (Eigen::Index k = 0; k < d; ++k) out.d_x(i, k) = (g(k) - mean_g - x_hat(k) * mean_gx) / sigma;
    }
    return out;
}

AdditiveGradients additive_backward(const Matrix& projected_decoder, const Matrix& projected_encoder, const Vector& v_a,
                                    const Matrix& d_scores) {
    const Eigen::Index n_tgt = projected_decoder.rows(), n_src = projected_encoder.rows(), d_a = v_a.cols();
    AdditiveGradients out{Matrix::Zero(n_tgt, d_a), Matrix::Zero(n_src, d_a), Vector::Zero(d_a)};
    for (Eigen::Index t = 0; t < n_tgt; ++t)
        for (Eigen::Index j = 0; j < n_src; ++j) {
            const double de = d_scores(t, j);
            for (Eigen::Index a = 0; a < d_a; ++a) {
                const double u = std::tanh(projected_decoder(t, a) + projected_encoder(j, a));
                const double g = de * v_a(a) * (1 - u * u);
                out.d_v_a(a) += de * u;
                out.d_projected_decoder(t, a) += g;
                out.d_projected_encoder(j, a) += g;
            }
        }
    return out;
}

}  // namespace attntrace::grad
