// The JSON format (schema attntrace.trace/1, documented in docs/json-output.md): one
// document; each stage's matrix as an array of rows; masked entries null; no NaN or Infinity.
#include "render/json_writer.hpp"
#include "render/number.hpp"
#include "render/render.hpp"

namespace attntrace {
namespace {

using Buffer = fmt::memory_buffer;

void append(Buffer& out, std::string_view text) { out.append(text); }

void append_matrix(Buffer& out, const Stage& stage, Dtype dtype) {
    append(out, "[");
    for (Eigen::Index r = 0; r < stage.row_count(); ++r) {
        append(out, r == 0 ? "\n        [" : ",\n        [");
        for (Eigen::Index c = 0; c < stage.col_count(); ++c) {
            if (c > 0) append(out, ", ");
            if (std::isinf(stage.data(r, c))) append(out, "null");  // masked: −∞
            else append_exact(out, stage.data(r, c), dtype);
        }
        append(out, "]");
    }
    append(out, "\n      ]");
}

void append_allowed(Buffer& out, const BoolMatrix& allowed) {
    append(out, "[");
    for (Eigen::Index r = 0; r < allowed.rows(); ++r) {
        append(out, r == 0 ? "\n        [" : ",\n        [");
        for (Eigen::Index c = 0; c < allowed.cols(); ++c) {
            if (c > 0) append(out, ", ");
            append(out, allowed(r, c) ? "true" : "false");
        }
        append(out, "]");
    }
    append(out, "\n      ]");
}

void append_stage(Buffer& out, const Stage& stage, Dtype dtype) {
    append(out, "    {\n      \"name\": ");
    append_json_string(out, stage.name);
    append(out, ",\n      \"title\": ");
    append_json_string(out, stage.title);
    append(out, ",\n      \"formula\": ");
    append_json_string(out, stage.formula);
    fmt::format_to(std::back_inserter(out), ",\n      \"applied\": {}", stage.applied);
    if (!stage.applied) {
        append(out, ",\n      \"reason\": ");
        append_json_string(out, stage.reason);
    }
    fmt::format_to(std::back_inserter(out), ",\n      \"shape\": [{}, {}]", stage.row_count(),
                   stage.col_count());
    append(out, ",\n      \"rows\": ");
    append_json_string_array(out, stage.rows);
    append(out, ",\n      \"cols\": ");
    append_json_string_array(out, stage.cols);
    append(out, ",\n      \"data\": ");
    append_matrix(out, stage, dtype);
    if (stage.allowed) {
        append(out, ",\n      \"allowed\": ");
        append_allowed(out, *stage.allowed);
    }
    append(out, "\n    }");
}

void append_weights_origin(Buffer& out, const Trace& trace) {
    switch (trace.weights) {
    case WeightsOrigin::none: append(out, "{\"source\": \"none\"}"); return;
    case WeightsOrigin::file: append(out, "{\"source\": \"input\"}"); return;
    case WeightsOrigin::generated:
        fmt::format_to(std::back_inserter(out),
                       "{{\"source\": \"generated\", \"generator\": \"splitmix64\", \"seed\": {}}}",
                       trace.seed);
        return;
    }
}

}  // namespace

void render_json(const Trace& trace, const RenderOptions& options, std::ostream& os) {
    Buffer out;
    append(out, "{\n  \"schema\": \"attntrace.trace/1\",\n  \"mode\": ");
    append_json_string(out, to_string(trace.mode));
    append(out, ",\n  \"normalize\": ");
    append_json_string(out, to_string(trace.normalization));
    append(out, ",\n  \"dtype\": ");
    append_json_string(out, to_string(trace.dtype));
    append(out, ",\n  \"input\": ");
    append_json_string(out, trace.origin);
    append(out, ",\n  \"description\": ");
    append_json_string(out, trace.description);
    append(out, ",\n  \"weights\": ");
    append_weights_origin(out, trace);
    append(out, ",\n  \"notes\": ");
    append_json_string_array(out, trace.notes);
    if (trace.mode == Mode::bahdanau) {
        append(out, ",\n  \"score\": ");
        append_json_string(out, to_string(trace.score));
        append(out, ",\n  \"source_tokens\": ");
        append_json_string_array(out, trace.source_tokens);
        append(out, ",\n  \"target_tokens\": ");
        append_json_string_array(out, trace.target_tokens);
    } else {
        append(out, ",\n  \"tokens\": ");
        append_json_string_array(out, trace.tokens);
    }
    append(out, ",\n  \"dims\": {");
    bool first = true;
    for (const auto& [name, value] : trace.dims) {
        fmt::format_to(std::back_inserter(out), "{}\"{}\": {}", first ? "" : ", ", name, value);
        first = false;
    }
    append(out, "},\n  \"stages\": [");
    first = true;
    for (const Stage* stage : selected_stages(trace, options)) {
        append(out, first ? "\n" : ",\n");
        first = false;
        append_stage(out, *stage, trace.dtype);
        // Flush stage by stage so a large trace never holds two copies of its text.
        os.write(out.data(), static_cast<std::streamsize>(out.size()));
        out.clear();
    }
    append(out, first ? "]\n}\n" : "\n  ]\n}\n");
    os.write(out.data(), static_cast<std::streamsize>(out.size()));
}

}  // namespace attntrace
