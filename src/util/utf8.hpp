// Just enough UTF-8 for labels: validation, display width in terminal columns, case folding.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace attntrace {

// Length in bytes of the well-formed UTF-8 sequence that starts `text`, or 0 when it is not
// well-formed (stray continuation byte, overlong form, surrogate, beyond U+10FFFF, cut short).
std::size_t utf8_sequence_length(std::string_view text);

// The first control character (U+0000–U+001F, U+007F–U+009F) in `text`, if any. Labels must
// not hold one: a NUL, a newline or an escape sequence would break the tables.
std::optional<char32_t> first_control_character(std::string_view text);

// Number of code points; each ill-formed byte counts as one.
std::size_t utf8_length(std::string_view text);

// Columns a terminal uses for `text`: combining marks take 0, East Asian wide characters 2,
// everything else 1 ("é" is 1 column whether precomposed or e + U+0301).
std::size_t display_width(std::string_view text);

// Appends code point `cp` (≤ U+10FFFF, not a surrogate) to `out` as UTF-8.
void append_utf8(std::string& out, char32_t cp);

// Lower case for ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic capitals; other
// characters are kept. Used for case-insensitive word look-up.
std::string fold_case(std::string_view text);

// The longest prefix of `text` that fits in `columns` display columns, cut at a character
// boundary.
std::string_view prefix_within_width(std::string_view text, std::size_t columns);

}  // namespace attntrace
