// Finding strings among many held elsewhere (a packed table, an arena), in 16 bytes per
// string: (hash, index) pairs sorted by hash. Built once, then searched by binary search;
// equal hashes are told apart by comparing the strings themselves.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace attntrace {

class HashIndex {
public:
    HashIndex() = default;

    // Indexes key_of(0) … key_of(count − 1); key_of(i) returns a string_view.
    template <typename KeyOf>
    HashIndex(std::size_t count, KeyOf&& key_of) {
        entries_.reserve(count);
        for (std::size_t i = 0; i < count; ++i)
            entries_.push_back({hash(key_of(i)), static_cast<std::uint32_t>(i)});
        // Equal strings end up next to each other, in increasing index order.
        std::sort(entries_.begin(), entries_.end(), [&](const Entry& a, const Entry& b) {
            if (a.hash != b.hash) return a.hash < b.hash;
            const std::string_view x = key_of(a.index), y = key_of(b.index);
            return x != y ? x < y : a.index < b.index;
        });
    }

    // Every i with key_of(i) == key, in increasing order.
    template <typename KeyOf>
    std::vector<std::size_t> find(std::string_view key, KeyOf&& key_of) const {
        std::vector<std::size_t> found;
        const std::uint64_t h = hash(key);
        auto it = std::lower_bound(entries_.begin(), entries_.end(), h,
                                   [](const Entry& e, std::uint64_t value) { return e.hash < value; });
        for (; it != entries_.end() && it->hash == h; ++it)
            if (key_of(it->index) == key) found.push_back(it->index);
        return found;
    }

    // The first i (in increasing order) whose key equals that of a smaller index, if any.
    template <typename KeyOf>
    std::optional<std::size_t> first_repeat(KeyOf&& key_of) const {
        std::optional<std::size_t> repeat;
        for (std::size_t b = 1; b < entries_.size(); ++b)
            if (entries_[b].hash == entries_[b - 1].hash && key_of(entries_[b].index) == key_of(entries_[b - 1].index))
                repeat = std::min<std::size_t>(repeat.value_or(entries_[b].index), entries_[b].index);
        return repeat;
    }

private:
    struct Entry {
        std::uint64_t hash;
        std::uint32_t index;
    };

public:
    static constexpr std::size_t entry_bytes = sizeof(Entry);  // what an index costs per string

private:

    static std::uint64_t hash(std::string_view key) { return std::hash<std::string_view>{}(key); }

    std::vector<Entry> entries_;
};

}  // namespace attntrace
