#include "attention/similarity.hpp"

#include "attention/kernels.hpp"
#include "attention/numeric.hpp"
#include "core/error.hpp"
#include "util/utf8.hpp"

#include <Eigen/Eigenvalues>
#include <fmt/format.h>

#include <algorithm>

namespace attntrace {

namespace {

std::vector<WordPair> ranked_pairs(const Similarity& t) {
    std::vector<WordPair> pairs;
    for (Eigen::Index i = 0; i < t.cosine.rows(); ++i)
        for (Eigen::Index j = i + 1; j < t.cosine.cols(); ++j)
            pairs.push_back({t.words[static_cast<std::size_t>(i)], t.words[static_cast<std::size_t>(j)], t.cosine(i, j)});
    std::stable_sort(pairs.begin(), pairs.end(),
                     [](const WordPair& x, const WordPair& y) { return x.cosine > y.cosine; });
    return pairs;
}

// a · b beyond the double range cannot be shown: refused like an overflowing score.
void require_finite_dots(const Similarity& t, const std::string& origin) {
    for (Eigen::Index i = 0; i < t.dot.rows(); ++i)
        for (Eigen::Index j = 0; j < t.dot.cols(); ++j)
            if (!std::isfinite(t.dot(i, j)))
                throw DataError(fmt::format("{}: the dot product of \"{}\" and \"{}\" overflows (it is beyond "
                                            "the double range); the input numbers are too large",
                                            origin, printable(t.words[static_cast<std::size_t>(i)]),
                                            printable(t.words[static_cast<std::size_t>(j)])));
}

// The plane's second direction made orthogonal to the first and of unit length. Where it is
// missing (fewer than two independent vectors) or along the first, the coordinate axis least
// along the first is used instead, so the plane is still a plane.
void complete_plane(Matrix& plane) {
    const Vector first = plane.row(0);
    Vector second = plane.row(1) - plane.row(1).dot(first) * first;
    if (!(second.norm() > 0.5)) {
        Eigen::Index axis = 0;
        first.cwiseAbs().minCoeff(&axis);
        second = -first(axis) * first;
        second(axis) += 1;
    }
    plane.row(1) = second / second.norm();
}

// A direction and its opposite span the same line: each is turned so that its component of
// largest magnitude (the first of equals) is positive, so the picture does not depend on the
// sign the solver happened to return.
void fix_sign(Eigen::Ref<Vector> direction) {
    Eigen::Index largest = 0;
    for (Eigen::Index k = 1; k < direction.size(); ++k)
        if (std::abs(direction(k)) > std::abs(direction(largest))) largest = k;
    if (direction(largest) < 0) direction = -direction;
}

// The plane that keeps the most squared length of the rows of x (n × d with d > 2, not all
// zero, scaled to magnitudes ≤ 1): its unit directions as the rows of a 2 × d matrix. They are
// the eigenvectors of XᵀX (d × d) with its two largest eigenvalues σ₁² ≥ σ₂²; with fewer words
// than dimensions, the same directions come cheaper from XXᵀ (n × n), whose eigenvector u of
// eigenvalue σ² gives Xᵀu / σ.
Matrix principal_plane(const Matrix& x) {
    const Eigen::Index n = x.rows(), d = x.cols();
    Matrix plane = Matrix::Zero(2, d);
    if (d <= n) {
        const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eigen(Eigen::MatrixXd(x.transpose() * x));
        plane.row(0) = eigen.eigenvectors().col(d - 1).transpose();  // eigenvalues ascend
        plane.row(1) = eigen.eigenvectors().col(d - 2).transpose();
    } else {
        const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eigen(Eigen::MatrixXd(x * x.transpose()));
        const auto& values = eigen.eigenvalues();
        for (Eigen::Index k = 0; k < std::min<Eigen::Index>(2, n); ++k) {
            // An eigenvalue at the rounding error of the largest has no direction of its own.
            if (!(values(n - 1 - k) > 1e-12 * values(n - 1))) break;
            const Vector v = (x.transpose() * eigen.eigenvectors().col(n - 1 - k)).transpose();
            plane.row(k) = v / v.norm();
        }
    }
    complete_plane(plane);
    fix_sign(plane.row(0));
    fix_sign(plane.row(1));
    return plane;
}

}  // namespace

WordPlane plane_of(const Vocabulary& vocabulary, const std::string& origin, const std::string& description) {
    WordPlane p;
    p.origin = origin;
    p.description = description;
    p.words = vocabulary.words;
    const Matrix& x = vocabulary.vectors;
    p.dimension = x.cols();
    p.kept_each.assign(p.words.size(), 1.0);
    if (p.dimension <= 2) {
        for (Eigen::Index k = 1; k <= p.dimension; ++k) p.axes.push_back(fmt::format("x{}", k));
        p.points = x;
        return p;
    }
    p.axes = {"PC1", "PC2"};
    // Divided by the largest magnitude, so that no square overflows or underflows.
    const double m = max_magnitude(x);
    if (m == 0) {  // every vector zero: any plane keeps all of nothing
        p.directions = Matrix::Identity(2, p.dimension);
        p.points = Matrix::Zero(x.rows(), 2);
        return p;
    }
    const Matrix scaled = x / m;
    p.directions = principal_plane(scaled);
    const Matrix in_plane = scaled * p.directions.transpose();
    p.points = in_plane * m;
    p.kept = std::min(1.0, in_plane.squaredNorm() / scaled.squaredNorm());
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
        const double length = scaled.row(i).squaredNorm();
        if (length > 0) p.kept_each[static_cast<std::size_t>(i)] = std::min(1.0, in_plane.row(i).squaredNorm() / length);
    }
    return p;
}

std::vector<WordPair> most_alike(const Similarity& tables, std::size_t count) {
    auto pairs = ranked_pairs(tables);
    if (pairs.size() > count) pairs.resize(count);
    return pairs;
}

std::vector<WordPair> least_alike(const Similarity& tables, std::size_t count) {
    auto pairs = ranked_pairs(tables);
    std::reverse(pairs.begin(), pairs.end());
    if (pairs.size() > count) pairs.resize(count);
    return pairs;
}

Similarity similarity_of(const Vocabulary& vocabulary, const std::string& origin, const std::string& description) {
    Similarity t;
    t.origin = origin;
    t.description = description;
    t.words = vocabulary.words;
    t.dimension = vocabulary.vectors.cols();
    const Matrix& x = vocabulary.vectors;
    Matrix directions(x.rows(), x.cols());  // each vector divided by its length, computed without overflow
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
        const std::string& word = t.words[static_cast<std::size_t>(i)];
        const Vector vector = x.row(i);
        const double m = max_magnitude(vector);
        if (m == 0)
            throw DataError(fmt::format("{}: the vector of \"{}\" is all zeros, so it has no "
                                        "direction and no cosine similarity",
                                        origin, printable(word)));
        const Vector scaled = vector / m;
        directions.row(i) = scaled / scaled.norm();
    }
    t.dot = dot_scores<double>(x, x);
    require_finite_dots(t, origin);
    t.cosine = dot_scores<double>(directions, directions).cwiseMax(-1.0).cwiseMin(1.0);
    return t;
}

}  // namespace attntrace
