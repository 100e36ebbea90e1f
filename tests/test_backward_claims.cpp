// Every sentence --explain prints about a gradient is a claim about its run: each one, in
// every mode family and for each loss, is recognised here and checked against the test's own
// numbers (support/backward_model.hpp: the inputs and parameters of the run's JSON, a forward
// pass in plain loops, finite differences). A sentence this file does not know fails.
#include "support/backward_model.hpp"
#include "support/cli.hpp"
#include "support/trace_json.hpp"

#include "support/catch.hpp"
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <regex>
#include <string>
#include <vector>

using Catch::Contains;
using nlohmann::json;
using namespace backward_model;
using trace_json::run_json;

namespace {

const std::string num = R"((-?[0-9.]+(?:e[-+]?[0-9]+)?))";  // a number as {:.4g} writes it

double norm(const std::vector<double>& v) {
    double s = 0;
    for (const double x : v) s += x * x;
    return std::sqrt(s);
}

// The row of `g` with the largest length.
std::size_t longest_row(const Grid& g) {
    std::size_t best = 0;
    for (std::size_t r = 1; r < g.size(); ++r)
        if (norm(g[r]) > norm(g[best])) best = r;
    return best;
}

bool near(double printed, double want) { return std::abs(printed - want) <= 1e-3 * std::max(std::abs(want), 1e-3); }

// Differences that agree to this much are the same figure (a tie the program reports as one).
bool same(double a, double b) { return std::abs(a - b) <= 1e-7 * std::max({std::abs(a), std::abs(b), 1e-9}); }

// The extreme entry of `d` (largest or smallest): its value, the entries that share it (row by
// row), to compare with a sentence's entry and its "tied with N other …".
struct Extreme {
    double value = 0;
    std::vector<std::pair<std::size_t, std::size_t>> at;
};
Extreme extreme_of(const Grid& d, bool largest) {
    Extreme e{d[0][0], {}};
    for (const auto& row : d)
        for (const double x : row) e.value = largest ? std::max(e.value, x) : std::min(e.value, x);
    for (std::size_t r = 0; r < d.size(); ++r)
        for (std::size_t c = 0; c < d[r].size(); ++c)
            if (same(d[r][c], e.value)) e.at.emplace_back(r, c);
    return e;
}
// ", tied with 2 other weights" → 2; nothing → 0.
std::size_t others(const std::ssub_match& tie) { return tie.matched ? std::stoul(tie.str()) : 0; }
const std::string tie_of(const std::string& one, const std::string& several) {
    return "(?:, tied with (\\d+) other (?:" + one + "|" + several + "))?";
}

struct Case {
    std::vector<std::string> args;
    std::string loss;  // --backward's
    naive::LossSpec spec;
};

class Claims {
public:
    Claims(const json& doc, const Model& m, naive::LossSpec spec) : doc_(doc), m_(m), spec_(std::move(spec)) {}

    // Checks every sentence of every gradient's explanation; returns how many there were.
    std::size_t check_all() {
        std::size_t lines = 0;
        for (const auto& [key, value] : doc_["gradients"].items())
            for (const json& entry : gradient_entries(doc_, key)) {
                key_ = key, entry_ = &entry, head_ = entry.value("head", 0);
                for (const auto& line : entry.at("explanation")) {
                    INFO(key << " (head " << head_ << "): " << line.get<std::string>());
                    CHECK(known(line.get<std::string>()));
                    ++lines;
                }
            }
        return lines;
    }

private:
    bool focus() const { return spec_.kind == naive::LossSpec::Kind::focus; }
    std::size_t rows() const { return (*entry_)["shape"][0]; }
    std::size_t cols() const { return (*entry_)["shape"][1]; }
    std::string row_label(std::size_t r) const { return (*entry_)["rows"][r]; }
    std::string col_label(std::size_t c) const { return (*entry_)["cols"][c]; }
    // The group of key/value head this entry reads, 1-based.
    std::size_t group() const {
        const int kv = entry_->value("kv_head", 0);
        return static_cast<std::size_t>(kv > 0 ? kv : std::max(head_, 1));
    }
    // The test's own gradient of the stage this entry belongs to.
    Grid own(const std::string& stage) const {
        if (stage == "queries") return d_stage_grid(m_, spec_, "queries", 0, rows(), cols(), (std::max(head_, 1) - 1) * cols());
        if (stage == "keys" || stage == "values") return d_stage_grid(m_, spec_, stage, 0, rows(), cols(), (group() - 1) * cols());
        if (m_.vars.count(stage)) return d_var_grid(m_, spec_, stage);
        return d_stage_grid(m_, spec_, stage, head_, rows(), cols());
    }
    const json& forward(const std::string& stage) const { return forward_stage(doc_, stage, head_); }

    bool matches(const std::string& line, const std::string& pattern, std::smatch& got) const {
        return std::regex_match(line, got, std::regex(pattern));
    }

    bool known(const std::string& line);
    bool result_claim(const std::string& line);
    bool weights_claim(const std::string& line);
    bool softmax_claim(const std::string& line);
    bool mask_claim(const std::string& line);
    bool projection_claim(const std::string& line);
    bool input_claim(const std::string& line);
    bool parameter_claim(const std::string& line);
    bool largest_row_claim(const std::string& line, const std::string& stage, const std::string& symbol);

    const json& doc_;
    const Model& m_;
    naive::LossSpec spec_;
    std::string key_;
    const json* entry_ = nullptr;
    int head_ = 0;
};

bool Claims::known(const std::string& line) {
    std::smatch got;
    if (matches(line, R"((d_\S+) is (\d+)×(\d+), the shape of (\S+): one number for each of its entries\.)", got)) {
        CHECK(got[1] == "d_" + key_);
        const bool parameter = doc_["parameters"].contains(got[4].str());
        const Grid shape_of = parameter ? grid_of(doc_["parameters"][got[4].str()]) : Grid{};
        const std::size_t r = parameter ? shape_of.size() : forward(got[4])["shape"][0].get<std::size_t>();
        const std::size_t c = parameter ? shape_of[0].size() : forward(got[4])["shape"][1].get<std::size_t>();
        CHECK(std::stoul(got[2]) == r);
        CHECK(std::stoul(got[3]) == c);
        return true;
    }
    return result_claim(line) || weights_claim(line) || softmax_claim(line) || mask_claim(line) ||
           projection_claim(line) || input_claim(line) || parameter_claim(line);
}

bool Claims::result_claim(const std::string& line) {
    std::smatch got;
    const bool output = doc_["gradients"].contains("output");
    if (matches(line, R"(L = Σ adds up every number of the (context|output), so each moves L by as much as it moves itself: every entry of the gradient is 1\.)", got)) {
        CHECK(spec_.kind == naive::LossSpec::Kind::sum);
        CHECK(got[1] == (output ? "output" : "context"));
        for (const auto& row : own(got[1]))
            for (const double d : row) CHECK(d == Approx(1).epsilon(1e-8));
        return true;
    }
    if (matches(line, "dL/d(Z|\\(output\\)) = (Z|\\(output\\)) − T: each entry is how far that number stands from its target, with its sign\\. The row farthest from its target is \"(.*)\" \\(‖y − t‖ = " + num + "\\)\\.", got)) {
        CHECK(spec_.kind == naive::LossSpec::Kind::target);
        const Grid y = grid_of(forward(output ? "output" : "context")["data"]);
        Grid gap = y;
        for (std::size_t r = 0; r < y.size(); ++r)
            for (std::size_t c = 0; c < y[r].size(); ++c) gap[r][c] -= spec_.target[r][c];
        const std::size_t far = longest_row(gap);
        CHECK(got[3] == row_label(far));
        CHECK(near(std::stod(got[4]), norm(gap[far])));
        return true;
    }
    if (matches(line, R"(The loss reaches head (\d+)'s context through W_o: its gradient is head (\d+)'s columns of d\(concat\)\.)", got)) {
        CHECK((m_.heads > 1 && key_ == "context" && std::stoi(got[1]) == head_ && got[1] == got[2]));
        return true;
    }
    if (line == "dZ = d(output)·W_oᵀ: W_o sends the output's gradient back to the numbers of the context it mixes.") {
        CHECK((m_.heads == 1 && m_.vars.count("W_o") == 1 && key_ == "context"));
        return true;
    }
    if (line == "d(concat) = d(output)·W_oᵀ: each head's context numbers get the output's gradient through the rows of W_o they feed.") {
        CHECK((m_.heads > 1 && key_ == "concat"));
        return true;
    }
    return false;
}

bool Claims::weights_claim(const std::string& line) {
    std::smatch got;
    if (matches(line, "Only the weight \"(.*)\" puts on \"(.*)\" is in the loss, so dA is 0 everywhere but there, where it is −1/" + num + " = " + num + ": the larger that weight, the smaller L\\.", got)) {
        CHECK(focus());
        CHECK(got[1] == m_.queries[spec_.query]);
        CHECK(got[2] == m_.keys[spec_.key]);
        const double a = forward("weights")["data"][spec_.query][spec_.key];
        CHECK(near(std::stod(got[3]), a));
        CHECK(near(std::stod(got[4]), -1 / a));
        const Grid d = own("weights");
        for (std::size_t r = 0; r < d.size(); ++r)
            for (std::size_t c = 0; c < d[r].size(); ++c)
                if (r != spec_.query || c != spec_.key) CHECK(std::abs(d[r][c]) < 1e-9);
        return true;
    }
    if (matches(line, "dA_ij = dZ_i·v_j: a weight's gradient is how far its key's value points along its query's context gradient\\. Taken alone, L grows fastest with the weight \"(.*)\" puts on \"(.*)\" \\(dA = " + num + tie_of("weight", "weights") + "\\) and falls fastest with the weight \"(.*)\" puts on \"(.*)\" \\(dA = " + num + tie_of("weight", "weights") + "\\)\\.", got)) {
        const Grid d = own("weights");
        for (const bool largest : {true, false}) {
            const std::size_t i = largest ? 1 : 5;  // the first group of the pair
            const Extreme e = extreme_of(d, largest);
            bool named = false;
            for (const auto& [r, c] : e.at) named = named || (got[i] == row_label(r) && got[i + 1] == col_label(c));
            CHECK(named);
            CHECK(near(std::stod(got[i + 2]), e.value));
            CHECK(others(got[i + 3]) + 1 == e.at.size());
        }
        return true;
    }
    return false;
}

bool Claims::softmax_claim(const std::string& line) {
    std::smatch got;
    const double t = doc_["temperature"];
    const std::string over_t = t != 1 ? fmt::format(" / {:.4g}", t) : "";
    if (line == "Softmax's backward, row by row: dS''_j = a_j·(dA_j − Σ_k a_k·dA_k)" + over_t +
                    ". Each row sums to 0: raising every score of a row by the same amount leaves its weights, and L, as they are.") {
        CHECK(doc_["normalize"] == "softmax");
        for (const auto& row : own("masked")) {
            double sum = 0;
            for (const double d : row) sum += d;
            CHECK(std::abs(sum) < 1e-8);
        }
        return true;
    }
    if (matches(line, "In the row of \"(.*)\" this is \\(a − e_k\\)(.*): the score of \"(.*)\" gets \\(" + num + " − 1\\)(.*) = " + num + ", so raising it lowers L; the score of every other key the row sees gets that key's weight(.*), so raising it raises L\\. The other rows get 0\\.", got)) {
        CHECK(focus());
        CHECK(got[1] == m_.queries[spec_.query]);
        CHECK(got[3] == m_.keys[spec_.key]);
        CHECK((got[2] == over_t && got[5] == over_t && got[7] == over_t));
        const std::vector<double> a = forward("weights")["data"][spec_.query].get<std::vector<double>>();
        CHECK(near(std::stod(got[4]), a[spec_.key]));
        CHECK(near(std::stod(got[6]), (a[spec_.key] - 1) / t));
        const Grid d = own("masked");
        for (std::size_t r = 0; r < d.size(); ++r)
            for (std::size_t c = 0; c < d[r].size(); ++c)
                CHECK(d[r][c] == Approx(r == spec_.query ? (a[c] - (c == spec_.key ? 1 : 0)) / t : 0).margin(1e-8));
        return true;
    }
    if (line == "Softmax's backward of P, the weights before the hidden ones were zeroed: the hidden scores were in softmax's sums (--mask-after-softmax), so they get gradient as well.") {
        CHECK(doc_.value("mask_after_softmax", false));
        const Grid d = own("masked");
        bool some = false;
        for (std::size_t r = 0; r < d.size(); ++r)
            for (std::size_t c = 0; c < d[r].size(); ++c) some = some || (naive::hidden(m_.layer, r, c) && std::abs(d[r][c]) > 1e-9);
        CHECK(some);
        return true;
    }
    if (line == "Dividing by the row sum, backwards: dS''_j = (dA_j − Σ_k a_k·dA_k) / r, r the row's sum of its visible scores.") {
        CHECK(doc_["normalize"] == "sum");
        return true;
    }
    return false;
}

bool Claims::mask_claim(const std::string& line) {
    std::smatch got;
    if (matches(line, "The mask replaced (\\d+) of the (\\d+) scores by (−∞|the fill " + num + "): those get exactly 0, since a constant does not change with the score it replaced; the others pass through unchanged\\.", got)) {
        // Which pairs are hidden, by the mask's own rules.
        std::size_t hidden = 0;
        const Grid d = own("scaled");
        for (std::size_t r = 0; r < d.size(); ++r)
            for (std::size_t c = 0; c < d[r].size(); ++c) {
                const bool is_hidden = m_.is_pair ? !m_.pair.source_mask[c] : naive::hidden(m_.layer, r, c);
                if (!is_hidden) continue;
                ++hidden;
                CHECK(d[r][c] == 0);
            }
        CHECK(std::stoul(got[1]) == hidden);
        CHECK(std::stoul(got[2]) == rows() * cols());
        CHECK((got[3] == "−∞") == !doc_.contains("mask_fill"));
        return true;
    }
    if (matches(line, "The scores were divided by " + num + ", so their gradient is divided by it too\\.", got)) {
        const double divisor = doc_["scale"]["divisor"];
        CHECK(near(std::stod(got[1]), divisor));
        const Grid scores = own("scores"), scaled = own("scaled");
        for (std::size_t c = 0; c < scores[0].size(); ++c) CHECK(scores.back()[c] == Approx(scaled.back()[c] / divisor).margin(1e-8));
        return true;
    }
    if (line == "The gradient of the rotated vectors, before RoPE's rotation is undone (each pair turned back by −φ).") {
        CHECK(doc_["positions"] == "rope");
        return true;
    }
    return false;
}

bool Claims::largest_row_claim(const std::string& line, const std::string& stage, const std::string& symbol) {
    std::smatch got;
    if (!matches(line, ".* The largest(?: gradient)? is \"(.*)\" \\(‖" + symbol + "‖ = " + num + tie_of("row", "rows") + "\\)\\.", got))
        return false;
    Grid norms;
    for (const auto& row : own(stage)) norms.push_back({norm(row)});
    const Extreme e = extreme_of(norms, true);
    bool named = false;
    for (const auto& [r, c] : e.at) named = named || got[1] == row_label(r);
    CHECK(named);
    CHECK(near(std::stod(got[2]), e.value));
    CHECK(others(got[3]) + 1 == e.at.size());
    return true;
}

bool Claims::projection_claim(const std::string& line) {
    std::smatch got;
    const std::string rope = doc_["positions"] == "rope" ? ", turned back by −φ" : "";
    if (line.rfind("dQ = dS·K" + rope + ": each query's gradient mixes the keys by its row of dS.", 0) == 0) {
        CHECK(key_ == "queries");
        if (!matches(line, ".* Only \"(.*)\"'s query has a gradient other than 0: the loss reads its row alone\\.", got))
            return largest_row_claim(line, "queries", "dq");
        CHECK(focus());
        CHECK(got[1] == m_.queries[spec_.query]);
        const Grid d = own("queries");
        for (std::size_t r = 0; r < d.size(); ++r)
            if (r != spec_.query)
                for (const double x : d[r]) CHECK(std::abs(x) < 1e-9);
        return true;
    }
    if (line.rfind("dK = dSᵀ·Q" + rope + ": each key's gradient mixes the queries by its column of dS.", 0) == 0)
        return largest_row_claim(line, "keys", "dk");
    if (line.rfind("dV = Aᵀ·dZ: each value's gradient mixes the context gradients of the queries that read it, each by the weight it read it with.", 0) == 0)
        return largest_row_claim(line, "values", "dv");
    return false;
}

bool Claims::input_claim(const std::string& line) {
    std::smatch got;
    const std::string x = m_.vars.count("inputs") ? "inputs" : "embeddings";
    if (line.rfind("dX = dQ·W_qᵀ + dK·W_kᵀ + dV·W_vᵀ: each token's vector reaches L ", 0) == 0) {
        CHECK((!m_.layer.plain && key_ == "inputs"));
        if (focus()) {  // no way through the values
            CHECK_THAT(line, Contains("reaches L as a query and as a key (the focus loss reads the weights, which the values do not reach)."));
            for (const auto& row : d_stage_grid(m_, spec_, "values", 0, rows(), 1))
                for (const double v : row) CHECK(std::abs(v) < 1e-9);
        } else {
            CHECK_THAT(line, Contains("reaches L as a query, as a key and as a value."));
        }
        return largest_row_claim(line, x, "dx");
    }
    if (line.rfind("X is the queries, the keys and the values at once: dX = dQ + dK + dV.", 0) == 0) {
        CHECK(m_.layer.plain);
        return largest_row_claim(line, x, "dx");
    }
    if (matches(line, "\"(.*)\" stands (\\d+) positions? from \"(.*)\", and the gradient reaches its vector in one attention step, through its key \\(‖dx‖ = " + num + "\\): the connection is direct, however far apart the two are\\.", got)) {
        CHECK(focus());
        CHECK(got[1] == m_.keys[spec_.key]);
        CHECK(got[3] == m_.queries[spec_.query]);
        CHECK(std::stoul(got[2]) == (spec_.query > spec_.key ? spec_.query - spec_.key : spec_.key - spec_.query));
        const Grid dx = own(x);
        CHECK(near(std::stod(got[4]), norm(dx[spec_.key])));
        // Through its key alone: its query's and its value's gradients are 0.
        const Grid dq = d_stage_grid(m_, spec_, "queries", 0, dx.size(), 1);
        CHECK(std::abs(dq[spec_.key][0]) < 1e-9);
        return true;
    }
    if (line == "The inputs reach L only through the layer normalisation, whose backward pass spreads each row's gradient over its numbers.") {
        CHECK(m_.layer.layernorm);
        return true;
    }
    if (line == "LN(X) is what the projections read, so its gradient is the sum of its three paths, as the inputs' would be without ln_1.") {
        CHECK((m_.layer.layernorm && key_ == "layernorm"));
        return true;
    }
    if (line == "The encodings are fixed numbers added to the embeddings, so the embeddings get the inputs' gradient unchanged.") {
        CHECK((m_.layer.sinusoidal && key_ == "embeddings"));
        return true;
    }
    if (line == "Through tanh: each feature's gradient is multiplied by 1 − tanh², which is near 0 where tanh saturates (its value near −1 or 1).") {
        CHECK((m_.is_pair && m_.pair.score == naive::PairSpec::Score::additive));
        return true;
    }
    if (line == "The encoder states are the values too: their gradient adds what reaches them through the scores and what reaches them as the values the context mixes.") {
        CHECK((m_.is_pair && !focus() && key_ == "encoder_states"));
        return true;
    }
    if (line == "The focus loss reads the weights, so the encoder states' gradient comes through the scores alone, not through the values the context mixes.") {
        CHECK((m_.is_pair && focus() && key_ == "encoder_states"));
        return true;
    }
    return false;
}

// "Raising W_q[x2, q1] lowers L fastest (…)": the extreme entries of the parameter's gradient,
// by differences; with a focus loss, the entry that raises the focus weight fastest.
bool Claims::parameter_claim(const std::string& line) {
    std::smatch got;
    if (matches(line, "The gradient of (\\S+) is 0 everywhere(.*): to first order, moving (\\S+) does not change L\\.", got)) {
        CHECK((got[1] == key_ && got[3] == key_));
        for (const auto& row : own(key_))
            for (const double d : row) CHECK(std::abs(d) < 1e-9);
        return true;
    }
    if (line.rfind("Raising ", 0) != 0) return false;
    const Grid d = own(key_);
    const bool vector = rows() == 1 && row_label(0) == key_;
    const auto entry = [&](std::size_t r, std::size_t c) {
        return vector ? fmt::format("{}[{}]", key_, col_label(c)) : fmt::format("{}[{}, {}]", key_, row_label(r), col_label(c));
    };
    const auto named = [&](const Extreme& e, const std::string& text) {
        for (const auto& [r, c] : e.at)
            if (entry(r, c) == text) return true;
        return false;
    };
    const Extreme high = extreme_of(d, true), low = extreme_of(d, false);
    const std::string focus_words = focus() ? fmt::format(": it raises the weight \"{}\" puts on \"{}\" fastest",
                                                         m_.queries[spec_.query], m_.keys[spec_.key])
                                            : "";
    const std::string raises = "raises L fastest \\(" + num + tie_of("entry", "entries") + "\\)";
    if (low.value < -1e-9) {
        const std::string lowers = "Raising (.*?) lowers L fastest \\(dL/d" + key_ + " = " + num + " there, the most negative entry" +
                                   tie_of("entry", "entries") + "\\)" + std::regex_replace(focus_words, std::regex(R"([()\\[\\]])"), "\\$&");
        const bool both = high.value > 1e-9;
        REQUIRE(matches(line, lowers + (both ? "; raising (.*?) " + raises : std::string()) + "\\.", got));
        CHECK(named(low, got[1]));
        CHECK(near(std::stod(got[2]), low.value));
        CHECK(others(got[3]) + 1 == low.at.size());
        if (both) {
            CHECK(named(high, got[4]));
            CHECK(near(std::stod(got[5]), high.value));
            CHECK(others(got[6]) + 1 == high.at.size());
        }
    } else {
        REQUIRE(matches(line, "Raising (.*?) " + raises + ": no entry of its gradient is negative, so raising any entry alone does not lower L\\.", got));
        CHECK(named(high, got[1]));
    }
    if (focus() && low.value < -1e-9) {  // the focus weight's own differences: the same entry raises it fastest
        const auto weight_at = [&](naive::Vars vars) {
            double a = 0;
            (void)loss_of(m_, vars, spec_, [&](const std::string& s, int h, Grid& g) {
                if (s == "weights" && h == spec_.head) a = g[spec_.query][spec_.key];
            });
            return a;
        };
        Grid rate = d;
        for (std::size_t r = 0; r < d.size(); ++r)
            for (std::size_t c = 0; c < d[r].size(); ++c) {
                naive::Vars up = m_.vars, down = m_.vars;
                up[key_][r][c] += 1e-5, down[key_][r][c] -= 1e-5;
                rate[r][c] = (weight_at(up) - weight_at(down)) / 2e-5;
            }
        CHECK(named(extreme_of(rate, true), got[1]));
    }
    return true;
}

// The explanations of one run and loss, each sentence checked.
std::size_t check_case(const std::vector<std::string>& args, const std::string& loss, naive::LossSpec spec) {
    INFO(fmt::format("{} --backward {}", fmt::join(args, " "), loss));
    std::vector<std::string> all = args;
    all.insert(all.end(), {"--backward", loss, "--explain"});
    const json doc = run_json(all);
    const Model m = model_of(doc);
    return Claims(doc, m, std::move(spec)).check_all();
}

naive::LossSpec sum() { return {}; }

naive::LossSpec focus(const std::vector<std::string>& args, const std::string& query, const std::string& key, int head = 0) {
    const Model m = model_of(run_json(args));
    naive::LossSpec spec;
    spec.kind = naive::LossSpec::Kind::focus;
    spec.query = index_of(m.queries, query), spec.key = index_of(m.keys, key), spec.head = head;
    return spec;
}

// A target loss: its file and the spec of the same numbers.
struct Target {
    naive::LossSpec spec;
    cli::TempFile file;
    Target(Grid numbers) : spec(make(numbers)), file(json(numbers).dump(), "target.json") {}
    static naive::LossSpec make(const Grid& numbers) {
        naive::LossSpec s;
        s.kind = naive::LossSpec::Kind::target;
        s.target = numbers;
        return s;
    }
    std::string loss() const { return "target:" + file.path(); }
};

}  // namespace

TEST_CASE("the explanations of gradients hold in plain and self and causal mode for every loss", "[backward][claims][explain]") {
    std::size_t lines = 0;
    const std::vector<std::string> plain{}, self{"-m", "self", "--dim", "2"}, causal{"-m", "causal"};
    lines += check_case(plain, "sum", sum());
    const Target target(naive::Lcg{3}.grid(6, 3));
    lines += check_case(plain, target.loss(), target.spec);
    lines += check_case(plain, "focus:journey=starts", focus(plain, "journey", "starts"));
    lines += check_case(self, "focus:journey=starts", focus(self, "journey", "starts"));
    lines += check_case(self, "sum", sum());
    lines += check_case(causal, "focus:step=Your", focus(causal, "step", "Your"));
    const std::vector<std::string> filled{"-m", "causal", "--mask-fill", "-1e9", "--temperature", "2"};
    lines += check_case(filled, "focus:one=journey", focus(filled, "one", "journey"));
    lines += check_case({"-m", "causal", "--mask-after-softmax"}, "sum", sum());
    lines += check_case({"--normalize", "sum"}, "focus:journey=starts", focus(plain, "journey", "starts"));
    CHECK(lines > 60);
}

TEST_CASE("the explanations of gradients hold with several heads and grouped keys and positions and ln_1", "[backward][claims][explain]") {
    std::size_t lines = 0;
    const std::vector<std::string> heads{"-m", "self", "--heads", "2", "--dim", "4"};
    lines += check_case(heads, "sum", sum());
    lines += check_case(heads, "focus:journey=starts", focus(heads, "journey", "starts", 1));
    const std::vector<std::string> grouped{"-m", "causal", "--heads", "4", "--kv-heads", "2", "--dim", "8", "--head", "3"};
    lines += check_case(grouped, "focus:step=journey", focus(grouped, "step", "journey", 3));
    lines += check_case({"-m", "self", "--positions", "rope", "--dim", "4"}, "sum", sum());
    lines += check_case({"-m", "self", "--positions", "sinusoidal"}, "sum", sum());
    // ln_1's own gradients, and a bias whose gradient is 0 but for rounding (softmax ignores a shift of every key).
    const std::vector<std::string> layer{cli::data_file("arrays/toy_gpt2.safetensors"), "--from", "gpt2", "--layer", "0",
                                         "-s", "parameters,inputs,layernorm,masked,weights,output,d_layernorm,d_inputs,d_gamma,d_beta,d_b_k,d_b_q,d_output"};
    lines += check_case(layer, "sum", sum());
    CHECK(lines > 60);
}

TEST_CASE("the explanations of gradients hold in Bahdanau's mode", "[backward][claims][explain]") {
    std::size_t lines = 0;
    const std::vector<std::string> pair{"example:teacher_smiled_fr"};
    lines += check_case(pair, "focus:souri=smiled", focus(pair, "souri", "smiled"));
    lines += check_case(pair, "sum", sum());
    const std::vector<std::string> general{"example:teacher_smiled_fr", "--score", "general"};
    const Target target(naive::Lcg{5}.grid(4, 3));
    lines += check_case(general, target.loss(), target.spec);
    const std::vector<std::string> padded{"example:padded_cat_fr"};
    lines += check_case(padded, "focus:noir=black", focus(padded, "noir", "black"));
    CHECK(lines > 30);
}

TEST_CASE("the explanation of a gradient comes before its table as a stage's does", "[backward][claims][explain]") {
    const json doc = run_json({"-m", "self", "--dim", "2", "--backward", "focus:journey=starts", "--explain", "-s", "d_W_q"});
    const auto r = cli::run({"-m", "self", "--dim", "2", "--backward", "focus:journey=starts", "--explain", "-s", "d_W_q"});
    REQUIRE(r.exit_code == 0);
    std::string lines;
    for (const auto& line : doc["gradients"]["W_q"]["explanation"]) lines += "  " + line.get<std::string>() + "\n";
    CHECK_THAT(r.out, Contains(lines + "d_W_q · 3×2 · dW_q = Xᵀ·dQ\n"));
    const auto plain = cli::run({"-m", "self", "--dim", "2", "--backward", "focus:journey=starts", "-s", "d_W_q"});
    CHECK_THAT(plain.out, !Contains("lowers L fastest"));
}
