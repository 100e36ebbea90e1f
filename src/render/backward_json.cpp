// The JSON of a backward pass (docs/json-output.md, "The backward pass"): the trace's
// document (attntrace.trace/1) with, after its members, "loss", "gradients" (one member per
// gradient, keyed by its forward stage's or parameter's name, an array of one object per head
// for a per-head stage of several heads), and with -q "worked_backward", with --step-size
// "step". Gradients are float64 (the backward pass computes in float64 whatever --dtype).
#include "render/backward.hpp"

#include "render/stage_parts.hpp"

#include <algorithm>

namespace attntrace {
namespace {

using Layout = JsonWriter::Layout;

void write_loss(JsonWriter& json, const Trace& trace, const Gradients& g) {
    const Loss& loss = g.loss;
    json.key("loss").object();
    json.key("kind").string(to_string(loss.kind));
    json.key("value").number(g.value, Dtype::float64);
    json.key("title").string(g.title);
    json.key("formula").string(g.formula);
    if (loss.kind == LossKind::focus) {
        const Stage& w = trace.at(StageId::weights, loss.head);
        json.key("query").string(w.rows[static_cast<std::size_t>(loss.query)]).key("query_position").integer(loss.query + 1);
        json.key("key").string(w.cols[static_cast<std::size_t>(loss.key)]).key("key_position").integer(loss.key + 1);
        if (loss.head > 0) json.key("head").integer(loss.head);
    }
    if (loss.kind == LossKind::target) json.key("target").matrix(loss.target, Dtype::float64);
    json.end();
}

void write_gradient(JsonWriter& json, const BackwardRun& run, const Stage& d, const RenderOptions& options) {
    json.object();
    json.key("name").string(gradient_name(d));
    if (d.head > 0) json.key("head").integer(d.head);
    if (d.kv_head > 0) json.key("kv_head").integer(d.kv_head);
    json.key("title").string(d.title);
    json.key("formula").string(d.formula);
    if (options.explain) json.key("explanation").strings(gradient_explanation(run.trace, run.gradients, d));
    json.key("applied").boolean(d.applied);
    if (!d.applied) json.key("reason").string(d.reason);
    json.key("shape").array(Layout::inline_).integer(d.row_count()).integer(d.col_count()).end();
    json.key("rows").strings(d.rows);
    json.key("cols").strings(d.cols);
    json.key("data").matrix(d.data, Dtype::float64);
    json.end();
}

// One member per key, in the order the backward pass reached them; a per-head stage of a run
// of several heads is an array of its heads, head 1 first. Each is written out to `os` as it is
// made, as the trace's stages are, so that the text of only one is held.
void write_gradients(JsonWriter& json, const BackwardRun& run, const RenderOptions& options, fmt::memory_buffer& out,
                     std::ostream& os) {
    std::vector<std::string> keys;
    for (const Stage* d : run.shown)
        if (std::find(keys.begin(), keys.end(), d->key()) == keys.end()) keys.emplace_back(d->key());
    json.key("gradients").object();
    for (const std::string& key : keys) {
        std::vector<const Stage*> of_key;
        for (const Stage* d : run.shown)
            if (d->key() == key) of_key.push_back(d);
        std::sort(of_key.begin(), of_key.end(), [](const Stage* a, const Stage* b) { return a->head < b->head; });
        json.key(key);
        if (of_key.front()->head == 0) {
            write_gradient(json, run, *of_key.front(), options);
            flush(out, os);
            continue;
        }
        json.array();
        for (const Stage* d : of_key) {
            write_gradient(json, run, *d, options);
            flush(out, os);
        }
        json.end();
    }
    json.end();
}

void write_row(JsonWriter& json, const BackwardRow& w) {
    const Dtype f64 = Dtype::float64;
    json.key("worked_backward").object();
    json.key("query").string(w.query).key("position").integer(w.row + 1);
    if (w.head > 0) json.key("head").integer(w.head);
    json.key("keys").strings(w.keys);
    json.key("normalize").string(to_string(w.normalization)).key("temperature").number(w.temperature, f64);
    json.key("mask_after_softmax").boolean(w.after_softmax);
    json.key("visible").array(Layout::inline_);
    for (const bool visible : w.visible) json.boolean(visible);
    json.end();
    json.key("weights").numbers(w.weights, f64).key("d_weights").numbers(w.d_weights, f64);
    json.key("jacobian");
    if (w.jacobian.size() > 0) json.matrix(w.jacobian, f64);
    else json.null();
    json.key("sum").number(w.inner, f64).key("divisor").number(w.divisor, f64);
    json.key("short_form").numbers(w.short_form, f64).key("d_masked").numbers(w.from_backward, f64);
    json.key("scale").number(w.scale, f64);
    if (w.mix) {
        const KeyMix& m = *w.mix;
        json.key("key_mix").object();
        json.key("gradient").string(m.target).key("vectors").string(m.key);
        json.key("d_scores").numbers(m.d_scores, f64).key("keys").matrix(m.keys, f64);
        json.key("mixed").numbers(m.mixed, f64).key("from_backward").numbers(m.from_backward, f64);
        json.end();
    }
    json.end();
}

void write_step(JsonWriter& json, const BackwardRun& run, const RenderOptions& options) {
    const LearningStep& s = *run.step;
    const Dtype f64 = Dtype::float64;
    json.key("step").object();
    json.key("step_size").number(s.step_size, f64);
    json.key("loss_before").number(s.loss_before, f64).key("loss_after").number(s.loss_after, f64);
    if (s.weight_before) json.key("weight_before").number(*s.weight_before, f64).key("weight_after").number(*s.weight_after, f64);
    if (s.lowering_step) json.key("lowering_step").number(*s.lowering_step, f64).key("lowering_loss").number(*s.lowering_loss, f64);
    json.key("parameters").object();
    for (const Parameter& p : s.updated) {
        json.key(p.name);
        if (p.vector) json.numbers(p.data.row(0), f64);
        else json.matrix(p.data, f64);
    }
    json.end();
    RenderOptions plain = options;
    plain.explain = false;
    json.key("stages").array();
    for (const Stage* stage : after_shown(run, options)) write_json_stage(json, s.after, *stage, plain);
    json.end();
    json.end();
}

}  // namespace

void write_backward_json(const BackwardRun& run, const RenderOptions& options, std::ostream& os) {
    write_trace_document(run.trace, forward_options(run, options), os, [&](JsonWriter& json, fmt::memory_buffer& out) {
        write_loss(json, run.trace, run.gradients);
        write_gradients(json, run, options, out, os);
        if (run.row) write_row(json, *run.row);
        if (run.step) write_step(json, run, options);
    });
}

}  // namespace attntrace
