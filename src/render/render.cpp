#include "render/render.hpp"

#include "attention/bahdanau.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace attntrace {
namespace {
constexpr std::array<std::pair<Format, std::string_view>, 4> format_table{{
    {Format::table, "table"},
    {Format::json, "json"},
    {Format::markdown, "markdown"},
    {Format::csv, "csv"},
}};
}  // namespace

std::string_view to_string(Format format) {
    for (const auto& [f, name] : format_table)
        if (f == format) return name;
    return "?";
}

std::optional<Format> parse_format(std::string_view text) {
    for (const auto& [f, name] : format_table)
        if (name == text) return f;
    return std::nullopt;
}

std::string format_names() {
    std::string names;
    for (const auto& [f, name] : format_table) {
        if (!names.empty()) names += ", ";
        names += name;
    }
    return names;
}

std::vector<std::string> stage_names(Mode mode) {
    if (mode == Mode::bahdanau) return {std::begin(bahdanau_stages), std::end(bahdanau_stages)};
    return {std::begin(single_sequence_stages), std::end(single_sequence_stages)};
}

std::vector<const Stage*> selected_stages(const Trace& trace, const RenderOptions& options) {
    std::vector<const Stage*> out;
    for (const auto& stage : trace.stages)
        if (options.stages.empty() ||
            std::find(options.stages.begin(), options.stages.end(), stage.name) !=
                options.stages.end())
            out.push_back(&stage);
    return out;
}

void render(const Trace& trace, const RenderOptions& options, std::ostream& out) {
    switch (options.format) {
    case Format::table: render_table(trace, options, out); return;
    case Format::json: render_json(trace, options, out); return;
    case Format::markdown: render_markdown(trace, options, out); return;
    case Format::csv: render_csv(trace, options, out); return;
    }
}

}  // namespace attntrace
