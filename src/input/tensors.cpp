#include "input/tensors.hpp"

#include "core/error.hpp"
#include "input/tensor_bytes.hpp"

#include <fmt/format.h>

namespace attntrace {

std::optional<std::string> sniff_tensor_format(std::string_view bytes) {
    if (bytes.starts_with(npy_magic)) return "npy";
    // A zip starts with a member's local header, or is empty: its end record alone.
    if (bytes.starts_with("PK\x03\x04") || bytes.starts_with("PK\x05\x06")) return "npz";
    // The header size of safetensors is at most 100 MB: its upper four bytes are zero, which
    // no text is; the JSON object follows.
    if (bytes.size() >= 9 && bytes[8] == '{' && little<std::uint64_t>(bytes, 0) >> 32 == 0) return "safetensors";
    return std::nullopt;
}

TensorFile read_tensors(std::string_view bytes, const std::string& origin, std::shared_ptr<const void> storage,
                        std::uint64_t max_bytes, MemoryBudget* budget) {
    const auto format = sniff_tensor_format(bytes);
    if (!format) throw DataError(fmt::format("{}: not a .npy, .npz or safetensors file", origin));
    TensorFile file;
    file.origin = origin;
    file.format = *format;
    if (*format == "npy") {
        Tensor tensor = read_npy(bytes, origin);
        tensor.storage = std::move(storage);
        file.tensors.push_back(std::move(tensor));
    } else if (*format == "npz") {
        read_npz(bytes, std::move(storage), max_bytes, file, budget);
    } else {
        read_safetensors(bytes, std::move(storage), file, budget);
    }
    return file;
}

}  // namespace attntrace
