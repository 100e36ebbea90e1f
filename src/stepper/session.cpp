#include "stepper/session.hpp"

#include "core/error.hpp"
#include "stepper/frame.hpp"

#include <fmt/format.h>

#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>

namespace attntrace::stepper {
namespace {

// What a signal handler needs to give the terminal back: only plain data, set before the
// handlers are installed.
struct Saved {
    int fd = -1;
    termios mode{};
    bool screen = false;  // the alternate screen is in use
};
Saved saved;
volatile std::sig_atomic_t resized = 0;

constexpr char enter_screen[] = "\x1b[?1049h\x1b[?25l";
constexpr char leave_screen[] = "\x1b[0m\x1b[?25h\x1b[?1049l";

void write_all(int fd, const char* data, std::size_t size) {
    while (size > 0) {
        const ssize_t n = ::write(fd, data, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        data += n, size -= static_cast<std::size_t>(n);
    }
}

// Async-signal-safe: the screen left, the mode restored.
void restore_terminal() {
    if (saved.fd < 0) return;
    if (saved.screen) write_all(saved.fd, leave_screen, sizeof leave_screen - 1);
    ::tcsetattr(saved.fd, TCSAFLUSH, &saved.mode);
}

extern "C" void on_fatal_signal(int signal) {
    restore_terminal();
    std::signal(signal, SIG_DFL);
    std::raise(signal);
}

extern "C" void on_resize(int) { resized = 1; }

void install(int signal, void (*handler)(int)) {
    struct sigaction action {};
    action.sa_handler = handler;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;  // no SA_RESTART: a resize wakes the wait for a key
    sigaction(signal, &action, nullptr);
}

}  // namespace

RawTerminal::RawTerminal(int fd, bool screen) {
    if (::tcgetattr(fd, &saved.mode) != 0) throw DataError(fmt::format("cannot set up the terminal: {}", std::strerror(errno)));
    saved.fd = fd;
    termios raw = saved.mode;
    raw.c_iflag &= ~static_cast<tcflag_t>(BRKINT | ICRNL | INPCK | ISTRIP | IXON);
    raw.c_oflag &= ~static_cast<tcflag_t>(OPOST);
    raw.c_cflag |= CS8;
    raw.c_lflag &= ~static_cast<tcflag_t>(ECHO | ICANON | IEXTEN | ISIG);
    raw.c_cc[VMIN] = 0, raw.c_cc[VTIME] = 0;
    for (const int s : {SIGTERM, SIGHUP, SIGINT, SIGQUIT}) install(s, on_fatal_signal);
    install(SIGWINCH, on_resize);
    ::tcsetattr(fd, TCSAFLUSH, &raw);
    if (screen) write_all(fd, enter_screen, sizeof enter_screen - 1), saved.screen = true;
}

RawTerminal::~RawTerminal() {
    restore_terminal();
    for (const int s : {SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGWINCH}) std::signal(s, SIG_DFL);
    saved = Saved{};
}

std::pair<int, int> terminal_size(int fd) {
    winsize size{};
    if (::ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0 && size.ws_row > 0) return {size.ws_col, size.ws_row};
    return {80, 24};
}

SessionResult run_session(Stepper& stepper, int fd, bool plain) {
    SessionResult result;
    RawTerminal terminal(fd, !plain);
    std::vector<Line> shown;  // what the terminal shows: only the lines that change are sent
    const auto draw_now = [&] {
        if (plain) {
            const std::string line = stepper.plain_line() + "\r\n";
            write_all(fd, line.data(), line.size());
            return;
        }
        const auto [width, height] = terminal_size(fd);
        std::vector<Line> frame = draw(stepper, width, height);
        const std::string screen = frame_ansi_changes(shown, frame);
        write_all(fd, screen.data(), screen.size());
        shown = std::move(frame);
    };
    draw_now();
    std::string pending;
    char buffer[256];
    while (!stepper.finished()) {
        pollfd wait{fd, POLLIN, 0};
        const int ready = ::poll(&wait, 1, -1);
        if (resized) {
            resized = 0;
            shown.clear();  // a new size: the whole screen again
            if (!plain) draw_now();
        }
        if (ready <= 0) continue;  // a signal woke it
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n == 0) break;  // the terminal went away
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            break;
        }
        for (const Key& key : decode_terminal_bytes(std::string_view(buffer, static_cast<std::size_t>(n)), pending)) {
            const auto began = std::chrono::steady_clock::now();
            if (key.kind == Key::interrupt) result.interrupted = true;
            stepper.press(key);
            if (stepper.finished()) break;
            draw_now();
            result.slowest_redraw = std::max(
                result.slowest_redraw, std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
        }
    }
    return result;
}

}  // namespace attntrace::stepper
