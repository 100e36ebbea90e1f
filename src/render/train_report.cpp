// attntrace train's report: what was trained on and how, the curve every K steps, and the weight
// the task is about before and after.
#include "attention/rnn_compare.hpp"
#include "attention/training.hpp"
#include "render/formats.hpp"
#include "render/json_writer.hpp"
#include "render/render.hpp"
#include "render/svg.hpp"
#include "render/svg_chart.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ostream>
#include <string>

namespace attntrace {
namespace {

// "smiled → teacher", the pair the report follows.
std::string followed_pair(const TrainingExample& shown) {
    const auto& f = *shown.focus;
    return fmt::format("{} → {}", printable(shown.tokens[static_cast<std::size_t>(f.query)]),
                       printable(shown.tokens[static_cast<std::size_t>(f.key)]));
}

std::string sentence_of(const TrainingExample& e) {
    std::string text;
    for (const auto& t : e.tokens) text += (text.empty() ? "" : " ") + printable(t);
    return text;
}

std::string optimizer_text(const TrainSettings& s) {
    if (s.optimizer == Optimizer::sgd)
        return s.momentum == 0 ? fmt::format("sgd (lr {}, no momentum: W ← W − lr·∇L)", s.lr)
                               : fmt::format("sgd (lr {}, momentum {})", s.lr, s.momentum);
    return fmt::format("adam (lr {}, β₁ {}, β₂ {}, ε {})", s.lr, s.beta1, s.beta2, s.epsilon);
}

std::string percent(double x) { return fmt::format("{:.1f}%", 100 * x); }

// "d_in = 8, d_k = 4, d_v = 4", or with several heads "d_in = 8, 2 heads of d_k = 2 and d_v = 2, W_o 4 × 8".
std::string dims_text(const TrainingSet& set, const TrainSettings& s) {
    if (s.heads == 1) return fmt::format("d_in = {}, d_k = {}, d_v = {}", set.d_in, s.d_k, s.d_v);
    return fmt::format("d_in = {}, {} heads of d_k = {} and d_v = {}, W_o {} × {}", set.d_in, s.heads, s.d_k, s.d_v,
                       s.heads * s.d_v, s.d_out);
}

// Whose weight the focus loss, the followed weight and the accuracy are about.
std::string whose_weight(const TrainSettings& s) {
    if (s.heads == 1) return "the weight";
    return s.focus_head > 0 ? fmt::format("head {}'s weight", s.focus_head) : "the heads' mean weight";
}

// A point of the curve's members: "step", "loss", "held_out_loss", "held_out_accuracy", "focus".
void point_members(JsonWriter& json, const CurvePoint& p) {
    const auto optional = [&](const char* name, const std::optional<double>& x) {
        json.key(name);
        if (x) json.number(*x, Dtype::float64);
        else json.null();
    };
    json.key("step").integer(p.step).key("loss").number(p.loss, Dtype::float64);
    optional("held_out_loss", p.held_out_loss);
    optional("held_out_accuracy", p.accuracy);
    optional("focus", p.focus);
}

// A snapshot's members: "step" and "weights" (as a model file holds them).
void snapshot_members(JsonWriter& json, std::int64_t step, const Projections& w) {
    json.key("step").integer(step).key("weights").object(JsonWriter::Layout::inline_);
    constexpr auto one_line = JsonWriter::Layout::inline_;
    json.key("query").matrix(w.query, Dtype::float64, one_line).key("key").matrix(w.key, Dtype::float64, one_line);
    json.key("value").matrix(w.value, Dtype::float64, one_line);
    if (w.output) json.key("output").matrix(*w.output, Dtype::float64, one_line);
    if (w.query_bias) {
        json.key("query_bias").numbers(*w.query_bias, Dtype::float64);
        json.key("key_bias").numbers(*w.key_bias, Dtype::float64);
        json.key("value_bias").numbers(*w.value_bias, Dtype::float64);
    }
    if (w.output_bias) json.key("output_bias").numbers(*w.output_bias, Dtype::float64);
    json.end();
}

// A gap of --compare-rnn's members.
void gap_members(JsonWriter& json, const GapResult& r) {
    const auto step = [&](const char* name, const std::optional<std::int64_t>& at) {
        json.key(name);
        if (at) json.integer(*at);
        else json.null();
    };
    json.key("gap").unsigned_integer(r.gap);
    json.key("rnn_accuracy").number(r.rnn_accuracy, Dtype::float64);
    json.key("attention_accuracy").number(r.attention_accuracy, Dtype::float64);
    json.key("rnn_loss").number(r.rnn_loss, Dtype::float64);
    json.key("attention_loss").number(r.attention_loss, Dtype::float64);
    step("rnn_reached", r.rnn_reached);
    step("attention_reached", r.attention_reached);
    json.key("seconds").real(r.seconds);
}

// --compare-rnn: what both models were given, then a row per gap.
void write_comparison_text(const TrainReport& report, std::ostream& out) {
    const RnnComparison& c = *report.comparison;
    const TrainSettings& s = report.settings;
    out << "compare-rnn: who_did_it with the subject a fixed number of words before the verb; from the verb's output "
           "each model names the subject, one of "
        << c.classes << " words\n";
    out << fmt::format("examples per gap: {} trained on, {} held out · vectors: the task's {} features and a one-hot of "
                       "the {} subject words (d = {})\n",
                       c.train, c.held_out, c.d - c.classes, c.classes, c.d);
    out << fmt::format("attention: one head, d_k = {}, logits = z_n (W_v is d × {}) · RNN: tanh, d_h = {}, logits = "
                       "h_n·W_r + b_r, trained through time\n",
                       c.d_k, c.classes, c.d_h);
    out << fmt::format("both: {}{} · batch {} · {} steps · seed {} · float64 · loss −log softmax(logits)[subject]\n\n",
                       optimizer_text(s), s.clip > 0 ? fmt::format(", gradient norm clipped at {}", s.clip) : "", s.batch,
                       s.steps, s.seed);
    out << fmt::format("{:>4}  {:>11}  {:>8}  {:>9}  {:>17}  {:>8}  {:>14}\n", "", "RNN", "", "", "attention", "", "");
    out << fmt::format("{:>4}  {:>11}  {:>8}  {:>9}  {:>17}  {:>8}  {:>14}\n", "gap", "accuracy", "95% at", "loss",
                       "accuracy", "95% at", "loss");
    const auto at = [](const std::optional<std::int64_t>& step) {
        return step ? fmt::format("{}", *step) : std::string("never");
    };
    for (const GapResult& r : c.rows)
        out << fmt::format("{:>4}  {:>11}  {:>8}  {:>9.4f}  {:>17}  {:>8}  {:>14.4f}\n", r.gap, percent(r.rnn_accuracy),
                           at(r.rnn_reached), r.rnn_loss, percent(r.attention_accuracy), at(r.attention_reached),
                           r.attention_loss);
    const std::int64_t judged = std::max<std::int64_t>(1, s.steps / 100);
    out << fmt::format("\naccuracy: held out, at the end; 95% at: the first step at which held-out accuracy was 95% "
                       "or more (judged every {}); loss: the mean over the training examples at the end; "
                       "chance: {} (1 in {})\n",
                       judged == 1 ? std::string("step") : fmt::format("{} steps", judged),
                       percent(1.0 / static_cast<double>(c.classes)), c.classes);
    const GapResult &first = c.rows.front(), &last = c.rows.back();
    out << fmt::format("from gap {} to gap {}: the RNN {} → {}, attention {} → {}\n", first.gap, last.gap,
                       percent(first.rnn_accuracy), percent(last.rnn_accuracy), percent(first.attention_accuracy),
                       percent(last.attention_accuracy));
}

void write_comparison_json(JsonWriter& json, const TrainReport& report) {
    using Layout = JsonWriter::Layout;
    const RnnComparison& c = *report.comparison;
    const TrainSettings& s = report.settings;
    json.key("schema").string("attntrace.compare_rnn/1");
    json.key("task").string("who_did_it");
    json.key("classes").integer(c.classes);
    json.key("examples").object(Layout::inline_).key("train").unsigned_integer(c.train);
    json.key("held_out").unsigned_integer(c.held_out).end();
    json.key("dims").object(Layout::inline_).key("d").integer(c.d).key("d_k").integer(c.d_k).key("d_h").integer(c.d_h).end();
    json.key("optimizer").object(Layout::inline_).key("name").string(to_string(s.optimizer)).key("lr").real(s.lr);
    json.key("clip");
    if (s.clip > 0) json.real(s.clip);
    else json.null();
    json.end();
    json.key("batch").integer(s.batch).key("steps").integer(s.steps).key("seed").unsigned_integer(s.seed);
    json.key("gaps").array();
    for (const GapResult& r : c.rows) {
        json.object(Layout::inline_);
        gap_members(json, r);
        json.end();
    }
    json.end();
}

}  // namespace

void write_training_text(const TrainReport& report, const RenderOptions& options, std::ostream& out) {
    if (report.comparison) return write_comparison_text(report, out);
    const TrainingSet& set = *report.set;
    const TrainSettings& s = report.settings;
    const Training& t = report.training;
    const int digits = options.digits;
    out << fmt::format("train {}: {}\n", printable(set.task), set.description);
    out << fmt::format("examples: {} trained on, {} held out · {} mode · {} · {} · {}{}\n", set.train.size(),
                       set.held_out.size(), s.causal ? "causal" : "self", dims_text(set, s),
                       s.bias ? (s.heads > 1 ? "biases b_q, b_k, b_v, b_o" : "biases b_q, b_k, b_v") : "no biases",
                       to_string(s.dtype),
                       t.embeddings ? fmt::format(" · the embeddings learned too ({} words)", t.embeddings->words.size())
                                    : "");
    out << fmt::format("optimizer: {}{} · batch {} · {} steps ({} epoch{} begun) · seed {}\n", optimizer_text(s),
                       s.clip > 0 ? fmt::format(", gradient norm clipped at {}", s.clip) : "", s.batch, t.steps,
                       t.epochs_begun, t.epochs_begun == 1 ? "" : "s", s.seed);
    const bool follows = set.shown && set.shown->focus && t.curve.back().focus;
    if (follows)
        out << fmt::format("follows: {} of {} in \"{}\"\n", whose_weight(s), followed_pair(*set.shown), sentence_of(*set.shown));
    out << '\n';
    const std::string focus_head = follows ? followed_pair(*set.shown) : "";
    const int width = digits + 4;
    out << fmt::format("{:>6}  {:>{}}  {:>{}}  {:>17}  {}\n", "step", "loss", width, "held-out loss", std::max(width, 13),
                       "held-out accuracy", focus_head);
    for (const CurvePoint& p : t.curve) {
        const auto shown = [&](const std::optional<double>& x) {
            return x ? fmt::format("{:.{}f}", *x, digits) : std::string("–");
        };
        out << fmt::format("{:>6}  {:>{}.{}f}  {:>{}}  {:>17}  {}\n", p.step, p.loss, width, digits,
                           shown(p.held_out_loss), std::max(width, 13), p.accuracy ? percent(*p.accuracy) : "–",
                           p.focus ? shown(p.focus) : "");
    }
    out << '\n';
    const CurvePoint& first = t.curve.front();
    const CurvePoint& last = t.curve.back();
    if (first.focus && last.focus)
        out << fmt::format("{}: {:.{}f} → {:.{}f}\n", focus_head, *first.focus, digits, *last.focus, digits);
    for (std::size_t h = 0; h < report.head_focus.size(); ++h)
        out << fmt::format("{}{} {:.{}f}{}", h == 0 ? "each head's weight of it at the end: head " : ", head ", h + 1,
                           report.head_focus[h], digits, h + 1 == report.head_focus.size() ? "\n" : "");
    if (last.accuracy)
        out << fmt::format("held-out accuracy: {} → {} ({} on its key)\n", percent(*first.accuracy),
                           percent(*last.accuracy),
                           s.heads == 1 ? "the query's largest weight"
                           : s.focus_head > 0 ? fmt::format("head {}'s largest weight", s.focus_head)
                                              : "the heads' mean weight largest");
    if (std::none_of(set.train.begin(), set.train.end(), [](const TrainingExample& e) { return e.target.has_value(); }))
        out << fmt::format("{}: no focus loss reaches {}, so {} as drawn\n", s.heads > 1 ? "W_v and W_o" : "W_v",
                           s.heads > 1 ? "them" : "it", s.heads > 1 ? "they stay" : "it stays");
    if (t.steps > 0)
        out << fmt::format("{} steps in {:.3f} s: {:.0f} steps per second (the curve's evaluations not counted)\n", t.steps,
                           t.seconds, t.seconds > 0 ? static_cast<double>(t.steps) / t.seconds : 0.0);
    if (!report.saved.empty() && report.saved.ends_with(".npz")) {  // arrays alone: no words, no mode, no note
        const TrainingExample& e = saved_example(set);
        const bool plain = std::all_of(e.tokens.begin(), e.tokens.end(), [](const std::string& t) {
            return t.find_first_of(" \t\"\\$`") == std::string::npos;
        });
        out << fmt::format("learned model written to {} (arrays only: its tokens, mode and the note of where the weights "
                           "came from are not kept): trace it with attntrace {} -m {}{} --layout in_out {}\n",
                           printable(report.saved), printable(report.saved), s.causal ? "causal" : "self",
                           s.heads > 1 ? fmt::format(" --heads {}", s.heads) : "",
                           plain ? fmt::format("--tokens \"{}\"", sentence_of(e))
                                 : fmt::format("and --tokens giving its {} labels", e.tokens.size()));
    } else if (!report.saved.empty()) {
        out << fmt::format("learned model written to {}: trace it with attntrace {} -m {}\n", printable(report.saved),
                           printable(report.saved), s.causal ? "causal" : "self");
    }
}

void write_training_json(JsonWriter& json, const TrainReport& report) {
    if (report.comparison) return write_comparison_json(json, report);
    using Layout = JsonWriter::Layout;
    const TrainingSet& set = *report.set;
    const TrainSettings& s = report.settings;
    const Training& t = report.training;
    json.key("schema").string("attntrace.train/1");
    json.key("task").string(set.task);
    json.key("description").string(set.description);
    json.key("mode").string(s.causal ? "causal" : "self");
    json.key("dtype").string(to_string(s.dtype));
    json.key("examples").object(Layout::inline_).key("train").unsigned_integer(set.train.size());
    json.key("held_out").unsigned_integer(set.held_out.size()).end();
    json.key("dims").object(Layout::inline_).key("d_in").integer(set.d_in).key("heads").integer(s.heads);
    json.key("d_k").integer(s.d_k).key("d_v").integer(s.d_v);
    if (s.heads > 1) json.key("d_out").integer(s.d_out);
    json.end();
    json.key("focus_head");
    if (s.focus_head > 0) json.integer(s.focus_head);
    else json.null();
    json.key("bias").boolean(s.bias);
    json.key("embeddings");
    if (t.embeddings)
        json.object(Layout::inline_).key("learned").boolean(true).key("words").unsigned_integer(t.embeddings->words.size()).end();
    else
        json.object(Layout::inline_).key("learned").boolean(false).end();
    json.key("optimizer").object(Layout::inline_).key("name").string(to_string(s.optimizer)).key("lr").real(s.lr);
    if (s.optimizer == Optimizer::sgd) json.key("momentum").real(s.momentum);
    else json.key("beta1").real(s.beta1).key("beta2").real(s.beta2).key("epsilon").real(s.epsilon);
    json.key("clip");
    if (s.clip > 0) json.real(s.clip);
    else json.null();
    json.end();
    json.key("batch").integer(s.batch).key("steps").integer(t.steps).key("epochs_begun").integer(t.epochs_begun);
    json.key("seed").unsigned_integer(s.seed);
    json.key("follows");
    if (set.shown && set.shown->focus)
        json.object(Layout::inline_)
            .key("tokens").strings(set.shown->tokens)
            .key("query").integer(set.shown->focus->query + 1)
            .key("key").integer(set.shown->focus->key + 1)
            .end();
    else
        json.null();
    json.key("focus_by_head");  // each head's weight of the followed pair at the end, with several heads
    if (report.head_focus.empty()) json.null();
    else json.numbers(Eigen::Map<const Vector>(report.head_focus.data(), static_cast<Eigen::Index>(report.head_focus.size())), Dtype::float64);
    json.key("curve").array();
    for (const CurvePoint& p : t.curve) {
        json.object(Layout::inline_);
        point_members(json, p);
        json.end();
    }
    json.end();
    if (s.snapshots > 0) {
        json.key("snapshots").array();
        for (const auto& [step, weights] : t.snapshots) {
            json.object(Layout::inline_);
            snapshot_members(json, step, weights);
            json.end();
        }
        json.end();
    }
    json.key("seconds").real(t.seconds);
    json.key("output");
    if (report.saved.empty()) json.null();
    else json.string(report.saved);
}

void write_training_lines(const TrainReport& report, std::ostream& out) {
    using Layout = JsonWriter::Layout;
    fmt::memory_buffer buffer;
    JsonWriter json(buffer);
    if (report.comparison) {
        for (const GapResult& r : report.comparison->rows) {
            json.object(Layout::inline_).key("schema").string("attntrace.compare-rnn-line/1");
            gap_members(json, r);
            json.end();
            buffer.push_back('\n');
        }
    } else {
        for (const CurvePoint& p : report.training.curve) {
            json.object(Layout::inline_).key("schema").string("attntrace.train-line/1");
            point_members(json, p);
            json.end();
            buffer.push_back('\n');
        }
        for (const auto& [step, weights] : report.training.snapshots) {
            json.object(Layout::inline_).key("schema").string("attntrace.train-snapshot/1");
            snapshot_members(json, step, weights);
            json.end();
            buffer.push_back('\n');
        }
    }
    out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
}

void write_training_svg(const TrainReport& report, std::ostream& stream) {
    const Training& t = report.training;
    svg::Series loss{"loss (training examples)", "#c0392b", {}}, held{"loss (held out)", "#e59866", {}};
    svg::Series focus{"", "#2471a3", {}}, accuracy{"held-out accuracy", "#229954", {}};
    const TrainingSet& set = *report.set;
    if (set.shown && set.shown->focus) focus.name = "weight " + followed_pair(*set.shown);
    for (const CurvePoint& p : t.curve) {
        const auto x = static_cast<double>(p.step);
        loss.points.emplace_back(x, p.loss);
        if (p.held_out_loss) held.points.emplace_back(x, *p.held_out_loss);
        if (p.focus) focus.points.emplace_back(x, *p.focus);
        if (p.accuracy) accuracy.points.emplace_back(x, *p.accuracy);
    }
    svg::Panel top, bottom;
    top.log_y = true;
    top.y_label = "loss";
    top.x_label = "step";
    bottom.top = top.top + top.height + 80;
    bottom.y_range = std::pair{0.0, 1.0};
    bottom.y_label = focus.name.empty() ? "held-out accuracy" : "the followed weight and held-out accuracy";
    bottom.x_label = "step";
    std::vector<svg::Series> lines{loss};
    if (!held.points.empty()) lines.push_back(held);
    std::vector<svg::Series> shares;
    if (!focus.points.empty()) shares.push_back(focus);
    if (!accuracy.points.empty()) shares.push_back(accuracy);
    svg::Buffer out;
    const double height = (shares.empty() ? top.top + top.height : bottom.top + bottom.height) + 56;
    svg::open_document(out, top.left + top.width + svg::legend_width, height);
    svg::append_title(out, fmt::format("attntrace train {}: {} steps of {}", set.task, t.steps,
                                       to_string(report.settings.optimizer)));
    svg::append_panel(out, top, lines);
    if (!shares.empty()) svg::append_panel(out, bottom, shares);
    svg::close_document(out, stream);
}

}  // namespace attntrace
