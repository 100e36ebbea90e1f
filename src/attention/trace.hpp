// trace: a validated Problem → the Trace of one mode. Pure math: no I/O, no printing. This is
// the pipeline's entry: the mode chosen, the options checked against it, the mode's own trace
// function (the table of attention/modes.hpp) run, and what every trace states about itself
// added (its description and notes, the facts of --explain).
#pragma once

#include "attention/trace_options.hpp"
#include "core/problem.hpp"
#include "core/stage.hpp"

#include <optional>

namespace attntrace {

// The divisor of the scores: √d_k, 1, or the number given.
double scale_divisor(ScaleRule rule, double value, Eigen::Index d_k);

// The mode the user meant: --mode, else the file's "mode", else the first mode of the table
// that reads this input (plain for one sentence, bahdanau for a source and a target). A file
// whose "mode" does not read its own shape is refused at /mode.
Mode resolve_mode(const Problem& problem, std::optional<Mode> requested);

// Throws DataError at /mode when the file's own "mode" does not read the file's shape (a
// sentence in a file that says bahdanau, say).
void check_file_mode(const Problem& problem);

// Throws UsageError for an option the mode does not take (--scale in bahdanau mode).
void check_options_for_mode(const TraceOptions& options);

// The run's description (the input's text for its mode) and notes: what loading changed
// first, then the run's own.
void describe_run(RunHeader& run, const Problem& problem, const TraceOptions& options);

// Runs the whole pipeline of `options.mode`. Throws DataError when the input does not fit the
// mode or a stage produces a number that is not finite, UsageError when an option does not
// fit the mode or the input (--dim with the input's own weights, --score outside bahdanau).
Trace trace(const Problem& problem, const TraceOptions& options);

}  // namespace attntrace
