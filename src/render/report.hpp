// What the `similarity` and `compare` commands print in the text formats: a title, a few lines
// of context, matrices (as stages) and closing lines.
#pragma once

#include "attention/stage.hpp"
#include "render/render.hpp"

#include <ostream>
#include <string>
#include <vector>

namespace attntrace {

struct Report {
    std::string title;
    std::vector<std::string> preamble;
    std::vector<Stage> tables;
    std::vector<std::string> footer;
};

// Table, markdown or CSV (CSV holds the tables only).
void render_report(const Report& report, const RenderOptions& options, std::ostream& out);

}  // namespace attntrace
