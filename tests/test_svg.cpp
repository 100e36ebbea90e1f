// The SVG heatmap: well-formed XML that rsvg-convert renders, one rect per weight, masked
// cells hatched, values only in small matrices, escaped labels, the same bytes every time.
#include "attention/bahdanau.hpp"
#include "attention/similarity.hpp"
#include "attention/single.hpp"
#include "attention/trace.hpp"
#include "input/examples.hpp"
#include "core/generator.hpp"
#include "input/load.hpp"
#include "render/number.hpp"
#include "render/svg.hpp"
#include "support/cli.hpp"
#include "support/output_checks.hpp"

#include "support/catch.hpp"
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>

extern char** environ;

using namespace attntrace;
using Catch::Contains;

namespace {

// Where Debian's libxml2-utils and librsvg2-bin install them.
const std::string xmllint = "/usr/bin/xmllint";
const std::string rsvg_convert = "/usr/bin/rsvg-convert";

std::string svg_of(const Trace& trace, SvgOptions options = {}) {
    std::ostringstream out;
    render_svg(trace, options, out);
    return out.str();
}

std::size_t count(const std::string& text, const std::string& needle) {
    std::size_t n = 0;
    for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
    return n;
}

Sequence random_sequence(const std::vector<std::string>& tokens, std::uint64_t seed) {
    SplitMix64 rng(seed);
    Sequence s;
    s.tokens = tokens;
    s.vectors = random_matrix(rng, static_cast<Eigen::Index>(tokens.size()), 3, 1.0);
    return s;
}

std::vector<std::string> numbered_tokens(std::size_t n) {
    std::vector<std::string> tokens;
    for (std::size_t i = 1; i <= n; ++i) tokens.push_back(fmt::format("t{}", i));
    return tokens;
}

Trace single(Mode mode, const std::vector<std::string>& tokens) {
    TraceOptions options;
    options.mode = mode;
    return trace_single(random_sequence(tokens, 42), nullptr, options);
}

// 3 source and 4 target tokens, weights generated: a 4×3 alignment matrix.
Trace bahdanau_4x3() {
    EncoderDecoderInput input;
    input.source = random_sequence({"the", "black", "cat"}, 1);
    input.target = random_sequence({"le", "chat", "noir", "<eos>"}, 2);
    TraceOptions options;
    options.mode = Mode::bahdanau;
    return trace_bahdanau(input, options);
}

Trace example_trace(std::string_view name, std::optional<Mode> mode) {
    const Example* example = find_example(name);
    REQUIRE(example != nullptr);
    const Problem problem = load_problem(example->json, fmt::format("example:{}", name));
    TraceOptions options;
    options.mode = resolve_mode(problem, mode);
    return trace(problem, options);
}

struct ToolResult {
    int exit_code = -1;
    std::string err;
};

// Runs `args` (args[0] an absolute path) without a shell, stdout and stderr into `dir`.
ToolResult run_tool(std::vector<std::string> args, const std::filesystem::path& dir) {
    const std::string out_path = (dir / "tool.out").string(), err_path = (dir / "tool.err").string();
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = 0;
    const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    REQUIRE(spawned == 0);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
    }
    std::ostringstream err;
    err << std::ifstream(err_path).rdbuf();
    return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), err.str()};
}

void require_well_formed(const std::string& svg) {
    INFO("xmllint comes with Debian's libxml2-utils");
    REQUIRE(std::filesystem::exists(xmllint));
    const cli::TempFile file(svg, "heatmap.svg");
    const auto result = run_tool({xmllint, "--noout", file.path()},
                                 std::filesystem::path(file.path()).parent_path());
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    REQUIRE(result.err.empty());
}

// The first number in `svg` that `pattern`'s group captures.
double number_in(const std::string& svg, const std::string& pattern) {
    std::smatch match;
    REQUIRE(std::regex_search(svg, match, std::regex(pattern)));
    return std::stod(match[1]);
}

double svg_width(const std::string& svg) { return number_in(svg, "<svg [^>]*width=\"([0-9.]+)\""); }

// Where the matrix starts: right of the row labels.
double matrix_left(const std::string& svg) { return number_in(svg, "<rect class=\"cell[^\"]*\" x=\"([0-9.]+)\""); }

}  // namespace

TEST_CASE("svg: a well-formed SVG document with one cell rect per weight", "[svg]") {
    const std::vector<std::pair<std::string, Trace>> traces = {
        {"plain 6×6", single(Mode::plain, numbered_tokens(6))},
        {"causal 6×6", single(Mode::causal, numbered_tokens(6))},
        {"bahdanau 4×3", bahdanau_4x3()},
        {"plain 20×20", single(Mode::plain, numbered_tokens(20))},
    };
    for (const auto& [name, trace] : traces) {
        INFO(name);
        const std::string svg = svg_of(trace);
        require_well_formed(svg);
        CHECK(svg.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\""));
        CHECK_THAT(svg, Contains("font-family=\"sans-serif\"") && Contains("viewBox=\"0 0 "));
        const Stage& weights = *trace.find(StageId::weights);
        CHECK(count(svg, "<rect class=\"cell") == static_cast<std::size_t>(weights.data.size()));
        CHECK(count(svg, "class=\"cell") == static_cast<std::size_t>(weights.data.size()));
        // Every cell has its tooltip.
        CHECK(count(svg, "<title>") == static_cast<std::size_t>(weights.data.size()));
    }
}

TEST_CASE("svg: axis titles and heading follow the mode", "[svg]") {
    const std::string causal = svg_of(example_trace("your_journey", Mode::causal));
    CHECK_THAT(causal, Contains(">Attention weights · causal mode · example:your_journey</text>"));
    CHECK_THAT(causal, Contains(">query</text>") && Contains(">key</text>"));

    const std::string bahdanau = svg_of(example_trace("boy_apple_fr", std::nullopt));
    CHECK_THAT(bahdanau, Contains("Attention weights · bahdanau mode (additive score) · example:boy_apple_fr"));
    CHECK_THAT(bahdanau, Contains(">target</text>") && Contains(">source</text>"));
    CHECK_THAT(bahdanau, Contains(">garçon</text>") && Contains(">mangé</text>"));
    CHECK(count(bahdanau, "<rect class=\"cell") == 8 * 7);
}

TEST_CASE("svg: masked entries are hatched, untitled by value, and explained", "[svg]") {
    const Trace causal = single(Mode::causal, numbered_tokens(6));
    const std::string svg = svg_of(causal);
    CHECK(count(svg, "class=\"cell masked\"") == 15);  // the 5 + 4 + 3 + 2 + 1 keys after their query
    CHECK(count(svg, "class=\"cell masked\"") == count(svg, "fill=\"url(#hatch)\"><title>"));
    CHECK_THAT(svg, Contains("<title>t1 → t2: masked</title>"));
    CHECK_THAT(svg, Contains("<title>t2 → t1: ") && !Contains("<title>t2 → t1: masked"));
    CHECK_THAT(svg, Contains("<pattern id=\"hatch\"") && Contains(">masked (weight 0)</text>"));

    // A padded source: masked columns in bahdanau mode.
    const Trace padded = example_trace("padded_cat_fr", std::nullopt);
    const Stage& weights = *padded.find(StageId::weights);
    REQUIRE(weights.allowed);
    const auto masked = static_cast<std::size_t>((!*weights.allowed).count());
    REQUIRE(masked > 0);
    CHECK(count(svg_of(padded), "class=\"cell masked\"") == masked);

    // No mask, no masked legend.
    const std::string plain = svg_of(single(Mode::plain, numbered_tokens(6)));
    CHECK(count(plain, "cell masked") == 0);
    CHECK_THAT(plain, !Contains("masked (weight 0)"));
}

TEST_CASE("svg: values are printed in small matrices only", "[svg]") {
    const Trace small = single(Mode::plain, numbered_tokens(6));
    const std::string small_svg = svg_of(small);
    const Stage& w = *small.find(StageId::weights);
    for (Eigen::Index r = 0; r < 6; ++r)
        for (Eigen::Index c = 0; c < 6; ++c) {
            INFO("(" << r << ", " << c << ")");
            CHECK_THAT(small_svg, Contains(fmt::format(">{}</text>", format_fixed(w.data(r, c), 2))));
            // The tooltip holds the value exactly: the shortest text that reads back as it.
            CHECK_THAT(small_svg, Contains(fmt::format("<title>t{} → t{}: {}</title>", r + 1, c + 1, w.data(r, c))));
        }

    // The darkest cell's value is white; light cells keep the default dark text. On one scale
    // for the table, the causal first row's 1.00 is the darkest and the last row's 0.16 light.
    const std::string causal = svg_of(example_trace("your_journey", Mode::causal), {StageId::weights, Shade::table});
    CHECK_THAT(causal, Contains(" fill=\"#ffffff\">1.00</text>") && Contains("\">0.16</text>"));
    // Shaded per row, the last row's largest weight (0.1752, "one") is as dark as that 1.00;
    // on the weights' own scale (the default) it is light, as on one scale for the table.
    const std::string per_row = svg_of(example_trace("your_journey", Mode::causal), {StageId::weights, Shade::row});
    CHECK_THAT(per_row, Contains(" fill=\"#ffffff\">1.00</text>") && Contains(" fill=\"#ffffff\">0.18</text>"));
    const std::string absolute = svg_of(example_trace("your_journey", Mode::causal));
    CHECK_THAT(absolute, Contains(" fill=\"#ffffff\">1.00</text>") && !Contains(" fill=\"#ffffff\">0.18</text>"));

    // The 20×20 picture has the same fixed texts (headings, ticks) as the 6×6 one and its 40
    // labels, but no values: only the tooltips carry them.
    const Trace big = single(Mode::plain, numbered_tokens(20));
    const std::string big_svg = svg_of(big);
    const std::size_t fixed_texts = count(small_svg, "<text") - 36 - 12;
    CHECK(count(big_svg, "<text") == fixed_texts + 40);
    CHECK(count(big_svg, "<title>") == 400);
    const double value = big.find(StageId::weights)->data(19, 7);
    CHECK_THAT(big_svg, Contains(fmt::format("<title>t20 → t8: {}</title>", value)));
}

TEST_CASE("svg: labels are escaped and wide labels get room", "[svg]") {
    const Trace trace = single(Mode::causal, {"a&b<c>", "say \"hi\"", "l'été", "日本語"});
    const std::string svg = svg_of(trace);
    require_well_formed(svg);
    CHECK_THAT(svg, Contains(">a&amp;b&lt;c&gt;</text>") && !Contains("a&b<c>"));
    CHECK_THAT(svg, Contains(">say &quot;hi&quot;</text>") && Contains(">l&apos;été</text>"));
    CHECK_THAT(svg, Contains(">日本語</text>"));
    CHECK_THAT(svg, Contains("<title>l&apos;été → a&amp;b&lt;c&gt;: "));

    // Nine East Asian characters take twice the columns of nine Latin letters: about 9 × 7.5 px
    // more room left of the matrix.
    const double latin = matrix_left(svg_of(single(Mode::plain, {"abcdefghi", "x"})));
    const double wide = matrix_left(svg_of(single(Mode::plain, {"日本語日本語日本語", "x"})));
    CHECK(wide - latin > 60);
}

TEST_CASE("svg: rsvg-convert renders the document to a PNG", "[svg]") {
    INFO("rsvg-convert comes with Debian's librsvg2-bin");
    REQUIRE(std::filesystem::exists(rsvg_convert));
    for (const Trace& trace : {example_trace("your_journey", Mode::causal),
                               example_trace("boy_apple_fr", std::nullopt),
                               single(Mode::self, numbered_tokens(100))}) {
        const cli::TempFile file(svg_of(trace), "heatmap.svg");
        const auto dir = std::filesystem::path(file.path()).parent_path();
        const auto png = dir / "heatmap.png";
        const auto result = run_tool({rsvg_convert, "-o", png.string(), file.path()}, dir);
        INFO(result.err);
        REQUIRE(result.exit_code == 0);
        REQUIRE(std::filesystem::exists(png));
        CHECK(std::filesystem::file_size(png) > 0);
    }
}

TEST_CASE("svg: a 100×100 matrix stays a reasonable size", "[svg]") {
    const std::string svg = svg_of(single(Mode::self, numbered_tokens(100)));
    require_well_formed(svg);
    CHECK(svg_width(svg) < 1200);
    CHECK(count(svg, "<rect class=\"cell") == 10000);
}

TEST_CASE("svg: the same trace gives the same bytes", "[svg]") {
    const std::string first = svg_of(example_trace("your_journey", Mode::causal));
    CHECK(svg_of(example_trace("your_journey", Mode::causal)) == first);
    const Trace bahdanau = bahdanau_4x3();
    CHECK(svg_of(bahdanau) == svg_of(bahdanau));
}

namespace {

// ColorBrewer's 9-class "Blues" and "Reds" (colorbrewer2.org), light to dark: the colours of
// positive and negative values.
constexpr int blues_rgb[9][3] = {{247, 251, 255}, {222, 235, 247}, {198, 219, 239}, {158, 202, 225}, {107, 174, 214},
                                 {66, 146, 198},  {33, 113, 181},  {8, 81, 156},    {8, 48, 107}};
constexpr int reds_rgb[9][3] = {{255, 245, 240}, {254, 224, 210}, {252, 187, 161}, {252, 146, 114}, {251, 106, 74},
                                {239, 59, 44},   {203, 24, 29},   {165, 15, 21},    {103, 0, 13}};

// The fill of a cell whose value is the share `t` (−1 to 1) of the largest magnitude of its
// scale: a point between two of the nine stops, each channel rounded.
std::string expected_fill(double t) {
    const auto& stops = t < 0 ? reds_rgb : blues_rgb;
    const double position = std::min(std::abs(t), 1.0) * 8;
    const int i = std::min(static_cast<int>(position), 7);
    const double f = position - i;
    std::string hex = "#";
    for (int k = 0; k < 3; ++k)
        hex += fmt::format("{:02x}", static_cast<int>(std::lround(stops[i][k] + (stops[i + 1][k] - stops[i][k]) * f)));
    return hex;
}

// The fill of the cell whose tooltip starts "ROW → COL: ".
std::string fill_of(const std::string& svg, const std::string& row, const std::string& col) {
    const auto title = svg.find("<title>" + row + " → " + col + ": ");
    REQUIRE(title != std::string::npos);
    const auto fill = svg.rfind("fill=\"", title);
    REQUIRE(fill != std::string::npos);
    return svg.substr(fill + 6, 7);
}

// The colour bar's tick labels, from the bottom up.
std::vector<std::string> ticks_of(const std::string& svg) {
    const std::regex tick("stroke=\"#555555\"/><text x=\"[^\"]*\" y=\"[^\"]*\">([^<]*)</text>");
    std::vector<std::string> ticks;
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), tick); it != std::sregex_iterator(); ++it)
        ticks.push_back((*it)[1]);
    return ticks;
}

// Three 2-d tokens in causal mode with identity projections, so Q = K = V = X and the
// weights can be worked out by hand: a = (1, 0), b = (0, 1), c = (1, 1).
const std::vector<std::vector<double>> abc = {{1, 0}, {0, 1}, {1, 1}};
constexpr std::string_view abc_json = R"({"mode": "causal", "tokens": ["a", "b", "c"],
    "embeddings": {"a": [1, 0], "b": [0, 1], "c": [1, 1]},
    "weights": {"query": [[1, 0], [0, 1]], "key": [[1, 0], [0, 1]], "value": [[1, 0], [0, 1]]}})";

Trace abc_trace() {
    const Problem problem = load_problem(std::string(abc_json), "abc.json");
    TraceOptions options;
    options.mode = Mode::causal;
    return trace(problem, options);
}

// softmax over keys j ≤ i of x_i · x_j / √2.
std::vector<std::vector<double>> abc_weights() {
    std::vector<std::vector<double>> w(3, std::vector<double>(3, 0.0));
    for (std::size_t i = 0; i < 3; ++i) {
        double sum = 0;
        for (std::size_t j = 0; j <= i; ++j) {
            w[i][j] = std::exp((abc[i][0] * abc[j][0] + abc[i][1] * abc[j][1]) / std::sqrt(2.0));
            sum += w[i][j];
        }
        for (std::size_t j = 0; j <= i; ++j) w[i][j] /= sum;
    }
    return w;
}

}  // namespace

TEST_CASE("svg: weights are shaded on 0 to 1 by default, per row or on the table's scale as asked", "[svg]") {
    const Trace trace = abc_trace();
    const auto w = abc_weights();
    const std::string per_row = svg_of(trace, {StageId::weights, Shade::row});
    const std::string absolute = svg_of(trace);
    require_well_formed(absolute);
    CHECK(output_checks::svg_problem(absolute).empty());
    const std::string table = svg_of(trace, {StageId::weights, Shade::table});
    require_well_formed(per_row);
    require_well_formed(table);
    CHECK(output_checks::svg_problem(per_row).empty());
    CHECK(output_checks::svg_problem(table).empty());
    const std::vector<std::string> names = {"a", "b", "c"};
    const double table_max = 1.0;  // the first row's only weight
    for (std::size_t i = 0; i < 3; ++i) {
        const double row_max = *std::max_element(w[i].begin(), w[i].end());
        for (std::size_t j = 0; j <= i; ++j) {
            INFO(names[i] << " → " << names[j] << ": " << w[i][j]);
            CHECK(fill_of(per_row, names[i], names[j]) == expected_fill(w[i][j] / row_max));
            CHECK(fill_of(table, names[i], names[j]) == expected_fill(w[i][j] / table_max));
            CHECK(fill_of(absolute, names[i], names[j]) == expected_fill(w[i][j]));  // a weight's own scale: 0 to 1
        }
    }
    CHECK_THAT(absolute, Contains(">Shaded on the weights&apos; own scale: from 0 to 1, the same in every row</text>"));
    CHECK_THAT(absolute, Contains(">weight, one scale for every row</text>"));
    CHECK(ticks_of(absolute) == std::vector<std::string>{"0.00", "0.25", "0.50", "0.75", "1.00"});
    // Scores have no fixed range: by default they are shaded on the table's, and the note says why.
    const std::string scores = svg_of(trace, {StageId::scores, Shade::absolute});
    CHECK(fill_of(scores, "c", "c") == expected_fill(1));  // c·c = 2, the table's largest
    CHECK(fill_of(scores, "c", "a") == expected_fill(0.5));
    CHECK_THAT(scores, Contains(">Shaded on one scale for the whole table: from 0 to its largest score (scores have no fixed "
                                "range)</text>"));
    // Where the two scales differ the fills do: b's weight on a is about 0.33, half of b's
    // largest weight (0.67) but a third of the table's (1).
    CHECK(fill_of(per_row, "b", "a") != fill_of(table, "b", "a"));
    CHECK(fill_of(per_row, "c", "c") == expected_fill(1));
    CHECK(fill_of(table, "c", "c") != expected_fill(1));
    CHECK(fill_of(per_row, "a", "a") == fill_of(table, "a", "a"));

    // Each picture says how it is shaded, and its bar is labelled to match.
    CHECK_THAT(per_row, Contains(">Shaded per row: from 0 to the row&apos;s largest weight (a flat row looks as dark as a "
                                 "peaked one)</text>"));
    CHECK_THAT(per_row, Contains(">share of the row&apos;s largest weight</text>"));
    CHECK(ticks_of(per_row) == std::vector<std::string>{"0%", "25%", "50%", "75%", "100%"});
    CHECK_THAT(table, Contains(">Shaded on one scale for the whole table: from 0 to its largest weight</text>"));
    CHECK_THAT(table, Contains(">weight, one scale for the table</text>"));
    CHECK(ticks_of(table) == std::vector<std::string>{"0.00", "0.25", "0.50", "0.75", "1.00"});
}

TEST_CASE("svg: weights beyond 0 to 1 (divided by the row sum) widen the one scale, and the note says so", "[svg]") {
    // Plain, a = (1, 0), b = (−0.5, 1): a's scores 1 and −0.5 sum to 0.5, so its weights are 2
    // and −1; b's, −0.5 and 1.25, sum to 0.75: −2/3 and 5/3. The scale reaches the largest |weight|, 2.
    const Problem problem = load_problem(R"({"tokens": ["a", "b"], "embeddings": [[1, 0], [-0.5, 1]]})", "wide.json");
    TraceOptions options;
    options.mode = Mode::plain;
    options.normalization = Normalization::sum;
    const std::string svg = svg_of(attntrace::trace(problem, options));
    CHECK(fill_of(svg, "a", "a") == expected_fill(1));
    CHECK(fill_of(svg, "a", "b") == expected_fill(-0.5));
    CHECK(fill_of(svg, "b", "b") == expected_fill(5.0 / 6));
    CHECK_THAT(svg, Contains(">Shaded on one scale for every row: red below 0, blue above, darkest at the largest |weight|, "
                             "as some weights lie beyond 1 (divided by the row sum)</text>"));
    CHECK(ticks_of(svg) == std::vector<std::string>{"-2.00", "-1.00", "0.00", "1.00", "2.00"});
}

TEST_CASE("svg: each tooltip reads back as its weight exactly", "[svg]") {
    for (const Trace& trace : {abc_trace(), example_trace("boy_apple_fr", std::nullopt)}) {
        const std::string svg = svg_of(trace);
        const Stage& weights = trace.at(StageId::weights);
        const std::regex title("<title>[^<]* → [^<]*: ([^<]*)</title>");
        auto it = std::sregex_iterator(svg.begin(), svg.end(), title);
        for (Eigen::Index r = 0; r < weights.row_count(); ++r)
            for (Eigen::Index c = 0; c < weights.col_count(); ++c, ++it) {
                REQUIRE(it != std::sregex_iterator());
                const std::string text = (*it)[1];
                if (weights.is_masked(r, c)) CHECK(text == "masked");
                else CHECK(std::stod(text) == weights.data(r, c));
            }
        CHECK(it == std::sregex_iterator());
    }
}

namespace {

// Two 2-d tokens whose dot products have both signs: a = (1, 0), b = (−1, 1); causal mode
// with identity projections, so the scores are x_i · x_j.
const std::vector<std::vector<double>> ab = {{1, 0}, {-1, 1}};
constexpr std::string_view ab_json = R"({"mode": "causal", "tokens": ["a", "b"],
    "embeddings": {"a": [1, 0], "b": [-1, 1]},
    "weights": {"query": [[1, 0], [0, 1]], "key": [[1, 0], [0, 1]], "value": [[1, 0], [0, 1]]}})";

Trace ab_trace() {
    TraceOptions options;
    options.mode = Mode::causal;
    return trace(load_problem(std::string(ab_json), "ab.json"), options);
}

}  // namespace

TEST_CASE("svg: scores are drawn red below 0 and blue above, per row or on one scale", "[svg]") {
    const Trace trace = ab_trace();
    const std::vector<std::string> names = {"a", "b"};
    struct Case {
        StageId stage;
        double divisor;  // scaled scores are divided by √d_k = √2
        bool causal;     // the masked stage hides the key after each query
        std::string title;
    };
    for (const Case& c : {Case{StageId::scores, 1, false, "Attention scores"},
                          Case{StageId::scaled, std::sqrt(2.0), false, "Scaled scores"},
                          Case{StageId::masked, std::sqrt(2.0), true, "Masked scores"}}) {
        double s[2][2];
        for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 2; ++j) s[i][j] = (ab[i][0] * ab[j][0] + ab[i][1] * ab[j][1]) / c.divisor;
        const auto hidden = [&](int i, int j) { return c.causal && j > i; };
        double row_reach[2] = {0, 0}, table_reach = 0;
        for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 2; ++j)
                if (!hidden(i, j)) row_reach[i] = std::max(row_reach[i], std::abs(s[i][j]));
        table_reach = std::max(row_reach[0], row_reach[1]);

        for (const Shade shade : {Shade::row, Shade::table}) {
            const std::string svg = svg_of(trace, {c.stage, shade});
            INFO(to_string(c.stage) << ", shaded by " << to_string(shade));
            CHECK(output_checks::svg_problem(svg).empty());
            require_well_formed(svg);
            CHECK_THAT(svg, Contains(">" + c.title + " · causal mode · ab.json</text>"));
            CHECK_THAT(svg, Contains(fmt::format(">{} · 2×2 · ", to_string(c.stage))));
            for (int i = 0; i < 2; ++i)
                for (int j = 0; j < 2; ++j) {
                    INFO(names[i] << " → " << names[j] << ": " << s[i][j]);
                    const std::string fill = fill_of(svg, names[i], names[j]);
                    if (hidden(i, j)) CHECK(fill == "url(#ha");
                    else CHECK(fill == expected_fill(s[i][j] / (shade == Shade::row ? row_reach[i] : table_reach)));
                }
            const double reach = table_reach;
            CHECK(ticks_of(svg) == (shade == Shade::row
                                        ? std::vector<std::string>{"-100%", "-50%", "0%", "50%", "100%"}
                                        : std::vector<std::string>{fmt::format("{:.2f}", -reach), fmt::format("{:.2f}", -reach / 2),
                                                                   "0.00", fmt::format("{:.2f}", reach / 2),
                                                                   fmt::format("{:.2f}", reach)}));
            CHECK_THAT(svg, Contains(shade == Shade::row ? "Shaded per row: red below 0, blue above, darkest at the row"
                                                         : "Shaded on one scale for the whole table: red below 0, blue above"));
        }
    }
    // b's score on itself is 2 and on a −1: per row, a's −1 is the darkest red of its row
    // and b's −1 half as red; on one scale, both are half as red.
    CHECK(fill_of(svg_of(trace, {StageId::scores, Shade::row}), "a", "b") == expected_fill(-1));
    CHECK(fill_of(svg_of(trace, {StageId::scores, Shade::row}), "b", "a") == expected_fill(-0.5));
    CHECK(fill_of(svg_of(trace, {StageId::scores, Shade::table}), "a", "b") == expected_fill(-0.5));

    // The masked legend of the masked stage names the −∞; a stage the mode skips says so.
    CHECK_THAT(svg_of(trace, {StageId::masked, Shade::row}), Contains(">masked (score −∞)</text>"));
    const std::string plain_scaled = svg_of(single(Mode::plain, numbered_tokens(3)), {StageId::scaled, Shade::row});
    CHECK_THAT(plain_scaled, Contains(">scaled · 3×3 · S&apos; = S · not applied: "));
}

TEST_CASE("svg: the svg-stage option draws that stage, its tooltips the numbers of the JSON", "[svg][cli]") {
    const cli::TempDir folder;
    for (const std::vector<std::string>& input :
         {std::vector<std::string>{"-m", "causal"}, std::vector<std::string>{"example:padded_cat_fr"}}) {
        for (const std::string stage : {"scores", "scaled", "masked", "weights"}) {
            INFO(input.front() << ", --svg-stage " << stage);
            std::vector<std::string> args = input;
            const std::string path = folder / (stage + ".svg");
            args.insert(args.end(), {"-f", "json", "--svg", path, "--svg-stage", stage});
            const auto r = cli::run(args);
            REQUIRE(r.exit_code == 0);
            const std::string svg = cli::read_file(path);
            CHECK(output_checks::svg_problem(svg).empty());
            CHECK_THAT(svg, Contains(">" + stage + " · "));
            const auto json = nlohmann::json::parse(r.out);
            const nlohmann::json* found = nullptr;
            for (const auto& s : json["stages"])
                if (s["name"] == stage) found = &s;
            REQUIRE(found != nullptr);
            const nlohmann::json& data = (*found)["data"];
            // A masked entry: null among scores, false in the weights' "allowed".
            const auto masked = [&](std::size_t r, std::size_t c) {
                return data[r][c].is_null() || (found->contains("allowed") && !(*found)["allowed"][r][c].get<bool>());
            };
            const std::regex title("<title>[^<]* → [^<]*: ([^<]*)</title>");
            auto it = std::sregex_iterator(svg.begin(), svg.end(), title);
            std::size_t cells = 0;
            for (std::size_t r = 0; r < data.size(); ++r)
                for (std::size_t c = 0; c < data[r].size(); ++c) {
                    REQUIRE(it != std::sregex_iterator());
                    const std::string text = (*it++)[1];
                    if (masked(r, c)) CHECK(text == "masked");
                    else CHECK(std::stod(text) == data[r][c].get<double>());
                    ++cells;
                }
            CHECK(it == std::sregex_iterator());
            CHECK(cells > 0);
        }
    }
}

TEST_CASE("svg: the svg-stage option refuses what is not a query by key matrix", "[svg][cli]") {
    const cli::TempDir folder;
    const std::string path = folder / "pic.svg";
    const std::string choices = "--svg draws scores, scaled, masked or weights";
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--svg", path, "--svg-stage", "inputs"},
         "attntrace: error: --svg-stage: the inputs stage is not a matrix over (query, key) pairs; " + choices + "\n"},
        {{"--svg", path, "--svg-stage", "context"},
         "attntrace: error: --svg-stage: the context stage is not a matrix over (query, key) pairs; " + choices + "\n"},
        {{"example:black_cat_fr", "--svg", path, "--svg-stage", "encoder_states"},
         "attntrace: error: --svg-stage: the encoder_states stage is not a matrix over (query, key) pairs; " + choices + "\n"},
        {{"--svg", path, "--svg-stage", "weight"},
         "attntrace: error: --svg-stage: no stage named \"weight\" (did you mean weights?); " + choices + "\n"},
        {{"--svg-stage", "scores"}, ""},  // without --svg there is nothing to draw
        {{"--svg", path, "--svg-stage", "scores", "--summary"},
         "attntrace: error: --svg needs the full trace, which --summary does not build\n"},
    };
    for (const auto& [args, message] : cases) {
        INFO(fmt::format("{}", fmt::join(args, " ")));
        const auto r = cli::run(args);
        CHECK(r.exit_code == 2);
        CHECK(r.out.empty());
        if (!message.empty()) CHECK(r.err == message);
        else CHECK_THAT(r.err, Catch::StartsWith("attntrace: error: --svg-stage NAME needs --svg FILE"));
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        CHECK(folder.names().empty());
    }
}

TEST_CASE("svg: scores near the ends of the double range keep finite colours and ticks", "[svg]") {
    // Plain scores a·a = b·b = 1.69e308 and a·b = −1.69e308: twice the reach would overflow.
    const Problem problem = load_problem(R"({"sentence": "a b", "embeddings": {"a": [1.3e154], "b": [-1.3e154]}})", "far.json");
    TraceOptions options;
    options.mode = Mode::plain;
    const Trace trace = attntrace::trace(problem, options);
    for (const Shade shade : {Shade::row, Shade::table}) {
        const std::string svg = svg_of(trace, {StageId::scores, shade});
        INFO(to_string(shade));
        CHECK(output_checks::svg_problem(svg).empty());
        CHECK(output_checks::number_problem(svg).empty());
        CHECK(fill_of(svg, "a", "a") == expected_fill(1));
        CHECK(fill_of(svg, "a", "b") == expected_fill(-1));
        if (shade == Shade::table)
            CHECK(ticks_of(svg) == std::vector<std::string>{"-1.69e+308", "-8.45e+307", "0.00", "8.45e+307", "1.69e+308"});
    }
}

namespace {

struct Arrow {
    std::string title;
    double origin_x, origin_y, tip_x, tip_y;
};

// Each word's arrow: its tooltip, where its shaft starts (the origin) and the tip of its head.
std::vector<Arrow> arrows_of(const std::string& svg) {
    const std::regex arrow("<g class=\"arrow\"><title>([^<]*)</title><line x1=\"([-0-9.]+)\" y1=\"([-0-9.]+)\"[^>]*/>"
                           "<polygon points=\"([-0-9.]+),([-0-9.]+) ");
    std::vector<Arrow> arrows;
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), arrow); it != std::sregex_iterator(); ++it)
        arrows.push_back({(*it)[1], std::stod((*it)[2]), std::stod((*it)[3]), std::stod((*it)[4]), std::stod((*it)[5])});
    return arrows;
}

// The sentences under the picture's title, their lines joined again.
std::string heading_of(const std::string& svg) {
    const auto from = svg.find("<g class=\"heading\"");
    REQUIRE(from != std::string::npos);
    const std::string group = svg.substr(from, svg.find("</g>", from) - from);
    const std::regex line(">([^<]*)</text>");
    std::string text;
    for (auto it = std::sregex_iterator(group.begin(), group.end(), line); it != std::sregex_iterator(); ++it)
        text += (text.empty() ? "" : " ") + std::string((*it)[1]);
    return text;
}

std::string plane_svg(const std::string& json) {
    const Problem problem = load_problem(json, "words.json");
    std::ostringstream out;
    render_svg(plane_of(problem.vocabulary, problem.origin, problem.description.for_use("similarity")), out);
    return out.str();
}

// The two directions of largest squared length of the rows of x, found the slow way: power
// iteration on XᵀX, the second kept orthogonal to the first; each turned so that its
// component of largest magnitude is positive.
std::vector<std::vector<double>> power_directions(const std::vector<std::vector<double>>& x) {
    const std::size_t d = x[0].size();
    std::vector<std::vector<double>> found;
    for (int k = 0; k < 2; ++k) {
        std::vector<double> v(d);
        for (std::size_t j = 0; j < d; ++j) v[j] = 1.0 / static_cast<double>(j + 1 + k);
        for (int iteration = 0; iteration < 5000; ++iteration) {
            std::vector<double> w(d, 0.0);
            for (const auto& row : x) {
                double dot = 0;
                for (std::size_t j = 0; j < d; ++j) dot += row[j] * v[j];
                for (std::size_t j = 0; j < d; ++j) w[j] += dot * row[j];
            }
            for (const auto& earlier : found) {
                double along = 0;
                for (std::size_t j = 0; j < d; ++j) along += w[j] * earlier[j];
                for (std::size_t j = 0; j < d; ++j) w[j] -= along * earlier[j];
            }
            double length = 0;
            for (const double c : w) length += c * c;
            for (std::size_t j = 0; j < d; ++j) v[j] = w[j] / std::sqrt(length);
        }
        std::size_t largest = 0;
        for (std::size_t j = 1; j < d; ++j)
            if (std::abs(v[j]) > std::abs(v[largest])) largest = j;
        if (v[largest] < 0)
            for (double& c : v) c = -c;
        found.push_back(v);
    }
    return found;
}

}  // namespace

TEST_CASE("svg: 2-d embeddings are drawn as they are, arrows ending where the vectors do", "[svg][similarity]") {
    const std::vector<std::pair<std::string, std::vector<double>>> words = {
        {"up", {0, 1}}, {"right", {2, 0}}, {"diag", {1, 1}}, {"left", {-1.5, 0.25}}, {"low", {0.5, -0.75}}};
    const std::string svg = plane_svg(R"({"tokens": ["up", "right", "diag", "left", "low"], "embeddings": {
        "up": [0, 1], "right": [2, 0], "diag": [1, 1], "left": [-1.5, 0.25], "low": [0.5, -0.75]}})");
    require_well_formed(svg);
    CHECK(output_checks::svg_problem(svg).empty());
    const auto arrows = arrows_of(svg);
    REQUIRE(arrows.size() == words.size());
    // One scale for both axes, the same for every word: px per unit = the right arrow's length / 2.
    const double scale = (arrows[1].tip_x - arrows[1].origin_x) / 2;
    CHECK(scale > 50);
    for (std::size_t i = 0; i < words.size(); ++i) {
        INFO(words[i].first);
        CHECK_THAT(arrows[i].title, Catch::StartsWith(words[i].first + ": x1 = "));
        CHECK(arrows[i].origin_x == arrows[0].origin_x);
        CHECK(arrows[i].origin_y == arrows[0].origin_y);
        // Across by x1 and up (y grows downwards in SVG) by x2, to 1/100 px.
        CHECK(arrows[i].tip_x - arrows[i].origin_x == Approx(words[i].second[0] * scale).margin(0.011));
        CHECK(arrows[i].origin_y - arrows[i].tip_y == Approx(words[i].second[1] * scale).margin(0.011));
    }
    CHECK_THAT(arrows[3].title, Contains("left: x1 = -1.5, x2 = 0.25"));
    CHECK_THAT(svg, Contains(">x1</text>") && Contains(">x2</text>"));
    CHECK_THAT(heading_of(svg), Contains("drawn as it is: x1 across, x2 up.") && !Contains("principal"));
    for (const auto& [word, vector] : words) CHECK_THAT(svg, Contains("class=\"word\"") && Contains(">" + word + "</text>"));
}

TEST_CASE("svg: 1-d embeddings are arrows along one axis", "[svg][similarity]") {
    const std::string svg = plane_svg(R"({"tokens": ["a", "b", "c"], "embeddings": {"a": [1], "b": [-2], "c": [3]}})");
    CHECK(output_checks::svg_problem(svg).empty());
    const auto arrows = arrows_of(svg);
    REQUIRE(arrows.size() == 3);
    const double scale = (arrows[2].tip_x - arrows[2].origin_x) / 3;
    const double numbers[] = {1, -2, 3};
    for (std::size_t i = 0; i < 3; ++i) {
        CHECK(arrows[i].tip_y == arrows[i].origin_y);
        CHECK(arrows[i].tip_x - arrows[i].origin_x == Approx(numbers[i] * scale).margin(0.011));
    }
    CHECK_THAT(svg, Contains(">x1</text>") && !Contains(">x2</text>"));
}

TEST_CASE("svg: longer embeddings are projected, and the picture says how much the plane keeps", "[svg][similarity]") {
    // Three 3-d vectors with z = x + y: they lie in one plane through the origin, which keeps
    // all of their length.
    const std::string flat = plane_svg(R"({"tokens": ["a", "b", "c", "d"], "embeddings": {
        "a": [1, 0, 1], "b": [0, 1, 1], "c": [1, 1, 2], "d": [2, -1, 1]}})");
    require_well_formed(flat);
    CHECK(output_checks::svg_problem(flat).empty());
    CHECK_THAT(heading_of(flat), Contains("The 3-d vectors projected onto the plane of their first two principal directions"));
    CHECK_THAT(heading_of(flat), Contains("without centring the vectors, so that the origin stays put"));
    CHECK_THAT(flat, Contains(">PC1</text>") && Contains(">PC2</text>"));
    CHECK_THAT(heading_of(flat), Contains("the plane keeps 100% of the vectors&apos; total squared length."));
    CHECK_THAT(heading_of(flat), !Contains("those of the projections"));  // nothing is lost, so angles are true
    // In that plane the arrows keep their lengths: |a| = |b| = √2, |c| = √6, |d| = √6.
    const auto arrows = arrows_of(flat);
    REQUIRE(arrows.size() == 4);
    const auto length = [](const Arrow& a) { return std::hypot(a.tip_x - a.origin_x, a.tip_y - a.origin_y); };
    CHECK(length(arrows[2]) / length(arrows[0]) == Approx(std::sqrt(3.0)).epsilon(1e-3));
    CHECK(length(arrows[1]) / length(arrows[0]) == Approx(1).epsilon(1e-3));
    CHECK(length(arrows[3]) / length(arrows[2]) == Approx(1).epsilon(1e-3));

    // Three orthogonal unit vectors: any plane keeps two of the three, 2/3 of the squared length.
    const std::string cube = plane_svg(R"({"tokens": ["x", "y", "z"], "embeddings": {
        "x": [1, 0, 0], "y": [0, 1, 0], "z": [0, 0, 1]}})");
    CHECK_THAT(heading_of(cube), Contains("the plane keeps 67% of the vectors&apos; total squared length."));
    CHECK_THAT(heading_of(cube), Contains("Angles between the arrows are those of the projections"));
}

TEST_CASE("svg: the plane is that of the two largest principal directions, signs fixed", "[svg][similarity]") {
    const Example* example = find_example("fruit_and_pets");
    REQUIRE(example != nullptr);
    const Problem problem = load_problem(example->json, "example:fruit_and_pets");
    const Vocabulary& words = problem.vocabulary;
    std::vector<std::vector<double>> x;
    for (Eigen::Index i = 0; i < words.vectors.rows(); ++i) {
        x.emplace_back();
        for (Eigen::Index j = 0; j < words.vectors.cols(); ++j) x.back().push_back(words.vectors(i, j));
    }
    const auto directions = power_directions(x);
    const WordPlane plane = plane_of(words, problem.origin, problem.description.for_use("similarity"));
    REQUIRE(plane.projected());
    double kept = 0, total = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
        for (std::size_t k = 0; k < 2; ++k) {
            double coordinate = 0;
            for (std::size_t j = 0; j < x[i].size(); ++j) coordinate += x[i][j] * directions[k][j];
            CHECK(plane.points(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(k)) == Approx(coordinate).margin(1e-9));
            kept += coordinate * coordinate;
        }
    for (const auto& row : x)
        for (const double c : row) total += c * c;
    CHECK(plane.kept == Approx(kept / total).epsilon(1e-12));
    // PC1 is mostly fruit and sweet (x1, x2), PC2 animal and pet (x3, x4).
    const std::string svg = plane_svg(std::string(example->json));
    CHECK_THAT(heading_of(svg), Contains(fmt::format("the plane keeps {:.0f}% of the vectors", 100 * kept / total)));
    CHECK_THAT(heading_of(svg), Contains(fmt::format("PC1 ≈ {:.2f}·x1 + {:.2f}·x2 + ", directions[0][0], directions[0][1])));

    // Vectors and their opposites give opposite points: the signs do not depend on the solver.
    Vocabulary flipped = words;
    flipped.vectors = -words.vectors;
    const WordPlane opposite = plane_of(flipped, "", "");
    CHECK((opposite.points + plane.points).cwiseAbs().maxCoeff() < 1e-12);
    CHECK((opposite.directions - plane.directions).cwiseAbs().maxCoeff() < 1e-12);
}

TEST_CASE("svg: the similarity command draws its words with --svg, or refuses", "[svg][similarity][cli]") {
    const cli::TempDir folder;
    const std::string path = folder / "words.svg";
    const auto tables = cli::run({"similarity", "example:fruit_and_pets"});
    const auto both = cli::run({"similarity", "example:fruit_and_pets", "--svg", path});
    REQUIRE(both.exit_code == 0);
    CHECK(both.out == tables.out);
    const std::string svg = cli::read_file(path);
    require_well_formed(svg);
    CHECK(output_checks::svg_problem(svg).empty());
    CHECK_THAT(svg, Contains(">Word vectors as arrows · 6 words · d = 5 · example:fruit_and_pets</text>"));
    CHECK(arrows_of(svg).size() == 6);
    CHECK(cli::run({"similarity", "example:fruit_and_pets", "--svg", path}).exit_code == 0);
    CHECK(cli::read_file(path) == svg);  // the same bytes every time

    // A word without a direction: refused before anything is written.
    const cli::TempFile zero(R"({"tokens": ["a", "b"], "embeddings": {"a": [0, 0], "b": [1, 2]}})");
    const std::string none = folder / "none.svg";
    const auto refused = cli::run({"similarity", zero.path(), "--svg", none});
    CHECK(refused.exit_code == 1);
    CHECK(refused.out.empty());
    CHECK_THAT(refused.err, Catch::StartsWith("attntrace: error: ") && Contains("all zeros"));
    CHECK_FALSE(std::filesystem::exists(none));

    // The picture's memory counts: a limit that the tables fit in but not the picture.
    const auto small = cli::run({"similarity", "example:fruit_and_pets", "--svg", none, "--max-memory", "16K"});
    CHECK(small.exit_code == 1);
    CHECK(small.out.empty());
    CHECK_THAT(small.err, Contains("making the similarity tables of 6 words with the picture of 6 words needs about"));
    CHECK(cli::run({"similarity", "example:fruit_and_pets", "--max-memory", "16K"}).exit_code == 0);
    CHECK_FALSE(std::filesystem::exists(none));

    const auto missing = cli::run({"similarity", "example:fruit_and_pets", "--svg", folder / "no/such/folder.svg"});
    CHECK(missing.exit_code == 1);
    CHECK(missing.out.empty());
    CHECK_THAT(missing.err, Contains("cannot write"));
}
