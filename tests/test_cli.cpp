// The built binary as a user runs it: output, exit codes, and the stderr/stdout rules.
#include "support/cli.hpp"
#include "support/error_line.hpp"
#include "support/schema.hpp"
#include "util/utf8.hpp"

#include "support/catch.hpp"
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <fmt/format.h>
#include <fmt/ranges.h>

using Catch::Contains;
using Catch::StartsWith;
using nlohmann::json;

TEST_CASE("with no arguments attntrace traces the journey example", "[cli]") {
    const auto r = cli::run({});
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.empty());
    CHECK_THAT(r.out, Contains("plain mode · 6 tokens"));
    CHECK_THAT(r.out, Contains("example:your_journey"));
    for (const char* stage : {"inputs", "queries", "keys", "values", "scores", "scaled", "masked", "weights", "context"})
        CHECK_THAT(r.out, Contains(std::string("\n") + stage + " · "));
    // The row of "journey" in the course example, as printed with 4 decimals.
    CHECK_THAT(r.out, Contains("journey  0.9544   1.4950  1.4754  0.8434  0.7070  1.0865"));
    CHECK_THAT(r.out, Contains("journey  0.1385   0.2379  0.2333  0.1240  0.1082  0.1581  1.0000  journey"));
}

TEST_CASE("JSON output parses back and follows the schema in every mode", "[cli][json]") {
    for (const char* mode : {"plain", "self", "causal"}) {
        INFO(mode);
        const auto r = cli::run({"-f", "json", "-m", mode});
        REQUIRE(r.exit_code == 0);
        CHECK(r.err.empty());
        const json doc = json::parse(r.out);
        schema::require_trace(doc);
        CHECK(doc["mode"] == mode);
        CHECK(doc["stages"].size() == 9);
        CHECK(doc["tokens"] == json({"Your", "journey", "starts", "with", "one", "step"}));
        CHECK_THAT(r.out, !Contains("NaN") && !Contains("Infinity") && !Contains("inf"));
    }
}

TEST_CASE("causal JSON: masked scores are null, masked weights 0, both carry allowed", "[cli][json]") {
    const json doc = json::parse(cli::run({"-f", "json", "-m", "causal", "-s", "masked,weights"}).out);
    REQUIRE(doc["stages"].size() == 2);
    const auto& masked = doc["stages"][0];
    const auto& weights = doc["stages"][1];
    CHECK(masked["name"] == "masked");
    CHECK(masked["data"][0][1].is_null());
    CHECK(masked["data"][1][0].is_number());
    CHECK(masked["allowed"][0] == json({true, false, false, false, false, false}));
    CHECK(weights["data"][0] == json({1.0, 0.0, 0.0, 0.0, 0.0, 0.0}));
    CHECK(weights["allowed"] == masked["allowed"]);
}

TEST_CASE("JSON numbers are written round-trip exact", "[cli][json]") {
    const json doc = json::parse(cli::run({"-f", "json", "-s", "inputs,scores"}).out);
    CHECK(doc["stages"][0]["data"][1] == json({0.55, 0.87, 0.66}));
    // journey · Your in double arithmetic, as the program computes it (x₁y₁ + x₂y₂ + x₃y₃).
    const double expected = 0.55 * 0.43 + 0.87 * 0.15 + 0.66 * 0.89;
    CHECK(doc["stages"][1]["data"][1][0].get<double>() == Approx(expected).epsilon(1e-15));
}

TEST_CASE("stage selection with --stage works stages in both formats", "[cli]") {
    const auto table = cli::run({"-s", "weights,scores"});
    REQUIRE(table.exit_code == 0);
    CHECK_THAT(table.out, Contains("\nscores · 6×6") && Contains("\nweights · 6×6"));
    CHECK_THAT(table.out, !Contains("\ninputs ·") && !Contains("\ncontext ·"));
    CHECK(table.out.find("\nscores ·") < table.out.find("\nweights ·"));  // pipeline order

    const json doc = json::parse(cli::run({"-f", "json", "--stage", "context"}).out);
    REQUIRE(doc["stages"].size() == 1);
    CHECK(doc["stages"][0]["name"] == "context");
}

TEST_CASE("input from a file, from stdin, and from the built-in examples", "[cli]") {
    const std::string text = R"({"sentence": "a b", "embeddings": {"a": [1, 0], "b": [0, 1]}})";
    cli::TempFile file(text);
    const auto from_file = cli::run({file.path(), "-f", "json"});
    const auto from_stdin = cli::run({"-", "-f", "json"}, text);
    REQUIRE(from_file.exit_code == 0);
    REQUIRE(from_stdin.exit_code == 0);
    CHECK(json::parse(from_file.out)["stages"] == json::parse(from_stdin.out)["stages"]);
    CHECK(json::parse(from_stdin.out)["input"] == "<stdin>");

    const auto list = cli::run({"--list-examples"});
    REQUIRE(list.exit_code == 0);
    for (const char* name : {"your_journey", "teacher_smiled", "book_borrowed", "big_dream", "big_mistake", "bank_river", "bank_money"})
        CHECK_THAT(list.out, Contains(name));
    CHECK(cli::run({"--example", "teacher_smiled"}).exit_code == 0);
}

TEST_CASE("the file's mode is the default and --mode overrides it", "[cli]") {
    cli::TempFile file(R"({"mode": "causal", "sentence": "a b", "embeddings": {"a": [1, 0], "b": [0, 1]}})");
    CHECK(json::parse(cli::run({file.path(), "-f", "json"}).out)["mode"] == "causal");
    CHECK(json::parse(cli::run({file.path(), "-f", "json", "-m", "self"}).out)["mode"] == "self");
}

TEST_CASE("generated weights are announced, and --seed and --dim change them", "[cli]") {
    const auto r = cli::run({"-m", "self"});
    CHECK_THAT(r.out, Contains("weights: generated from seed 123 (splitmix64)"));
    const json a = json::parse(cli::run({"-m", "self", "-f", "json"}).out);
    const json b = json::parse(cli::run({"-m", "self", "-f", "json", "--seed", "7"}).out);
    const json c = json::parse(cli::run({"-m", "self", "-f", "json", "--dim", "2"}).out);
    CHECK(a["weights"] == json({{"source", "generated"}, {"generator", "splitmix64"}, {"seed", 123}}));
    CHECK(b["weights"]["seed"] == 7);
    CHECK(a["stages"][8]["data"] != b["stages"][8]["data"]);
    CHECK(c["dims"] == json({{"d_in", 3}, {"d_k", 2}, {"d_v", 2}}));
}

TEST_CASE("the thread count (--threads) does not change a byte of the output", "[cli][threads]") {
    for (const char* mode : {"plain", "self", "causal"}) {
        const auto one = cli::run({"-m", mode, "-f", "json", "--threads", "1"});
        const auto two = cli::run({"-m", mode, "-f", "json", "--threads", "2"});
        REQUIRE(one.exit_code == 0);
        CHECK(one.out == two.out);
    }
}

TEST_CASE("usage errors exit 2 with one line on stderr", "[cli][errors]") {
    cli::require_error_line(cli::run({"--bogus"}), 2, "--bogus");
    cli::require_error_line(cli::run({"--mode", "nonsense"}), 2, "--mode: \"nonsense\" is not one of plain, self, causal, bahdanau");
    cli::require_error_line(cli::run({"--digits", "-3"}), 2, "--digits");
    cli::require_error_line(cli::run({"--digits", "x"}), 2, "--digits");
    cli::require_error_line(cli::run({"--format", "xml"}), 2, "--format");
    cli::require_error_line(cli::run({"--threads", "0"}), 2, "--threads");
    cli::require_error_line(cli::run({"--stage", "softmax"}), 2, "no stage named \"softmax\"");
    cli::require_error_line(cli::run({"--stage", "softmax", "/nonexistent.json"}), 2, "no stage named \"softmax\"");
    cli::require_error_line(cli::run({"--stage", "encoder_states"}), 2, "no stage \"encoder_states\" in mode plain");
    cli::require_error_line(cli::run({"--seed", "-1"}), 2, "--seed: expected a whole number");
    cli::require_error_line(cli::run({"--seed", "99999999999999999999"}), 2, "--seed: expected a whole number");
    cli::require_error_line(cli::run({"--width", "-5"}), 2, "--width");
    cli::require_error_line(cli::run({"--dim", "2"}), 2, "plain mode has none");
    cli::require_error_line(cli::run({"--list-examples", "--example", "x"}), 2, "do not go together");
    cli::require_error_line(cli::run({"--example", "nope"}), 2, "no example named \"nope\"");
    cli::require_error_line(cli::run({"a.json", "--example", "your_journey"}), 2, "do not go together");
    cli::TempFile with_weights(R"({"tokens": ["a"], "embeddings": [[1]], "weights": {"query": [[1]], "key": [[1]], "value": [[1]]}})");
    cli::require_error_line(cli::run({with_weights.path(), "-m", "self", "--dim", "2"}), 2,
                            "--dim sets the size of generated weights");
}

TEST_CASE("help and version go to stdout and exit 0", "[cli]") {
    const auto help = cli::run({"--help"});
    CHECK(help.exit_code == 0);
    CHECK_THAT(help.out, Contains("--mode") && Contains("--format") && Contains("--stage"));
    const auto version = cli::run({"--version"});
    CHECK(version.exit_code == 0);
    CHECK_THAT(version.out, StartsWith("attntrace "));
}

TEST_CASE("the help groups the options, names what each takes, and ends with examples", "[cli][help]") {
    const std::string help = cli::run({"--help"}).out;
    // The groups, in this order.
    std::size_t at = 0;
    for (const char* group : {"\nInput:\n", "\nAttention:\n", "\nLong inputs:\n", "\nOutput:\n", "\nLimits:\n",
                              "\nHelp:\n", "\nSubcommands:\n", "\nExamples:\n"}) {
        INFO(group);
        const std::size_t found = help.find(group, at);
        CHECK(found != std::string::npos);
        at = found == std::string::npos ? at : found;
    }
    // Each option that takes a value says what: FILE, N, SIZE, NAME, or the names it takes.
    for (const char* option :
         {"\n  --example NAME ", "\n  -m,--mode plain|self|causal|bahdanau\n", "\n  --heads H ", "\n  --top K ",
          "\n  --threads N ", "\n  -f,--format table|json|markdown|csv|jsonl|html\n", "\n  -o,--output FILE ",
          "\n  -s,--stage NAME,... ", "\n  -q,--query TOKEN|N ", "\n  --svg FILE ", "\n  --max-memory SIZE ",
          "\n  --max-time DURATION ", "\n  -V,--version ", "\n  --tidy "}) {
        INFO(option);
        CHECK_THAT(help, Contains(option));
    }
    CHECK_THAT(help, Contains("\nExamples:\n  attntrace\n      the built-in example"));
    // -V is --version.
    const auto v = cli::run({"-V"});
    CHECK(v.exit_code == 0);
    CHECK(v.out == cli::run({"--version"}).out);
    // Each command's help has its own examples.
    for (const char* command : {"similarity", "generate", "bench", "compare"}) {
        INFO(command);
        const auto r = cli::run({command, "--help"});
        CHECK(r.exit_code == 0);
        CHECK_THAT(r.out, Contains(std::string("\nExamples:\n  attntrace ") + command));
    }
}

TEST_CASE("every example in the help of every command runs as shown", "[cli][help][words]") {
    // Run by sh in a folder with the files the examples name, attntrace found on PATH.
    const cli::TempDir folder;
    std::ofstream(folder / "my_sentence.json") << R"({"sentence": "the cat sat", "embeddings": {"the": [1, 0], "cat": [0, 1], "sat": [1, 1]}})";
    REQUIRE(cli::run({"generate", "-n", "300", "-d", "8", "-o", folder / "long.json"}).exit_code == 0);
    REQUIRE(cli::run({"generate", "-n", "3", "-d", "2", "-f", "npz", "-o", folder / "layer.npz"}).exit_code == 0);
    // check-answers' examples name the practice files of data/; the quiz's, an answers file
    // (ten answers, wrong or right: the example grades whatever it is given).
    std::filesystem::create_directory(folder / "data");
    std::filesystem::create_directory_symlink(std::filesystem::path(ATTNTRACE_SOURCE_DIR) / "data" / "practice",
                                              folder / "data/practice");
    std::ofstream(folder / "answers.txt") << "0\n0.5\n1\n0\n0.25\n0\n0\n1\n0.5\n0\n";
    // Exit 0 but where the example's own words say otherwise: a practice file that differs
    // from the trace, and quizzes whose answers are not all right (the first two read an
    // empty standard input: no answer) end with 1.
    const std::map<std::string, int> exit_not_0{
        {"attntrace check-answers example:teacher_smiled \\\n      data/practice/smiled_by_sum.json -f json", 1},
        {"attntrace quiz", 1},
        {"attntrace quiz --mode causal --stage masked,weights --seed 7", 1},
        {"attntrace quiz --seed 3 --rounds 10 --answers answers.txt -f json", 1}};
    const std::string binary_dir = std::filesystem::path(ATTNTRACE_BINARY).parent_path();
    const std::string path = binary_dir + ":" + std::getenv("PATH");
    std::size_t ran = 0;
    std::set<std::string> not_0_seen;
    for (const std::vector<std::string>& command :
         {std::vector<std::string>{"--help"}, {"similarity", "--help"}, {"generate", "--help"}, {"bench", "--help"},
          {"compare", "--help"}, {"decode", "--help"}, {"check-answers", "--help"}, {"quiz", "--help"}}) {
        const std::string help = cli::run(command).out;
        std::istringstream lines(help.substr(help.find("\nExamples:\n")));
        for (std::string line; std::getline(lines, line);) {
            if (line.rfind("  attntrace", 0) != 0) continue;
            // A command wider than the help goes on below, each line but the last ending in " \\".
            std::string example = line.substr(2);
            while (example.ends_with(" \\") && std::getline(lines, line)) example += "\n" + line;
            // The whole benchmark takes minutes: it is the one example not run here.
            if (example == "attntrace bench") continue;
            INFO(example);
            const auto r = cli::run_program({"sh", "-c", "cd \"$1\" && " + example, "sh", folder.path()}, "",
                                            {{"PATH", path}});
            const auto other = exit_not_0.find(example);
            if (other != exit_not_0.end()) not_0_seen.insert(example);
            CHECK(r.exit_code == (other == exit_not_0.end() ? 0 : other->second));
            CHECK(r.err.empty());
            ++ran;
        }
    }
    CHECK(ran >= 21);
    CHECK(not_0_seen.size() == exit_not_0.size());  // each exception is an example there is
    // What the examples wrote.
    for (const char* file : {"trace.csv", "words.svg", "long.json", "long.safetensors"})
        CHECK(std::filesystem::file_size(folder / file) > 0);
}

TEST_CASE("a missing file or a directory is a data error", "[cli][errors]") {
    cli::require_error_line(cli::run({"/nonexistent/input.json"}), 1, "cannot read /nonexistent/input.json: No such file");
    cli::require_error_line(cli::run({"/"}), 1, "cannot read /: it is a directory");
}

namespace {

// n tokens with d-dimensional embeddings from a fixed formula (no generator involved).
std::string long_input(int n, int d) {
    nlohmann::json doc;
    doc["tokens"] = json::array();
    doc["embeddings"] = json::array();
    for (int i = 0; i < n; ++i) {
        doc["tokens"].push_back(fmt::format("w{}", i));
        json row = json::array();
        for (int k = 0; k < d; ++k) row.push_back(std::sin(0.37 * i + 1.3 * k));
        doc["embeddings"].push_back(row);
    }
    return doc.dump();
}

}  // namespace

TEST_CASE("threads split a long input and still give identical bytes", "[cli][threads]") {
    // 400 rows of 8: thirteen row blocks, and enough work (400 × 8 × 400 multiply-adds for the
    // scores) that the kernels share it between the threads (util/parallel.hpp).
    cli::TempFile file(long_input(400, 8));
    for (const char* mode : {"plain", "self", "causal"}) {
        INFO(mode);
        const auto one = cli::run({file.path(), "-m", mode, "-f", "json", "-s", "weights", "-s", "context", "--threads", "1"});
        const auto two = cli::run({file.path(), "-m", mode, "-f", "json", "-s", "weights", "-s", "context", "--threads", "2"});
        REQUIRE(one.exit_code == 0);
        CHECK(one.out == two.out);
        const auto table_one = cli::run({file.path(), "-m", mode, "--threads", "1"});
        const auto table_two = cli::run({file.path(), "-m", mode, "--threads", "2"});
        CHECK(table_one.out == table_two.out);
    }
}

TEST_CASE("JSON numbers read back to the very same doubles", "[cli][json]") {
    // Recompute journey · Your in the same order as the kernel (x₁y₁ + x₂y₂ + x₃y₃) and the
    // sum-normalised weight; both must survive the text round trip bit for bit.
    const json doc = json::parse(cli::run({"-f", "json", "-s", "inputs,scores,weights", "--normalize", "sum"}).out);
    const auto& x = doc["stages"][0]["data"];
    CHECK(x[1] == json({0.55, 0.87, 0.66}));
    const auto& scores = doc["stages"][1]["data"];
    double row_sum = 0;
    for (const auto& s : scores[1]) row_sum += s.get<double>();
    for (std::size_t j = 0; j < 6; ++j) {
        const double expected = scores[1][j].get<double>() / row_sum;
        const double written = doc["stages"][2]["data"][1][j].get<double>();
        CHECK(written == Approx(expected).epsilon(1e-15));
    }
    // Every number written has at most 17 significant digits and parses back exactly.
    for (const auto& stage : doc["stages"])
        for (const auto& row : stage["data"])
            for (const auto& value : row) {
                const double v = value.get<double>();
                CHECK(json::parse(json(v).dump()).get<double>() == v);
            }
}

TEST_CASE("a reader that goes away ends attntrace quietly", "[cli][pipe]") {
    cli::TempFile file(long_input(300, 16));  // far more JSON than a pipe buffer holds
    for (const bool ignore : {false, true}) {
        INFO("SIGPIPE ignored: " << ignore);
        const auto r = cli::run_into_closed_pipe({file.path(), "-f", "json"}, ignore);
        CHECK(r.exit_code == 141);  // killed by SIGPIPE, or exiting as if it were
        CHECK(r.err.empty());
    }
}

TEST_CASE("inputs that would be silently misread are refused", "[cli][errors]") {
    cli::TempFile duplicate(R"({"sentence": "a", "embeddings": {"a": [1, 2], "a": [3]}})");
    cli::require_error_line(cli::run({duplicate.path()}), 1, "/embeddings/a: duplicate key \"a\"");
    cli::TempFile duplicate_mode(R"({"mode": "self", "mode": "causal", "sentence": "a", "embeddings": {"a": [1]}})");
    cli::require_error_line(cli::run({duplicate_mode.path()}), 1, "/mode: duplicate key \"mode\"");
    cli::require_error_line(cli::run({"-"}, std::string("{\"sentence\":\"a\",\"embeddings\":{\"a\":[1]}}\0garbage", 47)), 1,
                            "<stdin>:1:40: invalid JSON: a NUL byte");
    cli::TempFile control(R"({"tokens": ["a\nb", "c"], "embeddings": [[1], [2]]})");
    cli::require_error_line(cli::run({control.path()}), 1, "/tokens/0: control or formatting character U+000A");
    cli::TempFile escape(R"({"sentence": "a \u001b[31m b", "embeddings": [[1], [2], [3]]})");
    cli::require_error_line(cli::run({escape.path()}), 1, "/sentence: control or formatting character U+001B");
    cli::TempFile located(R"({"description": "see 1e400", "sentence": "a",)" "\n" R"("embeddings": {"a": [1e400]}})");
    cli::require_error_line(cli::run({located.path()}), 1, ":2:22: number out of range: 1e400");
}

TEST_CASE("sum normalisation from the command line", "[cli]") {
    const auto r = cli::run({"--normalize", "sum", "-s", "weights"});
    REQUIRE(r.exit_code == 0);
    // The lecture: 0.9544 / 6.5617 = 0.1455 …
    CHECK_THAT(r.out, Contains("journey  0.1455   0.2278  0.2249  0.1285  0.1077  0.1656  1.0000  journey"));
    CHECK_THAT(r.out, Contains("A = S / (row sum of S)"));

    cli::TempFile negative(R"({"sentence": "a b", "embeddings": {"a": [1, 0], "b": [-0.5, 1]}})");
    const auto note = cli::run({negative.path(), "--normalize", "sum"});
    REQUIRE(note.exit_code == 0);
    CHECK_THAT(note.out, Contains("note: some scores are negative"));

    cli::TempFile overflow(R"({"tokens": ["a", "b"], "embeddings": [[1e154, 0], [1e154, 0]]})");
    cli::require_error_line(cli::run({overflow.path(), "--normalize", "sum"}), 1,
                            "the scores of \"a\" (row 1) sum to inf, not a finite positive number");
}

TEST_CASE("an overflow names the stage and the entry", "[cli][errors]") {
    cli::TempFile file(R"({"sentence": "tiny huge", "embeddings": {"tiny": [1e10, 1e10], "huge": [1e300, 1e300]}})");
    cli::require_error_line(cli::run({file.path()}), 1,
                            "the scores stage overflows: the entry for \"tiny\" (row 1) and \"huge\" (column 2) is inf");
}

TEST_CASE("paths that are not UTF-8 still give valid JSON and messages", "[cli][json]") {
    cli::TempFile file(R"({"sentence": "a", "embeddings": {"a": [1]}})", "bad\xff" "name.json");
    const auto r = cli::run({file.path(), "-f", "json"});
    REQUIRE(r.exit_code == 0);
    const json doc = json::parse(r.out);  // throws on invalid UTF-8
    CHECK_THAT(doc["input"].get<std::string>(), Contains("bad\\xffname.json"));
}

TEST_CASE("plain mode says when it does not use the input's weights", "[cli]") {
    cli::TempFile file(R"({"tokens": ["a"], "embeddings": [[1]], "weights": {"query": [[1]], "key": [[1]], "value": [[1]]}})");
    const auto r = cli::run({file.path(), "-f", "json"});
    REQUIRE(r.exit_code == 0);
    const json doc = json::parse(r.out);
    CHECK(doc["weights"]["source"] == "none");
    REQUIRE(doc["notes"].size() == 1);
    CHECK_THAT(doc["notes"][0].get<std::string>(), Contains("the input's weights are not used"));
}

TEST_CASE("misspelt options, values and commands are answered with the likely name", "[cli][errors]") {
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
        {{"--mode", "casual"}, "--mode: \"casual\" is not one of plain, self, causal, bahdanau (did you mean causal?)"},
        {{"--mode", "foo"}, "--mode: \"foo\" is not one of plain, self, causal, bahdanau"},
        {{"-f", "jsn"}, "--format: \"jsn\" is not one of table, json, markdown, csv, jsonl, html (did you mean json?)"},
        {{"--shade", "rows"}, "--shade: \"rows\" is not one of absolute, row, table (did you mean row?)"},
        {{"--temprature", "2"}, "attntrace has no option --temprature (did you mean --temperature?)"},
        {{"--formt=json"}, "attntrace has no option --formt (did you mean --format?)"},
        {{"-x"}, "attntrace has no option -x"},
        {{"simlarity", "example:fruit_and_pets"}, "\"simlarity\" is neither a file nor a command (did you mean similarity?)"},
        // The misspelt command alone, which parses as the INPUT.
        {{"simlarity"}, "\"simlarity\" is neither a file nor a command (did you mean similarity?)"},
        {{"decod", "--step", "2"}, "\"decod\" is neither a file nor a command (did you mean decode?)"},
        {{"gnerate"}, "\"gnerate\" is neither a file nor a command (did you mean generate?)"},
        {{"similarity", "example:fruit_and_pets", "--digts", "2"}, "attntrace similarity has no option --digts (did you mean --digits?)"},
        {{"compare", "a", "b", "--tokn", "x"}, "attntrace compare has no option --tokn (did you mean --token?)"},
    };
    for (const auto& [args, message] : cases) {
        INFO(args.front());
        const auto r = cli::run(args);
        CHECK(r.exit_code == 2);
        CHECK(r.out.empty());
        // The help to see is the command's own, once its name is read.
        const bool command = args.front() == "similarity" || args.front() == "compare";
        CHECK(r.err == "attntrace: error: " + message + " (see attntrace " + (command ? args.front() + " " : "") + "--help)\n");
    }
}

namespace {

// The options of a command that take lists (comma-separated, or given again): each must take
// one argument and leave the next to the command.
std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

}  // namespace

TEST_CASE("a list option takes one argument: the INPUT after it is the INPUT", "[cli][options]") {
    const cli::TempFile file(R"({"sentence": "a b", "embeddings": {"a": [1, 0], "b": [0, 1]}})");
    // -s NAME FILE: FILE is the INPUT, not a second stage.
    const auto r = cli::run({"-s", "weights", file.path(), "-f", "json"});
    REQUIRE(r.exit_code == 0);
    const json doc = json::parse(r.out);
    CHECK(doc["input"] == file.path());
    REQUIRE(doc["stages"].size() == 1);
    CHECK(doc["stages"][0]["name"] == "weights");
    // Given twice, the lists add up, in pipeline order; a comma list and a second -s together.
    const json both = json::parse(cli::run({"-s", "weights", "--stage", "scores,inputs", file.path(), "-f", "json"}).out);
    REQUIRE(both["stages"].size() == 3);
    CHECK(both["stages"][0]["name"] == "inputs");
    CHECK(both["stages"][2]["name"] == "weights");
    // The list option last, the INPUT first: the same.
    CHECK(json::parse(cli::run({file.path(), "-f", "json", "-s", "weights"}).out)["stages"] == doc["stages"]);
}

TEST_CASE("nothing after -- is an option, in any command", "[cli][options]") {
    // Files whose names start with "-": read as arguments after "--", never as options
    // ("-odd.json" is not -o dd.json), and no file but theirs in the folder afterwards.
    const cli::TempDir folder;
    const std::string source = cli::data_file("");
    std::filesystem::copy_file(source + "your_journey.json", folder / "-odd.json");
    std::filesystem::copy_file(source + "big_dream.json", folder / "-a.json");
    std::filesystem::copy_file(source + "big_mistake.json", folder / "-b.json");
    std::filesystem::copy_file(source + "teacher_smiled.json", folder / "-in.json");
    std::filesystem::copy_file(source + "practice/smiled_weights.json", folder / "-answers.json");
    std::filesystem::copy_file(source + "fruit_and_pets.json", folder / "-words.json");
    const std::vector<std::string> before = folder.names();
    const auto in_folder = [&](const std::vector<std::string>& args) { return cli::run_in(folder.path(), args); };

    const auto trace = in_folder({"-s", "weights", "--", "-odd.json"});
    CHECK(trace.exit_code == 0);
    CHECK_THAT(trace.out, Contains("\nweights · 6×6") && Contains(" · -odd.json"));
    const auto plain = in_folder({"-f", "json", "--", "-odd.json"});
    CHECK(json::parse(plain.out)["input"] == "-odd.json");
    const auto similarity = in_folder({"similarity", "--", "-words.json"});
    CHECK(similarity.exit_code == 0);
    CHECK_THAT(similarity.out, Contains("-words.json"));
    const auto compare = in_folder({"compare", "-t", "big", "--", "-a.json", "-b.json"});
    CHECK(compare.exit_code == 0);
    CHECK_THAT(compare.out, Contains("\"big\""));
    const auto decode = in_folder({"decode", "--step", "2", "--", "-odd.json"});
    CHECK(decode.exit_code == 0);
    CHECK_THAT(decode.out, Contains("-odd.json"));
    const auto check = in_folder({"check-answers", "--", "-in.json", "-answers.json"});
    CHECK(check.exit_code == 0);
    CHECK_THAT(check.out, Contains("verdict: pass"));
    // `help -- decode`: the help of decode.
    CHECK(in_folder({"help", "--", "decode"}).out == cli::run({"decode", "--help"}).out);
    // Commands that take no argument refuse one after "--", naming it; no option is read from it.
    cli::require_error_line(in_folder({"generate", "-n", "2", "--", "-odd.json"}), 2,
                            "attntrace generate takes no arguments besides its options: \"-odd.json\" is one too many");
    cli::require_error_line(in_folder({"quiz", "-s", "weights", "--", "-odd.json"}), 2,
                            "attntrace quiz takes no arguments besides its options: \"-odd.json\" is one too many");
    cli::require_error_line(in_folder({"bench", "--sizes", "8", "--", "-odd.json"}), 2,
                            "attntrace bench takes no arguments besides its options: \"-odd.json\" is one too many");
    // One argument too many after "--" is named alone (the "--" is no argument), even when it
    // looks like an option or is a second "--".
    cli::require_error_line(in_folder({"--", "-odd.json", "extra"}), 2,
                            "attntrace takes one argument, INPUT: \"extra\" is one too many");
    cli::require_error_line(in_folder({"--", "-odd.json", "-x"}), 2,
                            "attntrace takes one argument, INPUT: \"-x\" is one too many");
    cli::require_error_line(in_folder({"--", "-odd.json", "--"}), 2,
                            "attntrace takes one argument, INPUT: \"--\" is one too many");
    cli::require_error_line(in_folder({"compare", "-t", "big", "--", "-a.json", "-b.json", "-odd.json"}), 2,
                            "attntrace compare takes A and B: \"-odd.json\" is one too many");
    CHECK(folder.names() == before);
}

TEST_CASE("each list option of each command takes exactly one argument", "[cli][options]") {
    const cli::TempFile file(R"({"sentence": "a b", "embeddings": {"a": [1, 0], "b": [0, 1]}})");
    // trace -s, then an INPUT
    CHECK(cli::run({"-s", "weights", file.path()}).exit_code == 0);
    // quiz -m, -s and --example, then a word that is not theirs: one argument too many, not a
    // stage or a mode named after it.
    const cli::TempFile answers("0.5\n");
    for (const char* option : {"-m", "-s", "--example"}) {
        INFO(option);
        const std::string value = std::string(option) == "-m" ? "causal" : std::string(option) == "-s" ? "weights" : "your_journey";
        const auto r = cli::run({"quiz", option, value, "extra", "--answers", answers.path()});
        cli::require_error_line(r, 2, "attntrace quiz takes no arguments besides its options: \"extra\" is one too many");
        // Given twice, they add up: a quiz of one round on the causal weights of your_journey.
        const auto twice = cli::run({"quiz", "-n", "1", option, value, option, value, "-m", "causal", "-s", "weights",
                                     "--example", "your_journey", "--answers", answers.path()});
        CHECK(twice.exit_code <= 1);  // graded: right or wrong, not refused
        CHECK_THAT(twice.out, Contains("example:your_journey · causal mode"));
        CHECK_THAT(twice.out, Contains("weights"));
    }
    // bench --sizes, --modes, --dtypes, --threads, --paths: a word after each is one too many.
    const std::vector<std::pair<std::string, std::string>> bench{
        {"--sizes", "8"}, {"--modes", "self"}, {"--dtypes", "float64"}, {"--threads", "1"}, {"--paths", "trace"}};
    for (const auto& [option, value] : bench) {
        INFO(option);
        cli::require_error_line(cli::run({"bench", option, value, "extra"}), 2,
                                "attntrace bench takes no arguments besides its options: \"extra\" is one too many");
    }
    // And bench runs with every list given once, the smallest run there is.
    const auto run = cli::run({"bench", "--sizes", "8", "--modes", "self", "--dtypes", "float64", "--threads", "1",
                               "--paths", "trace", "--repeats", "1", "-f", "json"});
    REQUIRE(run.exit_code == 0);
    const json doc = json::parse(run.out);
    REQUIRE(doc["runs"].size() == 1);
    CHECK(doc["runs"][0]["n"] == 8);
}

TEST_CASE("whole numbers are read in decimal, as written", "[cli][options]") {
    // CLI11 alone reads integers with strtoll's base 0: "010" would be 8 and "0x10" 16.
    const auto ten = cli::run({"--digits", "010", "-s", "inputs"});
    REQUIRE(ten.exit_code == 0);
    CHECK_THAT(ten.out, Contains("0.5500000000 "));  // ten decimals
    CHECK(cli::run({"-m", "self", "-f", "json", "--seed", "010"}).out == cli::run({"-m", "self", "-f", "json", "--seed", "10"}).out);
    cli::require_error_line(cli::run({"--width", "0x20"}), 2, "--width: expected a whole number from 0 to 1000000, found 0x20");
    cli::require_error_line(cli::run({"--digits", "3.0"}), 2, "--digits: expected a whole number from 0 to 17, found 3.0");
    cli::require_error_line(cli::run({"bench", "--trace-max", "x"}), 2, "--trace-max: expected a whole number from 0 to");
}

namespace {

// A run's JSON without the field that names its input (the two files of a pair differ there).
json without_input(const std::string& text) {
    json doc = json::parse(text);
    doc.erase("input");
    doc.erase("origin");
    return doc;
}

}  // namespace

TEST_CASE("the option --kv-heads reads W_k and W_v of G·d_head columns, as the field kv_heads does", "[cli][options][heads]") {
    // 3 tokens of d_in = 4; 2 query heads of d_head = 2 sharing 1 key/value head: W_q is 4×4,
    // W_k and W_v 4×2 (d_in × G·d_head), the shape docs/multi-head.md gives.
    const json x = {{1, 0, 2, 0}, {0, 1, 0, 1}, {1, 1, 0, -1}};
    const json wq = {{1, 0, 0, 1}, {0, 1, 1, 0}, {1, 1, 0, 0}, {0, 0, 1, 1}};
    const json wk = {{1, 0}, {0, 1}, {1, 0}, {0, 2}};
    const json wv = {{1, 2}, {0, 1}, {1, 0}, {1, 1}};
    json doc = {{"tokens", {"a", "b", "c"}}, {"embeddings", x}, {"weights", {{"query", wq}, {"key", wk}, {"value", wv}}}};
    const cli::TempFile bare(doc.dump());
    doc["heads"] = 2;
    doc["kv_heads"] = 1;
    const cli::TempFile fields(doc.dump());
    const std::vector<std::string> common{"-m", "self", "-f", "json", "-s", "weights"};
    std::vector<std::string> by_flags{bare.path(), "--heads", "2", "--kv-heads", "1"};
    by_flags.insert(by_flags.end(), common.begin(), common.end());
    std::vector<std::string> by_fields{fields.path()};
    by_fields.insert(by_fields.end(), common.begin(), common.end());
    const auto flagged = cli::run(by_flags);
    INFO(flagged.err);
    REQUIRE(flagged.exit_code == 0);
    CHECK(without_input(flagged.out) == without_input(cli::run(by_fields).out));
    // The weights of each head, worked out here: q = x·W_q's two columns of the head, k = x·W_k
    // (the one key head), softmax(q·k / √2) per row.
    const json trace = json::parse(flagged.out);
    REQUIRE(trace["stages"].size() == 2);
    for (int head = 0; head < 2; ++head) {
        const auto& stage = trace["stages"][head];
        CHECK(stage["head"] == head + 1);
        for (int i = 0; i < 3; ++i) {
            double q[2] = {0, 0}, scores[3], total = 0, top = -1e300;
            for (int c = 0; c < 2; ++c)
                for (int d = 0; d < 4; ++d) q[c] += x[i][d].get<double>() * wq[d][2 * head + c].get<double>();
            for (int j = 0; j < 3; ++j) {
                double k[2] = {0, 0};
                for (int c = 0; c < 2; ++c)
                    for (int d = 0; d < 4; ++d) k[c] += x[j][d].get<double>() * wk[d][c].get<double>();
                scores[j] = (q[0] * k[0] + q[1] * k[1]) / std::sqrt(2.0);
                top = std::max(top, scores[j]);
            }
            for (double& s : scores) total += (s = std::exp(s - top));
            for (int j = 0; j < 3; ++j) CHECK(stage["data"][i][j].get<double>() == Approx(scores[j] / total).epsilon(1e-12));
        }
    }
    // The input's "heads" with --kv-heads on the command line, and the other way round.
    doc.erase("kv_heads");
    const cli::TempFile heads_only(doc.dump());
    std::vector<std::string> mixed{heads_only.path(), "--kv-heads", "1"};
    mixed.insert(mixed.end(), common.begin(), common.end());
    CHECK(without_input(cli::run(mixed).out) == without_input(flagged.out));
    // decode reads the same input the same way with either.
    const auto decode_flags = cli::run({"decode", bare.path(), "--heads", "2", "--kv-heads", "1", "-f", "json"});
    INFO(decode_flags.err);
    REQUIRE(decode_flags.exit_code == 0);
    CHECK(without_input(decode_flags.out) == without_input(cli::run({"decode", fields.path(), "-f", "json"}).out));
}

TEST_CASE("a --kv-heads that does not fit W_k is one usage error in every command, the field kv_heads a data error", "[cli][options][heads]") {
    // two_heads: W_q and W_k are 6 × 6 with 2 heads, so d_head = 6 / 2 = 3, and W_k's 6 columns
    // are 2 key/value heads of 3. --kv-heads 1 asks for 1 × 3 = 3 columns: the option typed
    // does not fit this input (which traces as it is), so it is the option that is wrong: exit 2.
    const std::string message = "attntrace: error: example:two_heads: /weights/key has 6 columns, but 1 key/value head "
                                "(--kv-heads 1) of d_head = 3 (d_model 6 ÷ 2 heads) needs 3\n";
    const cli::TempFile answers(R"({"weights": [[1]]})");
    const std::vector<std::vector<std::string>> commands{
        {"example:two_heads"},
        {"example:two_heads", "-f", "json"},
        {"example:two_heads", "--summary"},
        {"example:two_heads", "--check"},
        {"decode", "example:two_heads"},
        {"decode", "example:two_heads", "-f", "json"},
        {"compare", "example:two_heads", "example:two_heads", "-t", "dog"},
        {"check-answers", "example:two_heads", answers.path()},
    };
    for (const auto& command : commands) {
        std::vector<std::string> args = command;
        args.insert(args.end(), {"--kv-heads", "1"});
        INFO(fmt::format("{}", fmt::join(args, " ")));
        const auto r = cli::run(args);
        CHECK(r.exit_code == 2);
        CHECK(r.out.empty());
        CHECK(r.err == message);
        // The count that fits is taken by every command alike.
        args.back() = "2";
        if (command.front() != "check-answers") CHECK(cli::run(args).exit_code == 0);
    }
    // The same count written in the file: the file contradicts itself, a data error, and the
    // message names no option.
    std::ifstream in(std::string(ATTNTRACE_SOURCE_DIR) + "/data/two_heads.json");
    json doc = json::parse(in);
    doc["kv_heads"] = 1;
    const cli::TempFile file(doc.dump());
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {file.path()}, {file.path(), "--summary"}, {"decode", file.path()}}) {
        INFO(fmt::format("{}", fmt::join(args, " ")));
        cli::require_error_line(cli::run(args), 1,
                                file.path() + ": /weights/key has 6 columns, but 1 key/value head of d_head = 3 (d_model "
                                              "6 ÷ 2 heads) needs 3\n");
    }
}

TEST_CASE("each option and the input field it overrides give the same run", "[cli][options]") {
    // (option and its value, the field and its value): the same input with the field, and
    // without it but with the option, must trace the same, in each command that takes both.
    const json base = {{"tokens", {"a", "b", "c"}},
                       {"embeddings", {{1, 0, 2, 0}, {0, 1, 0, 1}, {1, 1, 0, -1}}},
                       {"weights",
                        {{"query", {{1, 0, 0, 1}, {0, 1, 1, 0}, {1, 1, 0, 0}, {0, 0, 1, 1}}},
                         {"key", {{1, 0, 1, 0}, {0, 1, 0, 2}, {1, 0, 0, 1}, {0, 2, 1, 0}}},
                         {"value", {{1, 2, 0, 1}, {0, 1, 1, 1}, {1, 0, 2, 0}, {1, 1, 0, 1}}}}}};
    struct Pair {
        std::vector<std::string> option;
        json field;
    };
    const std::vector<Pair> pairs{
        {{"--heads", "2"}, {{"heads", 2}}},
        {{"--heads", "2", "--kv-heads", "2"}, {{"heads", 2}, {"kv_heads", 2}}},
        {{"--positions", "rope"}, {{"positions", "rope"}}},
        {{"--positions", "sinusoidal"}, {{"positions", "sinusoidal"}}},
        {{"--layout", "out_in"}, {{"layout", "out_in"}}},
        {{"-m", "causal"}, {{"mode", "causal"}}},
    };
    for (const Pair& pair : pairs) {
        INFO(pair.field.dump());
        json with_field = base;
        for (const auto& [key, value] : pair.field.items()) with_field[key] = value;
        if (!with_field.contains("mode")) with_field["mode"] = "self";
        json without = base;  // the mode pair's file has no mode: the option gives it
        if (!pair.field.contains("mode")) without["mode"] = with_field["mode"];
        const cli::TempFile field_file(with_field.dump()), option_file(without.dump());
        const auto compare_runs = [&](std::vector<std::string> by_field, std::vector<std::string> by_option) {
            by_option.insert(by_option.end(), pair.option.begin(), pair.option.end());
            const auto a = cli::run(by_field), b = cli::run(by_option);
            INFO(a.err << b.err);
            // The same status, but where the field itself is refused (decode and positions): the
            // field as a problem of the file (a data error, exit 1), the option as a problem
            // of the command line (a usage error, exit 2).
            if (a.exit_code != b.exit_code) CHECK((a.exit_code == 1 && b.exit_code == 2));
            // The outputs the same, but for the file each names; refusals too.
            const auto unnamed = [&](std::string text, const std::string& path) {
                for (std::size_t at; (at = text.find(path)) != std::string::npos;) text.replace(at, path.size(), "INPUT");
                return text;
            };
            CHECK(unnamed(a.out, field_file.path()) == unnamed(b.out, option_file.path()));
            // A refusal names what it refuses, the field or the option; a success says the same.
            if (a.exit_code == 0) CHECK(unnamed(a.err, field_file.path()) == unnamed(b.err, option_file.path()));
        };
        compare_runs({field_file.path(), "-f", "json"}, {option_file.path(), "-f", "json"});
        compare_runs({"decode", field_file.path(), "-f", "json"}, {"decode", option_file.path(), "-f", "json"});
        compare_runs({"compare", field_file.path(), field_file.path(), "-t", "b", "-f", "json"},
                     {"compare", option_file.path(), option_file.path(), "-t", "b", "-f", "json"});
        const cli::TempFile answers(R"({"weights": {"row": 2, "values": [0.3, 0.3, 0.4]}})");
        compare_runs({"check-answers", field_file.path(), answers.path(), "-f", "json"},
                     {"check-answers", option_file.path(), answers.path(), "-f", "json"});
    }
}

TEST_CASE("CLI11's messages are said our way: what is wrong, and what to give", "[cli][errors]") {
    const cli::TempFile answers("0.5\n");
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
        // a value missing after an option (CLI11: "--output: 1 required TEXT missing")
        {{"-o"}, "--output needs a value: --output FILE (see attntrace --help)"},
        {{"-s"}, "--stage needs a value: --stage NAME,... (see attntrace --help)"},
        {{"quiz", "--rounds"}, "--rounds needs a value: --rounds N (see attntrace quiz --help)"},
        // an option given twice (CLI11: "--format: At Most 1 required but received 2")
        {{"-f", "json", "-f", "csv"}, "--format is given 2 times (json, csv): give it once (see attntrace --help)"},
        // a positional missing (CLI11: "INPUT is required")
        {{"similarity"},
         "attntrace similarity needs INPUT: input JSON file, - for stdin, or example:NAME (see attntrace similarity --help)"},
        {{"compare", "example:big_dream"}, "attntrace compare needs B: second input (see attntrace compare --help)"},
        {{"compare", "example:big_dream", "example:big_mistake"},
         "attntrace compare needs --token WORD: the word to follow (first occurrence) (see attntrace compare --help)"},
        {{"check-answers", "example:teacher_smiled"},
         "attntrace check-answers needs ANSWERS: the learner's numbers: JSON ({\"weights\": [[...]]}, rows, cells, per "
         "head; docs/practice.md) or the tidy CSV of --format csv --tidy (see attntrace check-answers --help)"},
        // one argument too many (CLI11: "The following argument was not expected: b")
        {{"example:your_journey", "b"}, "attntrace takes one argument, INPUT: \"b\" is one too many (see attntrace --help)"},
        {{"compare", "a", "b", "c", "-t", "x"},
         "attntrace compare takes A and B: \"c\" is one too many (see attntrace compare --help)"},
        {{"generate", "x", "y"},
         "attntrace generate takes no arguments besides its options: \"x\", \"y\" are too many (see attntrace generate "
         "--help)"},
        // an option that needs another (CLI11: "--layer requires --from")
        {{"--layer", "1"}, "--layer L needs --from gpt2 (see attntrace --help)"},
        {{"--svg-stage", "scores"}, "--svg-stage NAME needs --svg FILE (see attntrace --help)"},
        // options that exclude each other (CLI11: "INPUT excludes --example")
        {{"a.json", "--example", "your_journey"}, "INPUT and --example do not go together: give one of them (see attntrace --help)"},
        {{"--mask-fill", "1", "--mask-after-softmax"},
         "--mask-fill and --mask-after-softmax do not go together: give one of them (see attntrace --help)"},
        // a flag given a value (CLI11: "--tidy: Should be true/false or a number")
        {{"--tidy=maybe"}, "--tidy is a flag: give it alone, without a value (see attntrace --help)"},
        // a hidden option's value (CLI11 gives it no name)
        {{"--completions", "bsh"}, "--completions: \"bsh\" is not one of bash, zsh, fish (did you mean bash?) (see attntrace --help)"},
        // a range (CLI11: "Value 99 not in range 0 to 17")
        {{"--digits", "99"}, "--digits: expected a whole number from 0 to 17, found 99 (see attntrace --help)"},
        {{"decode", "--context", "0"},
         "--context: expected a whole number from 1 to 1099511627776, found 0 (see attntrace decode --help)"},
        {{"help", "decod"},
         "attntrace help: no command named \"decod\" (did you mean decode?); the commands are similarity, generate, "
         "bench, train, rnn, compare, decode, step, check-answers, quiz, help (see attntrace --help)"},
    };
    for (const auto& [args, message] : cases) {
        INFO(fmt::format("{}", fmt::join(args, " ")));
        const auto r = cli::run(args);
        CHECK(r.exit_code == 2);
        CHECK(r.out.empty());
        CHECK(r.err == "attntrace: error: " + message + "\n");
        // None of CLI11's own phrasing is left.
        for (const char* phrase : {"required TEXT missing", "required INT missing", "is required", "At Most", "At least",
                                   "was not expected", "were not expected", " requires ", " excludes ", "Could not convert",
                                   "Should be true/false", "not in range", "Value ", "too many inputs for a flag"})
            CHECK_THAT(r.err, !Contains(phrase));
    }
}

TEST_CASE("a misspelt value of any list of names is answered with the likely one", "[cli][errors]") {
    const cli::TempFile answers("0.5\n");
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
        {{"--stage", "weigths"}, "--stage: no stage named \"weigths\" (did you mean weights?)"},
        {{"-s", "scores,contxt"}, "--stage: no stage named \"contxt\" (did you mean context?)"},
        {{"--svg", "-", "--svg-stage", "weigths"}, "--svg-stage: no stage named \"weigths\" (did you mean weights?)"},
        {{"--mode", "casual"}, "(did you mean causal?)"},
        {{"--normalize", "softmx"}, "(did you mean softmax?)"},
        {{"--score", "addtive"}, "(did you mean additive?)"},
        {{"--dtype", "float23"}, "(did you mean float32?)"},
        {{"--positions", "rpoe"}, "(did you mean rope?)"},
        {{"--layout", "inout"}, "(did you mean in_out?)"},
        {{"--from", "gtp2"}, "(did you mean gpt2?)"},
        {{"--color", "allways"}, "(did you mean always?)"},
        {{"--shade", "tabel"}, "(did you mean table?)"},
        {{"-f", "markdwn"}, "(did you mean markdown?)"},
        {{"--example", "your_journy"}, "no example named \"your_journy\" (did you mean your_journey?)"},
        {{"example:teacher_smild"}, "no example named \"teacher_smild\" (did you mean teacher_smiled?)"},
        {{"--completions", "zhs"}, "(did you mean zsh?)"},
        {{"quiz", "-s", "weigths"}, "(did you mean weights?)"},
        {{"quiz", "-m", "slef"}, "(did you mean self?)"},
        {{"quiz", "--example", "big_dreams"}, "(did you mean big_dream?)"},
        {{"quiz", "-f", "jsno"}, "(did you mean json?)"},
        {{"bench", "--paths", "stream"}, "(did you mean streaming?)"},
        {{"bench", "--modes", "casual"}, "(did you mean causal?)"},
        {{"bench", "--dtypes", "flaot64"}, "(did you mean float64?)"},
        {{"generate", "-f", "npy"}, "(did you mean npz?)"},
        {{"generate", "--dtype", "float62"}, "(did you mean float64?)"},
        {{"help", "similraity"}, "(did you mean similarity?)"},
        {{"hlep"}, "(did you mean help?)"},
        // The tokens of an input: -q, and compare's -t.
        {{"-q", "jorney"}, "--query: \"jorney\" is neither a token nor a position from 1 to 6 (did you mean journey?)"},
        {{"compare", "example:big_dream", "example:big_mistake", "-t", "bgi"},
         "--token: \"bgi\" does not occur in example:big_dream (did you mean big?)"},
    };
    for (const auto& [args, message] : cases) {
        INFO(fmt::format("{}", fmt::join(args, " ")));
        cli::require_error_line(cli::run(args), 2, message);
    }
}

namespace {

// The words of a help text, in order: what wrapping must keep (a continuation's " \" aside).
std::vector<std::string> words_of(const std::string& text) {
    std::vector<std::string> words;
    std::istringstream in(text);
    for (std::string word; in >> word;)
        if (word != "\\") words.push_back(word);
    return words;
}

std::string without_returns(std::string text) {
    std::erase(text, '\r');
    return text;
}

const std::vector<std::string> help_commands{"similarity", "generate", "bench", "compare", "decode", "check-answers",
                                             "quiz", "help"};

}  // namespace

TEST_CASE("the help wraps to 80 columns off a terminal and to the terminal's width on one, never inside a word",
          "[cli][help]") {
    std::vector<std::vector<std::string>> commands{{"--help"}};
    for (const std::string& command : help_commands) commands.push_back({command, "--help"});
    for (const auto& command : commands) {
        INFO(command.front());
        const std::string piped = cli::run(command).out;
        REQUIRE(!piped.empty());
        // As wide as a line can be: nothing wraps. The same words, in the same order.
        const std::string wide = without_returns(cli::run_in_terminal(command, {}, 1000).out);
        CHECK(words_of(piped) == words_of(wide));
        const auto lines = lines_of(piped);
        for (const std::string& line : lines) {
            INFO(line);
            CHECK(attntrace::display_width(line) <= 80);
        }
        const auto wide_lines = lines_of(wide);
        if (std::any_of(wide_lines.begin(), wide_lines.end(), [](const std::string& l) { return attntrace::display_width(l) > 80; }))
            CHECK(lines.size() > wide_lines.size());  // it did wrap
        // A terminal 50 columns wide: every line fits, but an option's name, which is one word.
        const std::string narrow = without_returns(cli::run_in_terminal(command, {}, 50).out);
        CHECK(words_of(narrow) == words_of(wide));
        for (const std::string& line : lines_of(narrow)) {
            INFO(line);
            // Wider only where nothing may break: an option's name, or one word of a command
            // (a quoted argument, kept whole so that the command still runs).
            const bool name_alone = line.starts_with("  -") && line.find("  ", 2) == std::string::npos;
            std::string word = line.substr(std::min(line.find_first_not_of(' '), line.size()));
            if (word.ends_with(" \\")) word.resize(word.size() - 2);
            const bool quoted = word.size() > 1 && (word.front() == '\'' || word.front() == '"') && word.back() == word.front();
            CHECK((attntrace::display_width(line) <= 50 || name_alone || quoted));
        }
    }
}

TEST_CASE("the help pads its columns by display width", "[cli][help]") {
    // The metavariable "A B …" holds a character of three bytes and one column: the help after
    // it starts in the column of every other option's help.
    const auto lines = lines_of(cli::run({"--help"}).out);
    std::size_t checked = 0;
    for (const std::string& line : lines) {
        const std::size_t at = line.find("  ", 2);
        if (!line.starts_with("  -") || at == std::string::npos) continue;
        const std::size_t text = line.find_first_not_of(' ', at);
        INFO(line);
        CHECK(attntrace::display_width(line.substr(0, text)) == 30);
        ++checked;
    }
    CHECK(checked > 30);
    CHECK_THAT(cli::run({"--help"}).out, Contains("\n  --tokens \"A B …\"            labels for the rows"));
}

TEST_CASE("attntrace help and attntrace help COMMAND show the help", "[cli][help]") {
    const auto main = cli::run({"help"});
    CHECK(main.exit_code == 0);
    CHECK(main.err.empty());
    CHECK(main.out == cli::run({"--help"}).out);
    for (const std::string& command : help_commands) {
        INFO(command);
        const auto r = cli::run({"help", command});
        CHECK(r.exit_code == 0);
        CHECK(r.out == cli::run({command, "--help"}).out);
        CHECK_THAT(r.out, Contains("Usage: attntrace " + command + " [OPTIONS]"));
    }
    CHECK_THAT(cli::run({"--help"}).out, Contains("\n  help                        print this help, or a command's"));
    // The man page knows it too (and the completions, tests/test_install.cpp).
    CHECK_THAT(cli::run({"--man"}).out, Contains(".SS \"help\""));
}

TEST_CASE("quiz echoes an answer through the rule for control text, and its JSON stays UTF-8", "[cli][quiz][labels]") {
    // A window title (OSC 0), a clear screen (CSI 2J), the clipboard (OSC 52), and bytes that
    // are not UTF-8, each an answer line.
    const std::string title = "\x1b]0;owned\x07", clear = "\x1b[2J", clipboard = "\x1b]52;c;SGVsbG8=\x07",
                      not_utf8 = "0.5\xff\xfe";
    const cli::TempFile answers(title + "\n" + clear + "\n" + clipboard + "\n" + not_utf8 + "\n");
    for (const bool piped : {false, true}) {
        INFO("piped: " << piped);
        const auto r = piped ? cli::run({"quiz", "-n", "4", "--answers", "-"}, cli::read_file(answers.path()))
                             : cli::run({"quiz", "-n", "4", "--answers", answers.path()});
        CHECK(r.exit_code == 1);
        CHECK(r.out.find('\x1b') == std::string::npos);
        CHECK(r.out.find('\x07') == std::string::npos);
        CHECK_THAT(r.out, Contains("your answer: \\x1b]0;owned\\x07\n"));
        CHECK_THAT(r.out, Contains("your answer: \\x1b[2J\n"));
        CHECK_THAT(r.out, Contains("your answer: \\x1b]52;c;SGVsbG8=\\x07\n"));
        CHECK_THAT(r.out, Contains("your answer: 0.5\\xff\\xfe\n"));
    }
    const auto r = cli::run({"quiz", "-n", "4", "--answers", answers.path(), "-f", "json"});
    INFO(r.err);
    CHECK(r.exit_code == 1);
    CHECK(r.err.empty());
    const json doc = json::parse(r.out);  // throws on bytes that are not UTF-8
    REQUIRE(doc["questions"].size() == 4);
    CHECK(doc["questions"][0]["answer"] == "\\x1b]0;owned\\x07");
    CHECK(doc["questions"][1]["answer"] == "\\x1b[2J");
    CHECK(doc["questions"][2]["answer"] == "\\x1b]52;c;SGVsbG8=\\x07");
    CHECK(doc["questions"][3]["answer"] == "0.5\\xff\\xfe");
    for (const auto& question : doc["questions"]) CHECK(question["verdict"] == "wrong");
}
