// The examples of data/, compiled into the binary (the build turns each data/NAME.json into
// an entry here), so `--example NAME` works from any folder.
#pragma once

#include <span>
#include <string_view>

namespace attntrace {

struct Example {
    std::string_view name;  // the file name without .json
    std::string_view json;  // its whole text
};

inline constexpr std::string_view default_example = "your_journey";

std::span<const Example> examples();  // sorted by name
const Example* find_example(std::string_view name);

}  // namespace attntrace
