// What we need to know about the terminal.
#pragma once

#include <cstddef>

namespace attntrace {

bool stdout_is_terminal();

// Columns for tables: the terminal's width when stdout is one, else $COLUMNS when set,
// else 0 (no limit: a pipe or a file gets whole tables).
std::size_t output_width();

}  // namespace attntrace
