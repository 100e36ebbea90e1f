#include "util/progress.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <unistd.h>

namespace attntrace {

ProgressBar::ProgressBar(std::string label)
    : label_(std::move(label)), terminal_(::isatty(STDERR_FILENO) == 1), start_(Clock::now()), last_(start_) {}

ProgressBar::~ProgressBar() {
    if (drawn_) std::fputs("\r\x1b[K", stderr);  // leave the terminal as it was
}

void ProgressBar::update(std::size_t done, std::size_t total) {
    if (!terminal_ || total == 0) return;
    const auto now = Clock::now();
    if (now - start_ < std::chrono::seconds(1) || (drawn_ && now - last_ < std::chrono::milliseconds(100))) return;
    last_ = now;
    drawn_ = true;
    constexpr std::size_t width = 30;
    const std::size_t filled = done * width / total;
    fmt::print(stderr, "\r{} [{}{}] {:3}%", label_, std::string(filled, '#'), std::string(width - filled, '.'),
               done * 100 / total);
    std::fflush(stderr);
}

}  // namespace attntrace
