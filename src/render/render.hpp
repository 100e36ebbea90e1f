// render: Trace → text. One file per format behind this one entry point; renderers format
// what the trace holds and never compute attention themselves.
#pragma once

#include "attention/stage.hpp"

#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace attntrace {

enum class Format { table, json, markdown, csv };

std::string_view to_string(Format format);
std::optional<Format> parse_format(std::string_view text);
std::string format_names();

struct RenderOptions {
    Format format = Format::table;
    int digits = 4;                   // decimals in tables
    std::size_t width = 0;            // terminal columns for tables; 0: no limit
    std::vector<std::string> stages;  // names to show, empty: all
    bool color = false;               // tables: shade scores and weights (ANSI 256 colours)
    bool explain = false;             // a few sentences and the shapes before each stage
};

void render(const Trace& trace, const RenderOptions& options, std::ostream& out);

// The stages `options` selects, in pipeline order.
std::vector<const Stage*> selected_stages(const Trace& trace, const RenderOptions& options);

// Stage names of a trace's mode, in pipeline order (for --stage validation and help).
std::vector<std::string> stage_names(Mode mode);

// The per-format renderers (render/<format>.cpp).
void render_table(const Trace& trace, const RenderOptions& options, std::ostream& out);
void render_json(const Trace& trace, const RenderOptions& options, std::ostream& out);
void render_markdown(const Trace& trace, const RenderOptions& options, std::ostream& out);
void render_csv(const Trace& trace, const RenderOptions& options, std::ostream& out);

}  // namespace attntrace
