// The HTML page (--format html, --html FILE) in a real browser: Debian's headless Chromium
// loads each page from disk, and the DOM after its script has run is read back. Every number of
// every table is checked against the JSON trace (formatted here as the tables format it), the
// arithmetic of several cells against -q's own lines, the cells a cell came from against the
// formula, the console for any message and Chromium's network log for any request.
#include "support/cli.hpp"

#include "support/catch.hpp"
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

using nlohmann::json;

namespace {

const char* const chromium = "/usr/bin/chromium-headless-shell";

struct Loaded {
    std::string dom;      // the document after its script ran
    std::string console;  // what the page wrote to its console (and any uncaught error)
    std::string requests; // the URLs of the network log
};

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// The page at `path` (with `hash`, e.g. "#cell=3,1,2") as Chromium leaves it.
Loaded load(const cli::TempDir& dir, const std::string& path, const std::string& hash = "") {
    const std::string log = dir / "net.json";
    const auto r = cli::run_program({chromium, "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
                                     "--log-net-log=" + log, "--dump-dom", "file://" + path + hash});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    Loaded page{r.out, "", ""};
    std::istringstream err(r.err);
    for (std::string line; std::getline(err, line);)
        if (line.find(":CONSOLE") != std::string::npos) page.console += line + "\n";
    const std::string net = read_file(log);
    const std::regex url("\"url\":\"([^\"]*)\"");
    for (auto it = std::sregex_iterator(net.begin(), net.end(), url); it != std::sregex_iterator(); ++it)
        page.requests += (*it)[1].str() + "\n";
    return page;
}

// Text as the tables write a number: 4 decimals, no minus sign on a zero, -inf for −∞.
std::string fixed(const json& value) {
    if (value.is_null()) return "-inf";
    std::string text = fmt::format("{:.4f}", value.get<double>());
    if (text == "-0.0000") text = "0.0000";
    return text;
}

std::string unescape(std::string text) {
    for (const auto& [from, to] : {std::pair{"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#39;", "'"}, {"&amp;", "&"}}) {
        for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + 1)) text.replace(at, std::strlen(from), to);
    }
    return text;
}

// A table of the page: its heading and its cells' text by (row, col).
struct Table {
    std::string heading;
    std::map<std::pair<int, int>, std::string> cells;
    std::vector<std::pair<int, int>> outlined, current;
};

std::map<int, Table> tables_of(const std::string& dom) {
    std::map<int, Table> tables;
    const std::regex section(R"re(<section class="matrix" data-matrix="(\d+)"[^>]*><h2[^>]*>([^<]*)</h2>)re");
    for (auto it = std::sregex_iterator(dom.begin(), dom.end(), section); it != std::sregex_iterator(); ++it)
        tables[std::stoi((*it)[1])].heading = unescape((*it)[2]);
    // Found by hand, not by std::regex, whose recursion a table of a thousand cells overflows.
    const std::string open = "<table class=\"heat\" data-matrix=\"";
    for (std::size_t at = dom.find(open); at != std::string::npos; at = dom.find(open, at + 1)) {
        Table& t = tables[std::stoi(dom.substr(at + open.size()))];
        const std::size_t end = dom.find("</table>", at);
        for (std::size_t td = dom.find("<td ", at); td < end; td = dom.find("<td ", td + 1)) {
            const std::size_t close = dom.find('>', td), after = dom.find("</td>", close);
            const std::string attributes = dom.substr(td, close - td);
            const auto number = [&](const std::string& name) {
                return std::stoi(attributes.substr(attributes.find(name + "=\"") + name.size() + 2));
            };
            const std::pair<int, int> cell_at{number("data-r"), number("data-c")};
            t.cells[cell_at] = unescape(dom.substr(close + 1, after - close - 1));
            if (attributes.find("from") != std::string::npos) t.outlined.push_back(cell_at);
            if (attributes.find("current") != std::string::npos) t.current.push_back(cell_at);
        }
    }
    return tables;
}

// The JSON trace's matrix that a heading names: "weights · head 2 · 12×12 · …", "W_q · …", "d_scores · …".
const json* matrix_of(const json& trace, const std::string& heading) {
    std::vector<std::string> parts;
    const std::string dot = " · ";
    for (std::size_t at = 0, next; at != std::string::npos; at = next == std::string::npos ? next : next + dot.size()) {
        next = heading.find(dot, at);
        parts.push_back(heading.substr(at, next == std::string::npos ? next : next - at));
    }
    const std::string name = parts[0];
    const int head = parts.size() > 1 && parts[1].starts_with("head ") ? std::stoi(parts[1].substr(5)) : 0;
    if (name.starts_with("d_")) {
        const json& g = trace["gradients"][name.substr(2)];
        if (g.is_array())
            for (const auto& h : g)
                if (h["head"] == head) return &h["data"];
        return &g["data"];
    }
    if (trace.contains("parameters") && trace["parameters"].contains(name)) return &trace["parameters"][name];
    for (const auto& s : trace["stages"])
        if (s["name"] == name && (head == 0 || s.value("head", 0) == head)) return &s["data"];
    return nullptr;
}

std::string write_page(const cli::TempDir& dir, std::vector<std::string> args, const std::string& name = "page.html") {
    const std::string path = dir / name;
    args.insert(args.end(), {"-f", "html", "-o", path});
    const auto r = cli::run(args);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return path;
}

json trace_json(std::vector<std::string> args) {
    args.insert(args.end(), {"-f", "json"});
    const auto r = cli::run(args);
    REQUIRE(r.exit_code == 0);
    return json::parse(r.out);
}

int index_of(const std::map<int, Table>& tables, const std::string& heading_start) {
    for (const auto& [i, t] : tables)
        if (t.heading.starts_with(heading_start)) return i;
    FAIL("no table " << heading_start);
    return -1;
}

}  // namespace

TEST_CASE("the page in Chromium: every number of every table is the JSON trace's, with no console message and no request",
          "[page]") {
    const cli::TempDir dir;
    const std::vector<std::vector<std::string>> runs{
        {"example:teacher_smiled", "-m", "plain"},
        {"example:teacher_smiled", "-m", "self"},
        {"example:teacher_smiled", "-m", "causal", "--window", "3"},
        {"example:teacher_smiled_fr", "-m", "bahdanau"},
        {"example:teacher_smiled_fr", "-m", "bahdanau", "--score", "dot"},
        {"example:two_heads"},
        {"example:teacher_smiled", "-m", "self", "--heads", "2", "--dim", "4", "--backward", "sum"},
        {"example:teacher_smiled", "-m", "causal", "--positions", "rope", "--backward", "focus:smiled=teacher"}};
    for (const auto& args : runs) {
        INFO(fmt::format("{}", fmt::join(args, " ")));
        const std::string path = write_page(dir, args);
        const std::string source = read_file(path);
        // Nothing that could reach the network is in the file at all.
        for (const char* word : {"http:", "https:", "src=", "href=", "url(", "@import", "<link"})
            CHECK(source.find(word) == std::string::npos);
        const Loaded page = load(dir, path);
        CHECK(page.console.empty());
        CHECK(page.requests.empty());
        const json trace = trace_json(args);
        const auto tables = tables_of(page.dom);
        REQUIRE(tables.size() >= 6);
        std::size_t numbers = 0;
        for (const auto& [i, t] : tables) {
            INFO(t.heading);
            const json* data = matrix_of(trace, t.heading);
            REQUIRE(data != nullptr);
            const bool vector = !(*data)[0].is_array();  // v_a
            const std::size_t rows = vector ? 1 : data->size(), cols = vector ? data->size() : (*data)[0].size();
            CHECK(t.cells.size() == rows * cols);  // every cell, each once (the tables here fit a page)
            for (const auto& [at, text] : t.cells) {
                const json& value = vector ? (*data)[at.second] : (*data)[at.first][at.second];
                CHECK(text == fixed(value));
                ++numbers;
            }
        }
        CHECK(numbers > 100);
    }
    // The check can fail: a page that asks for something is logged.
    {
        std::ofstream(dir / "probe.html") << "<!doctype html><img src=\"http://127.0.0.1:9/x.png\"><script>console.log(1)</script>";
    }
    const Loaded probe = load(dir, dir / "probe.html");
    CHECK_THAT(probe.requests, Catch::StartsWith("http://127.0.0.1:9/x.png\n"));
    CHECK_FALSE(probe.console.empty());
}

TEST_CASE("the page in Chromium: a focused cell shows -q's arithmetic and outlines the cells it came from", "[page]") {
    const cli::TempDir dir;
    const std::vector<std::string> args{"example:teacher_smiled", "-m", "self"};
    const std::string path = write_page(dir, args);
    const auto tables = tables_of(load(dir, path).dom);
    const std::string worked = cli::run({"example:teacher_smiled", "-m", "self", "-q", "smiled"}).out;
    // -q aligns a row's lines in columns; the pane has one cell's lines, each with single spaces.
    const auto squeezed = [](const std::string& text) {
        std::string out;
        for (const char c : text)
            if (!(c == ' ' && !out.empty() && out.back() == ' ')) out += c;
        return out;
    };
    const std::string q_lines = squeezed(worked);
    const auto same_lines = [&](const std::string& work) {
        std::istringstream lines(work);
        std::size_t checked = 0;
        for (std::string line; std::getline(lines, line);) {
            if (line.ends_with(", entry by entry")) continue;  // the pane's heading: which cell it is
            CHECK_THAT(q_lines, Catch::Contains(squeezed(line)));
            ++checked;
        }
        CHECK(checked > 0);
    };
    const auto pane_of = [&](const std::string& dom) {
        const std::regex pre(R"re(<pre class="work">([^<]*)</pre>)re");
        std::smatch m;
        return std::regex_search(dom, m, pre) ? unescape(m[1]) : std::string();
    };
    // scores[smiled, teacher]: its dot product; the query row of smiled and the key row of teacher.
    const int scores = index_of(tables, "scores · "), queries = index_of(tables, "queries · "), keys = index_of(tables, "keys · ");
    const Loaded at_score = load(dir, path, fmt::format("#cell={},11,1", scores));
    CHECK(at_score.console.empty());
    const std::string score_work = pane_of(at_score.dom);
    REQUIRE_FALSE(score_work.empty());
    same_lines(score_work);
    CHECK_THAT(score_work, Catch::Contains("smiled·teacher = "));
    const auto after = tables_of(at_score.dom);
    CHECK(after.at(scores).current == std::vector<std::pair<int, int>>{{11, 1}});
    CHECK(after.at(queries).outlined == std::vector<std::pair<int, int>>{{11, 0}, {11, 1}, {11, 2}, {11, 3}});
    CHECK(after.at(keys).outlined == std::vector<std::pair<int, int>>{{1, 0}, {1, 1}, {1, 2}, {1, 3}});
    // weights[smiled, teacher]: the row's softmax, and the row of scaled scores it read.
    const int weights = index_of(tables, "weights · "), masked = index_of(tables, "masked · ");
    const Loaded at_weight = load(dir, path, fmt::format("#cell={},11,1", weights));
    const std::string weight_work = pane_of(at_weight.dom);
    REQUIRE_FALSE(weight_work.empty());
    same_lines(weight_work);
    CHECK(tables_of(at_weight.dom).at(masked).outlined.size() == 12);  // its whole row (masked, skipped here, is scaled)
    // context[smiled, 2]: the row of weights and the column of values.
    const int context = index_of(tables, "context · "), values = index_of(tables, "values · ");
    const Loaded at_context = load(dir, path, fmt::format("#cell={},11,1", context));
    const auto marks = tables_of(at_context.dom);
    CHECK(marks.at(weights).outlined.size() == 12);
    CHECK(marks.at(values).outlined.size() == 12);
    for (const auto& [r, c] : marks.at(values).outlined) CHECK(c == 1);
    // -q writes the context as a sum of weighted vectors ("+ 0.0789×[-0.1589, 0.0901, …]"); the
    // cell's pane has entry 2 of each: the same weight times the vector's second number.
    std::vector<std::string> products;
    const std::regex term(R"re((?:z_smiled =|\+) ([-0-9.]+)×\[([^,\]]+), ([^,\]]+),)re");
    for (auto it = std::sregex_iterator(worked.begin(), worked.end(), term); it != std::sregex_iterator(); ++it) {
        const std::string v = (*it)[3];
        products.push_back(fmt::format("{}×{}", (*it)[1].str(), v.starts_with("-") ? "(" + v + ")" : v));
    }
    REQUIRE(products.size() == 12);
    CHECK_THAT(pane_of(at_context.dom), Catch::Contains(fmt::format("{} = ", fmt::join(products, " + "))));
}

TEST_CASE("the page: several heads behind a head selector, a summary a page of queries at a time, decode's steps",
          "[page]") {
    const cli::TempDir dir;
    // Two heads: head 2's sections hidden until its button is pressed.
    const std::string heads = write_page(dir, {"example:teacher_smiled", "-m", "self", "--heads", "2", "--dim", "4"});
    const std::string dom = load(dir, heads).dom;
    CHECK_THAT(dom, Catch::Contains(">head 1</button>") && Catch::Contains(">head 2</button>"));
    const auto count = [&](const std::string& pattern) {
        const std::regex re(pattern);
        return std::distance(std::sregex_iterator(dom.begin(), dom.end(), re), std::sregex_iterator());
    };
    const auto head_2 = count(R"re(<section class="matrix" data-matrix="\d+" data-head="2")re");
    CHECK(head_2 >= 8);
    CHECK(count(R"re(<section class="matrix" data-matrix="\d+" data-head="2"[^>]* hidden="")re") == head_2);
    CHECK(count(R"re(<section class="matrix" data-matrix="\d+" data-head="1"[^>]* hidden="")re") == 0);
    CHECK(count(R"re(<section class="matrix" data-matrix="\d+" data-head="1")re") == head_2);
    // A summary of 300 queries: the first 50, each query's strongest keys as the JSON summary's.
    const cli::TempFile input(cli::run({"generate", "-n", "300", "-d", "16"}).out);
    const std::string summary_page = write_page(dir, {input.path(), "-m", "causal", "--summary"}, "summary.html");
    const Loaded summary = load(dir, summary_page);
    CHECK(summary.console.empty());
    const json expected = trace_json({input.path(), "-m", "causal", "--summary"});
    CHECK_THAT(summary.dom, Catch::Contains("queries 1–50 of 300"));
    const std::regex row(R"re(<tr><th scope="row">(\d+) ([^<]*)</th><td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td></tr>)re");
    std::size_t seen = 0;
    for (auto it = std::sregex_iterator(summary.dom.begin(), summary.dom.end(), row); it != std::sregex_iterator(); ++it, ++seen) {
        const std::size_t q = std::stoul((*it)[1]) - 1;
        const json& query = expected["queries"][q];
        std::vector<std::string> top;
        for (const auto& key : query["top"])
            top.push_back(fmt::format("{} ({}): {}", key["token"].get<std::string>(), key["index"].get<int>() + 1, fixed(key["weight"])));
        CHECK(unescape((*it)[3]) == fmt::format("{}", fmt::join(top, ", ")));
        CHECK((*it)[4] == fixed(query["max_weight"]));
        CHECK((*it)[5] == fixed(query["entropy"]));
    }
    CHECK(seen == 50);

    // 100 tokens: 32 × 32 cells a page; a cell on a later page shown with its page, and the note
    // that a stage this long carries no arithmetic.
    const cli::TempFile long_input(cli::run({"generate", "-n", "100", "-d", "4"}).out);
    const std::string long_page = write_page(dir, {long_input.path(), "-m", "self"}, "long.html");
    const auto long_tables = tables_of(load(dir, long_page).dom);
    const int long_weights = index_of(long_tables, "weights · ");
    CHECK(long_tables.at(long_weights).cells.size() == 32 * 32);
    const Loaded later = load(dir, long_page, fmt::format("#cell={},70,40", long_weights));
    CHECK(later.console.empty());
    // Scrolled to: the cell, many screens down the page, lies inside the window of the page opened at it.
    const std::smatch place = [&] {
        std::smatch m;
        const std::regex body(R"re(<body data-cell-top="(-?\d+)" data-cell-bottom="(-?\d+)" data-view-height="(\d+)" data-scrolled="(\d+)")re");
        REQUIRE(std::regex_search(later.dom, m, body));
        return m;
    }();
    CHECK(std::stoi(place[1]) >= 0);
    CHECK(std::stoi(place[2]) <= std::stoi(place[3]));
    CHECK(std::stoi(place[4]) > std::stoi(place[3]));
    const auto later_tables = tables_of(later.dom);
    CHECK(later_tables.at(long_weights).cells.count({70, 40}) == 1);
    CHECK(later_tables.at(long_weights).cells.count({0, 0}) == 0);
    const json long_trace = trace_json({long_input.path(), "-m", "self"});
    for (const auto& [at, text] : later_tables.at(long_weights).cells)
        CHECK(text == fixed((*matrix_of(long_trace, later_tables.at(long_weights).heading))[at.first][at.second]));
    CHECK_THAT(later.dom, Catch::Contains("rows 65–96 of 100") && Catch::Contains("columns 33–64 of 100"));
    CHECK_THAT(later.dom, Catch::Contains("This table has more than 64 rows, so its cells carry no arithmetic and no outlines here"));

    // decode: each step's weights over the cache, hidden beyond its position.
    const std::string decode_page = write_page(dir, {"decode"}, "decode.html");
    const Loaded decoded = load(dir, decode_page);
    CHECK(decoded.console.empty());
    const auto r = cli::run({"decode", "-f", "json"});
    const json steps = json::parse(r.out)["steps"];
    const auto tables = tables_of(decoded.dom);
    REQUIRE(tables.size() == 1);
    for (std::size_t s = 0; s < steps.size(); ++s) {
        const json& w = steps[s]["weights"];  // one head: its numbers on the step
        for (std::size_t j = 0; j < w.size(); ++j) CHECK(tables.at(0).cells.at({static_cast<int>(s), static_cast<int>(j)}) == fixed(w[j]));
    }
}

TEST_CASE("the page beside any output (--html FILE): the same page and the output unchanged, and a refusal writes nothing", "[page]") {
    const cli::TempDir dir;
    const std::string page = write_page(dir, {"example:teacher_smiled", "-m", "causal"});
    const auto both = cli::run({"example:teacher_smiled", "-m", "causal", "-f", "json", "--html", dir / "beside.html"});
    REQUIRE(both.exit_code == 0);
    CHECK(both.out == cli::run({"example:teacher_smiled", "-m", "causal", "-f", "json"}).out);
    CHECK(read_file(dir / "beside.html") == read_file(page));
    // The lecture example's page is small: under 200 KB.
    CHECK(read_file(write_page(dir, {"example:teacher_smiled", "-m", "self"}, "lecture.html")).size() <= 200'000);
    for (const auto& args : {std::vector<std::string>{"--summary", "--backward", "sum", "--html", dir / "no.html"},
                             {"--check", "-f", "html"}, {"--summary", "-f", "jsonl", "--html", dir / "no.html"},
                             {"--html", dir / "missing/page.html"}}) {
        const auto r = cli::run(args);
        INFO(fmt::format("{}", fmt::join(args, " ")) << "\n" << r.err);
        CHECK(r.exit_code != 0);
        CHECK(r.out.empty());
        CHECK(r.err.starts_with("attntrace: error: "));
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        std::ifstream none(dir / "no.html");
        CHECK_FALSE(none.good());
    }
}
