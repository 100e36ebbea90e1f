// The SVG heatmap (for --svg): one (query, key) stage of a trace as a grid of shaded cells,
// with the row and column tokens, a colour scale and hatching for masked entries.
#pragma once

#include "core/stage.hpp"
#include "render/render.hpp"

#include <array>
#include <ostream>
#include <string>

namespace attntrace {

// The stages --svg can draw: the matrices with a row per query and a column per key.
inline constexpr std::array<StageId, 4> svg_stages{StageId::scores, StageId::scaled, StageId::masked,
                                                   StageId::weights};

// "scores, scaled, masked or weights": svg_stages as a choice, for help texts and messages.
std::string svg_stage_choices();

struct SvgOptions {
    StageId stage = StageId::weights;  // one of svg_stages
    Shade shade = Shade::row;          // each cell against its row's largest |value|, or the table's
};

// Writes one standalone SVG 1.1 document showing `trace`'s stage `options.stage`. The same
// trace and options always give the same bytes. Throws std::invalid_argument when the stage
// is not one of svg_stages or the trace lacks it (every trace that `trace` returns has them).
void render_svg(const Trace& trace, const SvgOptions& options, std::ostream& out);

}  // namespace attntrace
