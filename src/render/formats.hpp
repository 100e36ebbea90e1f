// The renderer of each format, one file each (render/<format>.cpp). Adding a format: its
// name in render.hpp's table, its file with a Renderer for every product, its line in
// render.cpp's registry.
#pragma once

#include "render/render.hpp"

namespace attntrace {

const Renderer& table_renderer();
const Renderer& json_renderer();
const Renderer& markdown_renderer();
const Renderer& csv_renderer();
const Renderer& jsonl_renderer();

}  // namespace attntrace
