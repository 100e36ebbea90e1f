// load: JSON text → validated Problem. Documented in docs/input-format.md.
#pragma once

#include "core/problem.hpp"
#include "input/load_options.hpp"
#include "input/source.hpp"
#include "util/memory.hpp"

#include <string>
#include <string_view>

namespace attntrace {

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
