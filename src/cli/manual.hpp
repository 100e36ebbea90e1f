// The command line as data, and what is made from it: the man page and the completion
// scripts for bash, zsh and fish. cli/commands.cpp fills the data by walking the same CLI11
// definitions that print --help, and the build runs `attntrace --man` and `attntrace
// --completions SHELL`, so neither the page nor the scripts can drift from the options.
// No CLI11 here: it stays in one translation unit.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace attntrace {

// What the value of an option (or a positional) is, for the completion scripts.
enum class Completes {
    nothing,   // a number, a size, a word: nothing to offer
    choice,    // one of `choices`
    list,      // comma-separated `choices`
    file,      // any file
    input,     // an input: a JSON file, example:NAME or -
    example,   // the name of a built-in example
};

struct OptionDoc {
    std::vector<std::string> flags;  // "-m", "--mode"; empty for a positional
    std::string positional;          // "INPUT"
    std::string metavar;             // "FILE", "N", "plain|self|causal|bahdanau"; empty for a flag
    std::string help;
    std::string group;               // "Input", "Attention", …
    std::vector<std::string> choices;
    Completes completes = Completes::nothing;
};

struct UsageExample {
    std::string command;  // "attntrace -m causal -s masked,weights"
    std::string says;     // what it shows
};

struct CommandDoc {
    std::string name;     // "" for the main command, else the subcommand's
    std::string summary;  // one line
    std::string usage;    // "attntrace similarity [OPTIONS] INPUT"
    std::vector<OptionDoc> options;
    std::vector<UsageExample> examples;
};

struct ProgramDoc {
    std::string version;                     // "0.2.0"
    std::vector<std::string> description;    // paragraphs
    CommandDoc main;
    std::vector<CommandDoc> subcommands;
    std::vector<std::string> example_names;  // the built-in examples
    std::vector<std::string> groups;         // the main command's option groups, in order
};

// Text for --help, laid out in display columns (utf8: "…" is one column, "é" one, "🚀" two).
// `text` cut at spaces into lines of at most `room` columns, never inside a word (a word wider
// than the room is a line of its own). With `shell`, `text` is a command: it is cut only
// outside quotes, and every line but the last ends in " \\", so that the lines still run as one
// command when pasted.
std::vector<std::string> help_lines(std::string_view text, std::size_t room, bool shell = false);
// One row of two columns: `left`, then `text` from `column` on, wrapped to `width`; `text`
// starts on the next line when `left` reaches the column, and goes under `left` when the
// terminal is too narrow for a column of text.
std::string help_row(std::string_view left, std::string_view text, std::size_t column, std::size_t width);
// The lines of an EXAMPLES section for --help, `width` columns wide: each command (cut as a
// shell command), then what it shows.
std::string examples_text(const std::vector<UsageExample>& examples, std::size_t width);

std::string man_page(const ProgramDoc& doc);
std::string bash_completion(const ProgramDoc& doc);
std::string zsh_completion(const ProgramDoc& doc);
std::string fish_completion(const ProgramDoc& doc);

}  // namespace attntrace
