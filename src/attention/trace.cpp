// The pipeline's entry: the mode chosen and checked against the input and the options, the
// mode's trace function (from the table of modes.cpp) run, and the run described.
#include "attention/trace.hpp"

#include "attention/facts.hpp"
#include "attention/modes.hpp"
#include "attention/positions.hpp"
#include "attention/worked.hpp"
#include "core/error.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace attntrace {
namespace {

// What an option does to the numbers a description was written for, when it changes them:
// other heads than the input's, other positions, a window, a wrong way of masking.
std::optional<std::string> changed_by_options(const RunHeader& run, const Problem& problem, const TraceOptions& options) {
    switch (family_of(problem)) {
    case ModeFamily::encoder_decoder: break;  // no heads, no positions: the masks below
    case ModeFamily::single_sequence: {
        const auto* single = &std::get<SingleSequenceInput>(problem.input);
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
        break;
    }
    }
    if (options.window) return fmt::format("--window {}", *options.window);
    if (options.mask_method.after_softmax) return std::string("--mask-after-softmax");
    if (!options.mask_method.standard()) return std::string("--mask-fill");
    return std::nullopt;
}

// Why --positions does not apply to a mode that does not take it.
std::string_view no_positions_because(const ModeSpec& mode) {
    switch (mode.family) {
    case ModeFamily::single_sequence:
        return "plain mode is the lecture's first version, without weights or positions (try --mode self)";
    case ModeFamily::encoder_decoder:
        return "bahdanau mode reads encoder states, which carry word order from the recurrent encoder that made them";
    }
    unknown_family();
}

// --window, --mask-fill and --mask-after-softmax change the mask a single sequence makes for
// itself; an encoder–decoder run's mask is the source's own.
void check_mask_options(const TraceOptions& options, const ModeSpec& mode) {
    const bool method = !options.mask_method.standard();
    const char* flag = options.mask_method.after_softmax ? "--mask-after-softmax" : "--mask-fill";
    switch (mode.family) {
    case ModeFamily::single_sequence: break;
    case ModeFamily::encoder_decoder:
        if (options.window)
            throw UsageError(fmt::format("--window applies to modes {}: in {} mode the source's \"mask\" says what the "
                                         "decoder may see",
                                         modes_reading(ModeFamily::single_sequence), mode.name()));
        if (method) throw UsageError(fmt::format("{} applies to modes {}", flag, modes_reading(ModeFamily::single_sequence)));
        break;
    }
    if (method && options.normalization != Normalization::softmax)
        throw UsageError(fmt::format("{} shows a way of masking around softmax; --normalize sum has no softmax", flag));
}

}  // namespace

double scale_divisor(ScaleRule rule, double value, Eigen::Index d_k) {
    switch (rule) {
    case ScaleRule::sqrt: return std::sqrt(static_cast<double>(d_k));
    case ScaleRule::none: return 1;
    case ScaleRule::value: return value;
    }
    return 1;
}

void check_file_mode(const Problem& problem) {
    if (!problem.mode || family_of(*problem.mode) == family_of(problem)) return;
    const ModeSpec& file = mode_spec(*problem.mode);
    switch (file.family) {
    case ModeFamily::encoder_decoder:
        throw DataError(fmt::format("{}: /mode: mode {} needs \"source\" (encoder states) and \"target\" (decoder "
                                    "states), but this file has one sentence",
                                    problem.origin, file.name()));
    case ModeFamily::single_sequence:
        throw DataError(fmt::format("{}: /mode: mode {} reads one sentence (\"sentence\" or \"tokens\" with "
                                    "\"embeddings\"), but this file has a source and a target; use mode {}",
                                    problem.origin, file.name(), modes_reading(ModeFamily::encoder_decoder)));
    }
    unknown_family();
}

Mode resolve_mode(const Problem& problem, std::optional<Mode> requested) {
    check_file_mode(problem);
    if (requested) return *requested;
    if (problem.mode) return *problem.mode;
    for (const ModeSpec& spec : mode_specs())  // the first mode that reads this input
        if (spec.family == family_of(problem)) return spec.mode;
    throw std::logic_error("no mode reads this input");
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
                                     no_positions_because(mode)));
    check_mask_options(options, mode);
    if (options.scale && !mode.takes_scale)
        throw UsageError(fmt::format("--scale: {} mode's scores are used as they are (additive scores pass through tanh); "
                                     "--scale applies to modes {}",
                                     mode.name(), modes_reading(ModeFamily::single_sequence)));
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
