// `attntrace bench`: time both paths through the core over growing n, against the machine's
// own matrix-multiply rate measured in the same process. A benchmark, not a test.
#pragma once

#include "render/render.hpp"
#include "util/memory.hpp"

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace attntrace {

// The two paths through the core that bench times.
enum class BenchPath { streaming, trace };
inline constexpr NameTable<BenchPath, 2> bench_path_names{{{BenchPath::streaming, "streaming"}, {BenchPath::trace, "trace"}}};
constexpr const auto& names_of(BenchPath) { return bench_path_names; }

struct BenchRequest {
    std::vector<std::int64_t> sizes{512, 1024, 2048, 4096, 8192, 16384};
    std::int64_t dim = 64;
    int heads = 1;                         // each of d_head = dim / heads
    std::vector<Mode> modes{Mode::self, Mode::causal};
    std::vector<Dtype> dtypes{Dtype::float32, Dtype::float64};
    std::vector<int> threads;              // empty: 1 … the number of cores
    std::vector<BenchPath> paths{BenchPath::streaming, BenchPath::trace};
    std::int64_t trace_max = 4096;         // the trace path holds n×n matrices: larger n are skipped
    int repeats = 3;                       // timed runs per configuration (median reported)
    MemoryLimit max_memory;                // the grid is refused if one run would need more
    double max_seconds = 0;                // or if the whole grid would take longer (0: no limit)
    Format format = Format::table;
};

void run_bench(const BenchRequest& request, std::ostream& out);

}  // namespace attntrace
