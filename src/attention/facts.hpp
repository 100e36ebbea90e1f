// Figures --explain states about the run at hand, measured on its trace: how widely the
// scores spread before and after scaling, and whether softmax gave the top keys more weight
// than dividing by the row sum would have.
#pragma once

#include "core/stage.hpp"

namespace attntrace {

// Fills trace.facts from the trace's stages.
void observe(Trace& trace);

}  // namespace attntrace
