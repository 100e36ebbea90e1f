#include "stepper/stepper.hpp"

#include "attention/backward.hpp"
#include "attention/trace.hpp"
#include "attention/worked.hpp"
#include "core/error.hpp"
#include "render/explain.hpp"
#include "render/worked_text.hpp"
#include "stepper/edited_input.hpp"
#include "util/terminal.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace attntrace::stepper {
namespace {

// The modes a single sequence cycles through with m.
constexpr Mode single_modes[] = {Mode::plain, Mode::self, Mode::causal};

std::string number(double x, int digits) {
    if (std::isinf(x)) return x < 0 ? "−∞" : "∞";
    return fmt::format("{:.{}f}", x, digits);
}

// "1.5" or "-2e-3" as a number; nothing for anything else.
std::optional<double> parse_number(const std::string& text) {
    double x = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), x);
    if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(x)) return std::nullopt;
    return x;
}

}  // namespace

Stepper::Stepper(Problem problem, TraceOptions options, std::string input, int digits, std::optional<LossText> loss,
                 std::string load_args)
    : problem_(std::move(problem)), options_(std::move(options)), input_(std::move(input)), load_args_(std::move(load_args)),
      digits_(digits), loss_(std::move(loss)) {
    if (loss_ && loss_->kind == LossKind::target)
        throw UsageError("attntrace step's --backward takes focus:QUERY=KEY or sum (a target file: trace it with --backward)");
    options_.query.reset();
    head_ = options_.head.value_or(1);
    first_ = options_;
    trace_ = attntrace::trace(problem_, options_);
    run_backward();
    rebuild_views(std::nullopt);
}

// The gradients of the loss on the current trace (none without a loss).
void Stepper::run_backward() {
    gradients_.reset();
    if (!loss_) return;
    Loss loss = Loss::sum();
    if (loss_->kind == LossKind::focus) {
        const int head = trace_.heads > 1 ? std::clamp(head_, 1, trace_.heads) : 0;  // the head on screen, as -q's --head
        const Stage& weights = trace_.at(StageId::weights, head);
        loss = Loss::focus(find_query_row(weights.rows, loss_->query, "--backward focus (the query)"),
                           find_query_row(weights.cols, loss_->key, "--backward focus (the key)"), head);
    }
    gradients_ = backward(trace_, loss);
}

const Stage& Stepper::stage_of(const View& v) const {
    return v.kind == View::gradient ? gradients_->stages[v.index] : trace_.stages[v.index];
}

std::string Stepper::formula_of(const View& v) const {
    return v.kind == View::parameter ? trace_.parameters[v.index].formula : stage_of(v).formula;
}

void Stepper::start_at(const std::optional<std::string>& stage, const std::optional<std::string>& row) {
    if (stage) {
        const auto at = std::find_if(views_.begin(), views_.end(), [&](const View& v) {
            std::string name = view_name(v);  // "d_weights · head 1" answers to d_weights
            if (const auto dot = name.find(" · head "); dot != std::string::npos) name.resize(dot);
            return name == *stage;
        });
        if (at == views_.end()) {
            std::vector<std::string> names;
            for (const View& v : views_) names.push_back(view_name(v));
            throw UsageError(fmt::format("--stage {}: this run has no such stage (it has {})", printable(*stage),
                                         bounded_list(names, 20)));
        }
        current_ = static_cast<std::size_t>(at - views_.begin());
    }
    if (row) row_ = find_query_row(row_labels(view()).list(), *row, "-q");
    move(0, 0);
}

void Stepper::rebuild_views(const std::optional<Place>& keep) {
    views_.clear();
    const int heads = trace_.heads;
    head_ = std::clamp(head_, 1, std::max(1, heads));
    bool parameters_added = trace_.parameters.empty();
    for (std::size_t i = 0; i < trace_.stages.size(); ++i) {
        const Stage& s = trace_.stages[i];
        if (s.head != 0 && s.head != head_) continue;
        const bool before_projections = s.id == StageId::inputs || s.id == StageId::embeddings || s.id == StageId::positions ||
                                        s.id == StageId::layernorm || s.id == StageId::encoder_states ||
                                        s.id == StageId::decoder_states;
        if (!parameters_added && !before_projections) {
            for (std::size_t p = 0; p < trace_.parameters.size(); ++p) views_.push_back({View::parameter, p});
            parameters_added = true;
        }
        views_.push_back({View::stage, i});
    }
    if (!parameters_added)
        for (std::size_t p = 0; p < trace_.parameters.size(); ++p) views_.push_back({View::parameter, p});
    if (gradients_)  // on through the backward pass, in its order: from the loss back to the inputs
        for (std::size_t g = 0; g < gradients_->stages.size(); ++g)
            if (gradients_->stages[g].head == 0 || gradients_->stages[g].head == head_) views_.push_back({View::gradient, g});
    std::size_t at = std::min(current_, views_.size() - 1);
    if (keep) {
        if (const auto found = find_view(*keep)) {
            at = *found;
        } else {  // the same stage of another head, or else the nearest place
            Place other = *keep;
            other.head = keep->head == 0 ? 0 : head_;
            if (const auto again = find_view(other)) at = *again;
        }
    }
    current_ = at;
    row_ = std::clamp<Eigen::Index>(row_, 0, std::max<Eigen::Index>(0, matrix(view()).rows() - 1));
    col_ = std::clamp<Eigen::Index>(col_, 0, std::max<Eigen::Index>(0, matrix(view()).cols() - 1));
}

Place Stepper::place_of(const View& v) const {
    if (v.kind == View::parameter) return {StageId::parameters, 0, trace_.parameters[v.index].name, false};
    const Stage& s = stage_of(v);
    return {s.id, s.head, s.parameter, v.kind == View::gradient};
}

std::optional<std::size_t> Stepper::find_view(const Place& p) const {
    for (std::size_t i = 0; i < views_.size(); ++i)
        if (place_of(views_[i]) == p) return i;
    return std::nullopt;
}

std::string Stepper::view_name(const View& v) const {
    if (v.kind == View::parameter) return trace_.parameters[v.index].name;
    const Stage& s = stage_of(v);
    const std::string name = v.kind == View::gradient ? fmt::format("d_{}", s.key()) : std::string(s.name());
    return s.head > 0 ? fmt::format("{} · head {}", name, s.head) : name;
}

const Matrix& Stepper::matrix(const View& v) const {
    return v.kind == View::parameter ? trace_.parameters[v.index].data : stage_of(v).data;
}

const Labels& Stepper::row_labels(const View& v) const {
    static const Labels none;
    return v.kind == View::parameter ? none : stage_of(v).rows;
}

std::vector<std::string> Stepper::col_labels(const View& v) const {
    if (v.kind != View::parameter) return stage_of(v).cols.list();
    const Parameter& p = trace_.parameters[v.index];
    std::vector<std::string> labels;
    for (Eigen::Index c = 0; c < p.data.cols(); ++c) labels.push_back(fmt::format("{}{}", p.col_prefix, c + 1));
    return labels;
}

bool Stepper::marked(const View& v, Eigen::Index r, Eigen::Index c) const {
    const Place p = place_of(v);
    return std::any_of(marks_.begin(), marks_.end(), [&](const Mark& m) {
        return m.place == p && (m.row < 0 || m.row == r) && (m.col < 0 || m.col == c);
    });
}

void Stepper::move(Eigen::Index rows, Eigen::Index cols) {
    const Matrix& m = matrix(view());
    row_ = std::clamp<Eigen::Index>(row_ + rows, 0, std::max<Eigen::Index>(0, m.rows() - 1));
    col_ = std::clamp<Eigen::Index>(col_ + cols, 0, std::max<Eigen::Index>(0, m.cols() - 1));
}

void Stepper::go_to(std::size_t view) {
    current_ = view;
    move(0, 0);
}

bool Stepper::navigate(const Key& key) {
    const Eigen::Index page = 10;
    switch (key.kind) {
        case Key::up: move(-1, 0); return true;
        case Key::down: move(1, 0); return true;
        case Key::left: move(0, -1); return true;
        case Key::right: move(0, 1); return true;
        case Key::page_up: move(-page, 0); return true;
        case Key::page_down: move(page, 0); return true;
        case Key::home: move(-row_, -col_); return true;
        case Key::end: move(matrix(view()).rows(), matrix(view()).cols()); return true;
        case Key::tab: go_to((current_ + 1) % views_.size()); return true;
        case Key::back_tab: go_to((current_ + views_.size() - 1) % views_.size()); return true;
        case Key::enter: follow(); return true;
        case Key::escape: marks_.clear(); return true;
        case Key::backspace:
            if (back_.empty()) {
                message_ = "nothing to go back to: Enter follows a cell to its sources first";
            } else {
                current_ = back_.back().first, row_ = back_.back().second.first, col_ = back_.back().second.second;
                back_.pop_back();
                move(0, 0);
            }
            return true;
        case Key::interrupt: finished_ = true; return true;
        case Key::character: return false;
    }
    return false;
}

void Stepper::press(const Key& key) {
    message_.clear();
    if (prompt_ != Prompt::none) return typed(key);
    if (help_ && !key.is('?')) help_ = false;
    if (navigate(key)) return;
    const char c = key.text.size() == 1 ? key.text[0] : '\0';
    switch (c) {
        case 'k': return move(-1, 0);
        case 'j': return move(1, 0);
        case 'h': return move(0, -1);
        case 'l': return move(0, 1);
        case 'n': return go_to((current_ + 1) % views_.size());
        case 'p': return go_to((current_ + views_.size() - 1) % views_.size());
        case 'b': return press({Key::backspace, {}});
        case 'q': finished_ = true; return;
        case '?': help_ = !help_; return;
        case 'm': return cycle_mode();
        case 's': {
            const ScaleRule rule = trace_.scale_rule == ScaleRule::none ? ScaleRule::sqrt : ScaleRule::none;
            return (void)change(rule == ScaleRule::sqrt ? "scaled by √d_k" : "no scaling",
                                [&](Problem&, TraceOptions& o) { o.scale = rule; });
        }
        case 't':
        case 'T': {
            const double t = c == 't' ? options_.temperature / 2 : options_.temperature * 2;
            return (void)change(fmt::format("temperature {}", t), [&](Problem&, TraceOptions& o) { o.temperature = t; });
        }
        case 'H':
            if (trace_.heads <= 1) {
                message_ = "this run has one head (--heads 2 or more gives several)";
                return;
            }
            head_ = head_ % trace_.heads + 1;
            if (loss_ && loss_->kind == LossKind::focus) run_backward();  // a focus loss is about the head on screen
            rebuild_views(place_of(view()));
            message_ = fmt::format("head {} of {}", head_, trace_.heads);
            return;
        case 'w': prompt_ = Prompt::window, typed_.clear(); return;
        case 'x':
            if (edits_ == 0) {
                message_ = "nothing edited: c gives the command of this run";
                return;
            }
            prompt_ = Prompt::write, typed_.clear();
            return;
        case 'e':
            if (!editable(view())) {
                message_ = "e edits a single sentence's embeddings and its W_q, W_k, W_v and W_o, not this number";
                return;
            }
            prompt_ = Prompt::edit, typed_.clear();
            return;
        case 'u':
            if (undo_.empty()) {
                message_ = "nothing to undo";
                return;
            }
            problem_ = std::move(undo_.back().problem), options_ = undo_.back().options, edits_ = undo_.back().edits;
            undo_.pop_back();
            (void)retrace("undone");
            return;
        case 'c': message_ = command().empty() ? "no command repeats edits: x writes the edited input to a file" : command(); return;
        default: message_ = fmt::format("{}: no such key (? shows the keys)", printable(key_name(key)));
    }
}

void Stepper::typed(const Key& key) {
    if (key.kind == Key::escape || key.kind == Key::interrupt) {
        prompt_ = Prompt::none;
        message_ = "cancelled";
    } else if (key.kind == Key::enter) {
        commit_prompt();
    } else if (key.kind == Key::backspace) {
        if (!typed_.empty()) typed_.pop_back();
    } else if (key.kind == Key::character) {
        typed_ += key.text;
    }
}

void Stepper::commit_prompt() {
    const Prompt prompt = prompt_;
    prompt_ = Prompt::none;
    if (prompt == Prompt::write) {
        if (typed_.empty()) {
            message_ = "no file named: nothing written";
            return;
        }
        const std::string failed = write_edited_input(problem_, typed_);
        if (!failed.empty()) {
            message_ = failed;
            return;
        }
        input_ = typed_, edits_ = 0, undo_.clear();  // the run on screen is now that file's
        message_ = fmt::format("the edited input written to {}; c gives the command that traces it", printable(typed_));
        return;
    }
    const auto value = parse_number(typed_);
    if (!value) {
        message_ = fmt::format("\"{}\" is not a number: nothing changed", printable(typed_));
        return;
    }
    if (prompt == Prompt::window) {
        if (*value < 0 || *value != std::floor(*value) || *value > 1e9) {
            message_ = "a window is a whole number of keys, from 1 to 1000000000 (0: none): nothing changed";
            return;
        }
        const auto keys = static_cast<Eigen::Index>(*value);
        return (void)change(keys == 0 ? "no window" : fmt::format("window {}", keys), [&](Problem&, TraceOptions& o) {
            if (keys == 0) o.window.reset();
            else o.window = keys;
        });
    }
    const View v = view();
    const Eigen::Index r = row_, c = col_;
    const std::string name = v.kind == View::parameter ? trace_.parameters[v.index].name : "x";
    const bool parameter = v.kind == View::parameter;
    const Trace& t = trace_;
    const bool done = change(fmt::format("{}[{}, {}] = {}", name, r + 1, c + 1, typed_), [&](Problem& p, TraceOptions& o) {
        auto& single = std::get<SingleSequenceInput>(p.input);
        if (!parameter) {
            single.sequence.vectors(r, c) = *value;
            return;
        }
        if (!single.weights) {  // generated: the run's own weights become the input's, then one is edited
            Projections w;
            w.query = t.parameter("W_q").data, w.key = t.parameter("W_k").data, w.value = t.parameter("W_v").data;
            if (t.has_parameter("W_o")) w.output = t.parameter("W_o").data;
            single.weights = std::move(w);
            o.dim.reset();
        }
        Projections& w = *single.weights;
        Matrix* target = name == "W_q" ? &w.query : name == "W_k" ? &w.key : name == "W_v" ? &w.value : &*w.output;
        (*target)(r, c) = *value;
    });
    if (done) ++edits_;
}

bool Stepper::editable(const View& v) const {
    if (!std::holds_alternative<SingleSequenceInput>(problem_.input)) return false;
    if (v.kind == View::parameter) {
        const std::string& n = trace_.parameters[v.index].name;
        return n == "W_q" || n == "W_k" || n == "W_v" || (n == "W_o" && trace_.has_parameter("W_o"));
    }
    if (v.kind == View::gradient) return false;
    const StageId id = trace_.stages[v.index].id;
    // The embeddings as given: the stage `embeddings` when positions are added to them.
    return id == StageId::embeddings || (id == StageId::inputs && !trace_.find(StageId::embeddings) &&
                                         !trace_.find(StageId::layernorm));
}

bool Stepper::change(const std::string& what, const std::function<void(Problem&, TraceOptions&)>& apply) {
    undo_.push_back({problem_, options_, edits_});
    apply(problem_, options_);
    return retrace(what);
}

bool Stepper::retrace(const std::string& done) {
    const Place keep = place_of(view());
    try {
        trace_ = attntrace::trace(problem_, options_);
        run_backward();
    } catch (const std::exception& e) {  // refused: the run before it stays
        problem_ = undo_.back().problem, options_ = undo_.back().options, edits_ = undo_.back().edits;
        undo_.pop_back();
        trace_ = attntrace::trace(problem_, options_);
        run_backward();
        message_ = fmt::format("refused, nothing changed: {}", e.what());
        rebuild_views(keep);
        return false;
    }
    marks_.clear(), back_.clear();
    rebuild_views(keep);
    message_ = done + ": every stage traced again";
    return true;
}

void Stepper::cycle_mode() {
    if (!std::holds_alternative<SingleSequenceInput>(problem_.input)) {
        message_ = "this input has a source and a target: it reads in bahdanau mode only";
        return;
    }
    const auto at = std::find(std::begin(single_modes), std::end(single_modes), options_.mode);
    std::size_t from = at == std::end(single_modes) ? 0 : static_cast<std::size_t>(at - std::begin(single_modes));
    std::string refused;
    for (std::size_t tries = 0; tries + 1 < std::size(single_modes); ++tries) {  // the next mode that reads this run
        from = (from + 1) % std::size(single_modes);
        const Mode next = single_modes[from];
        if (change(fmt::format("mode {}", to_string(next)), [&](Problem&, TraceOptions& o) {
                const bool plain = next == Mode::plain;  // no heads, size, positions or scaling of its own
                o.mode = next;
                o.heads = plain ? std::nullopt : first_.heads, o.kv_heads = plain ? std::nullopt : first_.kv_heads;
                o.positions = plain ? std::nullopt : first_.positions;
                o.position_offset = plain ? std::nullopt : first_.position_offset;
                o.dim = plain || std::get<SingleSequenceInput>(problem_.input).weights ? std::nullopt : first_.dim;
                if (plain) o.scale.reset();
            }))
            return;
        refused += (refused.empty() ? "" : "; ") + message_;
    }
    message_ = refused;
}

// Why Enter on the cursor's cell of `v` has nothing to follow.
std::string Stepper::nothing_to_follow(const View& v) const {
    const Stage& s = stage_of(v);
    if (v.kind != View::gradient) return fmt::format("{} comes from the input itself: nothing before it to follow", s.name());
    const std::string name = fmt::format("d_{}", s.key());
    if (s.id == StageId::output ||
        (s.id == StageId::context && !gradients_->find(StageId::concat) && !gradients_->find(StageId::output)))
        return fmt::format("{} is the loss's own derivative ({}): nothing before it to follow", name, gradients_->formula);
    if (s.id == StageId::weights) {
        const Loss& loss = gradients_->loss;
        return fmt::format("{} is 0 here: the focus loss reads only the weight [{}, {}]", name,
                           printable(s.rows[static_cast<std::size_t>(loss.query)]), printable(s.cols[static_cast<std::size_t>(loss.key)]));
    }
    if (trace_.mode == Mode::bahdanau)
        return fmt::format("in an encoder–decoder run Enter follows the gradients back to the scores; {}'s formula is in "
                           "the pane", name);
    return fmt::format("Enter does not follow {} further; its formula is in the pane", name);
}

void Stepper::follow() {
    const View v = view();
    if (v.kind == View::parameter) {
        message_ = "a weight is an input of the run: it is computed from nothing";
        return;
    }
    const Stage& s = stage_of(v);
    const std::vector<Mark> marks =
        v.kind == View::gradient ? gradient_sources(trace_, *gradients_, s, row_, col_) : forward_sources(trace_, s, row_, col_);
    if (marks.empty()) {
        message_ = nothing_to_follow(v);
        return;
    }
    std::vector<std::string> names;  // "queries and keys": the sources this run shows, which are marked
    std::vector<int> hidden;         // the heads of sources this screen's head does not show
    marks_.clear();
    for (const Mark& m : marks) {
        const auto found = find_view(m.place);
        if (!found) {
            if (m.place.head > 0 && std::find(hidden.begin(), hidden.end(), m.place.head) == hidden.end()) hidden.push_back(m.place.head);
            continue;
        }
        marks_.push_back(m);
        if (const std::string name = view_name(views_[*found]); std::find(names.begin(), names.end(), name) == names.end())
            names.push_back(name);
    }
    const std::string others =
        hidden.empty() ? "" : fmt::format("head {}'s stages, which a screen of head {} does not show (H)", fmt::join(hidden, " and "), head_);
    if (marks_.empty()) {
        message_ = others.empty() ? fmt::format("{}'s sources are not among this run's stages", s.name())
                                  : fmt::format("computed from {}", others);
        return;
    }
    const Mark& first = marks_.front();
    back_.emplace_back(current_, std::pair{row_, col_});
    current_ = *find_view(first.place);
    row_ = first.row >= 0 ? first.row : 0, col_ = first.col >= 0 ? first.col : 0;
    move(0, 0);
    message_ = fmt::format("computed from {} (marked){}; Backspace goes back", fmt::join(names, " and "),
                           others.empty() ? "" : " and from " + others);
}

std::vector<std::string> Stepper::arithmetic() const {
    const View v = view();
    if (v.kind == View::parameter) {
        const bool generated = trace_.weights == WeightsOrigin::generated || trace_.parameters[v.index].generated;
        return {fmt::format("{} is a learned weight ({}): nothing computes it here{}", trace_.parameters[v.index].name,
                            generated ? fmt::format("generated from seed {}", trace_.seed) : "given in the input",
                            editable(v) ? ", and e edits it" : "")};
    }
    if (v.kind == View::gradient)
        return {fmt::format("the gradient dL/d{} of {}: {}", stage_of(v).key(), gradients_->formula, stage_of(v).title)};
    const Stage& s = trace_.stages[v.index];
    if (!s.applied) return {fmt::format("skipped: {}", s.reason)};
    if (worked_stage(s.id) && !options_.mask_method.standard())
        return {"the arithmetic is worked for the standard mask only (−∞ before softmax), and this run's mask is another"};
    try {
        std::vector<std::string> lines =
            row_arithmetic(trace_, s, row_, s.head > 0 ? s.head : head_, digits_)[static_cast<std::size_t>(col_)];
        if (!lines.empty()) return lines;
    } catch (const std::exception& e) {
        return {fmt::format("no arithmetic here: {}", e.what())};
    }
    if (editable(v)) return {"an embedding from the input: nothing computes it here, and e edits it"};
    if (s.id == StageId::encoder_states || s.id == StageId::decoder_states)
        return {"a state from the input: nothing computes it here"};
    return {};
}

std::vector<std::string> Stepper::pane() const {
    const View v = view();
    const Matrix& m = matrix(v);
    std::vector<std::string> lines;
    const std::vector<std::string> cols = col_labels(v);
    const Labels& rows = row_labels(v);
    const std::string row_name = static_cast<std::size_t>(row_) < rows.size() ? rows[static_cast<std::size_t>(row_)]
                                                                               : fmt::format("row {}", row_ + 1);
    const std::string col_name = static_cast<std::size_t>(col_) < cols.size() ? cols[static_cast<std::size_t>(col_)] : "";
    const std::string formula = formula_of(v);
    if (m.size() > 0)
        lines.push_back(fmt::format("{} · {}×{} · {} · [{}, {}] = {}", view_name(v), m.rows(), m.cols(), formula,
                                    printable(row_name), printable(col_name), number(m(row_, col_), digits_)));
    for (auto& line : arithmetic()) lines.push_back(std::move(line));
    const std::vector<std::string> said = v.kind == View::parameter  ? parameters_explanation(trace_)
                                          : v.kind == View::gradient ? std::vector<std::string>{}
                                                                     : explanation(trace_, trace_.stages[v.index]);
    for (const auto& line : said) lines.push_back(line);
    return lines;
}

std::string Stepper::plain_line() const {
    const auto lines = pane();
    std::string text = lines.empty() ? view_name(view()) + ": empty" : lines.front();
    for (const auto& line : arithmetic()) text += " · " + line.substr(std::min(line.find_first_not_of(' '), line.size()));
    if (!message().empty()) text += " · " + message();
    return text;
}

std::string Stepper::status() const {
    std::string text = fmt::format("{} · ", to_string(trace_.mode));
    if (trace_.mode != Mode::bahdanau)
        text += trace_.scale_rule == ScaleRule::none   ? "no scaling · "
                : trace_.scale_rule == ScaleRule::sqrt ? fmt::format("scaled by √d_k = {:.4g} · ", trace_.scale)
                                                       : fmt::format("scaled by {:.4g} · ", trace_.scale);
    text += fmt::format("T {} · ", trace_.temperature);
    text += trace_.window > 0 ? fmt::format("window {} · ", trace_.window) : "no window · ";
    if (trace_.heads > 1) text += fmt::format("head {} of {} · ", head_, trace_.heads);
    if (gradients_) text += fmt::format("L = {} · ", number(gradients_->value, digits_));
    if (trace_.positions != PositionScheme::none) text += fmt::format("{} positions · ", to_string(trace_.positions));
    if (trace_.normalization != Normalization::softmax) text += "weights by row sums · ";
    if (!options_.mask_method.standard()) text += "mask fill changed · ";
    if (edits_ > 0) text += fmt::format("{} edit{} · ", edits_, edits_ == 1 ? "" : "s");
    return text + "? keys · q quits";
}

std::string Stepper::message() const {
    if (prompt_ == Prompt::edit)
        return fmt::format("new value for [{}, {}], now {} (Enter sets it, Esc cancels): {}", row_ + 1, col_ + 1,
                           number(matrix(view())(row_, col_), digits_), typed_);
    if (prompt_ == Prompt::window) return fmt::format("window in keys, 0 for none (Enter sets it, Esc cancels): {}", typed_);
    if (prompt_ == Prompt::write) return fmt::format("write the edited input to the file (Enter writes, Esc cancels): {}", typed_);
    return message_;
}

std::string Stepper::command() const {
    if (edits_ > 0) return {};
    const auto quoted = shell_word;
    std::string text = fmt::format("attntrace {} -m {}", quoted(input_), to_string(options_.mode));
    text += load_args_;
    if (options_.seed != default_seed) text += fmt::format(" --seed {}", options_.seed);
    if (options_.dim) text += fmt::format(" --dim {}", *options_.dim);
    if (options_.heads) text += fmt::format(" --heads {}", *options_.heads);
    if (options_.kv_heads) text += fmt::format(" --kv-heads {}", *options_.kv_heads);
    if (options_.positions) text += fmt::format(" --positions {}", to_string(*options_.positions));
    if (options_.position_offset) text += fmt::format(" --position-offset {}", *options_.position_offset);
    if (options_.normalization != Normalization::softmax) text += " --normalize sum";
    if (trace_.mode == Mode::bahdanau) text += fmt::format(" --score {}", to_string(options_.score));
    if (options_.mask_method.fill == MaskMethod::Fill::lowest) text += " --mask-fill lowest";
    if (options_.mask_method.fill == MaskMethod::Fill::value) text += fmt::format(" --mask-fill {}", options_.mask_method.value);
    if (options_.mask_method.after_softmax) text += " --mask-after-softmax";
    if (options_.dtype != Dtype::float64) text += " --dtype float32";
    if (options_.scale) text += fmt::format(" --scale {}", *options_.scale == ScaleRule::value ? fmt::format("{}", options_.scale_value) : std::string(to_string(*options_.scale)));
    if (options_.temperature != 1) text += fmt::format(" --temperature {}", options_.temperature);
    if (options_.window) text += fmt::format(" --window {}", *options_.window);
    if (trace_.heads > 1) text += fmt::format(" --head {}", head_);
    if (loss_) text += loss_->kind == LossKind::sum ? " --backward sum" : fmt::format(" --backward focus:{}={}", quoted(loss_->query), quoted(loss_->key));
    if (!options_.mask_method.standard()) return text;  // -q works the standard mask only
    return text + fmt::format(" -q {}", row_ + 1);
}

std::vector<std::string> help_lines() {
    return {
        "arrows, h j k l   move the cursor (PageUp, PageDown, Home, End)",
        "Tab, n / S-Tab, p next / previous stage",
        "Enter             follow the cell to the cells it was computed from (marked)",
        "Backspace, b      back to where Enter came from · Esc clears the marks",
        "m                 next mode (plain, self, causal)",
        "s                 scaling on or off",
        "t / T             temperature halved / doubled",
        "w                 set a window of keys (0: none)",
        "H                 next head",
        "e                 edit the number under the cursor (an embedding or a weight)",
        "u                 undo the last change",
        "c                 the command that traces this run",
        "x                 write the edited input to a file (then c traces it)",
        "?                 these keys · q quits",
    };
}

}  // namespace attntrace::stepper
