// The single-sequence modes (plain, self, causal): one sentence attending to itself.
#pragma once

#include "attention/heads.hpp"
#include "attention/masks.hpp"
#include "attention/positions.hpp"
#include "attention/trace_options.hpp"
#include "core/problem.hpp"
#include "core/stage.hpp"

#include <optional>
#include <string>
#include <vector>

namespace attntrace {

// The weights a single-sequence mode uses: the input's, generated from the seed (said so), or
// none in a mode without learned projections.
struct SingleWeights {
    std::optional<Projections> projections;
    WeightsOrigin origin = WeightsOrigin::none;
    std::vector<std::string> notes;
    HeadLayout layout;              // how the heads split the projections (one head without them)
    bool output_generated = false;  // W_o drawn from the seed for weights that lack it
};

// The sequence of `problem` and its weights for `options.mode`, after the checks every
// single-sequence mode shares: the input fits the mode, --dim and --score make sense, RoPE
// has heads of an even size.
struct SingleSetup {
    const Sequence* sequence = nullptr;
    SingleWeights weights;
    PositionSetting positions;  // none in a mode without position information
    MaskSpec mask;  // the mode's causal mask, --window, the input's padding tokens
    const LayerNorm* layernorm = nullptr;  // --from gpt2: ln_1, applied to X before anything else
};
SingleSetup setup_single(const Problem& problem, const TraceOptions& options);

// The whole pipeline of a single-sequence mode (the mode table's trace function).
Trace trace_single_problem(const Problem& problem, const TraceOptions& options);

// The same on a sequence alone (tests call this directly). `weights` null: generated from
// options.seed where the mode learns projections. `origin` names the input in errors.
Trace trace_single(const Sequence& sequence, const Projections* weights, const TraceOptions& options,
                   const std::string& origin = "input");

}  // namespace attntrace
