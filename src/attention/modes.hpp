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
    bool scaled;               // scores ÷ √d_k
    bool causal;               // key j after query i is hidden
    bool streams;              // --summary: the streaming path without n×n matrices
    bool takes_score;          // --score chooses how scores are made
    bool takes_dim;            // --dim sizes generated weights
    Trace (*trace)(const Problem& problem, const TraceOptions& options);

    std::string_view name() const { return to_string(mode); }
};

const ModeSpec& mode_spec(Mode mode);
std::span<const ModeSpec> mode_specs();

// Every stage name of every mode, once each, in pipeline order (for --stage and its help).
std::vector<std::string> all_stage_names();

// Throws DataError at /mode when the file's own "mode" does not read the file's shape (a
// sentence in a file that says bahdanau, say).
void check_file_mode(const Problem& problem);

// Throws the DataError for an input that `mode` cannot read (one sentence for a mode that
// reads a source and a target, or the other way round), naming the modes that can.
[[noreturn]] void refuse_mode_for_input(const Problem& problem, const ModeSpec& mode);

}  // namespace attntrace
