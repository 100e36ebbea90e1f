// One screen of attntrace step, drawn from the stepper's state for a width and height: the
// stages, the current matrix with its cursor (scrolled to keep it in sight), the cell's pane,
// a message line and the status line. As text (the frames --keys writes, the cursor in
// [brackets], the cells Enter marked in {braces}), or as what a terminal is sent (the same
// text, the cursor also in reverse video and the marks underlined: no colour).
#pragma once

#include "stepper/stepper.hpp"

#include <string>
#include <vector>

namespace attntrace::stepper {

struct Span {
    enum Style { plain, cursor, mark, heading, current };
    std::string text;
    Style style = plain;
    bool operator==(const Span&) const = default;
};
using Line = std::vector<Span>;

// Exactly `height` lines, none wider than `width` columns. Refuses nothing: a screen smaller
// than 40×12 gets one line that says it is too small.
std::vector<Line> draw(const Stepper& stepper, int width, int height);

// A frame as text: each line without its trailing spaces.
std::string frame_text(const std::vector<Line>& frame);

// A frame as a terminal draws it in place: from the top left, each line cleared to its end.
std::string frame_ansi(const std::vector<Line>& frame);

// What turns the screen `before` (as drawn, of the same size) into `frame`: each line that
// changed, redrawn in place; the whole frame when the sizes differ (a resize, the first frame).
std::string frame_ansi_changes(const std::vector<Line>& before, const std::vector<Line>& frame);

}  // namespace attntrace::stepper
