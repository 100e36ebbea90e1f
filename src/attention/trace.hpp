// trace: a validated Problem → the Trace of one mode. Pure math: no I/O, no printing.
#pragma once

#include "attention/stage.hpp"
#include "input/generator.hpp"
#include "input/problem.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attntrace {

struct TraceOptions {
    Mode mode = Mode::plain;
    Normalization normalization = Normalization::softmax;
    std::uint64_t seed = default_seed;  // for weights the input does not give
    std::optional<Eigen::Index> dim;    // d_k = d_v (or d_a) of generated weights
    Dtype dtype = Dtype::float64;
    Score score = Score::additive;  // bahdanau mode only
    std::optional<std::string> query;  // --query: work through this row (token or 1-based position)
};

// The mode the user meant: --mode, else the file's "mode", else the input's natural mode
// (bahdanau for a source/target input, plain otherwise).
Mode resolve_mode(const Problem& problem, std::optional<Mode> requested);

// Runs the whole pipeline of `options.mode`. Throws DataError when the input does not fit the
// mode or a stage produces a number that is not finite, UsageError when --dim conflicts with
// weights given in the input.
Trace trace(const Problem& problem, const TraceOptions& options);

// The single-sequence input of `problem` and the weights `options.mode` uses (generated from
// options.seed when the input has none; none in plain mode), after the checks every
// single-sequence mode shares: the input fits the mode, --dim and --score make sense.
struct SingleSetup {
    const Sequence* sequence = nullptr;
    std::optional<Projections> weights;
    WeightsOrigin origin = WeightsOrigin::none;
    std::vector<std::string> notes;
};
SingleSetup setup_single(const Problem& problem, const TraceOptions& options);

// Single-sequence modes on their own (tests call this directly). `weights` null: generated
// from options.seed (self, causal) or not used (plain). `origin` names the input in errors.
Trace trace_single(const Sequence& sequence, const Projections* weights, const TraceOptions& options,
                   const std::string& origin = "input");

}  // namespace attntrace
