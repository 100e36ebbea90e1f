// Binary arrays as inputs (issue 15): .npy, .npz and .safetensors files written by NumPy (or by
// hand, for safetensors) in tests/arrays/write_inputs.py, independently of attntrace, traced
// and compared with the trace of the same numbers as JSON; biases, the (out, in) layout and
// its trap, JSON inputs naming .npy files, `generate --format`, and GPT-2's own layer against
// an implementation written here in plain loops.
#include "support/cli.hpp"
#include "support/error_line.hpp"
#include "support/limited.hpp"
#include "support/naive.hpp"
#include "support/trace_json.hpp"

#include "core/problem.hpp"
#include "input/generate.hpp"
#include "input/load.hpp"
#include "input/source.hpp"
#include "input/tensors.hpp"

#include "support/catch.hpp"
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

using Catch::Contains;
using nlohmann::json;
using trace_json::run_json;
using trace_json::stage_rows;

namespace {

using namespace naive;

// The folder of inputs the script wrote, once per test run.
const cli::TempDir& inputs() {
    static const cli::TempDir folder;
    static const bool written = [] {
        const auto r = cli::run_program(
            {"/usr/bin/python3", std::string(ATTNTRACE_SOURCE_DIR) + "/tests/arrays/write_inputs.py", folder.path()});
        INFO(r.out << r.err);
        REQUIRE(r.exit_code == 0);  // `make test` installs python3-numpy
        return true;
    }();
    (void)written;
    return folder;
}

std::string at(const std::string& name) { return inputs() / name; }

json reference(const std::string& name) {
    std::ifstream in(at(name));
    return json::parse(in);
}

Grid grid(const json& rows) {
    Grid g;
    for (const auto& row : rows) g.push_back(row.get<std::vector<double>>());
    return g;
}

// Every stage's numbers of two traces, equal within `tolerance` (0: exactly).
void same_stages(const json& a, const json& b, double tolerance) {
    REQUIRE(a["stages"].size() == b["stages"].size());
    for (std::size_t s = 0; s < a["stages"].size(); ++s) {
        const auto& sa = a["stages"][s];
        const auto& sb = b["stages"][s];
        INFO("stage " << sa["name"]);
        REQUIRE(sa["name"] == sb["name"]);
        const auto ra = trace_json::rows_of(sa["data"]), rb = trace_json::rows_of(sb["data"]);
        REQUIRE(ra.size() == rb.size());
        for (std::size_t i = 0; i < ra.size(); ++i)
            for (std::size_t j = 0; j < ra[i].size(); ++j) {
                if (std::isinf(ra[i][j]) || std::isinf(rb[i][j])) CHECK(ra[i][j] == rb[i][j]);
                else CHECK(std::abs(ra[i][j] - rb[i][j]) <= tolerance);
            }
    }
}

// The layer of write_inputs.py worked out here: Q = X·W_q + b_q and so on, softmax(QKᵀ/√2),
// Z = A·V, output = Z·W_o + b_o.
struct Layer {
    Grid q, k, v, weights, context, output;
};

Grid plus_row(Grid m, const std::vector<double>& b) {
    for (auto& row : m)
        for (std::size_t c = 0; c < row.size(); ++c) row[c] += b[c];
    return m;
}

Grid softmax_rows(const Grid& s, double divisor, bool causal) {
    Grid a = s;
    for (std::size_t i = 0; i < s.size(); ++i) {
        double top = -INFINITY, sum = 0;
        for (std::size_t j = 0; j < s[i].size(); ++j)
            if (!causal || j <= i) top = std::max(top, s[i][j] / divisor);
        for (std::size_t j = 0; j < s[i].size(); ++j) sum += a[i][j] = (!causal || j <= i) ? std::exp(s[i][j] / divisor - top) : 0;
        for (double& w : a[i]) w /= sum;
    }
    return a;
}

Grid transposed(const Grid& m) {
    Grid t(m[0].size(), std::vector<double>(m.size()));
    for (std::size_t i = 0; i < m.size(); ++i)
        for (std::size_t j = 0; j < m[i].size(); ++j) t[j][i] = m[i][j];
    return t;
}

Layer worked_layer(const json& doc) {
    const json& w = doc["weights"];
    const Grid x = grid(doc["embeddings"]);
    Layer l;
    l.q = plus_row(times(x, grid(w["query"])), w["query_bias"].get<std::vector<double>>());
    l.k = plus_row(times(x, grid(w["key"])), w["key_bias"].get<std::vector<double>>());
    l.v = plus_row(times(x, grid(w["value"])), w["value_bias"].get<std::vector<double>>());
    l.weights = softmax_rows(times(l.q, transposed(l.k)), std::sqrt(2.0), false);
    l.context = times(l.weights, l.v);
    l.output = plus_row(times(l.context, grid(w["output"])), w["output_bias"].get<std::vector<double>>());
    return l;
}

void near(const trace_json::Rows& got, const Grid& expected, double tolerance) {
    REQUIRE(got.size() == expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        REQUIRE(got[i].size() == expected[i].size());
        for (std::size_t j = 0; j < got[i].size(); ++j) CHECK(std::abs(got[i][j] - expected[i][j]) <= tolerance);
    }
}

}  // namespace

TEST_CASE("an npz or safetensors input traces as the JSON of the same numbers in every element type", "[arrays]") {
    const json from_json = run_json({at("layer.json"), "-m", "self"});
    // float64, float32 (deflated), big-endian float16, bfloat16 and float16: every number is a
    // multiple of 1/8, exact in each, so the traces are the same to the last bit.
    for (const char* file : {"layer.npz", "layer_deflated.npz", "layer_f16_be.npz", "layer.safetensors",
                             "layer_bf16.safetensors", "layer_f16.safetensors"}) {
        INFO(file);
        const json traced = run_json({at(file), "-m", "self"});
        same_stages(traced, from_json, 0);
        CHECK(traced["parameters"] == from_json["parameters"]);
    }
}

TEST_CASE("encoder and decoder states as arrays trace as their JSON in mode bahdanau", "[arrays][bahdanau]") {
    const json from_json = run_json({at("pair.json"), "-m", "bahdanau"});
    const json traced = run_json({at("pair.npz"), "-m", "bahdanau"});
    same_stages(traced, from_json, 0);
    CHECK(traced["parameters"] == from_json["parameters"]);
    CHECK(trace_json::stage_of(traced, "weights")["rows"] == json::array({"y1", "y2"}));
    CHECK(trace_json::stage_of(traced, "weights")["cols"] == json::array({"x1", "x2", "x3"}));
}

TEST_CASE("biases are added after each product as a second implementation computes them", "[arrays]") {
    const Layer expected = worked_layer(reference("layer.json"));
    const json traced = run_json({at("layer.npz"), "-m", "self"});
    near(stage_rows(traced, "queries"), expected.q, 1e-12);
    near(stage_rows(traced, "keys"), expected.k, 1e-12);
    near(stage_rows(traced, "values"), expected.v, 1e-12);
    near(stage_rows(traced, "weights"), expected.weights, 1e-12);
    near(stage_rows(traced, "context"), expected.context, 1e-12);
    near(stage_rows(traced, "output"), expected.output, 1e-12);
    CHECK(trace_json::stage_of(traced, "queries")["formula"] == "Q = X·W_q + b_q");
    CHECK(trace_json::stage_of(traced, "output")["formula"] == "output = Z·W_o + b_o");
    CHECK(traced["parameters"]["b_q"] == json::array({0.25, -0.5}));
    CHECK(traced["parameters"]["b_o"] == json::array({-0.25, 0.125, 1.0}));
    // --check recomputes the output with the bias.
    const auto check = cli::run({at("layer.npz"), "-m", "self", "--check"});
    INFO(check.out << check.err);
    CHECK(check.exit_code == 0);
    CHECK_THAT(check.out, Contains("output = context · W_o + b_o"));
}

TEST_CASE("the worked example adds the bias entry by entry", "[arrays]") {
    const auto r = cli::run({at("layer.npz"), "-m", "self", "-q", "t2", "--color", "never"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("q_t2 = x_t2·W_q + b_q"));
    CHECK_THAT(r.out, Contains("entry k of q_t2 is x_t2 times column k of W_q, plus entry k of b_q:"));
    // entry 1 of q_t2: 1.5·0.5 + 0.125·0.125 + (−0.75)·(−1) + 0.25 = 1.765625
    const Layer expected = worked_layer(reference("layer.json"));
    CHECK(expected.q[1][0] == 1.765625);
    CHECK_THAT(r.out, Contains("entry 1 = 1.5×0.5 + 0.125×0.125 + (-0.75)×(-1) + 0.25 = 1.7656"));
    CHECK_THAT(r.out, Contains("output_t2 = z_t2·W_o + b_o = "));
    CHECK_THAT(r.out, Contains("plus entry k of b_o:"));
}

TEST_CASE("the embeddings alone as npy in every dtype and order and version", "[arrays]") {
    const json doc = reference("layer.json");
    const Grid x = grid(doc["embeddings"]);
    for (const char* file : {"embeddings_f8.npy", "embeddings_f4.npy", "embeddings_f2.npy", "embeddings_f8_be.npy",
                             "embeddings_f4_be.npy", "embeddings_fortran.npy", "embeddings_v2.npy", "embeddings_v3.npy"}) {
        INFO(file);
        const json traced = run_json({at(file)});
        near(stage_rows(traced, "inputs"), x, 0);
        CHECK(trace_json::stage_of(traced, "inputs")["rows"] == json::array({"t1", "t2", "t3", "t4"}));
    }
    // The Fortran-ordered one says what was done to it.
    const json fortran = run_json({at("embeddings_fortran.npy")});
    CHECK_THAT(fortran["notes"].dump(), Contains("Fortran (column-major) order"));
    // --tokens labels the rows.
    const json labelled = run_json({at("embeddings_f8.npy"), "--tokens", "the cat sat down"});
    CHECK(trace_json::stage_of(labelled, "inputs")["rows"] == json::array({"the", "cat", "sat", "down"}));
}

TEST_CASE("a JSON input may name npy files for its matrices and vectors", "[arrays]") {
    const json named = run_json({at("layer_refs.json"), "-m", "self"});
    const json written = run_json({at("layer.json"), "-m", "self"});
    same_stages(named, written, 0);
    CHECK(named["parameters"] == written["parameters"]);
}

TEST_CASE("a square weight stored by nn.Linear is refused without a layout and right with out_in", "[arrays]") {
    // Without a layout the trap is refused, with the reason and both fixes.
    const auto refused = cli::run({at("square_out_in.npz"), "-m", "self"});
    CHECK(refused.exit_code == 1);
    CHECK(refused.out.empty());
    CHECK_THAT(refused.err, Contains("array \"query\": a square weight (3×3) from a binary array, and no layout stated"));
    CHECK_THAT(refused.err, Contains("--layout out_in"));
    CHECK_THAT(refused.err, Contains("--layout in_out"));
    // With --layout out_in the weights are used as X·Wᵀ: the trace of the JSON with the
    // (in, out) weights, to the last bit, and a note says so.
    const json right = run_json({at("square_out_in.npz"), "-m", "self", "--layout", "out_in"});
    const json from_json = run_json({at("square.json"), "-m", "self"});
    same_stages(right, from_json, 0);
    CHECK_THAT(right["notes"].dump(), Contains("stored (out, in)"));
    // Read as in_out (the mistake the refusal prevents) the context is another one.
    const json wrong = run_json({at("square_out_in.npz"), "-m", "self", "--layout", "in_out"});
    const auto a = stage_rows(wrong, "context"), b = stage_rows(from_json, "context");
    double largest = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        for (std::size_t j = 0; j < a[i].size(); ++j) largest = std::max(largest, std::abs(a[i][j] - b[i][j]));
    CHECK(largest > 0.05);
    // A JSON input may state the layout too.
    const auto stated = cli::run({at("square.json"), "-m", "self", "--layout", "out_in", "-f", "json"});
    CHECK(stated.exit_code == 0);
}

TEST_CASE("a non-square weight in the wrong layout says it fits transposed", "[arrays]") {
    const auto r = cli::run({at("layer.npz"), "-m", "self", "--layout", "out_in"});
    CHECK(r.exit_code == 1);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Contains("array \"query\": shape 3×2 (out × in), used transposed as 2×3,"));
    CHECK_THAT(r.err, Contains("it fits as stored: its layout may be in_out"));
}

TEST_CASE("bad array inputs get one clear error line", "[arrays]") {
    const cli::TempDir scratch;
    const auto fails = [](const std::vector<std::string>& args, int code, const std::string& message) {
        const auto r = cli::run(args);
        INFO(fmt::format("{}", fmt::join(args, " ")) << " → " << r.err);
        CHECK(r.exit_code == code);
        CHECK(r.out.empty());
        CHECK_THAT(r.err, Contains(message));
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    };
    fails({at("embeddings_f8.npy"), "--tokens", "a b"}, 2, "--tokens gives 2 tokens for the 4 rows of the array");
    fails({at("layer.json"), "--tokens", "a b"}, 2, "a JSON input names its tokens");
    fails({at("layer.json"), "--from", "gpt2", "--layer", "0"}, 2, "not JSON");
    fails({at("gpt2.safetensors"), "--from", "gpt2"}, 2, "--from gpt2 needs --layer L");
    fails({at("gpt2.safetensors"), "--from", "gpt2", "--layer", "7", "--hidden-states", at("hidden.npy")}, 1,
          "no layer 7 of GPT-2's tensors (h.7.attn.c_attn.weight); the layers here: 0–1");
    fails({at("gpt2.safetensors"), "--from", "gpt2", "--layer", "0"}, 1, "no array \"hidden_states\"");
    fails({at("gpt2.safetensors")}, 1, "holds GPT-2's tensors (h.0.attn.c_attn.weight): the trace, decode, compare and check-answers read them with --from gpt2 --layer L");
    // similarity has no --from: the message names the commands that do, not an option of its own.
    fails({"similarity", at("gpt2.safetensors")}, 1, "the trace, decode, compare and check-answers read them with --from gpt2");
    CHECK_THAT(cli::run({"similarity", "--from", "gpt2", at("gpt2.safetensors")}).err, Contains("--from"));  // not taken
    fails({at("layer.npz"), "--layer", "1"}, 2, "--layer L needs --from gpt2");
    // More rows than the limit on tokens: refused before a label is made for each. A .npy
    // of 2,000,000 × 1 float16 zeros, laid out here byte by byte (version 1.0).
    {
        std::string header = "{'descr': '<f2', 'fortran_order': False, 'shape': (2000000, 1), }";
        header.append(64 - (10 + header.size() + 1) % 64, ' ');
        header += '\n';
        std::string file = std::string("\x93NUMPY\x01\x00", 8);
        file += static_cast<char>(header.size() & 0xff);
        file += static_cast<char>(header.size() >> 8);
        file += header;
        file.append(2000000 * 2, '\0');
        std::ofstream(scratch / "long.npy", std::ios::binary) << file;
        fails({scratch / "long.npy"}, 1, "the array has 2000000 rows, one per token, more than the limit of 1048576 tokens");
    }
    // A JSON input's references: missing file, not .npy, not NumPy's bytes.
    const std::string missing = scratch / "missing.json";
    std::ofstream(missing) << R"({"tokens": ["a"], "embeddings": "nowhere.npy"})";
    fails({missing}, 1, "/embeddings: cannot read");
    const std::string named = scratch / "named.json";
    std::ofstream(named) << R"({"tokens": ["a"], "embeddings": "vectors.txt"})";
    fails({named}, 1, "expected an object word → vector, an array of vectors, or the name of a .npy file holding it");
    std::ofstream(scratch / "fake.npy") << "[[1, 2]]";
    const std::string fake = scratch / "fake.json";
    std::ofstream(fake) << R"({"tokens": ["a"], "embeddings": "fake.npy"})";
    fails({fake}, 1, "is not a .npy file");
    // A vector of the wrong length, an output bias without an output weight.
    const std::string bias = scratch / "bias.json";
    std::ofstream(bias) << R"({"tokens": ["a"], "embeddings": [[1, 2]], "weights": {"query": [[1], [2]], "key": [[1], [2]],
        "value": [[1], [2]], "query_bias": [1, 2]}})";
    fails({bias, "-m", "self"}, 1, "/weights/query_bias: vector of 2 numbers, expected 1 (one per column of /weights/query)");
    const std::string lone = scratch / "lone.json";
    std::ofstream(lone) << R"({"tokens": ["a"], "embeddings": [[1, 2]], "weights": {"query": [[1], [2]], "key": [[1], [2]],
        "value": [[1], [2]], "output_bias": [1]}})";
    fails({lone, "-m", "self"}, 1, "an output bias needs the output weight W_o");
}

TEST_CASE("generate writes the same numbers as json npz and safetensors", "[arrays][generate]") {
    const cli::TempDir folder;
    for (const char* format : {"json", "npz", "safetensors"})
        REQUIRE(cli::run({"generate", "-n", "5", "-d", "3", "--seed", "9", "-f", format, "-o",
                          folder / fmt::format("g.{}", format)})
                    .exit_code == 0);
    REQUIRE(cli::run({"generate", "-n", "5", "-d", "3", "--seed", "9", "-f", "safetensors", "--dtype", "float32", "-o",
                      folder / "g32.safetensors"})
                .exit_code == 0);
    const json doc = json::parse(cli::read_file(folder / "g.json"));
    const json from_json = run_json({folder / "g.json", "-m", "self"});
    const json npz = run_json({folder / "g.npz", "-m", "self", "--layout", "in_out"});
    const json safetensors = run_json({folder / "g.safetensors", "-m", "self"});
    same_stages(npz, from_json, 0);
    same_stages(safetensors, from_json, 0);
    CHECK(npz["parameters"]["W_q"] == doc["weights"]["query"]);
    // float32: each number the float nearest the JSON's.
    const json narrow = run_json({folder / "g32.safetensors", "-m", "self", "-s", "inputs"});
    const Grid x = grid(doc["embeddings"]);
    const auto got = stage_rows(narrow, "inputs");
    for (std::size_t i = 0; i < x.size(); ++i)
        for (std::size_t j = 0; j < x[i].size(); ++j) CHECK(got[i][j] == static_cast<double>(static_cast<float>(x[i][j])));
    // An npz says nothing of its layout, so its square weights need --layout.
    CHECK(cli::run({folder / "g.npz", "-m", "self"}).exit_code == 1);
    // No binary to a terminal.
    const auto terminal = cli::run_in_terminal({"generate", "-n", "2", "-d", "2", "-f", "npz"});
    CHECK_THAT(terminal.out, Contains("writes binary, and the output is a terminal"));
}

TEST_CASE("the summary of an npy input equals the summary of the same numbers as JSON", "[arrays][summary]") {
    const cli::TempDir folder;
    REQUIRE(cli::run({"generate", "-n", "300", "-d", "8", "-f", "safetensors", "-o", folder / "long.safetensors"}).exit_code == 0);
    REQUIRE(cli::run({"generate", "-n", "300", "-d", "8", "-o", folder / "long.json"}).exit_code == 0);
    for (const char* mode : {"self", "causal"}) {
        const auto a = cli::run({folder / "long.safetensors", "--summary", "-m", mode, "-f", "json"});
        const auto b = cli::run({folder / "long.json", "--summary", "-m", mode, "-f", "json"});
        REQUIRE(a.exit_code == 0);
        REQUIRE(b.exit_code == 0);
        json ja = json::parse(a.out), jb = json::parse(b.out);
        CHECK(ja["queries"] == jb["queries"]);
    }
}

// GPT-2's layer: ln_1, then c_attn split into q, k, v (with its bias) and into 2 heads of 4,
// causal softmax scaled by √4, the heads side by side through c_proj plus its bias.
TEST_CASE("GPT-2's own layer by its names against a naive implementation", "[arrays][gpt2]") {
    const json ref = reference("gpt2_reference.json");
    for (int layer : {0, 1}) {
        INFO("layer " << layer);
        const std::string p = fmt::format("h.{}.", layer);
        const Grid x = grid(ref["hidden_states"]);
        const auto gamma = ref[p + "ln_1.weight"].get<std::vector<double>>();
        const auto beta = ref[p + "ln_1.bias"].get<std::vector<double>>();
        const std::size_t n = x.size(), d = x[0].size(), heads = 2, d_head = d / heads;
        Grid normed = x;
        for (std::size_t i = 0; i < n; ++i) {
            double mean = 0, var = 0;
            for (double v : x[i]) mean += v / static_cast<double>(d);
            for (double v : x[i]) var += (v - mean) * (v - mean) / static_cast<double>(d);
            for (std::size_t k = 0; k < d; ++k) normed[i][k] = (x[i][k] - mean) / std::sqrt(var + 1e-5) * gamma[k] + beta[k];
        }
        const Grid qkv = plus_row(times(normed, grid(ref[p + "attn.c_attn.weight"])),
                                  ref[p + "attn.c_attn.bias"].get<std::vector<double>>());
        Grid concat(n, std::vector<double>(d));
        const json traced = run_json({at("gpt2.safetensors"), "--from", "gpt2", "--layer", std::to_string(layer),
                                      "--hidden-states", at("hidden.npy")});
        CHECK(traced["mode"] == "causal");
        near(stage_rows(traced, "layernorm"), normed, 1e-5);
        for (std::size_t h = 0; h < heads; ++h) {
            const Grid q = columns(qkv, h * d_head, d_head), k = columns(qkv, d + h * d_head, d_head),
                       v = columns(qkv, 2 * d + h * d_head, d_head);
            const Grid a = softmax_rows(times(q, transposed(k)), std::sqrt(static_cast<double>(d_head)), true);
            const Grid z = times(a, v);
            for (const auto& stage : traced["stages"])
                if (stage["name"] == "weights" && stage["head"] == h + 1) near(trace_json::rows_of(stage["data"]), a, 1e-5);
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t c = 0; c < d_head; ++c) concat[i][h * d_head + c] = z[i][c];
        }
        const Grid output = plus_row(times(concat, grid(ref[p + "attn.c_proj.weight"])),
                                     ref[p + "attn.c_proj.bias"].get<std::vector<double>>());
        near(stage_rows(traced, "output"), output, 1e-4);
        CHECK(traced["parameters"].contains("gamma"));
        CHECK(traced["parameters"].contains("b_o"));
    }
    // The summary path takes ln_1 and the biases too: its outputs are the trace's.
    const auto summary = cli::run({at("gpt2.safetensors"), "--from", "gpt2", "--layer", "1", "--hidden-states",
                                   at("hidden.npy"), "--summary", "-s", "context", "-f", "json"});
    INFO(summary.err);
    REQUIRE(summary.exit_code == 0);
    const json s = json::parse(summary.out);
    const json traced = run_json({at("gpt2.safetensors"), "--from", "gpt2", "--layer", "1", "--hidden-states",
                                  at("hidden.npy")});
    near(trace_json::rows_of(s["output"]), grid(trace_json::stage_of(traced, "output")["data"]), 1e-9);
    // Decoding one token at a time reads the normalised rows and the biases: every step agrees.
    const auto decode = cli::run({"decode", at("gpt2.safetensors"), "--from", "gpt2", "--layer", "1",
                                  "--hidden-states", at("hidden.npy"), "-f", "json"});
    INFO(decode.err);
    REQUIRE(decode.exit_code == 0);
    CHECK(json::parse(decode.out)["all_match"] == true);
}

// --summary --dtype float32 reads a float32 array's embeddings where the mapped file has them
// (Sequence::in_place): asked for that, the loader copies no number, and the view's first
// number lies inside the bytes read_input mapped.
namespace {

attntrace::Problem load_file(const attntrace::InputText& input, bool in_place) {
    attntrace::LoadOptions options;
    options.float32_in_place = in_place;
    return attntrace::load_input(input, attntrace::MemoryLimit{std::uint64_t{1} << 40, "the test"}, options);
}

const attntrace::Sequence& sequence_of(const attntrace::Problem& problem) {
    return std::get<attntrace::SingleSequenceInput>(problem.input).sequence;
}

}  // namespace

TEST_CASE("float32 embeddings stay in the mapped file when the summary asks for it", "[arrays][in_place]") {
    const Grid x = grid(reference("layer.json")["embeddings"]);
    for (const char* file : {"embeddings_f4.npy", "embeddings_v2.npy", "embeddings_v3.npy"}) {
        INFO(file);
        const attntrace::InputText input = attntrace::read_input(at(file));
        const attntrace::Problem problem = load_file(input, true);
        const attntrace::Sequence& seq = sequence_of(problem);
        REQUIRE(seq.in_place.has_value());
        CHECK(seq.vectors.rows() == 0);
        CHECK(seq.vectors.cols() == 3);
        CHECK(seq.tokens == std::vector<std::string>{"t1", "t2", "t3", "t4"});
        const auto* first = reinterpret_cast<const char*>(seq.in_place->data);
        CHECK(first >= input.text.data());
        CHECK(first + 12 * sizeof(float) <= input.text.data() + input.text.size());
        CHECK(seq.in_place->storage != nullptr);
        REQUIRE(seq.in_place->rows == 4);
        REQUIRE(seq.in_place->cols == 3);
        for (std::size_t i = 0; i < 4; ++i)
            for (std::size_t j = 0; j < 3; ++j)
                CHECK(seq.in_place->view()(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) ==
                      static_cast<float>(x[i][j]));
        // Not asked: the numbers are copied as doubles, as before.
        const attntrace::Problem copied = load_file(input, false);
        CHECK_FALSE(sequence_of(copied).in_place.has_value());
        CHECK(sequence_of(copied).vectors.rows() == 4);
        // A full trace takes them as doubles once.
        attntrace::Sequence widened = seq;
        widened.materialise();
        CHECK_FALSE(widened.in_place.has_value());
        REQUIRE(widened.vectors.rows() == 4);
        for (std::size_t i = 0; i < 4; ++i)
            for (std::size_t j = 0; j < 3; ++j)
                CHECK(widened.vectors(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) == x[i][j]);
    }
    // Any other type, byte order or array order is converted, in place or not.
    for (const char* file : {"embeddings_f8.npy", "embeddings_f2.npy", "embeddings_f4_be.npy", "embeddings_fortran.npy"}) {
        INFO(file);
        const attntrace::Problem problem = load_file(attntrace::read_input(at(file)), true);
        CHECK_FALSE(sequence_of(problem).in_place.has_value());
        CHECK(sequence_of(problem).vectors.rows() == 4);
    }
}

TEST_CASE("a number that is not finite is refused the same way in place or not", "[arrays][in_place]") {
    // A float32 .npy of 2 × 2 written byte by byte (our writer refuses infinities): the header
    // padded with spaces to a multiple of 64 bytes in all, then 1, 2, 3, inf little-endian.
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }";
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string npy = std::string("\x93NUMPY\x01\x00", 8);
    npy += static_cast<char>(header.size());
    npy += '\0';
    npy += header;
    for (const float f : {1.0f, 2.0f, 3.0f, std::numeric_limits<float>::infinity()})
        npy.append(reinterpret_cast<const char*>(&f), sizeof f);
    const cli::TempFile file(npy, "inf.npy");
    const auto in_place = cli::run({file.path(), "--summary", "--dtype", "float32"});
    const auto copied = cli::run({file.path(), "--summary"});
    CHECK(in_place.exit_code == 1);
    CHECK(in_place.out.empty());
    CHECK_THAT(in_place.err, Contains("row 2, column 2"));
    CHECK(in_place.err == copied.err);
}

TEST_CASE("a summary from float32 rows in place equals the summary of the same numbers as JSON",
          "[arrays][in_place][summary]") {
    const cli::TempDir folder;
    REQUIRE(cli::run({"generate", "-n", "300", "-d", "8", "-f", "safetensors", "--dtype", "float32", "-o",
                      folder / "long.safetensors"})
                .exit_code == 0);
    REQUIRE(cli::run({"generate", "-n", "300", "-d", "8", "-o", folder / "long.json"}).exit_code == 0);
    // The JSON's numbers rounded to float32 are the file's: the same computation, so the same bytes.
    const std::vector<std::vector<std::string>> runs = {
        {"-m", "plain"}, {"-m", "self"}, {"-m", "causal"}, {"-m", "causal", "--window", "5"},
        {"-m", "self", "--heads", "2"}, {"-m", "self", "--positions", "sinusoidal"},
        {"-m", "causal", "--positions", "rope"}, {"-m", "plain", "--stage", "context"}};
    for (const auto& options : runs) {
        INFO(fmt::format("{}", fmt::join(options, " ")));
        std::vector<std::string> a = {folder / "long.safetensors", "--summary", "--dtype", "float32", "-f", "json"};
        std::vector<std::string> b = {folder / "long.json", "--summary", "--dtype", "float32", "-f", "json"};
        a.insert(a.end(), options.begin(), options.end());
        b.insert(b.end(), options.begin(), options.end());
        const auto ra = cli::run(a), rb = cli::run(b);
        REQUIRE(ra.exit_code == 0);
        REQUIRE(rb.exit_code == 0);
        // Everything but where the input came from and the note on the file's layout.
        json ja = json::parse(ra.out), jb = json::parse(rb.out);
        for (json* j : {&ja, &jb}) {
            j->erase("input");
            j->erase("notes");
            j->erase("description");
        }
        CHECK(ja.dump() == jb.dump());
    }
    // Over 64 tokens a table is the summary too; a stage asked for is the full trace, whose
    // numbers are widened once.
    const auto rows_of_table = [](const std::string& out) {
        const auto from = out.find("note: 300 tokens");
        return from == std::string::npos ? std::string() : out.substr(from);
    };
    const auto table = cli::run({folder / "long.safetensors", "--dtype", "float32", "-m", "causal"});
    const auto table_json = cli::run({folder / "long.json", "--dtype", "float32", "-m", "causal"});
    REQUIRE(table.exit_code == 0);
    REQUIRE(table_json.exit_code == 0);
    CHECK_FALSE(rows_of_table(table.out).empty());
    CHECK(rows_of_table(table.out) == rows_of_table(table_json.out));
    const auto full_a = cli::run({folder / "long.safetensors", "--dtype", "float32", "-m", "self", "-s", "weights", "-f", "json"});
    const auto full_b = cli::run({folder / "long.json", "--dtype", "float32", "-m", "self", "-s", "weights", "-f", "json"});
    REQUIRE(full_a.exit_code == 0);
    REQUIRE(full_b.exit_code == 0);
    same_stages(json::parse(full_a.out), json::parse(full_b.out), 0);
}

namespace {

// Peak resident memory, in MiB, of attntrace run with `args`, measured by the small launcher
// of support/limited.hpp (not by this large process, whose memory a child starts with).
double peak_mib(const std::vector<std::string>& args) {
    const limited::Result r = limited::run(args);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return static_cast<double>(r.peak_kib) / 1024.0;
}

}  // namespace

// Kept in place, 65,536 × 64 float32 numbers (16 MiB in the file) cost no copy: the run's peak
// stays below the file's size plus 32 MiB, where converting them into doubles and copying
// them once (32 MiB each time) could not.
TEST_CASE("float32 rows read in place cost no copy of the numbers", "[arrays][in_place][resources]") {
    const cli::TempDir folder;
    REQUIRE(cli::run({"generate", "-n", "65536", "-d", "64", "-f", "safetensors", "--dtype", "float32", "-o",
                      folder / "long.safetensors"})
                .exit_code == 0);
    const double file_mib = static_cast<double>(cli::read_file(folder / "long.safetensors").size()) / (1024.0 * 1024.0);
    const double in_place = peak_mib({folder / "long.safetensors", "--summary", "-m", "plain", "--window", "1",
                                      "--dtype", "float32", "--threads", "1"});
    INFO("peak " << in_place << " MiB for a file of " << file_mib << " MiB");
    CHECK(in_place < file_mib + 32);
    // In float64 the numbers are converted and copied: the same run needs far more.
    const double widened = peak_mib({folder / "long.safetensors", "--summary", "-m", "plain", "--window", "1",
                                     "--dtype", "float64", "--threads", "1"});
    INFO("float64: peak " << widened << " MiB");
    CHECK(widened > file_mib + 32);
}

// --- the third round (issue 29): numbers read whole, labels that are text --------------------

namespace {

// A GPT-2 layer 0 of d = 4 (two heads of 2) written by attntrace's writer, with the given
// metadata, and hidden states of 3 tokens beside it, in `dir`.
std::string gpt2_layer_file(const cli::TempDir& dir, const std::map<std::string, std::string>& metadata) {
    attntrace::Matrix c_attn(4, 12), c_attn_bias(1, 12), c_proj(4, 4), c_proj_bias(1, 4), gamma(1, 4), beta(1, 4),
        hidden(3, 4);
    for (Eigen::Index i = 0; i < c_attn.size(); ++i) c_attn.data()[i] = 0.01 * static_cast<double>(i % 7) - 0.02;
    c_attn_bias.setConstant(0.1);
    for (Eigen::Index i = 0; i < c_proj.size(); ++i) c_proj.data()[i] = 0.05 * static_cast<double>(i % 5);
    c_proj_bias.setZero();
    gamma.setOnes();
    beta.setZero();
    for (Eigen::Index i = 0; i < hidden.size(); ++i) hidden.data()[i] = static_cast<double>(i % 4) - 1.5;
    const std::string model = dir / "model.safetensors";
    std::ofstream(model, std::ios::binary) << attntrace::write_safetensors(
        {{"h.0.attn.c_attn.weight", &c_attn},
         {"h.0.attn.c_attn.bias", &c_attn_bias, true},
         {"h.0.attn.c_proj.weight", &c_proj},
         {"h.0.attn.c_proj.bias", &c_proj_bias, true},
         {"h.0.ln_1.weight", &gamma, true},
         {"h.0.ln_1.bias", &beta, true},
         {"hidden_states", &hidden}},
        attntrace::ElementType::float32, metadata);
    return model;
}

}  // namespace

TEST_CASE("metadata numbers are read whole or refused", "[arrays][gpt2]") {
    // std::stoi and std::stod read a prefix: "1e3" was 1 head, "0.5junk" an epsilon of 0.5.
    const cli::TempDir dir;
    const auto run = [&](const std::map<std::string, std::string>& metadata) {
        return cli::run({gpt2_layer_file(dir, metadata), "--from", "gpt2", "--layer", "0", "-f", "json"});
    };
    const auto good = run({{"n_head", "2"}, {"layer_norm_epsilon", "1e-5"}});
    INFO(good.err);
    REQUIRE(good.exit_code == 0);
    CHECK(json::parse(good.out)["dims"]["heads"] == 2);
    for (const char* heads : {"1e3", "2 ", " 2", "2heads", "0x2", "+2", ""}) {
        INFO("n_head = \"" << heads << "\"");
        const auto r = run({{"n_head", heads}});
        CHECK(r.exit_code == 1);
        CHECK(r.out.empty());
        CHECK_THAT(r.err, Contains("is not a whole number of heads"));
    }
    // Whole numbers that are no count of heads for d = 4, the largest beyond 64 bits: said so.
    for (const std::string heads : {"3", "16", "2147483649", "18446744073709551617"}) {
        INFO("n_head = \"" << heads << "\"");
        const auto r = run({{"n_head", heads}});
        cli::require_error_line(r, 1, heads.size() > 19 ? "\"" + heads + "\" is more heads than d = 4 has numbers"
                                                         : "\"" + heads + "\" does not split d = 4 into heads");
    }
    for (const char* epsilon : {"0.5junk", "1e-5 ", "nan", "1e-5.0", ""}) {
        INFO("layer_norm_epsilon = \"" << epsilon << "\"");
        const auto r = run({{"n_head", "2"}, {"layer_norm_epsilon", epsilon}});
        CHECK(r.exit_code == 1);
        CHECK_THAT(r.err, Contains("is not a number between 0 and 1"));
    }
}

TEST_CASE("labels given by the tokens option that are not UTF-8 are refused where they enter", "[arrays][labels]") {
    // They reached the JSON output as bytes that are not UTF-8, and the SVG as XML that is not
    // well-formed.
    const auto r = cli::run({at("embeddings_f8.npy"), "--tokens", "a b \xff\xfe d", "-f", "json"});
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Contains("--tokens: label 3 (\"\\xff\\xfe\") is not valid UTF-8: byte 1 is 0xff"));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    const cli::TempDir dir;
    const auto svg = cli::run({at("embeddings_f8.npy"), "--tokens", "a b c\xc3", "--svg", dir / "p.svg"});
    CHECK(svg.exit_code == 2);
    CHECK(dir.names().empty());
    // Well-formed labels in any script are taken as they are.
    const auto fine = cli::run({at("embeddings_f8.npy"), "--tokens", "a é 猫 🚀", "-f", "json"});
    REQUIRE(fine.exit_code == 0);
    CHECK(json::parse(fine.out)["tokens"][3] == "🚀");
}

TEST_CASE("generate's array formats are refused by what they hold, not by the numbers alone", "[arrays][generate]") {
    // (1000 + 3·64) · 64 numbers: 610,304 bytes as doubles, but writing them holds the doubles,
    // each array's bytes and the file they make (measured: 24.8 bytes a number in float64).
    const std::int64_t numbers = (1000 + 3 * 64) * 64;
    const auto write = [&](std::uint64_t max_bytes, bool float32) {
        std::ostringstream out;
        attntrace::write_generated_arrays(out, 1000, 64, 1, attntrace::ArrayFormat::npz, float32, max_bytes);
        return out.str().size();
    };
    CHECK_THROWS_WITH(write(static_cast<std::uint64_t>(numbers) * 24, false),
                      Contains("writing them as an array file holds about") && Contains("--format json writes as it goes"));
    CHECK(write(static_cast<std::uint64_t>(numbers) * 32, false) > static_cast<std::size_t>(numbers) * 8);
    CHECK_THROWS(write(static_cast<std::uint64_t>(numbers) * 16, true));
    CHECK(write(static_cast<std::uint64_t>(numbers) * 20, true) > static_cast<std::size_t>(numbers) * 4);
    // The command line's message names no option generate does not have.
    const auto r = cli::run({"generate", "-n", "1048576", "-d", "512", "-f", "npz", "-o", "/dev/null"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains("holds about") && !Contains("--max-memory"));
}
