// A mode in one place: what it reads, what it computes, which options fit it, the stages it
// shows, and the function that traces it. Adding a mode is one entry in modes.cpp (with its
// name in core/types.hpp) and the file that holds its trace function.
#pragma once

#include "attention/trace.hpp"
#include "core/problem.hpp"
#include "core/stage.hpp"

#include <span>
#include <string>
#include <vector>

namespace attntrace {

struct ModeSpec {
    Mode mode;
    std::span<const StageId> stages;  // in pipeline order
    bool reads_pair;           // a source and a target (encoder–decoder), else one sentence
    bool learned_projections;  // Q, K, V from W_q, W_k, W_v (else Q = K = V = X)
    bool scaled;               // scores ÷ √d_k unless --scale says otherwise
    bool causal;               // key j after query i is hidden
    bool streams;              // --summary: the streaming path without n×n matrices
    bool takes_score;          // --score chooses how scores are made
    bool takes_dim;            // --dim sizes generated weights
    bool takes_scale;          // --scale chooses what the scores are divided by
    bool takes_heads;          // --heads and --kv-heads split the projections
    Trace (*trace)(const Problem& problem, const TraceOptions& options);

    std::string_view name() const { return to_string(mode); }
    // What the scores are divided by when --scale does not say.
    ScaleRule default_scale() const { return scaled ? ScaleRule::sqrt : ScaleRule::none; }
    // --positions: position information for the Transformer's self-attention, whose queries
    // and keys are learned (plain mode is the lecture's first version without weights;
    // bahdanau's encoder states carry their order from the recurrent encoder).
    bool takes_positions() const { return learned_projections && !reads_pair; }
};

const ModeSpec& mode_spec(Mode mode);
std::span<const ModeSpec> mode_specs();

// Every stage name of every mode, once each, in pipeline order (for --stage and its help).
std::vector<std::string> all_stage_names();

// Throws DataError at /mode when the file's own "mode" does not read the file's shape (a
// sentence in a file that says bahdanau, say).
void check_file_mode(const Problem& problem);

// The run's description (the input's text for its mode) and notes: what loading changed
// first, then the run's own.
void describe_run(RunHeader& run, const Problem& problem, const TraceOptions& options);

// Throws UsageError for an option the mode does not take (--scale in bahdanau mode).
void check_options_for_mode(const TraceOptions& options);

// Throws the DataError for an input that `mode` cannot read (one sentence for a mode that
// reads a source and a target, or the other way round), naming the modes that can.
[[noreturn]] void refuse_mode_for_input(const Problem& problem, const ModeSpec& mode);

}  // namespace attntrace
