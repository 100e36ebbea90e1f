#include "attention/modes.hpp"

#include "attention/bahdanau.hpp"
#include "attention/single.hpp"
#include "core/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace attntrace {
namespace {

// The parameters (W_q, W_k, W_v; W_a, U_a, v_a) are shown after the inputs, before the
// projections they make.
// With several heads, queries … context repeat per head, then concat, output and what each
// head adds to the output. Position information adds stages where it enters: sinusoidal
// encodings the embeddings and encodings before the inputs (their sum); RoPE its angles
// after the inputs and the rotated queries and keys after the projections.
constexpr StageId single_sequence_stages[] = {
    StageId::embeddings, StageId::positions,       StageId::inputs,       StageId::layernorm,  StageId::parameters, StageId::queries,
    StageId::keys,       StageId::values,          StageId::queries_rotated, StageId::keys_rotated, StageId::scores,
    StageId::scaled,     StageId::masked,          StageId::weights,      StageId::context,    StageId::concat,
    StageId::output,     StageId::head_contributions};
constexpr StageId encoder_decoder_stages[] = {StageId::encoder_states, StageId::decoder_states, StageId::parameters,
                                              StageId::projected_decoder, StageId::projected_encoder, StageId::scores,
                                              StageId::scaled,          StageId::masked,           StageId::weights,
                                              StageId::context};

// The first mode of a family is the one an input of that family gets when nothing names one.
const std::array<ModeSpec, 4> table{{
    {.mode = Mode::plain, .family = ModeFamily::single_sequence, .stages = single_sequence_stages,
     .learned_projections = false, .scaled = false, .causal = false, .streams = true,
     .takes_score = false, .takes_dim = false, .takes_scale = true, .takes_heads = false,
     .trace = trace_single_problem},
    {.mode = Mode::self, .family = ModeFamily::single_sequence, .stages = single_sequence_stages,
     .learned_projections = true, .scaled = true, .causal = false, .streams = true,
     .takes_score = false, .takes_dim = true, .takes_scale = true, .takes_heads = true,
     .trace = trace_single_problem},
    {.mode = Mode::causal, .family = ModeFamily::single_sequence, .stages = single_sequence_stages,
     .learned_projections = true, .scaled = true, .causal = true, .streams = true,
     .takes_score = false, .takes_dim = true, .takes_scale = true, .takes_heads = true,
     .trace = trace_single_problem},
    {.mode = Mode::bahdanau, .family = ModeFamily::encoder_decoder, .stages = encoder_decoder_stages,
     .learned_projections = false, .scaled = false, .causal = false, .streams = false,
     .takes_score = true, .takes_dim = true, .takes_scale = false, .takes_heads = false,
     .trace = trace_bahdanau_problem},
}};

// What the input holds and what a mode of a family needs, for the messages.
std::string_view needs(ModeFamily family) {
    switch (family) {
    case ModeFamily::single_sequence: return "reads one sentence (\"sentence\" or \"tokens\" with \"embeddings\")";
    case ModeFamily::encoder_decoder: return "needs a source and a target (\"source\" and \"target\" with their states)";
    }
    unknown_family();
}
std::string_view holds(ModeFamily family) {
    switch (family) {
    case ModeFamily::single_sequence: return "one sentence";
    case ModeFamily::encoder_decoder: return "a source and a target";
    }
    unknown_family();
}

}  // namespace

const ModeSpec& mode_spec(Mode mode) {
    for (const ModeSpec& spec : table)
        if (spec.mode == mode) return spec;
    throw std::logic_error("a mode without an entry in the mode table");
}

std::span<const ModeSpec> mode_specs() { return table; }

ModeFamily family_of(const Problem& problem) {
    struct Family {
        ModeFamily operator()(const SingleSequenceInput&) const { return ModeFamily::single_sequence; }
        ModeFamily operator()(const EncoderDecoderInput&) const { return ModeFamily::encoder_decoder; }
    };
    return std::visit(Family{}, problem.input);
}

std::string modes_reading(ModeFamily family) {
    std::vector<std::string_view> names;
    for (const ModeSpec& spec : table)
        if (spec.family == family) names.push_back(spec.name());
    std::string list;
    for (std::size_t i = 0; i < names.size(); ++i)
        list += fmt::format("{}{}", i == 0 ? "" : i + 1 == names.size() ? " or " : ", ", names[i]);
    return list;
}

std::vector<std::string> all_stage_names() {
    std::vector<std::string> names;
    for (const ModeSpec& spec : table)
        for (const StageId id : spec.stages)
            if (std::find(names.begin(), names.end(), to_string(id)) == names.end()) names.emplace_back(to_string(id));
    return names;
}

void refuse_mode_for_input(const Problem& problem, const ModeSpec& mode) {
    const ModeFamily input = family_of(problem);
    throw DataError(fmt::format("{}: mode {} {}, but this input has {}; use mode {}", problem.origin, mode.name(),
                                needs(mode.family), holds(input), modes_reading(input)));
}

}  // namespace attntrace
