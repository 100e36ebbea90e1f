// `attntrace similarity INPUT`: dot-product and cosine-similarity tables of an input's words.
#pragma once

#include "input/limits.hpp"
#include "input/load.hpp"
#include "core/problem.hpp"
#include "render/render.hpp"
#include "util/memory.hpp"
#include "util/output.hpp"

#include <cstdint>

#include <optional>
#include <ostream>
#include <string>

namespace attntrace {

struct SimilarityRequest {
    std::string input;  // a path, "-", or example:NAME
    RenderOptions render;
    std::uint64_t max_input = default_max_input_bytes;
    LoadOptions load;  // --tokens, --layout, --from … (max_input set from the field above)
    MemoryLimit max_memory;       // tables needing more are refused
    double max_seconds = 0;       // work estimated to take longer is refused (0: no limit)
    std::optional<std::string> svg_path;  // also draw the words as arrows here
};

// The tables go to outputs.main(), the picture (--svg) to a file added to `outputs`.
void run_similarity(const SimilarityRequest& request, Outputs& outputs);

// Everything after reading: the tables of a loaded problem, rendered to `out`, and when `svg`
// is given the picture of its words to `svg`.
void write_similarity(const Problem& problem, const SimilarityRequest& request, std::ostream& out,
                      std::ostream* svg = nullptr);

}  // namespace attntrace
