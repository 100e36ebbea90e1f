// The JSON format, documented in docs/json-output.md: a trace (schema attntrace.trace/1), a
// summary (attntrace.summary/1), similarity tables (attntrace.similarity/1), a comparison
// (attntrace.compare/1), --check's report (attntrace.check/1), a decode (attntrace.decode/1),
// and check-answers', the quiz's and bench's documents (render/<product>_report.cpp). Each
// stage's matrix is an array of rows; masked entries are null; there is no NaN or Infinity. A
// trace and a summary begin with the same header.
#include "attention/masks.hpp"
#include "attention/modes.hpp"
#include "render/explain.hpp"
#include "attention/stage_builder.hpp"
#include "attention/streaming_backward.hpp"
#include "render/formats.hpp"
#include "render/json_writer.hpp"
#include "practice/quiz.hpp"
#include "practice/verdicts.hpp"
#include "render/reports.hpp"
#include "render/stage_parts.hpp"

namespace attntrace {
namespace {

using Layout = JsonWriter::Layout;

// What a trace and a summary share, after their schema: the run as a whole.
void write_header(JsonWriter& json, const RunHeader& run, std::string_view schema) {
    json.key("schema").string(schema);
    json.key("mode").string(to_string(run.mode));
    json.key("normalize").string(to_string(run.normalization));
    json.key("dtype").string(to_string(run.dtype));
    json.key("input").string(run.origin);
    json.key("description").string(run.description);
    json.key("weights").object(Layout::inline_);
    switch (run.weights) {
    case WeightsOrigin::none: json.key("source").string("none"); break;
    case WeightsOrigin::file: json.key("source").string("input"); break;
    case WeightsOrigin::generated:
        json.key("source").string("generated").key("generator").string("splitmix64").key("seed").integer(
            static_cast<std::int64_t>(run.seed));
        break;
    }
    json.end();
    json.key("notes").strings(run.notes);
}

// The dims, how the scores were scaled and the weights tempered, the positions, and a
// window or a way of masking other than the standard one.
void write_dims(JsonWriter& json, const RunHeader& run) {
    json.key("dims").object(Layout::inline_);
    for (const auto& [name, value] : run.dims) json.key(name).integer(value);
    json.end();
    json.key("scale").object(Layout::inline_).key("rule").string(to_string(run.scale_rule)).key("divisor").number(run.scale, Dtype::float64).end();
    json.key("temperature").number(run.temperature, Dtype::float64);
    json.key("positions").string(to_string(run.positions));
    if (run.positions != PositionScheme::none) json.key("first_position").integer(run.first_position);
    if (run.window > 0) json.key("window").integer(run.window);
    if (run.mask_fill) json.key("mask_fill").number(*run.mask_fill, run.dtype);
    if (run.mask_after_softmax) json.key("mask_after_softmax").boolean(true);
}

void write_labelled(JsonWriter& json, const std::vector<LabelledVector>& vectors, Dtype dtype) {
    json.array(Layout::inline_);
    for (const auto& v : vectors) json.object(Layout::inline_).key("label").string(v.label).key("values").numbers(v.values, dtype).end();
    json.end();
}

// The scores of the worked example: additive (bahdanau) or dot products.
void write_worked_scores(JsonWriter& json, const WorkedExample& w, Dtype dtype) {
    if (!w.additive.empty()) {
        json.key("v_a").numbers(w.v_a, dtype);
        json.key("additive_scores").array();
        for (const auto& a : w.additive)
            json.object(Layout::inline_)
                .key("key").string(a.key)
                .key("projected_key").numbers(a.projected_key, dtype)
                .key("sum").numbers(a.sum, dtype)
                .key("tanh").numbers(a.features, dtype)
                .key("score").number(a.value, dtype)
                .end();
        json.end();
        return;
    }
    json.key("dot_scores").array();
    for (const auto& d : w.dots)
        json.object(Layout::inline_)
            .key("key").string(d.key)
            .key("query_vector").numbers(d.query, dtype)
            .key("key_vector").numbers(d.key_vector, dtype)
            .key("score").number(d.value, dtype)
            .end();
    json.end();
}

// The normalisation of the worked example: softmax step by step, or the division by the sum.
void write_worked_weights(JsonWriter& json, const WorkedExample& w, Dtype dtype) {
    json.key("normalize").string(to_string(w.normalization));
    if (w.normalization == Normalization::softmax) {
        json.key("exp_unshifted");  // e^s as by hand; null when one overflows
        if (w.exps_unshifted) json.numbers(*w.exps_unshifted, dtype);
        else json.null();
        json.key("sum_unshifted");
        if (w.exps_unshifted) json.number(w.sum_unshifted, dtype);
        else json.null();
        json.key("max").number(w.max, dtype);  // −∞ (null) when every key is masked
        json.key("shifted").numbers(w.shifted, dtype);
        json.key("exp").numbers(w.exps, dtype);
    }
    json.key("sum").number(w.sum, dtype);
    json.key("weights").numbers(w.weights, dtype);
    json.key("strongest").strings(w.strongest);
    if (!w.zeroed_then_renormalised.empty()) json.key("zeroed_then_renormalised").numbers(w.zeroed_then_renormalised, dtype);
}

// Position information of the worked query: its encoding, or the rotations of its query and a key.
void write_worked_positions(JsonWriter& json, const WorkedPositions& p, Dtype dtype) {
    json.object();
    json.key("scheme").string(to_string(p.scheme));
    json.key("position").integer(p.position);
    json.key("frequencies").numbers(p.frequencies, Dtype::float64);
    if (p.scheme == PositionScheme::sinusoidal) {
        json.key("embedding").numbers(p.embedding, dtype);
        json.key("encoding").numbers(p.encoding, dtype);
    } else {
        json.key("rotations").array();
        for (const auto& r : p.rotations) {
            json.object(Layout::inline_).key("vector").string(r.vector).key("position").integer(r.position);
            if (!r.why.empty()) json.key("why").string(r.why);
            json.key("angles").numbers(r.angles, Dtype::float64);
            json.key("before").numbers(r.before, dtype).key("after").numbers(r.after, dtype).end();
        }
        json.end();
    }
    json.end();
}

// --tiles: the row by the online softmax, tile by tile (−∞, as everywhere, is null).
void write_tiles(JsonWriter& json, const WorkedExample& w, Dtype dtype) {
    json.key("tile_size").integer(w.tile_size);
    json.key("tiles").array();
    for (const WorkedTile& t : w.tiles) {
        json.object(Layout::inline_).key("keys").strings(t.keys).key("first_position").integer(t.first + 1);
        json.key("scores").numbers(t.scores, dtype);
        json.key("skipped").boolean(t.skipped).key("every_key_hidden").boolean(t.hidden);
        json.key("tile_max").number(t.tile_max, dtype);
        json.key("m_before").number(t.m_before, dtype).key("m_after").number(t.m_after, dtype);
        json.key("rescale").number(t.rescale, dtype).key("l").number(t.l, dtype);
        json.key("accumulator").numbers(t.accumulator, dtype).end();
    }
    json.end();
    json.key("tiled_weights").numbers(w.tiled_weights, dtype);
    json.key("tiled_context").numbers(w.tiled_context, dtype);
    json.key("tiles_max_difference").number(w.tiles_difference, Dtype::float64);
    json.key("matches_full_softmax").boolean(w.matches_full_softmax);
}

// The worked example (--query) as structured numbers: docs/json-output.md.
void write_worked(JsonWriter& json, const WorkedExample& w, Dtype dtype) {
    json.object();
    json.key("query").string(w.query);
    if (w.head > 0) json.key("head").integer(w.head);  // several heads: the one worked through
    json.key("position").integer(w.row + 1);
    json.key("keys").strings(w.keys);
    if (w.positions) {
        json.key("positions");
        write_worked_positions(json, *w.positions, dtype);
    }
    json.key("inputs");
    write_labelled(json, w.inputs, dtype);
    json.key("projections").array();
    for (const auto& p : w.projections) {
        json.object(Layout::inline_).key("output").string(p.output).key("input").string(p.input_label);
        json.key("matrix").string(p.matrix).key("columns").array(Layout::inline_);
        for (const auto& column : p.columns) json.numbers(column, Dtype::float64);  // as given
        json.end();
        if (!p.bias.empty()) json.key("bias").string(p.bias_name).key("bias_values").numbers(p.bias, Dtype::float64);
        json.key("result").numbers(p.result, dtype).end();
    }
    json.end();
    write_worked_scores(json, w, dtype);
    json.key("scale").object(Layout::inline_).key("rule").string(to_string(w.scale_rule));
    json.key("divisor").number(w.divisor, Dtype::float64).end();
    json.key("d_k");
    if (w.d_k) json.integer(*w.d_k);
    else json.null();
    json.key("scaled").numbers(w.scaled, dtype);
    json.key("temperature").number(w.temperature, Dtype::float64);
    json.key("tempered");
    if (w.tempered.empty()) json.null();
    else json.numbers(w.tempered, dtype);
    json.key("mask");
    if (w.allowed.empty()) {
        json.null();
    } else {
        json.object(Layout::inline_).key("allowed").array(Layout::inline_);
        for (const bool allowed : w.allowed) json.boolean(allowed);
        json.end().key("reason");
        if (w.mask_reason.empty()) json.null();  // nothing in this row is hidden
        else json.string(w.mask_reason);
        json.end();
    }
    write_worked_weights(json, w, dtype);
    json.key("values");
    write_labelled(json, w.values, dtype);
    json.key("context").numbers(w.context, dtype);
    if (w.output) {  // several heads (or a W_o): this token's output through W_o
        const WorkedProjection& p = *w.output;
        json.key("output").object(Layout::inline_).key("output").string(p.output).key("input").string(p.input_label);
        json.key("input_vector").numbers(p.input, dtype);
        json.key("matrix").string(p.matrix).key("result").numbers(p.result, dtype).end();
    }
    if (w.tile_size > 0) write_tiles(json, w, dtype);
    json.end();
}

void write_stage(JsonWriter& json, const Trace& trace, const Stage& stage, const RenderOptions& options) {
    json.object();
    json.key("name").string(stage.name());
    if (stage.head > 0) json.key("head").integer(stage.head);
    if (stage.kv_head > 0) json.key("kv_head").integer(stage.kv_head);
    json.key("title").string(stage.title);
    json.key("formula").string(stage.formula);
    if (options.explain) json.key("explanation").strings(explanation(trace, stage));
    json.key("applied").boolean(stage.applied);
    if (!stage.applied) json.key("reason").string(stage.reason);
    json.key("shape").array(Layout::inline_).integer(stage.row_count()).integer(stage.col_count()).end();
    json.key("rows").strings(stage.rows);
    json.key("cols").strings(stage.cols);
    json.key("data").matrix(stage.data, trace.dtype);
    if (stage.allowed) {
        json.key("allowed").array();
        for (Eigen::Index r = 0; r < stage.allowed->rows(); ++r) {
            json.array(Layout::inline_);
            for (Eigen::Index c = 0; c < stage.allowed->cols(); ++c) json.boolean((*stage.allowed)(r, c));
            json.end();
        }
        json.end();
    }
    if (stage.mask_reasons) {  // why each hidden pair is hidden ("causal", "window", "padding", joined by +); null: seen
        const ReasonMatrix& reasons = *stage.mask_reasons;
        json.key("mask_reason").array();
        for (Eigen::Index r = 0; r < reasons.rows(); ++r) {
            json.array(Layout::inline_);
            for (Eigen::Index c = 0; c < reasons.cols(); ++c)
                if (reasons(r, c) == 0) json.null();
                else json.string(reason_text(reasons(r, c)));
            json.end();
        }
        json.end();
    }
    json.end();
}

void write_context(JsonWriter& json, const ContextIn& in) {
    json.object(Layout::inline_);
    json.key("input").string(in.origin);
    json.key("description").string(in.description);
    json.key("notes").strings(in.notes);
    json.key("position").integer(in.position + 1);
    json.key("context").numbers(in.context, Dtype::float64);
    json.break_line(5).key("moved_most").array(Layout::inline_);
    for (const auto& c : in.moved_most)
        json.break_line(7)
            .object(Layout::inline_)
            .key("token").string(c.token)
            .key("position").integer(c.position + 1)
            .key("weight").number(c.weight, Dtype::float64)
            .key("contribution").numbers(c.vector, Dtype::float64)
            .key("size").number(c.size, Dtype::float64)
            .end();
    json.end().end();
}

// One step of a decode: the new token, its key and value appended to each key/value head's
// cache, each head's query, scores, weights and context, and the check against the full trace.
void write_decode_step(JsonWriter& json, const Decode& d, const DecodeStep& s) {
    json.object();
    json.key("position").integer(s.position).key("token").string(s.token);
    json.key("x").numbers(s.x, d.dtype);
    json.key("cache_tokens").integer(s.cache_tokens);
    json.key("cache_numbers").integer(s.cache_numbers);
    json.key("cache_bytes").integer(s.cache_bytes);
    // the new token's key and value, appended to each key/value head's cache
    const auto kv_row = [&](const Matrix& m) { return std::vector<double>(m.row(s.position - 1).begin(), m.row(s.position - 1).end()); };
    const auto write_head = [&](const DecodeHead& h) {
        json.key("q").numbers(h.q, d.dtype);
        json.key("scores").numbers(h.scores, d.dtype);
        json.key("scaled").numbers(h.scaled, d.dtype);
        json.key("weights").numbers(h.weights, d.dtype);
        json.key("context").numbers(h.context, d.dtype);
    };
    if (d.caches.size() == 1 && d.caches.front().kv_head == 0) {
        json.key("k").numbers(kv_row(d.caches.front().keys), d.dtype);
        json.key("v").numbers(kv_row(d.caches.front().values), d.dtype);
    } else {
        json.key("kv_heads").array();
        for (const KvCache& c : d.caches)
            json.object(Layout::inline_).key("kv_head").integer(c.kv_head)
                .key("k").numbers(kv_row(c.keys), d.dtype).key("v").numbers(kv_row(c.values), d.dtype).end();
        json.end();
    }
    if (s.heads.size() == 1 && s.heads.front().head == 0) {
        write_head(s.heads.front());
    } else {
        json.key("heads").array();
        for (const DecodeHead& h : s.heads) {
            json.object().key("head").integer(h.head).key("kv_head").integer(h.kv_head);
            write_head(h);
            json.end();
        }
        json.end();
    }
    json.key("matches_full_trace").boolean(s.matches_full_trace);
    json.key("max_difference").number(s.max_difference, Dtype::float64);
    json.key("dot_products").object(Layout::inline_).key("cached").integer(s.position)
        .key("recomputed").integer(s.position * s.position).end();
    json.end();
}

// What the KV cache holds, in each layout of its heads.
void write_kv_footprint(JsonWriter& json, const Decode& d) {
    json.key("kv_cache").object();
    json.key("layers").integer(1).key("bytes_per_number").integer(d.bytes_per_number);
    json.key("d_head").integer(d.d_head).key("d_v").integer(d.d_v);
    json.key("context_tokens").integer(d.context_tokens);
    json.key("layouts").array();
    for (const KvFootprint& f : d.footprint)
        json.object(Layout::inline_).key("layout").string(f.layout).key("kv_heads").integer(f.kv_heads)
            .key("numbers_per_token").integer(f.numbers_per_token).key("bytes_per_token").integer(f.bytes_per_token)
            .key("bytes").integer(f.bytes).key("this_run").boolean(f.this_run).end();
    json.end();
    json.end();
}

// One document, an object: `body` writes its members (and may flush the buffer as it goes).
template <typename Body>
void write_document(std::ostream& os, Body&& body) {
    fmt::memory_buffer out;
    JsonWriter json(out);
    json.object();
    body(json, out);
    json.end();
    out.push_back('\n');
    flush(out, os);
}

class JsonRenderer final : public Renderer,
                           public ShowsTrace,
                           public ShowsSummary,
                           public ShowsSimilarity,
                           public ShowsComparison,
                           public ShowsCheck,
                           public ShowsDecode,
                           public ShowsGradients,
                           public ShowsAnswers,
                           public ShowsQuiz,
                           public ShowsBench,
                           public ShowsTraining,
                           public ShowsRnn {
public:
    // Measured on the project's machine, one thread: a full trace of 1000 tokens (4 n×n stages, 4
    // million numbers) took 145 ns of CPU time a number, a decode (1000 tokens of 8 numbers) 150,
    // similarity (two tables of 1500 words) 170; the rates leave a quarter to a third more.
    // The text is written into a buffer that may be twice what it holds (it grows by
    // doubling): up to 24 characters a number and a separator (of similarity, measured: 88
    // bytes a pair), and every label of a stage written in full, rows and columns.
    RenderCost cost(const RenderOptions&) const override {
        RenderCost c;
        c.cell_bytes = 2 * 26;
        c.label_copies = 4;
        c.written_label_copies = 2;
        c.seconds_per_number = 200e-9;
        c.decode = DecodeLayout::stream;
        c.decode_seconds_per_number = 250e-9;
        c.similarity_pair_bytes = 16 + 2 * 2 * 24;
        c.similarity_number_chars = 24;
        c.similarity_seconds_per_number = 0.25e-6;
        return c;
    }

    void trace(const Trace& trace, const RenderOptions& options, std::ostream& os) const override {
        write_trace_document(trace, options, os, {});
    }

    void summary(const Summary& s, const RenderOptions&, std::ostream& os) const override {
        write_document(os, [&](JsonWriter& json, fmt::memory_buffer& out) {
            write_header(json, s, "attntrace.summary/1");
            json.key("n").integer(static_cast<std::int64_t>(s.tokens.size()));
            json.key("top").integer(static_cast<std::int64_t>(s.top));
            write_dims(json, s);
            // One head: "queries"; several: "heads", each with its number and its "queries".
            const auto write_queries = [&](const HeadSummary& h) {
                json.key("queries").array();
                for (std::size_t i = 0; i < h.queries.size(); ++i) {
                    json.object(Layout::inline_).key("index").integer(static_cast<std::int64_t>(i)).key("token").string(s.tokens[i]);
                    write_query(json, s, h.queries[i]);
                    json.end();
                    if (out.size() > (1 << 16)) flush(out, os);  // stream long lists instead of holding them
                }
                json.end();
            };
            if (s.per_head.front().head == 0) {
                write_queries(s.per_head.front());
            } else {
                json.key("heads").array();
                for (const HeadSummary& h : s.per_head) {
                    json.object().key("head").integer(h.head);
                    if (h.kv_head > 0) json.key("kv_head").integer(h.kv_head);
                    write_queries(h);
                    json.end();
                }
                json.end();
            }
            if (s.context) json.key(s.context_is_output ? "output" : "context").matrix(*s.context, s.dtype);
        });
    }

    void similarity(const Similarity& s, const RenderOptions&, std::ostream& os) const override {
        write_document(os, [&](JsonWriter& json, fmt::memory_buffer&) {
            json.key("schema").string("attntrace.similarity/1");
            json.key("input").string(s.origin);
            json.key("description").string(s.description);
            json.key("notes").strings(s.notes);
            json.key("words").strings(s.words);
            json.key("dot").matrix(s.dot, Dtype::float64);
            json.key("cosine").matrix(s.cosine, Dtype::float64);
        });
    }

    void check(const Trace& trace, const CheckReport& report, const RenderOptions&, std::ostream& os) const override {
        write_document(os, [&](JsonWriter& json, fmt::memory_buffer&) {
            json.key("schema").string("attntrace.check/1");
            json.key("mode").string(to_string(trace.mode));
            json.key("input").string(trace.origin);
            json.key("passed").boolean(report.passed());
            json.key("checks").array();
            for (const auto& c : report.checks)
                json.object(Layout::inline_).key("name").string(c.name).key("passed").boolean(c.passed)
                    .key("measured").string(c.measured).end();
            json.end();
            json.key("warnings").strings(report.warnings);
        });
    }

    // docs/json-output.md: attntrace.decode/1.
    void decode(const Decode& d, const RenderOptions& options, std::ostream& os) const override {
        write_document(os, [&](JsonWriter& json, fmt::memory_buffer& out) {
            write_header(json, d, "attntrace.decode/1");
            json.key("tokens").strings(d.tokens);
            write_dims(json, d);
            if (options.explain) json.key("explanation").strings(decode_explanation(d));
            json.key("prefill").integer(d.prefill);
            json.key("prefill_max_difference").number(d.prefill_difference, Dtype::float64);
            json.key("tolerance").number(d.tolerance, Dtype::float64);
            json.key("all_match").boolean(d.all_match);
            json.key("max_difference").number(d.max_difference, Dtype::float64);
            json.key("steps").array();
            for (const DecodeStep& s : d.steps) {
                write_decode_step(json, d, s);
                if (out.size() > (1 << 16)) flush(out, os);
            }
            json.end();
            json.key("dot_products").object(Layout::inline_).key("per_head").boolean(true)
                .key("cached").integer(d.dots_cached / d.heads).key("recomputed").integer(d.dots_recomputed / d.heads).end();
            write_kv_footprint(json, d);
        });
    }

    void comparison(const Comparison& c, const RenderOptions&, std::ostream& os) const override {
        write_document(os, [&](JsonWriter& json, fmt::memory_buffer&) {
            json.key("schema").string("attntrace.compare/1");
            json.key("token").string(c.token);
            json.key("mode").string(to_string(c.mode));
            json.key("a");
            write_context(json, c.a);
            json.key("b");
            write_context(json, c.b);
            json.key("difference").numbers(c.difference, Dtype::float64);
            json.key("cosine");
            if (c.cosine) json.number(*c.cosine, Dtype::float64);
            else json.null();
        });
    }

    void answers(const AnswerReport& report, const RenderOptions&, std::ostream& os) const override {
        write_document(os, [&](JsonWriter& json, fmt::memory_buffer&) { write_answers_json(json, report); });
    }

    // The whole quiz, once it has ended; nothing as it goes.
    void quiz(const QuizEvent& event, const RenderOptions&, std::ostream& os) const override {
        if (event.step != QuizEvent::Step::end) return;
        write_document(os, [&](JsonWriter& json, fmt::memory_buffer&) { write_quiz_json(json, event.quiz); });
    }

    // docs/json-output.md ("--summary --backward --format json"): the summary's header, "loss" and
    // "gradients" named as the full backward pass names them (one member per parameter, keyed
    // by its name), and each token's ‖dL/dx_i‖ in "input_gradient_norms".
    void gradients(const StreamGradients& g, const RenderOptions&, std::ostream& os) const override {
        write_document(os, [&](JsonWriter& json, fmt::memory_buffer& out) {
            write_header(json, g, "attntrace.stream-gradients/1");
            json.key("n").integer(static_cast<std::int64_t>(g.tokens.size()));
            write_dims(json, g);
            json.key("loss").object();
            json.key("kind").string(to_string(g.loss.kind));
            json.key("value").number(g.value, g.dtype);
            json.key("title").string(g.title);
            json.key("formula").string(g.formula);
            if (g.loss.kind == LossKind::focus) {
                json.key("query").string(g.tokens[static_cast<std::size_t>(g.loss.query)]);
                json.key("query_position").integer(g.loss.query + 1);
                json.key("key").string(g.tokens[static_cast<std::size_t>(g.loss.key)]);
                json.key("key_position").integer(g.loss.key + 1);
                if (g.loss.head > 0) json.key("head").integer(g.loss.head);
            }
            json.end();
            json.key("gradients").object();
            for (const ParameterGradient& p : g.parameters) {
                json.key(p.name).object();
                json.key("name").string("d_" + p.name);
                json.key("formula").string(p.formula);
                json.key("shape").array(Layout::inline_).integer(p.data.rows()).integer(p.data.cols()).end();
                if (p.vector) json.key("rows").strings(std::vector<std::string>{p.name});
                else json.key("rows").strings(numbered(p.row_prefix, p.data.rows()));
                json.key("cols").strings(numbered(p.col_prefix, p.data.cols()));
                json.key("data").matrix(p.data, g.dtype);
                json.end();
            }
            json.end();
            json.key("tokens").strings(g.tokens);
            flush(out, os);
            json.key("input_gradient_norms").array();
            for (const double norm : g.input_norms) {
                json.number(norm, g.dtype);
                if (out.size() > (1 << 16)) flush(out, os);
            }
            json.end();
        });
    }

    void bench(const BenchReport& report, const RenderOptions&, std::ostream& os) const override {
        write_document(os, [&](JsonWriter& json, fmt::memory_buffer&) { write_bench_json(json, report); });
    }
    void training(const TrainReport& report, const RenderOptions&, std::ostream& os) const override {
        write_document(os, [&](JsonWriter& json, fmt::memory_buffer&) { write_training_json(json, report); });
    }
    void rnn(const RnnReport& report, const RenderOptions&, std::ostream& os) const override {
        write_document(os, [&](JsonWriter& json, fmt::memory_buffer&) { write_rnn_json(json, report); });
    }
};

}  // namespace

void write_trace_document(const Trace& trace, const RenderOptions& options, std::ostream& os, const JsonMembers& more) {
    write_document(os, [&](JsonWriter& json, fmt::memory_buffer& out) {
        write_header(json, trace, "attntrace.trace/1");
        switch (family_of(trace.mode)) {
        case ModeFamily::single_sequence: json.key("tokens").strings(trace.tokens); break;
        case ModeFamily::encoder_decoder:
            json.key("score").string(to_string(trace.score));
            json.key("source_tokens").strings(trace.source_tokens);
            json.key("target_tokens").strings(trace.target_tokens);
            break;
        }
        write_dims(json, trace);
        const std::vector<Shown> shown = shown_stages(trace, options);
        if (std::any_of(shown.begin(), shown.end(), [](const Shown& item) { return !item.stage; })) {
            json.key("parameters").object();
            for (const auto& p : trace.parameters) {  // as given: exact, a vector as a vector
                json.key(p.name);
                if (p.vector) json.numbers(p.data.row(0), Dtype::float64);
                else json.matrix(p.data, Dtype::float64);
            }
            json.end();
        }
        json.key("stages").array();
        for (const Shown& item : shown) {
            if (!item.stage) continue;  // the "parameters" object above
            write_stage(json, trace, *item.stage, options);
            flush(out, os);  // stage by stage: a large trace never holds two copies of its text
        }
        json.end();
        if (trace.worked) {
            json.key("worked");
            write_worked(json, *trace.worked, trace.dtype);
        }
        if (more) more(json, out);
    });
}

void write_json_stage(JsonWriter& json, const Trace& trace, const Stage& stage, const RenderOptions& options) {
    write_stage(json, trace, stage, options);
}

void write_query(JsonWriter& json, const Summary& s, const QuerySummary& q) {
    json.key("top").array(Layout::inline_);
    for (const auto& key : q.top)
        json.object(Layout::inline_)
            .key("index").integer(key.index)
            .key("token").string(s.tokens[static_cast<std::size_t>(key.index)])
            .key("weight").number(key.weight, s.dtype)
            .end();
    json.end();
    json.key("max_weight").number(q.max_weight, s.dtype).key("entropy").number(q.entropy, s.dtype);
}

const Renderer& json_renderer() {
    static const JsonRenderer renderer;
    return renderer;
}

}  // namespace attntrace
