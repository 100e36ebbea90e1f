// What a JSON parser that stopped at a place of the text says about it, so that a learner can
// act on the message: what stands there, shown whole ("found 'True'", "found a single quote"),
// and the likely mistake behind it, where the place makes one likely (a comment, single or
// typographic quotes, Python's True and None, a number written ".5", a missing comma).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace attntrace {

// What the parser was reading when it met something else: a hint fits some mistakes only in
// some places (an unquoted word is a key in one place and a value in another).
enum class JsonSlot { value, key, colon, after_item, after_document };

// The bare word (letters, digits, '_'; starting with a letter or '_') at `at` of `text`, or "".
std::string_view json_word_at(std::string_view text, std::size_t at);

// The characters of a number-like run at `at` (digits, signs, points, exponents), at most 24.
std::string_view number_text_at(std::string_view text, std::size_t at);

// Whether `text` starts with one of the typographic quotes a word processor puts in place of
// ' and ": ‘ ’ “ ” „.
bool is_typographic_quote(std::string_view text);

// NaN, Infinity or inf, in any case: what other languages print for numbers JSON cannot hold.
bool is_not_finite_word(std::string_view word);

// What stands at `at` (< text.size()), for "found …": a word or a number whole, the two
// characters that open a comment, or one character whole ('“', 'é'); control characters and
// bytes that are not UTF-8 escaped by printable().
std::string shown_at(std::string_view text, std::size_t at);

// One clause on the likely mistake behind what stands at `at` (< text.size()) where the parser
// expected `slot`, or "" when there is none to give.
std::string hint_at(std::string_view text, std::size_t at, JsonSlot slot);

// For the text of a number JSON does not take: ".5" → write 0.5, "+1" → write 1, "1." → write
// 1.0, "01" → write 1, with the reason; "" when the text is no number even after that change.
std::string number_hint(std::string_view written);

}  // namespace attntrace
