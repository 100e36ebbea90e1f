// Small text helpers for tests that read output.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace text {

inline std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

}  // namespace text
