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

// An input's words drawn on a plane through the origin (for `similarity --svg`): each word's
// vector as a point. Vectors of one or two numbers are drawn as they are; longer ones are
// projected onto the plane that keeps the most of their squared length, spanned by their first
// two principal directions. The vectors are not centred first (the directions are the top two
// right singular vectors of the words × d matrix), so the origin stays where it is and an
// arrow from it still stands for its word's vector.
struct WordPlane {
    std::string origin;       // the input, for the heading
    std::string description;  // the input's description
    std::vector<std::string> words;
    Eigen::Index dimension = 0;     // numbers per input vector
    std::vector<std::string> axes;  // "x1" (and "x2") as they are, or "PC1" and "PC2"
    Matrix directions;              // projected: the axes' unit vectors in the input space (2 × d); else empty
    Matrix points;                  // words × axes.size(): each word's coordinates
    double kept = 1;                // Σ|point|² / Σ|vector|²: the share of the squared length the plane keeps
    std::vector<double> kept_each;  // the same for each word (1 for a zero vector)

    bool projected() const { return directions.size() > 0; }
};

// The plane of `vocabulary`'s words. Deterministic: the same vectors give the same numbers,
// each direction's largest-magnitude component positive.
WordPlane plane_of(const Vocabulary& vocabulary, const std::string& origin, const std::string& description);

// Every pair of `vocabulary`. Throws DataError naming a word whose vector is all zeros (its
// direction, and so its cosine, is undefined) or a pair whose dot product overflows.
// `origin` names the input in messages and headings.
Similarity similarity_of(const Vocabulary& vocabulary, const std::string& origin, const std::string& description);

}  // namespace attntrace
