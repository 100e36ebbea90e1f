// Writing the finished output. Output is produced whole before any byte is written, so an
// error never leaves half a result on stdout.
#pragma once

#include <string>
#include <string_view>

namespace attntrace {

// The reader of a pipe went away (EPIPE with SIGPIPE ignored): not an error of ours, so the
// program ends quietly, like one killed by SIGPIPE.
struct BrokenPipe {};
inline constexpr int exit_broken_pipe = 141;  // 128 + SIGPIPE, what a shell shows either way

// Writes `text` to PATH all or nothing: into a temporary file in the same folder, then renamed
// over PATH. On any error the temporary is removed, PATH is untouched, and DataError("cannot
// write PATH: …") is thrown.
void write_file_atomically(const std::string& path, std::string_view text);

// Writes `text` to standard output. Throws BrokenPipe when the reader has gone, and
// DataError("cannot write output: …") when the write fails otherwise (disk full, bad fd).
void write_stdout(std::string_view text);

}  // namespace attntrace
