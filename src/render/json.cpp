// The JSON format (schema attntrace.trace/1, documented in docs/json-output.md): one
// document; each stage's matrix as an array of rows; masked entries null; no NaN or Infinity.
#include "render/explain.hpp"
#include "render/json_writer.hpp"
#include "render/number.hpp"
#include "render/render.hpp"

namespace attntrace {
namespace {

using Buffer = fmt::memory_buffer;

void append(Buffer& out, std::string_view text) { out.append(text); }

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

void append_labelled(Buffer& out, const std::vector<LabelledVector>& vectors, Dtype dtype) {
    append(out, "[");
    for (std::size_t i = 0; i < vectors.size(); ++i) {
        append(out, i > 0 ? ", {\"label\": " : "{\"label\": ");
        append_json_string(out, vectors[i].label);
        append(out, ", \"values\": ");
        append_json_numbers(out, vectors[i].values, dtype);
        append(out, "}");
    }
    append(out, "]");
}

// The worked example (--query) as structured numbers: docs/json-output.md.
void append_worked(Buffer& out, const WorkedExample& w, Dtype dtype) {
    const auto field = [&](std::string_view name) { fmt::format_to(std::back_inserter(out), ",\n    \"{}\": ", name); };
    append(out, "{\n    \"query\": ");
    append_json_string(out, w.query);
    fmt::format_to(std::back_inserter(out), ",\n    \"position\": {}", w.row + 1);
    field("keys");
    append_json_string_array(out, w.keys);
    field("inputs");
    append_labelled(out, w.inputs, dtype);
    if (!w.additive.empty()) {
        field("v_a");
        append_json_numbers(out, w.v_a, dtype);
        field("additive_scores");
        append(out, "[");
        for (std::size_t j = 0; j < w.additive.size(); ++j) {
            const auto& a = w.additive[j];
            append(out, j > 0 ? ",\n      {\"key\": " : "\n      {\"key\": ");
            append_json_string(out, a.key);
            append(out, ", \"projected_key\": ");
            append_json_numbers(out, a.projected_key, dtype);
            append(out, ", \"sum\": ");
            append_json_numbers(out, a.sum, dtype);
            append(out, ", \"tanh\": ");
            append_json_numbers(out, a.features, dtype);
            append(out, ", \"score\": ");
            append_json_number(out, a.value, dtype);
            append(out, "}");
        }
        append(out, "\n    ]");
    } else {
        field("dot_scores");
        append(out, "[");
        for (std::size_t j = 0; j < w.dots.size(); ++j) {
            const auto& d = w.dots[j];
            append(out, j > 0 ? ",\n      {\"key\": " : "\n      {\"key\": ");
            append_json_string(out, d.key);
            append(out, ", \"query_vector\": ");
            append_json_numbers(out, d.query, dtype);
            append(out, ", \"key_vector\": ");
            append_json_numbers(out, d.key_vector, dtype);
            append(out, ", \"score\": ");
            append_json_number(out, d.value, dtype);
            append(out, "}");
        }
        append(out, "\n    ]");
    }
    field("d_k");
    if (w.d_k) fmt::format_to(std::back_inserter(out), "{}", *w.d_k);
    else append(out, "null");
    field("scaled");
    append_json_numbers(out, w.scaled, dtype);
    field("mask");
    if (w.allowed.empty()) {
        append(out, "null");
    } else {
        append(out, "{\"allowed\": [");
        for (std::size_t j = 0; j < w.allowed.size(); ++j) append(out, j > 0 ? (w.allowed[j] ? ", true" : ", false") : (w.allowed[j] ? "true" : "false"));
        append(out, "], \"reason\": ");
        append_json_string(out, w.mask_reason);
        append(out, "}");
    }
    field("normalize");
    append_json_string(out, to_string(w.normalization));
    if (w.normalization == Normalization::softmax) {
        field("max");
        append_json_number(out, w.max, dtype);  // −∞ (null) when every key is masked
        field("shifted");
        append_json_numbers(out, w.shifted, dtype);
        field("exp");
        append_json_numbers(out, w.exps, dtype);
    }
    field("sum");
    append_json_number(out, w.sum, dtype);
    field("weights");
    append_json_numbers(out, w.weights, dtype);
    if (!w.zeroed_then_renormalised.empty()) {
        field("zeroed_then_renormalised");
        append_json_numbers(out, w.zeroed_then_renormalised, dtype);
    }
    field("values");
    append_labelled(out, w.values, dtype);
    field("context");
    append_json_numbers(out, w.context, dtype);
    append(out, "\n  }");
}

void append_stage(Buffer& out, const Trace& trace, const Stage& stage, const RenderOptions& options) {
    const Dtype dtype = trace.dtype;
    append(out, "    {\n      \"name\": ");
    append_json_string(out, stage.name);
    append(out, ",\n      \"title\": ");
    append_json_string(out, stage.title);
    append(out, ",\n      \"formula\": ");
    append_json_string(out, stage.formula);
    if (options.explain) {
        append(out, ",\n      \"explanation\": ");
        append_json_string_array(out, explanation(trace, stage));
    }
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
    append_json_matrix(out, stage.data, dtype, "      ");
    if (stage.allowed) {
        append(out, ",\n      \"allowed\": ");
        append_allowed(out, *stage.allowed);
    }
    append(out, "\n    }");
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
    append_weights_origin(out, trace.weights, trace.seed);
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
    append(out, ",\n  \"dims\": ");
    append_json_dims(out, trace.dims);
    append(out, ",\n  \"stages\": [");
    bool first = true;
    for (const Stage* stage : selected_stages(trace, options)) {
        append(out, first ? "\n" : ",\n");
        first = false;
        append_stage(out, trace, *stage, options);
        flush(out, os);  // stage by stage: a large trace never holds two copies of its text
    }
    append(out, first ? "]" : "\n  ]");
    if (trace.worked) {
        append(out, ",\n  \"worked\": ");
        append_worked(out, *trace.worked, trace.dtype);
    }
    append(out, "\n}\n");
    flush(out, os);
}

}  // namespace attntrace
