// `attntrace generate --tokens N --dim D [--seed S] [-o FILE]`
#pragma once

#include "core/generator.hpp"

#include <cstdint>
#include <ostream>

namespace attntrace {

struct GenerateRequest {
    std::int64_t tokens = 1024;
    std::int64_t dim = 64;
    std::uint64_t seed = default_seed;
};

void run_generate(const GenerateRequest& request, std::ostream& out);

}  // namespace attntrace
