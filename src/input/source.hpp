// Where input text comes from: a file, standard input, or a built-in example.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace attntrace {

// Larger inputs are refused before they exhaust memory.
inline constexpr std::size_t max_input_bytes = std::size_t{1} << 30;  // 1 GiB

struct InputText {
    std::string_view text;       // valid as long as this InputText lives
    std::string origin;          // for messages: the path, "<stdin>" or "example:NAME"
    std::shared_ptr<const void> storage;  // what holds the text: a mapping, a buffer, or nothing
};

// Reads PATH, standard input for "-", or the built-in example NAME for "example:NAME" (the
// same name messages and JSON give it). Throws DataError when it cannot be read.
InputText read_input(const std::string& path);

// A built-in example. Throws UsageError naming the known examples when there is none.
InputText example_input(std::string_view name);

}  // namespace attntrace
