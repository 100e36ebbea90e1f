// What tests/perf/read_time.cpp and simdjson_read.cpp share, so that their numbers compare:
// the clock (wall and CPU seconds of the whole process) and the hash of every number's bits.
#pragma once

#include <Eigen/Core>

#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace perf {

struct Clock {
    double wall = 0, cpu = 0;
    static Clock now() {
        rusage u{};
        getrusage(RUSAGE_SELF, &u);
        const auto seconds = [](timeval t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
        return {std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(),
                seconds(u.ru_utime) + seconds(u.ru_stime)};
    }
};

inline void print(const char* name, Clock from, Clock to) {
    std::printf(" %s_wall=%.4f %s_cpu=%.4f", name, to.wall - from.wall, name, to.cpu - from.cpu);
}

// The bits of every number, in storage order (FNV-1a), continuing from h. Both programs hold
// their matrices row-major, so the order is the rows'.
template <typename Derived>
std::uint64_t hash_bits(const Eigen::DenseBase<Derived>& m, std::uint64_t h) {
    const auto& d = m.derived();
    for (Eigen::Index i = 0; i < d.size(); ++i) {
        std::uint64_t bits = 0;
        std::memcpy(&bits, d.data() + i, sizeof bits);
        for (int b = 0; b < 8; ++b) h = (h ^ ((bits >> (8 * b)) & 0xFF)) * 0x100000001B3ULL;
    }
    return h;
}

}  // namespace perf
