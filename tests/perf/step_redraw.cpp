// step_redraw: how long attntrace step takes from a key press to the bytes of the redrawn
// screen (the key handled, the frame laid out and turned into what a terminal is sent), for a
// move, a change of stage and an edit that traces every stage again; at n = 12 and n = 64.
// A benchmark for docs/stepper.md; not part of the CMake build or of ctest. It links the core
// library of a built tree:
//
//   B=build   # a Release build of this tree; libattntrace_core.a is in it
//   F="-O2 -DNDEBUG -std=c++20 -fopenmp -DEIGEN_DONT_PARALLELIZE -DEIGEN_MAX_ALIGN_BYTES=64 -DFMT_SHARED"
//   g++ $F -Isrc -isystem /usr/include/eigen3 tests/perf/step_redraw.cpp
//       $B/libattntrace_core.a -lfmt -lutf8proc -lz -o /tmp/step_redraw      (one command line)
//   /tmp/step_redraw          one line per case: the median and the slowest key, in ms
//
// The input: n tokens of d = 16 numbers drawn from a fixed seed, self mode, generated weights.
#include "stepper/frame.hpp"
#include "stepper/stepper.hpp"
#include "step_input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <vector>

using namespace attntrace;

namespace {

using bench::step_input;

// Each key of `keys` pressed and the screen drawn; the milliseconds of each.
std::vector<double> time_keys(stepper::Stepper& s, const std::vector<std::vector<stepper::Key>>& keys) {
    std::vector<double> ms;
    std::size_t bytes = 0;
    for (const auto& group : keys) {
        const auto began = std::chrono::steady_clock::now();
        for (const auto& key : group) s.press(key);
        bytes += stepper::frame_ansi(stepper::draw(s, 80, 24)).size();
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began).count());
    }
    if (bytes == 0) ms.clear();
    return ms;
}

void report(const char* what, Eigen::Index n, std::vector<double> ms) {
    std::sort(ms.begin(), ms.end());
    fmt::print("n = {:>3}  {:<34} median {:.3f} ms, slowest {:.3f} ms over {} keys\n", n, what, ms[ms.size() / 2], ms.back(),
               ms.size());
}

}  // namespace

int main() {
    const stepper::Key right{stepper::Key::character, "l"}, down{stepper::Key::character, "j"};
    const stepper::Key next{stepper::Key::tab, {}}, enter{stepper::Key::enter, {}}, edit{stepper::Key::character, "e"};
    for (const Eigen::Index n : {12, 64}) {
        TraceOptions options;
        options.mode = Mode::self;
        stepper::Stepper s(step_input(n), options, "input", 4);
        for (int i = 0; i < 10; ++i) s.press(next);  // to the weights: the widest arithmetic
        std::vector<std::vector<stepper::Key>> moves, stages, edits;
        for (int i = 0; i < 200; ++i) moves.push_back({i % 2 ? right : down});
        for (int i = 0; i < 200; ++i) stages.push_back({next});
        report("a move (j or l) on the weights", n, time_keys(s, moves));
        report("the next stage (Tab)", n, time_keys(s, stages));
        stepper::Stepper e(step_input(n), options, "input", 4);  // on the inputs: e, a number, Enter
        for (int i = 0; i < 100; ++i)
            edits.push_back({edit, {stepper::Key::character, i % 2 ? "1" : "2"}, enter});
        report("an edit (e 1 Enter): all retraced", n, time_keys(e, edits));
    }
}
