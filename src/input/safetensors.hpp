// The safetensors format: an 8-byte little-endian header size N, N bytes of JSON (an object of
// name → {"dtype", "shape", "data_offsets"}, and "__metadata__" of strings), then the data:
// every tensor's bytes, little-endian, one after the other with no gaps, offsets counted from
// the data's first byte.
#pragma once

#include "input/tensor.hpp"
#include "util/memory.hpp"

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace attntrace {

// The tensors of the file in `bytes` into `file` (whose origin names it), in the order of
// their data, and its metadata. Throws DataError for a header that is not such an object, an
// unsupported dtype, or data that the offsets do not cover exactly. `budget`, when given, is
// charged for the header's document and metadata and the list of arrays as they are read.
void read_safetensors(std::string_view bytes, std::shared_ptr<const void> storage, TensorFile& file, MemoryBudget* budget);

// A whole safetensors file of `arrays` with `metadata`, for `attntrace generate` and for tests
// of the readers.
std::string write_safetensors(const std::vector<NamedMatrix>& arrays, ElementType type,
                              const std::map<std::string, std::string>& metadata = {});

}  // namespace attntrace
