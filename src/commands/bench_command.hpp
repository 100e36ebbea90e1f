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

struct BenchRequest {
    std::vector<std::int64_t> sizes{512, 1024, 2048, 4096, 8192, 16384};
    std::int64_t dim = 64;
    std::vector<std::string> modes{"self", "causal"};
    std::vector<std::string> dtypes{"float32", "float64"};
    std::vector<int> threads;              // empty: 1 … the number of cores
    std::vector<std::string> paths{"streaming", "trace"};
    std::int64_t trace_max = 4096;         // the trace path holds n×n matrices: larger n are skipped
    int repeats = 3;                       // timed runs per configuration (median reported)
    MemoryLimit max_memory;               // the grid is refused if one run would need more
    double max_seconds = 0;       // work estimated to take longer is refused (0: no limit)
    Format format = Format::table;
};

void run_bench(const BenchRequest& request, std::ostream& out);

}  // namespace attntrace
