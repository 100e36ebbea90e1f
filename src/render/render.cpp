#include "render/render.hpp"

#include "attention/modes.hpp"
#include "render/formats.hpp"

#include <algorithm>

namespace attntrace {

const Renderer& renderer(Format format) {
    switch (format) {
    case Format::table: return table_renderer();
    case Format::json: return json_renderer();
    case Format::markdown: return markdown_renderer();
    case Format::csv: return csv_renderer();
    case Format::jsonl: return jsonl_renderer();
    }
    return table_renderer();
}

void render(const Trace& trace, const RenderOptions& options, std::ostream& out) {
    renderer(options.format).trace(trace, options, out);
}
void render(const Summary& summary, const RenderOptions& options, std::ostream& out) {
    renderer(options.format).summary(summary, options, out);
}
void render(const Similarity& similarity, const RenderOptions& options, std::ostream& out) {
    renderer(options.format).similarity(similarity, options, out);
}
void render(const Comparison& comparison, const RenderOptions& options, std::ostream& out) {
    renderer(options.format).comparison(comparison, options, out);
}

void render(const Trace& trace, const CheckReport& report, const RenderOptions& options, std::ostream& out) {
    renderer(options.format).check(trace, report, options, out);
}

void render(const Decode& decode, const RenderOptions& options, std::ostream& out) {
    renderer(options.format).decode(decode, options, out);
}

std::vector<Shown> shown_stages(const Trace& trace, const RenderOptions& options) {
    const auto order = mode_spec(trace.mode).stages;
    const auto rank = [&](StageId id) { return std::find(order.begin(), order.end(), id) - order.begin(); };
    const auto selected = [&](StageId id) {
        return options.stages.empty() || std::find(options.stages.begin(), options.stages.end(), id) != options.stages.end();
    };
    std::vector<Shown> out;
    bool parameters_placed = false;
    for (const Stage& stage : trace.stages) {
        if (!parameters_placed && rank(stage.id) > rank(StageId::parameters)) {
            parameters_placed = true;
            if (selected(StageId::parameters)) out.push_back({StageId::parameters, nullptr});
        }
        if (selected(stage.id) && (options.head == 0 || stage.head == 0 || stage.head == options.head))
            out.push_back({stage.id, &stage});
    }
    if (!parameters_placed && selected(StageId::parameters)) out.push_back({StageId::parameters, nullptr});
    return out;
}

}  // namespace attntrace
