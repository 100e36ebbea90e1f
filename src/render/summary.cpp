// The summary in every format. Table and markdown show the first and last rows of a long list;
// JSON (schema attntrace.summary/1, docs/json-output.md) and CSV hold every query.
#include "render/summary.hpp"

#include "render/json_writer.hpp"
#include "render/number.hpp"
#include "render/stage_writers.hpp"
#include "render/text.hpp"

#include <fmt/format.h>

#include <cmath>

namespace attntrace {
namespace {

std::string top_text(const Summary& s, const QuerySummary& q, int digits) {
    std::string text;
    for (const auto& key : q.top)
        text += fmt::format("{}{} {}", text.empty() ? "" : ", ", s.tokens[static_cast<std::size_t>(key.index)],
                            format_significant(key.weight, digits));
    return text;
}

// Which rows a long list shows: all, or the first and last `summary_rows_shown`.
bool shown(std::size_t i, std::size_t n) {
    return n <= 2 * summary_rows_shown + 1 || i < summary_rows_shown || i >= n - summary_rows_shown;
}

void render_table(const Summary& s, const RenderOptions& options, std::ostream& out) {
    const std::size_t n = s.queries.size();
    out << fmt::format("attntrace · {} mode · summary of {} quer{} · {} · {} · {}\n", to_string(s.mode), n,
                       n == 1 ? "y" : "ies", dims_text(s.dims), to_string(s.dtype), s.origin);
    if (!s.description.empty()) out << s.description << '\n';
    for (const auto& note : s.notes) out << "note: " << note << '\n';
    if (s.weights == WeightsOrigin::generated)
        out << fmt::format("weights: generated from seed {} (splitmix64), not learned\n", s.seed);
    out << fmt::format("entropy in nats: 0 = all weight on one key; spread evenly over k keys = ln k (ln {} = {}){}\n\n", n,
                       format_fixed(std::log(static_cast<double>(n)), options.digits),
                       s.mode == Mode::causal ? "; query i sees i keys" : "");

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
        const QuerySummary& q = s.queries[i];
        out << fmt::format("{:>{}}  {}  {:>{}}  {:>{}}  {}\n", i + 1, index_width, pad_right(fit_width(s.tokens[i], 24), token_width),
                           format_significant(q.max_weight, options.digits), number_width,
                           format_fixed(q.entropy, options.digits), std::max(number_width, 7), top_text(s, q, options.digits));
    }
    if (s.context) {
        out << fmt::format("\ncontext · {}×{}: see --format json or csv for the context vectors\n", s.context->rows(),
                           s.context->cols());
    }
}

void render_json(const Summary& s, std::ostream& os) {
    fmt::memory_buffer out;
    const auto text = [&](std::string_view t) { out.append(t); };
    text("{\n  \"schema\": \"attntrace.summary/1\",\n  \"mode\": ");
    append_json_string(out, to_string(s.mode));
    text(",\n  \"normalize\": \"softmax\",\n  \"dtype\": ");
    append_json_string(out, to_string(s.dtype));
    text(",\n  \"input\": ");
    append_json_string(out, s.origin);
    text(",\n  \"description\": ");
    append_json_string(out, s.description);
    text(",\n  \"weights\": ");
    append_weights_origin(out, s.weights, s.seed);
    text(",\n  \"notes\": ");
    append_json_string_array(out, s.notes);
    fmt::format_to(std::back_inserter(out), ",\n  \"n\": {},\n  \"top\": {},\n  \"dims\": ", s.queries.size(), s.top);
    append_json_dims(out, s.dims);
    text(",\n  \"queries\": [");
    for (std::size_t i = 0; i < s.queries.size(); ++i) {
        const QuerySummary& q = s.queries[i];
        fmt::format_to(std::back_inserter(out), "{}\n    {{\"index\": {}, \"token\": ", i ? "," : "", i);
        append_json_string(out, s.tokens[i]);
        text(", \"top\": [");
        for (std::size_t t = 0; t < q.top.size(); ++t) {
            fmt::format_to(std::back_inserter(out), "{}{{\"index\": {}, \"token\": ", t ? ", " : "", q.top[t].index);
            append_json_string(out, s.tokens[static_cast<std::size_t>(q.top[t].index)]);
            text(", \"weight\": ");
            append_json_number(out, q.top[t].weight, s.dtype);
            text("}");
        }
        text("], \"max_weight\": ");
        append_json_number(out, q.max_weight, s.dtype);
        text(", \"entropy\": ");
        append_json_number(out, q.entropy, s.dtype);
        text("}");
        if (out.size() > (1 << 16)) flush(out, os);  // stream long lists instead of holding them
    }
    text("\n  ]");
    if (s.context) {
        text(",\n  \"context\": ");
        append_json_matrix(out, *s.context, s.dtype, "  ");
    }
    text("\n}\n");
    flush(out, os);
}

// CSV: one row per query: index, token, max_weight, entropy, then key/weight pairs.
void render_csv(const Summary& s, const RenderOptions& options, std::ostream& out) {
    out << "index,token,max_weight,entropy";
    for (std::size_t t = 1; t <= s.top; ++t) out << fmt::format(",key{},weight{}", t, t);
    out << '\n';
    for (std::size_t i = 0; i < s.queries.size(); ++i) {
        const QuerySummary& q = s.queries[i];
        out << fmt::format("{},{},{},{}", i, csv_text(s.tokens[i]), format_significant(q.max_weight, options.digits),
                           format_fixed(q.entropy, options.digits));
        for (std::size_t t = 0; t < s.top; ++t)
            if (t < q.top.size())
                out << ',' << csv_text(s.tokens[static_cast<std::size_t>(q.top[t].index)]) << ','
                    << format_significant(q.top[t].weight, options.digits);
            else
                out << ",,";
        out << '\n';
    }
}

void render_markdown(const Summary& s, const RenderOptions& options, std::ostream& out) {
    const std::size_t n = s.queries.size();
    out << fmt::format("# attntrace: {} mode, summary of {} queries ({})\n\n", to_string(s.mode), n, markdown_cell(s.origin));
    out << "| # | query | max | entropy | top keys (weight) |\n|---:|---|---:|---:|---|\n";
    for (std::size_t i = 0; i < n; ++i) {
        if (!shown(i, n)) {
            if (i == summary_rows_shown) out << fmt::format("| … | {} more | | | |\n", n - 2 * summary_rows_shown);
            continue;
        }
        out << fmt::format("| {} | {} | {} | {} | {} |\n", i + 1, markdown_cell(s.tokens[i]),
                           format_significant(s.queries[i].max_weight, options.digits),
                           format_fixed(s.queries[i].entropy, options.digits),
                           markdown_cell(top_text(s, s.queries[i], options.digits)));
    }
}

}  // namespace

void render_summary(const Summary& summary, const RenderOptions& options, std::ostream& out) {
    switch (options.format) {
    case Format::table: render_table(summary, options, out); return;
    case Format::json: render_json(summary, out); return;
    case Format::markdown: render_markdown(summary, options, out); return;
    case Format::csv: render_csv(summary, options, out); return;
    }
}

}  // namespace attntrace
