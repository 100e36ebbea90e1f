#include "commands/train_command.hpp"

#include "attention/rnn_compare.hpp"
#include "core/error.hpp"
#include "input/npz.hpp"
#include "input/safetensors.hpp"
#include "input/source.hpp"
#include "input/tasks.hpp"
#include "render/json_writer.hpp"
#include "render/svg.hpp"
#include "util/progress.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <sstream>

namespace attntrace {
namespace {

TrainingSet task_of(const TrainRequest& r) {
    const auto names = built_in_tasks();
    if (std::find(names.begin(), names.end(), r.task) != names.end()) {
        const auto held = static_cast<std::size_t>(r.held_out * static_cast<double>(r.examples));
        return built_in_task(r.task, r.settings.seed, r.examples, held);
    }
    const InputText text = read_input(r.task, r.max_input);
    TrainingSet set = read_task_lines(text.text, text.origin, r.held_out);
    text.require_unchanged();
    return set;
}

// The settings the task decides: d_k and d_v (each head's), W_o's width, and that a focus on a
// hidden key cannot be learned. --dim is the model's width, all heads together, as trace's is;
// left out, the task's own (4, recall 8), rounded up to a multiple of the heads.
TrainSettings settings_for(const TrainRequest& r, const TrainingSet& set) {
    TrainSettings s = r.settings;
    const Eigen::Index own = set.task == "recall" ? 8 : 4, heads = s.heads;
    const Eigen::Index model = r.dim.value_or((own + heads - 1) / heads * heads);
    if (model % heads != 0)
        throw UsageError(fmt::format("--dim {} does not split into {} heads: give a multiple of {}", model, heads, heads));
    s.d_k = model / heads;
    s.d_v = set.target_width > 0 && heads == 1 ? set.target_width : s.d_k;
    s.d_out = heads > 1 ? (set.target_width > 0 ? set.target_width : set.d_in) : 0;
    for (const auto* part : {&set.train, &set.held_out})
        for (const TrainingExample& e : *part)
            if (s.causal && e.focus && e.focus->key > e.focus->query)
                throw DataError(fmt::format("{}: an example asks token {} to look at token {}, after it, which the causal "
                                            "mask hides (train it with -m self)",
                                            set.task, e.focus->query + 1, e.focus->key + 1));
    return s;
}

// What the weights show is a claim about the mode they were trained in: described for it alone.
std::string model_description(const TrainReport& report) {
    const TrainingSet& set = *report.set;
    std::string text = fmt::format("Weights learned by attntrace train on {}: {}.", set.task, set.description);
    if (!set.shown || !set.shown->focus || !report.training.curve.back().focus) return text;
    const auto& f = *set.shown->focus;
    const std::string pair = fmt::format("\"{}\" gives \"{}\"", set.shown->tokens[static_cast<std::size_t>(f.query)],
                                         set.shown->tokens[static_cast<std::size_t>(f.key)]);
    if (report.head_focus.size() <= 1)
        return text + fmt::format(" After training, with the default options, {} {:.2f} of its weight.", pair,
                                  *report.training.curve.back().focus);
    std::string heads;  // "0.97 of its weight in head 1, 0.41 in head 2 and 0.12 in head 3"
    for (std::size_t h = 0; h < report.head_focus.size(); ++h)
        heads += fmt::format("{}{:.2f}{} in head {}", h == 0 ? "" : h + 1 == report.head_focus.size() ? " and " : ", ",
                             report.head_focus[h], h == 0 ? " of its weight" : "", h + 1);
    return text + fmt::format(" After training, with the default options, {} {}.", pair, heads);
}

// The "learned" object: where the weights came from.
void learned_members(JsonWriter& json, const TrainReport& report) {
    const Training& t = report.training;
    json.key("task").string(report.set->task).key("optimizer").string(to_string(report.settings.optimizer));
    json.key("lr").real(report.settings.lr).key("steps").integer(t.steps);
    json.key("seed").unsigned_integer(report.settings.seed);
    json.key("final_loss").number(t.curve.back().loss, Dtype::float64);
    if (t.embeddings) json.key("embeddings").boolean(true);
}

// The model's sentence as vectors: its own, or with --embeddings the learned rows of its words.
Matrix model_inputs(const TrainReport& report, const TrainingExample& e) {
    const auto& table = report.training.embeddings;
    if (!table) return e.inputs;
    Matrix X(e.inputs.rows(), e.inputs.cols());
    for (std::size_t i = 0; i < e.tokens.size(); ++i) {
        const auto at = table->index.find(e.tokens[i]);
        X.row(static_cast<Eigen::Index>(i)) = at == table->index.end() ? Vector(e.inputs.row(static_cast<Eigen::Index>(i)))
                                                                      : Vector(table->vectors.row(at->second));
    }
    return X;
}

// The same model as float64 arrays (.npz or .safetensors): embeddings, query, key, value and the
// biases; a safetensors file also keeps the tokens, the mode, the description and "learned" in its
// metadata, which the array reader gives back. An .npz file holds arrays alone.
void write_model_arrays(std::ostream& out, const TrainReport& report, bool safetensors) {
    const TrainingSet& set = *report.set;
    const TrainingExample& e = saved_example(set);
    const Projections& w = report.training.learned;
    const Matrix X = model_inputs(report, e);
    std::vector<NamedMatrix> arrays{{"embeddings", &X}, {"query", &w.query}, {"key", &w.key}, {"value", &w.value}};
    if (w.output) arrays.push_back({"output", &*w.output});
    const auto row = [](const std::optional<Vector>& b) { return b ? Matrix(*b) : Matrix(); };
    const Matrix qb = row(w.query_bias), kb = row(w.key_bias), vb = row(w.value_bias), ob = row(w.output_bias);
    if (w.query_bias) arrays.insert(arrays.end(), {{"query_bias", &qb, true}, {"key_bias", &kb, true}, {"value_bias", &vb, true}});
    if (w.output_bias) arrays.push_back({"output_bias", &ob, true});
    std::string bytes;
    if (!safetensors) {
        bytes = write_npz(arrays, ElementType::float64);
    } else {
        const auto text = [](const auto& write) {
            fmt::memory_buffer b;
            JsonWriter json(b);
            write(json);
            return fmt::to_string(b);
        };
        const std::string mode = report.settings.causal ? "causal" : "self";
        std::map<std::string, std::string> metadata{
            {"layout", "in_out"},
            {"mode", mode},
            {"tokens", text([&](JsonWriter& j) { j.strings(e.tokens); })},
            {"description",
             text([&](JsonWriter& j) { j.object(JsonWriter::Layout::inline_).key(mode).string(model_description(report)).end(); })},
            {"learned", text([&](JsonWriter& j) {
                 j.object(JsonWriter::Layout::inline_);
                 learned_members(j, report);
                 j.end();
             })}};
        if (report.settings.heads > 1) metadata["heads"] = std::to_string(report.settings.heads);
        bytes = write_safetensors(arrays, ElementType::float64, metadata);
    }
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The learned model as an ordinary input: the followed example's tokens and vectors, the
// weights, and where they came from ("learned").
void write_model(std::ostream& out, const TrainReport& report) {
    const TrainingSet& set = *report.set;
    const TrainingExample& e = saved_example(set);
    const Training& t = report.training;
    const Projections& w = t.learned;
    fmt::memory_buffer buffer;
    JsonWriter json(buffer);
    using Layout = JsonWriter::Layout;
    json.object();
    json.key("description").object().key(report.settings.causal ? "causal" : "self").string(model_description(report)).end();
    json.key("mode").string(report.settings.causal ? "causal" : "self");
    if (report.settings.heads > 1) json.key("heads").integer(report.settings.heads);
    json.key("tokens").strings(e.tokens);
    json.key("embeddings").matrix(model_inputs(report, e), Dtype::float64);
    json.key("weights").object();
    json.key("query").matrix(w.query, Dtype::float64).key("key").matrix(w.key, Dtype::float64);
    json.key("value").matrix(w.value, Dtype::float64);
    if (w.output) json.key("output").matrix(*w.output, Dtype::float64);
    if (w.query_bias) {
        json.key("query_bias").numbers(*w.query_bias, Dtype::float64);
        json.key("key_bias").numbers(*w.key_bias, Dtype::float64);
        json.key("value_bias").numbers(*w.value_bias, Dtype::float64);
    }
    if (w.output_bias) json.key("output_bias").numbers(*w.output_bias, Dtype::float64);
    json.end();
    json.key("learned").object(Layout::inline_);
    learned_members(json, report);
    json.end();
    json.end();
    out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    out << '\n';
}

// The task's examples as the JSON Lines a FILE task reads: the training ones, then the held-out
// ones (so that the same --held-out splits them again), each focus by 1-based positions.
void write_examples(std::ostream& out, const TrainingSet& set) {
    using Layout = JsonWriter::Layout;
    const auto rows = [](JsonWriter& json, const Matrix& m) { json.matrix(m, Dtype::float64, Layout::inline_); };
    for (const auto* part : {&set.train, &set.held_out})
        for (const TrainingExample& e : *part) {
            fmt::memory_buffer buffer;
            JsonWriter json(buffer);
            json.object(Layout::inline_).key("tokens").strings(e.tokens).key("embeddings");
            rows(json, e.inputs);
            if (e.focus)
                json.key("focus").object(Layout::inline_).key("query").integer(e.focus->query + 1)
                    .key("key").integer(e.focus->key + 1).end();
            if (e.target) rows(json.key("target"), *e.target);
            json.end();
            out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
            out << '\n';
        }
}

// A who_did_it sentence for naming its subject: its vectors with a one-hot of the subject words
// after them (a subject word has a 1 in its own column, every other word zeros), and the class
// of its subject, the second word.
NamedExample named(const TrainingExample& e, const std::vector<std::string>& subjects) {
    const auto k = static_cast<Eigen::Index>(subjects.size());
    NamedExample out;
    out.X = Matrix::Zero(e.inputs.rows(), e.inputs.cols() + k);
    out.X.leftCols(e.inputs.cols()) = e.inputs;
    for (std::size_t t = 0; t < e.tokens.size(); ++t) {
        const auto at = std::find(subjects.begin(), subjects.end(), e.tokens[t]);
        if (at != subjects.end()) out.X(static_cast<Eigen::Index>(t), e.inputs.cols() + (at - subjects.begin())) = 1;
        if (t == 1) out.subject = at - subjects.begin();
    }
    return out;
}

// "train · step 1200 · loss 0.0012, held-out 100.0% at step 1000": the bar's words, with the
// curve's last point (the loss is judged only every --every steps).
std::string progress_label(std::int64_t step, const CurvePoint& last) {
    std::string text = fmt::format("train · step {} · loss {:.4f}", step, last.loss);
    if (last.accuracy) text += fmt::format(", held-out {:.1f}%", 100 * *last.accuracy);
    return text + fmt::format(" at step {}", last.step);
}

// The layer trained, with a progress bar on a terminal once it takes a second (erased when
// it ends, before the report is written).
Training train_watched(const TrainingSet& set, const TrainSettings& settings) {
    ProgressBar bar("train");
    CurvePoint last;
    return train(set, settings, std::nullopt, [&](std::int64_t step, const CurvePoint* point) {
        if (point) last = *point;
        if (!bar.due()) return;
        bar.set_label(progress_label(step, last));
        bar.update(static_cast<std::size_t>(step), static_cast<std::size_t>(settings.steps));
    });
}

// --compare-rnn: who_did_it at each gap, the same examples for both models.
RnnComparison compare_rnn(const TrainRequest& r) {
    if (r.task != "who_did_it")
        throw UsageError(fmt::format("--compare-rnn trains on who_did_it, gap by gap (give TASK who_did_it, not \"{}\")",
                                     r.task));
    const auto subjects = who_did_it_subjects();
    RnnComparison c;
    c.classes = static_cast<Eigen::Index>(subjects.size());
    c.d_k = r.dim.value_or(4);
    c.d_h = r.hidden;
    const auto held = static_cast<std::size_t>(r.held_out * static_cast<double>(r.examples));
    for (const std::size_t gap : {2, 4, 8, 16, 32}) {
        const TrainingSet set = who_did_it_at_gap(r.settings.seed, r.examples, held, gap);
        std::vector<NamedExample> train, held_out;
        for (const auto& e : set.train) train.push_back(named(e, subjects));
        for (const auto& e : set.held_out) held_out.push_back(named(e, subjects));
        if (train.empty()) throw UsageError("nothing to train on: every example is held out (lower --held-out)");
        if (held_out.empty())
            throw UsageError("--compare-rnn judges both models on held-out examples, and none is held out: raise "
                             "--held-out or --examples");
        c.d = train.front().X.cols(), c.train = train.size(), c.held_out = held_out.size();
        c.rows.push_back(compare_at_gap(gap, train, held_out, c.classes, c.d_k, c.d_h, r.settings));
    }
    return c;
}

}  // namespace

void run_train(const TrainRequest& request, Outputs& outputs) {
    require_format(request.format, Product::training);
    RenderOptions options = request.render;
    options.format = request.format;
    if (request.settings.snapshots > 0 && (request.format == Format::table || request.compare_rnn))
        throw UsageError(request.compare_rnn ? "--snapshots keeps the weights of train's own run, not of --compare-rnn's"
                                             : "--snapshots keeps the weights in the report's JSON: add -f json or -f jsonl");
    if (request.svg && request.compare_rnn) throw UsageError("--svg draws train's own curve, not --compare-rnn's table");
    std::ostream* svg = request.svg ? &outputs.add(*request.svg) : nullptr;  // refused at once if it cannot be written
    if (request.compare_rnn) {
        if (request.save || request.examples_out)
            throw UsageError("--compare-rnn trains ten models and saves none: leave out -o and --write-examples");
        const TrainSettings& t = request.settings;
        for (const auto& [given, name] : {std::pair{t.embeddings, "--embeddings"}, std::pair{t.bias, "--bias"},
                                          std::pair{t.causal, "-m causal"}, std::pair{t.dtype == Dtype::float32, "--dtype float32"},
                                          std::pair{t.every > 0, "--every"}, std::pair{t.heads > 1, "--heads"},
                                          std::pair{t.focus_head > 0, "--focus-head"},
                                          std::pair{request.epochs.has_value(), "--epochs"}})
            if (given)
                throw UsageError(fmt::format("--compare-rnn trains its own two models (float64, one head of self-attention "
                                             "without biases, embeddings as given, judged at the end): leave out {}",
                                             name));
        const RnnComparison comparison = compare_rnn(request);
        TrainReport report;
        report.settings = request.settings;
        report.comparison = &comparison;
        render(report, options, outputs.main());
        return;
    }
    if (request.settings.focus_head > request.settings.heads)
        throw UsageError(fmt::format("--focus-head {} names a head the layer does not have (it has {}: give --heads)",
                                     request.settings.focus_head, request.settings.heads));
    const TrainingSet set = task_of(request);
    if (request.settings.focus_head > 0 &&
        std::none_of(set.train.begin(), set.train.end(), [](const TrainingExample& e) { return e.focus.has_value(); }))
        throw UsageError(fmt::format("--focus-head picks the head a focus example is about, and {} trains on none",
                                     set.task));
    TrainReport report;
    report.set = &set;
    report.settings = settings_for(request, set);
    if (request.epochs) {  // N passes: each epoch is ⌈examples / batch⌉ steps, its last batch the rest
        const auto batches = (static_cast<std::int64_t>(set.train.size()) + report.settings.batch - 1) / report.settings.batch;
        if (*request.epochs > 100000000 / batches)
            throw UsageError(fmt::format("--epochs {} is more than 100000000 steps of {} batches an epoch", *request.epochs, batches));
        report.settings.steps = *request.epochs * batches;
    }
    if (request.examples_out) write_examples(outputs.add(*request.examples_out), set);
    report.training = train_watched(set, report.settings);
    if (report.settings.heads > 1 && set.shown && set.shown->focus && report.training.curve.back().focus) {
        TrainingExample followed = *set.shown;
        followed.inputs = model_inputs(report, followed);
        report.head_focus = head_focus(report.training.learned, followed, report.settings.causal, report.settings.heads);
    }
    if (request.save) {
        const std::string& path = *request.save;
        if (path.ends_with(".npz") || path.ends_with(".safetensors"))
            write_model_arrays(outputs.add(path), report, path.ends_with(".safetensors"));
        else
            write_model(outputs.add(path), report);
        report.saved = *request.save;
    }
    render(report, options, outputs.main());
    if (svg) write_training_svg(report, *svg);
}

}  // namespace attntrace
