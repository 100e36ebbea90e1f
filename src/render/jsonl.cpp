// JSON Lines (docs/output-formats.md): the summary of a long input as one JSON object per
// query, each on its own line with its schema (attntrace.summary-line/1), so that a consumer
// can read each line as it comes. The streaming path hands the lines over as it finishes
// them (write_summary_lines); rendering a whole summary writes the same lines at once. Only
// the summary has a line per item: a trace, --check, similarity and compare are refused.
#include "core/error.hpp"
#include "render/formats.hpp"
#include "render/json_writer.hpp"

#include <cmath>

namespace attntrace {
namespace {

using Layout = JsonWriter::Layout;

[[noreturn]] void refuse(std::string_view what) {
    throw UsageError(fmt::format("--format jsonl writes the lines of --summary, one per query; {} is one document: "
                                 "use --format json",
                                 what));
}

class JsonlRenderer final : public Renderer {
public:
    void trace(const Trace&, const RenderOptions&, std::ostream&) const override { refuse("a trace"); }
    void summary(const Summary& s, const RenderOptions&, std::ostream& out) const override {
        write_summary_lines(s, s.queries, s.context ? &*s.context : nullptr, 0, s.queries.size(), out);
    }
    void similarity(const Similarity&, const RenderOptions&, std::ostream&) const override {
        refuse("the similarity tables");
    }
    void comparison(const Comparison&, const RenderOptions&, std::ostream&) const override { refuse("a comparison"); }
    void check(const Trace&, const CheckReport&, const RenderOptions&, std::ostream&) const override {
        refuse("the report of --check");
    }
};

}  // namespace

bool summary_line_finite(const QuerySummary& q, const Matrix* context, std::size_t row) {
    if (!std::isfinite(q.max_weight) || !std::isfinite(q.entropy)) return false;
    for (const KeyWeight& key : q.top)
        if (!std::isfinite(key.weight)) return false;
    return !context || context->row(static_cast<Eigen::Index>(row)).allFinite();
}

void write_summary_lines(const Summary& s, const std::vector<QuerySummary>& queries, const Matrix* context,
                         std::size_t first, std::size_t count, std::ostream& out) {
    fmt::memory_buffer text;
    for (std::size_t i = first; i < first + count; ++i) {
        const QuerySummary& q = queries[i];
        JsonWriter json(text);
        json.object(Layout::inline_).key("schema").string("attntrace.summary-line/1");
        json.key("index").integer(static_cast<std::int64_t>(i)).key("token").string(s.tokens[i]);
        json.key("top").array(Layout::inline_);
        for (const auto& key : q.top)
            json.object(Layout::inline_)
                .key("index").integer(key.index)
                .key("token").string(s.tokens[static_cast<std::size_t>(key.index)])
                .key("weight").number(key.weight, s.dtype)
                .end();
        json.end();
        json.key("max_weight").number(q.max_weight, s.dtype).key("entropy").number(q.entropy, s.dtype);
        if (context) json.key("context").numbers(context->row(static_cast<Eigen::Index>(i)), s.dtype);
        json.end();
        text.push_back('\n');
        if (text.size() > (1 << 16)) flush(text, out);
    }
    flush(text, out);
}

const Renderer& jsonl_renderer() {
    static const JsonlRenderer renderer;
    return renderer;
}

}  // namespace attntrace
