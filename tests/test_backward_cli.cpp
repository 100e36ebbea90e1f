// --backward on the command line: every loss in every mode family, -s's gradients, -q's row,
// --step-size, --check, every format and the refusals. Each expected number comes from the
// test's own forward pass (support/backward_model.hpp: naive loops and finite differences),
// set up from the inputs and parameters the run's JSON shows.
#include "support/backward_model.hpp"
#include "support/cli.hpp"
#include "support/error_line.hpp"
#include "support/trace_json.hpp"

#include "support/catch.hpp"
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using Catch::Contains;
using nlohmann::json;
using namespace backward_model;
using trace_json::run_json;

namespace {

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

// The stage the sum and target losses read: the output when the run has one.
const json& result_of(const json& doc) {
    for (const auto& s : doc["stages"])
        if (s["name"] == "output") return s;
    return forward_stage(doc, "context");
}

// A target file of the result's shape, with numbers of the test's own.
struct Target {
    Grid numbers;
    cli::TempFile file;
    explicit Target(const json& doc) : numbers(make(doc)), file(json{{"target", numbers}}.dump(), "target.json") {}
    static Grid make(const json& doc) {
        const json& result = result_of(doc);
        naive::Lcg rng{7};
        return rng.grid(result["shape"][0], result["shape"][1]);
    }
};

// A token as spelled, or a 1-based position, as -q and focus take them.
std::size_t position_of(const std::vector<std::string>& labels, const std::string& text) {
    if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos) return std::stoul(text) - 1;
    return index_of(labels, text);
}

naive::LossSpec focus_spec(const Model& m, const std::string& query, const std::string& key, int head) {
    naive::LossSpec spec;
    spec.kind = naive::LossSpec::Kind::focus;
    spec.query = position_of(m.queries, query), spec.key = position_of(m.keys, key), spec.head = head;
    return spec;
}

// One run's gradients against the test's differences: every variable's, and the weights'.
void compare_gradients(const json& doc, const Model& m, const naive::LossSpec& spec) {
    CHECK(doc["loss"]["value"].get<double>() == Approx(loss_of(m, m.vars, spec)).epsilon(1e-12));
    for (const auto& [name, values] : m.vars) {
        INFO("the gradient of " << name);
        const std::vector<json> entries = gradient_entries(doc, name);
        REQUIRE(entries.size() == 1);
        CHECK(worst_error(grid_of(entries.front()["data"]), d_var_grid(m, spec, name)) < 1e-6);
    }
    for (const json& e : gradient_entries(doc, "weights")) {
        const int head = e.value("head", 0);
        INFO("the gradient of the weights of head " << head);
        const Grid want = d_stage_grid(m, spec, "weights", head, e["shape"][0], e["shape"][1]);
        CHECK(worst_error(grid_of(e["data"]), want) < 1e-6);
    }
}

// Each of the three losses on the run of `args`; focus on (query, key) of `head`.
void check_losses(const std::vector<std::string>& args, const std::string& query, const std::string& key, int head = 0) {
    INFO(fmt::format("{}", fmt::join(args, " ")));
    const json forward = run_json(args);
    const Model m = model_of(forward);
    const Target target(forward);
    naive::LossSpec sum;
    compare_gradients(run_json(with(args, {"--backward", "sum"})), m, sum);
    naive::LossSpec towards;
    towards.kind = naive::LossSpec::Kind::target;
    towards.target = target.numbers;
    compare_gradients(run_json(with(args, {"--backward", "target:" + target.file.path()})), m, towards);
    compare_gradients(run_json(with(args, {"--backward", fmt::format("focus:{}={}", query, key)})), m,
                      focus_spec(m, query, key, head));
}

}  // namespace

TEST_CASE("the backward pass of every loss in plain and self and causal mode agrees with the test's own differences", "[backward][cli]") {
    check_losses({}, "journey", "starts");
    check_losses({"-m", "self", "--dim", "2"}, "journey", "starts");
    check_losses({"-m", "causal", "--dim", "2"}, "step", "Your");
    check_losses({"example:journey_padded", "-m", "self", "--mask-fill", "-1e9"}, "journey", "starts");
    check_losses({"--normalize", "sum"}, "2", "3");  // positions, as -q takes them
    check_losses({"-m", "causal", "--mask-after-softmax", "--temperature", "0.5", "--dim", "2"}, "one", "journey");
    check_losses({"-m", "causal", "--window", "2", "--scale", "4"}, "with", "starts");
}

TEST_CASE("the backward pass agrees with the test's differences with several heads and grouped keys and positions", "[backward][cli]") {
    check_losses({"-m", "self", "--heads", "2", "--dim", "4"}, "journey", "starts", 1);
    check_losses({"-m", "causal", "--heads", "4", "--kv-heads", "2", "--dim", "8", "--head", "2"}, "step", "Your", 2);
    check_losses({"-m", "self", "--positions", "rope", "--dim", "4"}, "journey", "step");
    check_losses({"-m", "causal", "--positions", "sinusoidal", "--position-offset", "3"}, "step", "journey");
}

TEST_CASE("a key and value head's gradient says which query heads it sums over", "[backward][cli]") {
    // 4 heads over 2 key/value heads: heads 1 and 2 share the first, 3 and 4 the second.
    const std::vector<std::string> grouped{"-m", "causal", "--heads", "4", "--kv-heads", "2", "--dim", "8"};
    const json sum = run_json(with(grouped, {"--backward", "sum", "-s", "d_keys"}));
    const std::vector<json> keys = gradient_entries(sum, "keys");
    REQUIRE(keys.size() == 4);
    CHECK(keys[0]["title"] == "Gradient of the keys (key/value head 1: the sum over the query heads 1, 2 that share it)");
    CHECK(keys[3]["title"] == "Gradient of the keys (key/value head 2: the sum over the query heads 3, 4 that share it)");
    // A focus loss on head 2 reaches that head alone.
    const json focus = run_json(with(grouped, {"--head", "2", "--backward", "focus:step=Your", "-s", "d_keys"}));
    const std::vector<json> one = gradient_entries(focus, "keys");
    REQUIRE(one.size() == 1);
    CHECK(one[0]["title"] == "Gradient of the keys (key/value head 1: from query head 2, the one of its heads the loss reaches)");
}

TEST_CASE("the backward pass agrees with the test's differences for Bahdanau's three scores and a padded source", "[backward][cli][bahdanau]") {
    for (const char* score : {"additive", "dot", "general"})
        check_losses({"example:teacher_smiled_fr", "--score", score}, "souri", "smiled");
    check_losses({"example:padded_cat_fr"}, "noir", "black");
}

TEST_CASE("the backward pass agrees with the test's differences on a GPT-2 layer with ln_1 and biases and W_o", "[backward][cli]") {
    check_losses({cli::data_file("arrays/toy_gpt2.safetensors"), "--from", "gpt2", "--layer", "1"}, "t4", "t2", 1);
}

namespace {

// A .npy file of float64 numbers in C order, written byte by byte as NumPy's format 1.0 lays it out.
std::string npy_of(const Grid& g) {
    std::string header = fmt::format("{{'descr': '<f8', 'fortran_order': False, 'shape': ({}, {}), }}", g.size(), g[0].size());
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string bytes = "\x93NUMPY";
    bytes += '\x01', bytes += '\x00';
    bytes += static_cast<char>(header.size() & 0xff), bytes += static_cast<char>(header.size() >> 8);
    bytes += header;
    for (const auto& row : g)
        for (const double v : row) bytes.append(reinterpret_cast<const char*>(&v), sizeof v);  // little-endian x86-64
    return bytes;
}

}  // namespace

TEST_CASE("a target loss reads its targets from a .npy file as from JSON", "[backward][cli]") {
    const json forward = run_json({});
    const Model m = model_of(forward);
    naive::LossSpec spec;
    spec.kind = naive::LossSpec::Kind::target;
    spec.target = naive::Lcg{11}.grid(6, 3);
    const cli::TempFile npy(npy_of(spec.target), "target.npy");
    const json doc = run_json({"--backward", "target:" + npy.path()});
    CHECK(doc["loss"]["value"].get<double>() == Approx(loss_of(m, m.vars, spec)).epsilon(1e-12));
    CHECK(worst_error(grid_of(doc["gradients"]["inputs"]["data"]), d_var_grid(m, spec, "inputs")) < 1e-6);
    CHECK(worst_error(grid_of(doc["loss"]["target"]), spec.target) == 0);
}

TEST_CASE("the backward pass prints the loss and then the gradients back to the inputs with formula and shape",
          "[backward][cli]") {
    const auto r = cli::run({"-m", "self", "--dim", "2", "--backward", "focus:journey=starts"});
    REQUIRE(r.exit_code == 0);
    // The loss: −log of the weight "journey" puts on "starts", worked out by the test's own pass.
    const json forward = run_json({"-m", "self", "--dim", "2"});
    const double a = trace_json::stage_rows(forward, "weights")[1][2];
    CHECK_THAT(r.out, Contains(fmt::format("backward · L = −log A[journey, starts] = {:.4f}\n", -std::log(a))));
    // Reverse pipeline order, each heading as a forward stage's: name · shape · formula.
    std::vector<std::string> headings{"d_weights · 6×6 · dA = −1 / A[i, j] at the focus pair (i, j), 0 elsewhere",
                                      "d_masked · 6×6 · dS'' = A ⊙ (dA − rowsum(dA ⊙ A))",
                                      "d_scaled · 6×6 · dS' = dS''",
                                      "d_scores · 6×6 · dS = dS' / √d_k",
                                      "d_keys · 6×2 · dK = dSᵀ·Q",
                                      "d_queries · 6×2 · dQ = dS·K",
                                      "d_W_v · 3×2 · dW_v = Xᵀ·dV",
                                      "d_W_k · 3×2 · dW_k = Xᵀ·dK",
                                      "d_W_q · 3×2 · dW_q = Xᵀ·dQ",
                                      "d_inputs · 6×3 · dX = dQ·W_qᵀ + dK·W_kᵀ + dV·W_vᵀ"};
    std::size_t at = r.out.find("backward · ");
    for (const auto& heading : headings) {
        INFO(heading);
        const std::size_t next = r.out.find("\n" + heading, at);
        CHECK(next != std::string::npos);
        if (next != std::string::npos) at = next;
    }
    // The focus loss does not reach the values, so they have no gradient stage of their own.
    CHECK_THAT(r.out, !Contains("\nd_values"));
    CHECK_THAT(r.out, !Contains("\nd_context"));
}

TEST_CASE("the stage option selects gradients by their d_ names beside forward stages", "[backward][cli]") {
    const json only = run_json({"-m", "self", "--dim", "2", "--backward", "sum", "-s", "d_weights,d_W_q"});
    CHECK(only["stages"].empty());  // no forward stage was named
    std::vector<std::string> keys;  // (nlohmann's json sorts them)
    for (const auto& [key, value] : only["gradients"].items()) keys.push_back(key);
    CHECK(keys == std::vector<std::string>{"W_q", "weights"});
    const json both = run_json({"-m", "self", "--dim", "2", "--backward", "sum", "-s", "weights,d_context"});
    REQUIRE(both["stages"].size() == 1);
    CHECK(both["stages"][0]["name"] == "weights");
    CHECK(both["gradients"].size() == 1);
    CHECK(both["gradients"]["context"]["name"] == "d_context");
    // Forward stages alone: no gradient, the loss still.
    const json forward_only = run_json({"-m", "self", "--dim", "2", "--backward", "sum", "-s", "weights"});
    CHECK(forward_only["gradients"].empty());
    CHECK(forward_only["loss"]["kind"] == "sum");
    // --head shows one head's gradients, with the run-wide ones.
    const json head = run_json({"-m", "self", "--heads", "2", "--dim", "4", "--head", "2", "--backward", "sum", "-s",
                                "d_weights,d_W_q"});
    REQUIRE(head["gradients"]["weights"].size() == 1);
    CHECK(head["gradients"]["weights"][0]["head"] == 2);
    const auto table = cli::run({"-m", "causal", "--backward", "sum", "-s", "d_scaled"});
    REQUIRE(table.exit_code == 0);
    CHECK_THAT(table.out, Contains("\nd_scaled · 6×6 · dS' = dS'' with 0 where hidden"));
    CHECK_THAT(table.out, !Contains("\nd_weights") && !Contains("\nweights ·"));
}

TEST_CASE("a query with the backward pass works one row through its softmax Jacobian and dS'' and dq",
          "[backward][cli]") {
    const std::vector<std::string> args{"-m", "self", "--dim", "2"};
    const json forward = run_json(args);
    const Model m = model_of(forward);
    const naive::LossSpec spec = focus_spec(m, "journey", "starts", 0);
    const json doc = run_json(with(args, {"--backward", "focus:journey=starts", "-q", "journey"}));
    const json& w = doc["worked_backward"];
    CHECK(w["query"] == "journey");
    // J_jk = a_j·(δ_jk − a_k), from the forward weights of the row.
    const std::vector<double> a = trace_json::stage_rows(forward, "weights")[1];
    const Grid jacobian = grid_of(w["jacobian"]);
    for (std::size_t j = 0; j < a.size(); ++j)
        for (std::size_t k = 0; k < a.size(); ++k)
            CHECK(jacobian[j][k] == Approx(a[j] * ((j == k ? 1.0 : 0.0) - a[k])).margin(1e-15));
    // dS'' of the row, the short form and Jᵀ·dA alike, is the loss's difference quotient in the masked scores.
    const Grid d_masked = d_stage_grid(m, spec, "masked", 0, 6, 6);
    CHECK(worst_error({w["short_form"].get<std::vector<double>>()}, {d_masked[1]}) < 1e-8);
    CHECK(worst_error({w["d_masked"].get<std::vector<double>>()}, {d_masked[1]}) < 1e-8);
    // dq = Σ_j dS_j·k_j is the queries' gradient in that row.
    const Grid d_queries = d_stage_grid(m, spec, "queries", 0, 6, 2);
    CHECK(worst_error({w["key_mix"]["mixed"].get<std::vector<double>>()}, {d_queries[1]}) < 1e-8);
    // The table writes each entry of dS'' as a_j·(dA_j − Σ): "starts" is the focus key, dA = −1/a.
    const auto r = cli::run(with(args, {"--backward", "focus:journey=starts", "-q", "journey", "-s", "d_W_q"}));
    REQUIRE(r.exit_code == 0);
    const auto four = [](double v) { return fmt::format("{:.4f}", v); };
    CHECK_THAT(r.out, Contains("the Jacobian of softmax: J_jk = ∂a_j/∂s''_k = a_j·(δ_jk − a_k), J = (diag(a) − aᵀ·a)"));
    CHECK_THAT(r.out, Contains("  Σ_k a_k·dA_k = " + four(a[2]) + "×(" + four(-1 / a[2]) + ") = -1\n"));
    CHECK_THAT(r.out, Contains("  dS''[starts]  = " + four(a[2]) + "×(" + four(-1 / a[2]) + " − (-1)) = " + four(a[2] - 1)));
    CHECK_THAT(r.out, Contains("dq, this row's gradient, is the keys weighted by the row of dS = dS'' / 1.4142"));
    // Beyond 8 keys the Jacobian is not written out, and the JSON says so with null.
    const json long_row = run_json({"example:teacher_smiled", "--backward", "focus:smiled=teacher", "-q", "smiled", "-s", "d_weights"});
    CHECK(long_row["worked_backward"]["jacobian"].is_null());
    const auto twelve = cli::run({"example:teacher_smiled", "--backward", "sum", "-q", "smiled", "-s", "d_weights"});
    CHECK_THAT(twelve.out, Contains("(12 keys: J is 12×12, written out up to 8 keys; the short form below never forms it)"));
}

TEST_CASE("a step size takes one step of gradient descent and shows the weights and the loss and the trace after it",
          "[backward][cli]") {
    const std::vector<std::string> args{"-m", "self", "--dim", "2"};
    const json forward = run_json(args);
    const Model m = model_of(forward);
    const naive::LossSpec spec = focus_spec(m, "journey", "starts", 0);
    // The test's own step: every parameter moved by −η times its difference quotient.
    const auto stepped = [&](double eta) {
        naive::Vars vars = m.vars;
        for (const char* p : {"W_q", "W_k", "W_v"}) {
            const Grid d = d_var_grid(m, spec, p);
            for (std::size_t r = 0; r < d.size(); ++r)
                for (std::size_t c = 0; c < d[r].size(); ++c) vars[p][r][c] -= eta * d[r][c];
        }
        return vars;
    };
    const double before = loss_of(m, m.vars, spec);
    const naive::Vars small = stepped(0.5);
    const double after = loss_of(m, small, spec);
    REQUIRE(after < before);  // a small step lowers the loss, by the test's own numbers
    const json doc = run_json(with(args, {"--backward", "focus:journey=starts", "--step-size", "0.5"}));
    const json& step = doc["step"];
    CHECK(step["loss_before"].get<double>() == Approx(before).epsilon(1e-12));
    CHECK(step["loss_after"].get<double>() == Approx(after).epsilon(1e-9));
    for (const char* p : {"W_q", "W_k", "W_v"}) CHECK(worst_error(grid_of(step["parameters"][p]), small.at(p)) < 1e-9);
    // The focus weight went up: the test's weight after its own step.
    double weight_after = 0;
    (void)naive::layer_loss(m.layer, small, spec, [&](const std::string& s, int, Grid& g) {
        if (s == "weights") weight_after = g[1][2];
    });
    CHECK(step["weight_after"].get<double>() == Approx(weight_after).epsilon(1e-9));
    CHECK(step["weight_after"].get<double>() > step["weight_before"].get<double>());
    // The trace after the step: its weights are those of the moved parameters.
    const json& after_weights = step["stages"][0];
    CHECK(after_weights["name"] == "weights");
    CHECK(after_weights["data"][1][2].get<double>() == Approx(weight_after).epsilon(1e-9));
    const auto table = cli::run(with(args, {"--backward", "focus:journey=starts", "--step-size", "0.5", "-s", "d_W_q"}));
    CHECK_THAT(table.out, Contains(fmt::format("loss: {:.4f} before the step, {:.4f} after (down by", before, after)));
    CHECK_THAT(table.out, Contains("the weight \"journey\" puts on \"starts\": "));
    CHECK_THAT(table.out, Contains("\nW_q after the step · 3×2 · W_q − 0.5·dW_q\n"));
    CHECK_THAT(table.out, Contains("\nthe trace after the step:\n"));
    CHECK_THAT(table.out, !Contains("overshoots"));
}

TEST_CASE("a step too large says the loss went up and which smaller step lowers it", "[backward][cli]") {
    const std::vector<std::string> args{"-m", "self", "--dim", "2"};
    const Model m = model_of(run_json(args));
    const naive::LossSpec spec = focus_spec(m, "journey", "starts", 0);
    std::map<std::string, Grid> d;
    for (const char* p : {"W_q", "W_k", "W_v"}) d[p] = d_var_grid(m, spec, p);
    const auto loss_at = [&](double eta) {
        naive::Vars vars = m.vars;
        for (const auto& [p, g] : d)
            for (std::size_t r = 0; r < g.size(); ++r)
                for (std::size_t c = 0; c < g[r].size(); ++c) vars[p][r][c] -= eta * g[r][c];
        return loss_of(m, vars, spec);
    };
    const double before = loss_of(m, m.vars, spec);
    REQUIRE(loss_at(200) > before);
    // The largest of 100, 50, 25, … that lowers the loss, by the test's own numbers.
    double lowering = 100;
    while (!(loss_at(lowering) < before)) lowering /= 2;
    const json doc = run_json(with(args, {"--backward", "focus:journey=starts", "--step-size", "200", "-s", "d_W_q"}));
    CHECK(doc["step"]["loss_after"].get<double>() > before);
    CHECK(doc["step"]["lowering_step"].get<double>() == lowering);
    CHECK(doc["step"]["lowering_loss"].get<double>() == Approx(loss_at(lowering)).epsilon(1e-9));
    const auto r = cli::run(with(args, {"--backward", "focus:journey=starts", "--step-size", "200", "-s", "d_W_q"}));
    CHECK_THAT(r.out, Contains(fmt::format("η = 200 overshoots: along −dL/dθ the loss falls at first (η = {} lowers it, to "
                                           "{:.4f}) and is back above where it started by η = 200",
                                           lowering, loss_at(lowering))));
    CHECK_THAT(r.out, Contains("(up by "));
}

TEST_CASE("the gradient check compares every parameter and input entry with its central difference",
          "[backward][cli]") {
    const auto r = cli::run({"-m", "self", "--dim", "2", "--backward", "focus:journey=starts", "--check"});
    REQUIRE(r.exit_code == 0);
    // W_q, W_k, W_v are 3×2 and the inputs 6×3: 36 entries in all.
    for (const char* line : {"ok  W_q: 6 entries, worst relative error ", "ok  W_k: 6 entries", "ok  W_v: 6 entries",
                             "ok  inputs: 18 entries"})
        CHECK_THAT(r.out, Contains(std::string("\n") + line));
    CHECK_THAT(r.out, Contains("all 36 entries agree with their central differences: worst relative error "));
    const json doc = json::parse(cli::run({"-m", "self", "--dim", "2", "--backward", "sum", "--check", "-f", "json"}).out);
    CHECK(doc["schema"] == "attntrace.gradient-check/1");
    CHECK(doc["entries"] == 36);
    CHECK(doc["passed"] == true);
    double worst = 0;
    std::string where;
    for (const auto& matrix : doc["matrices"])
        if (matrix["worst_relative"].get<double>() >= worst) worst = matrix["worst_relative"], where = matrix["key"];
    CHECK(doc["worst"] == where);
    CHECK(worst <= 1e-6);
    // Bahdanau's parameters and both state sequences; a GPT-2 layer's ln_1 and biases.
    const auto pair = cli::run({"example:teacher_smiled_fr", "--backward", "focus:souri=smiled", "--check"});
    CHECK(pair.exit_code == 0);
    CHECK_THAT(pair.out, Contains("ok  v_a: 3 entries") && Contains("ok  encoder_states: 9 entries") &&
                             Contains("ok  decoder_states: 12 entries"));
    const auto layer = cli::run({cli::data_file("arrays/toy_gpt2.safetensors"), "--from", "gpt2", "--layer", "0",
                                 "--backward", "sum", "--check"});
    CHECK(layer.exit_code == 0);
    CHECK_THAT(layer.out, Contains("ok  gamma: 8 entries") && Contains("ok  b_q: 8 entries"));
}

TEST_CASE("the backward pass in markdown and CSV and tidy CSV with a direction column and an SVG of a gradient",
          "[backward][cli]") {
    const std::vector<std::string> args{"-m", "causal", "--dim", "2", "--backward", "focus:step=Your"};
    const json doc = run_json(args);
    const Grid d_weights = grid_of(doc["gradients"]["weights"]["data"]);
    const auto md = cli::run(with(args, {"-f", "markdown", "-s", "weights,d_weights"}));
    REQUIRE(md.exit_code == 0);
    CHECK_THAT(md.out, Contains("## backward\n\n`L = −log A[step, Your] = "));
    CHECK_THAT(md.out, Contains("\n## d_weights · 6×6\n\n`dA = −1 / A[i, j] at the focus pair (i, j), 0 elsewhere` — "));
    CHECK_THAT(md.out, Contains(fmt::format("| **step** | {:.4f} |", d_weights[5][0])));
    // CSV: the trace's blocks, then the loss's and each gradient's.
    const auto csv = cli::run(with(args, {"-f", "csv", "-s", "d_masked"}));
    REQUIRE(csv.exit_code == 0);
    CHECK_THAT(csv.out, Contains("stage,loss\nformula,\"L = −log A[step, Your]\"\napplied,true\nrow,L\nloss,"));
    CHECK_THAT(csv.out, Contains("\n\nstage,d_masked\nformula,dS'' = A ⊙ (dA − rowsum(dA ⊙ A))\napplied,true\nrow,Your,"));
    // Tidy: one line per number, the direction last; a gradient's values exact, as JSON's.
    const auto tidy = cli::run(with(args, {"-f", "csv", "--tidy", "-s", "weights,d_weights"}));
    REQUIRE(tidy.exit_code == 0);
    std::istringstream lines(tidy.out);
    std::string line;
    std::getline(lines, line);
    CHECK(line == "stage,head,row,col,row_token,col_token,value,masked,direction");
    std::map<std::string, std::size_t> count;
    while (std::getline(lines, line)) {
        const std::string direction = line.substr(line.rfind(',') + 1);
        ++count[line.substr(0, line.find(',')) + "/" + direction];
        if (line.rfind("weights,,5,0,", 0) == 0 && direction == "backward")
            CHECK(line == fmt::format("weights,,5,0,step,Your,{},false,backward", d_weights[5][0]));
    }
    CHECK(count["weights/forward"] == 36);
    CHECK(count["loss/backward"] == 1);
    CHECK(count["weights/backward"] == 36);
    // The SVG of a gradient: diverging, centred on 0, and the legend says so.
    const auto svg = cli::run(with(args, {"--svg", "-", "-o", "/dev/null", "--svg-stage", "d_masked"}));
    REQUIRE(svg.exit_code == 0);
    CHECK_THAT(svg.out, Contains("Gradients are signed: red below 0, blue above, white at 0, darkest at the table&apos;s "
                                 "largest |dL/dS&apos;&apos;| (one scale for the whole table)"));
    CHECK_THAT(svg.out, Contains(">d_masked · 6×6 · "));
}

TEST_CASE("the backward pass refuses bad losses and options with one error line and nothing on stdout", "[backward][cli][errors]") {
    const cli::TempFile wrong(R"({"target": [[1, 2], [3, 4]]})", "wrong_shape.json");
    const cli::TempFile not_matrix(R"({"target": "none"})", "not_matrix.json");
    struct Refusal {
        std::vector<std::string> args;
        int code;
        std::string says;
    };
    const std::vector<Refusal> refusals{
        {{"--backward", "fokus:journey=starts"}, 2, "is not a loss: sum, focus:QUERY=KEY or target:FILE (did you mean focus?)"},
        {{"--backward", "focus:journey"}, 2, "focus:QUERY=KEY needs an = between the query and the key"},
        {{"--backward", "focus:=starts"}, 2, "the query before the = is empty"},
        {{"--backward", "focus"}, 2, "focus needs its pair"},
        {{"--backward", "target:"}, 2, "target:FILE needs the file"},
        {{"--backward", "sum:all"}, 2, "sum takes nothing after it"},
        {{"--backward", "focus:jorney=starts"}, 2, "--backward focus (the query): \"jorney\" is neither a token nor a position from 1 to 6 (did you mean journey?)"},
        {{"--backward", "focus:journey=7"}, 2, "--backward focus (the key): \"7\" is neither a token nor a position from 1 to 6"},
        {{"--backward", "target:" + wrong.path()}, 1, wrong.path() + ": the target has 2 rows of 2 numbers, and the context it is compared with has 6 rows of 3"},
        {{"--backward", "target:" + not_matrix.path()}, 1, not_matrix.path() + ": the target must be a matrix of numbers"},
        {{"--backward", "target:/nonexistent/t.json"}, 1, "/nonexistent/t.json"},
        {{"-m", "causal", "--backward", "focus:Your=step"}, 1, "the focus loss −log A needs a positive weight, but \"Your\" puts 0 on \"step\" (the mask hides that key from it)"},
        {{"--step-size", "0.1"}, 2, "--step-size η needs --backward LOSS"},
        {{"-m", "self", "--backward", "sum", "--step-size", "-1"}, 2, "expected a positive number such as 0.1, found -1"},
        {{"--backward", "sum", "--step-size", "0.1"}, 2, "--step-size: plain mode has no weights to learn"},
        {{"example:teacher_smiled_fr", "--score", "dot", "--backward", "sum", "--step-size", "0.1"}, 2, "--step-size: Luong's dot score has no weights to learn"},
        // --summary --backward is the streaming backward pass (test_stream_backward_cli.cpp); what needs the full trace is refused
        {{"--backward", "sum", "--summary", "--step-size", "0.1"}, 2, "--step-size needs the full trace, which --summary does not build"},
        {{"--backward", "sum", "--summary", "-s", "d_weights"}, 2, "a gradient stage needs the full trace (leave out --summary)"},
        {{"-s", "d_weights"}, 2, "--stage d_weights: a gradient needs --backward LOSS"},
        {{"--backward", "sum", "-s", "d_wieghts"}, 2, "--stage: no gradient named \"d_wieghts\" (did you mean d_weights?)"},
        {{"-m", "self", "--backward", "focus:journey=starts", "-s", "d_values"}, 2, "--stage: this run has no gradient d_values (its loss reaches d_weights,"},
        {{"--backward", "sum", "--svg", "-", "--svg-stage", "d_context"}, 2, "--svg-stage: --svg draws the gradients d_scores, d_scaled, d_masked and d_weights"},
        {{"--svg", "-", "--svg-stage", "d_weights"}, 2, "--svg-stage d_weights: a gradient needs --backward LOSS"},
        {{"-m", "self", "--backward", "sum", "--check", "--step-size", "0.1"}, 2, "give one at a time"},
    };
    for (const Refusal& refusal : refusals) {
        INFO(fmt::format("{}", fmt::join(refusal.args, " ")));
        cli::require_error_line(cli::run(refusal.args), refusal.code, refusal.says);
    }
}

TEST_CASE("the gradient check refuses inputs beyond toy sizes before it starts", "[backward][cli][errors]") {
    cli::TempDir dir;
    REQUIRE(cli::run({"generate", "-n", "30", "-d", "40", "-o", dir / "big.json"}).exit_code == 0);
    // W_q, W_k and W_v of 40 × 40 and the 30 × 40 inputs: 6000 entries.
    cli::require_error_line(cli::run({dir / "big.json", "-m", "self", "--backward", "sum", "--check"}), 1,
                            "--check with --backward moves each of the 6000 parameter and input entries four times");
}
