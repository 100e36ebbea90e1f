// load: JSON text → validated Problem. Documented in docs/input-format.md.
#pragma once

#include "core/problem.hpp"
#include "input/source.hpp"
#include "util/memory.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attntrace {

// What the command line says about reading an input, beyond the input itself.
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

// Throws DataError naming `origin` and the JSON pointer of the first problem found.
// `budget`, when given, is charged for the document and the problem as they are built.
// A string where a matrix or vector is expected names a .npy file, read relative to the
// directory of `origin` (docs/input-format.md).
Problem load_problem(std::string_view json_text, const std::string& origin, MemoryBudget* budget = nullptr,
                     const LoadOptions& options = {});

// load_problem on what read_input returned, within `limit` (--max-memory); a file that
// another program shortened while it was read is reported as such
// (InputText::require_unchanged), whatever else went wrong. A .npy, .npz or safetensors
// file (known by its first bytes) is read as arrays (input/tensors.hpp), by their names, or
// with --from by a model's names.
Problem load_input(const InputText& input, const MemoryLimit& limit, const LoadOptions& options = {});

}  // namespace attntrace
