// `attntrace similarity INPUT`: dot-product and cosine-similarity tables of an input's words.
#pragma once

#include "render/render.hpp"

#include <ostream>
#include <string>

namespace attntrace {

struct SimilarityRequest {
    std::string input;  // a path, "-", or example:NAME
    RenderOptions render;
};

void run_similarity(const SimilarityRequest& request, std::ostream& out);

}  // namespace attntrace
