#include "util/progress.hpp"

#include "util/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <csignal>
#include <sys/ioctl.h>
#include <unistd.h>

namespace attntrace {
namespace {

constexpr std::string_view erase_line = "\r\x1b[K";

// The signals that end the program and that a user sends while a bar shows (Ctrl-C, Ctrl-\,
// a closed terminal, kill): while it shows, each first erases the bar's line, then does what
// it did before (the default action, or the handler that removes unfinished files). Plain
// data: a handler may only call async-signal-safe functions (write, sigaction, raise).
constexpr std::array<int, 4> erasing_signals{SIGINT, SIGQUIT, SIGHUP, SIGTERM};
std::array<struct sigaction, erasing_signals.size()> previous_actions{};
std::array<bool, erasing_signals.size()> installed{};
volatile std::sig_atomic_t bar_descriptor = -1;  // the terminal a bar shows on, or -1

extern "C" void erase_bar_and_go_on(int signal) {
    const int fd = bar_descriptor;
    if (fd >= 0) {
        const ssize_t written = ::write(fd, erase_line.data(), erase_line.size());
        (void)written;  // nothing to do about a terminal that went away
    }
    for (std::size_t i = 0; i < erasing_signals.size(); ++i)
        if (erasing_signals[i] == signal) ::sigaction(signal, &previous_actions[i], nullptr);
    std::raise(signal);  // delivered, to the previous action, when this handler returns
}

// While a bar shows on `fd`: the handlers above, where the signal is not ignored.
void erase_on_signals(int fd) {
    bar_descriptor = fd;
    for (std::size_t i = 0; i < erasing_signals.size(); ++i) {
        struct sigaction old {};
        if (::sigaction(erasing_signals[i], nullptr, &old) != 0 || old.sa_handler == SIG_IGN) continue;
        struct sigaction action {};
        action.sa_handler = erase_bar_and_go_on;
        sigemptyset(&action.sa_mask);
        if (::sigaction(erasing_signals[i], &action, &previous_actions[i]) == 0) installed[i] = true;
    }
}

// The bar no longer shows: the actions as they were.
void stop_erasing_on_signals() {
    bar_descriptor = -1;
    for (std::size_t i = 0; i < erasing_signals.size(); ++i) {
        if (!installed[i]) continue;
        ::sigaction(erasing_signals[i], &previous_actions[i], nullptr);
        installed[i] = false;
    }
}

std::size_t terminal_columns(int fd) {
    winsize size{};
    return ::ioctl(fd, TIOCGWINSZ, &size) == 0 ? size.ws_col : 0;
}

}  // namespace

std::string clock_text(double seconds) {
    const auto whole = static_cast<long long>(std::llround(std::max(0.0, seconds)));
    if (whole < 3600) return fmt::format("{}:{:02}", whole / 60, whole % 60);
    return fmt::format("{}:{:02}:{:02}", whole / 3600, whole / 60 % 60, whole % 60);
}

ProgressBar::Screen ProgressBar::standard_error() {
    Screen screen;
    screen.terminal = ::isatty(STDERR_FILENO) == 1;
    if (screen.terminal) screen.columns = terminal_columns(STDERR_FILENO);
    return screen;
}

ProgressBar::ProgressBar(std::string label) : ProgressBar(std::move(label), standard_error()) {}

ProgressBar::ProgressBar(std::string label, Screen screen)
    : label_(std::move(label)), screen_(std::move(screen)), start_(screen_.now()), last_(start_) {}

ProgressBar::~ProgressBar() {
    if (!drawn_) return;
    std::fwrite(erase_line.data(), 1, erase_line.size(), screen_.file);  // leave the terminal as it was
    std::fflush(screen_.file);
    stop_erasing_on_signals();
}

std::string ProgressBar::line(const std::string& label, std::size_t done, std::size_t total, double elapsed,
                              std::size_t columns) {
    const std::size_t percent = total == 0 ? 100 : done * 100 / total;
    std::string tail = fmt::format(" · {} elapsed", clock_text(elapsed));
    std::string eta;
    if (done > 0 && done < total)
        eta = fmt::format(" · ETA {}", clock_text(elapsed * static_cast<double>(total - done) / static_cast<double>(done)));
    // One column short of the width: a line that fills the last column makes some terminals
    // wrap, and "\r" would then redraw the next line instead.
    const std::size_t room = (columns == 0 ? 80 : columns) - 1;
    const auto width_of = [&](std::size_t bar) {
        return display_width(label) + 2 + bar + 2 + 4 + display_width(tail) + display_width(eta);
    };
    constexpr std::size_t widest = 30, narrowest = 10;
    if (width_of(narrowest) > room) tail.clear();
    if (width_of(narrowest) > room) eta.clear();
    if (width_of(narrowest) > room) return fmt::format("{} {}%", label, percent);
    std::size_t bar = widest;
    while (width_of(bar) > room) --bar;
    const std::size_t filled = total == 0 ? bar : done * bar / total;
    return fmt::format("{} [{}{}] {:3}%{}{}", label, std::string(filled, '#'), std::string(bar - filled, '.'), percent,
                       tail, eta);
}

bool ProgressBar::due() const {
    if (!screen_.terminal) return false;
    const auto now = screen_.now();
    return now - start_ >= std::chrono::seconds(1) && (!drawn_ || now - last_ >= std::chrono::milliseconds(100));
}

void ProgressBar::update(std::size_t done, std::size_t total) {
    if (total == 0 || !due()) return;
    const auto now = screen_.now();
    last_ = now;
    if (!drawn_) erase_on_signals(::fileno(screen_.file));
    drawn_ = true;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const std::string text = line(label_, done, total, elapsed, screen_.columns);
    fmt::print(screen_.file, "\r{}\x1b[K", text);
    std::fflush(screen_.file);
}

}  // namespace attntrace
