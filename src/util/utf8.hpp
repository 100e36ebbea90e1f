// Just enough UTF-8 for labels: validation, display width in terminal columns (utf8proc), case folding.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attntrace {

// Length in bytes of the well-formed UTF-8 sequence that starts `text`, or 0 when it is not
// well-formed (stray continuation byte, overlong form, surrogate, beyond U+10FFFF, cut short).
std::size_t utf8_sequence_length(std::string_view text);

// Characters that can act on a terminal or reorder what it shows: C0 controls, DEL, C1
// controls (U+0080–U+009F, among them CSI U+009B), the line and paragraph separators
// U+2028–U+2029, and the bidirectional formatting characters (U+061C, U+200E, U+200F,
// U+202A–U+202E, U+2066–U+2069), which would reverse the numbers after a label. Nothing
// from the input that attntrace prints may hold one.
bool is_control_or_format(char32_t cp);

// The first such character in `text`, if any. Labels must not hold one: a NUL, a newline,
// an escape sequence or a bidi override would break the tables.
std::optional<char32_t> first_control_character(std::string_view text);

// Printable, single-line form of arbitrary bytes for messages and headings: C0 controls,
// DEL and invalid UTF-8 become \xNN, the other characters of is_control_or_format \uNNNN,
// and text longer than `max_chars` characters is cut with "…".
std::string printable(std::string_view text, std::size_t max_chars = 40);

// "a, b, c" for a message: each item printable() and cut at 24 characters, at most
// `max_items` of them, then "… (N more)".
std::string bounded_list(const std::vector<std::string>& items, std::size_t max_items = 8);

// The `shown` items of a list of `total`, made printable by the caller, joined with
// `separator`, then "… (N more)" for the rest: the tail of bounded_list().
std::string bounded_join(const std::vector<std::string>& shown, std::size_t total, std::string_view separator = ", ");

// Number of code points; each ill-formed byte counts as one.
std::size_t utf8_length(std::string_view text);

// Columns a terminal uses for `text`, by utf8proc (Unicode's tables, not ours): each grapheme
// cluster as wide as utf8proc's widths of its characters add up to (combining marks 0, East
// Asian wide characters and emoji such as 🚀 2, "é" 1 whether precomposed or e + U+0301), an
// emoji sequence (👩‍💻, 👍🏽, a flag) 2.
std::size_t display_width(std::string_view text);

// Appends code point `cp` (≤ U+10FFFF, not a surrogate) to `out` as UTF-8.
void append_utf8(std::string& out, char32_t cp);

// Each character's simple lower case, by utf8proc (every script that has case); ill-formed
// bytes are kept. Used for case-insensitive word look-up.
std::string fold_case(std::string_view text);

// The longest prefix of `text` that fits in `columns` display columns, cut between grapheme
// clusters (a base letter keeps its marks, an emoji sequence stays whole).
std::string_view prefix_within_width(std::string_view text, std::size_t columns);

}  // namespace attntrace
