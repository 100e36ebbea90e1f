// render: a product → text. One file per format (render/<format>.cpp), each a Renderer that
// shows the products the table of render.cpp gives it — a trace, a summary, similarity
// tables, a comparison, --check's report, a decode, the gradients of the streaming backward
// pass, check-answers' verdicts, a quiz, a benchmark — each through its interface below (a test checks that the renderers and the
// table agree). Renderers format what they are given and never compute attention themselves.
// (The SVG heatmap, a picture of a trace's weights rather than a format of every product, is
// render/svg.hpp.)
#pragma once

#include "attention/check.hpp"
#include "attention/compare.hpp"
#include "attention/decode.hpp"
#include "attention/similarity.hpp"
#include "attention/summary.hpp"
#include "core/stage.hpp"

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

namespace attntrace {

enum class Format { table, json, markdown, csv, jsonl, html };
inline constexpr NameTable<Format, 6> format_names{{{Format::table, "table"},
                                                    {Format::json, "json"},
                                                    {Format::markdown, "markdown"},
                                                    {Format::csv, "csv"},
                                                    {Format::jsonl, "jsonl"},
                                                    {Format::html, "html"}}};
constexpr const auto& names_of(Format) { return format_names; }

// How tables and pictures shade a stage. absolute: on the stage's own fixed range where it
// has one, so one colour is one value in every row (weights 0 to 1, cosines −1 to 1), and on
// one scale for the whole table where it has none (scores); table: from the table's smallest
// entry to its largest; row: each row of a (query, key) stage on its own range (a row is
// one distribution over the keys), which shows each row's shape but makes a flat row look
// as dark as a peaked one.
enum class Shade { absolute, row, table };
inline constexpr NameTable<Shade, 3> shade_names{
    {{Shade::absolute, "absolute"}, {Shade::row, "row"}, {Shade::table, "table"}}};
constexpr const auto& names_of(Shade) { return shade_names; }

struct RenderOptions {
    Format format = Format::table;
    int digits = 4;                // decimals in tables
    std::size_t width = 0;         // terminal columns for tables; 0: no limit
    std::vector<StageId> stages;   // the stages to show, empty: all
    bool color = false;            // tables: shade scores and weights (ANSI 256 colours)
    Shade shade = Shade::absolute;  // the range a cell is shaded against
    int head = 0;                  // several heads: show only this one's stages (0: all)
    bool explain = false;          // a few sentences and the shapes before each stage
    bool tidy = false;             // csv: one line per number (stage, head, row, col, …, value, masked)
};

// The products a format may show: which format shows which is the table of render.cpp.
enum class Product { trace, summary, similarity, comparison, check, decode, gradients, answers, quiz, bench, training, rnn };

// How a format writes a decode, for the estimates of commands/guards.
enum class DecodeLayout {
    reports,      // every step's report (its tables and their labels) is made before the first is written
    cache_lines,  // a line per step, head and cached key, written as it goes
    stream,       // each step's numbers written as it goes
};

// What writing costs in a format, for the estimates of commands/guards (decide, before any
// work, whether a request fits --max-memory and --max-time): each renderer's own figures,
// measured on the project's machine (docs/robustness.md).
struct RenderCost {
    // A trace: the bytes one number of the widest stage takes while that stage is written, and
    // how many times its labels are held meanwhile (times their bytes).
    double cell_bytes = 0;
    double label_copies = 2;
    // The labels each stage writes in full into the output (times their bytes, and the stages).
    double written_label_copies = 0;
    double seconds_per_number = 0;  // a trace's, on one thread
    // A decode: how it is written, its seconds per number written (and per line written, for
    // a line per cached key).
    DecodeLayout decode = DecodeLayout::stream;
    double decode_seconds_per_number = 0;
    double decode_seconds_per_line = 0;
    // Similarity: the bytes a (word, word) pair holds while both tables are written (the two
    // numbers in the result and in the report, and their text), the characters of a number
    // written, and the seconds per number.
    double similarity_pair_bytes = 0;
    double similarity_number_chars = 0;
    double similarity_seconds_per_number = 0;
};

// A format. The products it shows are the interfaces below that its renderer implements.
class Renderer {
public:
    virtual ~Renderer() = default;
    virtual RenderCost cost(const RenderOptions& options) const = 0;
};

struct StreamGradients;  // attention/streaming_backward.hpp
struct AnswerReport;     // practice/verdicts.hpp
struct QuizEvent;     // practice/quiz.hpp
struct BenchReport;   // core/bench.hpp
struct TrainReport;   // attention/training.hpp
struct RnnReport;     // attention/rnn.hpp

// One interface per product.
class ShowsTrace {
public:
    virtual void trace(const Trace& trace, const RenderOptions& options, std::ostream& out) const = 0;
protected:
    ~ShowsTrace() = default;
};
class ShowsSummary {
public:
    virtual void summary(const Summary& summary, const RenderOptions& options, std::ostream& out) const = 0;
protected:
    ~ShowsSummary() = default;
};
class ShowsSimilarity {
public:
    virtual void similarity(const Similarity& similarity, const RenderOptions& options, std::ostream& out) const = 0;
protected:
    ~ShowsSimilarity() = default;
};
class ShowsComparison {
public:
    virtual void comparison(const Comparison& comparison, const RenderOptions& options, std::ostream& out) const = 0;
protected:
    ~ShowsComparison() = default;
};
// --check's verdict on a trace that passed: each invariant with its measured figure.
class ShowsCheck {
public:
    virtual void check(const Trace& trace, const CheckReport& report, const RenderOptions& options, std::ostream& out) const = 0;
protected:
    ~ShowsCheck() = default;
};
// `attntrace decode`: the steps of generation with a KV cache (options.explain: why it works).
class ShowsDecode {
public:
    virtual void decode(const Decode& decode, const RenderOptions& options, std::ostream& out) const = 0;
protected:
    ~ShowsDecode() = default;
};
// --summary --backward: the streaming backward pass's loss, its parameters' gradients and the
// length of each token's gradient ‖dL/dx_i‖.
class ShowsGradients {
public:
    virtual void gradients(const StreamGradients& gradients, const RenderOptions& options, std::ostream& out) const = 0;
protected:
    ~ShowsGradients() = default;
};
// check-answers: each given stage's verdict.
class ShowsAnswers {
public:
    virtual void answers(const AnswerReport& report, const RenderOptions& options, std::ostream& out) const = 0;
protected:
    ~ShowsAnswers() = default;
};
// The quiz as it goes: each of its steps (a format may show some only, JSON the whole quiz at its end).
class ShowsQuiz {
public:
    virtual void quiz(const QuizEvent& event, const RenderOptions& options, std::ostream& out) const = 0;
protected:
    ~ShowsQuiz() = default;
};
// `attntrace bench`: the timings of the grid.
class ShowsBench {
public:
    virtual void bench(const BenchReport& report, const RenderOptions& options, std::ostream& out) const = 0;
protected:
    ~ShowsBench() = default;
};
// `attntrace train`: the task, the settings and the curve of a training run.
class ShowsTraining {
public:
    virtual void training(const TrainReport& report, const RenderOptions& options, std::ostream& out) const = 0;
protected:
    ~ShowsTraining() = default;
};
// `attntrace rnn`: the RNN's parameters, hidden states and influences beside attention's.
class ShowsRnn {
public:
    virtual void rnn(const RnnReport& report, const RenderOptions& options, std::ostream& out) const = 0;
protected:
    ~ShowsRnn() = default;
};

// The registry: the renderer of each format.
const Renderer& renderer(Format format);

// Whether `format` shows `product` (the table of render.cpp).
bool shows(Format format, Product product);
// Throws UsageError, saying which formats do, unless `format` shows `product`.
void require_format(Format format, Product product);
// The names of the formats that show `product`, in the table's order (a command's choices).
std::vector<std::string> formats_showing(Product product);

// Each product in the format of options.format, refused (require_format) where it does not show it.
void render(const Trace& trace, const RenderOptions& options, std::ostream& out);
void render(const Summary& summary, const RenderOptions& options, std::ostream& out);
void render(const Similarity& similarity, const RenderOptions& options, std::ostream& out);
void render(const Comparison& comparison, const RenderOptions& options, std::ostream& out);
void render(const Trace& trace, const CheckReport& report, const RenderOptions& options, std::ostream& out);
void render(const Decode& decode, const RenderOptions& options, std::ostream& out);
void render(const StreamGradients& gradients, const RenderOptions& options, std::ostream& out);
void render(const AnswerReport& report, const RenderOptions& options, std::ostream& out);
void render(const QuizEvent& event, const RenderOptions& options, std::ostream& out);
void render(const BenchReport& report, const RenderOptions& options, std::ostream& out);
void render(const TrainReport& report, const RenderOptions& options, std::ostream& out);
void render(const RnnReport& report, const RenderOptions& options, std::ostream& out);

// JSON Lines of a summary (render/jsonl.cpp): one whole JSON object a query, for the queries
// of `rows`, as the streaming path finishes them. Returns how many of them were written:
// the lines stop before a query whose numbers are not finite (the streaming path reports the
// overflow once it has finished). The same rows of a whole summary: summary_rows().
std::size_t write_summary_lines(const Summary& summary, const SummaryRows& rows, std::ostream& out);
SummaryRows summary_rows(const Summary& summary);

// One item a trace shows: a stage, or the parameters section (stage null).
struct Shown {
    StageId id;
    const Stage* stage;
};

// What a trace shows, in its order (several heads one after another): the stages `options`
// selects (all when none is named; only one head's with options.head), and the parameters
// section after the inputs.
std::vector<Shown> shown_stages(const Trace& trace, const RenderOptions& options);

}  // namespace attntrace
