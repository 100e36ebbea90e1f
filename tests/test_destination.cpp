// Output follows its destination: colour and width are decided by where the output goes (a
// file named by -o is no terminal), TERM=dumb gets no colour, "-" is standard output for -o
// and --svg, standard input is read when no INPUT is named and something is piped in, and
// size options take their suffixes in any case.
#include "support/cli.hpp"
#include "support/error_line.hpp"

#include "util/memory.hpp"

#include "support/catch.hpp"

#include <algorithm>
#include <filesystem>
#include <sstream>

using Catch::Contains;
using Catch::StartsWith;

namespace {

constexpr const char* escape = "\x1b[";

// A table wider than the test terminal's 200 columns: 40 tokens, 8 characters a column.
std::string wide_input() { return cli::run({"generate", "-n", "40", "-d", "4"}).out; }

// The longest line of `text`, in bytes.
std::size_t longest_line(const std::string& text) {
    std::istringstream in(text);
    std::size_t longest = 0;
    for (std::string line; std::getline(in, line);) longest = std::max(longest, line.size());
    return longest;
}

bool elided(const std::string& table) { return table.find("  …  ") != std::string::npos; }

// The terminal of these runs: colour allowed (NO_COLOR removed, a TERM that has colour).
const std::map<std::string, std::string> colour_terminal{{"NO_COLOR", ""}, {"TERM", "xterm-256color"}, {"COLUMNS", ""}};

}  // namespace

TEST_CASE("a file named by -o gets no colour and no width limit, though the command was typed in a terminal",
          "[destination][cli]") {
    const cli::TempFile input(wide_input());
    const cli::TempDir folder;
    const std::string file = folder / "weights.txt";

    // To the terminal (200 columns): shaded, and the middle columns elided to fit.
    const auto shown = cli::run_in_terminal({input.path(), "-s", "weights"}, colour_terminal);
    REQUIRE(shown.exit_code == 0);
    CHECK_THAT(shown.out, Contains(escape));
    CHECK(elided(shown.out));

    // The same command with -o: the file has every column and no escape sequence.
    const auto written = cli::run_in_terminal({input.path(), "-s", "weights", "-o", file}, colour_terminal);
    REQUIRE(written.exit_code == 0);
    CHECK(written.out.empty());  // nothing on the terminal
    const std::string text = cli::read_file(file);
    CHECK(text.find(escape) == std::string::npos);
    CHECK_FALSE(elided(text));
    CHECK(longest_line(text) > 200);
    CHECK(text == cli::run({input.path(), "-s", "weights"}, "", {{"COLUMNS", ""}}).out);  // as a pipe gets it

    // Unless the options say otherwise.
    REQUIRE(cli::run_in_terminal({input.path(), "-s", "weights", "-o", file, "--color", "always"}, colour_terminal)
                .exit_code == 0);
    CHECK_THAT(cli::read_file(file), Contains(escape));
    REQUIRE(cli::run_in_terminal({input.path(), "-s", "weights", "-o", file, "--width", "100"}, colour_terminal)
                .exit_code == 0);
    CHECK(elided(cli::read_file(file)));
    CHECK(longest_line(cli::read_file(file)) <= 100 + 2 * 2);  // "…" and "Σ" are 3 and 2 bytes wide, one column each
}

TEST_CASE("COLUMNS sets the width of standard output only, never of a file", "[destination][cli]") {
    const cli::TempFile input(wide_input());
    const cli::TempDir folder;
    const auto piped = cli::run({input.path(), "-s", "weights"}, "", {{"COLUMNS", "100"}});
    CHECK(elided(piped.out));
    REQUIRE(cli::run({input.path(), "-s", "weights", "-o", folder / "w.txt"}, "", {{"COLUMNS", "100"}}).exit_code == 0);
    CHECK_FALSE(elided(cli::read_file(folder / "w.txt")));
}

TEST_CASE("TERM=dumb and NO_COLOR get no colour on a terminal", "[destination][cli]") {
    auto env = colour_terminal;
    CHECK_THAT(cli::run_in_terminal({"-s", "weights"}, env).out, Contains(escape));
    env["TERM"] = "dumb";
    const auto dumb = cli::run_in_terminal({"-s", "weights"}, env);
    CHECK(dumb.exit_code == 0);
    CHECK_THAT(dumb.out, Contains("Attention weights"));
    CHECK(dumb.out.find(escape) == std::string::npos);
    env["TERM"] = "xterm-256color";
    env["NO_COLOR"] = "1";
    CHECK(cli::run_in_terminal({"-s", "weights"}, env).out.find(escape) == std::string::npos);
    // --color always still shades, whatever the terminal.
    env["TERM"] = "dumb";
    CHECK_THAT(cli::run_in_terminal({"-s", "weights", "--color", "always"}, env).out, Contains(escape));
}

TEST_CASE("a dash names standard output for -o and for --svg, and no file named by a dash is made", "[destination][cli]") {
    const bool dash_before = std::filesystem::exists("-");
    const auto to_dash = cli::run({"-o", "-", "-s", "weights"});
    CHECK(to_dash.exit_code == 0);
    CHECK(to_dash.out == cli::run({"-s", "weights"}).out);

    const cli::TempDir folder;
    const auto svg = cli::run({"--svg", "-", "-f", "json", "-o", folder / "trace.json"});
    CHECK(svg.exit_code == 0);
    CHECK_THAT(svg.out, StartsWith("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg"));
    CHECK_THAT(cli::read_file(folder / "trace.json"), StartsWith("{\n  \"schema\": \"attntrace.trace/1\""));

    const auto similarity = cli::run({"similarity", "example:fruit_and_pets", "--svg", "-", "-o", folder / "s.txt"});
    CHECK(similarity.exit_code == 0);
    CHECK_THAT(similarity.out, StartsWith("<?xml"));
    CHECK(std::filesystem::exists("-") == dash_before);
}

TEST_CASE("with no INPUT, a pipe or a file on standard input is read as the input", "[destination][cli]") {
    const std::string two = R"({"sentence": "a b", "embeddings": {"a": [1, 0], "b": [0, 1]}})";
    const auto piped = cli::run({"-s", "weights", "-f", "json"}, two);
    REQUIRE(piped.exit_code == 0);
    CHECK_THAT(piped.out, Contains("\"input\": \"<stdin>\""));
    CHECK_THAT(piped.out, Contains("\"tokens\": [\"a\", \"b\"]"));
    // The same trace as "-" reads.
    CHECK(piped.out == cli::run({"-", "-s", "weights", "-f", "json"}, two).out);

    // What generate writes, piped straight in.
    const auto generated = cli::run({"generate", "-n", "5", "-d", "3"});
    const auto traced = cli::run({"-m", "causal", "-s", "weights"}, generated.out);
    CHECK(traced.exit_code == 0);
    CHECK_THAT(traced.out, Contains("causal mode · 5 tokens"));

    // An input named, or an example asked for: standard input is left alone.
    CHECK_THAT(cli::run({"--example", "teacher_smiled", "-s", "weights"}, "not JSON").out, Contains("example:teacher_smiled"));
}

TEST_CASE("with no INPUT and nothing piped in (a terminal, /dev/null), the built-in example is traced",
          "[destination][cli]") {
    const auto r = cli::run({"-s", "weights"});  // stdin: /dev/null
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("example:your_journey"));
    CHECK_THAT(cli::run_in_terminal({"-s", "weights"}).out, Contains("example:your_journey"));
}

TEST_CASE("an empty or blank standard input with no INPUT is no input: the built-in example, and a note",
          "[destination][cli]") {
    // A notebook's kernel gives every command an empty pipe; a blank file is as empty.
    const auto example = cli::run({"-s", "weights"});
    for (const std::string empty : {" ", "\n", " \t\r\n"}) {
        const auto r = cli::run({"-s", "weights"}, empty);
        CHECK(r.exit_code == 0);
        CHECK(r.out == example.out);
        CHECK(r.err ==
              "attntrace: note: standard input is empty, so this is the built-in example your_journey (name an INPUT, "
              "or pipe one in, to trace your own)\n");
    }
    // The note comes only with a run that succeeds: a refusal is still its one line.
    cli::require_error_line(cli::run({"-q", "nobody"}, "\n"), 2, "--query: \"nobody\" is neither a token");
}

TEST_CASE("sizes take their suffix in any case, always in binary units", "[destination][limits]") {
    using attntrace::parse_size;
    constexpr std::uint64_t k = 1024, m = k * k, g = m * k;
    CHECK(parse_size("100000") == 100000u);
    CHECK(parse_size("100000b") == 100000u);
    CHECK(parse_size("100000B") == 100000u);
    for (const char* text : {"4g", "4G", "4gb", "4GB", "4Gb", "4gib", "4GiB", "4GIB"}) {
        INFO(text);
        CHECK(parse_size(text) == 4 * g);
    }
    for (const char* text : {"512m", "512M", "512MB", "512mib", "512MiB"}) {
        INFO(text);
        CHECK(parse_size(text) == 512 * m);
    }
    CHECK(parse_size("2k") == 2 * k);
    CHECK(parse_size("2K") == 2 * k);
    CHECK(parse_size("2KiB") == 2 * k);
    CHECK(parse_size("1.5GiB") == 3 * g / 2);
    CHECK(parse_size("1t") == g * k);
    for (const char* text : {"", "g", "4x", "4 g", "4gi", "4ibg", "-1", "4gg", "4bb", "nan", "inf", "1e30"}) {
        INFO(text);
        CHECK_FALSE(parse_size(text));
    }

    // On the command line: accepted as sizes, and refused with the forms it takes.
    CHECK(cli::run({"--max-memory", "4gib", "-s", "weights"}).exit_code == 0);
    CHECK(cli::run({"--max-input", "1m", "-s", "weights"}).exit_code == 0);
    const auto too_small = cli::run({cli::data_file("your_journey.json"), "--max-input", "100B"});
    CHECK(too_small.exit_code == 1);
    CHECK_THAT(too_small.err, Contains("input larger than 100 bytes, the limit set by --max-input"));
    const auto bad = cli::run({"--max-memory", "4 gigs"});
    CHECK(bad.exit_code == 2);
    CHECK_THAT(bad.err, Contains("expected a size such as 512M, 4g or 4GiB, found 4 gigs"));
}
