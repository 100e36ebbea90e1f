// The SVG heatmap (for --svg): the attention weights of a trace as a grid of shaded cells,
// with the row and column tokens, a colour scale and hatching for masked entries.
#pragma once

#include "core/stage.hpp"

#include <ostream>

namespace attntrace {

// Writes one standalone SVG 1.1 document showing `trace`'s "weights" stage. The same trace
// always gives the same bytes. Throws std::invalid_argument when the trace has no weights
// stage (every trace that `trace` returns has one).
void render_svg(const Trace& trace, std::ostream& out);

}  // namespace attntrace
