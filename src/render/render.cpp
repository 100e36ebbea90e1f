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

std::vector<StageId> shown_stages(const Trace& trace, const RenderOptions& options) {
    std::vector<StageId> out;
    for (const StageId id : mode_spec(trace.mode).stages)
        if (options.stages.empty() || std::find(options.stages.begin(), options.stages.end(), id) != options.stages.end())
            out.push_back(id);
    return out;
}

}  // namespace attntrace
