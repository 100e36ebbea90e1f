// What we need to know about the terminal, asked of the descriptor the output goes to: a
// file named by -o is not a terminal even when the command was typed in one.
#pragma once

#include <cstddef>
#include <string>

namespace attntrace {

bool is_terminal(int fd);

// --color auto: colour when `fd` is a terminal, NO_COLOR is unset or empty (no-color.org) and
// TERM is not "dumb".
bool color_wanted(int fd);

// Columns for tables written to `fd`: the terminal's width when it is one; else, for standard
// output, $COLUMNS when set; else 0 (no limit: a pipe or a file gets whole tables).
std::size_t output_width(int fd, bool is_stdout);

// `word` as one word of a POSIX shell's command line: as it is when nothing in it is special,
// else in single quotes; with a control character (a newline, an escape) in bash's $'…' form,
// so that a printed command neither breaks its line nor sends the terminal a control sequence.
std::string shell_word(const std::string& word);

}  // namespace attntrace
