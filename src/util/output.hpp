// Writing the finished output. Output is produced whole before any byte is written, so an
// error never leaves half a result on stdout.
#pragma once

#include <string_view>

namespace attntrace {

// Writes `text` to standard output and flushes. Throws DataError("cannot write output: …")
// when the write fails (disk full, closed descriptor).
void write_stdout(std::string_view text);

}  // namespace attntrace
