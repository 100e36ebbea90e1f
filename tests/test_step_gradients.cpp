// attntrace step on the backward pass: Enter on a gradient marks the cells its formula reads
// (the gradients nearer the loss and the forward stages), and each gradient is recomputed here
// from exactly the marked cells with the backward pass's formula written out by hand; the
// terminal is given back when an error leaves a session; a printed command quotes any name.
#include "input/examples.hpp"
#include "input/load.hpp"
#include "stepper/session.hpp"
#include "stepper/stepper.hpp"
#include "util/terminal.hpp"

#include "support/catch.hpp"
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <termios.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

using namespace attntrace;
using stepper::Stepper;

namespace {

Stepper stepper_for(const std::string& example, Mode mode, std::optional<int> heads, const std::string& loss) {
    TraceOptions options;
    options.mode = mode;
    options.heads = heads;
    if (heads) options.dim = 4;
    LossText l;
    if (loss != "sum") l.kind = LossKind::focus, l.query = loss.substr(0, loss.find('=')), l.key = loss.substr(loss.find('=') + 1);
    return Stepper(load_problem(find_example(example)->json, example), options, "example:" + example, 4, l);
}

// The cursor on (row, col) of the view called `name` ("d_weights", "d_W_q"), then Enter.
void follow(Stepper& s, const std::string& name, Eigen::Index row, Eigen::Index col) {
    s.start_at(name, std::to_string(row + 1));
    while (s.col() > 0) s.press({stepper::Key::left, {}});
    for (Eigen::Index c = 0; c < col; ++c) s.press({stepper::Key::right, {}});
    REQUIRE(s.row() == row);
    REQUIRE(s.col() == col);
    s.press({stepper::Key::enter, {}});
}

const stepper::View& view_named(const Stepper& s, const std::string& name) {
    for (const auto& v : s.views())
        if (s.view_name(v) == name) return v;
    FAIL("no view " << name);
    throw std::logic_error("unreachable");
}

// The marked numbers of a view, row by row: a marked row's in column order, a marked column's
// in row order.
std::vector<double> marked(const Stepper& s, const std::string& name) {
    const auto& v = view_named(s, name);
    const Matrix& m = s.matrix(v);
    std::vector<double> values;
    for (Eigen::Index r = 0; r < m.rows(); ++r)
        for (Eigen::Index c = 0; c < m.cols(); ++c)
            if (s.marked(v, r, c)) values.push_back(m(r, c));
    return values;
}

double value(const Stepper& s, const std::string& name, Eigen::Index r, Eigen::Index c) {
    return s.matrix(view_named(s, name))(r, c);
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
    REQUIRE(a.size() == b.size());
    REQUIRE(!a.empty());
    double sum = 0;
    for (std::size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
    return sum;
}

// Enter on (row, col) of gradient `name`, and that cell recomputed as the dot product of the
// marked cells of views `a` and `b`.
void check_dot(Stepper& s, const std::string& name, Eigen::Index row, Eigen::Index col, const std::string& a,
               const std::string& b) {
    INFO(name << "[" << row << ", " << col << "] = " << a << " · " << b);
    follow(s, name, row, col);
    CHECK(dot(marked(s, a), marked(s, b)) == Approx(value(s, name, row, col)).epsilon(1e-12));
}

// How many cells of the views are marked, over every view.
std::size_t marks(const Stepper& s) {
    std::size_t count = 0;
    for (const auto& v : s.views()) {
        const Matrix& m = s.matrix(v);
        for (Eigen::Index r = 0; r < m.rows(); ++r)
            for (Eigen::Index c = 0; c < m.cols(); ++c) count += s.marked(v, r, c);
    }
    return count;
}

}  // namespace

TEST_CASE("step --backward: Enter on a gradient marks the cells its formula reads, which give its number", "[step]") {
    Stepper s = stepper_for("teacher_smiled", Mode::self, std::nullopt, "sum");
    const Eigen::Index n = 12, d = 4;
    // dA[i, j] = dZ[i, :]·V[j, :]
    follow(s, "d_weights", 2, 3);
    CHECK(s.view_name(s.view()) == "d_context");
    CHECK(marks(s) == 2 * d);
    CHECK(dot(marked(s, "d_context"), marked(s, "values")) == Approx(value(s, "d_weights", 2, 3)).epsilon(1e-12));
    CHECK_THAT(s.message(), Catch::StartsWith("computed from d_context and values (marked)"));
    // dS''[i, j] = A[i, j]·(dA[i, j] − Σ_k dA[i, k]·A[i, k])
    follow(s, "d_masked", 2, 3);
    CHECK(marks(s) == 2 * n);
    const auto a = marked(s, "weights"), da = marked(s, "d_weights");
    CHECK(a[3] * (da[3] - dot(da, a)) == Approx(value(s, "d_masked", 2, 3)).epsilon(1e-12));
    // dS = dS' / √d_k, the one cell it divides
    follow(s, "d_scores", 2, 3);
    CHECK(marks(s) == 1);
    CHECK(marked(s, "d_scaled")[0] / 2 == Approx(value(s, "d_scores", 2, 3)).epsilon(1e-12));
    // dQ[i, c] = dS[i, :]·K[:, c]; dK[j, c] = dS[:, j]·Q[:, c]; dV[j, c] = A[:, j]·dZ[:, c]
    check_dot(s, "d_queries", 2, 1, "d_scores", "keys");
    check_dot(s, "d_keys", 5, 1, "d_scores", "queries");
    check_dot(s, "d_values", 5, 2, "weights", "d_context");
    // dW_q[r, c] = X[:, r]·dQ[:, c]
    check_dot(s, "d_W_q", 2, 1, "inputs", "d_queries");
    // dX[i, c] = dQ[i, :]·W_q[c, :] + dK[i, :]·W_k[c, :] + dV[i, :]·W_v[c, :]
    follow(s, "d_inputs", 7, 2);
    CHECK(marks(s) == 6 * d);
    const double dx = dot(marked(s, "d_queries"), marked(s, "W_q")) + dot(marked(s, "d_keys"), marked(s, "W_k")) +
                      dot(marked(s, "d_values"), marked(s, "W_v"));
    CHECK(dx == Approx(value(s, "d_inputs", 7, 2)).epsilon(1e-12));
    // Backspace goes back to the gradient that was followed.
    s.press({stepper::Key::backspace, {}});
    CHECK(s.view_name(s.view()) == "d_inputs");
    // The loss's own derivative has nothing before it.
    follow(s, "d_context", 0, 0);
    CHECK(s.view_name(s.view()) == "d_context");
    CHECK(s.message() == "d_context is the loss's own derivative (L = Σ Z): nothing before it to follow");
}

TEST_CASE("step --backward: Enter follows a focus loss's gradient to its one weight, and several heads through W_o",
          "[step]") {
    Stepper focus = stepper_for("teacher_smiled", Mode::causal, std::nullopt, "smiled=teacher");
    follow(focus, "d_weights", 11, 1);
    CHECK(marks(focus) == 1);
    CHECK(-1 / marked(focus, "weights")[0] == Approx(value(focus, "d_weights", 11, 1)).epsilon(1e-12));
    follow(focus, "d_weights", 11, 2);
    CHECK(focus.message() == "d_weights is 0 here: the focus loss reads only the weight [smiled, teacher]");
    // Masked: dS'[i, j] = dS''[i, j], the one cell.
    follow(focus, "d_scaled", 11, 1);
    CHECK(marked(focus, "d_masked")[0] == value(focus, "d_scaled", 11, 1));

    Stepper heads = stepper_for("teacher_smiled", Mode::self, 2, "sum");
    // Head 2's dZ is its block of d(concat): columns 3 and 4 when each head is 2 wide.
    heads.press({stepper::Key::character, "H"});
    follow(heads, "d_context", 4, 1);  // the head on screen: 2
    CHECK(heads.view_name(heads.view()) == "d_concat");
    CHECK(heads.col() == 3);
    CHECK(marked(heads, "d_concat")[0] == value(heads, "d_context · head 2", 4, 1));
    // d(concat)[i, c] = dY[i, :]·W_o[c, :]; dW_o[r, c] = concat[:, r]·dY[:, c]
    check_dot(heads, "d_concat", 4, 1, "d_output", "W_o");
    check_dot(heads, "d_W_o", 2, 1, "concat", "d_output");
    // dW_q's column 4 is head 2's: column 2 of its dQ.
    check_dot(heads, "d_W_q", 0, 3, "inputs", "d_queries · head 2");
    // On head 1's screen, dX's paths through head 2 are said, not marked.
    heads.press({stepper::Key::character, "H"});
    follow(heads, "d_inputs", 0, 0);
    CHECK_THAT(heads.message(), Catch::Contains("and from head 2's stages, which a screen of head 1 does not show (H)"));
}

TEST_CASE("step --backward: with one head and a W_o, Enter on dL/dZ marks the row of dL/d(output) and the row of W_o",
          "[step]") {
    nlohmann::json input = nlohmann::json::parse(find_example("teacher_smiled")->json);
    const nlohmann::json w = {{0.2, 0.1, 0.0, 0.3}, {0.5, -0.4, 0.2, 0.1}, {0.0, 0.3, 0.6, -0.2}, {0.1, 0.1, -0.3, 0.4}};
    input["weights"] = {{"query", w}, {"key", w}, {"value", w}, {"output", {{1, 0}, {0, 1}, {1, 1}, {0.5, -0.5}}}};
    TraceOptions options;
    options.mode = Mode::self;
    Stepper s(load_problem(input.dump(), "with W_o"), options, "in.json", 4, LossText{});
    // dZ[i, c] = dY[i, :]·W_o[c, :]
    check_dot(s, "d_context", 2, 1, "d_output", "W_o");
    CHECK(s.view_name(s.view()) == "d_output");
    follow(s, "d_output", 0, 0);
    CHECK_THAT(s.message(), Catch::StartsWith("d_output is the loss's own derivative"));
}

TEST_CASE("step --backward: under RoPE, Enter on dL/dRoPE(Q) marks the row of dL/dS and a column of the turned keys",
          "[step]") {
    TraceOptions options;
    options.mode = Mode::causal;
    options.positions = PositionScheme::rope;
    Stepper s(load_problem(find_example("teacher_smiled")->json, "teacher_smiled"), options, "example:teacher_smiled", 4,
              LossText{});
    // dRoPE(Q)[i, c] = dS[i, :]·RoPE(K)[:, c]
    check_dot(s, "d_queries_rotated", 6, 2, "d_scores", "keys_rotated");
    // dQ's row is turned back from dRoPE(Q)'s row, pair by pair.
    follow(s, "d_queries", 6, 2);
    CHECK(marks(s) == 4);
    CHECK(s.view_name(s.view()) == "d_queries_rotated");
}

TEST_CASE("step gives the terminal back when an error leaves a session", "[step]") {
    const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
    REQUIRE(master >= 0);
    REQUIRE(::grantpt(master) == 0);
    REQUIRE(::unlockpt(master) == 0);
    const int terminal = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
    REQUIRE(terminal >= 0);
    termios before{};
    REQUIRE(::tcgetattr(terminal, &before) == 0);
    bool caught = false;
    try {
        stepper::RawTerminal raw(terminal, true);
        termios during{};
        ::tcgetattr(terminal, &during);
        CHECK((during.c_lflag & ECHO) == 0);  // raw while it lives
        throw std::runtime_error("an error in the middle of a session");
    } catch (const std::runtime_error&) {
        caught = true;
    }
    CHECK(caught);
    termios after{};
    REQUIRE(::tcgetattr(terminal, &after) == 0);
    CHECK(after.c_lflag == before.c_lflag);
    CHECK(after.c_iflag == before.c_iflag);
    CHECK(after.c_oflag == before.c_oflag);
    // The screen entered and left, the cursor shown again.
    char bytes[256];
    const ssize_t got = ::read(master, bytes, sizeof bytes);
    REQUIRE(got > 0);
    const std::string sent(bytes, static_cast<std::size_t>(got));
    CHECK(sent == "\x1b[?1049h\x1b[?25l\x1b[0m\x1b[?25h\x1b[?1049l");
    // The handlers are the default ones again.
    struct sigaction now {};
    sigaction(SIGTERM, nullptr, &now);
    CHECK(now.sa_handler == SIG_DFL);
    ::close(terminal);
    ::close(master);
    // Not a terminal: refused before anything changes.
    CHECK_THROWS_WITH(stepper::RawTerminal(-1, true), Catch::StartsWith("cannot set up the terminal"));
}

TEST_CASE("a printed command quotes every name so that a shell reads it back as it was", "[step]") {
    CHECK(shell_word("example:teacher_smiled") == "example:teacher_smiled");
    CHECK(shell_word("my file.json") == "'my file.json'");
    CHECK(shell_word("it's.json") == "'it'\\''s.json'");
    CHECK(shell_word("") == "''");
    CHECK(shell_word("a\nb\x1b[2J") == "$'a\\x0ab\\x1b[2J'");
    // bash's own reading of each word gives its bytes back.
    for (const std::string word : {"my file.json", "it's.json", "a\nb\x1b[2J", "back\\slash'", "$HOME `x`", "", "*"}) {
        INFO(word);
        FILE* pipe = ::popen(("exec bash -c " + shell_word("printf %s " + shell_word(word))).c_str(), "r");
        REQUIRE(pipe);
        std::string out;
        char buffer[512];
        while (const std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
        CHECK(::pclose(pipe) == 0);
        CHECK(out == word);
    }
}
