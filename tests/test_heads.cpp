// Multi-head and grouped-query attention against a second implementation written here in
// plain loops (no Eigen products): every stage of every head, the concatenation, the output
// and each head's contribution, for several shapes, head counts and key/value head counts,
// causal and not.
#include "attention/single.hpp"
#include "attention/trace.hpp"
#include "support/cli.hpp"
#include "support/error_line.hpp"
#include "support/trace_json.hpp"
#include "support/naive.hpp"

#include "support/catch.hpp"
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

using namespace attntrace;
using Catch::Contains;
using trace_json::run_json;
using nlohmann::json;

namespace {

using namespace naive;  // Grid, Lcg and the loop products (support/naive.hpp)


// What one head computes, the naive way.
struct NaiveHead {
    Grid q, k, v, scores, scaled, masked, weights, context;
};
struct NaiveLayer {
    std::vector<NaiveHead> heads;
    Grid concat, output;
    std::vector<Grid> contributions;
};

NaiveLayer naive_layer(const Grid& x, const Grid& w_q, const Grid& w_k, const Grid& w_v, const Grid& w_o, int heads,
                 int kv_heads, bool causal) {
    const std::size_t n = x.size();
    const std::size_t d_head = w_q[0].size() / static_cast<std::size_t>(heads);
    const std::size_t d_v = w_v[0].size() / static_cast<std::size_t>(kv_heads);
    const Grid q = times(x, w_q), k = times(x, w_k), v = times(x, w_v);
    NaiveLayer out;
    out.concat.assign(n, {});
    for (int h = 0; h < heads; ++h) {
        const auto g = static_cast<std::size_t>(h / (heads / kv_heads));  // consecutive heads share
        NaiveHead head;
        head.q = columns(q, static_cast<std::size_t>(h) * d_head, d_head);
        head.k = columns(k, g * d_head, d_head);
        head.v = columns(v, g * d_v, d_v);
        head.scores.assign(n, std::vector<double>(n));
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < n; ++j)
                for (std::size_t c = 0; c < d_head; ++c) head.scores[i][j] += head.q[i][c] * head.k[j][c];
        head.scaled = head.scores;
        for (auto& row : head.scaled)
            for (double& s : row) s /= std::sqrt(static_cast<double>(d_head));
        head.masked = head.scaled;
        if (causal)
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t j = i + 1; j < n; ++j) head.masked[i][j] = -std::numeric_limits<double>::infinity();
        head.weights = head.masked;
        for (auto& row : head.weights) {
            double top = -std::numeric_limits<double>::infinity(), sum = 0;
            for (const double s : row) top = std::max(top, s);
            for (double& s : row) sum += s = std::exp(s - top);
            for (double& s : row) s /= sum;
        }
        head.context = times(head.weights, head.v);
        for (std::size_t i = 0; i < n; ++i) out.concat[i].insert(out.concat[i].end(), head.context[i].begin(), head.context[i].end());
        out.contributions.push_back(times(head.context, rows_of(w_o, static_cast<std::size_t>(h) * d_v, d_v)));
        out.heads.push_back(std::move(head));
    }
    out.output = times(out.concat, w_o);
    return out;
}

void require_stage(const Trace& t, StageId id, int head, const Grid& expected, double tolerance) {
    INFO(to_string(id) << " of head " << head);
    const Stage* stage = t.find(id, head);
    REQUIRE(stage != nullptr);
    CHECK(stage->head == head);
    REQUIRE(stage->row_count() == static_cast<Eigen::Index>(expected.size()));
    REQUIRE(stage->col_count() == static_cast<Eigen::Index>(expected[0].size()));
    for (std::size_t i = 0; i < expected.size(); ++i)
        for (std::size_t j = 0; j < expected[0].size(); ++j) {
            const double want = expected[i][j], got = stage->data(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j));
            if (std::isinf(want)) CHECK(got == want);
            else CHECK(got == Approx(want).margin(tolerance).epsilon(0));
        }
}

struct Shape {
    std::size_t n, d_in;
    int heads, kv_heads;
    std::size_t d_head, d_v, d_out;
};

}  // namespace

TEST_CASE("every stage of every head matches a naive multi-head implementation", "[heads]") {
    const Shape shapes[] = {{5, 3, 2, 2, 2, 2, 4}, {6, 4, 4, 2, 1, 2, 3}, {7, 6, 3, 1, 2, 3, 5}, {4, 2, 4, 4, 3, 1, 2},
                            {8, 5, 6, 3, 2, 2, 6}, {3, 3, 2, 1, 4, 2, 3}};
    Lcg rng{20261130};
    for (const Shape& s : shapes)
        for (const bool causal : {false, true})
            for (const Dtype dtype : {Dtype::float64, Dtype::float32}) {
                INFO("n " << s.n << ", d_in " << s.d_in << ", " << s.heads << " heads of " << s.d_head << ", " << s.kv_heads
                          << " kv heads, d_v " << s.d_v << ", d_out " << s.d_out << (causal ? ", causal" : "")
                          << (dtype == Dtype::float32 ? ", float32" : ""));
                const Grid x = rng.grid(s.n, s.d_in);
                const Grid w_q = rng.grid(s.d_in, s.d_head * static_cast<std::size_t>(s.heads));
                const Grid w_k = rng.grid(s.d_in, s.d_head * static_cast<std::size_t>(s.kv_heads));
                const Grid w_v = rng.grid(s.d_in, s.d_v * static_cast<std::size_t>(s.kv_heads));
                const Grid w_o = rng.grid(s.d_v * static_cast<std::size_t>(s.heads), s.d_out);
                Sequence sequence;
                sequence.vectors = matrix_of(x);
                for (std::size_t i = 0; i < s.n; ++i) sequence.tokens.push_back(fmt::format("t{}", i + 1));
                const Projections w = projections(matrix_of(w_q), matrix_of(w_k), matrix_of(w_v), matrix_of(w_o));
                TraceOptions options;
                options.mode = causal ? Mode::causal : Mode::self;
                options.heads = s.heads;
                options.kv_heads = s.kv_heads;
                options.dtype = dtype;
                const Trace t = trace_single(sequence, &w, options);
                const NaiveLayer want = naive_layer(x, w_q, w_k, w_v, w_o, s.heads, s.kv_heads, causal);
                const double tolerance = dtype == Dtype::float64 ? 1e-12 : 2e-5;
                const int head_of_one = s.heads > 1 ? 1 : 0;  // one head: no head number
                CHECK(t.heads == s.heads);
                CHECK(t.kv_heads == s.kv_heads);
                for (int h = 0; h < s.heads; ++h) {
                    const NaiveHead& head = want.heads[static_cast<std::size_t>(h)];
                    const int number = s.heads > 1 ? h + 1 : head_of_one;
                    require_stage(t, StageId::queries, number, head.q, tolerance);
                    require_stage(t, StageId::keys, number, head.k, tolerance);
                    require_stage(t, StageId::values, number, head.v, tolerance);
                    require_stage(t, StageId::scores, number, head.scores, tolerance);
                    require_stage(t, StageId::scaled, number, head.scaled, tolerance);
                    require_stage(t, StageId::masked, number, head.masked, tolerance);
                    require_stage(t, StageId::weights, number, head.weights, tolerance);
                    require_stage(t, StageId::context, number, head.context, tolerance);
                    if (s.kv_heads < s.heads)  // consecutive query heads share a key/value head
                        CHECK(t.find(StageId::keys, number)->kv_head == h / (s.heads / s.kv_heads) + 1);
                }
                if (s.heads > 1) {
                    require_stage(t, StageId::concat, 0, want.concat, tolerance);
                    for (int h = 0; h < s.heads; ++h)
                        require_stage(t, StageId::head_contributions, h + 1, want.contributions[static_cast<std::size_t>(h)],
                                      tolerance);
                }
                require_stage(t, StageId::output, 0, want.output, tolerance);
            }
}

TEST_CASE("the heads' contributions add up to the output", "[heads]") {
    for (const int heads : {2, 3, 6}) {
        INFO(heads << " heads");
        const auto t = run_json({"-m", "causal", "--dim", "6", "--heads", std::to_string(heads)});
        const auto output = trace_json::stage_rows(t, "output");
        std::vector<trace_json::Rows> parts;
        for (const auto& stage : t["stages"])
            if (stage["name"] == "head_contributions") parts.push_back(trace_json::rows_of(stage["data"]));
        REQUIRE(parts.size() == static_cast<std::size_t>(heads));
        for (std::size_t i = 0; i < output.size(); ++i)
            for (std::size_t k = 0; k < output[i].size(); ++k) {
                double sum = 0;
                for (const auto& part : parts) sum += part[i][k];
                CHECK(sum == Approx(output[i][k]).margin(1e-12));
            }
        // and the check says so
        CHECK_THAT(cli::run({"-m", "causal", "--dim", "6", "--heads", std::to_string(heads), "--check"}).out,
                   Contains("ok       the heads' contributions add up to the output"));
    }
}

TEST_CASE("several heads in JSON: dims, the head of each stage, W_o among the parameters", "[heads]") {
    const auto t = run_json({"-m", "self", "--dim", "4", "--heads", "2", "--kv-heads", "1"});
    CHECK(t["dims"] == nlohmann::json::parse(R"({"d_in": 3, "d_model": 4, "heads": 2, "d_head": 2, "kv_heads": 1, "d_v": 2,
                                                "d_out": 4})"));
    std::vector<std::string> order;
    for (const auto& stage : t["stages"])
        order.push_back(std::string(stage["name"]) + (stage.contains("head") ? std::to_string(stage["head"].get<int>()) : ""));
    const std::vector<std::string> expected{"inputs", "queries1", "keys1", "values1", "scores1", "scaled1", "masked1",
                                            "weights1", "context1", "queries2", "keys2", "values2", "scores2", "scaled2",
                                            "masked2", "weights2", "context2", "concat", "output",
                                            "head_contributions1", "head_contributions2"};
    CHECK(order == expected);
    for (const auto& stage : t["stages"])
        if (stage["name"] == "keys") CHECK(stage["kv_head"] == 1);
    CHECK(t["parameters"]["W_k"][0].size() == 2);  // one key/value head of 2
    CHECK(t["parameters"]["W_o"].size() == 4);
    // The parameters make the heads: head 2's queries are columns 3–4 of X·W_q.
    const auto x = trace_json::stage_rows(t, "inputs");
    const auto w_q = trace_json::rows_of(t["parameters"]["W_q"]);
    for (const auto& stage : t["stages"])
        if (stage["name"] == "queries" && stage["head"] == 2) {
            const auto q = trace_json::rows_of(stage["data"]);
            for (std::size_t i = 0; i < x.size(); ++i)
                for (std::size_t c = 0; c < 2; ++c) {
                    double sum = 0;
                    for (std::size_t k = 0; k < 3; ++k) sum += x[i][k] * w_q[k][2 + c];
                    CHECK(q[i][c] == Approx(sum).margin(1e-12));
                }
        }
}

TEST_CASE("one head can be shown alone, and the worked example goes through it and then through W_o", "[heads]") {
    const auto r = cli::run({"-m", "self", "--dim", "4", "--heads", "2", "--head", "2"});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("queries · head 2 · 6×2 · Q_2 = X·W_q, columns 3–4"));
    CHECK_THAT(r.out, !Contains("head 1 ·"));
    CHECK_THAT(r.out, Contains("concat · 6×4") && Contains("output · 6×4"));
    const auto t = run_json({"-m", "self", "--dim", "4", "--heads", "2", "-q", "journey", "--head", "2"});
    const auto& w = t["worked"];
    // q_journey of head 2 from columns 3 and 4 of W_q (0-based 2 and 3)
    REQUIRE(w["projections"].size() == 1);
    CHECK(w["projections"][0]["matrix"] == "W_q");
    const auto w_q = trace_json::rows_of(t["parameters"]["W_q"]);
    CHECK(w["projections"][0]["columns"][0] == nlohmann::json({w_q[0][2], w_q[1][2], w_q[2][2]}));
    // The output row: the concatenation times W_o, entry by entry.
    const auto concat = trace_json::stage_rows(t, "concat")[1];
    const auto w_o = trace_json::rows_of(t["parameters"]["W_o"]);
    const auto output = trace_json::stage_rows(t, "output")[1];
    for (std::size_t c = 0; c < 4; ++c) {
        double sum = 0;
        for (std::size_t k = 0; k < 4; ++k) sum += concat[k] * w_o[k][c];
        CHECK(output[c] == Approx(sum).margin(1e-12));
    }
    const auto text = cli::run({"-m", "self", "--dim", "4", "--heads", "2", "-q", "journey", "--head", "2", "-s", "output"});
    CHECK_THAT(text.out, Contains("worked example · query \"journey\" (row 2) · self mode · head 2"));
    CHECK_THAT(text.out, Contains("entry k of q_journey is x_journey times column 2 + k of W_q (this head's columns):"));
    CHECK_THAT(text.out, Contains("output_journey = concat_journey·W_o = ["));
    CHECK_THAT(text.out, Contains("scaling: each score ÷ √d_head = ÷ √2 = ÷ 1.4142\n"));  // a head's d_head = 4 / 2
}

TEST_CASE("a summary with --head shows that head's lines alone in every format", "[heads][summary]") {
    const std::vector<std::string> run{"-m", "self", "--dim", "4", "--heads", "2", "--summary", "--head", "2"};
    const auto with = [&](std::vector<std::string> extra) {
        std::vector<std::string> args = run;
        args.insert(args.end(), extra.begin(), extra.end());
        return cli::run(args);
    };
    // Head 2's weights from the full trace; each query's largest weight and entropy worked out here.
    const auto trace = run_json({"-m", "self", "--dim", "4", "--heads", "2", "-s", "weights"});
    const json* weights = nullptr;
    for (const auto& stage : trace["stages"])
        if (stage["name"] == "weights" && stage["head"] == 2) weights = &stage["data"];
    REQUIRE(weights != nullptr);
    const json summary = json::parse(with({"-f", "json"}).out);
    REQUIRE(summary["heads"].size() == 1);
    CHECK(summary["heads"][0]["head"] == 2);
    const auto& queries = summary["heads"][0]["queries"];
    REQUIRE(queries.size() == weights->size());
    for (std::size_t i = 0; i < queries.size(); ++i) {
        double largest = 0, entropy = 0;
        for (const auto& a : (*weights)[i]) {
            largest = std::max(largest, a.get<double>());
            entropy -= a.get<double>() * std::log(a.get<double>());
        }
        CHECK(queries[i]["max_weight"].get<double>() == Approx(largest).margin(1e-12));
        CHECK(queries[i]["entropy"].get<double>() == Approx(entropy).margin(1e-12));
    }
    const auto table = with({});
    CHECK_THAT(table.out, Contains("head 2 of 2") && !Contains("head 1 of 2"));
    CHECK_THAT(with({"-f", "markdown"}).out, Contains("## head 2 of 2") && !Contains("head 1 of 2"));
    const std::string csv = with({"-f", "csv"}).out;
    CHECK_THAT(csv, Contains("\n2,0,Your,") && !Contains("\n1,0,Your,"));
    const std::string lines = with({"-f", "jsonl"}).out;
    std::istringstream in(lines);
    std::size_t count = 0;
    for (std::string line; std::getline(in, line); ++count) {
        REQUIRE(count < queries.size());  // a line per query, no more
        const json l = json::parse(line);
        REQUIRE(l["heads"].size() == 1);
        CHECK(l["heads"][0]["head"] == 2);
        CHECK(l["heads"][0]["max_weight"].get<double>() == queries[count]["max_weight"].get<double>());
    }
    CHECK(count == queries.size());
    // A head the run does not have is refused, as the full trace refuses it.
    cli::require_error_line(cli::run({"-m", "self", "--dim", "4", "--heads", "2", "--summary", "--head", "3"}), 2,
                            "--head 3: this run has 2 heads");
    cli::require_error_line(cli::run({"--summary", "--head", "2"}), 2,
                            "--head 2: this run has 1 head (--heads H splits the projections into H)");
}

TEST_CASE("head counts that do not fit are refused, saying what would", "[heads][errors]") {
    const auto usage = [](std::vector<std::string> args, const std::string& message) {
        const auto r = cli::run(args);
        INFO(r.err);
        CHECK(r.exit_code == 2);
        CHECK(r.out.empty());
        CHECK_THAT(r.err, Contains(message));
    };
    usage({"-m", "self", "--heads", "2"}, "2 heads do not divide d_model = 3 (d_in, the size of the embeddings): choose "
                                          "--heads from 1 or 3, or --dim a multiple of 2");
    usage({"-m", "self", "--dim", "8", "--heads", "4", "--kv-heads", "3"},
          "--kv-heads 3 does not divide the 4 heads: each key/value head serves an equal group of query heads (choose 1, 2 or 4)");
    usage({"-m", "plain", "--heads", "3"}, "--heads and --kv-heads apply to modes self and causal");
    usage({"-m", "self", "--heads", "3", "--head", "4"}, "--head 4: this run has 3 heads");
    usage({"-m", "self", "--heads", "3", "-q", "1", "--head", "5"}, "--head 5: the heads are numbered 1 to 3");
    usage({"example:teacher_smiled_fr", "--heads", "2"}, "--heads and --kv-heads apply to modes self and causal");
    // From the input: data errors at the field.
    const cli::TempFile file(R"({"heads": 2, "tokens": ["a", "b"], "embeddings": [[1, 0, 0], [0, 1, 0]],
        "weights": {"query": [[1, 0, 0], [0, 1, 0], [0, 0, 1]], "key": [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
                    "value": [[1, 0, 0], [0, 1, 0], [0, 0, 1]]}})");
    const auto r = cli::run({file.path(), "-m", "self"});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Contains("/weights/query has 3 columns (d_model), which do not split into 2 heads of equal size"));
    // plain mode reads such a file and says the heads are not used
    CHECK_THAT(cli::run({file.path()}).out, Contains("note: the input's 2 heads are not used: plain mode has no projections"));
}

TEST_CASE("grouped-query attention says which heads share and the keys and values kept per token", "[heads]") {
    // --dim 8 with 4 heads: d_head = d_v = 2. A token's keys and values take 2 + 2 numbers per
    // key/value head: 2 heads keep 8, 1 keeps 4, one per query head would keep 4·4 = 16.
    const auto notes_of = [](const std::vector<std::string>& args) {
        std::vector<std::string> notes;
        const json t = run_json(args);  // kept: a range over a temporary's member would dangle
        for (const auto& note : t["notes"]) notes.push_back(note.get<std::string>());
        return notes;
    };
    const auto has = [](const std::vector<std::string>& notes, const std::string& text) {
        return std::find(notes.begin(), notes.end(), text) != notes.end();
    };
    CHECK(has(notes_of({"-m", "self", "--heads", "4", "--kv-heads", "2", "--dim", "8"}),
              "grouped-query attention: 2 key/value heads for 4 query heads, 2 query heads to each; the keys and values "
              "of one token are 8 numbers, against 16 with a key/value head per query head"));
    CHECK(has(notes_of({"-m", "causal", "--heads", "4", "--kv-heads", "1", "--dim", "8", "--summary"}),
              "grouped-query attention: 1 key/value head for 4 query heads, 4 query heads to each; the keys and values "
              "of one token are 4 numbers, against 16 with a key/value head per query head"));
    for (const auto& note : notes_of({"-m", "self", "--heads", "4", "--dim", "8"}))
        CHECK(note.find("grouped-query") == std::string::npos);  // a key/value head per query head: nothing to say
}

TEST_CASE("a grouped-query input can give W_o, one row per number of the heads' contexts", "[heads]") {
    // 2 query heads of 1 number share 1 key/value head: K = X·[1, 0]ᵀ = [1, 0], V = X·[1, 2]ᵀ = [1, 2].
    // Head 1's queries are [1, 0], head 2's [0, 1]; a query of 1 scores [1, 0] (weights
    // [e/(e+1), 1/(e+1)], context 1 + 1/(e+1)) and a query of 0 scores [0, 0] (context 1.5).
    const cli::TempFile file(R"({"heads": 2, "kv_heads": 1, "tokens": ["a", "b"], "embeddings": [[1, 0], [0, 1]],
        "weights": {"query": [[1, 0], [0, 1]], "key": [[1], [0]], "value": [[1], [2]], "output": [[1], [10]]}})");
    const auto t = run_json({file.path(), "-m", "self"});
    const double leaning = 1 + 1 / (std::exp(1.0) + 1);  // 1.2689…
    const auto output = trace_json::stage_rows(t, "output");
    REQUIRE(output.size() == 2);
    CHECK(output[0][0] == Approx(leaning + 10 * 1.5).margin(1e-12));  // a: head 1 leans, head 2 is even
    CHECK(output[1][0] == Approx(1.5 + 10 * leaning).margin(1e-12));  // b: the other way round
    CHECK(t["parameters"]["W_o"] == nlohmann::json::parse("[[1], [10]]"));
    // W_o must have H·d_v = 2 rows, not the G·d_v = 1 of W_v.
    const cli::TempFile short_o(R"({"heads": 2, "kv_heads": 1, "tokens": ["a", "b"], "embeddings": [[1, 0], [0, 1]],
        "weights": {"query": [[1, 0], [0, 1]], "key": [[1], [0]], "value": [[1], [2]], "output": [[1]]}})");
    const auto r = cli::run({short_o.path(), "-m", "self"});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Contains("/weights/output has 1 row, but the 2 heads' contexts side by side have 2 numbers "
                               "(2 heads × d_v = 2 × 1)"));
}

TEST_CASE("the smaller formats of heads: one column, the key/value head in CSV, the worked output in JSON", "[heads]") {
    // --dim 3 with 3 heads: d_head = 1, so head 2's queries are column 2 of X·W_q.
    const json t = run_json({"-m", "self", "--heads", "3", "--dim", "3", "-s", "queries"});
    bool found = false;
    for (const auto& stage : t["stages"])
        if (stage["name"] == "queries" && stage["head"] == 2) found = stage["formula"] == "Q_2 = X·W_q, column 2";
    CHECK(found);
    // Grouped: query head 3 of 4 reads key/value head ⌈3·2/4⌉ = 2.
    const auto csv = cli::run({"-m", "self", "--heads", "4", "--kv-heads", "2", "--dim", "8", "-s", "keys", "-f", "csv"});
    CHECK_THAT(csv.out, Contains("stage,keys,3,2\n"));
    CHECK_THAT(csv.out, Contains("stage,keys,1,1\n"));
    // The worked example names its head and carries the token's output = concat·W_o, which is
    // recomputed here from the concat stage and W_o with loops.
    const json w = run_json({"-m", "causal", "--heads", "2", "--dim", "4", "-q", "journey", "--head", "2"});
    REQUIRE(w["worked"]["head"] == 2);
    const auto concat = trace_json::stage_rows(w, "concat")[1];
    const auto& w_o = w["parameters"]["W_o"];
    const auto& result = w["worked"]["output"]["result"];
    REQUIRE(result.size() == w_o[0].size());
    for (std::size_t k = 0; k < result.size(); ++k) {
        double sum = 0;
        for (std::size_t i = 0; i < concat.size(); ++i) sum += concat[i] * w_o[i][k].get<double>();
        CHECK(result[k].get<double>() == Approx(sum).margin(1e-12));
    }
    // A row that hides nothing (causal, the last token) has no reason to give.
    const json last = run_json({"-m", "causal", "-q", "step"});
    CHECK(last["worked"]["mask"]["reason"].is_null());
    CHECK(run_json({"-m", "causal", "-q", "Your"})["worked"]["mask"]["reason"] ==
          "they come after it, and a causal model must not see the future");
}

TEST_CASE("check names the product it recomputes: context times W_o with one head", "[heads][check]") {
    const cli::TempFile input(R"({"tokens": ["a", "b"], "embeddings": [[1, 0], [0, 1]],
        "weights": {"query": [[1, 0], [0, 1]], "key": [[1, 0], [0, 1]], "value": [[1, 0], [0, 1]],
                    "output": [[2, 0], [0, 3]]}})");
    const auto one = cli::run({input.path(), "-m", "self", "--check"});
    CHECK(one.exit_code == 0);
    CHECK_THAT(one.out, Contains("ok       output = context · W_o: largest |output − context·W_o| = "));
    const auto two = cli::run({"-m", "self", "--heads", "2", "--dim", "4", "--check"});
    CHECK_THAT(two.out, Contains("ok       output = concat · W_o: largest |output − concat·W_o| = "));
}
