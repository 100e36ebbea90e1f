// The HTML page (--format html, --html FILE): one self-contained file, its style and script
// inside it, that shows a trace (its backward pass too), a summary or a decode as labelled
// heatmaps. The numbers are laid out here, as the tables format them; the page's script only
// draws them, colours them and, on hover or focus, shows a cell's arithmetic (the lines -q
// prints) and highlights the cells it came from (attention/cell_sources). Nothing it shows is
// computed in JavaScript.
#pragma once

#include "attention/decode.hpp"
#include "attention/summary.hpp"
#include "core/gradients.hpp"
#include "core/stage.hpp"
#include "render/render.hpp"

#include <ostream>

namespace attntrace {

// The largest matrix, in rows, whose cells carry their arithmetic and their sources; a larger
// one shows its numbers a page at a time, and says that -q works through a row of it.
inline constexpr Eigen::Index html_worked_rows = 64;

// A trace, with its gradients when `gradients` is given.
void write_html(const Trace& trace, const Gradients* gradients, const RenderOptions& options, std::ostream& out);
struct BackwardRun;  // render/backward.hpp
// A trace with its backward pass: the forward stages and the gradients the run shows.
void write_html(const BackwardRun& run, const RenderOptions& options, std::ostream& out);
void write_html(const Summary& summary, const RenderOptions& options, std::ostream& out);
void write_html(const Decode& decode, const RenderOptions& options, std::ostream& out);

const Renderer& html_renderer();

// The page's own style and script (render/page/page.css and page.js, compiled in).
std::string_view html_style();
std::string_view html_script();

}  // namespace attntrace
