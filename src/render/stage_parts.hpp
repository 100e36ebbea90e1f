// The pieces of each format that products written outside its renderer reuse (the backward
// pass, render/backward_*.cpp), so that a stage looks the same wherever it is shown and text
// is escaped by one rule per format. Each is defined in its format's file.
#pragma once

#include "core/stage.hpp"
#include "render/json_writer.hpp"
#include "render/render.hpp"

#include <fmt/format.h>

#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace attntrace {

// table.cpp: a stage's aligned table (the lines under its heading).
void write_table_matrix(const Stage& stage, const RenderOptions& options, std::ostream& out);

// markdown.cpp: text that stays text (labels, titles, sentences), inline code, a pipe table.
std::string markdown_escaped(std::string_view text);
std::string markdown_code(std::string_view text);
std::string markdown_fence(const std::vector<std::string>& lines);  // ``` or longer than any run in the lines
void write_markdown_table(const Stage& stage, const RenderOptions& options, std::ostream& out);

// csv.cpp: a field of text, quoted and guarded against spreadsheet formulas; a stage's header
// row and rows (the lines after its `applied` line).
std::string csv_field(std::string_view text);
void write_csv_table(const Stage& stage, const RenderOptions& options, std::ostream& out);

// json.cpp: a trace's document, with `more` writing members of its own after the trace's
// (the gradients); and one stage as the trace's "stages" hold it.
using JsonMembers = std::function<void(JsonWriter& json, fmt::memory_buffer& buffer)>;
void write_trace_document(const Trace& trace, const RenderOptions& options, std::ostream& out, const JsonMembers& more);
void write_json_stage(JsonWriter& json, const Trace& trace, const Stage& stage, const RenderOptions& options);

}  // namespace attntrace
