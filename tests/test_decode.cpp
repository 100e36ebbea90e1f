// Generation with a KV cache (attntrace decode): every step against a naive loop written here
// and against the full causal trace, for several n, prefills, heads and key/value heads; the
// cache's bytes against the formula, worked out by hand; the formats; the refusals.
#include "attention/decode.hpp"
#include "attention/single.hpp"
#include "attention/trace.hpp"
#include "support/cli.hpp"
#include "support/error_line.hpp"
#include "support/trace_json.hpp"
#include "support/naive.hpp"

#include "support/catch.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using namespace attntrace;
using Catch::Contains;
using trace_json::run_json;
using nlohmann::json;

namespace {

using namespace naive;  // Grid, Lcg and the loop products (support/naive.hpp)

constexpr double minus_infinity = -std::numeric_limits<double>::infinity();

// x · columns first … first + count − 1 of w.
std::vector<double> row_times(const std::vector<double>& x, const Grid& w, std::size_t first, std::size_t count) {
    std::vector<double> y(count, 0.0);
    for (std::size_t c = 0; c < count; ++c)
        for (std::size_t i = 0; i < x.size(); ++i) y[c] += x[i] * w[i][first + c];
    return y;
}

// What step i (0-based) of query head h computes, the naive way: project the token, score it
// against the keys of tokens 0 … i of its key/value head, softmax over those that are not
// padding, mix their values.
struct NaiveStep {
    std::vector<double> q, scores, weights, context;
};
NaiveStep naive_step(const Grid& x, const Grid& w_q, const Grid& w_k, const Grid& w_v, std::size_t i, int h, int heads,
                     int kv_heads, const std::vector<bool>& pad) {
    const std::size_t d_head = w_q[0].size() / static_cast<std::size_t>(heads);
    const std::size_t d_v = w_v[0].size() / static_cast<std::size_t>(kv_heads);
    const auto g = static_cast<std::size_t>(h / (heads / kv_heads));  // consecutive query heads share
    NaiveStep s;
    s.q = row_times(x[i], w_q, static_cast<std::size_t>(h) * d_head, d_head);
    double top = minus_infinity;
    for (std::size_t j = 0; j <= i; ++j) {
        const std::vector<double> k = row_times(x[j], w_k, g * d_head, d_head);
        double dot = 0;
        for (std::size_t c = 0; c < d_head; ++c) dot += s.q[c] * k[c];
        s.scores.push_back(dot);
        if (!pad[j]) top = std::max(top, dot / std::sqrt(static_cast<double>(d_head)));
    }
    s.weights.assign(i + 1, 0.0);
    s.context.assign(d_v, 0.0);
    if (top == minus_infinity) return s;
    double sum = 0;
    for (std::size_t j = 0; j <= i; ++j)
        if (!pad[j]) sum += s.weights[j] = std::exp(s.scores[j] / std::sqrt(static_cast<double>(d_head)) - top);
    for (double& w : s.weights) w /= sum;
    for (std::size_t j = 0; j <= i; ++j) {
        const std::vector<double> v = row_times(x[j], w_v, g * d_v, d_v);
        for (std::size_t c = 0; c < d_v; ++c) s.context[c] += s.weights[j] * v[c];
    }
    return s;
}

void require_close(const std::vector<double>& got, const std::vector<double>& want, double tolerance) {
    REQUIRE(got.size() == want.size());
    for (std::size_t k = 0; k < got.size(); ++k) CHECK(got[k] == Approx(want[k]).margin(tolerance).epsilon(0));
}

// The largest |a − b| of a row of the trace's stage against a step's numbers, and how many
// entries lie outside `relative` of their size.
struct Measured {
    double largest = 0;
    int outside = 0;
};
void measure(Measured& m, const std::vector<double>& a, const Stage& stage, Eigen::Index row, double relative) {
    for (std::size_t j = 0; j < a.size(); ++j) {
        const double b = stage.data(row, static_cast<Eigen::Index>(j));
        if (std::isinf(a[j]) || std::isinf(b)) {
            if (a[j] != b) ++m.outside;
            continue;
        }
        m.largest = std::max(m.largest, std::fabs(a[j] - b));
        if (std::fabs(a[j] - b) > relative * std::max(1.0, std::fabs(b))) ++m.outside;
    }
}

struct Shape {
    std::size_t n, d_in;
    int heads, kv_heads;
    std::size_t d_head, d_v;
    std::int64_t prefill;
};

// A document for attntrace: tokens, their embeddings and the three projections.
std::string input_json(const std::vector<std::string>& tokens, const Grid& x) {
    json doc;
    doc["tokens"] = tokens;
    json embeddings = json::object();
    for (std::size_t i = 0; i < tokens.size(); ++i) embeddings[tokens[i]] = x[i];
    doc["embeddings"] = embeddings;
    return doc.dump();
}

}  // namespace

TEST_CASE("every decode step matches a naive loop and the row of the full causal trace", "[decode]") {
    const Shape shapes[] = {{5, 3, 1, 1, 3, 3, 1}, {6, 4, 2, 2, 2, 2, 2}, {7, 6, 4, 2, 2, 3, 3},
                            {4, 2, 3, 1, 2, 1, 1}, {8, 5, 2, 1, 3, 2, 5}, {3, 3, 1, 1, 2, 2, 2}};
    Lcg rng{20261201};
    for (const Shape& s : shapes)
        for (const bool padded : {false, true})
            for (const Dtype dtype : {Dtype::float64, Dtype::float32}) {
                INFO("n " << s.n << ", " << s.heads << " heads of " << s.d_head << ", " << s.kv_heads << " kv heads, d_v "
                          << s.d_v << ", prefill " << s.prefill << (padded ? ", padded" : "")
                          << (dtype == Dtype::float32 ? ", float32" : ""));
                const Grid x = rng.grid(s.n, s.d_in);
                const Grid w_q = rng.grid(s.d_in, s.d_head * static_cast<std::size_t>(s.heads));
                const Grid w_k = rng.grid(s.d_in, s.d_head * static_cast<std::size_t>(s.kv_heads));
                const Grid w_v = rng.grid(s.d_in, s.d_v * static_cast<std::size_t>(s.kv_heads));
                Sequence sequence;
                sequence.vectors = matrix_of(x);
                std::vector<bool> pad(s.n, false);
                for (std::size_t i = 0; i < s.n; ++i) sequence.tokens.push_back(fmt::format("t{}", i + 1));
                if (padded) {  // a padding token inside the sequence, hidden from every later query
                    sequence.tokens[1] = "<pad>";
                    pad[1] = true;
                }
                const Projections w = projections(matrix_of(w_q), matrix_of(w_k), matrix_of(w_v));
                TraceOptions options;
                options.mode = Mode::causal;
                options.heads = s.heads;
                options.kv_heads = s.kv_heads;
                options.dtype = dtype;
                const Trace full = trace_single(sequence, &w, options);
                DecodeOptions decode_options;
                decode_options.prefill = s.prefill;
                const Decode d = decode_steps(full, decode_options);
                const double naive_tolerance = dtype == Dtype::float64 ? 1e-12 : 2e-5;
                const double relative = dtype == Dtype::float64 ? 1e-12 : 1e-5;
                REQUIRE(d.steps.size() == s.n - static_cast<std::size_t>(s.prefill));
                CHECK(d.total_steps == static_cast<std::int64_t>(s.n) - s.prefill);
                std::int64_t cached = 0, recomputed = 0;
                for (const DecodeStep& step : d.steps) {
                    const auto i = static_cast<std::size_t>(step.position - 1);
                    INFO("position " << step.position);
                    CHECK(step.position == static_cast<std::int64_t>(i) + 1);
                    CHECK(i >= static_cast<std::size_t>(s.prefill));
                    CHECK(step.token == sequence.tokens[i]);
                    CHECK(step.cache_tokens == step.position);
                    const auto per_token = static_cast<std::int64_t>(static_cast<std::size_t>(s.kv_heads) * (s.d_head + s.d_v));
                    CHECK(step.cache_numbers == step.position * per_token);
                    CHECK(step.cache_bytes == step.position * per_token * (dtype == Dtype::float64 ? 8 : 4));
                    REQUIRE(step.heads.size() == static_cast<std::size_t>(s.heads));
                    Measured against_trace;
                    for (int h = 0; h < s.heads; ++h) {
                        const DecodeHead& got = step.heads[static_cast<std::size_t>(h)];
                        const NaiveStep want = naive_step(x, w_q, w_k, w_v, i, h, s.heads, s.kv_heads, pad);
                        CHECK(got.head == (s.heads > 1 ? h + 1 : 0));
                        require_close(got.q, want.q, naive_tolerance);
                        require_close(got.scores, want.scores, naive_tolerance);
                        require_close(got.weights, want.weights, naive_tolerance);
                        require_close(got.context, want.context, naive_tolerance);
                        for (std::size_t j = 0; j <= i; ++j) CHECK(std::isinf(got.scaled[j]) == pad[j]);
                        // the reported difference, measured again here
                        const int id = s.heads > 1 ? h + 1 : 0;
                        measure(against_trace, got.q, full.at(StageId::queries, id), static_cast<Eigen::Index>(i), relative);
                        measure(against_trace, got.scores, full.at(StageId::scores, id), static_cast<Eigen::Index>(i), relative);
                        measure(against_trace, got.scaled, full.at(StageId::masked, id), static_cast<Eigen::Index>(i), relative);
                        measure(against_trace, got.weights, full.at(StageId::weights, id), static_cast<Eigen::Index>(i), relative);
                        measure(against_trace, got.context, full.at(StageId::context, id), static_cast<Eigen::Index>(i), relative);
                    }
                    CHECK(against_trace.outside == 0);
                    CHECK(step.matches_full_trace);
                    CHECK(step.max_difference >= against_trace.largest);  // it also covers k and v
                    CHECK(step.max_difference <= (dtype == Dtype::float64 ? 1e-12 : 1e-5));
                    cached += step.position;
                    recomputed += step.position * step.position;
                }
                CHECK(d.dots_cached == cached * s.heads);
                CHECK(d.dots_recomputed == recomputed * s.heads);
                // The cache after the last step: every token's key of key/value head 1.
                REQUIRE(d.caches.size() == static_cast<std::size_t>(s.kv_heads));
                for (std::size_t j = 0; j < s.n; ++j) {
                    const std::vector<double> k = row_times(x[j], w_k, 0, s.d_head);
                    for (std::size_t c = 0; c < s.d_head; ++c)
                        CHECK(d.caches[0].keys(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(c)) ==
                              Approx(k[c]).margin(naive_tolerance).epsilon(0));
                }
            }
}

TEST_CASE("decode's JSON steps hold the rows of the full causal trace", "[decode]") {
    for (const std::string prefill : {"1", "3"}) {
        INFO("prefill " << prefill);
        const json d = run_json({"decode", "example:your_journey", "--prefill", prefill});
        const json t = run_json({"example:your_journey", "-m", "causal"});
        CHECK(d["schema"] == "attntrace.decode/1");
        CHECK(d["mode"] == "causal");
        const auto weights = trace_json::stage_rows(t, "weights");
        const auto context = trace_json::stage_rows(t, "context");
        const json& steps = d["steps"];
        REQUIRE(steps.size() == 6 - std::stoul(prefill));
        for (const json& step : steps) {
            const auto i = step["position"].get<std::size_t>() - 1;
            CHECK(step["token"] == t["tokens"][i]);
            CHECK(step["cache_tokens"] == i + 1);
            CHECK(step["matches_full_trace"] == true);
            CHECK(step["max_difference"].get<double>() <= 1e-12);
            REQUIRE(step["weights"].size() == i + 1);
            for (std::size_t j = 0; j <= i; ++j)
                CHECK(step["weights"][j].get<double>() == Approx(weights[i][j]).margin(1e-12).epsilon(0));
            for (std::size_t c = 0; c < context[i].size(); ++c)
                CHECK(step["context"][c].get<double>() == Approx(context[i][c]).margin(1e-12).epsilon(0));
            REQUIRE(step["scores"].size() == i + 1);
        }
    }
}

TEST_CASE("decode follows the trace's scale and temperature and dtype and padding", "[decode]") {
    const std::vector<std::vector<std::string>> variants{{"--temperature", "0.5"}, {"--scale", "none"}, {"--scale", "4"},
                                                         {"--dtype", "float32"}, {"--seed", "9", "--dim", "5"},
                                                         {"example:journey_padded"}};
    for (const auto& variant : variants) {
        INFO(fmt::format("{}", fmt::join(variant, " ")));
        std::vector<std::string> decode_args{"decode"}, trace_args{"-m", "causal"};
        if (variant.front().rfind("example:", 0) != 0) decode_args.push_back("example:your_journey");
        decode_args.insert(decode_args.end(), variant.begin(), variant.end());
        trace_args.insert(trace_args.end(), variant.begin(), variant.end());
        const json d = run_json(decode_args);
        const json t = run_json(trace_args);
        const bool float32 = variant.front() == "--dtype";
        const double tolerance = float32 ? 1e-6 : 1e-12;
        CHECK(d["tolerance"] == (float32 ? 1e-5 : 1e-12));
        CHECK(d["all_match"] == true);
        const auto masked = trace_json::stage_rows(t, "masked");
        const auto weights = trace_json::stage_rows(t, "weights");
        const auto context = trace_json::stage_rows(t, "context");
        for (const json& step : d["steps"]) {
            const auto i = step["position"].get<std::size_t>() - 1;
            CHECK(step["matches_full_trace"] == true);
            for (std::size_t j = 0; j <= i; ++j) {
                const double scaled = step["scaled"][j].is_null() ? -INFINITY : step["scaled"][j].get<double>();
                if (std::isinf(masked[i][j])) CHECK(scaled == masked[i][j]);  // padding, hidden in both
                else CHECK(scaled == Approx(masked[i][j]).margin(tolerance).epsilon(0));
                CHECK(step["weights"][j].get<double>() == Approx(weights[i][j]).margin(tolerance).epsilon(0));
            }
            for (std::size_t c = 0; c < context[i].size(); ++c)
                CHECK(step["context"][c].get<double>() == Approx(context[i][c]).margin(tolerance).epsilon(0));
        }
    }
}

TEST_CASE("decode --step shows one step and the summary still counts every step", "[decode]") {
    const json d = run_json({"decode", "example:your_journey", "--step", "4"});
    REQUIRE(d["steps"].size() == 1);
    CHECK(d["steps"][0]["position"] == 4);
    CHECK(d["steps"][0]["token"] == "with");
    // six tokens after a prefill of one: steps at 2 … 6; with the cache 2+3+4+5+6 = 20 dot
    // products, recomputing 4+9+16+25+36 = 90
    CHECK(d["dot_products"]["cached"] == 20);
    CHECK(d["dot_products"]["recomputed"] == 90);
    const auto r = cli::run({"decode", "example:your_journey", "--step", "4"}, "", {{"NO_COLOR", "1"}, {"COLUMNS", ""}});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("step 4 (of steps 2–6) · \"with\" · the cache now holds 4 tokens"));
    CHECK_THAT(r.out, Contains("dot products of the query with keys: 4 with the cache, against 16 recomputing"));
    CHECK_THAT(r.out, Contains("20 with the cache (i at step i) against 90 recomputing"));
    CHECK_THAT(r.out, Contains("4.5 times as many"));
    CHECK(r.out.find("position 5") == std::string::npos);
}

TEST_CASE("the KV cache bytes follow 2 · layers · H_kv · d_head · bytes · tokens", "[decode]") {
    // --dim 8 --heads 4: d_head = 8 / 4 = 2 = d_v. Per token 2·H_kv·2 numbers: multi-head
    // (H_kv 4) 16, grouped (2) 8, multi-query (1) 4; ×8 bytes in float64, ×4 in float32.
    struct Case {
        std::string dtype;
        std::int64_t bytes;
    };
    for (const Case& c : {Case{"float64", 8}, Case{"float32", 4}}) {
        INFO(c.dtype);
        const json d = run_json({"decode", "example:your_journey", "--dim", "8", "--heads", "4", "--kv-heads", "2",
                                 "--context", "1000", "--dtype", c.dtype});
        const json& kv = d["kv_cache"];
        CHECK(kv["context_tokens"] == 1000);
        CHECK(kv["bytes_per_number"] == c.bytes);
        const json& layouts = kv["layouts"];
        REQUIRE(layouts.size() == 3);
        const std::int64_t numbers[] = {16, 8, 4};
        const std::string names[] = {"multi-head", "grouped-query", "multi-query"};
        for (std::size_t k = 0; k < 3; ++k) {
            CHECK(layouts[k]["layout"] == names[k]);
            CHECK(layouts[k]["numbers_per_token"] == numbers[k]);
            CHECK(layouts[k]["bytes_per_token"] == numbers[k] * c.bytes);
            CHECK(layouts[k]["bytes"] == numbers[k] * c.bytes * 1000);
            CHECK(layouts[k]["this_run"] == (k == 1));
        }
        // the cache of step 6: 6 tokens × 2 key/value heads × (2 + 2)
        CHECK(d["steps"].back()["cache_numbers"] == 48);
        CHECK(d["steps"].back()["cache_bytes"] == 48 * c.bytes);
    }
    CHECK(kv_cache_bytes(8, 128, 128, 2, 4096) == std::int64_t{2} * 8 * 128 * 2 * 4096);
    CHECK(kv_cache_bytes(8, 128, 128, 2, 4096, 32) == std::int64_t{32} * 2 * 8 * 128 * 2 * 4096);
    const auto r = cli::run({"decode", "example:your_journey", "--dim", "8", "--heads", "4", "--kv-heads", "2", "--context",
                             "1000"},
                            "", {{"NO_COLOR", "1"}, {"COLUMNS", ""}});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("multi-head     H_kv = 4: 16 numbers, 128 bytes per token; 128,000 bytes for 1,000 tokens"));
    CHECK_THAT(r.out, Contains("grouped-query  H_kv = 2: 8 numbers, 64 bytes per token; 64,000 bytes for 1,000 tokens  ← this run"));
    CHECK_THAT(r.out, Contains("multi-query    H_kv = 1: 4 numbers, 32 bytes per token; 32,000 bytes for 1,000 tokens"));
}

TEST_CASE("decode in every format and with --explain", "[decode]") {
    const auto md = cli::run({"decode", "example:your_journey", "-f", "markdown", "--step", "2"});
    REQUIRE(md.exit_code == 0);
    CHECK_THAT(md.out, Contains("# step 2 (of steps 2–6) · \"journey\""));
    const auto csv = cli::run({"decode", "example:your_journey", "-f", "csv", "--step", "2"});
    REQUIRE(csv.exit_code == 0);
    CHECK(csv.out.rfind("position,token,head,kv_head,key_position,key,score,scaled,weight\n", 0) == 0);
    // step 2 reads a cache of 2 keys: two rows, then its context row
    const json d = run_json({"decode", "example:your_journey", "--step", "2"});
    const std::string w0 = fmt::format("{:.4f}", d["steps"][0]["weights"][0].get<double>());
    CHECK_THAT(csv.out, Contains("2,journey,0,0,1,Your,"));
    CHECK_THAT(csv.out, Contains("," + w0 + "\n2,journey,0,0,2,journey,"));
    CHECK_THAT(csv.out, Contains("\nposition,token,head,z1,z2,z3\n2,journey,0,"));
    CHECK_THAT(csv.out, Contains("\nlayout,kv_heads,numbers_per_token,bytes_per_token,tokens,bytes\none head,1,6,48,6,288\n"));
    const auto explained = cli::run({"decode", "example:your_journey", "--explain", "--step", "2", "--width", "0"});
    REQUIRE(explained.exit_code == 0);
    CHECK_THAT(explained.out, Contains("why the query is not cached"));
    CHECK_THAT(explained.out, Contains("why the keys and values are"));
    CHECK_THAT(explained.out, Contains("why only causal attention"));
    const json e = run_json({"decode", "example:your_journey", "--explain"});
    CHECK(e["explanation"].size() == 3);
}

TEST_CASE("decode refuses what a KV cache does not trace", "[decode]") {
    struct Refusal {
        std::vector<std::string> args;
        int code;
        std::string message;
    };
    const Refusal refusals[] = {
        {{"decode", "example:your_journey", "-m", "self"}, 2, "decode traces causal attention only (--mode self)"},
        {{"decode", "example:your_journey", "-m", "plain"}, 2, "decode traces causal attention only (--mode plain)"},
        {{"decode", "example:your_journey", "--window", "2"}, 2, "--window"},
        {{"decode", "example:your_journey", "--normalize", "sum"}, 2, "--normalize sum"},
        {{"decode", "example:your_journey", "--mask-fill", "-1e9"}, 2, "--mask-fill"},
        {{"decode", "example:your_journey", "--prefill", "6"}, 2, "--prefill 6: the prefill takes 1 to 5 of the 6 tokens"},
        {{"decode", "example:your_journey", "--step", "1"}, 2, "--step 1: the steps are positions 2 to 6"},
        {{"decode", "example:your_journey", "--step", "7"}, 2, "--step 7"},
        {{"decode", "example:your_journey", "--prefill", "0"}, 2, "--prefill"},
        // A source and a target: decode's own words, not the trace's "use mode bahdanau".
        {{"decode", "example:teacher_smiled_fr"}, 1, "example:teacher_smiled_fr: decode steps through causal attention over "
                                                     "one sentence"},
        {{"decode", "example:black_cat_fr"}, 1, "this input has a source and a target, for bahdanau mode, whose decoder "
                                                "steps score encoder states that are all there before the first step: "
                                                "trace it without decode, where each row of the weights is one decoder step"},
        {{"decode", "example:black_cat_fr", "-m", "causal"}, 1, "decode steps through causal attention over one sentence"},
        {{"decode", "-m", "bahdanau"}, 2, "decode traces causal attention only (--mode bahdanau): its KV cache grows by one "
                                          "token's key and value at each step; in bahdanau mode the decoder steps score the "
                                          "encoder states, which are all there before the first step"},
        {{"decode", "--score", "dot"}, 2, "--score dot chooses the score of bahdanau mode, which decode does not trace"},
        {{"decode", "--score", "general"}, 2, "--score general chooses the score of bahdanau mode"},
        // The option --positions is a usage error; the same request in the input file is a data error.
        {{"decode", "example:your_journey", "--positions", "rope", "--dim", "4"}, 2, "without position information for now"},
        {{"decode", "--position-offset", "2"}, 2, "so there are no positions for --position-offset to move"},
        {{"decode", ATTNTRACE_SOURCE_DIR "/tests/fuzz/corpus/positions_rope.json"}, 1, "the input asks for rope positions"},
    };
    for (const Refusal& r : refusals) {
        INFO(fmt::format("{}", fmt::join(r.args, " ")));
        const auto result = cli::run(r.args);
        INFO(result.err);
        CHECK(result.exit_code == r.code);
        CHECK(result.out.empty());
        CHECK(result.err.rfind("attntrace: error: ", 0) == 0);
        CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
        CHECK_THAT(result.err, Contains(r.message));
        // decode takes none of these: no message may send the learner to them.
        CHECK_THAT(result.err, !Contains("use mode") && !Contains("--positions sinusoidal") && !Contains("mode bahdanau only"));
    }
}

TEST_CASE("decode's help and man page offer only the options decode takes", "[decode][cli]") {
    const std::vector<std::string> refused{"--mode", "--normalize", "--score", "--window", "--mask-fill",
                                           "--mask-after-softmax", "--positions", "--position-offset"};
    const auto help = cli::run({"decode", "--help"});
    REQUIRE(help.exit_code == 0);
    CHECK_THAT(help.out, Contains("--prefill") && Contains("--heads") && Contains("--temperature"));
    const auto man = cli::run({"--man"});
    REQUIRE(man.exit_code == 0);
    const std::size_t from = man.out.find(".SS \"decode\"");
    REQUIRE(from != std::string::npos);
    const std::string section = man.out.substr(from, man.out.find(".SS ", from + 1) - from);
    CHECK_THAT(section, Contains("prefill"));
    for (const std::string& option : refused) {
        INFO(option);
        CHECK_THAT(help.out, !Contains(option + " "));
        CHECK_THAT(section, !Contains("\\-\\-" + option.substr(2) + "\\fR"));
    }
    // Still taken, to be refused with the reason, and named in a bad value's message.
    cli::require_error_line(cli::run({"decode", "--window", "x"}), 2, "--window: expected a whole number");
    cli::require_error_line(cli::run({"decode", "--mode", "casual"}), 2, "(did you mean causal?)");
}

TEST_CASE("decode refuses positions in the input file as a data error and the option --positions as a usage error", "[decode]") {
    for (const char* scheme : {"rope", "sinusoidal"}) {
        INFO(scheme);
        const cli::TempFile file(fmt::format(R"({{"sentence": "a b c", "embeddings": {{"a": [1, 0, 0, 0], "b": [0, 1, 0, 0],
          "c": [0, 0, 1, 0]}}, "positions": "{}"}})", scheme));
        const auto from_file = cli::run({"decode", file.path()});
        cli::require_error_line(from_file, 1, fmt::format("{}: the input asks for {} positions, and decode steps through the "
                                                          "cache without position information for now; add --positions "
                                                          "none, or trace it without decode",
                                                          file.path(), scheme));
        // The flag on an input without positions.
        const cli::TempFile bare(R"({"sentence": "a b c", "embeddings": {"a": [1, 0, 0, 0], "b": [0, 1, 0, 0], "c": [0, 0, 1, 0]}})");
        cli::require_error_line(cli::run({"decode", bare.path(), "--positions", scheme}), 2,
                                "decode steps through the cache without position information for now; the trace shows "
                                "--positions (docs/positions.md)");
        // --positions none overrides the file, as the message says, and decodes.
        CHECK(cli::run({"decode", file.path(), "--positions", "none"}).exit_code == 0);
    }
}

TEST_CASE("decode refuses an input of one token as a data error", "[decode]") {
    const cli::TempFile file(R"({"tokens": ["alone"], "embeddings": {"alone": [1, 2]}})");
    const auto r = cli::run({"decode", file.path()});
    CHECK(r.exit_code == 1);
    CHECK(r.out.empty());
    CHECK(r.err == "attntrace: error: " + file.path() + ": decode needs at least 2 tokens, a prefill and one step; this "
                   "input has 1\n");
}

TEST_CASE("a padding key's scaled score and weight read as hidden in the decode table", "[decode]") {
    const auto r = cli::run({"decode", "example:journey_padded", "--step", "8", "--width", "0"});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("\nscaled  0.0000   0.0000  0.0000  0.0000  0.0000  0.0000    -inf    -inf\n"));
    CHECK_THAT(r.out, Contains("\nweight  0.1667   0.1667  0.1667  0.1667  0.1667  0.1667       0       0\n"));
}

TEST_CASE("an input that names another mode is decoded causally and says so", "[decode]") {
    Lcg rng{7};
    json doc = json::parse(input_json({"a", "b", "c"}, rng.grid(3, 2)));
    doc["mode"] = "self";
    const cli::TempFile file(doc.dump());
    const json d = run_json({"decode", file.path()});
    CHECK(d["mode"] == "causal");
    REQUIRE(!d["notes"].empty());
    CHECK(d["notes"][0] == "the input's mode self is not used: decode runs causal attention");
}

TEST_CASE("decode with no INPUT reads what is piped in, as trace does, and an empty pipe is the built-in example, said",
          "[decode][destination]") {
    // The pipe's input (teacher_smiled, 12 tokens) is decoded, not the built-in example (6 tokens).
    const std::string piped = cli::read_file(cli::data_file("teacher_smiled.json"));
    const auto from_pipe = cli::run({"decode", "--step", "2", "-f", "json"}, piped);
    REQUIRE(from_pipe.exit_code == 0);
    const json doc = json::parse(from_pipe.out);
    CHECK(doc["input"] == "<stdin>");
    CHECK(doc["tokens"].size() == 12);
    CHECK(from_pipe.out == cli::run({"decode", "--step", "2", "-f", "json", "-"}, piped).out);
    // Nothing piped (/dev/null): the built-in example, and no note.
    const auto example = cli::run({"decode", "--step", "2"});
    CHECK(example.exit_code == 0);
    CHECK_THAT(example.out, Contains("example:your_journey"));
    CHECK(example.err.find("standard input is empty") == std::string::npos);
    // A notebook kernel's empty pipe: the same output, and the note on stderr after it.
    const auto empty = cli::run({"decode", "--step", "2"}, "\n");
    CHECK(empty.exit_code == 0);
    CHECK(empty.out == example.out);
    CHECK_THAT(empty.err, Contains("attntrace: note: standard input is empty, so this is the built-in example "
                                   "your_journey (name an INPUT, or pipe one in, to decode your own)\n"));
    // A refusal on an empty pipe is its one error line, without the note.
    cli::require_error_line(cli::run({"decode", "--step", "9"}, "\n"), 2, "--step");
}
