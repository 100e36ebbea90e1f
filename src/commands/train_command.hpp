// `attntrace train TASK`: an attention layer's W_q, W_k, W_v learned on a task (a built-in one
// or a file of examples), its curve reported, and the learned model written as an input every
// other command reads.
#pragma once

#include "attention/training.hpp"
#include "render/render.hpp"
#include "util/output.hpp"

#include <optional>
#include <string>

namespace attntrace {

struct TrainRequest {
    std::string task;             // who_did_it, recall, or a file of examples (JSON Lines)
    TrainSettings settings;
    std::optional<Eigen::Index> dim;  // --dim: the heads' d_k together (and d_v); absent: the task's own
    std::optional<std::int64_t> epochs;  // --epochs N: steps enough for N passes over the training examples
    std::size_t examples = 500;   // a built-in task's examples
    double held_out = 0.2;        // the share of examples held out
    std::optional<std::string> save;  // -o FILE: the learned model, as an input
    std::optional<std::string> examples_out;  // --write-examples FILE: the task's examples as JSON Lines
    std::optional<std::string> svg;   // --svg FILE: the curve drawn
    bool compare_rnn = false;         // --compare-rnn: who_did_it per gap, the RNN against attention
    Eigen::Index hidden = 16;         // --hidden: the RNN's d_h there
    std::uint64_t max_input = 0;
    Format format = Format::table;
    RenderOptions render;
};

// Trains, writes the report to `out` and the learned model to its file. Throws UsageError or
// DataError as the rest of the program does.
void run_train(const TrainRequest& request, Outputs& outputs);

}  // namespace attntrace
