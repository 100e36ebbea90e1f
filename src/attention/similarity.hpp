// Embeddings as points in space: how alike two words' vectors are, by dot product and by
// cosine similarity (the dot product of the directions, blind to length).
#pragma once

#include "attention/types.hpp"
#include "input/problem.hpp"

#include <string>
#include <utility>
#include <vector>

namespace attntrace {

struct SimilarityTables {
    std::vector<std::string> words;
    Matrix dot;     // dot(a, b) = a · b
    Matrix cosine;  // cos(a, b) = a · b / (|a| |b|), in [-1, 1]
};

struct WordPair {
    std::string a, b;
    double cosine = 0;
};

// The `count` most alike (highest cosine) and least alike pairs of distinct words.
std::vector<WordPair> most_alike(const SimilarityTables& tables, std::size_t count);
std::vector<WordPair> least_alike(const SimilarityTables& tables, std::size_t count);

// Every pair of `vocabulary`. Throws DataError naming a word whose vector is all zeros (its
// direction, and so its cosine, is undefined). `origin` names the input in that message.
SimilarityTables similarity_tables(const Vocabulary& vocabulary, const std::string& origin);

}  // namespace attntrace
