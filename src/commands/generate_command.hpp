// `attntrace generate --tokens N --dim D [--seed S] [-o FILE]`
#pragma once

#include "core/generator.hpp"

#include <cstdint>
#include <string>
#include <ostream>

namespace attntrace {

struct GenerateRequest {
    std::int64_t tokens = 1024;
    std::int64_t dim = 64;
    std::uint64_t seed = default_seed;
    std::string format = "json";      // json, npz or safetensors
    std::string dtype = "float64";    // of the arrays: float64 (the JSON's numbers) or float32
    bool to_terminal = false;         // the output is a terminal: no binary there
    std::uint64_t max_bytes = std::uint64_t{4} << 30;
};

void run_generate(const GenerateRequest& request, std::ostream& out);

}  // namespace attntrace
