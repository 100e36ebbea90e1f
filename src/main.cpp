// attntrace: trace the attention mechanism step by step. This file only starts the command
// line (src/cli/): options → a request → a command (load → trace → render).
#include "cli/commands.hpp"

int main(int argc, char** argv) { return attntrace::run_command_line(argc, argv); }
