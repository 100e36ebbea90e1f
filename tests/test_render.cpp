// The table format: alignment by display width, fitting the terminal, rounding, masked cells.
#include "attention/trace.hpp"
#include "core/error.hpp"
#include "render/json_writer.hpp"
#include "render/number.hpp"
#include "render/render.hpp"
#include "support/cli.hpp"
#include "support/text.hpp"
#include "util/utf8.hpp"

#include "support/catch.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

using namespace attntrace;
using Catch::Contains;
using Catch::StartsWith;

namespace {

using text::lines_of;

// The lines of one stage's table: from its heading to the next blank line.
std::vector<std::string> table_lines(const std::string& text, const std::string& stage) {
    const auto lines = lines_of(text);
    std::vector<std::string> out;
    bool in_stage = false;
    for (const auto& line : lines) {
        if (line.rfind(stage + " · ", 0) == 0) in_stage = true;
        else if (in_stage && line.empty()) break;
        else if (in_stage) out.push_back(line);
    }
    return out;
}

}  // namespace

TEST_CASE("display width counts characters, not bytes", "[render][utf8]") {
    CHECK(display_width("journey") == 7);
    CHECK(display_width("élève") == 5);
    CHECK(display_width("e\xCC\x81l\xC3\xA8ve") == 5);  // e + combining acute
    CHECK(display_width("日本") == 4);
    CHECK(display_width("ça") == 2);
    CHECK(fold_case("ÉCOLE Ça") == "école ça");
    CHECK_FALSE(first_control_character("garçon"));
    CHECK(first_control_character("a\x1b[31mred") == char32_t{0x1B});
    CHECK(first_control_character("\xC2\x85") == char32_t{0x85});  // NEL, a C1 control
    CHECK(first_control_character(std::string_view("a\0b", 3)) == char32_t{0});
}

TEST_CASE("labels with non-ASCII letters stay aligned", "[render][utf8]") {
    cli::TempFile file(R"({"tokens": ["élève", "garçon", "日本", "e)" "\xCC\x81" R"(a"],
        "embeddings": [[1, 0], [0, 1], [1, 1], [0.5, 0.5]]})");
    const auto r = cli::run({file.path(), "-s", "scores"});
    REQUIRE(r.exit_code == 0);
    const auto table = table_lines(r.out, "scores");
    REQUIRE(table.size() == 6);  // title, header, 4 rows
    // Every row ends at the same display column, and each number column ends where its
    // header ends.
    const std::size_t width = display_width(table[1]);
    for (std::size_t i = 2; i < table.size(); ++i) {
        INFO(table[i]);
        CHECK(display_width(table[i]) == width);
    }
    const std::string header = table[1];
    const auto header_end_of_first_column = display_width(header.substr(0, header.find("élève") + std::string("élève").size()));
    const std::string row = table[2];  // élève row: "élève   1.0000 …"
    const auto first_number_end = display_width(row.substr(0, row.find("1.0000") + 6));
    CHECK(first_number_end == header_end_of_first_column);
}

TEST_CASE("display widths of emoji, ZWJ sequences, Devanagari and Thai, by utf8proc", "[render][utf8]") {
    CHECK(display_width("🚀") == 2);                       // U+1F680, an emoji: two columns
    CHECK(display_width("👩‍💻") == 2);                       // woman + ZWJ + laptop: one emoji
    CHECK(display_width("👍🏽") == 2);                       // a skin tone joins its emoji
    CHECK(display_width("🇫🇷") == 2);                       // two regional indicators: one flag
    CHECK(display_width("नमस्ते") == 4);                    // न म स ् त े: virama and vowel sign take none
    CHECK(display_width("ที่") == 1);                        // ท with two marks above it
    CHECK(display_width("ภาษาไทย") == 7);                   // seven letters, no marks
    CHECK(display_width("a🚀b") == 4);
    // Printable ASCII is one column a byte; a mark after it joins its letter, and a control
    // character takes no column.
    std::string printable_ascii;
    for (char c = 0x20; c < 0x7F; ++c) printable_ascii += c;
    CHECK(display_width(printable_ascii) == 95);
    CHECK(display_width("cafe\xCC\x81") == 4);  // e + combining acute
    CHECK(display_width("a\tb") == 2);
    // Cut between clusters: a letter keeps its marks, an emoji sequence stays whole.
    CHECK(prefix_within_width("नमस्ते", 3) == "नमस्");
    CHECK(prefix_within_width("ที่ดี", 1) == "ที่");
    CHECK(prefix_within_width("a👩‍💻b", 2) == "a");
    CHECK(prefix_within_width("a👩‍💻b", 3) == "a👩‍💻");
    CHECK(fold_case("ΣΟΦΙΑ ДОМ ĞÜL") == "σοφια дом ğül");
}

TEST_CASE("emoji, ZWJ sequences, Devanagari and Thai labels align in tables", "[render][utf8]") {
    // Each label with the columns it takes, counted by hand from the Unicode data.
    const std::vector<std::pair<std::string, std::size_t>> labels{
        {"🚀", 2}, {"👩‍💻", 2}, {"नमस्ते", 4}, {"ที่", 1}, {"cat", 3}, {"👍🏽", 2}};
    std::string tokens, embeddings;
    for (std::size_t i = 0; i < labels.size(); ++i) {
        tokens += (i ? ", \"" : "\"") + labels[i].first + "\"";
        embeddings += fmt::format("{}[{}, {}]", i ? ", " : "", 0.1 * static_cast<double>(i + 1), 1 - 0.1 * static_cast<double>(i));
    }
    cli::TempFile file(R"({"tokens": [)" + tokens + R"(], "embeddings": [)" + embeddings + "]}");
    const auto r = cli::run({file.path(), "-s", "scores"});
    REQUIRE(r.exit_code == 0);
    const auto table = table_lines(r.out, "scores");
    REQUIRE(table.size() == 2 + labels.size());  // title, header, a row per label
    // The columns of a line: each label counted by hand, everything else is ASCII.
    const auto columns = [&](std::string line) {
        std::size_t width = 0;
        for (const auto& [label, w] : labels)
            for (std::size_t at; (at = line.find(label)) != std::string::npos;) {
                line.erase(at, label.size());
                width += w;
            }
        return width + line.size();
    };
    const std::size_t width = columns(table[1]);
    CHECK(width == 4 + labels.size() * 8);  // the label column (as wide as नमस्ते), then 8 a number
    for (std::size_t i = 2; i < table.size(); ++i) {
        INFO(table[i]);
        CHECK(columns(table[i]) == width);
    }
}

TEST_CASE("wide matrices fit the width by eliding middle columns", "[render]") {
    const auto full = cli::run({"--example", "teacher_smiled", "-s", "weights", "--width", "0"});
    const auto narrow = cli::run({"--example", "teacher_smiled", "-s", "weights", "--width", "72"});
    REQUIRE(narrow.exit_code == 0);
    const auto table = table_lines(narrow.out, "weights");
    REQUIRE(table.size() >= 14);  // title, header, 12 rows, then the note on what is hidden
    for (std::size_t i = 1; i < 14; ++i) {
        INFO(table[i]);
        CHECK(display_width(table[i]) <= 72);
        CHECK_THAT(table[i], Contains("…"));
    }
    // The table says which columns it hides, worked out here from the header it kept.
    const std::vector<std::string> tokens{"The", "teacher", "who", "was", "teaching", "a", "difficult", "concept", "to", "the",
                                          "students", "smiled"};
    std::istringstream header(table[1]);
    std::size_t left = 0, right = 0;
    bool past = false;
    for (std::string word; header >> word;) {
        if (word == "…") past = true;
        else if (word != "Σ" && word != "strongest") ++(past ? right : left);
    }
    std::string hidden;
    for (std::size_t j = left; j < tokens.size() - right && j < left + 8; ++j) hidden += (j > left ? ", " : "") + tokens[j];
    if (tokens.size() - right - left > 8) hidden += ", … (" + std::to_string(tokens.size() - right - left - 8) + " more)";
    std::string unwrapped = narrow.out;  // the note wraps at 72 too
    for (std::size_t at = unwrapped.find("\n  "); at != std::string::npos; at = unwrapped.find("\n  ", at))
        unwrapped.replace(at, 3, " ");
    CHECK_THAT(unwrapped, Contains("… hides " + std::to_string(tokens.size() - right - left) + " of the 12 columns (" +
                                   hidden + ") to fit 72 columns: --width 0 shows them all"));
    // Nothing is elided without a limit; the first and last key columns survive elision.
    CHECK_THAT(table_lines(full.out, "weights")[1], !Contains("…"));
    CHECK_THAT(table[1], Contains("The") && Contains("smiled") && Contains("Σ") && Contains("strongest"));
}

TEST_CASE("rounding follows --digits and negative zero prints as 0", "[render]") {
    const auto r = cli::run({"-s", "scores", "--digits", "2"});
    CHECK_THAT(r.out, Contains("journey  0.95     1.50    1.48  0.84  0.71  1.09"));
    CHECK(format_fixed(-0.00001, 4) == "0.0000");
    CHECK(format_fixed(-0.00006, 4) == "-0.0001");
    CHECK(format_fixed(-std::numeric_limits<double>::infinity(), 4) == "-inf");
    CHECK(format_fixed(2.5, 0) == "2");
}

TEST_CASE("causal tables show -inf for masked scores and 0 for masked weights", "[render]") {
    const auto r = cli::run({"-m", "causal", "-s", "masked,weights"});
    const auto masked = table_lines(r.out, "masked");
    const auto weights = table_lines(r.out, "weights");
    REQUIRE(masked.size() == 8);
    CHECK_THAT(masked[2], Contains("-inf"));              // Your row: five future keys
    CHECK_THAT(masked[7], !Contains("-inf"));             // step row sees everything
    CHECK_THAT(weights[2], StartsWith("Your     1.0000        0       0       0       0       0  1.0000  Your"));
}

TEST_CASE("skipped stages say why instead of printing a table", "[render]") {
    const auto r = cli::run({"-s", "scaled,masked"});
    CHECK_THAT(r.out, Contains("scaled · 6×6 · S' = S · not applied\nno scaling: the simplified version uses raw dot products"));
    CHECK_THAT(r.out, Contains("masked · 6×6 · S'' = S · not applied\nno mask: bidirectional, every position sees every position"));
}

TEST_CASE("shading copes with scores spanning the whole double range", "[render][fuzz-regression]") {
    // Found by the fuzzer (tests/fuzz/corpus/regression-shading-range-overflow.json): scores
    // near ±1e308 made high − low overflow and the shade level NaN.
    cli::TempFile file(R"({"sentence":"x y","embeddings":{"x":[0e077,2e154],"y":[-2e154,1e144]}})");
    for (const char* mode : {"plain", "self", "causal"})
        for (const char* shade : {"row", "table"}) {
            const auto r = cli::run({file.path(), "-m", mode, "--color", "always", "--shade", shade});
            INFO(mode << ", --shade " << shade << ": " << r.err);
            CHECK((r.exit_code == 0 || r.exit_code == 1));  // a trace, or a clear overflow error
            if (r.exit_code == 0) CHECK_THAT(r.out, Contains(std::string(shade) == "row" ? "shading per row" : "shading:"));
            else CHECK_THAT(r.err, Contains("overflows"));
        }
}

TEST_CASE("the shading legend stays finite for scores near the ends of the double range", "[render]") {
    // Plain scores a·a = b·b = 1.69e308 and a·b = −1.69e308: high − low would overflow.
    cli::TempFile file(R"({"sentence":"a b","embeddings":{"a":[1.3e154],"b":[-1.3e154]}})");
    const auto r = cli::run({file.path(), "-s", "scores", "--color", "always", "--shade", "table"});
    REQUIRE(r.exit_code == 0);
    const auto at = r.out.find("shading:");
    REQUIRE(at != std::string::npos);
    const std::string legend = r.out.substr(at, r.out.find('\n', at) - at);
    CHECK_THAT(legend, !Contains("inf") && !Contains("nan"));
    CHECK_THAT(legend, Contains("-1.6900e+308") && Contains("(up to 1.6900e+308)"));
}

TEST_CASE("prose wraps at the width between words, never inside one", "[render][wrap]") {
    // The same words in the same order, each line within the width unless one word is wider.
    const auto words_of = [](const std::string& text) {
        std::vector<std::string> words;
        std::istringstream in(text);
        for (std::string word; in >> word;) words.push_back(word);
        return words;
    };
    for (const std::size_t width : {30u, 45u, 80u}) {
        INFO("width " << width);
        // Outputs without tables, whose words the width must not change.
        for (const std::vector<std::string>& args : {std::vector<std::string>{"--check", "-m", "causal"},
                                                    {"-m", "self", "--explain", "-s", "masked"},
                                                    {"-q", "journey", "-s", "masked"}}) {
            std::vector<std::string> narrow = args, wide = args;
            narrow.insert(narrow.end(), {"--width", std::to_string(width)});
            wide.insert(wide.end(), {"--width", "0"});
            const auto n = cli::run(narrow), w = cli::run(wide);
            REQUIRE(n.exit_code == 0);
            CHECK(words_of(n.out) == words_of(w.out));
            for (const auto& line : lines_of(n.out)) {
                // A line wider than the width has no place to break: one word, or words held
                // together by "=".
                const auto words = words_of(line);
                bool breakable = false;
                for (std::size_t i = 0; i + 1 < words.size(); ++i) breakable = breakable || (words[i] != "=" && words[i + 1] != "=");
                INFO(line);
                CHECK((display_width(line) <= width || !breakable));
            }
        }
    }
    // "d_k = 3" is not split at its "=".
    CHECK_THAT(cli::run({"-m", "self", "--width", "45", "-s", "weights"}).out, Contains("d_k = 3"));
    // The colour legend wraps between its swatches, never inside one.
    const auto coloured = cli::run({"-s", "weights", "--color", "always", "--width", "40"});
    for (const auto& line : lines_of(coloured.out)) {
        const auto opened = std::count(line.begin(), line.end(), '\x1b');
        INFO(line);
        CHECK(opened % 3 == 0);  // each swatch: background, foreground, reset
    }
}

namespace {

// Labels that are markup in Markdown, HTML or CSV, for the tests of every format below.
const std::vector<std::string> markup_labels{"<script>alert(1)</script>", "<b>d</b>", "*x*", "_y_", "a,\"b\"", "c|d"};

std::string markup_input(double shift) {
    std::string tokens, embeddings;
    for (std::size_t i = 0; i < markup_labels.size(); ++i) {
        std::string quoted;
        for (const char c : markup_labels[i]) quoted += c == '"' ? std::string("\\\"") : std::string(1, c);
        tokens += fmt::format("{}\"{}\"", i ? ", " : "", quoted);
        embeddings += fmt::format("{}[{}, {}]", i ? ", " : "", std::sin(1.0 + static_cast<double>(i)) + shift,
                                  std::cos(2.0 * static_cast<double>(i)));
    }
    return fmt::format(R"({{"description": "see <i>this</i> *now*", "tokens": [{}], "embeddings": [{}]}})", tokens,
                       embeddings);
}

// Markdown as a CommonMark renderer with GitHub's tables reads it (cmark-gfm, Debian's), raw
// HTML let through (--unsafe): what a page would show.
std::string rendered_html(const std::string& markdown) {
    const cli::TempFile file(markdown, "page.md");
    const auto r = cli::run_program({"cmark-gfm", "--unsafe", "-e", "table", file.path()});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);  // `make test` installs cmark-gfm
    return r.out;
}

}  // namespace

TEST_CASE("markdown keeps every label text in titles, prose and tables, in every command", "[render][markdown]") {
    const cli::TempFile first(markup_input(0)), second(markup_input(0.5));
    const std::string a = first.path(), b = second.path();
    const std::vector<std::vector<std::string>> runs{
        {a, "--explain"},
        {a, "-m", "causal", "--explain", "-q", "2"},
        {a, "-m", "self", "--heads", "2", "--explain"},
        {a, "-m", "causal", "--summary", "--heads", "2", "--stage", "context"},
        {"decode", a, "--explain"},
        {"decode", a, "--step", "3", "--heads", "2", "--kv-heads", "1", "--explain"},
        {"compare", a, b, "-t", "<b>d</b>"},
        {"compare", a, b, "-t", "<b>d</b>", "-m", "self", "--heads", "2"},
        {"similarity", a},
    };
    for (std::vector<std::string> args : runs) {
        args.insert(args.end(), {"-f", "markdown"});
        INFO(fmt::format("{}", fmt::join(args, " ")));
        const auto r = cli::run(args);
        INFO(r.err);
        REQUIRE(r.exit_code == 0);
        const std::string html = rendered_html(r.out);
        // No element came from an input: the page's only tags are the renderer's own.
        for (const char* tag : {"<script", "<b>", "<i>", "<em>x</em>", "<strong>x</strong>", "<em>y</em>", "<em>this</em>"}) {
            INFO(tag);
            CHECK_THAT(html, !Contains(tag));
        }
        // And the labels read as written: every one in a trace's tables, the word followed in a
        // comparison.
        CHECK_THAT(html, Contains("&lt;b&gt;d&lt;/b&gt;"));
        const bool every_token = std::find(args.begin(), args.end(), "--step") == args.end();  // a step shows its own
        if (every_token && (args.front() == a || args.front() == "decode" || args.front() == "similarity"))
            for (const char* text : {"&lt;script&gt;alert(1)&lt;/script&gt;", "*x*", "_y_", "c|d"}) {
                INFO(text);
                CHECK_THAT(html, Contains(text));
            }
    }
    // Where the issue found the labels raw: decode's cache titles, compare's titles, --explain's
    // sentences. Each of them as text on the page.
    const std::string decode = rendered_html(cli::run({"decode", a, "--explain", "-f", "markdown"}).out);
    CHECK_THAT(decode, Contains("after appending k_&lt;b&gt;d&lt;/b&gt;"));
    const std::string compare = rendered_html(cli::run({"compare", a, b, "-t", "<b>d</b>", "-f", "markdown"}).out);
    CHECK_THAT(compare, Contains("The context vector of &quot;&lt;b&gt;d&lt;/b&gt;&quot; in each input"));
    CHECK_THAT(compare, Contains("attntrace compare · &quot;&lt;b&gt;d&lt;/b&gt;&quot;"));
}

TEST_CASE("the other formats keep the same labels as text", "[render][formats]") {
    const cli::TempFile first(markup_input(0)), second(markup_input(0.5));
    const std::string a = first.path(), b = second.path();
    // JSON: every label back as written.
    const auto trace = cli::run({a, "-f", "json"});
    REQUIRE(trace.exit_code == 0);
    CHECK(nlohmann::json::parse(trace.out)["tokens"] == nlohmann::json(markup_labels));
    const auto compare = cli::run({"compare", a, b, "-t", "<b>d</b>", "-f", "json"});
    REQUIRE(compare.exit_code == 0);
    CHECK_THAT(nlohmann::json::parse(compare.out).dump(), Contains("<b>d</b>"));
    // CSV: the label with a comma and quotes quoted, quotes doubled (RFC 4180).
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{a, "-f", "csv"}, {a, "-f", "csv", "--tidy"}, {"similarity", a, "-f", "csv"},
          {"decode", a, "-f", "csv"}}) {
        INFO(fmt::format("{}", fmt::join(args, " ")));
        const auto r = cli::run(args);
        REQUIRE(r.exit_code == 0);
        CHECK_THAT(r.out, Contains("\"a,\"\"b\"\"\""));
        CHECK_THAT(r.out, !Contains(",a,\"b\","));
    }
    // SVG: well-formed XML, no element from a label, and the labels as text.
    const cli::TempDir folder;
    REQUIRE(cli::run({a, "--svg", folder / "trace.svg", "-o", folder / "trace.txt"}).exit_code == 0);
    REQUIRE(cli::run({"similarity", a, "--svg", folder / "words.svg", "-o", folder / "words.txt"}).exit_code == 0);
    for (const char* name : {"trace.svg", "words.svg"}) {
        INFO(name);
        const std::string svg = folder / name;
        const auto well_formed = cli::run_program({"xmllint", "--noout", svg});
        CHECK(well_formed.exit_code == 0);
        const auto scripts = cli::run_program({"xmllint", "--xpath", "count(//*[local-name()='script' or local-name()='b'])", svg});
        CHECK(scripts.out == "0\n");
        CHECK_THAT(cli::read_file(svg), Contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    }
    // The table: the labels as they are, nothing to escape in plain text, no control character.
    const auto table = cli::run({a, "-s", "weights"});
    REQUIRE(table.exit_code == 0);
    CHECK_THAT(table.out, Contains("<b>d</b>") && Contains("a,\"b\"") && Contains("<script>alert(1)</scrip…"));
    CHECK(table.out.find('\x1b') == std::string::npos);
}

TEST_CASE("each format's renderer shows exactly the products the table of formats gives it", "[render][formats]") {
    const auto implements = [](const Renderer& r, Product p) {
        switch (p) {
        case Product::trace: return dynamic_cast<const ShowsTrace*>(&r) != nullptr;
        case Product::summary: return dynamic_cast<const ShowsSummary*>(&r) != nullptr;
        case Product::similarity: return dynamic_cast<const ShowsSimilarity*>(&r) != nullptr;
        case Product::comparison: return dynamic_cast<const ShowsComparison*>(&r) != nullptr;
        case Product::check: return dynamic_cast<const ShowsCheck*>(&r) != nullptr;
        case Product::decode: return dynamic_cast<const ShowsDecode*>(&r) != nullptr;
        case Product::gradients: return dynamic_cast<const ShowsGradients*>(&r) != nullptr;
        case Product::answers: return dynamic_cast<const ShowsAnswers*>(&r) != nullptr;
        case Product::quiz: return dynamic_cast<const ShowsQuiz*>(&r) != nullptr;
        case Product::bench: return dynamic_cast<const ShowsBench*>(&r) != nullptr;
        case Product::training: return dynamic_cast<const ShowsTraining*>(&r) != nullptr;
        case Product::rnn: return dynamic_cast<const ShowsRnn*>(&r) != nullptr;
        }
        return false;
    };
    constexpr Product products[] = {Product::trace,     Product::summary, Product::similarity, Product::comparison,
                                    Product::check,     Product::decode,  Product::gradients,  Product::answers,
                                    Product::quiz,      Product::bench,   Product::training, Product::rnn};
    for (const auto& [format, name] : format_names)
        for (const Product product : products) {
            INFO(fmt::format("{}, product {}", name, static_cast<int>(product)));
            CHECK(shows(format, product) == implements(renderer(format), product));
        }
    // The table itself: every format but JSON Lines shows the documents; check-answers, the quiz
    // and bench are text (table) or JSON; JSON Lines writes only lines: a summary's, train's curve.
    for (const Format format : {Format::table, Format::json, Format::markdown, Format::csv})
        for (const Product product : {Product::trace, Product::summary, Product::similarity, Product::comparison,
                                      Product::check, Product::decode, Product::gradients})
            CHECK(shows(format, product));
    for (const Product product : {Product::answers, Product::quiz, Product::bench, Product::training, Product::rnn}) {
        CHECK(shows(Format::table, product));
        CHECK(shows(Format::json, product));
        CHECK_FALSE(shows(Format::markdown, product));
        CHECK_FALSE(shows(Format::csv, product));
    }
    for (const Product product : products)
        CHECK(shows(Format::jsonl, product) == (product == Product::summary || product == Product::training));
    CHECK(formats_showing(Product::training) == std::vector<std::string>{"table", "json", "jsonl"});
    // The page: a trace (its gradients too), a summary, a decode.
    for (const Product product : products)
        CHECK(shows(Format::html, product) ==
              (product == Product::trace || product == Product::summary || product == Product::decode));
    // The choices a command offers come from the table, in its order.
    CHECK(formats_showing(Product::trace) == std::vector<std::string>{"table", "json", "markdown", "csv", "html"});
    CHECK(formats_showing(Product::summary) == std::vector<std::string>{"table", "json", "markdown", "csv", "jsonl", "html"});
    CHECK(formats_showing(Product::quiz) == std::vector<std::string>{"table", "json"});
    CHECK(formats_showing(Product::bench) == std::vector<std::string>{"table", "json"});
}

TEST_CASE("a format that does not show a product is refused, saying which formats do", "[render][formats]") {
    const auto refusal = [](Format format, Product product) -> std::string {
        try {
            require_format(format, product);
        } catch (const UsageError& e) {
            return e.what();
        }
        return "(not refused)";
    };
    CHECK(refusal(Format::jsonl, Product::trace) ==
          "--format jsonl writes lines (a --summary's, one per query, or train's curve, one per point); a trace is one document: use --format json");
    CHECK(refusal(Format::jsonl, Product::decode) ==
          "--format jsonl writes lines (a --summary's, one per query, or train's curve, one per point); a decode is one document: use --format json");
    CHECK(refusal(Format::jsonl, Product::check) == "--format jsonl writes lines (a --summary's, one per query, or train's curve, one per point); the "
                                                     "report of --check is one document: use --format json");
    CHECK(refusal(Format::markdown, Product::answers) == "check-answers writes table (text) or json");
    CHECK(refusal(Format::jsonl, Product::answers) == "check-answers writes table (text) or json");
    CHECK(refusal(Format::csv, Product::quiz) == "quiz writes table (a transcript) or json");
    CHECK(refusal(Format::markdown, Product::bench) == "bench writes table or json");
    CHECK(refusal(Format::json, Product::quiz) == "(not refused)");
    CHECK(refusal(Format::markdown, Product::decode) == "(not refused)");
    // And the shorthand refuses before it writes anything.
    RenderOptions options;
    options.format = Format::jsonl;
    std::ostringstream out;
    const Trace empty{};
    CHECK_THROWS_AS(render(empty, options, out), UsageError);
    CHECK(out.str().empty());
}

TEST_CASE("JsonWriter::real writes a double as nlohmann_json writes it", "[render][json]") {
    std::vector<double> values{0.0, -0.0, 1.0, -1.0, 0.5, 0.25, 5e-05, 1e-4, 1e-5, 123.0, 1e15, 1e16, 1e17,
                               123456789012345.0, 1234567890123456.0, 1.0 / 3, 2.0 / 3, 0.1, 0.2, 0.30000000000000004,
                               std::numeric_limits<double>::max(), std::numeric_limits<double>::min(),
                               std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::epsilon(), 6.02e23,
                               -2.5e-300};
    std::uint64_t state = 12345;  // a few thousand more, their bits drawn by splitmix64
    for (int i = 0; i < 4000; ++i) {
        std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        double v = 0;
        std::memcpy(&v, &z, sizeof v);
        if (std::isfinite(v)) values.push_back(v);
        values.push_back(static_cast<double>(z % 100000) / 10000);  // four decimals, as answers have
    }
    for (const double v : values) {
        fmt::memory_buffer out;
        JsonWriter(out).real(v);
        INFO(nlohmann::json(v).dump());
        CHECK(std::string(out.data(), out.size()) == nlohmann::json(v).dump());
    }
}
