// The tokens of a sequence and their vectors: "sentence" (split into words) or "tokens", and
// an object word → vector (looked up by spelling, then ignoring case; every unknown word named
// at once) or an array of vectors aligned with the tokens.
#pragma once

#include "core/problem.hpp"
#include "input/reader.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace attntrace {

// Tokens plus their vectors, from {"sentence"|"tokens", VECTORS_KEY: object | array} at
// `pointer`. An object maps words to vectors (only where `allow_word_map`; its words become
// `vocabulary` when given); an array is aligned with the tokens. Punctuation without a vector
// is dropped, with a note in `notes`.
Sequence read_sequence(const Reader& in, const Json& object, const std::string& pointer,
                       std::string_view vectors_key, bool allow_word_map, Vocabulary* vocabulary,
                       std::vector<std::string>& notes);

}  // namespace attntrace
