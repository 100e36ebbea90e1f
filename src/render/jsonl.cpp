// JSON Lines (docs/output-formats.md): the summary of a long input as one JSON object per
// query, each on its own line with its schema (attntrace.summary-line/1), so that a consumer
// can read each line as it comes. The streaming path hands the lines over as it finishes them
// (write_summary_lines); rendering a whole summary writes the same lines at once. Only the
// summary has a line per item, and train's curve a line per point (render/train_report.cpp):
// the table of render.cpp refuses the other products here.
#include "render/formats.hpp"
#include "render/json_writer.hpp"

#include <cmath>

namespace attntrace {
namespace {

using Layout = JsonWriter::Layout;

// Whether a query's line holds only finite numbers.
bool finite(const SummaryRows& rows, std::size_t i) {
    for (const SummaryRows::Head& h : rows.heads) {
        const QuerySummary& q = (*h.queries)[i];
        if (!std::isfinite(q.max_weight) || !std::isfinite(q.entropy)) return false;
        for (const KeyWeight& key : q.top)
            if (!std::isfinite(key.weight)) return false;
    }
    return !rows.context || rows.context->row(static_cast<Eigen::Index>(i - rows.first)).allFinite();
}

class JsonlRenderer final : public Renderer, public ShowsSummary, public ShowsTraining {
public:
    // Only summaries, whose estimates do not depend on the format (commands/guards'
    // summary_bytes and summary_seconds): the other figures are JSON's, each line a JSON object.
    RenderCost cost(const RenderOptions& options) const override { return json_renderer().cost(options); }
    void summary(const Summary& s, const RenderOptions&, std::ostream& out) const override {
        write_summary_lines(s, summary_rows(s), out);
    }
    void training(const TrainReport& report, const RenderOptions&, std::ostream& out) const override {
        write_training_lines(report, out);
    }
};

}  // namespace

SummaryRows summary_rows(const Summary& s) {
    SummaryRows rows;
    rows.count = s.tokens.size();
    for (const HeadSummary& h : s.per_head) rows.heads.push_back({h.head, h.kv_head, &h.queries});
    rows.context = s.context;
    rows.context_is_output = s.context_is_output;
    return rows;
}

// One head: {"schema", "index", "token", "top", "max_weight", "entropy"[, "context" | "output"]};
// several: {"schema", "index", "token", "heads": [{"head"[, "kv_head"], "top", …}, …][, "output"]},
// as the JSON summary nests them.
std::size_t write_summary_lines(const Summary& s, const SummaryRows& rows, std::ostream& out) {
    fmt::memory_buffer text;
    std::size_t written = 0;
    for (std::size_t i = rows.first; i < rows.first + rows.count && finite(rows, i); ++i, ++written) {
        JsonWriter json(text);
        json.object(Layout::inline_).key("schema").string("attntrace.summary-line/1");
        json.key("index").integer(static_cast<std::int64_t>(i)).key("token").string(s.tokens[i]);
        if (rows.heads.size() == 1 && rows.heads.front().head == 0) {
            write_query(json, s, (*rows.heads.front().queries)[i]);
        } else {
            json.key("heads").array(Layout::inline_);
            for (const SummaryRows::Head& h : rows.heads) {
                json.object(Layout::inline_).key("head").integer(h.head);
                if (h.kv_head > 0) json.key("kv_head").integer(h.kv_head);
                write_query(json, s, (*h.queries)[i]);
                json.end();
            }
            json.end();
        }
        if (rows.context)
            json.key(rows.context_is_output ? "output" : "context")
                .numbers(rows.context->row(static_cast<Eigen::Index>(i - rows.first)), s.dtype);
        json.end();
        text.push_back('\n');
        if (text.size() > (1 << 16)) flush(text, out);
    }
    flush(text, out);
    return written;
}

const Renderer& jsonl_renderer() {
    static const JsonlRenderer renderer;
    return renderer;
}

}  // namespace attntrace
