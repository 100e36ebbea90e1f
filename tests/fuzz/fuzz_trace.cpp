// libFuzzer target: arbitrary bytes through everything attntrace does with an input. Loading
// may refuse the bytes (DataError), and so may a mode (an input that does not fit it, numbers
// that overflow); anything else — a crash, a hang, a sanitizer report, an exception of another
// kind, or a trace that fails its own --check — is a finding. The streaming path must agree
// with the trace path on every input both accept.
#include "attention/check.hpp"
#include "attention/similarity.hpp"
#include "attention/summary.hpp"
#include "attention/trace.hpp"
#include "error.hpp"
#include "input/load.hpp"
#include "render/render.hpp"
#include "render/summary.hpp"
#include "render/svg.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>

using namespace attntrace;

namespace {

[[noreturn]] void finding(const char* what) {
    std::fprintf(stderr, "fuzz finding: %s\n", what);
    std::abort();
}

void render_everything(const Trace& trace) {
    RenderOptions options;
    options.color = true;
    options.explain = true;
    options.width = 60;
    for (const Format format : {Format::table, Format::json, Format::markdown, Format::csv}) {
        options.format = format;
        options.explain = format != Format::csv;
        std::ostringstream out;
        render(trace, options, out);
    }
    std::ostringstream svg;
    render_svg(trace, svg);
}

bool close(double a, double b, double tolerance) {
    return std::abs(a - b) <= tolerance * (1 + std::abs(a) + std::abs(b));
}

// The streaming summary against the one read off the full trace.
void compare_paths(const Problem& problem, const TraceOptions& options, const Trace& full) {
    SummaryOptions summary_options;
    summary_options.context = true;
    Summary streamed;
    try {
        streamed = summarize(problem, options, summary_options);
    } catch (const DataError&) {
        finding("the streaming path refused an input the trace path accepted");
    }
    const Summary reference = summarize_trace(full, summary_options);
    const double tolerance = options.dtype == Dtype::float64 ? 1e-9 : 1e-3;
    for (std::size_t i = 0; i < reference.queries.size(); ++i) {
        if (!close(streamed.queries[i].max_weight, reference.queries[i].max_weight, tolerance)) finding("max weight differs");
        if (!close(streamed.queries[i].entropy, reference.queries[i].entropy, tolerance * 10)) finding("entropy differs");
    }
    if (!((*streamed.context - *reference.context).cwiseAbs().array() <=
          tolerance * (1 + reference.context->cwiseAbs().array()))
             .all())
        finding("context differs");
    RenderOptions render_options;
    for (const Format format : {Format::table, Format::json, Format::markdown, Format::csv}) {
        render_options.format = format;
        std::ostringstream out;
        render_summary(streamed, render_options, out);
    }
}

void run(const Problem& problem, TraceOptions options) {
    Trace full;
    try {
        full = trace(problem, options);
    } catch (const DataError&) {
        return;  // overflow, or the input does not fit this mode
    } catch (const UsageError&) {
        return;  // --score outside bahdanau and the like
    }
    if (const auto failure = first_failed_check(full)) finding(failure->c_str());
    render_everything(full);
    if (options.mode != Mode::bahdanau && options.normalization == Normalization::softmax)
        compare_paths(problem, options, full);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    Problem problem;
    try {
        problem = load_problem(text, "fuzz");
    } catch (const DataError&) {
        return 0;
    }
    TraceOptions options;
    options.query = "1";
    const bool pair = std::holds_alternative<EncoderDecoderInput>(problem.input);
    for (const Mode mode : {Mode::plain, Mode::self, Mode::causal, Mode::bahdanau}) {
        options.mode = mode;
        options.normalization = Normalization::softmax;
        options.dtype = Dtype::float64;
        for (const Score score : {Score::additive, Score::dot, Score::general}) {
            if (score != Score::additive && mode != Mode::bahdanau) continue;
            options.score = score;
            run(problem, options);
        }
        options.score = Score::additive;
        options.normalization = Normalization::sum;
        run(problem, options);
        options.normalization = Normalization::softmax;
        options.dtype = Dtype::float32;
        run(problem, options);
    }
    if (!pair && !problem.vocabulary.words.empty()) {
        try {
            (void)similarity_tables(problem.vocabulary, "fuzz");
        } catch (const DataError&) {
        }
    }
    return 0;
}
