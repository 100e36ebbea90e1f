// The same word in two contexts: its context vector in each of two traces, how far apart they
// are, and which other words pulled it each way.
#pragma once

#include "core/stage.hpp"

#include <optional>
#include <string>
#include <vector>

namespace attntrace {

// What one other token added to the word's context vector: weight × its value.
struct Contribution {
    std::string token;
    Eigen::Index position = 0;  // 0-based
    double weight = 0;
    Vector vector;              // weight · v_j
    double size = 0;            // |weight · v_j|
};

struct ContextIn {
    std::string origin;
    std::string description;
    // The trace's notes, where its weights came from, and the keys the mask hid from the word.
    std::vector<std::string> notes;
    Eigen::Index position = 0;  // 0-based row of the word
    Vector context;
    std::vector<Contribution> moved_most;  // other tokens, largest contribution first
};

struct Comparison {
    std::string token;
    Mode mode = Mode::plain;
    bool output = false;  // the vectors are the layer's output (several heads, or a W_o), not one context
    ContextIn a, b;
    Vector difference;              // b − a
    double norm_a = 0, norm_b = 0, norm_difference = 0;  // |a|, |b|, |b − a|
    std::optional<double> cosine;   // cos(a, b); none when a context vector is zero
};

// Compares the context vectors of `token` (first exact match, else case-insensitive) in two
// single-sequence traces. Throws UsageError when a trace lacks the token, DataError when the
// context vectors differ in length or a length or difference is beyond the double range.
Comparison compare_contexts(const Trace& a, const Trace& b, const std::string& token,
                            std::size_t top = 3);

}  // namespace attntrace
