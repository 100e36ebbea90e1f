// Reading attntrace's JSON in tests: run it with -f json, find a stage, turn its data into
// rows of numbers (a masked score, null in JSON, as −∞).
#pragma once

#include "support/cli.hpp"

#include "support/catch.hpp"
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace trace_json {

using nlohmann::json;
using Rows = std::vector<std::vector<double>>;

// attntrace ARGS -f json, which must succeed, parsed.
inline json run_json(std::vector<std::string> args) {
    args.insert(args.end(), {"-f", "json"});
    const auto r = cli::run(args);
    INFO(fmt::format("{}", fmt::join(args, " ")) << ": " << r.err);
    REQUIRE(r.exit_code == 0);
    return json::parse(r.out);
}

inline Rows rows_of(const json& data) {
    Rows out;
    for (const auto& row : data) {
        out.emplace_back();
        for (const auto& v : row) out.back().push_back(v.is_null() ? -INFINITY : v.get<double>());
    }
    return out;
}

// The stage called `name` of a trace document.
inline const json& stage_of(const json& trace, const std::string& name) {
    for (const auto& s : trace["stages"])
        if (s["name"] == name) return s;
    throw std::runtime_error("no stage " + name);
}

inline Rows stage_rows(const json& trace, const std::string& name) { return rows_of(stage_of(trace, name)["data"]); }

}  // namespace trace_json
