// Every command shown with its output in the docs (```console blocks whose lines start with
// "$ build/attntrace") is run again; the test fails when the output drifts from the page.
#include "support/cli.hpp"

#include "support/catch.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

namespace {

struct Shown {
    std::string file;
    int line = 0;
    std::string command;
    std::vector<std::string> args;
    std::string output;
};

// Splits a command line at spaces, honouring '…' and "…" quoting (no other shell syntax).
std::vector<std::string> split_args(const std::string& command) {
    std::vector<std::string> args;
    std::string current;
    bool any = false;
    char quote = 0;
    for (const char c : command) {
        if (quote) {
            if (c == quote) quote = 0;
            else current += c;
        } else if (c == '\'' || c == '"') {
            quote = c;
            any = true;
        } else if (c == ' ') {
            if (any || !current.empty()) args.push_back(current);
            current.clear();
            any = false;
        } else {
            current += c;
        }
    }
    if (any || !current.empty()) args.push_back(current);
    return args;
}

std::vector<Shown> shown_commands(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::vector<Shown> out;
    bool in_console = false;
    int number = 0;
    for (std::string line; std::getline(in, line);) {
        ++number;
        if (!in_console) {
            in_console = line == "```console";
            continue;
        }
        if (line == "```") {
            in_console = false;
            continue;
        }
        const std::string prompt = "$ build/attntrace";
        if (line.rfind("$ ", 0) == 0) {
            REQUIRE(line.rfind(prompt, 0) == 0);  // only our own commands are shown
            Shown shown;
            shown.file = path.filename().string();
            shown.line = number;
            shown.command = line.substr(2);
            shown.args = split_args(line.substr(prompt.size()));
            out.push_back(std::move(shown));
        } else {
            REQUIRE(!out.empty());
            out.back().output += line + "\n";
        }
    }
    return out;
}

// --check, decode and --tiles print the rounding error they measured (say "= 5.6e-17"); its
// last digits depend on how the compiler ordered the sums (the sanitizer builds are -O1, the
// release -O2), so in their output a figure below 1e-12 (the tolerance) reads as "ε" on both
// sides. Everything else, and whether a figure is that small at all, is still compared.
std::string without_rounding_residuals(const Shown& shown, const std::string& text) {
    const auto has = [&](const std::string& arg) { return std::find(shown.args.begin(), shown.args.end(), arg) != shown.args.end(); };
    if (!has("--check") && !has("--tiles") && !has("decode")) return text;
    static const std::regex tiny(R"(\b\d(\.\d+)?e-(1[3-9]|[2-9]\d|\d{3})\b)");
    return std::regex_replace(text, tiny, "ε");
}

}  // namespace

TEST_CASE("the output shown in README.md and docs/ is what attntrace prints", "[docs]") {
    const std::filesystem::path root = ATTNTRACE_SOURCE_DIR;
    std::vector<std::filesystem::path> pages{root / "README.md"};
    for (const auto& entry : std::filesystem::directory_iterator(root / "docs"))
        if (entry.path().extension() == ".md") pages.push_back(entry.path());
    std::map<std::string, std::size_t> checked;
    for (const auto& page : pages) {
        for (const auto& shown : shown_commands(page)) {
            INFO(shown.file << ":" << shown.line << ": " << shown.command);
            // The docs show what a pipe or a file receives: no terminal width, no colour.
            const auto r = cli::run(shown.args, "", {{"COLUMNS", ""}, {"NO_COLOR", ""}});
            CHECK(r.exit_code == 0);
            CHECK(without_rounding_residuals(shown, r.out + r.err) == without_rounding_residuals(shown, shown.output));
            ++checked[shown.file];
        }
    }
    // Each page keeps its examples as console blocks (a page that lost them would pass unseen).
    CHECK(checked["README.md"] >= 1);
    CHECK(checked["walkthrough.md"] >= 15);
    CHECK(checked["multi-head.md"] >= 7);
}
