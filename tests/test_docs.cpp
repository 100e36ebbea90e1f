// Every command shown with its output in the docs (```console blocks whose lines start with
// "$ build/attntrace") is run again; the test fails when the output drifts from the page.
#include "support/cli.hpp"

#include "support/catch.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
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
// last digits depend on how the compiler ordered the sums (the sanitizer builds are clang -O1,
// the release GCC -O3), and so does whether it is 0 at all: a sum rounded the same way twice
// gives exactly 0, which decode words differently ("largest difference 0, to the last bit"
// against "within 1e-12 of their size: largest difference 5.6e-17, not 0, because …"). So in
// their output a figure below 1e-12 (the tolerance) reads as "ε", and a residual of 0 and the
// words around either read alike. Everything else is still compared, byte for byte.
std::string without_rounding_residuals(const Shown& shown, const std::string& text) {
    const auto has = [&](const std::string& arg) { return std::find(shown.args.begin(), shown.args.end(), arg) != shown.args.end(); };
    if (!has("--check") && !has("--tiles") && !has("decode")) return text;
    static const std::regex tiny(R"(\b\d(\.\d+)?e-(1[3-9]|[2-9]\d|\d{3})\b)");
    static const std::vector<std::pair<std::regex, std::string>> same_residual{
        {std::regex(R"( \(every row at once, by matrix products\): largest difference 0, to the last bit)"), " ≈ (ε)"},
        {std::regex(R"(: largest difference 0, to the last bit)"), " ≈ (ε)"},
        {std::regex(R"( within 1e-12 of their size: largest difference ε(, not 0(, because|:) [^\n]*)?)"), " ≈ (ε)"},
        {std::regex(R"(\(largest difference 0\))"), "(largest difference ε)"},
        {std::regex(R"( to the last bit \(largest difference ε\))"), " within 1e-12 of their size (largest difference ε)"},
        {std::regex(R"(largest \|context − weights·values\| = 0,)"), "largest |context − weights·values| = ε,"},
    };
    std::string out = std::regex_replace(text, tiny, "ε");
    for (const auto& [pattern, replacement] : same_residual) out = std::regex_replace(out, pattern, replacement);
    return out;
}

// JSON and JSON Lines print every number in full: their last digits depend on the build too
// (GCC or clang, the copy of the kernels the CPU runs: 0.9422 with one, 0.9421999999999999
// with another). Where the text differs, the JSON is compared field by field, numbers within
// 1e-6 of their size (float32's precision is about 6e-8), fields in the same order.
bool same_json(const nlohmann::ordered_json& x, const nlohmann::ordered_json& y) {
    if (x.is_number() && y.is_number()) {
        const double u = x.get<double>(), v = y.get<double>();
        return std::abs(u - v) <= 1e-6 * std::max({1.0, std::abs(u), std::abs(v)});
    }
    if (x.type() != y.type() || x.size() != y.size()) return false;
    if (x.is_object()) {
        for (auto a = x.begin(), b = y.begin(); a != x.end(); ++a, ++b)
            if (a.key() != b.key() || !same_json(*a, *b)) return false;
        return true;
    }
    if (x.is_array()) {
        for (std::size_t i = 0; i < x.size(); ++i)
            if (!same_json(x[i], y[i])) return false;
        return true;
    }
    return x == y;
}

// Each line of JSON Lines, or the whole text as one JSON document.
bool same_json_text(const std::string& got, const std::string& shown, bool lines) {
    std::istringstream a(got), b(shown);
    std::string line_a, line_b;
    try {
        if (!lines) return same_json(nlohmann::ordered_json::parse(got), nlohmann::ordered_json::parse(shown));
        while (true) {
            const bool more_a = static_cast<bool>(std::getline(a, line_a)),
                       more_b = static_cast<bool>(std::getline(b, line_b));
            if (more_a != more_b) return false;
            if (!more_a) return true;
            if (!same_json(nlohmann::ordered_json::parse(line_a), nlohmann::ordered_json::parse(line_b))) return false;
        }
    } catch (const nlohmann::json::exception&) {
        return false;
    }
}

}  // namespace

TEST_CASE("the output shown in README.md and docs/ is what attntrace prints", "[docs]") {
    const std::filesystem::path root = ATTNTRACE_SOURCE_DIR;
    std::vector<std::filesystem::path> pages{root / "README.md"};
    for (const auto& entry : std::filesystem::directory_iterator(root / "docs"))
        if (entry.path().extension() == ".md") pages.push_back(entry.path());
    std::map<std::string, std::size_t> checked;
    for (const auto& page : pages) {
        for (Shown shown : shown_commands(page)) {
            INFO(shown.file << ":" << shown.line << ": " << shown.command);
            // A command that grades (check-answers) may be shown failing: its output then ends
            // with this line, which attntrace does not print.
            static const std::string exit_one = "[exit status 1]\n";
            int expected_exit = 0;
            if (shown.output.ends_with(exit_one)) {
                expected_exit = 1;
                shown.output.erase(shown.output.size() - exit_one.size());
            }
            // The docs show what a pipe or a file receives: no terminal width, no colour.
            // From the source tree, as a reader who cloned it runs them: data/… are its files.
            const auto r = cli::run_in(ATTNTRACE_SOURCE_DIR, shown.args, {{"COLUMNS", ""}, {"NO_COLOR", ""}});
            CHECK(r.exit_code == expected_exit);
            const auto format = std::find_if(shown.args.begin(), shown.args.end(),
                                             [](const std::string& a) { return a == "json" || a == "jsonl"; });
            if (format != shown.args.end() && r.out + r.err != shown.output)
                CHECK(same_json_text(r.out + r.err, shown.output, *format == "jsonl"));
            else CHECK(without_rounding_residuals(shown, r.out + r.err) == without_rounding_residuals(shown, shown.output));
            ++checked[shown.file];
        }
    }
    // Each page keeps its examples as console blocks (a page that lost them would pass unseen).
    CHECK(checked["README.md"] >= 1);
    CHECK(checked["walkthrough.md"] >= 15);
    CHECK(checked["multi-head.md"] >= 7);
    CHECK(checked["from-pytorch.md"] >= 2);
    CHECK(checked["input-format.md"] >= 1);
}
