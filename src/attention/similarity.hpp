// Embeddings as points in space: how alike two words' vectors are, by dot product and by
// cosine similarity (the dot product of the directions, blind to length).
#pragma once

#include "core/matrix.hpp"
#include "core/types.hpp"
#include "core/problem.hpp"

#include <string>
#include <utility>
#include <vector>

namespace attntrace {

// The similarity of every pair of an input's words.
struct Similarity {
    std::string origin;       // the input, for headings
    std::string description;  // the input's description
    std::vector<std::string> notes;  // what loading changed, and why a description is not shown
    std::vector<std::string> words;
    Eigen::Index dimension = 0;  // numbers per vector
    Matrix dot;     // dot(a, b) = a · b
    Matrix cosine;  // cos(a, b) = a · b / (|a| |b|), in [-1, 1]
};

struct WordPair {
    std::string a, b;
    double cosine = 0;
};

// The `count` most alike (highest cosine) and least alike pairs of distinct words.
std::vector<WordPair> most_alike(const Similarity& similarity, std::size_t count);
std::vector<WordPair> least_alike(const Similarity& similarity, std::size_t count);

// Every pair of `vocabulary`. Throws DataError naming a word whose vector is all zeros (its
// direction, and so its cosine, is undefined) or a pair whose dot product overflows.
// `origin` names the input in messages and headings.
Similarity similarity_of(const Vocabulary& vocabulary, const std::string& origin, const std::string& description);

}  // namespace attntrace
