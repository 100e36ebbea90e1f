// "Did you mean …?": the known names closest to a misspelt one, by edit distance.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attntrace {

// Longer words are not compared: the distance costs length × length, and a word that long
// is not a typo of a short one.
inline constexpr std::size_t max_suggested_chars = 64;

// Up to `count` indices of the candidates (candidate(0) … candidate(total − 1)) closest to
// `word` by case-insensitive edit distance, closest first; equal distances keep candidate
// order. The work is bounded: a word or candidate longer than max_suggested_chars is left
// out, and the search stops after about `max_pairs` character pairs (then the closest of the
// candidates seen so far are given); a message that suggests for several words shares
// suggestion_pairs out among them.
inline constexpr std::size_t suggestion_pairs = 50'000'000;
std::vector<std::size_t> closest(std::string_view word, std::size_t total,
                                 const std::function<std::string_view(std::size_t)>& candidate, std::size_t count,
                                 std::size_t max_pairs = suggestion_pairs);

// The same over a list of names, returning the names.
std::vector<std::string> closest_names(std::string_view word, const std::vector<std::string>& names, std::size_t count);

// The name `word` is likely a misspelling of: the closest, when at most a third of its
// characters (at least one) differ, two neighbours swapped counting as one; else the one name
// that a word of 3 characters or more begins ("stream" for streaming); nothing otherwise
// ("foo" is no typo of "plain").
std::optional<std::string> likely_typo(std::string_view word, const std::vector<std::string>& names);
// The same over candidate(0) … candidate(total − 1), the work bounded as closest()'s (a list of
// a million tokens is searched for about `max_pairs` character pairs, then given up on).
std::optional<std::string> likely_typo(std::string_view word, std::size_t total,
                                       const std::function<std::string_view(std::size_t)>& candidate,
                                       std::size_t max_pairs = suggestion_pairs);

}  // namespace attntrace
