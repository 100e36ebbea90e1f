// What the command line says about reading an input, beyond the input itself: the options
// every reader of input/ takes (load.hpp's front door, arrays.hpp's binary arrays).
#pragma once

#include "core/types.hpp"
#include "input/limits.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attntrace {

struct LoadOptions {
    std::optional<std::vector<std::string>> tokens;  // --tokens: labels for a binary array's rows
    std::optional<WeightLayout> layout;               // --layout: how the weight matrices are stored
    std::optional<ModelFamily> from;                  // --from gpt2: the model's own tensor names
    std::optional<int> layer;                         // --layer L (with --from)
    std::optional<std::string> hidden_states;         // --hidden-states FILE (with --from)
    bool heads_given = false;                         // --heads (GPT-2's heads are otherwise d / 64)
    bool kv_heads_given = false;                      // --kv-heads: W_k and W_v d_in × G·d_head, as with "kv_heads"
    // --summary --dtype float32: a binary input's float32 embeddings may stay in the mapped file
    // (Sequence::in_place) instead of being converted to doubles and copied.
    bool float32_in_place = false;
    std::uint64_t max_input = default_max_input_bytes;  // for the .npy files a JSON input names
};

inline LoadOptions with_max_input(LoadOptions options, std::uint64_t max_input) {
    options.max_input = max_input;
    return options;
}

}  // namespace attntrace
