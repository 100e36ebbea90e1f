// The SVG pictures: the heatmap of one (query, key) stage of a trace (for --svg), a grid of
// shaded cells with the row and column tokens, a colour scale and hatching for masked
// entries (svg.cpp); and an input's words as arrows from the origin (for `similarity --svg`,
// svg_plane.cpp).
#pragma once

#include "attention/similarity.hpp"
#include "core/stage.hpp"
#include "render/render.hpp"

#include <array>
#include <ostream>
#include <string>

namespace attntrace {
struct RnnReport;  // attention/rnn.hpp
// attntrace rnn --svg: the RNN's and attention's influence on the last output against distance,
// on a logarithmic scale (render/rnn_report.cpp).
void write_rnn_svg(const RnnReport& report, std::ostream& out);
struct TrainReport;  // attention/training.hpp
// attntrace train --svg: the loss curves (logarithmic), and below them the followed weight and
// held-out accuracy (0 to 1), against steps (render/train_report.cpp).
void write_training_svg(const TrainReport& report, std::ostream& out);
}  // namespace attntrace

namespace attntrace {

// The stages --svg can draw: the matrices with a row per query and a column per key.
inline constexpr std::array<StageId, 4> svg_stages{StageId::scores, StageId::scaled, StageId::masked,
                                                   StageId::weights};

// "scores, scaled, masked or weights": svg_stages as a choice, for help texts and messages.
std::string svg_stage_choices();

struct SvgOptions {
    StageId stage = StageId::weights;  // one of svg_stages
    Shade shade = Shade::absolute;     // weights on 0 to 1 (scores: the table's largest |value|), or per row, or the table's
    int head = 0;                      // several heads: the head drawn (0: the first)
};

// Writes one standalone SVG 1.1 document showing `trace`'s stage `options.stage`. The same
// trace and options always give the same bytes. Throws std::invalid_argument when the stage
// is not one of svg_stages or the trace lacks it (every trace that `trace` returns has them).
void render_svg(const Trace& trace, const SvgOptions& options, std::ostream& out);
// The same picture of `stage`, a stage of `trace` or the gradient of one (a backward stage of
// one of svg_stages, drawn on a diverging scale centred on 0 since gradients are signed;
// options.stage is not read).
void render_svg(const Trace& trace, const Stage& stage, const SvgOptions& options, std::ostream& out);

// Writes one standalone SVG 1.1 document drawing each word of `plane` as an arrow from the
// origin to its point, labelled with the word, on axes of one scale; its heading says how the
// plane was chosen and, for a projection, how much of the squared length it keeps.
void render_svg(const WordPlane& plane, std::ostream& out);

}  // namespace attntrace
