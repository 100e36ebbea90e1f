// One stage in each text format, shared by the trace renderers and by the reports of the
// `similarity` and `compare` commands.
#pragma once

#include "attention/stage.hpp"
#include "render/render.hpp"

#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attntrace {

// Heading, then the reason (skipped) or the title and the aligned table.
void write_stage_table(const Stage& stage, const RenderOptions& options, std::ostream& out);
// "## name · shape", the explanation paragraphs, the formula, then a pipe table.
void write_stage_markdown(const Stage& stage, const RenderOptions& options,
                          const std::vector<std::string>& explanation, std::ostream& out);
// One CSV block (docs/output-formats.md).
void write_stage_csv(const Stage& stage, const RenderOptions& options, std::ostream& out);

std::string markdown_cell(std::string_view text);
// "d_in = 3, d_k = 2": the dimensions as the headings show them.
std::string dims_text(const std::vector<std::pair<std::string, Eigen::Index>>& dims);
// A CSV field of text (a label, a formula): quoted (RFC 4180) when it holds a comma, a quote
// or a line break, and, when it starts with = + - @ or a tab or carriage return, prefixed
// with ' so that a spreadsheet shows it instead of running it as a formula (the OWASP
// advice on CSV injection). Numbers are written as they are.
std::string csv_text(std::string_view text);

}  // namespace attntrace
