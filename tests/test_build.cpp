// What the build needs to go on building on the next Debian: the tests reach Catch2 only
// through support/catch.hpp, which includes v2 (Debian 12) or v3 (Debian 13); v3 has no
// <catch2/catch.hpp>, so a test file that includes it builds on Debian 12 alone.
#include "support/catch.hpp"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

TEST_CASE("the tests include Catch2 through support/catch.hpp alone, which builds with v2 and v3", "[build]") {
    const fs::path tests = fs::path(ATTNTRACE_SOURCE_DIR) / "tests";
    // main.cpp holds Catch2's session, v2's or v3's; support/catch.hpp the rest.
    const std::vector<fs::path> allowed{tests / "main.cpp", tests / "support" / "catch.hpp"};
    std::size_t files = 0, allowed_includes = 0;
    for (const auto& entry : fs::recursive_directory_iterator(tests)) {
        const auto extension = entry.path().extension();
        if (extension != ".cpp" && extension != ".hpp") continue;
        ++files;
        std::ifstream in(entry.path());
        for (std::string line; std::getline(in, line);) {
            if (line.rfind("#include <catch2/", 0) != 0) continue;
            const bool ok = entry.path() == allowed[0] || entry.path() == allowed[1];
            INFO(entry.path().string() << ": " << line);
            CHECK(ok);
            allowed_includes += ok;
        }
    }
    CHECK(files > 30);
    CHECK(allowed_includes >= 5);  // the scan sees the includes there are: main.cpp's and the shim's
}
