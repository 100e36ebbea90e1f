// attntrace step: the frames a script of keys gives (--keys), each recomputed against the
// trace's own JSON, -q's arithmetic and a trace of the edited input; the command key's command
// run; the refusals; and the real program in tmux at two sizes, resized, interrupted, and the
// terminal as it was before.
#include "support/cli.hpp"
#include "support/error_line.hpp"
#include "util/utf8.hpp"

#include "support/catch.hpp"
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using nlohmann::json;

// The frames of `attntrace step ARGS --keys SCRIPT`: each without its "── frame" line.
std::vector<std::vector<std::string>> frames_of(const std::string& out) {
    std::vector<std::vector<std::string>> frames;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line)) {
        if (line.starts_with("── frame ")) frames.emplace_back();
        else if (!frames.empty()) frames.back().push_back(line);
    }
    return frames;
}

cli::Result step(const cli::TempDir& dir, const std::string& keys, std::vector<std::string> args) {
    {
        std::ofstream(dir / "keys.txt") << keys;
    }
    args.insert(args.begin(), "step");
    args.insert(args.end(), {"--keys", dir / "keys.txt"});
    return cli::run(args);
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

json trace_json(std::vector<std::string> args) {
    args.insert(args.end(), {"-f", "json"});
    const auto r = cli::run(args);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return json::parse(r.out);
}

double stage_value(const json& trace, const std::string& name, std::size_t row, std::size_t col) {
    for (const auto& s : trace["stages"])
        if (s["name"] == name) return s["data"][row][col].get<double>();
    FAIL("no stage " << name);
    return 0;
}

// The number after "= " at the end of the pane's first line ("… [teacher, who] = -0.1840").
std::string cell_value(const std::string& plain_line) {
    const std::size_t bracket = plain_line.find("] = ");
    REQUIRE(bracket != std::string::npos);
    return plain_line.substr(bracket + 4, plain_line.find(' ', bracket + 4) - bracket - 4);
}

}  // namespace

TEST_CASE("step --keys: every frame is the size asked, the stages in order, the cursor's cell the trace's number",
          "[step]") {
    cli::TempDir dir;
    for (const auto& [size, width, height] : {std::tuple{"80x24", 80u, 24u}, std::tuple{"120x40", 120u, 40u}}) {
        INFO(size);
        const auto r = step(dir, "n n n n n n n j l", {"example:teacher_smiled", "-m", "self", "--size", size});
        REQUIRE(r.exit_code == 0);
        const auto frames = frames_of(r.out);
        REQUIRE(frames.size() == 10);
        for (const auto& frame : frames) {
            CHECK(frame.size() == height);
            for (const auto& line : frame) CHECK(attntrace::display_width(line) <= width);
        }
        CHECK_THAT(frames[7][1], Catch::Contains("[scores]"));
        CHECK_THAT(frames[0][1], Catch::StartsWith("[inputs] W_q W_k W_v queries keys values scores"));
        CHECK_THAT(frames.back().back(), Catch::StartsWith("self · scaled by √d_k = 2 · T 1 · no window"));
    }
    // The cursor on scores [teacher, who]: the trace's number, and -q's own arithmetic line for it.
    const auto plain = lines_of(step(dir, "n n n n n n n j l l", {"example:teacher_smiled", "-m", "self", "--plain"}).out);
    REQUIRE(plain.size() == 11);
    const json trace = trace_json({"example:teacher_smiled", "-m", "self"});
    CHECK(cell_value(plain.back()) == fmt::format("{:.4f}", stage_value(trace, "scores", 1, 2)));
    const auto worked = cli::run({"example:teacher_smiled", "-m", "self", "-q", "teacher", "-s", "scores"});
    std::string dot;
    for (const auto& line : lines_of(worked.out))
        if (line.find("teacher·who ") != std::string::npos) dot = line.substr(line.find("= ") + 2);  // its products
    REQUIRE_FALSE(dot.empty());
    CHECK_THAT(plain.back(), Catch::Contains("teacher·who = " + dot));
}

TEST_CASE("step: Enter follows a cell to its sources, marked in their stages, and Backspace goes back", "[step]") {
    cli::TempDir dir;
    const auto r = step(dir, "n n n n n n n j l Enter", {"example:teacher_smiled", "-m", "self"});
    REQUIRE(r.exit_code == 0);
    const auto frames = frames_of(r.out);
    const auto& followed = frames.back();
    CHECK_THAT(followed[1], Catch::Contains("[queries]"));
    CHECK_THAT(followed[followed.size() - 2], Catch::StartsWith("computed from queries and keys (marked)"));
    // Row "teacher" of the queries: the cursor on its first entry, the rest marked.
    std::string row;
    for (const auto& line : followed)
        if (line.starts_with("teacher ") && line.find('[') != std::string::npos) row = line;
    CHECK_THAT(row, Catch::Contains("[") && Catch::Contains("{"));
    CHECK(std::count(row.begin(), row.end(), '{') == 3);
    // Enter on a weight marks its row of masked scores; on a context entry, a row of weights.
    const auto back = step(dir, "n n n n n n n j l Enter Backspace", {"example:teacher_smiled", "-m", "self"});
    const auto last = frames_of(back.out).back();
    CHECK_THAT(last[1], Catch::Contains("[scores]"));
    CHECK_THAT(last[2], Catch::StartsWith("scores"));
}

TEST_CASE("step: m, s and t change the run, and each screen is the trace of the command c prints", "[step]") {
    cli::TempDir dir;
    // Mode causal (m from self), no scaling (s), temperature 0.5 (t), on the weights [teacher, The].
    const auto plain = lines_of(
        step(dir, "m s t n n n n n n n n n n j c", {"example:teacher_smiled", "-m", "self", "--plain"}).out);
    REQUIRE(plain.size() == 16);
    const std::string& last = plain.back();
    CHECK_THAT(last, Catch::StartsWith("weights · 12×12"));
    const std::string marker = " · attntrace ";
    REQUIRE(last.find(marker) != std::string::npos);
    const std::string command = last.substr(last.find(marker) + marker.size() - std::string("attntrace ").size());
    CHECK(command == "attntrace example:teacher_smiled -m causal --scale none --temperature 0.5 -q 2");
    const json trace = trace_json({"example:teacher_smiled", "-m", "causal", "--scale", "none", "--temperature", "0.5"});
    CHECK(cell_value(last) == fmt::format("{:.4f}", stage_value(trace, "weights", 1, 0)));
    // The causal mask in the masked stage: −∞ above the diagonal.
    const auto frames = frames_of(step(dir, "m n n n n n n n n n j l l", {"example:teacher_smiled", "-m", "self"}).out);
    std::string row;
    for (const auto& line : frames.back())
        if (line.starts_with("teacher ") && line.find('[') != std::string::npos) row = line;
    CHECK_THAT(row, Catch::Contains("−∞]"));
}

TEST_CASE("step: e edits an input number, every stage is traced again as the edited input's, and u undoes it",
          "[step]") {
    cli::TempDir dir;
    const std::string input = R"({"tokens": ["a", "b", "c"], "embeddings": [[1, 0, 0.5], [0, 1, 0.25], [0.5, 0.5, 1]]})";
    std::ofstream(dir / "in.json") << input;
    std::ofstream(dir / "edited.json") << R"({"tokens": ["a", "b", "c"], "embeddings": [[1, 0, 0.5], [0, 1, 2.5], [0.5, 0.5, 1]]})";
    // inputs [b, x3] = 2.5, then to the context [c, z2] (Tab 10 times: the views of a self run).
    const auto plain = lines_of(step(dir, "j l l e \"2.5\" Enter Tab Tab Tab Tab Tab Tab Tab Tab Tab Tab Tab j",
                                     {dir / "in.json", "-m", "self", "--plain"})
                                    .out);
    const std::string& last = plain.back();
    CHECK_THAT(last, Catch::StartsWith("context · 3×3"));
    const json edited = trace_json({dir / "edited.json", "-m", "self"});
    CHECK(cell_value(last) == fmt::format("{:.4f}", stage_value(edited, "context", 2, 2)));
    const json before = trace_json({dir / "in.json", "-m", "self"});
    CHECK(stage_value(before, "context", 2, 2) != stage_value(edited, "context", 2, 2));
    // A weight edited: the generated W_q becomes the input's, with that entry changed.
    json weights = json::parse(input);
    for (const auto& [name, field] : {std::pair{"W_q", "query"}, std::pair{"W_k", "key"}, std::pair{"W_v", "value"}})
        weights["weights"][field] = before["parameters"][name];
    weights["weights"]["query"][0][1] = 0.75;
    std::ofstream(dir / "weights.json") << weights.dump();
    const auto w = lines_of(step(dir, "Tab l e \"0.75\" Enter Tab Tab Tab Tab Tab Tab Tab Tab Tab Tab", {dir / "in.json", "-m", "self", "--plain"}).out);
    CHECK_THAT(w.back(), Catch::StartsWith("context · 3×3"));
    CHECK(cell_value(w.back()) == fmt::format("{:.4f}", stage_value(trace_json({dir / "weights.json", "-m", "self"}), "context", 0, 1)));
    // u: the frame before the edit again, and the command back.
    const auto frames = frames_of(step(dir, "j e \"9\" Enter u", {dir / "in.json", "-m", "self"}).out);
    REQUIRE(frames.size() == 6);
    auto without_message = [](std::vector<std::string> f) { return f.erase(f.end() - 2), f; };
    CHECK(without_message(frames[5]) == without_message(frames[1]));
    CHECK_THAT(frames[4][frames[4].size() - 2], Catch::StartsWith("x[2, 1] = 9: every stage traced again"));
    CHECK_THAT(frames[4].back(), Catch::Contains("1 edit"));
}

TEST_CASE("step refuses what it cannot do with one error line", "[step]") {
    cli::TempDir dir;
    cli::require_error_line(cli::run({"step"}), 2, "attntrace step draws on a terminal, and its output is not one");
    cli::require_error_line(step(dir, "j Upp", {}), 2, "--keys: \"Upp\" is not a key");
    cli::require_error_line(step(dir, "j", {"--size", "80"}), 2, "--size \"80\": give COLUMNSxROWS");
    cli::require_error_line(step(dir, "j", {"-f", "json"}), 2, "attntrace step draws a screen, not -f json");
    cli::require_error_line(cli::run({"step", "--size", "80x24"}), 2, "--size sizes the frames --keys writes");
    // A change the run refuses leaves the run as it was and says why.
    const auto frames = frames_of(step(dir, "w \"x\" Enter", {"example:teacher_smiled", "-m", "self"}).out);
    CHECK(frames.back()[frames.back().size() - 2] == "\"x\" is not a number: nothing changed");
}

namespace {

// A tmux server of the test's own (its own socket, no configuration read). Each server gets a socket of its own
// name: a server whose last session ended may still be shutting down on its socket, and a new session asked of it
// then fails (CI's new-session failed once after a kill-session on the one socket).
class Tmux {
public:
    Tmux(const cli::TempDir& dir, const std::string& name) : socket_(dir / ("tmux_" + name + ".sock")) {}
    ~Tmux() { (void)run({"kill-server"}); }
    Tmux(const Tmux&) = delete;
    Tmux& operator=(const Tmux&) = delete;
    cli::Result run(std::vector<std::string> words) const {
        words.insert(words.begin(), {"tmux", "-S", socket_, "-f", "/dev/null"});
        return cli::run_program(words);
    }
    std::vector<std::string> screen() const { return lines_of(run({"capture-pane", "-p", "-t", "t"}).out); }
    // Waits (up to 10 s) until the screen holds `text`; returns the screen then.
    std::vector<std::string> wait_for(const std::string& text) const {
        for (int i = 0; i < 200; ++i) {
            const auto lines = screen();
            for (const auto& line : lines)
                if (line.find(text) != std::string::npos) return lines;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        FAIL("the screen never showed " << text);
        return {};
    }

private:
    std::string socket_;
};

bool wait_for_file(const std::string& path) {
    for (int i = 0; i < 200; ++i) {
        if (!cli::read_file(path).empty()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
}

}  // namespace

TEST_CASE("step in a real terminal (tmux): the frames of --keys at two sizes, a resize followed, the terminal given back",
          "[step][tmux]") {
    cli::TempDir dir;
    for (const std::string way : {"C-c", "q", "SIGTERM", "SIGHUP"}) {
        INFO(way);
        const Tmux tmux(dir, way);
        const std::string rc = dir / ("rc_" + way), before = dir / ("before_" + way), after = dir / ("after_" + way);
        const bool signalled = way.starts_with("SIG");
        const std::string seed = signalled ? "4242" : "123";  // the run a signal finds by its arguments
        const std::string shell = fmt::format("stty -a > {}; {} step example:teacher_smiled -m self --seed {}; echo $? > {}; "
                                              "stty -a > {}; sleep 600",
                                              before, ATTNTRACE_BINARY, seed, rc, after);
        const auto started = tmux.run({"new-session", "-d", "-s", "t", "-x", "80", "-y", "24", shell});
        INFO(started.err);
        REQUIRE(started.exit_code == 0);
        (void)tmux.run({"set-option", "-g", "window-size", "manual"});
        tmux.wait_for("attntrace step ·");
        for (const char* key : {"n", "n", "n", "n", "n", "n", "n", "j", "l", "l"}) (void)tmux.run({"send-keys", "-t", "t", key});
        auto shown = tmux.wait_for("[teacher, who]");
        if (way == "C-c") {
            const auto frames = frames_of(step(dir, "n n n n n n n j l l", {"example:teacher_smiled", "-m", "self"}).out);
            CHECK(shown == frames.back());
            REQUIRE(tmux.run({"resize-window", "-t", "t", "-x", "100", "-y", "30"}).exit_code == 0);
            std::vector<std::string> wide;
            for (int i = 0; i < 100 && wide.size() != 30; ++i) {
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
                wide = tmux.screen();
            }
            const auto big = frames_of(step(dir, "n n n n n n n j l l", {"example:teacher_smiled", "-m", "self", "--size", "100x30"}).out);
            for (int i = 0; i < 100 && wide != big.back(); ++i) {
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
                wide = tmux.screen();
            }
            CHECK(wide == big.back());
        }
        if (signalled) {
            // Anchored at the program's path, so that the shell running it (whose line holds the same words) is spared.
            REQUIRE(cli::run_program({"pkill", way == "SIGTERM" ? "-TERM" : "-HUP", "-f", fmt::format("^{} step example:teacher_smiled -m self --seed 4242",
                                                                          ATTNTRACE_BINARY)})
                        .exit_code == 0);
        } else {
            (void)tmux.run({"send-keys", "-t", "t", way});
        }
        REQUIRE(wait_for_file(rc));
        REQUIRE(wait_for_file(after));
        CHECK(cli::read_file(rc) == (way == "q" ? "0\n" : way == "C-c" ? "130\n" : way == "SIGTERM" ? "143\n" : "129\n"));
        // The same settings; the first line gives the size, which the resize changed.
        const auto settings = [](const std::string& stty) { return stty.substr(stty.find('\n')); };
        CHECK(settings(cli::read_file(after)) == settings(cli::read_file(before)));
        CHECK_THAT(cli::read_file(after), Catch::Contains(" icanon ") && Catch::Contains(" echo "));
        if (!signalled) tmux.wait_for("the run on screen: attntrace example:teacher_smiled -m self -q 2");
    }
}

TEST_CASE("step --backward: the gradients follow the forward stages, each the backward pass's number, traced again "
          "with every change",
          "[step]") {
    cli::TempDir dir;
    const std::vector<std::string> args{"example:teacher_smiled", "-m", "self", "--backward", "focus:smiled=teacher",
                                        "--stage", "d_masked", "-q", "smiled", "--plain"};
    auto with = args;
    const auto plain = lines_of(step(dir, "l", with).out);
    REQUIRE(plain.size() == 2);
    CHECK_THAT(plain.back(), Catch::StartsWith("d_masked · 12×12 · dS'' = A ⊙ (dA − rowsum(dA ⊙ A))"));
    const json trace = trace_json({"example:teacher_smiled", "-m", "self", "--backward", "focus:smiled=teacher"});
    CHECK(cell_value(plain.back()) == fmt::format("{:.4f}", trace["gradients"]["masked"]["data"][11][1].get<double>()));
    // The loss in the status line; T doubled traces both passes again.
    const auto frames = frames_of(step(dir, "l T", {"example:teacher_smiled", "-m", "self", "--backward",
                                                    "focus:smiled=teacher", "--stage", "d_masked", "-q", "smiled"})
                                      .out);
    CHECK_THAT(frames[1].back(), Catch::Contains(fmt::format("L = {:.4f}", trace["loss"]["value"].get<double>())));
    const json hotter = trace_json({"example:teacher_smiled", "-m", "self", "--temperature", "2", "--backward",
                                    "focus:smiled=teacher"});
    CHECK_THAT(frames[2].back(), Catch::Contains(fmt::format("L = {:.4f}", hotter["loss"]["value"].get<double>())));
    CHECK(hotter["loss"]["value"] != trace["loss"]["value"]);
    cli::require_error_line(step(dir, "j", {"--backward", "nonsense"}), 2, "--backward");
}

TEST_CASE("step keeps the columns aligned under tokens of any width, and scrolls a matrix wider than the screen",
          "[step]") {
    cli::TempDir dir;
    std::ofstream(dir / "wide.json") << R"({"tokens": ["naïve", "日本語", "x", "über", "ß", "中", "emoji😀", "z", "y", "w", "v"],
        "embeddings": [[1, 0], [0, 1], [1, 1], [0.5, 0], [0, 0.5], [1, 0.5], [0.5, 1], [0.2, 0.3], [0.3, 0.2], [0.1, 0.9], [0.9, 0.1]]})";
    const auto frames = frames_of(step(dir, "n n n n n n n n n n", {dir / "wide.json", "--stage", "weights"}).out);
    REQUIRE_FALSE(frames.empty());
    const auto& frame = frames.front();
    // The matrix lines: the column labels, then a row per token shown; every one as wide as the first full row.
    std::vector<std::size_t> widths;
    for (std::size_t i = 4; i < 4 + 10 && i < frame.size(); ++i) widths.push_back(attntrace::display_width(frame[i]));
    REQUIRE(widths.size() == 10);
    for (const std::size_t w : widths) CHECK(w == widths.front());
    CHECK_THAT(frame[2], Catch::Contains("columns 1–"));
    CHECK_THAT(frame[2], Catch::Contains(" of 11"));
    // The cursor moved right past the screen's edge: the columns scroll to keep it in sight.
    const auto moved = frames_of(step(dir, "l l l l l l l l l l", {dir / "wide.json", "--stage", "weights"}).out).back();
    CHECK_THAT(moved[2], Catch::EndsWith("rows 1–10 of 11, columns 5–11 of 11"));
    bool cursor = false;
    for (const auto& line : moved) cursor = cursor || line.find('[') != std::string::npos;
    CHECK(cursor);
}

TEST_CASE("step H moves to the same stage of the next head, each head's weights the trace's", "[step]") {
    cli::TempDir dir;
    const auto plain = lines_of(step(dir, "j H H", {"example:teacher_smiled", "-m", "self", "--heads", "2", "--stage",
                                                    "weights", "--plain"})
                                    .out);
    REQUIRE(plain.size() == 4);
    const json trace = trace_json({"example:teacher_smiled", "-m", "self", "--heads", "2"});
    std::vector<double> heads;
    for (const auto& s : trace["stages"])
        if (s["name"] == "weights") heads.push_back(s["data"][1][0].get<double>());
    REQUIRE(heads.size() == 2);
    CHECK_THAT(plain[1], Catch::StartsWith("weights · head 1 · 12×12"));
    CHECK(cell_value(plain[1]) == fmt::format("{:.4f}", heads[0]));
    CHECK_THAT(plain[2], Catch::StartsWith("weights · head 2 · 12×12"));
    CHECK_THAT(plain[2], Catch::EndsWith("head 2 of 2"));
    CHECK(cell_value(plain[2]) == fmt::format("{:.4f}", heads[1]));
    CHECK_THAT(plain[3], Catch::StartsWith("weights · head 1 · 12×12"));
    const auto one = lines_of(step(dir, "H", {"example:teacher_smiled", "-m", "self", "--plain"}).out);
    CHECK_THAT(one.back(), Catch::EndsWith("this run has one head (--heads 2 or more gives several)"));
}

TEST_CASE("step x writes the edited input, and c's command then traces the run on screen", "[step]") {
    cli::TempDir dir;
    const std::string file = dir / "edited.json";
    const auto plain = lines_of(step(dir, fmt::format("j e \"2.5\" Enter c x \"{}\" Enter n n n n n n n n n n c", file),
                                     {"example:your_journey", "-m", "self", "--dim", "2", "--seed", "9", "--plain"})
                                    .out);
    // A line at the start and one per key: j, e, 3 characters, Enter, c, x, the file's name, Enter, 10 n, c.
    REQUIRE(plain.size() == 21 + file.size());
    CHECK_THAT(plain[6], Catch::EndsWith("· x[2, 1] = 2.5: every stage traced again"));
    CHECK_THAT(plain[7], Catch::EndsWith("no command repeats edits: x writes the edited input to a file"));
    CHECK_THAT(plain[9 + file.size()], Catch::Contains("the edited input written to " + file));
    const std::string& last = plain.back();
    CHECK_THAT(last, Catch::StartsWith("weights · 6×6"));
    const std::string command = last.substr(last.rfind(" · attntrace ") + std::string(" · ").size());
    CHECK(command == "attntrace " + file + " -m self --seed 9 --dim 2 -q 2");
    const json traced = trace_json({file, "-m", "self", "--seed", "9", "--dim", "2"});
    CHECK(cell_value(last) == fmt::format("{:.4f}", stage_value(traced, "weights", 1, 0)));
    const json original = trace_json({"example:your_journey", "-m", "self", "--seed", "9", "--dim", "2"});
    CHECK(stage_value(original, "weights", 1, 0) != stage_value(traced, "weights", 1, 0));
    CHECK(json::parse(cli::read_file(file))["embeddings"][1][0] == 2.5);
    CHECK(dir.names() == std::vector<std::string>{"edited.json", "keys.txt"});  // no temporary left beside it
}

TEST_CASE("step: c's command traces the very numbers on screen, whatever options the run began with", "[step]") {
    cli::TempDir dir;
    const std::vector<std::vector<std::string>> runs{
        {"example:teacher_smiled", "-m", "causal", "--window", "3"},
        {"example:teacher_smiled", "-m", "self", "--positions", "rope", "--dim", "4"},
        {"example:teacher_smiled", "-m", "self", "--positions", "sinusoidal", "--position-offset", "5"},
        {"example:teacher_smiled", "-m", "self", "--heads", "2", "--kv-heads", "1", "--seed", "5"},
        {"example:your_journey", "--normalize", "sum", "--window", "2"},
        {"example:teacher_smiled", "-m", "causal", "--mask-fill", "-5"},
        {"example:teacher_smiled", "-m", "self", "--temperature", "0.25", "--scale", "3"},
        {"example:two_heads", "-m", "self", "--seed", "9"},
        {"example:black_cat_fr", "--score", "general"},
        {"example:teacher_smiled", "-m", "self", "--backward", "focus:smiled=teacher"},
    };
    for (auto args : runs) {
        INFO(fmt::format("{}", fmt::join(args, " ")));
        auto stepped = args;
        stepped.insert(stepped.end(), {"--stage", "weights", "-q", "2", "--plain"});
        const auto lines = lines_of(step(dir, "l c", stepped).out);
        REQUIRE(lines.size() == 3);
        const std::string& last = lines.back();
        REQUIRE(last.rfind(" · attntrace ") != std::string::npos);
        const std::string command = last.substr(last.rfind(" · attntrace ") + std::string(" · attntrace ").size());
        std::vector<std::string> words;
        std::istringstream in(command);
        for (std::string w; in >> w;) words.push_back(w);
        const json traced = trace_json(words);
        CHECK(cell_value(last) == fmt::format("{:.4f}", stage_value(traced, "weights", 1, 1)));
    }
}
