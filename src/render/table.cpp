// The terminal format: per stage a heading and an aligned table with token labels. With
// colour on, score and weight cells are shaded by value and a legend follows the table.
#include "attention/modes.hpp"
#include "render/cells.hpp"
#include "render/explain.hpp"
#include "render/formats.hpp"
#include "render/number.hpp"
#include "render/reports.hpp"
#include "render/shading.hpp"
#include "render/stage_parts.hpp"
#include "render/summary_text.hpp"
#include "render/text.hpp"
#include "render/worked_text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

namespace attntrace {
namespace {

constexpr std::size_t max_label_width = 24;
constexpr std::string_view gap = "  ";
constexpr std::string_view ellipsis = "…";

// Shading: backgrounds from the xterm 256-colour cube, white to dark blue. Light cells get
// black text, dark cells white text.
struct Colour {
    int background;
    int foreground;
};
constexpr Colour shades[] = {{231, 16}, {189, 16}, {147, 16}, {105, 16},
                            {63, 231}, {21, 231}, {19, 231}, {17, 231}};
constexpr int shade_count = static_cast<int>(std::size(shades));

// Value range of entries (masked −∞ and a quiz's hidden entries excluded: a hidden entry must
// not widen the legend's range and give itself away).
struct Range {
    double low = INFINITY, high = -INFINITY;

    void add(double value) {
        low = std::min(low, value);
        high = std::max(high, value);
    }
    void add(const Range& other) {
        low = std::min(low, other.low);
        high = std::max(high, other.high);
    }
};

Range row_range(const Stage& stage, Eigen::Index r) {
    Range range;
    for (Eigen::Index c = 0; c < stage.col_count(); ++c)
        if (!stage.is_masked(r, c) && !stage.is_hidden(r, c)) range.add(stage.data(r, c));
    return range;
}

int level_of(double value, Range range) { return shade_level(value, range.low, range.high, shade_count); }

// The stage a row belongs to: its own table's, or in a table of several quantities (decode)
// the row's.
StageId row_stage(const Stage& stage, Eigen::Index r) {
    return stage.row_stages.empty() ? stage.id : stage.row_stages[static_cast<std::size_t>(r)];
}

// Stages over (query, key) pairs, whose rows are each one query's distribution (or what
// becomes one): --shade row shades them row by row.
bool query_key(StageId id) {
    return id == StageId::scores || id == StageId::scaled || id == StageId::masked || id == StageId::weights;
}

// What a row is shaded against. fixed: the stage's own range (weights 0 to 1, cosines −1 to
// 1), the same for every row; table: one range for the rows of its stage, from their smallest
// entry to their largest; own: the row's own range (weights: 0 to its largest).
enum class Basis { fixed, table, own };
struct RowShade {
    Range range;
    Basis basis = Basis::table;
    StageId stage = StageId::weights;
};

std::vector<RowShade> shading_rows(const Stage& stage, const RenderOptions& options) {
    const bool mixed = !stage.row_stages.empty();
    // One range per stage the rows belong to.
    std::vector<std::pair<StageId, Range>> tables;
    const auto table_of = [&](StageId id) -> Range& {
        for (auto& [table, range] : tables)
            if (table == id) return range;
        return tables.emplace_back(id, Range{}).second;
    };
    for (Eigen::Index r = 0; r < stage.row_count(); ++r) table_of(row_stage(stage, r)).add(row_range(stage, r));
    std::vector<RowShade> rows;
    for (Eigen::Index r = 0; r < stage.row_count(); ++r) {
        RowShade row;
        row.stage = row_stage(stage, r);
        const bool weights = row.stage == StageId::weights;
        // A score row of a table of several quantities is a quantity of its own: its own range.
        const bool own = (options.shade == Shade::row && query_key(row.stage)) || (mixed && !weights);
        if (own) {
            row.basis = Basis::own;
            row.range = row_range(stage, r);
            if (weights) row.range.low = std::min(row.range.low, 0.0);
        } else if (options.shade == Shade::absolute && weights) {
            // Weights lie in [0, 1]; dividing by the row sum can leave some outside, and the
            // scale then reaches them (the legend gives its ends).
            row.basis = Basis::fixed;
            row.range = table_of(row.stage);
            row.range.add(Range{0, 1});
        } else if (options.shade == Shade::absolute && row.stage == StageId::cosine) {
            row.basis = Basis::fixed;
            row.range = Range{-1, 1};
        } else {
            row.basis = Basis::table;
            row.range = table_of(row.stage);
            if (mixed && weights) row.range.low = std::min(row.range.low, 0.0);
        }
        rows.push_back(row);
    }
    return rows;
}

std::string painted(std::string_view text, Colour shade) {
    return fmt::format("\x1b[48;5;{}m\x1b[38;5;{}m{}\x1b[0m", shade.background, shade.foreground, text);
}

bool is_shaded(const Stage& stage) {
    switch (stage.id) {
    case StageId::scores:
    case StageId::scaled:
    case StageId::masked:
    case StageId::weights:
    case StageId::dot:
    case StageId::cosine: return true;
    default: return false;
    }
}

struct Column {
    std::string header;
    std::vector<std::string> cells;
    bool align_left = false;
    std::size_t width = 0;

    void measure() {
        width = display_width(header);
        for (const auto& cell : cells) width = std::max(width, display_width(cell));
    }
    std::string pad(std::string_view text) const {
        return align_left ? pad_right(text, width) : pad_left(text, width);
    }
};

// Which data columns fit beside the fixed ones: all, or the first `left` and the last
// columns from `right` on, with an ellipsis column between them.
struct ColumnWindow {
    std::size_t left = 0;
    std::size_t right = 0;
    bool elided() const { return left < right; }
};

ColumnWindow fit_columns(const std::vector<Column>& data, std::size_t fixed_width, std::size_t limit) {
    std::size_t total = fixed_width;
    for (const auto& column : data) total += gap.size() + column.width;
    if (limit == 0 || total <= limit) return {data.size(), data.size()};

    ColumnWindow window{0, data.size()};
    std::size_t used = fixed_width + gap.size() + 1;  // the ellipsis column
    for (bool take_left = true; window.left < window.right; take_left = !take_left) {
        const std::size_t next = take_left ? window.left : window.right - 1;
        const std::size_t need = gap.size() + data[next].width;
        const bool kept_one = window.left > 0 || window.right < data.size();
        if (used + need > limit && kept_one) break;
        used += need;
        if (take_left) ++window.left;
        else --window.right;
    }
    return window;
}

// The colour steps of `range`, each labelled with the value where it starts.
std::string scale_steps(Range range, int digits) {
    std::string steps;
    for (int level = 0; level < shade_count; ++level) {
        // Between low and high without forming high − low, which overflows near ±1e308.
        const double f = static_cast<double>(level) / shade_count;
        const double from = range.low * (1 - f) + range.high * f;
        steps += fmt::format(" {}", painted(fmt::format(" {} ", format_fixed(from, digits)), shades[level]));
    }
    return steps + fmt::format("  (up to {})", format_fixed(range.high, digits));
}

// The colour scale under a shaded table, saying what it is: one scale (the stage's own
// fixed range, or the table's) with the value of each step, or, row by row, the share of
// each row's range; in a table of several quantities (decode), both.
void write_legend(const Stage& stage, const RenderOptions& options, const std::vector<RowShade>& rows, std::ostream& out) {
    std::vector<std::string> own_weights, own_others;  // labels of the rows shaded on their own range
    const RowShade* shared = nullptr;                  // a row on a scale shared with others
    for (std::size_t r = 0; r < rows.size(); ++r) {
        if (rows[r].basis != Basis::own) {
            shared = &rows[r];
            continue;
        }
        (rows[r].stage == StageId::weights ? own_weights : own_others).push_back(stage.rows[r]);
    }
    const bool mixed = !stage.row_stages.empty();
    const bool fixed_weights = shared && shared->basis == Basis::fixed && shared->stage == StageId::weights;
    std::string shared_text;
    if (shared && shared->basis == Basis::fixed)
        shared_text = shared->stage == StageId::weights
                          ? (shared->range.low == 0 && shared->range.high == 1
                                 ? "weights on their own scale, 0 to 1, the same in every row"
                                 : "weights on one scale for every row, 0 to 1 widened to the weights outside it")
                          : "cosines on their own scale, −1 to 1";
    else if (shared)
        shared_text = query_key(shared->stage) && shared->stage != StageId::weights && options.shade == Shade::absolute
                          ? "one scale for the whole table, from its smallest entry to its largest (scores have no "
                            "fixed range)"
                          : "one scale for the whole table, from its smallest entry to its largest";
    if (mixed) {  // decode: the score rows each on their own range, the weight row as weights are
        if (shared) shared_text = "the weight row: " + (fixed_weights ? std::string("weights on their own scale, 0 to 1")
                                                                      : std::string("from 0 to its largest weight"));
        std::string own;
        if (!own_others.empty())
            own = fmt::format("the {} row{} each from the row's smallest entry to its largest", fmt::join(own_others, " and "),
                              own_others.size() == 1 ? "" : "s");
        if (!own_weights.empty())
            own += fmt::format("{}the {} row as a share of its largest weight", own.empty() ? "" : "; ",
                               fmt::join(own_weights, " and "));
        if (shared) {
            put_wrapped(out, fmt::format("shading: {}; {}:{}", own, shared_text, scale_steps(shared->range, options.digits)),
                        options.width);
            return;
        }
        std::string legend = "shading per row: " + own + ":";
        for (int level = 0; level < shade_count; ++level)
            legend += fmt::format(" {}", painted(fmt::format(" {}% ", level * 100 / shade_count), shades[level]));
        put_wrapped(out, legend, options.width);
        return;
    }
    if (!shared) {
        std::string legend = stage.id == StageId::weights ? "shading per row, as a share of the row's largest weight:"
                                                           : "shading per row, from the row's smallest entry to its largest:";
        for (int level = 0; level < shade_count; ++level)
            legend += fmt::format(" {}", painted(fmt::format(" {}% ", level * 100 / shade_count), shades[level]));
        put_wrapped(out, legend + (stage.id == StageId::weights
                                       ? "  (a flat row looks as dark as a peaked one; --shade absolute: every weight on 0 to 1)"
                                       : "  (--shade absolute: one scale for the whole table)"),
                    options.width);
        return;
    }
    if (!(shared->range.high > shared->range.low)) return;
    put_wrapped(out,
                fmt::format("shading: {}:{}{}", shared_text, scale_steps(shared->range, options.digits),
                            query_key(stage.id) ? "  (--shade row: each row on its own scale)" : ""),
                options.width);
}

void write_matrix(const Stage& stage, const RenderOptions& options, std::ostream& out) {
    const StageText text = stage_text(stage, options.digits);
    Column labels{"", {}, true};
    for (const auto& label : text.row_labels) labels.cells.push_back(fit_width(label, max_label_width));
    std::vector<Column> data, extra;
    for (std::size_t c = 0; c < text.header.size(); ++c) {
        Column column{fit_width(text.header[c], max_label_width), {}, c >= text.data_columns && text.header[c] == "strongest"};
        for (const auto& row : text.rows) column.cells.push_back(fit_width(row[c], max_label_width));
        column.measure();
        (c < text.data_columns ? data : extra).push_back(std::move(column));
    }
    labels.measure();
    std::size_t fixed = labels.width;
    for (const auto& column : extra) fixed += gap.size() + column.width;
    const ColumnWindow window = fit_columns(data, fixed, options.width);

    const bool shade = options.color && is_shaded(stage);
    const std::vector<RowShade> ranges = shade ? shading_rows(stage, options) : std::vector<RowShade>{};
    // row < 0: the header line.
    const auto write_row = [&](long row) {
        const auto cell_of = [row](const Column& column) -> const std::string& {
            return row < 0 ? column.header : column.cells[static_cast<std::size_t>(row)];
        };
        std::string line = labels.pad(cell_of(labels));
        for (std::size_t i = 0; i < data.size(); ++i) {
            if (i == window.left && window.elided()) {
                line += gap;
                line += ellipsis;
                i = window.right;
                if (i == data.size()) break;
            }
            line += gap;
            const std::string cell = data[i].pad(cell_of(data[i]));
            const auto r = static_cast<Eigen::Index>(row), c = static_cast<Eigen::Index>(i);
            if (shade && row >= 0 && !stage.is_masked(r, c) && !stage.is_hidden(r, c))
                line += painted(cell, shades[level_of(stage.data(r, c), ranges[static_cast<std::size_t>(row)].range)]);
            else
                line += cell;
        }
        for (const auto& column : extra) {
            line += gap;
            line += column.pad(cell_of(column));
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out << line << '\n';
    };
    for (long row = -1; row < static_cast<long>(text.rows.size()); ++row) write_row(row);
    if (window.elided()) {
        std::vector<std::string> hidden(text.header.begin() + static_cast<long>(window.left),
                                        text.header.begin() + static_cast<long>(window.right));
        put_wrapped(out,
                    fmt::format("… hides {} of the {} columns ({}) to fit {} columns: --width 0 shows them all, "
                                "--digits 2 fits more, -s shows fewer stages, -f csv or json gives every number",
                                hidden.size(), text.data_columns, bounded_list(hidden), options.width),
                    options.width);
    }
    if (shade) write_legend(stage, options, ranges, out);
}

void write_preamble(const Trace& trace, const RenderOptions& options, std::ostream& out) {
    const std::size_t width = options.width;
    put_wrapped(out, trace_title(trace), width);
    if (!trace.description.empty()) put_wrapped(out, trace.description, width);
    for (const auto& note : trace.notes) put_wrapped(out, "note: " + note, width);
    if (trace.weights == WeightsOrigin::generated)
        put_wrapped(out,
                    fmt::format("weights: generated from seed {} (splitmix64), not learned: the pattern shows the "
                                "mechanics, not meaning; give your own under \"weights\"",
                                trace.seed),
                    width);
    out << '\n';
}

// Heading, then the reason (skipped) or the title and the aligned table.
void write_stage(const Stage& stage, const RenderOptions& options, std::ostream& out) {
    put_wrapped(out,
                fmt::format("{}{} · {}×{} · {}{}", stage.name(), stage.head > 0 ? fmt::format(" · head {}", stage.head) : "",
                            stage.row_count(), stage.col_count(), stage.formula, stage.applied ? "" : " · not applied"),
                options.width);
    if (!stage.applied) {
        put_wrapped(out, stage.reason, options.width);
        return;
    }
    put_wrapped(out, stage.title, options.width);
    write_matrix(stage, options, out);
}


// "parameters · W_q, W_k, W_v · given in the input", then each matrix with its heading.
void write_parameters(const Trace& trace, const RenderOptions& options, std::ostream& out) {
    if (options.explain)
        for (const auto& line : parameters_explanation(trace)) put_wrapped(out, "  " + line, options.width);
    put_wrapped(out, "parameters · " + parameters_heading(trace), options.width);
    for (const auto& p : trace.parameters) {
        const Stage table = parameter_table(p);
        put_wrapped(out, fmt::format("{} · {}×{} · {}", p.name, table.row_count(), table.col_count(), p.formula), options.width);
        write_matrix(table, options, out);
    }
}

class TableRenderer final : public TextRenderer, public ShowsGradients, public ShowsAnswers, public ShowsQuiz, public ShowsBench,
                            public ShowsTraining, public ShowsRnn {
public:
    void gradients(const StreamGradients& g, const RenderOptions& options, std::ostream& out) const override {
        write_gradients_table(g, options, out);
    }

public:
    // Measured on the project's machine, one thread: a full trace of 1000 tokens (4 n×n stages,
    // 4 million numbers) took 350 ns of CPU time a number, a decode (1000 tokens of 8 numbers)
    // 495, similarity (two tables of 1500 words) 950; the rates leave a quarter to a third
    // more. Each cell is held as a string, and a second, padded copy of it.
    RenderCost cost(const RenderOptions& options) const override {
        RenderCost c;
        c.cell_bytes = 2 * cell_string_bytes(options.digits);
        c.seconds_per_number = 450e-9;
        c.decode = DecodeLayout::reports;
        c.decode_seconds_per_number = 700e-9;
        c.similarity_pair_bytes = similarity_pair_bytes(options.digits);
        c.similarity_number_chars = options.digits + 8;
        c.similarity_seconds_per_number = 1.2e-6;
        return c;
    }

    void trace(const Trace& trace, const RenderOptions& options, std::ostream& out) const override {
        write_preamble(trace, options, out);
        bool first = true;
        for (const Shown& item : shown_stages(trace, options)) {
            if (!first) out << '\n';
            first = false;
            if (!item.stage) {
                write_parameters(trace, options, out);
                continue;
            }
            const Stage& stage = *item.stage;
            if (options.explain)
                for (const auto& line : explanation(trace, stage)) put_wrapped(out, "  " + line, options.width);
            write_stage(stage, options, out);
        }
        if (trace.worked) {
            out << '\n';
            for (const auto& line : worked_lines(*trace.worked, options.digits)) put_wrapped(out, line, options.width);
        }
    }

    void summary(const Summary& s, const RenderOptions& options, std::ostream& out) const override {
        const std::size_t n = s.tokens.size();
        const std::string weighting = weighting_text(s);
        const std::size_t width = options.width;
        put_wrapped(out,
                    fmt::format("attntrace · {} · summary of {} quer{} · {} · {}{} · {}", mode_text(s), n,
                                n == 1 ? "y" : "ies", dims_text(s.dims), to_string(s.dtype),
                                weighting == "softmax" ? "" : " · " + weighting, s.origin),
                    width);
        if (!s.description.empty()) put_wrapped(out, s.description, width);
        for (const auto& note : s.notes) put_wrapped(out, "note: " + note, width);
        if (s.weights == WeightsOrigin::generated)
            put_wrapped(out, fmt::format("weights: generated from seed {} (splitmix64), not learned", s.seed), width);
        put_wrapped(out,
                    fmt::format("entropy in nats: 0 = all weight on one key; spread evenly over k keys = ln k (ln {} = {}){}",
                                n, format_fixed(std::log(static_cast<double>(n)), options.digits),
                                mode_spec(s.mode).causal && !s.window && !s.padding ? "; query i sees i keys" : ""),
                    width);
        for (const HeadSummary& h : s.per_head) summary_rows(s, h, options, out);
        if (s.context) {
            out << fmt::format("\n{} · {}×{}: see --format json for the {} vectors\n",
                               s.context_is_output ? "output" : "context", s.context->rows(), s.context->cols(),
                               s.context_is_output ? "output" : "context");
        }
    }

    // One head's rows (the only head's, without a heading).
    static void summary_rows(const Summary& s, const HeadSummary& h, const RenderOptions& options, std::ostream& out) {
        const std::size_t n = s.tokens.size();
        out << '\n';
        if (h.head > 0) out << head_heading(s, h) << '\n';
        std::size_t token_width = display_width("query");
        for (std::size_t i = 0; i < n; ++i)
            if (shown(i, n)) token_width = std::max(token_width, display_width(fit_width(s.tokens[i], 24)));
        const std::size_t index_width = std::max<std::size_t>(1, fmt::formatted_size("{}", n));
        const int number_width = options.digits + 6;  // room for 1.234e-05
        out << fmt::format("{:>{}}  {}  {:>{}}  {:>{}}  top keys (weight)\n", "#", index_width, pad_right("query", token_width),
                           "max", number_width, "entropy", std::max(number_width, 7));
        for (std::size_t i = 0; i < n; ++i) {
            if (!shown(i, n)) {
                if (i == summary_rows_shown)
                    out << fmt::format("{:>{}}  … {} more queries (--format json or csv lists them all)\n", "…", index_width,
                                       n - 2 * summary_rows_shown);
                continue;
            }
            const QuerySummary& q = h.queries[i];
            out << fmt::format("{:>{}}  {}  {:>{}}  {:>{}}  {}\n", i + 1, index_width, pad_right(fit_width(s.tokens[i], 24), token_width),
                               format_significant(q.max_weight, options.digits), number_width,
                               format_fixed(q.entropy, options.digits), std::max(number_width, 7), top_text(s, q, options.digits));
        }
    }

    void check(const Trace&, const CheckReport& report, const RenderOptions& options, std::ostream& out) const override {
        for (const auto& c : report.checks) put_wrapped(out, fmt::format("ok       {}: {}", c.name, c.measured), options.width);
        for (const auto& w : report.warnings) put_wrapped(out, fmt::format("warning  {}", w), options.width);
        out << check_verdict(report) << '\n';
    }

    void answers(const AnswerReport& report, const RenderOptions& options, std::ostream& out) const override {
        write_answers_text(report, options, out);
    }
    void quiz(const QuizEvent& event, const RenderOptions& options, std::ostream& out) const override {
        write_quiz_text(event, options, out);
    }
    void bench(const BenchReport& report, const RenderOptions&, std::ostream& out) const override {
        write_bench_text(report, out);
    }
    void training(const TrainReport& report, const RenderOptions& options, std::ostream& out) const override {
        write_training_text(report, options, out);
    }
    void rnn(const RnnReport& r, const RenderOptions& options, std::ostream& out) const override {
        report(rnn_text_report(r), options, out);
    }

    void report(const Report& report, const RenderOptions& options, std::ostream& out) const override {
        put_wrapped(out, report.title, options.width);
        for (const auto& line : report.preamble) put_wrapped(out, line, options.width);
        for (const auto& table : report.tables) {
            out << '\n';
            write_stage(table, options, out);
        }
        if (!report.footer.empty()) out << '\n';
        for (const auto& line : report.footer) put_wrapped(out, line, options.width);
    }
};

}  // namespace

void write_table_matrix(const Stage& stage, const RenderOptions& options, std::ostream& out) {
    write_matrix(stage, options, out);
}

const Renderer& table_renderer() {
    static const TableRenderer renderer;
    return renderer;
}

}  // namespace attntrace
