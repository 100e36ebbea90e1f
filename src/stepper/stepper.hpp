// attntrace step's model: a traced run, the stage and cell under the cursor, and what each key
// does to them (move, change stage, follow a cell to its sources, change the mode, scaling,
// temperature, window or head, edit an input number, undo). Every change traces the run again,
// so the screen is always the trace of the run its status line names. No I/O: frame.hpp draws it
// and commands/step_command runs it on a terminal or a script of keys.
#pragma once

#include "attention/cell_sources.hpp"
#include "attention/trace_options.hpp"
#include "commands/backward_request.hpp"
#include "core/gradients.hpp"
#include "core/problem.hpp"
#include "core/stage.hpp"
#include "stepper/keys.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace attntrace::stepper {

// One matrix the stepper can show: a stage of the trace, a parameter (W_q …), or with a loss a
// gradient of the backward pass (dL/dA, dL/dW_q …).
struct View {
    enum Kind { stage, parameter, gradient };
    Kind kind = stage;
    std::size_t index = 0;  // into trace.stages, trace.parameters or the gradients' stages
};

using attntrace::Mark;
using attntrace::Place;

class Stepper {
public:
    // `input` is how a command names the input (a path, - or example:NAME). Throws what trace()
    // throws for a run that cannot be traced.
    // With `loss` (focus or sum: --backward), the backward pass's gradients follow the forward
    // stages, traced again with them.
    // `load_args`: the options the input was read with, as a command writes them (" --layout out_in").
    Stepper(Problem problem, TraceOptions options, std::string input, int digits, std::optional<LossText> loss = {},
            std::string load_args = {});

    // Where the cursor starts: the first stage of that name (or a parameter, W_q), and the row
    // of that token or 1-based position. Throws UsageError naming what there is.
    void start_at(const std::optional<std::string>& stage, const std::optional<std::string>& row);

    void press(const Key& key);
    bool finished() const { return finished_; }

    const Trace& trace() const { return trace_; }
    const std::optional<Gradients>& gradients() const { return gradients_; }
    const Stage& stage_of(const View& v) const;  // a stage or a gradient's
    const std::vector<View>& views() const { return views_; }
    std::size_t current() const { return current_; }
    const View& view() const { return views_[current_]; }
    std::string view_name(const View& v) const;  // "weights", "weights · head 2", "W_q", "d_weights"
    const Matrix& matrix(const View& v) const;
    const Labels& row_labels(const View& v) const;
    std::vector<std::string> col_labels(const View& v) const;
    Eigen::Index row() const { return row_; }
    Eigen::Index col() const { return col_; }
    int head() const { return head_; }
    int digits() const { return digits_; }
    // Is the cell at (r, c) of `v` a source of the followed cell?
    bool marked(const View& v, Eigen::Index r, Eigen::Index c) const;
    bool help_shown() const { return help_; }

    // The pane under the matrix: the cell, its formula and shape, its arithmetic, the stage's
    // explanation.
    std::vector<std::string> pane() const;
    // One line for --plain: where the cursor is, the value, its arithmetic.
    std::string plain_line() const;
    // The mode and options in force, and the last message or the prompt being typed.
    std::string status() const;
    std::string message() const;
    // The attntrace command that traces this run with the cursor's row worked through; empty
    // while the input is edited (no command holds the edits).
    std::string command() const;
    std::size_t edits() const { return edits_; }

private:
    struct Snapshot {
        Problem problem;
        TraceOptions options;
        std::size_t edits = 0;
    };
    enum class Prompt { none, edit, window, write };

    bool retrace(const std::string& done);  // false: refused, the run before it restored
    void rebuild_views(const std::optional<Place>& keep);
    Place place_of(const View& v) const;
    std::optional<std::size_t> find_view(const Place& p) const;
    bool navigate(const Key& key);  // the keys that move: false for a character
    void move(Eigen::Index rows, Eigen::Index cols);
    void go_to(std::size_t view);
    void follow();
    std::string nothing_to_follow(const View& v) const;
    bool change(const std::string& what, const std::function<void(Problem&, TraceOptions&)>& apply);
    void typed(const Key& key);
    void commit_prompt();
    bool editable(const View& v) const;
    void cycle_mode();
    std::vector<std::string> arithmetic() const;
    void run_backward();
    std::string formula_of(const View& v) const;

    Problem problem_;
    TraceOptions options_;
    TraceOptions first_;  // as the run began: the heads and size a mode other than plain gets back
    std::string input_;
    std::string load_args_;
    int digits_ = 4;
    Trace trace_;
    std::optional<LossText> loss_;
    std::optional<Gradients> gradients_;
    std::vector<View> views_;
    std::size_t current_ = 0;
    Eigen::Index row_ = 0, col_ = 0;
    int head_ = 1;
    std::vector<Mark> marks_;
    std::vector<std::pair<std::size_t, std::pair<Eigen::Index, Eigen::Index>>> back_;  // where Enter came from
    std::vector<Snapshot> undo_;
    std::size_t edits_ = 0;
    Prompt prompt_ = Prompt::none;
    std::string typed_;
    std::string message_;
    bool help_ = false;
    bool finished_ = false;
};

// The keys and what they do, as ? shows them.
std::vector<std::string> help_lines();

}  // namespace attntrace::stepper
