// `attntrace similarity INPUT`: dot-product and cosine-similarity tables of an input's words.
#pragma once

#include "input/limits.hpp"
#include "render/render.hpp"

#include <cstdint>

#include <ostream>
#include <string>

namespace attntrace {

struct SimilarityRequest {
    std::string input;  // a path, "-", or example:NAME
    RenderOptions render;
    std::uint64_t max_input = default_max_input_bytes;
    std::uint64_t max_memory = 0;  // tables needing more are refused
};

void run_similarity(const SimilarityRequest& request, std::ostream& out);

}  // namespace attntrace
