// What we need to know about the terminal.
#pragma once

#include <cstddef>

namespace attntrace {

bool stdout_is_terminal();

// --color auto: colour when stdout is a terminal and NO_COLOR is unset or empty (no-color.org).
bool color_wanted();

// Columns for tables: the terminal's width when stdout is one, else $COLUMNS when set,
// else 0 (no limit: a pipe or a file gets whole tables).
std::size_t output_width();

}  // namespace attntrace
