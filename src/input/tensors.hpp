// Binary arrays in: NumPy's .npy and .npz and the safetensors format, read without parsing
// text. Documented in docs/input-format.md ("Binary arrays"). Every header is validated
// before a byte of data is touched: the shape's product cannot overflow, the data the header
// announces is exactly what the file holds, nothing is read past the end. This header is the
// front door of binary arrays: which format a file is, and its reader; each format has its
// own file (npy, npz, safetensors), with its writer.
#pragma once

#include "input/npy.hpp"
#include "input/npz.hpp"
#include "input/safetensors.hpp"
#include "input/tensor.hpp"
#include "util/memory.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace attntrace {

// Which format `bytes` are, from their first bytes: .npy ("\x93NUMPY"), .npz (a zip, "PK"),
// safetensors (an 8-byte little-endian header length, then '{'); nullopt for anything else
// (JSON, most likely).
std::optional<std::string> sniff_tensor_format(std::string_view bytes);

// Reads `bytes` (which stay valid as long as `storage`) in the format sniffed. Throws
// DataError "ORIGIN: …" on any malformed header, unsupported element type, truncated data,
// or (.npz) a member compressed other than stored or deflated, or not a .npy.
// `max_bytes` bounds what an .npz may inflate to (--max-input). `budget`, when given, is
// charged for what reading holds before it is allocated: each inflated member at the size
// its archive gives, the safetensors header's document and metadata, the list of arrays.
TensorFile read_tensors(std::string_view bytes, const std::string& origin, std::shared_ptr<const void> storage,
                        std::uint64_t max_bytes, MemoryBudget* budget = nullptr);

}  // namespace attntrace
