// TraceOptions: what a run asks of the pipeline besides its input (the mode, the precision, the
// options of the command line that change the numbers). Plain data; attention/trace.hpp runs it.
#pragma once

#include "attention/masks.hpp"
#include "core/generator.hpp"
#include "core/types.hpp"

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

}  // namespace attntrace
