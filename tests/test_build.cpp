// What the build needs to go on building on the next Debian: the tests reach Catch2 only
// through support/catch.hpp, which includes v2 (Debian 12) or v3 (Debian 13); v3 has no
// <catch2/catch.hpp>, so a test file that includes it builds on Debian 12 alone.
#include "support/catch.hpp"
#include "support/cli.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>
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

namespace {

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

// Issue 30's size rules, measured by tests/tools/function_sizes.py over the whole of src/; and
// the tool itself catching a function and a file that are too long, so that the first check can
// fail.
TEST_CASE("no function over 70 lines and no source file over 700 in src", "[build]") {
    const std::string source = ATTNTRACE_SOURCE_DIR;
    const std::string tool = source + "/tests/tools/function_sizes.py";
    const cli::Result rules = cli::run_program({"/usr/bin/python3", tool, source + "/src"});
    INFO(rules.out << rules.err);
    CHECK(rules.exit_code == 0);
    CHECK(rules.out.find(" functions: 0 over 70 lines, 0 files over 700 lines") != std::string::npos);

    // reference.hpp's self_attention runs from its signature to its closing brace over more than
    // 20 lines, and the file itself over more than 50.
    const cli::Result strict = cli::run_program({"/usr/bin/python3", tool, "--max-function", "20", "--max-file", "50",
                                                 source + "/src/attention/reference.hpp"});
    INFO(strict.out << strict.err);
    CHECK(strict.exit_code == 1);
    CHECK(strict.out.find("reference.hpp:") != std::string::npos);
    CHECK(strict.out.find("self_attention") != std::string::npos);
    CHECK(strict.out.find(": 1 over 20 lines, 1 files over 50 lines") != std::string::npos);
}

// A switch over ModeFamily names every family and has no `default:`, so that -Wswitch (an error
// for this build: CMakeLists.txt) lists every place a new family must decide. Each switch is
// read from `switch (` to its closing brace; the families are the enumerators of modes.hpp.
TEST_CASE("every switch over a mode family has a case for each family and no default", "[build]") {
    const fs::path src = fs::path(ATTNTRACE_SOURCE_DIR) / "src";
    const std::string modes = read_file(src / "attention" / "modes.hpp");
    const std::size_t open = modes.find("enum class ModeFamily {");
    REQUIRE(open != std::string::npos);
    const std::string body = modes.substr(open, modes.find("};", open) - open);
    std::vector<std::string> families;
    for (std::size_t at = body.find('\n'); at != std::string::npos; at = body.find('\n', at + 1)) {
        std::size_t first = at + 1;
        while (first < body.size() && body[first] == ' ') ++first;
        const std::size_t end = body.find(',', first);
        if (end != std::string::npos && end < body.find('\n', first)) families.push_back(body.substr(first, end - first));
    }
    REQUIRE(families == std::vector<std::string>{"single_sequence", "encoder_decoder"});
    std::size_t switches = 0;
    for (const auto& entry : fs::recursive_directory_iterator(src)) {
        if (entry.path().extension() != ".cpp" && entry.path().extension() != ".hpp") continue;
        const std::string text = read_file(entry.path());
        for (std::size_t at = text.find("switch ("); at != std::string::npos; at = text.find("switch (", at + 1)) {
            const std::size_t brace = text.find('{', at);
            const std::string head = text.substr(at, brace - at);  // "switch (family_of(trace.mode)) "
            const std::size_t close = head.rfind(')');
            const std::string subject = head.substr(8, close == std::string::npos ? 0 : close - 8);
            const bool code = close != std::string::npos && subject.find(' ') == std::string::npos &&
                              head.find_first_not_of(' ', close + 1) == std::string::npos;
            if (!code || subject.find("family") == std::string::npos) continue;
            ++switches;
            std::size_t depth = 0, end = brace;
            std::string top;  // the switch's own text, without its cases' nested blocks
            for (; end < text.size(); ++end) {
                if (text[end] == '{') ++depth;
                else if (text[end] == '}' && --depth == 0) break;
                else if (depth == 1) top += text[end];
            }
            INFO(entry.path().string() << ": " << head);
            CHECK(top.find("default:") == std::string::npos);
            for (const std::string& family : families) CHECK(top.find("case ModeFamily::" + family + ":") != std::string::npos);
        }
    }
    CHECK(switches >= 30);  // the scan sees the switches there are
}
