// A mode in one place: its family (what it reads and which pipeline traces it), what it
// computes, which options fit it, the stages it shows, and the function that traces it.
// Adding a mode of an existing family is one entry in the table of modes.cpp (with its name in
// core/types.hpp); a new family is a new ModeFamily, and the compiler lists what it needs.
#pragma once

#include "attention/trace_options.hpp"
#include "core/problem.hpp"
#include "core/stage.hpp"

#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace attntrace {

// The families of modes: what a mode reads and which pipeline computes it. Code that does
// something different for each family switches over it, with a case for each and no
// `default:`, so that -Wswitch (in -Wall) names every place a new family has to decide; the
// only other uses are equality tests (is this input the mode's family?) and the guards at the
// top of a family's own pipeline (single.cpp, bahdanau.cpp).
enum class ModeFamily {
    single_sequence,  // one sentence attends to itself (plain, self, causal): SingleSequenceInput
    encoder_decoder,  // a target attends to a source (bahdanau): EncoderDecoderInput
};

// After a switch over ModeFamily whose every case returns: a value outside the enum.
[[noreturn]] inline void unknown_family() { throw std::logic_error("a mode family without a case"); }

// One row of the mode table: data only, written with designated initialisers.
struct ModeSpec {
    Mode mode;
    ModeFamily family;
    std::span<const StageId> stages;  // in pipeline order
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
    bool takes_positions() const {
        switch (family) {
        case ModeFamily::single_sequence: return learned_projections;
        case ModeFamily::encoder_decoder: return false;
        }
        unknown_family();
    }
};

const ModeSpec& mode_spec(Mode mode);
std::span<const ModeSpec> mode_specs();
inline ModeFamily family_of(Mode mode) { return mode_spec(mode).family; }
// The family whose modes read this input (the alternative `problem.input` holds).
ModeFamily family_of(const Problem& problem);

// "plain, self or causal": the modes of a family, in table order.
std::string modes_reading(ModeFamily family);

// Every stage name of every mode, once each, in pipeline order (for --stage and its help).
std::vector<std::string> all_stage_names();

// Throws the DataError for an input that `mode` cannot read (one sentence for a mode that
// reads a source and a target, or the other way round), naming the modes that can.
[[noreturn]] void refuse_mode_for_input(const Problem& problem, const ModeSpec& mode);

}  // namespace attntrace
