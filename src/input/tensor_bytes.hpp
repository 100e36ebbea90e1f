// The byte-level helpers the readers and writers of binary arrays share (npy, npz,
// safetensors): little-endian integers, sizes that cannot overflow, UTF-8 checks.
#pragma once

#include "input/tensor.hpp"
#include "util/utf8.hpp"

#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attntrace {

// The unsigned little-endian integer of sizeof(T) bytes at `at`; the caller has checked that
// the bytes are there.
template <typename T>
T little(std::string_view bytes, std::size_t at) {
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) value |= std::uint64_t{static_cast<unsigned char>(bytes[at + i])} << (8 * i);
    return static_cast<T>(value);
}

template <typename T>
void put_little(std::string& out, T value) {
    for (std::size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

inline constexpr bool host_is_big_endian = std::endian::native == std::endian::big;

inline const unsigned char* as_bytes(std::string_view text) { return reinterpret_cast<const unsigned char*>(text.data()); }

inline bool is_utf8(std::string_view text) {
    for (std::size_t at = 0; at < text.size();) {
        const std::size_t length = utf8_sequence_length(text.substr(at));
        if (length == 0) return false;
        at += length;
    }
    return true;
}

// The bytes an array of `shape` and `type` takes, or nullopt when counting them overflows
// 64 bits (a header can announce a shape such as (2**40, 2**40)).
inline std::optional<std::size_t> data_bytes(const std::vector<std::size_t>& shape, ElementType type) {
    std::size_t total = element_size(type);
    for (const std::size_t dimension : shape)
        if (__builtin_mul_overflow(total, dimension, &total)) return std::nullopt;
    return total;
}

// How messages name an array: its name, or "the array" for a .npy (which has none).
inline std::string array_label(const std::string& name) { return name.empty() ? "the array" : printable(name); }

}  // namespace attntrace
