#include "attention/similarity.hpp"

#include "attention/kernels.hpp"
#include "attention/numeric.hpp"
#include "core/error.hpp"
#include "util/utf8.hpp"

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

}  // namespace

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
