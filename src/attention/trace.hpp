// trace: a validated Problem → the Trace of one mode. Pure math: no I/O, no printing. Each
// mode's trace function is in the mode table (attention/modes.hpp).
#pragma once

#include "attention/masks.hpp"
#include "core/generator.hpp"
#include "core/problem.hpp"
#include "core/stage.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace attntrace {

struct TraceOptions {
    Mode mode = Mode::plain;
    Normalization normalization = Normalization::softmax;
    std::uint64_t seed = default_seed;  // for weights the input does not give
    std::optional<Eigen::Index> dim;    // d_k = d_v (or d_a) of generated weights
    Dtype dtype = Dtype::float64;
    Score score = Score::additive;      // bahdanau mode only
    std::optional<std::string> query;   // --query: work through this row (token or 1-based position)
    std::optional<Eigen::Index> tiles;  // --tiles: and through its online softmax, this many keys a tile
    std::optional<ScaleRule> scale;     // --scale; absent: the mode's own (√d_k, or none)
    double scale_value = 1;             // the divisor of ScaleRule::value
    double temperature = 1;             // --temperature: softmax(S / T)
    std::optional<int> heads;           // --heads: attention heads (self and causal)
    std::optional<int> kv_heads;        // --kv-heads: key/value heads (grouped-query attention)
    std::optional<int> head;            // --head: the head -q works through (default 1)
    std::optional<PositionScheme> positions;     // --positions (self and causal); absent: the input's, else none
    std::optional<std::int64_t> position_offset;  // --position-offset: the first token's position (default 0)
    std::optional<Eigen::Index> window; // --window: a sliding window of this many keys
    MaskMethod mask_method;             // --mask-fill, --mask-after-softmax: how the mask is applied
};

// The divisor of the scores: √d_k, 1, or the number given.
double scale_divisor(ScaleRule rule, double value, Eigen::Index d_k);

// The mode the user meant: --mode, else the file's "mode", else the first mode of the table
// that reads this input (plain for one sentence, bahdanau for a source and a target). A file
// whose "mode" does not read its own shape is refused at /mode.
Mode resolve_mode(const Problem& problem, std::optional<Mode> requested);

// Runs the whole pipeline of `options.mode`. Throws DataError when the input does not fit the
// mode or a stage produces a number that is not finite, UsageError when an option does not
// fit the mode or the input (--dim with the input's own weights, --score outside bahdanau).
Trace trace(const Problem& problem, const TraceOptions& options);

}  // namespace attntrace
