// A progress bar on stderr for long work, in hyperfine's manner: shown only when stderr is a
// terminal, and only once the work has run for about a second; redrawn at most ten times a
// second with the time elapsed and an estimate of the time left; fitted to the terminal's
// width; erased at the end, and by a signal that ends the program (Ctrl-C) while it shows.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <string>

namespace attntrace {

// "0:07", "12:34", "1:02:03": a duration in whole seconds, as the bar shows it.
std::string clock_text(double seconds);

class ProgressBar {
public:
    using Clock = std::chrono::steady_clock;

    // Where the bar goes and how time is read: stderr and the steady clock, or, for tests, a
    // file that is treated as a terminal `columns` wide and a clock of their own.
    struct Screen {
        std::FILE* file = stderr;
        bool terminal = false;
        std::size_t columns = 0;  // 0: unknown (80 assumed)
        std::function<Clock::time_point()> now = [] { return Clock::now(); };
    };
    static Screen standard_error();

    explicit ProgressBar(std::string label);
    ProgressBar(std::string label, Screen screen);
    ~ProgressBar();
    ProgressBar(const ProgressBar&) = delete;
    ProgressBar& operator=(const ProgressBar&) = delete;

    void update(std::size_t done, std::size_t total);
    // What the bar says before itself, from the next redraw on (train: the step and the loss).
    void set_label(std::string label) { label_ = std::move(label); }
    // Whether update() would redraw now: a terminal, a second gone, a tenth since the last.
    bool due() const;

    // The line as drawn at `elapsed` seconds with `done` of `total` done, in `columns` columns:
    // "attention [########......]  40% · 0:02 elapsed · ETA 0:03", one column short of the
    // width at most: first the bar narrows (to 10 marks), then the elapsed time goes, then the
    // estimate, then the bar ("attention 40%").
    static std::string line(const std::string& label, std::size_t done, std::size_t total, double elapsed,
                            std::size_t columns);

private:
    std::string label_;
    Screen screen_;
    bool drawn_ = false;
    Clock::time_point start_;
    Clock::time_point last_;
};

}  // namespace attntrace
