#include "commands/backward_run.hpp"

#include "attention/backward.hpp"
#include "attention/gradient_check.hpp"
#include "attention/learning.hpp"
#include "attention/modes.hpp"
#include "attention/streaming_backward.hpp"
#include "attention/worked.hpp"
#include "commands/guards.hpp"
#include "core/error.hpp"
#include "input/target.hpp"
#include "render/backward.hpp"
#include "render/html.hpp"
#include "render/svg.hpp"
#include "util/suggest.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace attntrace {

std::optional<LossText> parse_loss(const std::string& text, std::string& error) {
    const std::size_t colon = text.find(':');
    const std::string kind = text.substr(0, colon);
    const std::string rest = colon == std::string::npos ? "" : text.substr(colon + 1);
    const std::vector<std::string> kinds = enum_names<LossKind>();
    LossText loss;
    if (kind == "sum" && colon == std::string::npos) return loss;
    if (kind == "sum") {
        error = "sum takes nothing after it: --backward sum";
    } else if (kind == "focus") {
        const std::size_t equals = rest.find('=');
        if (colon == std::string::npos) error = "focus needs its pair: focus:QUERY=KEY, e.g. focus:smiled=teacher";
        else if (equals == std::string::npos)
            error = fmt::format("focus:QUERY=KEY needs an = between the query and the key, found \"{}\"", printable(rest, 64));
        else if (equals == 0) error = "focus:QUERY=KEY: the query before the = is empty";
        else if (equals + 1 == rest.size()) error = "focus:QUERY=KEY: the key after the = is empty";
        if (!error.empty()) return std::nullopt;
        loss.kind = LossKind::focus;
        loss.query = rest.substr(0, equals), loss.key = rest.substr(equals + 1);
        return loss;
    } else if (kind == "target") {
        if (rest.empty()) error = "target:FILE needs the file of target vectors after the colon";
        if (!error.empty()) return std::nullopt;
        loss.kind = LossKind::target;
        loss.file = rest;
        return loss;
    } else {
        const auto near = likely_typo(kind, kinds);
        error = fmt::format("\"{}\" is not a loss: sum, focus:QUERY=KEY or target:FILE{}", printable(text, 64),
                            near ? fmt::format(" (did you mean {}?)", *near) : "");
    }
    return std::nullopt;
}

namespace {

// "d_weights" and the like from -s, checked against every gradient name.
void check_gradient_name(const std::string& name, const std::string& option) {
    const std::vector<std::string> names = gradient_names();
    if (std::find(names.begin(), names.end(), name) != names.end()) return;
    const auto near = likely_typo(name, names);
    throw UsageError(fmt::format("{}: no gradient named \"{}\"{} (gradients: {})", option, printable(name),
                                 near ? fmt::format(" (did you mean {}?)", *near) : "", fmt::join(names, ", ")));
}

bool is_gradient_name(const std::string& name) { return name.starts_with("d_"); }

void take_svg_gradient(TraceRequest& request) {
    if (!is_gradient_name(request.svg_stage)) return;
    const std::string& name = request.svg_stage;
    if (!request.backward)
        throw UsageError(fmt::format("--svg-stage {}: a gradient needs --backward LOSS (sum, focus:QUERY=KEY or "
                                     "target:FILE)",
                                     printable(name)));
    const auto id = parse_enum<StageId>(name.substr(2));
    if (!id || std::find(svg_stages.begin(), svg_stages.end(), *id) == svg_stages.end())
        throw UsageError(fmt::format("--svg-stage: --svg draws the gradients d_scores, d_scaled, d_masked and d_weights "
                                     "(a matrix over query and key pairs), not \"{}\"",
                                     printable(name)));
    request.backward->svg_of = name.substr(2);
    request.svg_stage = name.substr(2);
}

}  // namespace

void take_gradient_stages(TraceRequest& request) {
    std::vector<std::string> forward, gradients;
    for (const std::string& name : request.stages) {
        if (!is_gradient_name(name)) {
            forward.push_back(name);
            continue;
        }
        check_gradient_name(name, "--stage");
        gradients.push_back(name);
    }
    if (!gradients.empty() && !request.backward)
        throw UsageError(fmt::format("--stage {}: a gradient needs --backward LOSS (sum, focus:QUERY=KEY or target:FILE)",
                                     gradients.front()));
    take_svg_gradient(request);
    if (!request.backward) return;
    BackwardRequest& b = *request.backward;
    if (b.step_size && request.check)
        throw UsageError("--check verifies the gradients and --step-size takes a step with them: give one at a time");
    b.forward_shown = request.stages.empty() || !forward.empty();
    b.gradients_shown = request.stages.empty() || !gradients.empty();
    b.stages = std::move(gradients);
    request.stages = std::move(forward);
}

namespace {

bool several_heads(const Trace& t) {
    switch (family_of(t.mode)) {
    case ModeFamily::single_sequence: return t.heads > 1;
    case ModeFamily::encoder_decoder: return false;
    }
    unknown_family();
}

// The stage the sum and target losses read: the output when the run has one.
const Stage& result_of(const Trace& t) {
    if (const Stage* output = t.find(StageId::output)) return *output;
    return t.at(StageId::context);
}

Loss target_loss(const std::string& file, const Trace& t, std::uint64_t max_input) {
    Matrix target = read_target(file, max_input);
    const Stage& result = result_of(t);
    if (target.rows() != result.row_count() || target.cols() != result.col_count())
        throw DataError(fmt::format("{}: the target has {} row{} of {} number{}, and the {} it is compared with has {} rows "
                                    "of {}{}",
                                    file, target.rows(), target.rows() == 1 ? "" : "s", target.cols(),
                                    target.cols() == 1 ? "" : "s", result.name(), result.row_count(), result.col_count(),
                                    result.id == StageId::output ? " (concat·W_o: give targets of the output's shape)" : ""));
    return Loss::towards(std::move(target));
}

Loss resolve_loss(const TraceRequest& request, const Trace& t) {
    const LossText& text = request.backward->loss;
    switch (text.kind) {
    case LossKind::sum: return Loss::sum();
    case LossKind::target: return target_loss(text.file, t, request.max_input);
    case LossKind::focus: break;
    }
    const int head = several_heads(t) ? std::max(request.render.head, 1) : 0;
    const Stage& weights = t.at(StageId::weights, head);
    const Eigen::Index query = find_query_row(weights.rows, text.query, "--backward focus (the query)");
    const Eigen::Index key = find_query_row(weights.cols, text.key, "--backward focus (the key)");
    return Loss::focus(query, key, head);
}

// The gradients to show: those -s names (every one when it names none), of --head's head.
std::vector<const Stage*> shown_gradients(const Gradients& g, const TraceRequest& request) {
    const std::vector<std::string>& asked = request.backward->stages;
    for (const std::string& name : asked)
        if (std::none_of(g.stages.begin(), g.stages.end(), [&](const Stage& d) { return gradient_name(d) == name; })) {
            std::vector<std::string> present;
            for (const Stage& d : g.stages)
                if (std::find(present.begin(), present.end(), gradient_name(d)) == present.end())
                    present.push_back(gradient_name(d));
            throw UsageError(fmt::format("--stage: this run has no gradient {} (its loss reaches {})", name,
                                         fmt::join(present, ", ")));
        }
    std::vector<const Stage*> shown;
    if (!request.backward->gradients_shown) return shown;
    const int head = request.render.head;
    for (const Stage& d : g.stages)
        if ((asked.empty() || std::find(asked.begin(), asked.end(), gradient_name(d)) != asked.end()) &&
            (head == 0 || d.head == 0 || d.head == head))
            shown.push_back(&d);
    return shown;
}

// The number of entries --check moves: every parameter's and the inputs'.
std::size_t checked_entries(const Trace& t) {
    std::size_t n = 0;
    for (const Parameter& p : t.parameters) n += static_cast<std::size_t>(p.data.size());
    switch (family_of(t.mode)) {
    case ModeFamily::single_sequence: {
        const Stage& x = t.find(StageId::embeddings) ? t.at(StageId::embeddings) : t.at(StageId::inputs);
        return n + static_cast<std::size_t>(x.data.size());
    }
    case ModeFamily::encoder_decoder:
        return n + static_cast<std::size_t>(t.at(StageId::encoder_states).data.size() + t.at(StageId::decoder_states).data.size());
    }
    unknown_family();
}

void run_check(const Problem& problem, const TraceRequest& request, const Trace& t, const Gradients& g, std::ostream& out) {
    const std::size_t entries = checked_entries(t);
    if (entries > max_checked_entries)
        throw DataError(fmt::format("{}: --check with --backward moves each of the {} parameter and input entries four "
                                    "times and traces the input again each time; that is for toy sizes, at most {} entries",
                                    t.origin, entries, max_checked_entries));
    require_time(gradient_check_seconds(work_shape(problem, request.trace), static_cast<double>(entries)),
                 request.max_seconds, problem.origin, fmt::format("--check with --backward ({} traces of the input)", 4 * entries), "");
    const GradientCheck check = check_gradients(problem, request.trace, g.loss);
    const MatrixCheck& worst = check.worst();
    if (worst.worst_relative > check.tolerance)
        throw DataError(fmt::format("{}: check failed: the gradient of {} at ({}, {}) is {}, and its central difference "
                                    "{} (relative error {:.2g}, more than {:.2g} with h and with h halved up to {} times)",
                                    t.origin, worst.key, worst.row_label, worst.col_label, worst.gradient,
                                    worst.difference, worst.worst_relative, check.tolerance, check.halvings));
    render_gradient_check(t, g, check, check.tolerance, request.render, out);
}

void draw_svg(const TraceRequest& request, const Trace& t, const Gradients& g, std::ostream& svg) {
    const auto& of = request.backward->svg_of;
    if (!of) return render_svg(t, request.svg, svg);
    const Stage* d = g.find(*parse_enum<StageId>(*of), request.svg.head);
    if (!d) throw UsageError(fmt::format("--svg-stage d_{}: this run's loss does not reach the {} stage", *of, *of));
    render_svg(t, *d, request.svg, svg);
}

// The stages of the trace after a step: those -s names, else the weights and the result.
std::vector<StageId> after_stages(const TraceRequest& request, const Trace& t) {
    if (!request.render.stages.empty()) return request.render.stages;
    return {StageId::weights, result_of(t).id};
}

// The loss of --summary --backward: the focus pair found among the tokens (of --head's head,
// head 1 without it, with several heads), the target read.
Loss resolve_stream_loss(const TraceRequest& request, const Problem& problem, int heads) {
    const LossText& text = request.backward->loss;
    switch (text.kind) {
    case LossKind::sum: return Loss::sum();
    case LossKind::target: return Loss::towards(read_target(text.file, request.max_input));
    case LossKind::focus: break;
    }
    const std::vector<std::string>& tokens = std::get<SingleSequenceInput>(problem.input).sequence.tokens;
    const Eigen::Index query = find_query_row(tokens, text.query, "--backward focus (the query)");
    const Eigen::Index key = find_query_row(tokens, text.key, "--backward focus (the key)");
    return Loss::focus(query, key, heads > 1 ? std::max(request.render.head, 1) : 0);
}

}  // namespace

void run_stream_backward(const Problem& problem, const TraceRequest& request, std::ostream& out,
                         const std::function<void()>& read_again) {
    if (!std::holds_alternative<SingleSequenceInput>(problem.input))
        throw UsageError(fmt::format("--summary --backward is for one sequence (plain, self and causal modes); {} mode "
                                     "has its own full backward pass: leave out --summary",
                                     to_string(request.trace.mode)));
    const WorkShape shape = work_shape(problem, request.trace);
    const bool target = request.backward->loss.kind == LossKind::target;
    require_memory(stream_backward_bytes(shape, request.trace.dtype, target), request.max_memory, problem.origin,
                   "the streaming backward pass of this input", "");
    require_time(stream_backward_seconds(shape), request.max_seconds, problem.origin,
                 fmt::format("the streaming backward pass of {} tokens", shape.rows), "");
    require_head(request.render.head, shape.heads);
    const Loss loss = resolve_stream_loss(request, problem, static_cast<int>(shape.heads));
    const StreamGradients g = stream_backward(problem, request.trace, loss);
    read_again();
    render(g, request.render, out);
}

void run_backward(const Problem& problem, const TraceRequest& request, const Trace& t, std::ostream& out,
                  std::ostream* svg, std::ostream* html) {
    const BackwardRequest& b = *request.backward;
    const Gradients g = backward(t, resolve_loss(request, t));
    if (request.check) {
        if (svg) draw_svg(request, t, g, *svg);
        if (html) write_html(t, &g, request.render, *html);
        return run_check(problem, request, t, g, out);
    }
    const std::vector<const Stage*> shown = shown_gradients(g, request);
    std::optional<BackwardRow> row;
    if (t.worked) row = work_backward_row(t, g, t.worked->row, t.worked->head);
    std::optional<LearningStep> step;
    if (b.step_size) step = take_step(problem, request.trace, t, g, *b.step_size);
    if (svg) draw_svg(request, t, g, *svg);
    BackwardRun run{t, g, shown, b.forward_shown, row ? &*row : nullptr, step ? &*step : nullptr, after_stages(request, t)};
    if (html) write_html(run, request.render, *html);
    render_backward(run, request.render, out);
}

}  // namespace attntrace
