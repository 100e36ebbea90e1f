// Groups of options that several commands share, each added to a CLI11 command and turned
// into the request's fields after parsing. The lists of values come from the enum tables
// (core/types.hpp, render/render.hpp), never typed again here. Defined here, inline: CLI11
// is a heavy header, so the command line is one translation unit (cli/commands.cpp).
#pragma once

#include "attention/trace_options.hpp"
#include "render/render.hpp"
#include "util/memory.hpp"

#include "commands/guards.hpp"
#include "core/error.hpp"
#include "input/limits.hpp"
#include "input/load.hpp"
#include "util/duration.hpp"
#include "util/terminal.hpp"
#include "util/threads.hpp"

#include "util/suggest.hpp"
#include "util/utf8.hpp"
#include "util/output.hpp"

#include "cli/manual.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>

#include <charconv>
#include <cmath>
#include <tuple>
#include <utility>

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>

namespace attntrace {

// What --help, the man page and the completions know of an option besides CLI11's own
// fields: the values it takes and what completes them. Its metavariable ("FILE", "N") is
// CLI11's option_text.
struct OptionValues {
    std::vector<std::string> choices;
    Completes completes = Completes::nothing;
};
inline std::map<const CLI::Option*, OptionValues>& option_values() {
    static std::map<const CLI::Option*, OptionValues> values;
    return values;
}

// Gives `option` its metavariable, its group in --help, and what completes its value.
inline CLI::Option* describe(CLI::Option* option, const std::string& group, const std::string& metavar,
                             Completes completes = Completes::nothing, std::vector<std::string> choices = {}) {
    option->group(group)->option_text(metavar);
    option_values()[option] = {std::move(choices), completes};
    return option;
}

// A whole number from `min` to `max`, written in decimal ("8"; not "+8", "0x8" or "8.0"), and
// given to CLI11 as its canonical text: CLI11 reads integers with strtoll's base 0, so "010"
// would be 8 and "0x10" 16. Added with ->transform (->check may not change the text). The
// description stays out of --help (the metavariable and the help say it).
template <typename T>
CLI::Validator in_range(T min, T max) {
    return CLI::Validator(
        [min, max](std::string& text) -> std::string {
            T value{};
            const char* end = text.data() + text.size();
            const auto [stop, error] = std::from_chars(text.data(), end, value);
            if (error != std::errc() || stop != end || value < min || value > max)
                return fmt::format("expected a whole number from {} to {}, found {}", min, max, printable(text, 64));
            text = fmt::format("{}", value);  // "010" is ten
            return {};
        },
        "");
}

// A finite number > 0, written in full ("0.5", "2", "1e-3").
inline std::optional<double> positive_number(const std::string& text) {
    double value = 0;
    const char* end = text.data() + text.size();
    const auto [stop, error] = std::from_chars(text.data(), end, value);
    if (error != std::errc() || stop != end || !std::isfinite(value) || !(value > 0)) return std::nullopt;
    return value;
}

// --scale: "sqrt", "none" or a positive number (the divisor).
inline std::optional<std::pair<ScaleRule, double>> parse_scale(const std::string& text) {
    if (const auto rule = parse_enum<ScaleRule>(text); rule && *rule != ScaleRule::value) return std::pair{*rule, 1.0};
    if (const auto value = positive_number(text)) return std::pair{ScaleRule::value, *value};
    return std::nullopt;
}

// --mask-fill: "-inf" (the right fill), "lowest" (the number type's lowest) or a finite number.
inline std::optional<MaskMethod> parse_mask_fill(const std::string& text) {
    MaskMethod method;
    if (text == "-inf") return method;
    if (text == "lowest") {
        method.fill = MaskMethod::Fill::lowest;
        return method;
    }
    const char* end = text.data() + text.size();
    const auto [stop, error] = std::from_chars(text.data(), end, method.value);
    if (error != std::errc() || stop != end || !std::isfinite(method.value)) return std::nullopt;
    method.fill = MaskMethod::Fill::value;
    return method;
}

// A whole number in [0, 2⁶⁴), in decimal: CLI11 would wrap "-1", saturate
// "99999999999999999999" and read "010" as octal.
inline const CLI::Validator whole_number_u64 = in_range(std::uint64_t{0}, std::numeric_limits<std::uint64_t>::max());

inline void add_output_path(CLI::App& app, std::optional<std::string>& path) {
    describe(app.add_option("-o,--output", path,
                            "write to FILE instead of stdout, all or nothing (renamed into place when done); - is stdout"),
             "Output", "FILE", Completes::file);
}

// The names `value` may take, with the closest to a misspelt one suggested:
// "casual is not one of plain, self, causal, bahdanau (did you mean causal?)".
// `hidden_name`: the option's name, for one CLI11 does not name (an option left out of --help).
inline CLI::Validator one_of(std::vector<std::string> names, std::string hidden_name = {}) {
    const std::string list = fmt::format("{}", fmt::join(names, ", "));
    return CLI::Validator(
        [names, list, hidden_name](std::string& text) -> std::string {
            if (std::find(names.begin(), names.end(), text) != names.end()) return {};
            const auto near = likely_typo(text, names);
            return fmt::format("{}\"{}\" is not one of {}{}", hidden_name.empty() ? "" : hidden_name + ": ",
                               printable(text, 64), list, near ? fmt::format(" (did you mean {}?)", *near) : "");
        },
        "");
}

// A list option: one argument each time it is given, its names separated by commas, the
// times adding up ("-s scores,weights" or "-s scores -s weights"). CLI11's lists would take
// every argument up to the next option, the INPUT too, and eat a "--" after them.
inline CLI::Option* list_option(CLI::Option* option) {
    return option->delimiter(',')
        ->expected(1)
        ->allow_extra_args(false)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

// An option that takes one of `names` (or, with `list`, several, comma-separated), shown as
// "a|b|c" in --help.
inline CLI::Option* choose(CLI::Option* option, const std::string& group, std::vector<std::string> names, bool list = false) {
    option->check(one_of(names));
    const std::string metavar = fmt::format("{}{}", fmt::join(names, "|"), list ? ",..." : "");
    return describe(option, group, metavar, list ? Completes::list : Completes::choice, std::move(names));
}

// `--name VALUE` for a value of enum E, checked against E's names (the default shown).
template <Named E>
CLI::Option* add_enum(CLI::App& app, const std::string& flags, std::string& value, const std::string& help,
                      const std::string& group) {
    return choose(app.add_option(flags, value, help), group, enum_names<E>());
}

// How output looks and where it goes: shared by every command that prints tables.
struct OutputFlags {
    std::string format = "table";
    std::string color = "auto";
    std::string shade = "absolute";
    int width = -1;
    int digits = 4;
    std::optional<std::string> path;  // -o FILE

    // `lines`: the command has a summary to write as JSON Lines (--format jsonl).
    void add_to(CLI::App& app, bool lines = false, bool page = false);  // page: --format html
    // The options, with colour and width decided by where the output goes (`main`).
    void apply(RenderOptions& render, const Output& main) const;
};

// What a command may take from the machine: shared by the commands that read inputs.
struct LimitFlags {
    std::string max_memory, max_input, max_time;

    void add_to(CLI::App& app, bool reads_input = true);
    MemoryLimit memory() const;
    std::uint64_t input() const;
    double seconds() const;
};

// How an input is read beyond its own text: labels and layout for binary arrays, a model's
// own tensor names. Shared by the commands that read inputs.
struct InputFlags {
    std::string tokens;  // --tokens "a b c"
    std::string layout;  // --layout in_out|out_in
    std::string from;    // --from gpt2
    int layer = -1;      // --layer L
    std::string hidden_states;

    void add_to(CLI::App& app, bool model = true);
    // `heads_given`, `kv_heads_given`: --heads and --kv-heads, which the input's own fields would say.
    LoadOptions apply(std::uint64_t max_input, bool heads_given, bool kv_heads_given) const;
};

// How attention is computed: shared by the trace and compare commands.
struct TraceFlags {
    std::string mode, normalize = "softmax", score = "additive", dtype = "float64", scale;
    long long dim = 0;
    int threads = 0;
    int heads = 0, kv_heads = 0;  // 0: the input's, else 1
    std::string positions;              // "": the input's, else none
    std::int64_t position_offset = -1;  // -1: not given
    long long window = 0;         // 0: none
    std::string mask_fill;        // empty: −∞
    bool mask_after_softmax = false;
    TraceOptions options;

    void add_to(CLI::App& app);
    std::optional<Mode> requested_mode() const;
    // The options, and the thread count set (prepare_threads).
    TraceOptions apply() const;

private:
    void add_attention_to(CLI::App& app);  // the mode … the positions
    void add_weighting_to(CLI::App& app);  // the mask, the scale, the precision
};

// The bundles of a command that reads an input (similarity): how it is read, how the output
// looks, and the limits. `apply` fills the request's fields of the same names (render,
// max_memory, max_seconds, max_input, load), so each request states them once.
struct ReadFlags {
    InputFlags input;
    OutputFlags output;
    LimitFlags limits;

    // `heads_given`, `kv_heads_given`: --heads and --kv-heads, for a command that traces.
    template <typename Request>
    void apply(Request& request, const Output& main, bool heads_given = false, bool kv_heads_given = false) const {
        output.apply(request.render, main);  // colour and width from where it goes
        request.max_memory = limits.memory();
        request.max_seconds = limits.seconds();
        request.max_input = limits.input();
        request.load = input.apply(request.max_input, heads_given, kv_heads_given);
    }
};

// The bundles of a command that reads an input and traces it (the main job, compare, decode,
// check-answers): the above, and how attention is computed.
struct TracedFlags : ReadFlags {
    TraceFlags trace;

    // The input's, the attention's and the output's options, in the order --help lists them
    // (`lines`: the command writes JSON Lines; `page`: an HTML page); the limits, listed last, are added apart.
    void add_to(CLI::App& app, bool lines = false, bool page = false) {
        input.add_to(app);
        trace.add_to(app);
        output.add_to(app, lines, page);
    }
    // Also the request's mode and trace options (and the thread count: TraceFlags::apply).
    template <typename Request>
    void apply(Request& request, const Output& main) const {
        request.mode = trace.requested_mode();
        request.trace = trace.apply();
        ReadFlags::apply(request, main, trace.heads > 0, trace.kv_heads > 0);
    }
};

inline void OutputFlags::add_to(CLI::App& app, bool lines, bool page) {
    std::vector<std::string> formats = enum_names<Format>();
    if (!lines) formats.erase(std::find(formats.begin(), formats.end(), to_string(Format::jsonl)));
    if (!page) formats.erase(std::find(formats.begin(), formats.end(), to_string(Format::html)));
    choose(app.add_option("-f,--format", format, lines ? "output format (docs/output-formats.md; jsonl: with --summary)"
                                                       : "output format (docs/output-formats.md)"),
           "Output", std::move(formats))
        ->capture_default_str();
    describe(app.add_option("--digits", digits, "decimals in tables")->transform(in_range(0, 17))->capture_default_str(),
             "Output", "N");
    describe(app.add_option("--width", width,
                            "table width in columns, 0 for no limit (default: the terminal's; none in a file)")
                 ->transform(in_range(0, 1'000'000)),
             "Output", "N");
    choose(app.add_option("--color", color,
                          "shade scores and weights in tables; auto: when the output is a terminal, NO_COLOR is unset "
                          "and TERM is not dumb"),
           "Output", {"auto", "always", "never"})
        ->capture_default_str();
    add_enum<Shade>(app, "--shade", shade,
                    "absolute: weights on one scale from 0 to 1 in every row (scores, which have no fixed range, on "
                    "one scale for the table); table: from the table's smallest entry to its largest; row: each row on "
                    "its own scale",
                    "Output")
        ->capture_default_str();
    add_output_path(app, path);
}

// --width and --color as given (`width` < 0: not given; `color` auto, always or never), else
// decided by where the output goes (`main`): a terminal's width and colour, none in a file.
inline void fit_to_destination(RenderOptions& render, int width, const std::string& color, const Output& main) {
    render.width = width >= 0 ? static_cast<std::size_t>(width) : output_width(main.descriptor(), main.is_stdout());
    render.color = color == "always" || (color == "auto" && color_wanted(main.descriptor()));
}

inline void OutputFlags::apply(RenderOptions& render, const Output& main) const {
    render.format = *parse_enum<Format>(format);
    render.digits = digits;
    fit_to_destination(render, width, color, main);
    render.shade = *parse_enum<Shade>(shade);
}

inline void InputFlags::add_to(CLI::App& app, bool model) {
    describe(app.add_option("--tokens", tokens,
                            "labels for the rows of a .npy, .npz or .safetensors input, separated by spaces (default: "
                            "t1 t2 …)"),
             "Input", "\"A B …\"");
    add_enum<WeightLayout>(app, "--layout", layout,
                           "how the input's weight matrices are stored: in_out (d_in × d_out, used as X·W) or out_in "
                           "(PyTorch nn.Linear's (out, in), used as X·Wᵀ); required for a square weight from a binary file",
                           "Input");
    if (!model) return;
    auto* from_option = add_enum<ModelFamily>(
        app, "--from", from, "read a model's own tensor names from a .safetensors or .npz INPUT (with --layer)", "Input");
    auto* layer_option =
        describe(app.add_option("--layer", layer, "with --from: the layer whose attention to trace, from 0")
                     ->transform(in_range(0, 10'000)),
                 "Input", "L");
    auto* hidden = describe(app.add_option("--hidden-states", hidden_states,
                                           "with --from: a .npy (or an .npz or .safetensors with an array hidden_states) "
                                           "of the layer's input, n × d (default: INPUT's hidden_states)"),
                            "Input", "FILE", Completes::file);
    layer_option->needs(from_option);
    hidden->needs(from_option);
}

inline LoadOptions InputFlags::apply(std::uint64_t max_input, bool heads_given, bool kv_heads_given) const {
    LoadOptions load;
    load.max_input = max_input;
    load.heads_given = heads_given;
    load.kv_heads_given = kv_heads_given;
    if (!tokens.empty()) {
        std::vector<std::string> labels;
        for (std::size_t from = 0; from < tokens.size();) {
            const std::size_t space = std::min(tokens.find(' ', from), tokens.size());
            if (space > from) labels.push_back(tokens.substr(from, space - from));
            from = space + 1;
        }
        if (labels.empty()) throw UsageError("--tokens: give the labels separated by spaces");
        for (const auto& label : labels)
            if (const auto c = first_control_character(label))
                throw UsageError(fmt::format("--tokens: control or formatting character U+{:04X} in a label",
                                             static_cast<std::uint32_t>(*c)));
        load.tokens = std::move(labels);
    }
    if (!layout.empty()) load.layout = parse_enum<WeightLayout>(layout);
    if (!from.empty()) load.from = parse_enum<ModelFamily>(from);
    if (layer >= 0) load.layer = layer;
    if (!hidden_states.empty()) load.hidden_states = hidden_states;
    return load;
}

inline void LimitFlags::add_to(CLI::App& app, bool reads_input) {
    const CLI::Validator size(
        [](std::string& text) -> std::string {
            return parse_size(text) ? std::string() : "expected a size such as 512M, 4g or 4GiB, found " + text;
        },
        "");
    describe(app.add_option("--max-memory", max_memory,
                            "refuse work needing more memory than this, e.g. 4G (default: half the machine's)")
                 ->check(size),
             "Limits", "SIZE");
    if (reads_input)
        describe(app.add_option("--max-input", max_input, "refuse inputs larger than this (default: 1G)")->check(size),
                 "Limits", "SIZE");
    describe(app.add_option("--max-time", max_time,
                            "refuse work estimated to take longer than this, e.g. 90s, 10m, 2h; 0 for no limit (default: 5m)")
                 ->check(CLI::Validator(
                     [](std::string& text) -> std::string {
                         return parse_duration(text) ? std::string()
                                                     : "expected a duration such as 90s, 10m or 0, found " + text;
                     },
                     "")),
             "Limits", "DURATION");
}

inline MemoryLimit LimitFlags::memory() const {
    return max_memory.empty() ? default_memory_limit() : MemoryLimit{*parse_size(max_memory), ""};
}

inline std::uint64_t LimitFlags::input() const { return max_input.empty() ? default_max_input_bytes : *parse_size(max_input); }

inline double LimitFlags::seconds() const { return max_time.empty() ? default_max_seconds : *parse_duration(max_time); }

inline void TraceFlags::add_to(CLI::App& app) {
    add_attention_to(app);
    add_weighting_to(app);
}

inline void TraceFlags::add_attention_to(CLI::App& app) {
    add_enum<Mode>(app, "-m,--mode", mode, "the attention to trace (default: the input's mode, else plain)", "Attention");
    add_enum<Normalization>(app, "--normalize", normalize, "turn scores into weights by softmax, or by dividing by the row sum",
                            "Attention")
        ->capture_default_str();
    add_enum<Score>(app, "--score", score, "bahdanau: additive (v_a·tanh(s·W_a + h·U_a)), Luong's dot (s·h) or general (s·W·h)",
                    "Attention")
        ->capture_default_str();
    describe(app.add_option("--seed", options.seed, "seed for weights the input does not give")
                 ->transform(whole_number_u64)
                 ->capture_default_str(),
             "Attention", "N");
    describe(app.add_option("--dim", dim, "d_k = d_v (bahdanau: d_a) of generated weights (default: d_in)")
                 ->transform(in_range(1LL, 1LL << 20)),
             "Attention", "N");
    describe(app.add_option("--heads", heads, "self, causal: split the projections into this many attention heads "
                                              "(default: the input's \"heads\", else 1)")
                 ->transform(in_range(1, max_heads)),
             "Attention", "H");
    describe(app.add_option("--kv-heads", kv_heads, "grouped-query attention: this many key/value heads, each shared by "
                                                    "a group of query heads (1: multi-query; default: one per head)")
                 ->transform(in_range(1, max_heads)),
             "Attention", "G");
    add_enum<PositionScheme>(app, "--positions", positions,
                             "self, causal: none, sinusoidal (encodings added to the embeddings) or rope (queries and "
                             "keys rotated by position); default: the input's \"positions\", else none",
                             "Attention");
    describe(app.add_option("--position-offset", position_offset,
                            "with --positions: the first token's position (default 0), as if the sentence began later in "
                            "a text")
                 ->transform(in_range(std::int64_t{0}, std::int64_t{1'000'000'000})),
             "Attention", "N");
}

inline void TraceFlags::add_weighting_to(CLI::App& app) {
    describe(app.add_option("--window", window, "plain, self, causal: a query sees only the W nearest keys (causal: itself "
                                                "and the W − 1 before it; otherwise those less than W away)")
                 ->transform(in_range(1LL, 1LL << 40)),
             "Attention", "W");
    auto* fill = describe(app.add_option("--mask-fill", mask_fill,
                                         "what hidden scores become: -inf (the default, weight exactly 0), lowest (the "
                                         "number type's lowest) or a number such as -1e9, to see what finite fills do")
                              ->check(CLI::Validator(
                                  [](std::string& text) -> std::string {
                                      return parse_mask_fill(text)
                                                 ? std::string()
                                                 : "expected -inf, lowest or a number such as -1e9, found " + text;
                                  },
                                  "")),
                          "Attention", "-inf|lowest|N");
    app.add_flag("--mask-after-softmax", mask_after_softmax,
                 "the wrong way, to see it: softmax over every key, then hidden weights set to 0 without dividing again")
        ->excludes(fill)
        ->group("Attention");
    describe(app.add_option("--scale", scale,
                            "divide the scores by sqrt (√d_k), none, or a positive number (default: sqrt in self and causal "
                            "modes, none in plain)")
                 ->check(CLI::Validator(
                     [](std::string& text) -> std::string {
                         return parse_scale(text) ? std::string()
                                                  : "expected sqrt, none or a positive number such as 8, found " + text;
                     },
                     "")),
             "Attention", "sqrt|none|N");
    describe(app.add_option("--temperature", options.temperature,
                            "softmax of scores ÷ T: T < 1 sharpens the weights, T > 1 flattens them")
                 ->check(CLI::Validator(
                     [](std::string& text) -> std::string {
                         return positive_number(text) ? std::string()
                                                      : "expected a positive number such as 0.5 or 2, found " + text;
                     },
                     ""))
                 ->capture_default_str(),
             "Attention", "T");
    add_enum<Dtype>(app, "--dtype", dtype, "compute in float64 or float32 (faster for long inputs)", "Long inputs")
        ->capture_default_str();
    describe(app.add_option("--threads", threads, "OpenMP threads (default: all cores); the output is the same for any")
                 ->transform(in_range(1, max_threads)),
             "Long inputs", "N");
}

inline std::optional<Mode> TraceFlags::requested_mode() const { return mode.empty() ? std::nullopt : parse_enum<Mode>(mode); }

inline TraceOptions TraceFlags::apply() const {
    TraceOptions o = options;
    if (!scale.empty()) std::tie(o.scale, o.scale_value) = *parse_scale(scale);
    o.normalization = *parse_enum<Normalization>(normalize);  // CLI11 has checked the names
    o.score = *parse_enum<Score>(score);
    if (dim > 0) o.dim = dim;
    if (heads > 0) o.heads = heads;
    if (kv_heads > 0) o.kv_heads = kv_heads;
    if (!positions.empty()) o.positions = *parse_enum<PositionScheme>(positions);  // CLI11 has checked the name
    if (position_offset >= 0) o.position_offset = position_offset;
    if (window > 0) o.window = static_cast<Eigen::Index>(window);
    if (!mask_fill.empty()) o.mask_method = *parse_mask_fill(mask_fill);
    o.mask_method.after_softmax = mask_after_softmax;
    o.dtype = *parse_enum<Dtype>(dtype);
    prepare_threads(threads > 0 ? std::optional<int>(threads) : std::nullopt);
    return o;
}

}  // namespace attntrace
