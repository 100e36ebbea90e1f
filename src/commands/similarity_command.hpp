// `attntrace similarity INPUT`: dot-product and cosine-similarity tables of an input's words.
#pragma once

#include "input/limits.hpp"
#include "core/problem.hpp"
#include "render/render.hpp"
#include "util/memory.hpp"

#include <cstdint>

#include <ostream>
#include <string>

namespace attntrace {

struct SimilarityRequest {
    std::string input;  // a path, "-", or example:NAME
    RenderOptions render;
    std::uint64_t max_input = default_max_input_bytes;
    MemoryLimit max_memory;       // tables needing more are refused
    double max_seconds = 0;       // work estimated to take longer is refused (0: no limit)
};

void run_similarity(const SimilarityRequest& request, std::ostream& out);

// Everything after reading: the tables of a loaded problem, rendered.
void write_similarity(const Problem& problem, const SimilarityRequest& request, std::ostream& out);

}  // namespace attntrace
