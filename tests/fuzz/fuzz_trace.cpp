// libFuzzer target: arbitrary bytes through everything attntrace does with an input. Loading
// may refuse the bytes (DataError), and so may a mode (an input that does not fit it, numbers
// that overflow); anything else — a crash, a hang, a sanitizer report, an exception of another
// kind, a trace that fails its own --check, or rendered text that breaks a rule of
// tests/support/output_checks.hpp — is a finding. The streaming path must agree with the trace
// path on every input both accept.
//
// Binary arrays (an input that sniffs as .npy, .npz or safetensors) are read instead, and each
// array made a matrix: a refusal is a DataError, and what is read must hold together (its
// bytes in the input or in a buffer of its own, as many numbers as its shape, the float32 view
// the same numbers as the matrix).
//
// An input that starts with '#' is expanded instead, so that the parser's two-halves reading
// of long matrices (from 1 MiB of text) is fuzzed too: "#ROW" or "#ROW\nMIDDLE" becomes
// {"tokens": [...], "embeddings": [ROW, ROW, …, MIDDLE, …, ROW]} of about 1.2 MiB, which
// must parse the same on one thread and on two.
//
// Every other input is also read as a learner's answers (JSON or the tidy CSV) and checked
// against two fixed traces (one head, and two heads of causal attention): a refusal is a
// DataError naming the file; what is read must be finite or hidden, with its decimals and
// head within their range. Binary arrays are also read as GPT-2's layer 0 (--from gpt2).
// Each causal trace is also decoded step by step, and the decode rendered in every format.
#include "attention/check.hpp"
#include "attention/decode.hpp"
#include "attention/modes.hpp"
#include "attention/summary.hpp"
#include "attention/trace.hpp"
#include "commands/check_answers_command.hpp"
#include "commands/compare_command.hpp"
#include "commands/similarity_command.hpp"
#include "core/error.hpp"
#include "input/examples.hpp"
#include "input/json_text.hpp"
#include "input/load.hpp"
#include "input/source.hpp"
#include "input/tensors.hpp"
#include "practice/answers.hpp"
#include "render/render.hpp"
#include "render/svg.hpp"
#include "support/output_checks.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <variant>
#include <sstream>

using namespace attntrace;

namespace {

[[noreturn]] void finding(const std::string& what) {
    std::fprintf(stderr, "fuzz finding: %s\n", what.c_str());
    std::abort();
}

// Labels are the input's own text: one that reads "nan" would look like a number that is not.
bool labels_look_like_numbers(const Labels& labels) {
    for (const auto& label : labels)
        if (!output_checks::number_problem(label).empty()) return true;
    return false;
}

void require_clean(const std::string& text, Format format, bool colour, bool labels_may_read_as_numbers) {
    std::string problem;
    switch (format) {
    case Format::json: problem = output_checks::json_problem(text); break;
    case Format::csv: problem = output_checks::csv_problem(text); break;
    case Format::jsonl: problem = output_checks::jsonl_problem(text); break;
    case Format::html: {  // the page's payload: whole JSON, which no text of the input can end early
        const std::string open = "<script type=\"application/json\" id=\"attntrace-data\">";
        const auto at = text.find(open);
        const auto end = at == std::string::npos ? at : text.find("</script>", at);
        problem = end == std::string::npos ? "no payload" : output_checks::json_problem(text.substr(at + open.size(), end - at - open.size()));
        break;
    }
    case Format::table:
    case Format::markdown: break;
    }
    const bool json = format == Format::json || format == Format::jsonl || format == Format::html;
    if (problem.empty() && !json) problem = output_checks::terminal_problem(text, colour);
    if (problem.empty() && !json && !labels_may_read_as_numbers) problem = output_checks::number_problem(text);
    if (!problem.empty()) finding(std::string(to_string(format)) + " output: " + problem);
}

// Every format of a whole document; JSON Lines is the summary's alone.
constexpr Format all_formats[] = {Format::table, Format::json, Format::markdown, Format::csv};
// A trace has a page too.
constexpr Format trace_formats[] = {Format::table, Format::json, Format::markdown, Format::csv, Format::html};
constexpr Format summary_formats[] = {Format::table, Format::json, Format::markdown, Format::csv, Format::jsonl};

void render_everything(const Trace& trace) {
    const bool numeric_labels = labels_look_like_numbers(trace.tokens) || labels_look_like_numbers(trace.source_tokens) ||
                                labels_look_like_numbers(trace.target_tokens);
    RenderOptions options;
    options.color = true;
    options.width = 60;
    for (const Format format : trace_formats) {
        options.format = format;
        options.explain = format != Format::csv;
        std::ostringstream out;
        render(trace, options, out);
        require_clean(out.str(), format, options.color && format == Format::table, numeric_labels);
    }
    // The tidy CSV: one line per number.
    options.format = Format::csv;
    options.explain = false;
    options.tidy = true;
    std::ostringstream tidy;
    render(trace, options, tidy);
    if (const auto problem = output_checks::tidy_csv_problem(tidy.str()); !problem.empty())
        finding("tidy csv output: " + problem);
    for (const StageId stage : svg_stages)
        for (const Shade shade : {Shade::absolute, Shade::row, Shade::table}) {
            std::ostringstream svg;
            render_svg(trace, SvgOptions{stage, shade}, svg);
            if (const auto problem = output_checks::svg_problem(svg.str()); !problem.empty())
                finding(fmt::format("svg of {}: {}", to_string(stage), problem));
        }
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
    if (streamed.per_head.size() != reference.per_head.size()) finding("the paths have different heads");
    for (std::size_t h = 0; h < reference.per_head.size(); ++h)
        for (std::size_t i = 0; i < reference.per_head[h].queries.size(); ++i) {
            const QuerySummary &a = streamed.per_head[h].queries[i], &b = reference.per_head[h].queries[i];
            if (!close(a.max_weight, b.max_weight, tolerance)) finding("max weight differs");
            if (!close(a.entropy, b.entropy, tolerance * 10)) finding("entropy differs");
        }
    if (!((*streamed.context - *reference.context).cwiseAbs().array() <=
          tolerance * (1 + reference.context->cwiseAbs().array()))
             .all())
        finding("context differs");
    RenderOptions render_options;
    for (const Format format : summary_formats) {
        render_options.format = format;
        std::ostringstream out;
        render(streamed, render_options, out);
        require_clean(out.str(), format, false, labels_look_like_numbers(streamed.tokens));
    }
}

// compare: the first token's context in this trace and in one with other weights.
void compare_with_other_weights(const Problem& problem, TraceOptions options, const Trace& full) {
    if (options.mode == Mode::bahdanau || options.mode == Mode::plain) return;
    options.seed += 1;
    options.query.reset();
    Trace other;
    try {
        other = trace(problem, options);
    } catch (const DataError&) {
        return;
    }
    for (const Format format : all_formats) {
        RenderOptions render;
        render.format = format;
        std::ostringstream out;
        try {
            write_comparison(full, other, full.tokens[0], render, out);
        } catch (const DataError&) {
            return;  // context vectors too large to compare
        }
        require_clean(out.str(), format, false, labels_look_like_numbers(full.tokens));
    }
}

void similarity(const Problem& problem) {
    for (const Format format : all_formats) {
        SimilarityRequest request;
        request.render.format = format;
        request.render.color = format == Format::table;
        request.max_memory.bytes = std::uint64_t{1} << 30;
        std::ostringstream out, svg;
        const bool draw = format == Format::table;  // the picture once: it does not depend on the format
        try {
            write_similarity(problem, request, out, draw ? &svg : nullptr);
        } catch (const DataError&) {
            return;  // a zero vector, an overflowing dot product, too many words
        }
        if (draw)
            if (const auto problem_found = output_checks::svg_problem(svg.str()); !problem_found.empty())
                finding("similarity svg: " + problem_found);
        const auto& words = problem.vocabulary.words.empty() ? std::get<SingleSequenceInput>(problem.input).sequence.tokens
                                                             : problem.vocabulary.words;
        require_clean(out.str(), format, request.render.color, labels_look_like_numbers(Labels(words)));
    }
}

// decode: the causal trace step by step, rendered in every format. It refuses only what it
// says it refuses (too few tokens); its numbers must be finite where the trace's are.
void decode_every_way(const Trace& full) {
    for (const std::int64_t prefill : {std::int64_t{1}, std::int64_t{2}}) {
        DecodeOptions options;
        options.prefill = prefill;
        Decode decode;
        try {
            decode = decode_steps(full, options);
        } catch (const DataError&) {
            return;  // fewer than 2 tokens
        } catch (const UsageError&) {
            return;  // a prefill of every token
        }
        for (const DecodeStep& step : decode.steps)
            for (const DecodeHead& head : step.heads)
                for (const double w : head.weights)
                    if (!std::isfinite(w)) finding("decode: a weight that is not finite");
        RenderOptions render;
        for (const Format format : all_formats) {
            render.format = format;
            std::ostringstream out;
            ::attntrace::render(decode, render, out);
            require_clean(out.str(), format, false, labels_look_like_numbers(full.tokens));
        }
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
    if (options.mask_method.standard())  // a finite fill may leave weight on hidden keys, as it is meant to show
        if (const auto failure = first_failed_check(full)) finding(*failure);
    render_everything(full);
    if (options.mode == Mode::causal && options.normalization == Normalization::softmax && options.mask_method.standard() &&
        !options.window && full.positions == PositionScheme::none)  // what decode takes
        decode_every_way(full);
    if (options.mode != Mode::bahdanau && options.normalization == Normalization::softmax && options.mask_method.standard()) {
        compare_paths(problem, options, full);
        compare_with_other_weights(problem, options, full);
    }
}

void trace_every_way(const Problem& problem) {
    TraceOptions options;
    options.query = "1";
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
        options.dtype = Dtype::float64;
        options.temperature = 0.3;  // softmax(S / T), and a scale of its own where the mode takes one
        if (mode_spec(mode).takes_scale) options.scale = ScaleRule::value, options.scale_value = 0.5;
        run(problem, options);
        options.temperature = 1;
        options.scale.reset();
        if (mode_spec(mode).takes_heads) {  // two heads of one key/value head, a window of 2, a finite fill
            options.heads = 2, options.kv_heads = 1, options.dim = 4;
            run(problem, options);
            options.heads.reset(), options.kv_heads.reset(), options.dim.reset();
        }
        switch (family_of(mode)) {
        case ModeFamily::single_sequence:  // a window and a finite fill: the mask a sequence makes itself
            options.window = 2;
            run(problem, options);
            options.mask_method.fill = MaskMethod::Fill::value, options.mask_method.value = -1e9;
            run(problem, options);
            options.window.reset();
            options.mask_method = MaskMethod{};
            break;
        case ModeFamily::encoder_decoder: break;
        }
    }
    if (std::holds_alternative<SingleSequenceInput>(problem.input)) similarity(problem);
}

// "#ROW[\nMIDDLE]" → a document of about 1.2 MiB whose embeddings repeat ROW, with MIDDLE as
// the middle row.
std::string expanded(std::string_view spec) {
    const std::size_t cut = spec.find('\n');
    const std::string_view row = spec.substr(0, cut);
    const std::string_view middle = cut == std::string_view::npos ? row : spec.substr(cut + 1);
    if (row.empty()) return {};
    const std::size_t rows = (std::size_t{1} << 20) * 12 / 10 / (row.size() + 1) + 2;
    std::string text = "{\"tokens\": [";
    for (std::size_t i = 0; i < rows; ++i) text += (i ? ", \"t" : "\"t") + std::to_string(i) + '"';
    text += "], \"embeddings\": [";
    for (std::size_t i = 0; i < rows; ++i) {
        if (i) text += ',';
        text += i == rows / 2 ? middle : row;
    }
    return text + "]}";
}

// The two-halves reading must give what the sequential one gives, result or error.
void parse_both_ways(const std::string& text) {
    const auto parse = [&](int threads) -> std::pair<std::string, Json> {
        omp_set_num_threads(threads);
        try {
            return {"", parse_json(text, "fuzz")};
        } catch (const DataError& e) {
            return {e.what(), Json()};
        }
    };
    const auto one = parse(1), two = parse(2);
    if (one.first != two.first) finding("one and two threads parse differently: " + one.first + " / " + two.first);
    if (one.second != two.second) finding("one and two threads parse to different documents");
    if (!one.first.empty()) return;
    try {
        (void)load_problem(text, "fuzz");
    } catch (const DataError&) {
    }
}

// .npy, .npz and safetensors: read (an .npz inflating to 16 MiB at most), every array made a
// matrix.
void read_every_tensor(std::string_view bytes) {
    TensorFile file;
    try {
        MemoryBudget budget(MemoryLimit{std::uint64_t{1} << 26, "the fuzzer"}, "fuzz");
        file = read_tensors(bytes, "fuzz", nullptr, std::uint64_t{1} << 24, &budget);
    } catch (const DataError&) {
        return;
    }
    for (const Tensor& tensor : file.tensors) {
        if (tensor.bytes != tensor.elements() * element_size(tensor.type)) finding("a tensor's bytes do not fit its shape");
        // No storage of its own: the data lies in the input.
        const auto begin = reinterpret_cast<std::uintptr_t>(bytes.data());
        const auto at = reinterpret_cast<std::uintptr_t>(tensor.data);
        if (!tensor.storage && tensor.bytes > 0 && (at < begin || at - begin > bytes.size() || tensor.bytes > bytes.size() - (at - begin)))
            finding("a tensor's data lies outside the input");
        Matrix m;
        try {
            m = tensor.to_matrix("fuzz");
        } catch (const DataError&) {
            continue;
        }
        if (static_cast<std::size_t>(m.size()) != tensor.elements()) finding("the matrix does not hold every element");
        if (!m.allFinite()) finding("to_matrix let a value that is not finite through");
        if (const float* view = tensor.float32_view())
            for (Eigen::Index i = 0; i < m.size(); ++i)
                if (double(view[i]) != m.data()[i]) finding("the float32 view and the matrix differ");
    }
}

// The loader asked to leave float32 embeddings in place (the summary's way) and the loader that
// copies them must agree: both refuse, or both read the same numbers; rows left in place lie
// within the input.
void load_both_ways(std::string_view bytes) {
    // Held elsewhere (here, by the fuzzer): a storage that owns nothing.
    const InputText input{bytes, "fuzz", std::make_shared<int>(0)};
    const MemoryLimit limit{std::uint64_t{1} << 26, "the fuzzer"};
    LoadOptions in_place;
    in_place.float32_in_place = true;
    std::optional<Problem> copied, kept;
    try {
        copied = load_input(input, limit, {});
    } catch (const DataError&) {
    } catch (const UsageError&) {
    }
    try {
        kept = load_input(input, limit, in_place);
    } catch (const DataError&) {
    } catch (const UsageError&) {
    }
    if (copied.has_value() != kept.has_value()) finding("the in-place loader and the copying one disagree on refusing");
    if (!copied) return;
    const auto* a = std::get_if<SingleSequenceInput>(&copied->input);
    const auto* b = std::get_if<SingleSequenceInput>(&kept->input);
    if (!a || !b) return;
    Sequence widened = b->sequence;
    // Rows in the input's own storage lie within the input; rows of a deflated .npz member
    // lie in the buffer it was inflated into, which the reader owns (not the input's storage).
    if (widened.in_place && widened.in_place->storage == input.storage) {
        const auto begin = reinterpret_cast<std::uintptr_t>(bytes.data());
        const auto at = reinterpret_cast<std::uintptr_t>(widened.in_place->data);
        const auto size = static_cast<std::size_t>(widened.in_place->rows * widened.in_place->cols) * sizeof(float);
        if (at < begin || at - begin > bytes.size() || size > bytes.size() - (at - begin))
            finding("rows left in place lie outside the input");
    }
    widened.materialise();
    if (widened.vectors != a->sequence.vectors) finding("the rows left in place and the copied rows differ");
}

// The traces answers are checked against: the lecture's example in self mode (one head), and
// causal attention with two heads.
const std::vector<Trace>& answer_traces() {
    static const std::vector<Trace> traces = [] {
        const Problem problem = load_problem(find_example(default_example)->json, "example");
        TraceOptions one;
        one.mode = Mode::self;
        TraceOptions two = one;
        two.mode = Mode::causal;
        two.heads = 2;
        two.dim = 4;
        return std::vector<Trace>{trace(problem, one), trace(problem, two)};
    }();
    return traces;
}

// The bytes as a learner's answers: read within a budget, then checked against each trace.
void answers_every_way(std::string_view text) {
    const MemoryLimit limit{std::uint64_t{1} << 26, "the fuzzer"};
    std::vector<GivenStage> given;
    try {
        MemoryBudget budget(limit, "answers");
        given = read_answers(text, "answers", &budget);
    } catch (const DataError& e) {
        if (!std::string_view(e.what()).starts_with("answers")) finding(std::string("an answers error names no file: ") + e.what());
        return;
    }
    for (const GivenStage& stage : given) {
        if (!stage.where.starts_with("answers: ")) finding("a stage's place names no file: " + stage.where);
        if (stage.head < 0 || stage.head > max_heads) finding("a head outside 0 … max_heads was read");
        for (const GivenNumber& n : stage.numbers) {
            if (!n.masked && !std::isfinite(n.value)) finding("an answer that is not finite was read");
            if (n.decimals < 0 || n.decimals > max_decimals) finding("decimals outside their range");
            if (n.row < 0 || n.col < 0) finding("a negative row or column was read");
        }
    }
    for (const Trace& t : answer_traces()) {
        try {
            const std::vector<StageVerdict> verdicts = check_answers(t, given);
            for (const StageVerdict& v : verdicts)
                if (!v.stage) finding("a verdict without its stage");
        } catch (const DataError& e) {
            if (!std::string_view(e.what()).starts_with("answers")) finding(std::string("a check-answers error names no file: ") + e.what());
        }
    }
}

// A binary input as GPT-2's layer 0, its hidden states in the file: the layer traced causally.
void gpt2_layer(std::string_view bytes) {
    const InputText input{bytes, "fuzz", std::make_shared<int>(0)};
    LoadOptions options;
    options.from = ModelFamily::gpt2;
    options.layer = 0;
    Problem problem;
    try {
        problem = load_input(input, MemoryLimit{std::uint64_t{1} << 26, "the fuzzer"}, options);
    } catch (const DataError&) {
        return;
    } catch (const UsageError&) {
        return;
    }
    TraceOptions trace_options;
    trace_options.mode = Mode::causal;
    run(problem, trace_options);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    if (sniff_tensor_format(text)) {
        read_every_tensor(text);
        load_both_ways(text);
        gpt2_layer(text);
        return 0;
    }
    if (text.starts_with("#")) {
        if (const std::string long_text = expanded(text.substr(1)); !long_text.empty()) parse_both_ways(long_text);
        return 0;
    }
    answers_every_way(text);
    Problem problem;
    try {
        problem = load_problem(text, "fuzz");
    } catch (const DataError&) {
        return 0;
    }
    trace_every_way(problem);
    return 0;
}
