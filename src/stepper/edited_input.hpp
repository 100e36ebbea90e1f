// x in attntrace step: the input as edited, written as an ordinary input file, so that a
// command can trace the run on screen again.
#pragma once

#include "core/problem.hpp"

#include <string>

namespace attntrace::stepper {

// Writes the single-sequence input of `problem` (its tokens, embeddings, weights, heads,
// positions and padding; no description, since the edits may have made it false) to `path`,
// whole or not at all (a temporary file beside it, renamed). Returns "" when it was written,
// else why not.
std::string write_edited_input(const Problem& problem, const std::string& path);

}  // namespace attntrace::stepper
