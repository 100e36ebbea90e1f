#include "input/load.hpp"

#include "core/error.hpp"
#include "input/arrays.hpp"
#include "input/document.hpp"
#include "input/json_text.hpp"
#include "input/reader.hpp"
#include "input/tensors.hpp"

#include <fmt/format.h>

namespace attntrace {

Problem load_problem(std::string_view json_text, const std::string& origin, MemoryBudget* budget,
                     const LoadOptions& options) {
    if (options.tokens)
        throw UsageError("--tokens labels the rows of a binary array (.npy, .npz, .safetensors); a JSON input names "
                         "its tokens in \"tokens\" or \"sentence\"");
    if (options.from)
        throw UsageError(fmt::format("--from {} reads a model's tensors from a .safetensors or .npz file, not JSON",
                                     to_string(*options.from)));
    Reader in(origin, budget);
    Json doc = parse_json(json_text, origin, budget);
    unpack_objects(in, doc);
    ArrayNames arrays;
    std::vector<std::string> notes;
    resolve_array_references(doc, origin, options, arrays, notes, budget);
    in.set_arrays(&arrays);
    Problem problem = read_document(in, doc, origin, options.layout, options.kv_heads_given);
    problem.notes.insert(problem.notes.begin(), notes.begin(), notes.end());
    return problem;
}

namespace {

// A .npy, .npz or safetensors input, through the same reading as JSON.
Problem load_arrays(const InputText& input, MemoryBudget& budget, const LoadOptions& options) {
    const TensorFile file = read_tensors(input.text, input.origin, input.storage, options.max_input, &budget);
    ArrayDocument arrays = array_document(file, options, &budget);
    Reader in(input.origin, &budget);
    in.set_arrays(&arrays.names);
    Problem problem = read_document(in, arrays.doc, input.origin, std::nullopt, options.kv_heads_given);
    problem.notes.insert(problem.notes.begin(), arrays.notes.begin(), arrays.notes.end());
    if (arrays.layernorm) std::get<SingleSequenceInput>(problem.input).layernorm = std::move(arrays.layernorm);
    if (auto* single = std::get_if<SingleSequenceInput>(&problem.input); single && single->sequence.in_place)
        single->sequence.in_place->storage = arrays.in_place_storage;  // the rows live as long as the problem
    return problem;
}

}  // namespace

Problem load_input(const InputText& input, const MemoryLimit& limit, const LoadOptions& options) {
    MemoryBudget budget(limit, input.origin);
    try {
        Problem problem = sniff_tensor_format(input.text) ? load_arrays(input, budget, options)
                                                          : load_problem(input.text, input.origin, &budget, options);
        input.require_unchanged();
        return problem;
    } catch (const DataError&) {
        input.require_unchanged();
        throw;
    }
}

}  // namespace attntrace
