// Every way an input can be wrong, run against the built binary in both table and JSON
// format: the exit code, a fragment of the message, one line on stderr, nothing on stdout.
#include "support/cli.hpp"

#include "support/catch.hpp"
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <csignal>
#include <sys/stat.h>
#include <thread>

using Catch::Contains;

namespace {

struct BadInput {
    const char* what;
    std::string contents;           // written to bad.json, which is the input
    std::vector<std::string> args;  // besides the input and -f
    int exit_code;
    const char* fragment;
};

const std::string pair_source = R"("source": {"tokens": ["a", "b"], "states": [[1, 0], [0, 1]]})";
const std::string pair_target = R"("target": {"tokens": ["x"], "states": [[1, 0, 0]]})";
const std::string pair = "{" + pair_source + ", " + pair_target;
const std::string ok_embeddings = R"("embeddings": {"a": [1, 2], "b": [3, 4]})";

std::string many_tokens(std::size_t count) {
    std::string tokens = R"({"embeddings": {"a": [1]}, "tokens": [)";
    for (std::size_t i = 0; i < count; ++i) tokens += i ? ",\"a\"" : "\"a\"";
    return tokens + "]}";
}

std::string long_vector(std::size_t count) {
    std::string vector = R"({"tokens": ["a"], "embeddings": [[)";
    for (std::size_t i = 0; i < count; ++i) vector += i ? ",1" : "1";
    return vector + "]]}";
}

const std::vector<BadInput> cases = {
    // The JSON itself
    {"not JSON", "hello", {}, 1, ":1:1: invalid JSON"},
    {"truncated", R"({"sentence": "a b", "embeddings": {"a": [1)", {}, 1, ":1:43: invalid JSON: unexpected end of input"},
    {"empty file", "", {}, 1, "empty input"},
    {"only white space", " \n\t ", {}, 1, "empty input"},
    {"top level array", "[1, 2, 3]", {}, 1, "/: expected an object"},
    {"trailing comma", R"({"sentence": "a", "embeddings": {"a": [1],}})", {}, 1,
     ":1:42: invalid JSON: trailing comma: JSON allows no comma before the closing '}', so remove this one"},
    {"trailing comma before a bracket on the next line", "{\"tokens\": [\"a\"],\n \"embeddings\": [[1, 2],\n]}", {}, 1,
     ":2:23: invalid JSON: trailing comma: JSON allows no comma before the closing ']'"},
    {"single quotes", R"({"sentence": 'a', "embeddings": {"a": [1]}})", {}, 1,
     ":1:14: invalid JSON: expected a value (object, array, string, number, true, false or null), found a single quote: "
     "JSON strings and keys use double quotes, as in \"a\""},
    {"a comment", "{\"sentence\": \"a\", // the lecture's sentence\n \"embeddings\": {\"a\": [1]}}", {}, 1,
     ":1:19: invalid JSON: expected a string key, found '//': JSON has no comments, so remove it (a note for the learner can go in \"description\")"},
    {"a number without a digit before its point", R"({"sentence": "a", "embeddings": {"a": [.5]}})", {}, 1,
     ":1:40: invalid JSON: expected a value (object, array, string, number, true, false or null), found '.5': write 0.5 "
     "(a JSON number needs a digit on both sides of the point)"},
    {"typographic quotes", "{\"sentence\": \u201ca\u201d, " + ok_embeddings + "}", {}, 1,
     ":1:14: invalid JSON: expected a value (object, array, string, number, true, false or null), found '\u201c': "
     "a typographic quote, as word processors write them; JSON needs straight double quotes (\")"},
    {"Python's True", R"({"sentence": "a", "embeddings": {"a": [True]}})", {}, 1,
     ":1:40: invalid JSON: expected a value (object, array, string, number, true, false or null), found 'True': "
     "write true, as JSON spells true, false and null in lower case"},
    {"NaN", R"({"sentence": "a", "embeddings": {"a": [NaN]}})", {}, 1, "NaN and Infinity are not JSON numbers"},
    {"1e400", R"({"sentence": "a", "embeddings": {"a": [1e400]}})", {}, 1, ":1:40: number out of range: 1e400 does not fit a double"},
    {"deep nesting", std::string(100000, '['), {}, 1, "JSON nested deeper than 64 levels"},
    {"binary garbage", std::string("\x7f\x45\x4c\x46\x02\x01\x01\x00\xff\xfe", 10), {}, 1, "invalid JSON"},
    {"invalid UTF-8", "{\"sentence\": \"a\xc3\x28\", " + ok_embeddings + "}", {}, 1, "ill-formed UTF-8"},
    {"duplicate key", R"({"sentence": "a", "embeddings": {"a": [1], "a": [2]}})", {}, 1, "/embeddings/a: duplicate key \"a\""},
    {"control character in a token", R"({"tokens": ["a\u001bb"], "embeddings": [[1]]})", {}, 1, "/tokens/0: control or formatting character U+001B"},
    {"NUL in a token", R"({"tokens": ["a\u0000b"], "embeddings": [[1]]})", {}, 1, "/tokens/0: control or formatting character U+0000"},
    {"C1 control in a word of the embeddings", R"({"sentence": "a", "embeddings": {"a": [1], "b\u009b31m": [2]}})", {}, 1,
     "control or formatting character U+009B"},
    {"bidi override in a token", R"({"tokens": ["a\u202eb"], "embeddings": [[1]]})", {}, 1, "/tokens/0: control or formatting character U+202E"},
    {"DEL in the description", R"({"description": "a\u007f", "sentence": "a", "embeddings": {"a": [1]}})", {}, 1,
     "/description: control or formatting character U+007F"},
    // Single-sequence content
    {"empty object", "{}", {}, 1, "missing \"sentence\""},
    {"sentence and tokens", R"({"sentence": "a", "tokens": ["a"], )" + ok_embeddings + "}", {}, 1, "not both"},
    {"empty sentence", R"({"sentence": "", )" + ok_embeddings + "}", {}, 1, "/sentence: the sentence has no words"},
    {"only punctuation", R"({"sentence": "?!", )" + ok_embeddings + "}", {}, 1, "no words left after dropping punctuation"},
    {"unknown word", R"({"sentence": "a c", )" + ok_embeddings + "}", {}, 1, "unknown word \"c\" (token 2 of 2)"},
    {"unknown words", R"({"sentence": "a c b d", )" + ok_embeddings + "}", {}, 1,
     "/sentence: 2 unknown words: /embeddings has no vector for \"c\" (token 2, closest known word: a), \"d\" (token 4, closest known word: a)"},
    {"unknown field", R"({"sentence": "a", "embedings": {"a": [1]}})", {}, 1, "unknown field \"embedings\" (did you mean \"embeddings\"?"},
    {"a weight named as in a paper", R"({"sentence": "a", "embeddings": {"a": [1]}, "weights": {"W_q": [[1]], "W_k": [[1]], "W_v": [[1]]}})",
     {"-m", "self"}, 1,
     "/weights/W_q: unknown field \"W_q\": the query projection W_q goes under \"query\" (known fields: query, key, value, output, query_bias, key_bias, value_bias, output_bias)"},
    {"unknown field too long to suggest for", R"({"sentence": "a", ")" + std::string(100, 'x') + R"(": 1})", {}, 1,
     "xxx…\" (known fields: description, mode,"},
    {"ragged vectors", R"({"sentence": "a b", "embeddings": {"a": [1, 2], "b": [3]}})", {}, 1,
     "/embeddings: the vectors differ in length and no length is the most common, so none can be taken as right: "
     "2 numbers in \"a\"; 1 number in \"b\""},
    {"the first vector of the wrong length", R"({"tokens": ["a", "b", "c"], "embeddings": [[1], [2, 3], [4, 5]]})", {}, 1,
     "/embeddings/0 (row 1): vector of 1 number, expected 2 like the other 2 rows"},
    {"zero-length vector", R"({"sentence": "a", "embeddings": {"a": []}})", {}, 1, "/embeddings/a: empty vector"},
    {"string for a number", R"({"sentence": "a", "embeddings": {"a": [1, "x"]}})", {}, 1, "/embeddings/a/1: expected a number, found string \"x\""},
    {"count mismatch", R"({"sentence": "a b c", "embeddings": [[1], [2]]})", {}, 1, "/embeddings: 2 vectors for 3 tokens"},
    {"too many tokens", many_tokens(1048577), {}, 1, "/tokens: 1048577 tokens, more than the limit of 1048576"},
    {"vector too long", long_vector(65537), {}, 1, "/embeddings/0: vector of 65537 numbers, more than the limit of 65536"},
    {"query shape", R"({"tokens": ["a"], "embeddings": [[1, 2]], "weights": {"query": [[1]], "key": [[1]], "value": [[1]]}})", {"-m", "self"}, 1,
     "/weights/query: shape 1×1 does not fit: expected 2×…"},
    {"key shape", R"({"tokens": ["a"], "embeddings": [[1]], "weights": {"query": [[1, 2]], "key": [[1]], "value": [[1]]}})", {"-m", "self"}, 1,
     "/weights/key: shape 1×1 does not fit: expected 1×2"},
    {"value missing", R"({"tokens": ["a"], "embeddings": [[1]], "weights": {"query": [[1]], "key": [[1]]}})", {"-m", "self"}, 1,
     "/weights: missing \"value\""},
    {"unknown mode in the file", R"({"mode": "selff", "sentence": "a", "embeddings": {"a": [1]}})", {}, 1, "/mode: unknown mode \"selff\""},
    {"overflow", R"({"sentence": "a b", "embeddings": {"a": [1e300], "b": [1e300]}})", {}, 1,
     "the scores stage overflows: the entry for \"a\" (row 1) and \"a\" (column 1) is inf"},
    {"overflow, streaming path", R"({"sentence": "a b", "embeddings": {"a": [1e300], "b": [1e300]}})", {"--summary"}, 1,
     "the scores stage overflows: the entry for \"a\" (row 1) and \"a\" (column 1) is inf"},
    {"float32 overflow", R"({"tokens": ["a"], "embeddings": [[1e39]]})", {"--dtype", "float32"}, 1, "the inputs stage overflows"},
    {"float32 projection overflow, streaming path", R"({"tokens": ["a"], "embeddings": [[1e38, 1e38]], "weights": {"query": [[10], [-10]], "key": [[1], [1]], "value": [[1], [1]]}})",
     {"--summary", "--dtype", "float32", "-m", "self"}, 1, "the queries stage overflows: the entry for \"a\" (row 1) and \"q1\" (column 1)"},
    {"float32 input overflow before the projections, streaming path", R"({"tokens": ["a", "b"], "embeddings": [[1, 2], [1e39, 1]], "weights": {"query": [[1], [1]], "key": [[1], [1]], "value": [[1], [1]]}})",
     {"--summary", "--dtype", "float32", "-m", "self"}, 1, "the inputs stage overflows: the entry for \"b\" (row 2) and \"x1\" (column 1)"},
    // the queries are small enough to need no second look; the keys, then the values, are not
    {"float32 key projection overflow, streaming path", R"({"tokens": ["a"], "embeddings": [[1e38, 1e38]], "weights": {"query": [[1e-30], [1e-30]], "key": [[10], [-10]], "value": [[1], [1]]}})",
     {"--summary", "--dtype", "float32", "-m", "self"}, 1, "the keys stage overflows: the entry for \"a\" (row 1) and \"k1\" (column 1)"},
    {"float32 value projection overflow, streaming path", R"({"tokens": ["a"], "embeddings": [[1e38, 1e38]], "weights": {"query": [[1e-30], [1e-30]], "key": [[1e-30], [1e-30]], "value": [[1e-30], [10]]}})",
     {"--summary", "--dtype", "float32", "-m", "self"}, 1, "the values stage overflows: the entry for \"a\" (row 1) and \"v1\" (column 1)"},
    {"sum of a row overflows", R"({"tokens": ["a", "b"], "embeddings": [[1e154, 0], [1e154, 0]]})", {"--normalize", "sum"}, 1,
     "sum to inf, not a finite positive number"},
    {"input larger than --max-input", R"({"sentence": "a", "embeddings": {"a": [1]}})", {"--max-input", "10"}, 1,
     "input larger than 10 bytes, the limit set by --max-input"},
    {"trace larger than --max-memory", many_tokens(3000), {"--max-memory", "1M", "-s", "weights"}, 1,
     "a full trace of this input needs about"},
    {"reading larger than --max-memory", many_tokens(3000), {"--max-memory", "10K"}, 1,
     "reading it needs more than --max-memory 10.0 KiB"},
    {"a sentence of too many words", R"({"sentence": ")" + std::string(1048577 * 2, '.') + R"(", "embeddings": {"a": [1]}})", {}, 1,
     "/sentence: more than 1048576 tokens, the limit"},
    {"work longer than --max-time", many_tokens(3000), {"-s", "weights", "--max-time", "10ms"}, 1,
     "a full trace of this input takes about"},
    // Modes that do not fit the input
    {"one sentence, bahdanau mode", R"({"sentence": "a b", )" + ok_embeddings + "}", {"-m", "bahdanau"}, 1, "mode bahdanau needs a source and a target"},
    {"file says bahdanau, one sentence", R"({"mode": "bahdanau", "sentence": "a", "embeddings": {"a": [1]}})", {}, 1, "/mode: mode bahdanau needs \"source\""},
    // Source and target
    {"missing source", "{" + pair_target + "}", {}, 1, "/: missing \"source\": bahdanau attention needs a source"},
    {"missing target", "{" + pair_source + "}", {}, 1, "/: missing \"target\""},
    {"source not an object", R"({"source": [1], )" + pair_target + "}", {}, 1, "/source: expected an object"},
    {"target states as an object", "{" + pair_source + R"(, "target": {"tokens": ["x"], "states": {"x": [1]}}})", {}, 1,
     "/target/states: expected an array of vectors aligned with the tokens"},
    {"target count", "{" + pair_source + R"(, "target": {"tokens": ["x", "y"], "states": [[1]]}})", {}, 1, "/target/states: 1 vector for 2 tokens"},
    {"W_a rows", pair + R"(, "weights": {"W_a": [[1], [1]], "U_a": [[1], [1]], "v_a": [1]}})", {}, 1,
     "/weights/W_a: shape 2×1 does not fit: expected 3×… (d_s × d_a, d_s = 3 from /target/states)"},
    {"U_a shape", pair + R"(, "weights": {"W_a": [[1], [1], [1]], "U_a": [[1, 2], [1, 2]], "v_a": [1]}})", {}, 1,
     "/weights/U_a: shape 2×2 does not fit: expected 2×1"},
    {"v_a length", pair + R"(, "weights": {"W_a": [[1], [1], [1]], "U_a": [[1], [1]], "v_a": [1, 2]}})", {}, 1,
     "/weights/v_a: vector of 2 numbers, expected 1 (d_a = 1"},
    {"W shape", pair + R"(, "weights": {"W": [[1, 0]]}})", {"--score", "general"}, 1, "/weights/W: shape 1×2 does not fit: expected 3×2"},
    {"mask length", R"({"source": {"tokens": ["a", "b"], "states": [[1, 0], [0, 1]], "mask": [true]}, )" + pair_target + "}", {}, 1,
     "/source/mask: 1 mask entry for 2 source tokens"},
    {"mask type", R"({"source": {"tokens": ["a", "b"], "states": [[1, 0], [0, 1]], "mask": [true, 1]}, )" + pair_target + "}", {}, 1,
     "/source/mask/1: expected true or false, found number 1"},
    {"pair run as self", pair + "}", {"-m", "self"}, 1, "mode self reads one sentence"},
    {"pair with a sentence", pair + R"(, "sentence": "a"})", {}, 1, "/sentence: a source/target input has no top-level sentence"},
    {"dot with unequal sizes", pair + "}", {"--score", "dot"}, 1, "the dot score needs decoder and encoder states of one size"},
    {"additive overflow hidden by tanh", R"({"source": {"tokens": ["a"], "states": [[1e308]]}, "target": {"tokens": ["x"], "states": [[1e308]]},
                                            "weights": {"W_a": [[1]], "U_a": [[1]], "v_a": [1]}})", {}, 1,
     "the scores stage overflows: s·W_a + h·U_a for \"x\" (row 1) and \"a\" (column 1) is inf, not a finite number"},
    {"sum normalisation with --summary", R"({"sentence": "a b", )" + ok_embeddings + "}", {"--summary", "--normalize", "sum"}, 2,
     "--normalize sum needs the full trace"},
    // Options that do not fit the input: usage errors
    {"dim with the input's weights", R"({"tokens": ["a"], "embeddings": [[1]], "weights": {"query": [[1]], "key": [[1]], "value": [[1]]}})",
     {"-m", "self", "--dim", "2"}, 2, "--dim sets the size of generated weights"},
    {"stage of another mode", pair + "}", {"-s", "queries"}, 2, "no stage \"queries\" in mode bahdanau"},
    {"query not a token", R"({"sentence": "a b", )" + ok_embeddings + "}", {"-q", "c"}, 2, "--query: \"c\" is neither a token nor a position"},
    {"summary of a pair", pair + "}", {"--summary"}, 2, "--summary covers modes plain, self and causal"},
    {"--score outside bahdanau", R"({"sentence": "a b", )" + ok_embeddings + "}", {"--score", "dot"}, 2,
     "--score dot applies to mode bahdanau only"},
    {"bahdanau with --score on one sentence", R"({"sentence": "a b", )" + ok_embeddings + "}",
     {"-m", "bahdanau", "--score", "dot"}, 1, "mode bahdanau needs a source and a target"},
};

}  // namespace

TEST_CASE("bad inputs: the exit code, one clear line, and no output, in every format", "[errors][cli]") {
    REQUIRE(cases.size() >= 30);
    for (const auto& c : cases) {
        DYNAMIC_SECTION(c.what) {
            cli::TempFile file(c.contents, "bad.json");
            for (const char* format : {"table", "json"}) {
                std::vector<std::string> args{file.path(), "-f", format};
                args.insert(args.end(), c.args.begin(), c.args.end());
                const auto r = cli::run(args);
                INFO(format << ": " << r.err);
                CHECK(r.exit_code == c.exit_code);
                CHECK(r.out.empty());
                CHECK_THAT(r.err, Catch::StartsWith("attntrace: error: ") && Contains(c.fragment));
                CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
                CHECK_THAT(r.err, !Contains("json.exception") && !Contains("terminate") && !Contains("what()"));
                if (c.exit_code == 1) CHECK_THAT(r.err, Contains("bad.json"));
            }
        }
    }
}

TEST_CASE("write errors exit 1 and never leave a file behind", "[errors][cli][output]") {
    // A full disk: /dev/full accepts the open and fails every write.
    std::vector<std::string> args{"generate", "--tokens", "2000", "--dim", "8"};
    const auto r = cli::run_to_file(args, "/dev/full");
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::StartsWith("attntrace: error: cannot write output: No space left on device"));
    const auto table = cli::run_to_file({"-s", "weights"}, "/dev/full");
    CHECK(table.exit_code == 1);
    CHECK_THAT(table.err, Contains("cannot write output"));

    // -o FILE: written all or nothing.
    cli::TempFile marker("", "marker");
    const std::string folder = marker.path().substr(0, marker.path().rfind('/'));
    const std::string out = folder + "/trace.json";
    REQUIRE(cli::run({"-f", "json", "-o", out}).exit_code == 0);
    std::ifstream first(out);
    const std::string good((std::istreambuf_iterator<char>(first)), std::istreambuf_iterator<char>());
    CHECK_THAT(good, Contains("\"schema\": \"attntrace.trace/1\""));
    cli::TempFile bad("{", "bad.json");
    const auto failed = cli::run({bad.path(), "-f", "json", "-o", out});
    CHECK(failed.exit_code == 1);
    CHECK(failed.out.empty());
    std::ifstream second(out);
    CHECK(std::string((std::istreambuf_iterator<char>(second)), std::istreambuf_iterator<char>()) == good);
    std::size_t files = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(folder)) ++files;
    CHECK(files == 2);  // marker and trace.json: no temporary left
    for (const auto& command : std::vector<std::vector<std::string>>{
             {"similarity", "example:fruit_and_pets", "-o", folder + "/s.txt"},
             {"compare", "example:bank_river", "example:bank_money", "-t", "bank", "-o", folder + "/c.txt"},
             {"bench", "--sizes", "16", "--dtypes", "float64", "--threads", "1", "--repeats", "1", "-o", folder + "/b.txt"}}) {
        const auto ok = cli::run(command);
        CHECK(ok.exit_code == 0);
        CHECK(ok.out.empty());
        CHECK(std::filesystem::file_size(command.back()) > 0);
    }
    const auto missing = cli::run({"-o", folder + "/no/such/folder/x.txt"});
    CHECK(missing.exit_code == 1);
    CHECK_THAT(missing.err, Contains("cannot write " + folder + "/no/such/folder/x.txt"));
}

TEST_CASE("the output options respect what is already at the path", "[errors][cli][output]") {
    cli::TempFile marker("", "marker");
    const std::string folder = marker.path().substr(0, marker.path().rfind('/'));
    const auto read = [](const std::string& path) {
        std::ifstream in(path);
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    };

    // A symlink stays a symlink; the file it names gets the output.
    const std::string target = folder + "/target.txt", link = folder + "/link.txt";
    std::ofstream(target) << "old";
    std::filesystem::create_symlink(target, link);
    REQUIRE(cli::run({"-s", "inputs", "-o", link}).exit_code == 0);
    CHECK(std::filesystem::is_symlink(link));
    CHECK_THAT(read(target), Contains("inputs · 6×3"));

    // An existing file keeps its permissions.
    std::filesystem::permissions(target, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                                             std::filesystem::perms::group_read);
    REQUIRE(cli::run({"-s", "scores", "-o", target}).exit_code == 0);
    CHECK(std::filesystem::status(target).permissions() ==
          (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write | std::filesystem::perms::group_read));

    // A FIFO is written to, not replaced.
    const std::string fifo = folder + "/fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    std::string received;
    std::thread reader([&] { received = read(fifo); });
    const auto r = cli::run({"-s", "inputs", "-o", fifo});
    reader.join();
    CHECK(r.exit_code == 0);
    CHECK(std::filesystem::is_fifo(fifo));
    CHECK_THAT(received, Contains("inputs · 6×3"));

    // --svg is committed only with the main output: a failed stdout leaves no picture.
    const std::string svg = folder + "/pic.svg";
    const auto failed = cli::run_to_file({"--svg", svg}, "/dev/full");
    CHECK(failed.exit_code == 1);
    CHECK_FALSE(std::filesystem::exists(svg));

    // A run stopped by a signal leaves neither the file nor a temporary.
    const std::string out = folder + "/out.txt";
    auto busy = cli::busy_run_args();
    busy.insert(busy.end(), {"-o", out});
    const auto stopped = cli::run_and_signal(busy, 300, SIGTERM);
    CHECK(stopped.exit_code == 128 + SIGTERM);
    for (const auto& entry : std::filesystem::directory_iterator(folder)) {
        INFO(entry.path());
        CHECK(entry.path().filename().string().find("attntrace-") == std::string::npos);
    }
    CHECK_FALSE(std::filesystem::exists(out));
}

// --- answers files (check-answers), the third round: every reader limits its nesting, reads a
// number whole, keeps to 64 bits and to UTF-8, and names the file ----------------------------

namespace {

struct BadAnswers {
    const char* what;
    std::string contents;  // written to answers.json (or .csv)
    const char* name;
    const char* fragment;  // after "attntrace: error: "
};

std::string nested(std::size_t depth) { return std::string(depth, '[') + "1" + std::string(depth, ']'); }

const std::vector<BadAnswers> answer_cases = {
    // answers.cpp's Scanner recursed once per '[' and ended in SIGSEGV at 100,000. The object
    // is the first level, so the 64th bracket (column 12 + 64) is the 65th.
    {"100,000 nested arrays in a comment", R"({"comment": )" + nested(100000) + R"(, "weights": [[1]]})", "answers.json",
     "answers.json:1:76: invalid JSON: JSON nested deeper than 64 levels"},
    {"100,000 nested arrays as a stage", R"({"weights": )" + nested(100000) + "}", "answers.json",
     "answers.json: /weights/0/0: expected a number (or null, \"-inf\" or \"masked\" for a hidden entry)"},
    {"100,000 nested arrays alone", nested(100000), "answers.json", "answers.json: /: expected an object of stages"},
    // nlohmann's out_of_range was an "internal error".
    {"1e309 in JSON", R"({"weights": {"cell": [1, 1], "value": 1e309}})", "answers.json",
     "answers.json:1:39: number out of range: 1e309 does not fit a double"},
    {"1e309 in CSV", "stage,head,row,col,value\nweights,,0,0,1e309\n", "answers.csv",
     "answers.csv: line 2: value 1e309 is not a finite number"},
    {"a number's prefix in CSV", "stage,head,row,col,value\nweights,,0,0,0.5x\n", "answers.csv",
     "answers.csv: line 2: value 0.5x is not a finite number"},
    // A head of 2³¹ wrapped round to a negative int, and was never named.
    {"a head beyond int", R"({"head": 2147483648, "weights": [[1]]})", "answers.json",
     "answers.json: /head: 2147483648 is more than any trace has: at most 4096"},
    {"a head key beyond int", R"({"heads": {"2147483648": {"weights": [[1]]}}})", "answers.json",
     "answers.json: /heads/2147483648: head 2147483648 is more than any trace has: at most 4096"},
    {"a head beyond int in CSV", "stage,head,row,col,value\nweights,2147483648,0,0,0.5\n", "answers.csv",
     "answers.csv: line 2: head 2147483648 is not a head's number (from 1 to 4096)"},
    {"a row beyond 32 bits in CSV", "stage,head,row,col,value\nweights,,9223372036854775807,0,0.5\n", "answers.csv",
     "answers.csv: line 2: row and col are whole numbers from 0 to 2147483646"},
    {"a row beyond 64 bits", R"({"weights": {"row": 99999999999999999999, "values": [1]}})", "answers.json",
     "answers.json: /weights/row: 99999999999999999999 is more than any trace has"},
    {"a row not written whole", R"({"weights": {"row": 2.0, "values": [1]}})", "answers.json",
     "answers.json: /weights/row: expected a whole number from 1 (rows count from 1), found 2.0"},
    // Text that is not UTF-8 would reach the JSON report.
    {"ill-formed UTF-8 in JSON", "{\"weights\": [[1]], \"comment\": \"a\xff\"}", "answers.json",
     "answers.json:1:33: invalid JSON: ill-formed UTF-8 byte 0xff in a string"},
    {"ill-formed UTF-8 in CSV", "stage,head,row,col,value\nweights,,0,0,0.5,\xc3\n", "answers.csv",
     "answers.csv: line 2: ill-formed UTF-8 byte 0xc3 (byte 18 of the line)"},
    {"a key twice", R"({"weights": [[1]], "weights": [[2]]})", "answers.json",
     "answers.json:1:20: invalid JSON: the key \"weights\" appears twice in one object"},
    {"cut short", R"({"weights": [[1, 2)", "answers.json",
     "answers.json:1:19: invalid JSON: unexpected end of input; expected ',' or ']'"},
    // The messages that check-answers gives after reading name the file too.
    {"a head the run does not have", R"({"heads": {"3": {"scores": [[1]]}}})", "answers.json",
     "answers.json: /heads/3/scores: this run has 1 head, so there is no head 3"},
    {"a cell outside the stage", R"({"weights": {"cell": [99, 1], "value": 0.5}})", "answers.json",
     "answers.json: /weights: row 99, column 1 is outside the weights stage of this run (12×12)"},
    {"a head the run does not have, named beside the stages", R"({"weights": [[1]], "head": 3})", "answers.json",
     "answers.json: /head: this run has 1 head, so there is no head 3 (for /weights)"},
    {"a cell outside the stage in the tidy CSV, which counts from 0", "stage,head,row,col,value\nweights,,12,0,0.5\n",
     "answers.csv",
     "answers.csv: line 2: row 12, col 0 is outside the weights stage of this run (12×12: row and col "
     "count from 0 in the tidy CSV, up to 11 and 11)"},
    {"a cell outside the stage on a later line of the stage in the tidy CSV",
     "stage,head,row,col,value\nweights,,0,0,0.5\n\nweights,,0,1,0.25\nweights,,3,12,0.5\n", "answers.csv",
     "answers.csv: line 5: row 3, col 12 is outside the weights stage of this run (12×12: row and col "
     "count from 0 in the tidy CSV, up to 11 and 11)"},
};

}  // namespace

TEST_CASE("bad answers files: one clear line naming the file and the place, in both formats", "[errors][check-answers]") {
    for (const auto& c : answer_cases) {
        DYNAMIC_SECTION(c.what) {
            cli::TempFile answers(c.contents, c.name);
            for (const char* format : {"table", "json"}) {
                const auto r = cli::run({"check-answers", "example:teacher_smiled", answers.path(), "-m", "self", "-f", format});
                INFO(format << ": " << r.err);
                CHECK(r.exit_code == 1);
                CHECK(r.out.empty());
                CHECK_THAT(r.err, Catch::StartsWith("attntrace: error: ") && Contains(c.fragment));
                CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
                CHECK_THAT(r.err, !Contains("internal error") && !Contains("json.exception"));
            }
        }
    }
}
