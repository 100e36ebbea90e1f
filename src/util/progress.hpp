// A progress bar on stderr for long work: shown only when stderr is a terminal, and only once
// the work has run for about a second, redrawn at most ten times a second, erased at the end.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace attntrace {

class ProgressBar {
public:
    explicit ProgressBar(std::string label);
    ~ProgressBar();
    ProgressBar(const ProgressBar&) = delete;
    ProgressBar& operator=(const ProgressBar&) = delete;

    void update(std::size_t done, std::size_t total);

private:
    using Clock = std::chrono::steady_clock;
    std::string label_;
    bool terminal_;
    bool drawn_ = false;
    Clock::time_point start_;
    Clock::time_point last_;
};

}  // namespace attntrace
