// attntrace step on a real terminal: raw mode on the terminal's descriptor, the alternate screen,
// the frames drawn in place, redrawn on a resize (SIGWINCH), and the terminal given back as it
// was on every way out: q, Ctrl-C, SIGTERM, SIGHUP, SIGINT, an error.
#pragma once

#include "stepper/stepper.hpp"

#include <string>

namespace attntrace::stepper {

struct SessionResult {
    bool interrupted = false;     // Ctrl-C
    double slowest_redraw = 0;    // seconds, the slowest key's redraw (for the benchmark's notes)
};

// Raw mode on a terminal, its alternate screen (`screen`) and the signal handlers that give it
// back, for as long as it lives: the destructor restores the mode as it was, leaves the screen
// and resets the handlers, on a return and on an exception alike (an error's way out).
class RawTerminal {
public:
    RawTerminal(int fd, bool screen);  // throws DataError when `fd` is not a terminal
    ~RawTerminal();
    RawTerminal(const RawTerminal&) = delete;
    RawTerminal& operator=(const RawTerminal&) = delete;
};

// Runs `stepper` on terminal descriptor `fd` until it finishes. `plain`: no screen drawn, one
// line per key (a screen reader's view). Throws DataError when the terminal cannot be set up.
SessionResult run_session(Stepper& stepper, int fd, bool plain);

// The terminal's size in columns and rows (80×24 when it cannot say).
std::pair<int, int> terminal_size(int fd);

}  // namespace attntrace::stepper
