// The command line: each command's options added to CLI11, with what runs when it is chosen.
// One translation unit holds all of it (CLI11 is a heavy header).
#pragma once

namespace attntrace {

// Parses the arguments and runs the command they choose; returns the exit status.
int run_command_line(int argc, char** argv);

}  // namespace attntrace
