// Where input text comes from: a file, standard input, or a built-in example.
#pragma once

#include "input/limits.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace attntrace {

namespace detail {
class Mapping;
}

struct InputText {
    std::string_view text;       // valid as long as this InputText lives
    std::string origin;          // for messages: the path, "<stdin>" or "example:NAME"
    std::shared_ptr<const void> storage;  // what holds the text: a mapping, a buffer, or nothing

    // A mapped file that another program shortened while it was read gives zeros where its
    // lost pages were (not SIGBUS); then this throws DataError saying so. Call it after the
    // text was read, also when reading it failed (the zeros may be what failed).
    void require_unchanged() const;

    const detail::Mapping* mapping = nullptr;  // a mapped file (held by `storage`)
};

// The same check where the bytes are used: when `storage` (an InputText's, or what a Tensor
// read from one keeps) is a mapped file that another program has shortened since it was
// mapped, throws the same DataError naming `origin`; otherwise (a buffer, a copy, nothing)
// does nothing. Every reader of mapped bytes calls it after reading them and before anything
// computed from them is used, so that zeros standing in for lost pages never reach a result.
void require_intact(const std::shared_ptr<const void>& storage, std::string_view origin);

// Reads PATH, standard input for "-", or the built-in example NAME for "example:NAME" (the
// same name messages and JSON give it). Throws DataError when it cannot be read, or when it
// is larger than `max_bytes`, saying what set that limit (`limit`: --max-input, unless the
// command has no such option).
inline constexpr std::string_view max_input_limit = "the limit set by --max-input";
InputText read_input(const std::string& path, std::uint64_t max_bytes = default_max_input_bytes,
                     std::string_view limit = max_input_limit);

// With no input named: standard input, read as jq reads it, when it is a pipe or a file;
// else nothing, and the caller takes its default. A terminal, /dev/null (a device) or a
// closed standard input is not read. What was read is nothing too when it is empty or white
// space: a notebook's kernel (Jupyter) starts every command with an empty pipe, and its
// users mean no input. `empty`, when given, is set when that is why.
std::optional<InputText> piped_input(std::uint64_t max_bytes, bool* empty = nullptr);

// A built-in example. Throws UsageError naming the known examples when there is none.
InputText example_input(std::string_view name);

// What a command whose INPUT may be left out reads (trace, decode): PATH when named; else
// the built-in example `example` when one was asked for (--example); else what is piped in;
// else the built-in example your_journey. `*empty_pipe` is set when standard input was an
// empty pipe (a notebook kernel's), which the command says once its run has succeeded,
// with empty_pipe_note.
InputText named_piped_or_example(const std::optional<std::string>& path, const std::optional<std::string>& example,
                                 std::uint64_t max_bytes, bool* empty_pipe);

// "standard input is empty, so this is the built-in example your_journey (name an INPUT, or
// pipe one in, to trace your own)", with `verb` for "trace".
std::string empty_pipe_note(std::string_view verb);

}  // namespace attntrace
