// The command line: each command's options added to CLI11, with what runs when it is chosen.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace attntrace {

// What a parsed command does: returns the exit status.
using Runner = std::function<int()>;

struct Command {
    CLI::App* app;  // the subcommand, or the top level for the main job
    Runner run;
};

// The main job (trace one input), on the top-level app.
Command add_trace_command(CLI::App& app);
// The subcommands, in the order --help lists them.
std::vector<Command> add_subcommands(CLI::App& app);

// Prints "attntrace: error: MESSAGE" as one bounded line on stderr; returns `code`.
int fail(int code, std::string message);

// Runs `job` on standard output as every command does (errors reported, a reader that went
// away ending quietly); returns the exit status. For --help and --version.
int write_to_stdout(const std::function<void(std::ostream&)>& job);

}  // namespace attntrace
