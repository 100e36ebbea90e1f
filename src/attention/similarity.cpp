#include "attention/similarity.hpp"

#include "attention/kernels.hpp"
#include "error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace attntrace {

namespace {

std::vector<WordPair> ranked_pairs(const SimilarityTables& t) {
    std::vector<WordPair> pairs;
    for (Eigen::Index i = 0; i < t.cosine.rows(); ++i)
        for (Eigen::Index j = i + 1; j < t.cosine.cols(); ++j)
            pairs.push_back({t.words[static_cast<std::size_t>(i)], t.words[static_cast<std::size_t>(j)], t.cosine(i, j)});
    std::stable_sort(pairs.begin(), pairs.end(),
                     [](const WordPair& x, const WordPair& y) { return x.cosine > y.cosine; });
    return pairs;
}

}  // namespace

std::vector<WordPair> most_alike(const SimilarityTables& tables, std::size_t count) {
    auto pairs = ranked_pairs(tables);
    if (pairs.size() > count) pairs.resize(count);
    return pairs;
}

std::vector<WordPair> least_alike(const SimilarityTables& tables, std::size_t count) {
    auto pairs = ranked_pairs(tables);
    std::reverse(pairs.begin(), pairs.end());
    if (pairs.size() > count) pairs.resize(count);
    return pairs;
}

SimilarityTables similarity_tables(const std::vector<std::pair<std::string, Vector>>& vocabulary,
                                   const std::string& origin) {
    SimilarityTables t;
    Matrix x(static_cast<Eigen::Index>(vocabulary.size()), vocabulary.front().second.size());
    for (std::size_t i = 0; i < vocabulary.size(); ++i) {
        t.words.push_back(vocabulary[i].first);
        x.row(static_cast<Eigen::Index>(i)) = vocabulary[i].second;
        if (vocabulary[i].second.isZero(0))
            throw DataError(fmt::format("{}: the vector of \"{}\" is all zeros, so it has no "
                                        "direction and no cosine similarity",
                                        origin, vocabulary[i].first));
    }
    t.dot = dot_scores<double>(x, x);
    const Eigen::VectorXd norms = x.rowwise().norm();
    t.cosine = t.dot.array() / (norms * norms.transpose()).array();
    return t;
}

}  // namespace attntrace
