#include "commands/rnn_command.hpp"

#include "commands/guards.hpp"

#include "core/error.hpp"
#include "core/generator.hpp"
#include "input/source.hpp"
#include "render/svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace attntrace {
namespace {

const SingleSequenceInput& one_sequence(const Problem& problem) {
    const auto* single = std::get_if<SingleSequenceInput>(&problem.input);
    if (!single)
        throw DataError(fmt::format("{}: a source/target input (bahdanau mode) gives the encoder's states already; "
                                    "attntrace rnn reads one sequence of embeddings and computes them",
                                    problem.origin));
    if (single->heads.value_or(1) > 1)
        throw DataError(fmt::format("{}: the input has {} heads; attntrace rnn compares the RNN with one head of "
                                    "attention",
                                    problem.origin, *single->heads));
    if (single->layernorm)
        throw DataError(fmt::format("{}: a GPT-2 layer normalises its inputs first; attntrace rnn compares the RNN "
                                    "with a bare attention layer (leave out --from)",
                                    problem.origin));
    return *single;
}

// The RNN's weights: the input's, or drawn, said either way.
RnnWeights rnn_weights(const SingleSequenceInput& in, const RnnRequest& r, std::string& origin) {
    const Eigen::Index d_in = in.sequence.vectors.cols();
    if (in.rnn) {
        for (const auto& [given, name] : {std::pair{r.hidden.has_value(), "--hidden"},
                                          std::pair{r.init.has_value(), "--init"}, std::pair{r.gain.has_value(), "--gain"}})
            if (given)
                throw UsageError(fmt::format("{} shapes drawn RNN weights, and this input gives its own (\"rnn\")", name));
        origin = "W_x, W_h and b_h from the input (\"rnn\")";
        return *in.rnn;
    }
    const Eigen::Index d_h = r.hidden.value_or(d_in);
    const RnnInit init = r.init.value_or(RnnInit::scaled);
    const double gain = r.gain.value_or(1.0);
    origin = fmt::format("drawn from seed {}, not learned: W_x uniform in ±1/√{}, W_h {}, b_h 0", r.seed, d_in,
                         init == RnnInit::orthogonal
                             ? fmt::format("orthogonal × {} (every singular value {})", gain, gain)
                             : fmt::format("uniform in ±{}/√{}{}", gain, d_h, gain == 1 ? " (as PyTorch's nn.RNN draws it)" : ""));
    return draw_rnn(r.seed, d_in, d_h, init, gain);
}

Projections attention_weights(const SingleSequenceInput& in, const RnnRequest& r, std::string& origin) {
    if (in.weights) {
        origin = "W_q, W_k and W_v from the input (\"weights\")";
        return *in.weights;
    }
    const Eigen::Index d_in = in.sequence.vectors.cols();
    origin = fmt::format("W_q, W_k and W_v generated from seed {} (d_k = d_v = {}), not learned", r.seed, d_in);
    return generate_projections(r.seed, d_in, d_in);
}

// Refused before any work beyond --max-memory or --max-time: the report, estimated.
void require_rnn_fits(const Problem& problem, const RnnRequest& request) {
    const SingleSequenceInput& in = one_sequence(problem);
    TraceOptions self;
    self.mode = Mode::self;
    const WorkShape shape = work_shape(problem, self);
    const double d_h = in.rnn ? static_cast<double>(in.rnn->W_h.rows())
                              : static_cast<double>(request.hidden.value_or(in.sequence.vectors.cols()));
    require_memory(rnn_bytes(shape, d_h, request.render), request.max_memory, problem.origin,
                   "the RNN's report of this input", "");
    require_time(rnn_seconds(shape, d_h, request.render.format), request.max_seconds, problem.origin,
                 fmt::format("the RNN over {} tokens with d_h = {}", shape.rows, d_h), "", Threads::one);
}

}  // namespace

RnnReport rnn_report(const Problem& problem, const RnnRequest& request) {
    const SingleSequenceInput& in = one_sequence(problem);
    RnnReport report;
    report.origin = problem.origin;
    Sequence sequence = in.sequence;
    sequence.materialise();
    report.tokens = sequence.tokens;
    report.inputs = sequence.vectors;
    report.notes = problem.notes;
    if (in.positions)
        report.notes.push_back(fmt::format("the input's positions ({}) are left out: the RNN and attention here both "
                                           "read the embeddings as they are",
                                           to_string(*in.positions)));
    const std::vector<std::string> pads = in.padding.value_or(std::vector<std::string>{"<pad>"});
    if (std::any_of(report.tokens.begin(), report.tokens.end(),
                    [&](const std::string& t) { return std::find(pads.begin(), pads.end(), t) != pads.end(); }))
        report.notes.push_back("the input's padding tokens are read here as tokens like any other: neither the RNN nor "
                               "attention masks them");
    report.rnn = rnn_weights(in, request, report.rnn_origin);
    const Projections attention = attention_weights(in, request, report.attention_origin);
    report.hidden = rnn_hidden_states(report.rnn, report.inputs);
    report.rnn_influence = rnn_influence(report.rnn, report.hidden);
    report.attention_influence = attention_influence(attention, report.inputs, report.inputs.rows() - 1);
    report.rnn_decay = decay_per_token(report.rnn_influence);
    report.attention_decay = decay_per_token(report.attention_influence);
    return report;
}

void run_rnn(const RnnRequest& request, Outputs& outputs) {
    require_format(request.render.format, Product::rnn);
    std::ostream* svg = request.svg_path ? &outputs.add(*request.svg_path) : nullptr;
    const InputText input = read_input(request.input, request.max_input);
    const Problem problem = load_input(input, request.max_memory, with_max_input(request.load, request.max_input));
    require_rnn_fits(problem, request);
    const RnnReport report = rnn_report(problem, request);
    render(report, request.render, outputs.main());
    if (svg) write_rnn_svg(report, *svg);
}

}  // namespace attntrace
