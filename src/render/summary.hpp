// The summary view (--summary, and tables of long inputs): one line per query.
#pragma once

#include "attention/summary.hpp"
#include "render/render.hpp"

#include <ostream>

namespace attntrace {

// Rows shown before and after the elided middle in table and markdown formats.
inline constexpr std::size_t summary_rows_shown = 10;

void render_summary(const Summary& summary, const RenderOptions& options, std::ostream& out);

}  // namespace attntrace
