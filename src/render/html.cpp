#include "render/html.hpp"

#include "attention/cell_sources.hpp"
#include "render/backward.hpp"
#include "render/formats.hpp"
#include "render/number.hpp"
#include "render/reports.hpp"
#include "render/text.hpp"
#include "render/worked_text.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace attntrace {
namespace {

using nlohmann::json;

// One matrix of the page: a stage of the trace, a parameter, or a gradient.
struct Shown {
    const Stage* stage = nullptr;
    const Parameter* parameter = nullptr;
    bool gradient = false;
    Place place;
};

// What a page shows: the trace's stages (options.stages and options.head choose among them) and
// parameters, and the gradients in `gradients` (all of them when null).
struct Selection {
    bool forward = true;
    const std::vector<const Stage*>* gradients = nullptr;
};

bool stage_chosen(const Stage& s, const RenderOptions& options) {
    const bool named = options.stages.empty() || std::find(options.stages.begin(), options.stages.end(), s.id) != options.stages.end();
    return named && (options.head == 0 || s.head == 0 || s.head == options.head);
}

// The matrices in the order the stepper shows them: the inputs, the weights, the pipeline's
// stages, then the gradients from the loss back.
std::vector<Shown> shown_matrices(const Trace& trace, const Gradients* gradients, const RenderOptions& options,
                                  const Selection& selection) {
    std::vector<Shown> shown;
    const bool with_parameters = selection.forward && options.stages.empty();
    bool parameters_added = !with_parameters || trace.parameters.empty();
    const auto add_parameters = [&] {
        for (const Parameter& p : trace.parameters) shown.push_back({nullptr, &p, false, {StageId::parameters, 0, p.name, false}});
        parameters_added = true;
    };
    for (const Stage& s : trace.stages) {
        if (!selection.forward || !stage_chosen(s, options)) continue;
        const bool before = s.id == StageId::inputs || s.id == StageId::embeddings || s.id == StageId::positions ||
                            s.id == StageId::layernorm || s.id == StageId::encoder_states || s.id == StageId::decoder_states;
        if (!parameters_added && !before) add_parameters();
        shown.push_back({&s, nullptr, false, {s.id, s.head, {}, false}});
    }
    if (!parameters_added) add_parameters();
    if (gradients)
        for (const Stage& g : gradients->stages) {
            const auto* list = selection.gradients;
            if (list && std::find(list->begin(), list->end(), &g) == list->end()) continue;
            if (options.head == 0 || g.head == 0 || g.head == options.head) shown.push_back({&g, nullptr, true, {g.id, g.head, g.parameter, true}});
        }
    return shown;
}

// The cells as the tables write them, separated by spaces, row by row.
std::string cells_text(const Matrix& m, int digits) {
    std::string text;
    text.reserve(static_cast<std::size_t>(m.size()) * static_cast<std::size_t>(digits + 4));
    for (Eigen::Index r = 0; r < m.rows(); ++r)
        for (Eigen::Index c = 0; c < m.cols(); ++c) {
            if (!text.empty()) text += ' ';
            text += format_fixed(m(r, c), digits);
        }
    return text;
}

double largest_magnitude(const Matrix& m) {
    double most = 0;
    for (Eigen::Index i = 0; i < m.size(); ++i)
        if (std::isfinite(m.data()[i])) most = std::max(most, std::abs(m.data()[i]));
    return most;
}

// The page's description of one matrix, without its cells' arithmetic and sources.
json matrix_json(const Trace& trace, const Shown& s, int digits) {
    json m;
    const Matrix& data = s.parameter ? s.parameter->data : s.stage->data;
    if (s.parameter) {
        const Parameter& p = *s.parameter;
        const bool drawn = trace.weights == WeightsOrigin::generated || p.generated;
        m = {{"name", p.name}, {"kind", "parameter"}, {"head", 0}, {"formula", p.formula},
             {"title", drawn ? fmt::format("A weight drawn from seed {} (splitmix64), not learned: nothing in the trace computes it", trace.seed)
                             : std::string("A weight given in the input: nothing in the trace computes it")},
             {"applied", true}};
        json rows = json::array(), cols = json::array();
        for (Eigen::Index r = 0; r < data.rows(); ++r) rows.push_back(p.vector ? p.name : fmt::format("{}{}", p.row_prefix, r + 1));
        for (Eigen::Index c = 0; c < data.cols(); ++c) cols.push_back(fmt::format("{}{}", p.col_prefix, c + 1));
        m["rows"] = rows, m["cols"] = cols;
    } else {
        const Stage& st = *s.stage;
        m = {{"name", s.gradient ? fmt::format("d_{}", st.key()) : std::string(st.name())},
             {"kind", s.gradient ? "gradient" : "stage"}, {"head", st.head}, {"formula", st.formula}, {"title", st.title},
             {"applied", st.applied}, {"rows", st.rows.list()}, {"cols", st.cols.list()}};
        if (!st.applied) m["reason"] = st.reason;
        if (st.allowed) {
            std::string hidden;
            for (Eigen::Index r = 0; r < st.allowed->rows(); ++r)
                for (Eigen::Index c = 0; c < st.allowed->cols(); ++c) hidden += (*st.allowed)(r, c) ? '0' : '1';
            m["hidden"] = hidden;
        }
    }
    const bool unit = !s.gradient && s.stage && s.stage->id == StageId::weights;
    m["shape"] = {data.rows(), data.cols()};
    m["scale"] = unit ? "unit" : "signed";
    m["limit"] = unit ? 1.0 : largest_magnitude(data);
    m["cells"] = cells_text(data, digits);
    return m;
}

bool standard_mask(const Trace& trace) { return !trace.mask_fill && !trace.mask_after_softmax; }

// The lines of arithmetic the page holds, each once (a weight's lines repeat its row's): a
// cell's arithmetic is a list of their indices.
class LineTable {
public:
    std::size_t index(const std::string& line) {
        const auto [at, added] = index_.try_emplace(line, lines_.size());
        if (added) lines_.push_back(line);
        return at->second;
    }
    const std::vector<std::string>& lines() const { return lines_; }

private:
    std::map<std::string, std::size_t> index_;
    std::vector<std::string> lines_;
};

// Each cell's arithmetic, as -q works it, as indices into `table` (none for a weight or an
// input; a gradient's formula is its heading).
json cell_work(const Trace& trace, const Shown& s, int digits, LineTable& table) {
    const Stage& st = *s.stage;
    json work = json::array();
    if (s.gradient || !st.applied || (worked_stage(st.id) && !standard_mask(trace))) return work;
    bool any = false;
    for (Eigen::Index r = 0; r < st.data.rows(); ++r) {
        std::vector<std::vector<std::string>> row;
        try {
            row = row_arithmetic(trace, st, r, st.head > 0 ? st.head : 1, digits);
        } catch (const std::exception&) {
            return json::array();  // a row that cannot be worked (a hidden query): no arithmetic for the stage
        }
        for (const auto& lines : row) {
            json cell = json::array();
            for (const auto& line : lines) cell.push_back(table.index(line));
            any = any || !lines.empty();
            work.push_back(std::move(cell));
        }
    }
    return any ? work : json::array();
}

// Each cell's sources, as [matrix, row, col] triples (-1: the whole row or column).
json cell_from(const Trace& trace, const Gradients* gradients, const std::vector<Shown>& all, const Shown& s) {
    const Stage& st = *s.stage;
    json from = json::array();
    bool any = false;
    for (Eigen::Index r = 0; r < st.data.rows(); ++r)
        for (Eigen::Index c = 0; c < st.data.cols(); ++c) {
            const std::vector<Mark> marks =
                s.gradient ? gradient_sources(trace, *gradients, st, r, c) : forward_sources(trace, st, r, c);
            json cell = json::array();
            for (const Mark& mark : marks) {
                const auto at = std::find_if(all.begin(), all.end(), [&](const Shown& x) { return x.place == mark.place; });
                if (at == all.end()) continue;
                cell.insert(cell.end(), {at - all.begin(), mark.row, mark.col});
            }
            any = any || !cell.empty();
            from.push_back(std::move(cell));
        }
    return any ? from : json::array();
}

json header_json(const RunHeader& run, const std::string& kind, const std::string& title) {
    return {{"schema", "attntrace.page/1"}, {"kind", kind}, {"title", title}, {"description", run.description},
            {"notes", run.notes}, {"heads", run.heads}, {"worked_rows", html_worked_rows}};
}

// The page: the style, the payload and the script, with nothing from the network.
void write_page(const json& payload, std::ostream& out) {
    std::string data = payload.dump(-1, ' ', false, json::error_handler_t::replace);
    std::string safe;  // no "</script>" nor "<!--" can end or confuse the script element
    safe.reserve(data.size());
    for (const char c : data) safe += c == '<' ? std::string("\\u003c") : std::string(1, c);
    out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
           "script-src 'unsafe-inline'; img-src data:\">\n"
        << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>attntrace</title>\n<style>\n"
        << html_style() << "</style>\n</head>\n<body>\n"
        << "<noscript><p>This page draws its tables with its own script, which the browser did not run.</p></noscript>\n"
        << "<script type=\"application/json\" id=\"attntrace-data\">" << safe << "</script>\n<script>\n"
        << html_script() << "</script>\n</body>\n</html>\n";
}

class HtmlRenderer final : public Renderer, public ShowsTrace, public ShowsSummary, public ShowsDecode {
public:
    RenderCost cost(const RenderOptions&) const override {
        RenderCost c;
        c.cell_bytes = 160, c.label_copies = 4, c.written_label_copies = 1, c.seconds_per_number = 4e-7;
        c.decode = DecodeLayout::reports, c.decode_seconds_per_number = 4e-7;
        return c;
    }
    void trace(const Trace& t, const RenderOptions& options, std::ostream& out) const override {
        write_html(t, nullptr, options, out);
    }
    void summary(const Summary& s, const RenderOptions& options, std::ostream& out) const override {
        write_html(s, options, out);
    }
    void decode(const Decode& d, const RenderOptions& options, std::ostream& out) const override {
        write_html(d, options, out);
    }
};

}  // namespace

namespace {

void write_trace_page(const Trace& trace, const Gradients* gradients, const RenderOptions& options, const Selection& selection,
                      std::ostream& out) {
    json page = header_json(trace, "trace", trace_title(trace));
    const std::vector<Shown> all = shown_matrices(trace, gradients, options, selection);
    json matrices = json::array();
    LineTable lines;
    for (const Shown& s : all) {
        json m = matrix_json(trace, s, options.digits);
        if (s.stage && s.stage->data.rows() <= html_worked_rows) {
            m["work"] = cell_work(trace, s, options.digits, lines);
            m["from"] = cell_from(trace, gradients, all, s);
        }
        matrices.push_back(std::move(m));
    }
    page["matrices"] = std::move(matrices);
    if (options.head > 0) page["heads"] = 1;  // --head H: that head's stages alone, and no head to choose
    page["lines"] = lines.lines();
    if (gradients) page["loss"] = loss_line(*gradients, options.digits);
    write_page(page, out);
}

}  // namespace

void write_html(const Trace& trace, const Gradients* gradients, const RenderOptions& options, std::ostream& out) {
    write_trace_page(trace, gradients, options, {}, out);
}

void write_html(const BackwardRun& run, const RenderOptions& options, std::ostream& out) {
    write_trace_page(run.trace, &run.gradients, options, {run.forward_shown, &run.shown}, out);
}

void write_html(const Summary& summary, const RenderOptions& options, std::ostream& out) {
    const std::size_t n = summary.tokens.size();
    const std::string title = fmt::format("attntrace · {} · summary of {} quer{} · {} · {}", mode_text(summary), n,
                                          n == 1 ? "y" : "ies", weighting_text(summary), summary.origin);
    json page = header_json(summary, "summary", title);
    json heads = json::array();
    for (const HeadSummary& h : summary.per_head) {
        json queries = json::array();
        for (std::size_t i = 0; i < h.queries.size(); ++i) {
            const QuerySummary& q = h.queries[i];
            json top = json::array();
            for (const KeyWeight& k : q.top)
                top.push_back({summary.tokens[static_cast<std::size_t>(k.index)], k.index + 1, format_fixed(k.weight, options.digits)});
            queries.push_back({{"token", summary.tokens[i]}, {"top", top}, {"max", format_fixed(q.max_weight, options.digits)},
                               {"entropy", format_fixed(q.entropy, options.digits)}});
        }
        heads.push_back({{"head", h.head}, {"kv_head", h.kv_head}, {"queries", queries}});
    }
    page["summary"] = {{"top", summary.top}, {"heads", heads}};
    write_page(page, out);
}

void write_html(const Decode& decode, const RenderOptions& options, std::ostream& out) {
    const std::string title = fmt::format("attntrace decode · {} · {} tokens, {} by the prefill · {}", mode_text(decode),
                                          decode.tokens.size(), decode.prefill, decode.origin);
    json page = header_json(decode, "decode", title);
    json matrices = json::array();
    const std::size_t heads = decode.steps.empty() ? 0 : decode.steps.front().heads.size();
    for (std::size_t h = 0; h < heads; ++h) {
        // A row per step: its weights over the cache, hidden beyond the step's own position.
        const auto width = static_cast<Eigen::Index>(decode.steps.back().position);
        Matrix weights = Matrix::Zero(static_cast<Eigen::Index>(decode.steps.size()), width);
        std::string hidden;
        json rows = json::array(), cols = json::array();
        for (std::size_t s = 0; s < decode.steps.size(); ++s) {
            const DecodeStep& step = decode.steps[s];
            rows.push_back(fmt::format("{} {}", step.position, step.token));
            for (Eigen::Index j = 0; j < width; ++j) {
                const bool cached = j < static_cast<Eigen::Index>(step.heads[h].weights.size());
                if (cached) weights(static_cast<Eigen::Index>(s), j) = step.heads[h].weights[static_cast<std::size_t>(j)];
                hidden += cached ? '0' : '1';
            }
        }
        for (Eigen::Index j = 0; j < width; ++j) cols.push_back(decode.tokens[static_cast<std::size_t>(j)]);
        const int head = decode.steps.front().heads[h].head;
        matrices.push_back({{"name", "weights"}, {"kind", "stage"}, {"head", head}, {"formula", "weight = softmax of the step's scaled scores over the cache"},
                            {"title", "Each step's weights over the keys in the cache, which grows by one token a step"},
                            {"applied", true}, {"rows", rows}, {"cols", cols}, {"hidden", hidden},
                            {"shape", {weights.rows(), weights.cols()}}, {"scale", "unit"}, {"limit", 1.0},
                            {"cells", cells_text(weights, options.digits)},
                            {"note", "attntrace decode --step N shows step N: its query, and its scores and weights against the cache"}});
    }
    page["matrices"] = std::move(matrices);
    write_page(page, out);
}

const Renderer& html_renderer() {
    static const HtmlRenderer renderer;
    return renderer;
}

}  // namespace attntrace
