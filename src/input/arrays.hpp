// Binary arrays as an input: a .npy, .npz or safetensors file turned into the document the
// JSON loader reads (its matrices in the parser's packed form, so every check of load.cpp
// applies to them as to JSON text), and .npy files named inside a JSON input.
// Documented in docs/input-format.md ("Binary arrays") and docs/from-pytorch.md.
#pragma once

#include "core/problem.hpp"
#include "input/json_text.hpp"
#include "input/load_options.hpp"
#include "input/tensors.hpp"

#include <map>
#include <memory>
#include <optional>
#include <string>

namespace attntrace {

// JSON pointer → how a message names what is there when it came from a binary array
// ("array \"query\"", "/weights/query (w_q.npy)"). Every entry is a binary array, and a
// square weight read from one needs a stated layout (load.cpp).
using ArrayNames = std::map<std::string, std::string, std::less<>>;

struct ArrayDocument {
    Json doc;           // the input as the JSON loader reads it
    ArrayNames names;
    std::optional<LayerNorm> layernorm;  // --from gpt2: the layer's ln_1
    std::vector<std::string> notes;      // what reading changed (a Fortran-ordered array put in C order)
    std::shared_ptr<const void> in_place_storage;  // holds the embeddings left in place, if they were
};

// The arrays of `file` by their names (embeddings, query, …, or encoder_states, …), or with
// --from by the model's own names. Throws DataError for arrays that are missing, unknown or of
// the wrong rank, UsageError for options that do not fit the file.
ArrayDocument array_document(const TensorFile& file, const LoadOptions& options, MemoryBudget* budget);

// Replaces each string in `doc` where a matrix or vector is expected ("embeddings",
// "weights"/…, "source"/"states", "target"/"states") by the numbers of the .npy file it names,
// relative to the directory of `origin`; records each in `names`.
void resolve_array_references(Json& doc, const std::string& origin, const LoadOptions& options, ArrayNames& names,
                              std::vector<std::string>& notes, MemoryBudget* budget);

}  // namespace attntrace
