// step_ncurses: what ncursesw would give attntrace step against its own small ANSI layer, for
// the same frames: the bytes a terminal is sent per key and the time from a key press to those
// bytes, for moves on the weights and for changes of stage, at 80×24 and n = 12 and 64. The
// frames are laid out once by stepper::draw; ours are sent whole (frame_ansi) or as the lines
// that changed (frame_ansi_changes, as a session sends them), and ncurses paints the same spans
// (reverse, underline, bold) into its screen and refreshes, sending only the cells that changed. A benchmark for docs/stepper.md; not part of the CMake build or of ctest:
//
//   B=build   # a Release build of this tree; libattntrace_core.a is in it
//   F="-O2 -DNDEBUG -std=c++20 -fopenmp -DEIGEN_DONT_PARALLELIZE -DEIGEN_MAX_ALIGN_BYTES=64 -DFMT_SHARED"
//   g++ $F -Isrc -isystem /usr/include/eigen3 tests/perf/step_ncurses.cpp
//       $B/libattntrace_core.a -lfmt -lutf8proc -lz -lncursesw -o /tmp/step_ncurses      (one line)
//   TERM=xterm-256color /tmp/step_ncurses
//
// (libncurses-dev from Debian.) The input: n tokens of d = 16 numbers from a fixed seed, self mode.
#include "stepper/frame.hpp"
#include "stepper/stepper.hpp"
#include "step_input.hpp"

#include <fmt/format.h>

#include <clocale>
#include <cstdio>
#include <ncursesw/curses.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <vector>

using namespace attntrace;

namespace {

using bench::step_input;

long size_of(std::FILE* f) {
    std::fflush(f);
    struct stat st {};
    fstat(fileno(f), &st);
    return static_cast<long>(st.st_size);
}

struct Result {
    std::vector<double> ms;
    long bytes = 0;
};

// Our layer: the lines that changed (as session.cpp sends them), or each frame whole.
Result ours(stepper::Stepper& s, const std::vector<stepper::Key>& keys, std::FILE* out, bool whole) {
    Result r;
    const long before = size_of(out);
    std::vector<stepper::Line> shown;
    for (const auto& key : keys) {
        const auto began = std::chrono::steady_clock::now();
        s.press(key);
        auto frame = stepper::draw(s, 80, 24);
        const std::string bytes = whole ? stepper::frame_ansi(frame) : stepper::frame_ansi_changes(shown, frame);
        shown = std::move(frame);
        std::fwrite(bytes.data(), 1, bytes.size(), out);
        std::fflush(out);
        r.ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began).count());
    }
    r.bytes = size_of(out) - before;
    return r;
}

// ncursesw: the same spans painted into its screen, and only the changes sent.
Result curses(stepper::Stepper& s, const std::vector<stepper::Key>& keys, std::FILE* out) {
    Result r;
    const long before = size_of(out);
    for (const auto& key : keys) {
        const auto began = std::chrono::steady_clock::now();
        s.press(key);
        const auto frame = stepper::draw(s, 80, 24);
        for (std::size_t y = 0; y < frame.size(); ++y) {
            move(static_cast<int>(y), 0);
            for (const auto& span : frame[y]) {
                const attr_t a = span.style == stepper::Span::cursor ? A_REVERSE
                                 : span.style == stepper::Span::mark ? A_UNDERLINE
                                 : span.style == stepper::Span::plain ? A_NORMAL
                                                                      : A_BOLD;
                attrset(a);
                addstr(span.text.c_str());
            }
            attrset(A_NORMAL);
            clrtoeol();
        }
        refresh();
        std::fflush(out);
        r.ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began).count());
    }
    r.bytes = size_of(out) - before;
    return r;
}

void report(const char* layer, const char* what, Eigen::Index n, Result r) {
    std::sort(r.ms.begin(), r.ms.end());
    fmt::print("n = {:>3}  {:<8} {:<22} median {:.3f} ms, slowest {:.3f} ms, {:.0f} bytes a key\n", n, layer, what,
               r.ms[r.ms.size() / 2], r.ms.back(), static_cast<double>(r.bytes) / static_cast<double>(r.ms.size()));
}

}  // namespace

int main() {
    std::setlocale(LC_ALL, "C.UTF-8");
    std::FILE* screen = std::tmpfile();
    std::FILE* no_keys = std::fopen("/dev/null", "r");
    SCREEN* term = newterm(nullptr, screen, no_keys);
    if (!term) return 1;
    resizeterm(24, 80);
    const stepper::Key right{stepper::Key::character, "l"}, down{stepper::Key::character, "j"};
    const stepper::Key left{stepper::Key::character, "h"}, up{stepper::Key::character, "k"};
    const stepper::Key next{stepper::Key::tab, {}};
    for (const Eigen::Index n : {12, 64}) {
        TraceOptions options;
        options.mode = Mode::self;
        std::vector<stepper::Key> moves, stages;
        for (int i = 0; i < 200; ++i) moves.push_back(i % 20 < 10 ? (i % 2 ? right : down) : (i % 2 ? left : up));
        for (int i = 0; i < 200; ++i) stages.push_back(next);
        for (int round = 0; round < 2; ++round) {  // interleaved: ours, ncurses, ours, ncurses
            for (const char* layer : {"whole", "changes", "ncursesw"}) {
                const std::string name = layer;
                stepper::Stepper s(step_input(n), options, "input", 4);
                for (int i = 0; i < 10; ++i) s.press(next);  // to the weights
                clear();
                refresh();
                Result m = name == "ncursesw" ? curses(s, moves, screen) : ours(s, moves, screen, name == "whole");
                Result t = name == "ncursesw" ? curses(s, stages, screen) : ours(s, stages, screen, name == "whole");
                if (round == 1) {
                    report(layer, "a move on the weights", n, m);
                    report(layer, "the next stage (Tab)", n, t);
                }
            }
        }
    }
    endwin();
    delscreen(term);
}
