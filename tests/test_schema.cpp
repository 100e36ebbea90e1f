// The JSON Schemas of docs/schema: every JSON document attntrace writes — each format of
// JSON, for every example in every mode it fits, with the options that add fields — and every
// input it ships, validated by python3-jsonschema (Debian's); each document names its schema
// in "schema", and an input may carry "$schema".
#include "support/cli.hpp"

#include "input/examples.hpp"

#include "support/catch.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

using Catch::Contains;

namespace fs = std::filesystem;

namespace {

const std::string schema_dir = std::string(ATTNTRACE_SOURCE_DIR) + "/docs/schema/";
const std::string validator = std::string(ATTNTRACE_SOURCE_DIR) + "/tests/schema/validate.py";

// Documents to validate, written to a folder, with the manifest validate.py reads.
class Batch {
public:
    // Runs attntrace with `args` (which must succeed) and keeps its output for `schema`.
    void run(const std::vector<std::string>& args, const std::string& schema, const std::string& kind = "json") {
        const auto r = cli::run(args);
        INFO(fmt::format("{}", fmt::join(args, " ")) << "\n" << r.err);
        REQUIRE(r.exit_code == 0);
        // The document names its schema (each line, for JSON Lines).
        CHECK_THAT(r.out, Contains("\"schema\": \"attntrace." + schema + "/1\""));
        add(r.out, schema, kind);
    }
    void add(const std::string& text, const std::string& schema, const std::string& kind = "json") {
        const std::string path = folder_ / fmt::format("{}.{}", count_++, kind);
        std::ofstream(path) << text;
        manifest_ += schema_dir + schema + ".schema.json\t" + path + "\t" + kind + "\n";
    }
    // Runs the validator over everything kept.
    cli::Result validate() const {
        std::ofstream(folder_ / "manifest") << manifest_;
        return cli::run_program({"/usr/bin/python3", validator, folder_ / "manifest"});
    }
    std::size_t count() const { return count_; }

private:
    cli::TempDir folder_;
    std::string manifest_;
    std::size_t count_ = 0;
};

}  // namespace

TEST_CASE("every JSON document attntrace writes validates against its schema in docs/schema", "[schema][json]") {
    Batch batch;
    for (const auto& example : attntrace::examples()) {
        const std::string name(example.name);
        const bool pair = name.ends_with("_fr");
        for (const char* mode : {"plain", "self", "causal", "bahdanau"}) {
            if (pair != (std::string(mode) == "bahdanau")) continue;
            const std::vector<std::string> run{"--example", name, "-m", mode, "-f", "json"};
            const auto with = [&](std::vector<std::string> extra) {
                std::vector<std::string> args = run;
                args.insert(args.end(), extra.begin(), extra.end());
                return args;
            };
            batch.run(run, "trace");
            batch.run(with({"-q", "1", "--explain"}), "trace");
            batch.run(with({"--dtype", "float32", "--temperature", "0.5", "-s", "parameters,weights"}), "trace");
            batch.run(with({"--check"}), "check");
            if (pair) {
                for (const char* score : {"dot", "general"}) batch.run(with({"--score", score, "-q", "2"}), "trace");
                continue;
            }
            batch.run(with({"--scale", "none", "-q", "2"}), "trace");
            batch.run(with({"--summary"}), "summary");
            batch.run(with({"--summary", "--stage", "context", "--dtype", "float32"}), "summary");
            batch.run({"--example", name, "-m", mode, "--summary", "--stage", "context", "-f", "jsonl"}, "summary-line",
                      "jsonl");
        }
        // similarity refuses an input with an all-zero vector (a padding token's): it has no direction.
        if (!pair && name != "journey_padded") batch.run({"similarity", "example:" + name, "-f", "json"}, "similarity");
    }
    // Several heads, grouped-query attention, the division by the sum.
    batch.run({"-m", "self", "--heads", "2", "--dim", "4", "-q", "journey", "-f", "json"}, "trace");
    batch.run({"-m", "causal", "--heads", "4", "--kv-heads", "2", "--dim", "8", "--explain", "-f", "json"}, "trace");
    batch.run({"--normalize", "sum", "-q", "2", "-f", "json"}, "trace");
    // Positions, windows, padding, tiles (issue 13 and 14's additions).
    batch.run({"-m", "self", "--positions", "sinusoidal", "-q", "2", "-f", "json"}, "trace");
    batch.run({"-m", "causal", "--positions", "rope", "--heads", "2", "--dim", "4", "-q", "3", "-f", "json"}, "trace");
    batch.run({"-m", "causal", "--window", "3", "-q", "4", "--tiles", "2", "-f", "json"}, "trace");
    // The window and the ways of masking that go wrong, in the header.
    batch.run({"-m", "causal", "--window", "2", "--mask-fill", "lowest", "--dtype", "float32", "-f", "json"}, "trace");
    batch.run({"-m", "self", "--window", "2", "--mask-fill", "-1e9", "--heads", "2", "--dim", "4", "-f", "json"}, "trace");
    batch.run({"-m", "causal", "--mask-after-softmax", "--explain", "-f", "json"}, "trace");
    batch.run({"-m", "causal", "--window", "3", "--summary", "-f", "json"}, "summary");
    batch.run({"--example", "journey_padded", "-m", "self", "-q", "2", "-f", "json"}, "trace");
    batch.run({"-m", "self", "--positions", "rope", "--dim", "4", "--position-offset", "5", "--summary", "-f", "json"}, "summary");
    // Several heads through the streaming path: the JSON summary and its lines, with the output rows.
    for (const char* context : {"", "context"}) {
        std::vector<std::string> args{"-m", "causal", "--heads", "2", "--kv-heads", "1", "--dim", "4", "--summary"};
        if (*context) args.insert(args.end(), {"--stage", context});
        auto json_args = args;
        json_args.insert(json_args.end(), {"-f", "json"});
        batch.run(json_args, "summary");
        args.insert(args.end(), {"-f", "jsonl"});
        batch.run(args, "summary-line", "jsonl");
    }
    // The backward pass (--backward): its loss, gradients, -q's row, a step; and its check.
    const cli::TempFile target(R"({"target": [[1, 0], [0, 1], [1, 1], [0, 0], [1, 0], [0, 1]]})", "target.json");
    batch.run({"-m", "self", "--dim", "2", "--backward", "focus:journey=starts", "-q", "journey", "--explain",
               "--step-size", "0.5", "-f", "json"}, "trace");
    batch.run({"-m", "causal", "--heads", "4", "--kv-heads", "2", "--dim", "8", "--backward", "sum", "--step-size", "50",
               "-f", "json"}, "trace");
    batch.run({"-m", "self", "--dim", "2", "--backward", "target:" + target.path(), "-s", "weights,d_weights,d_W_q", "-f",
               "json"}, "trace");
    batch.run({"--backward", "sum", "-q", "2", "--dtype", "float32", "-f", "json"}, "trace");
    batch.run({"example:teacher_smiled_fr", "--score", "general", "--backward", "focus:souri=smiled", "-q", "souri",
               "--explain", "-f", "json"}, "trace");
    batch.run({"example:teacher_smiled_fr", "--backward", "sum", "--step-size", "0.1", "-f", "json"}, "trace");
    batch.run({"-m", "causal", "--backward", "focus:step=Your", "--check", "-f", "json"}, "gradient-check");
    batch.run({"example:padded_cat_fr", "--backward", "sum", "--check", "-f", "json"}, "gradient-check");
    // The streaming backward pass (--summary --backward): every loss, heads, float32, ln_1 and W_o.
    batch.run({"-m", "causal", "--heads", "2", "--kv-heads", "1", "--dim", "4", "--summary", "--backward", "sum", "-f",
               "json"}, "stream-gradients");
    batch.run({"-m", "self", "--dim", "2", "--summary", "--backward", "focus:journey=starts", "--dtype", "float32", "-f",
               "json"}, "stream-gradients");
    batch.run({"-m", "self", "--dim", "2", "--summary", "--backward", "target:" + target.path(), "-f", "json"},
              "stream-gradients");
    batch.run({std::string(ATTNTRACE_SOURCE_DIR) + "/data/arrays/toy_gpt2.safetensors", "--from", "gpt2", "--layer", "1",
               "--summary", "--backward", "sum", "-f", "json"}, "stream-gradients");
    // decode.
    batch.run({"decode", "-f", "json"}, "decode");
    batch.run({"decode", "--dim", "8", "--heads", "4", "--kv-heads", "2", "--explain", "--step", "3", "-f", "json"}, "decode");
    // check-answers: a pass, and a fail with its diagnosis (exit 1), and one without a diagnosis.
    batch.run({"check-answers", "example:teacher_smiled", cli::data_file("practice/smiled_weights.json"), "-f", "json"},
              "check-answers");
    for (const char* answers : {R"({"weights": {"row": 12, "values": [0, 0.348, 0.0659, 0.0476, 0.044, 0, 0.0256, 0, 0, 0, 0.1575, 0.3114]}})",
                                R"({"scores": {"cell": [2, 2], "value": 7}})"}) {
        const cli::TempFile file(answers, "answers.json");
        const auto r = cli::run({"check-answers", "example:teacher_smiled", file.path(), "-f", "json"});
        REQUIRE(r.exit_code == 1);
        batch.add(r.out, "check-answers");
    }
    {  // two mistakes that give the same number: the diagnosis and its "also"
        const cli::TempFile file(R"({"weights": {"cell": [1, 2], "value": 0.2}})", "answers.json");
        const auto r = cli::run({"check-answers", "example:your_journey", file.path(), "-m", "causal", "-f", "json"});
        REQUIRE(r.exit_code == 1);
        REQUIRE(nlohmann::json::parse(r.out)["stages"][0]["diagnosis"].contains("also"));
        batch.add(r.out, "check-answers");
    }
    // quiz: every round answered (right, wrong with a mistake, skipped), and none.
    {
        const cli::TempFile answers("0.1350\n0.9422\n?\n-inf\nabc\n", "answers.txt");
        for (const std::vector<std::string>& options :
             {std::vector<std::string>{"--example", "your_journey", "--mode", "plain", "--seed", "3", "--rounds", "5"},
              {"--rounds", "5", "--seed", "9"}}) {
            std::vector<std::string> args{"quiz", "-f", "json", "--answers", answers.path()};
            args.insert(args.end(), options.begin(), options.end());
            const auto r = cli::run(args);
            REQUIRE(r.exit_code == 1);
            batch.add(r.out, "quiz");
        }
        const auto none = cli::run({"quiz", "-f", "json", "--answers", "/dev/null", "--rounds", "20", "--seed", "2"});
        REQUIRE(none.exit_code == 1);
        batch.add(none.out, "quiz");
    }
    // compare, bench.
    batch.run({"compare", "example:big_dream", "example:big_mistake", "-t", "big", "-f", "json"}, "compare");
    batch.run({"compare", "example:bank_river", "example:bank_money", "-t", "bank", "-m", "self", "-f", "json"}, "compare");
    batch.run({"bench", "--sizes", "64,128", "--dim", "8", "--repeats", "1", "--threads", "1", "-f", "json"}, "bench");
    // Inputs: every example, and what generate writes.
    for (const auto& example : attntrace::examples()) batch.add(std::string(example.json), "input");
    batch.add(cli::run({"generate", "-n", "5", "-d", "3"}).out, "input");
    batch.add(cli::read_file(std::string(ATTNTRACE_SOURCE_DIR) + "/data/arrays/journey.json"), "input");
    batch.add(R"({"tokens": ["a"], "embeddings": [[1, 2]], "layout": "out_in", "weights": {"query": "w_q.npy",
        "key": [[1], [2]], "value": [[1], [2]], "query_bias": [0.5], "key_bias": "b_k.npy"}})", "input");
    // Binary inputs through the same loader: a trace with biases and one of GPT-2's layer.
    const std::string arrays = std::string(ATTNTRACE_SOURCE_DIR) + "/data/arrays/";
    batch.run({arrays + "journey.npz", "-m", "self", "--layout", "out_in", "-q", "2", "-f", "json"}, "trace");
    batch.run({arrays + "toy_gpt2.safetensors", "--from", "gpt2", "--layer", "1", "-q", "3", "-f", "json"}, "trace");
    batch.run({arrays + "toy_gpt2.safetensors", "--from", "gpt2", "--layer", "0", "--summary", "-s", "context",
               "-f", "json"}, "summary");

    const auto r = batch.validate();
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out == fmt::format("valid: {} documents\n", batch.count()));
}

TEST_CASE("the schemas refuse what attntrace would not write or read", "[schema][json]") {
    // The check that the test above can fail: documents that break each schema somewhere.
    Batch batch;
    std::string trace = cli::run({"-f", "json"}).out;
    trace.replace(trace.find("\"mode\": \"plain\""), 15, "\"mode\": \"plane\"");
    batch.add(trace, "trace");
    std::string summary = cli::run({"--summary", "-f", "json"}).out;
    summary.replace(summary.find("\"top\": 3"), 8, "\"top\": 0");
    batch.add(summary, "summary");
    std::string gradients = cli::run({"-m", "self", "--dim", "2", "--summary", "--backward", "sum", "-f", "json"}).out;
    gradients.replace(gradients.find("\"kind\": \"sum\""), 13, "\"kind\": \"all\"");
    batch.add(gradients, "stream-gradients");
    std::string quiz = cli::run({"quiz", "-f", "json", "--answers", "/dev/null"}).out;
    quiz.replace(quiz.find("\"verdict\": \"unanswered\""), 23, "\"verdict\": \"unknown\"");
    batch.add(quiz, "quiz");
    std::string windowed = cli::run({"-m", "causal", "--window", "2", "-f", "json"}).out;
    windowed.replace(windowed.find("\"window\": 2"), 11, "\"window\": 0");
    batch.add(windowed, "trace");
    batch.add(R"({"schema": "attntrace.summary-line/1", "index": 0, "token": "a", "top": [], "max_weight": 1, "entropy": 0})",
              "summary-line", "jsonl");
    batch.add(R"({"sentence": "a b", "embeddings": {"a": [1], "b": [2]}, "embedings": {}})", "input");
    batch.add(R"({"sentence": "a", "tokens": ["a"], "embeddings": [[1]]})", "input");
    batch.add(R"({"source": {"tokens": ["a"], "states": [[1]]}, "target": {"tokens": ["b"], "states": [[1]]}, "heads": 2})",
              "input");
    batch.add(R"({"tokens": ["a"], "embeddings": "vectors.txt"})", "input");
    batch.add(R"({"tokens": ["a"], "embeddings": [[1]], "layout": "in-out"})", "input");
    const auto r = batch.validate();
    CHECK(r.exit_code == 1);
    std::size_t invalid = 0;
    for (std::size_t at = 0; (at = r.out.find('\n', at)) != std::string::npos; ++at) ++invalid;
    INFO(r.out << r.err);
    CHECK(invalid == batch.count());
}

TEST_CASE("an input may name its schema in $schema, which must be a string", "[schema][load]") {
    const cli::TempFile input(
        R"({"$schema": "../docs/schema/input.schema.json", "sentence": "a b", "embeddings": {"a": [1, 0], "b": [0, 1]}})");
    const auto r = cli::run({input.path(), "-s", "weights"});
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("Attention weights"));
    Batch batch;
    batch.add(cli::read_file(input.path()), "input");
    CHECK(batch.validate().exit_code == 0);

    const cli::TempFile bad(R"({"$schema": 1, "sentence": "a", "embeddings": {"a": [1]}})");
    const auto refused = cli::run({bad.path()});
    CHECK(refused.exit_code == 1);
    CHECK(refused.err == "attntrace: error: " + bad.path() + ": /$schema: expected a string, found number 1\n");
}
