// The byte-level helpers the readers and writers of binary arrays share (npy, npz,
// safetensors): little-endian integers, UTF-8 checks, how an array is named.
#pragma once

#include "util/utf8.hpp"

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

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

// How messages name an array: its name, or "the array" for a .npy (which has none).
inline std::string array_label(const std::string& name) { return name.empty() ? "the array" : printable(name); }

}  // namespace attntrace
