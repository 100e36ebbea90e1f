// What the `similarity` and `compare` commands show in the text formats, laid out once for
// all of them: a title, a few lines of context, matrices (as stages) and closing lines. The
// table, markdown and CSV renderers each render a Report in their own way.
#pragma once

#include "attention/compare.hpp"
#include "attention/similarity.hpp"
#include "core/stage.hpp"

#include <string>
#include <vector>

namespace attntrace {

struct Report {
    std::string title;
    std::vector<std::string> preamble;
    std::vector<Stage> tables;
    std::vector<std::string> footer;
};

Report similarity_report(const Similarity& similarity, int digits);
Report comparison_report(const Comparison& comparison, int digits);

}  // namespace attntrace
