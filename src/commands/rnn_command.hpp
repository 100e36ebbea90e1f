// `attntrace rnn [INPUT]`: the RNN encoder the lectures start from, run over an input: its
// parameters, its hidden states, the one vector it hands on, and how much each token reaches
// that vector, beside how much it reaches attention's context vector of the same token.
#pragma once

#include "attention/rnn.hpp"
#include "input/limits.hpp"
#include "input/load.hpp"
#include "render/render.hpp"
#include "util/memory.hpp"
#include "util/output.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace attntrace {

struct RnnRequest {
    std::string input = "example:teacher_learned";  // a path, "-", or example:NAME
    std::uint64_t seed = 123;                       // the drawn RNN weights (and attention's when the input has none)
    std::optional<Eigen::Index> hidden;             // d_h of drawn weights (absent: d_in)
    std::optional<RnnInit> init;                   // of drawn weights (absent: scaled)
    std::optional<double> gain;                    // of drawn weights (absent: 1)
    std::optional<std::string> svg_path;  // the two influences against distance, drawn
    RenderOptions render;
    std::uint64_t max_input = default_max_input_bytes;
    LoadOptions load;
    MemoryLimit max_memory;
    double max_seconds = 0;
};

// The report goes to outputs.main(), the picture (--svg) to a file added to `outputs`.
void run_rnn(const RnnRequest& request, Outputs& outputs);

// Everything after reading: the report of a loaded problem.
RnnReport rnn_report(const Problem& problem, const RnnRequest& request);

}  // namespace attntrace
