// How every refusal must look: the exit status asked for, nothing on standard output, and
// one line on standard error, "attntrace: error: …", with no exception or abort text in it.
#pragma once

#include "support/catch.hpp"
#include "support/cli.hpp"

#include <algorithm>
#include <string>

namespace cli {

inline void require_error_line(const Result& r, int code, const std::string& fragment) {
    INFO("stderr: " << r.err);
    CHECK(r.exit_code == code);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::StartsWith("attntrace: error: "));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK((!r.err.empty() && r.err.back() == '\n'));
    CHECK_THAT(r.err, Catch::Contains(fragment));
    CHECK_THAT(r.err, !Catch::Contains("json.exception") && !Catch::Contains("terminate") && !Catch::Contains("what()"));
}

}  // namespace cli
