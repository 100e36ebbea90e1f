#include "attention/modes.hpp"

#include "attention/bahdanau.hpp"
#include "attention/facts.hpp"
#include "attention/positions.hpp"
#include "attention/single.hpp"
#include "attention/worked.hpp"
#include "core/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

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

//                        mode            stages                  pair   learned scaled causal stream score  dim    scale  heads
const std::array<ModeSpec, 4> table{{
    {Mode::plain, single_sequence_stages, false, false, false, false, true, false, false, true, false, trace_single_problem},
    {Mode::self, single_sequence_stages, false, true, true, false, true, false, true, true, true, trace_single_problem},
    {Mode::causal, single_sequence_stages, false, true, true, true, true, false, true, true, true, trace_single_problem},
    {Mode::bahdanau, encoder_decoder_stages, true, false, false, false, false, true, true, false, false, trace_bahdanau_problem},
}};

// "plain, self or causal": the modes that read what this input holds.
std::string modes_reading(bool pair) {
    std::vector<std::string_view> names;
    for (const ModeSpec& spec : table)
        if (spec.reads_pair == pair) names.push_back(spec.name());
    std::string list;
    for (std::size_t i = 0; i < names.size(); ++i)
        list += fmt::format("{}{}", i == 0 ? "" : i + 1 == names.size() ? " or " : ", ", names[i]);
    return list;
}

bool is_pair(const Problem& problem) { return std::holds_alternative<EncoderDecoderInput>(problem.input); }

}  // namespace

const ModeSpec& mode_spec(Mode mode) {
    for (const ModeSpec& spec : table)
        if (spec.mode == mode) return spec;
    throw std::logic_error("a mode without an entry in the mode table");
}

std::span<const ModeSpec> mode_specs() { return table; }

std::vector<std::string> all_stage_names() {
    std::vector<std::string> names;
    for (const ModeSpec& spec : table)
        for (const StageId id : spec.stages)
            if (std::find(names.begin(), names.end(), to_string(id)) == names.end()) names.emplace_back(to_string(id));
    return names;
}

void refuse_mode_for_input(const Problem& problem, const ModeSpec& mode) {
    if (mode.reads_pair)
        throw DataError(fmt::format("{}: mode {} needs a source and a target (\"source\" and \"target\" with their "
                                    "states), but this input has one sentence; use mode {}",
                                    problem.origin, mode.name(), modes_reading(false)));
    throw DataError(fmt::format("{}: mode {} reads one sentence (\"sentence\" or \"tokens\" with \"embeddings\"), but "
                                "this input has a source and a target; use mode {}",
                                problem.origin, mode.name(), modes_reading(true)));
}

void check_file_mode(const Problem& problem) {
    if (problem.mode && mode_spec(*problem.mode).reads_pair != is_pair(problem)) {
        const ModeSpec& file = mode_spec(*problem.mode);
        if (file.reads_pair)
            throw DataError(fmt::format("{}: /mode: mode {} needs \"source\" (encoder states) and \"target\" (decoder "
                                        "states), but this file has one sentence",
                                        problem.origin, file.name()));
        throw DataError(fmt::format("{}: /mode: mode {} reads one sentence (\"sentence\" or \"tokens\" with "
                                    "\"embeddings\"), but this file has a source and a target; use mode {}",
                                    problem.origin, file.name(), modes_reading(true)));
    }
}

Mode resolve_mode(const Problem& problem, std::optional<Mode> requested) {
    check_file_mode(problem);
    if (requested) return *requested;
    if (problem.mode) return *problem.mode;
    for (const ModeSpec& spec : table)  // the first mode that reads this input
        if (spec.reads_pair == is_pair(problem)) return spec.mode;
    throw std::logic_error("no mode reads this input");
}

double scale_divisor(ScaleRule rule, double value, Eigen::Index d_k) {
    switch (rule) {
    case ScaleRule::sqrt: return std::sqrt(static_cast<double>(d_k));
    case ScaleRule::none: return 1;
    case ScaleRule::value: return value;
    }
    return 1;
}

void check_options_for_mode(const TraceOptions& options) {
    const ModeSpec& mode = mode_spec(options.mode);
    if (options.tiles && !options.query) throw UsageError("--tiles works through one query's row: add -q TOKEN");
    if (options.tiles && options.normalization != Normalization::softmax)
        throw UsageError("--tiles shows the online softmax, and --normalize sum has no running max to keep: drop one");
    if ((options.heads || options.kv_heads) && !mode.takes_heads)
        throw UsageError(fmt::format("--heads and --kv-heads apply to modes self and causal: {} mode has no projections "
                                     "to split into heads",
                                     mode.name()));
    if (((options.positions && *options.positions != PositionScheme::none) || options.position_offset) &&
        !mode.takes_positions())
        throw UsageError(fmt::format("--positions and --position-offset apply to modes self and causal, the Transformer's "
                                     "self-attention: {}",
                                     mode.reads_pair ? "bahdanau mode reads encoder states, which carry word order from "
                                                       "the recurrent encoder that made them"
                                                     : "plain mode is the lecture's first version, without weights or "
                                                       "positions (try --mode self)"));
    if (options.window && mode.reads_pair)
        throw UsageError(fmt::format("--window applies to modes {}: in {} mode the source's \"mask\" says what the "
                                     "decoder may see",
                                     modes_reading(false), mode.name()));
    if (!options.mask_method.standard()) {
        const char* flag = options.mask_method.after_softmax ? "--mask-after-softmax" : "--mask-fill";
        if (mode.reads_pair)
            throw UsageError(fmt::format("{} applies to modes {}", flag, modes_reading(false)));
        if (options.normalization != Normalization::softmax)
            throw UsageError(fmt::format("{} shows a way of masking around softmax; --normalize sum has no softmax", flag));
    }
    if (options.scale && !mode.takes_scale)
        throw UsageError(fmt::format("--scale: {} mode's scores are used as they are (additive scores pass through tanh); "
                                     "--scale applies to modes {}",
                                     mode.name(), modes_reading(false)));
}

// What an option does to the numbers a description was written for, when it changes them:
// other heads than the input's, other positions, a window, a wrong way of masking.
std::optional<std::string> changed_by_options(const RunHeader& run, const Problem& problem, const TraceOptions& options) {
    if (const auto* single = std::get_if<SingleSequenceInput>(&problem.input)) {
        const int heads = single->heads.value_or(1), kv_heads = single->kv_heads.value_or(heads);
        if (mode_spec(run.mode).takes_heads && (run.heads != heads || run.kv_heads != kv_heads))
            return run.kv_heads == run.heads
                       ? fmt::format("{} head{}", run.heads, run.heads == 1 ? "" : "s")
                       : fmt::format("{} heads with {} key/value head{}", run.heads, run.kv_heads, run.kv_heads == 1 ? "" : "s");
        // Positions change every number after them; the input may ask for a scheme itself.
        if (mode_spec(run.mode).takes_positions() &&
            (run.positions != single->positions.value_or(PositionScheme::none) || run.first_position != 0))
            return run.positions == PositionScheme::none ? std::string("--positions none")
                                                         : positions_text(run.positions, run.first_position);
    }
    if (options.window) return fmt::format("--window {}", *options.window);
    if (options.mask_method.after_softmax) return std::string("--mask-after-softmax");
    if (!options.mask_method.standard()) return std::string("--mask-fill");
    return std::nullopt;
}

void describe_run(RunHeader& run, const Problem& problem, const TraceOptions& options) {
    std::vector<std::string> notes = problem.notes;
    run.description = description_for(problem, to_string(run.mode), notes);
    if (!run.description.empty())
        if (const auto change = changed_by_options(run, problem, options)) {
            notes.push_back(fmt::format("this input's description is written for its own settings, so it is not shown "
                                        "with {}",
                                        *change));
            run.description.clear();
        }
    notes.insert(notes.end(), run.notes.begin(), run.notes.end());
    run.notes = std::move(notes);
    // How the mask was made and applied, when not the standard way: for the JSON header.
    run.window = options.window.value_or(0);
    run.mask_after_softmax = options.mask_method.after_softmax;
    const bool single = options.dtype == Dtype::float32;
    switch (options.mask_method.fill) {
    case MaskMethod::Fill::minus_infinity: run.mask_fill.reset(); break;
    case MaskMethod::Fill::lowest:
        run.mask_fill = single ? std::numeric_limits<float>::lowest() : std::numeric_limits<double>::lowest();
        break;
    case MaskMethod::Fill::value:  // the number as the run's type holds it
        run.mask_fill = single ? static_cast<float>(options.mask_method.value) : options.mask_method.value;
        break;
    }
}

Trace trace(const Problem& problem, const TraceOptions& options) {
    check_options_for_mode(options);
    Trace result = mode_spec(options.mode).trace(problem, options);
    if (options.tiles) work_tiles(*result.worked, *options.tiles, mode_spec(options.mode).causal);
    describe_run(result, problem, options);
    observe(result);
    return result;
}

}  // namespace attntrace
