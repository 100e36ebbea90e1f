#include "commands/decode_command.hpp"

#include "attention/modes.hpp"
#include "attention/trace.hpp"
#include "commands/guards.hpp"
#include "core/error.hpp"
#include "input/examples.hpp"
#include "input/load.hpp"
#include "input/source.hpp"

#include <fmt/format.h>

#include <cstdio>

namespace attntrace {
namespace {

// What a KV cache cannot show: another mode, a window, the wrong ways of masking, the sum.
void check_decode_request(const DecodeRequest& request) {
    if (request.mode == Mode::bahdanau)
        throw UsageError("decode traces causal attention only (--mode bahdanau): its KV cache grows by one token's key "
                         "and value at each step; in bahdanau mode the decoder steps score the encoder states, which "
                         "are all there before the first step, so nothing grows: the trace shows each step as a row of "
                         "its weights");
    if (request.mode && *request.mode != Mode::causal)
        throw UsageError(fmt::format("decode traces causal attention only (--mode {}): a KV cache keeps each token's key "
                                     "and value because, under the causal mask, a new token changes no earlier row; "
                                     "in {} mode every earlier row would change at each step",
                                     to_string(*request.mode), to_string(*request.mode)));
    const TraceOptions& t = request.trace;
    if (t.score != Score::additive)
        throw UsageError(fmt::format("--score {} chooses the score of bahdanau mode, which decode does not trace: "
                                     "decode's scores are the dot products q·k of causal attention",
                                     to_string(t.score)));
    if (t.window)
        throw UsageError("decode keeps every token in its cache; --window, whose cache would drop the oldest tokens, is "
                         "not traced by decode (the trace shows what --window hides)");
    if (!t.mask_method.standard())
        throw UsageError("decode masks the standard way (−∞ before softmax); the trace shows what --mask-fill and "
                         "--mask-after-softmax do");
    if (t.normalization != Normalization::softmax)
        throw UsageError("decode shows softmax weights; --normalize sum is shown by the trace");
    if (t.positions && *t.positions != PositionScheme::none)
        throw UsageError("decode steps through the cache without position information for now; the trace shows "
                         "--positions (docs/positions.md)");
    if (t.position_offset)
        throw UsageError("decode steps through the cache without position information for now, so there are no "
                         "positions for --position-offset to move; the trace shows --positions and --position-offset "
                         "(docs/positions.md)");
}

// An input decode cannot read (a data error, exit 1): a source and a target are Bahdanau's,
// whose decoder steps read encoder states that are all there before the first.
void check_decode_shape(const Problem& problem) {
    switch (family_of(problem)) {
    case ModeFamily::single_sequence: return;
    case ModeFamily::encoder_decoder:
        throw DataError(fmt::format("{}: decode steps through causal attention over one sentence (\"sentence\" or "
                                    "\"tokens\" with \"embeddings\"), its KV cache growing by one token's key and "
                                    "value at each step; this input has a source and a target, for bahdanau mode, whose "
                                    "decoder steps score encoder states that are all there before the first step: "
                                    "trace it without decode, where each row of the weights is one decoder step",
                                    problem.origin));
    }
}

// The same for an input that asks for positions itself: the file is what decode cannot read,
// so this is a data error (exit 1), where the option --positions is a usage error (exit 2).
void check_decode_input(const Problem& problem, const TraceOptions& options) {
    const auto* single = std::get_if<SingleSequenceInput>(&problem.input);
    if (!options.positions && single && single->positions && *single->positions != PositionScheme::none)
        throw DataError(fmt::format("{}: the input asks for {} positions, and decode steps through the cache without "
                                    "position information for now; add --positions none, or trace it without decode",
                                    problem.origin, to_string(*single->positions)));
}

}  // namespace

void run_decode(DecodeRequest request, std::ostream& out) {
    check_decode_request(request);
    // As trace: no INPUT named is what is piped in, else the built-in example.
    bool empty_stdin = false;
    const InputText input = named_piped_or_example(request.input_path, std::nullopt, request.max_input, &empty_stdin);
    const Problem problem = load_input(input, request.max_memory, with_max_input(request.load, request.max_input));
    check_decode_shape(problem);
    request.trace.mode = resolve_mode(problem, Mode::causal);
    check_decode_input(problem, request.trace);
    std::vector<std::string> notes;
    if (problem.mode && *problem.mode != Mode::causal)
        notes.push_back(fmt::format("the input's mode {} is not used: decode runs causal attention", to_string(*problem.mode)));
    // The full trace, the steps beside it, and what the format holds while it writes them.
    const WorkShape shape = work_shape(problem, request.trace);
    DecodeSteps steps{static_cast<double>(request.decode.prefill), std::nullopt};
    if (request.decode.step) steps.step = static_cast<double>(*request.decode.step);
    require_memory(decode_bytes(shape, request.trace.dtype, request.render, steps), request.max_memory, problem.origin,
                   "decoding this input beside its full trace", "");
    require_time(decode_seconds(shape, request.render.format, steps), request.max_seconds, problem.origin,
                 "decoding this input beside its full trace", "");
    const Trace full = trace(problem, request.trace);
    Decode decode = decode_steps(full, request.decode);
    decode.notes.insert(decode.notes.begin(), notes.begin(), notes.end());
    render(decode, request.render, out);
    if (empty_stdin) std::fprintf(stderr, "attntrace: note: %s\n", empty_pipe_note("decode").c_str());
}

}  // namespace attntrace
