#include "practice/mistakes.hpp"

#include "attention/masks.hpp"
#include "attention/modes.hpp"
#include "practice/mistake_pass.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace attntrace {
namespace mistake_detail {
namespace {

constexpr std::array<MistakeInfo, 18> mistake_table{{
    {Mistake::transposed_w_q, "transposed_w_q", "W_q used transposed, Q = X·W_qᵀ (nn.Linear stores a weight (out, in))"},
    {Mistake::transposed_w_k, "transposed_w_k", "W_k used transposed, K = X·W_kᵀ"},
    {Mistake::transposed_w_v, "transposed_w_v", "W_v used transposed, V = X·W_vᵀ"},
    {Mistake::wrong_head_split, "wrong_head_split",
     "Q, K and V cut into heads row by row (view(heads, n, d_head)) instead of by columns"},
    {Mistake::keys_times_queries, "keys_times_queries", "the scores as K·Qᵀ instead of Q·Kᵀ"},
    {Mistake::no_tanh, "no_tanh", "the additive score without its tanh, v_a · (s·W_a + h·U_a)"},
    {Mistake::no_scaling, "no_scaling", "the scores not divided by √d_k"},
    {Mistake::sqrt_d_model, "sqrt_d_model",
     "the scores divided by √d_model (the embeddings' width d_in, or all heads' H·d_head) instead of √d_k"},
    {Mistake::divided_by_d_k, "divided_by_d_k", "the scores divided by d_k instead of √d_k"},
    {Mistake::no_mask, "no_mask",
     "the mask (causal, window, padding, or one of them) not applied, or a causal window taken on both sides"},
    {Mistake::finite_fill, "finite_fill", "the hidden scores set to a finite number instead of −∞"},
    {Mistake::mask_after_softmax, "mask_after_softmax",
     "softmax over every key, then the hidden weights set to 0 without dividing again"},
    {Mistake::softmax_over_columns, "softmax_over_columns", "each column normalised instead of each row"},
    {Mistake::softmax_overflow, "softmax_overflow",
     "e^s of the scores themselves, the row max not subtracted: e^s overflows (∞ ÷ ∞ = NaN) or underflows (0 ÷ 0)"},
    {Mistake::sum_instead_of_softmax, "sum_instead_of_softmax",
     "each score divided by its row's sum where softmax was asked (negative scores give negative weights)"},
    {Mistake::softmax_instead_of_sum, "softmax_instead_of_sum", "softmax where the run divides by the row's sum"},
    {Mistake::context_from_scores, "context_from_scores", "the context summed with the scores instead of the weights"},
    {Mistake::context_from_inputs, "context_from_inputs", "the context summed from X instead of V"},
}};

// The ways of making `mistake` in this run.
std::vector<Variant> variants_of(const Trace& trace, int head, Mistake mistake, const MistakeContext& context) {
    std::vector<Variant> out;
    const RunShape run = shape_of(trace);
    switch (mistake) {
    case Mistake::finite_fill: {
        // The fills code uses: round numbers, and the lowest number of float32 and of float64.
        std::vector<double> fills{0.0, -1.0, -10.0, -100.0, -1e4, -1e9,
                                  -static_cast<double>(std::numeric_limits<float>::max()),
                                  std::numeric_limits<double>::lowest()};
        for (std::size_t i = 0; i < context.fills.size() && i < max_learner_fills; ++i)
            if (std::find(fills.begin(), fills.end(), context.fills[i]) == fills.end()) fills.push_back(context.fills[i]);
        for (const double fill : fills) out.push_back({mistake, fill});
        break;
    }
    case Mistake::sqrt_d_model: {
        // With one head the model's width is that of its embeddings; with several, that of all
        // heads' queries together, or of the embeddings when the two differ.
        std::vector<double> widths{static_cast<double>(run.d_in)};
        if (run.heads > 1) widths.insert(widths.begin(), static_cast<double>(run.heads * run.d_head));
        for (const double width : widths)
            if (width != static_cast<double>(run.d_head) &&
                std::none_of(out.begin(), out.end(), [&](const Variant& v) { return v.width == width; }))
                out.push_back({mistake, 0, width});
        break;
    }
    case Mistake::no_mask: {
        out.push_back({mistake, 0, 0, false, false, 0xff});
        const Stage* masked = trace.find(StageId::masked, head);
        if (masked && masked->mask_reasons) {
            std::uint8_t present = 0;
            for (Index i = 0; i < masked->mask_reasons->rows(); ++i)
                for (Index j = 0; j < masked->mask_reasons->cols(); ++j) present |= (*masked->mask_reasons)(i, j);
            if (std::popcount(present) > 1)
                for (const std::uint8_t bit : {reason_causal, reason_window, reason_padding})
                    if (present & bit) out.push_back({mistake, 0, 0, false, false, bit});
            // Causal with a window of w ≥ 2, the window taken as self mode takes it, on both sides.
            if ((present & reason_causal) && trace.window >= 2)
                out.push_back({mistake, 0, 0, false, false, reason_causal, true});
        }
        break;
    }
    case Mistake::context_from_scores:
        for (const bool raw : {false, true})
            for (const bool every : {false, true}) out.push_back({mistake, 0, 0, raw, every});
        break;
    default: out.push_back({mistake}); break;
    }
    return out;
}

// Where a mistake can show: the stages its change reaches.
bool reaches(Mistake mistake, StageId id) {
    const int stage = after_the_heads(id) ? 7 : order_of(id);
    switch (mistake) {
    case Mistake::transposed_w_q: return id != StageId::keys && id != StageId::values && id != StageId::keys_rotated;
    case Mistake::transposed_w_k: return id != StageId::queries && id != StageId::values && id != StageId::queries_rotated;
    case Mistake::transposed_w_v: return id == StageId::values || stage >= 6;
    case Mistake::wrong_head_split: return true;
    case Mistake::keys_times_queries:
    case Mistake::no_tanh: return stage >= 2;
    case Mistake::no_scaling:
    case Mistake::sqrt_d_model:
    case Mistake::divided_by_d_k: return stage >= 3;
    case Mistake::no_mask:
    case Mistake::finite_fill: return stage >= 4;
    // Masking after the softmax leaves no mask before it: a masked stage equal to the scaled
    // scores is no_mask's, whatever the learner meant to do later.
    case Mistake::mask_after_softmax:
    case Mistake::softmax_over_columns:
    case Mistake::softmax_overflow:
    case Mistake::sum_instead_of_softmax:
    case Mistake::softmax_instead_of_sum: return stage >= 5;
    case Mistake::context_from_scores:
    case Mistake::context_from_inputs: return stage >= 6;
    }
    return false;
}

// ---------------------------------------------------------------------------------------------
// The explanations, in the words of the run.

// A number as a learner writes it: 0, -1, -10000, -1e9, 2.5.
std::string number_text(double v) {
    if (v == std::floor(v) && std::fabs(v) < 1e6) return fmt::format("{:.0f}", v);
    std::string s = fmt::format("{:.6g}", v);
    for (const char* from : {"e+0", "e+", "e-0"}) {
        const auto found = s.find(from);
        if (found != std::string::npos) {
            s.replace(found, std::string_view(from).size(), std::string_view(from) == "e-0" ? "e-" : "e");
            break;
        }
    }
    return s;
}

// "√3 ≈ 1.732", "√4 = 2".
std::string root_text(double width) {
    const double root = std::sqrt(width);
    if (root == std::floor(root)) return fmt::format("√{} = {}", number_text(width), number_text(root));
    return fmt::format("√{} ≈ {:.4g}", number_text(width), root);
}

struct Words {
    std::string query = "query", key = "key", values = "V", x = "X";
};

Words words_of(const Trace& trace) {
    Words w;
    switch (family_of(trace.mode)) {
    case ModeFamily::single_sequence:
        if (!trace.has_parameter("W_q")) w.values = "V, which plain attention takes to be X";
        break;
    case ModeFamily::encoder_decoder:
        w.query = "target step";
        w.key = "source position";
        w.values = "the encoder states H";
        break;
    }
    if (trace.find(StageId::layernorm)) w.x = "LN(X)";
    return w;
}

std::string row_name(const Stage& stage, std::size_t row) {
    return fmt::format("row {} ({})", row + 1, stage.rows[row]);
}

// The parts of the mask that `forgotten` leaves out, and what their absence let in.
std::string forgotten_mask_text(const Trace& trace, const Stage& masked, std::uint8_t forgotten) {
    switch (family_of(trace.mode)) {
    case ModeFamily::single_sequence: break;  // the mask's parts, below
    case ModeFamily::encoder_decoder: return "the source mask was not applied, so the source positions it hides took weight";
    }
    std::uint8_t present = 0;
    if (masked.mask_reasons)
        for (Index i = 0; i < masked.mask_reasons->rows(); ++i)
            for (Index j = 0; j < masked.mask_reasons->cols(); ++j) present |= (*masked.mask_reasons)(i, j);
    else
        present = reason_causal;
    const std::uint8_t left_out = forgotten == 0xff ? present : static_cast<std::uint8_t>(present & forgotten);
    std::vector<std::string> parts, effects, kept;
    const auto part = [&](std::uint8_t bit) {
        switch (bit) {
        case reason_causal: return std::string("the causal mask");
        case reason_window: return fmt::format("the window of {} key{} (--window)", trace.window, trace.window == 1 ? "" : "s");
        default: return std::string("the padding mask");
        }
    };
    for (const std::uint8_t bit : {reason_causal, reason_window, reason_padding}) {
        if (!(present & bit)) continue;
        if (left_out & bit) {
            parts.push_back(part(bit));
            effects.push_back(bit == reason_causal   ? "each query also weighed the keys after it"
                              : bit == reason_window ? "each query also weighed the keys outside its window"
                                                     : "the padding tokens took weight");
        } else {
            kept.push_back(part(bit));
        }
    }
    std::string text = fmt::format("{} {} not applied", fmt::join(parts, " and "), parts.size() == 1 ? "was" : "were");
    if (!kept.empty()) text += fmt::format(" ({} {})", fmt::join(kept, " and "), kept.size() == 1 ? "was" : "were");
    return text + fmt::format(", so {}", fmt::join(effects, ", and "));
}

// What an explanation says of the run.
struct Said {
    const Trace& trace;
    int head;
    const Variant& variant;
    const Pass& p;
    const MistakeContext& context;
    RunShape run;
    Words w;
    bool several;
    std::string d_k, in_head;
};

// transposed_w_q, _k, _v: which weight, and whether the input stored it (out, in).
std::string transposed_text(const Said& s, Mistake mistake) {
    const Trace& trace = s.trace;
    const MistakeContext& context = s.context;
    const RunShape& run = s.run;
    const Words& w = s.w;
    const char* letter = mistake == Mistake::transposed_w_q ? "Q" : mistake == Mistake::transposed_w_k ? "K" : "V";
    const char* weight = mistake == Mistake::transposed_w_q ? "W_q" : mistake == Mistake::transposed_w_k ? "W_k" : "W_v";
    const std::size_t d = static_cast<std::size_t>(trace.parameter(weight).data.cols());
    // Its columns: one head's width, or the heads' side by side (H·d_k; H_kv·d_k for keys and
    // values shared by groups of heads).
    const std::string per_head = mistake == Mistake::transposed_w_v ? "d_v" : "d_k";
    const std::size_t shared_by = mistake == Mistake::transposed_w_q ? run.heads : run.kv_heads;
    const std::string out_name = shared_by <= 1                                         ? per_head
                                 : mistake == Mistake::transposed_w_q || run.kv_heads == run.heads ? "(H·" + per_head + ")"
                                                                                                   : "(H_kv·" + per_head + ")";
    if (context.layout == WeightLayout::out_in && trace.weights == WeightsOrigin::file)
        return fmt::format("{0} was computed as {1}·{2}ᵀ: the input stores {2} as nn.Linear keeps a weight, (out, in) "
                           "= {3} × {4}, and it was multiplied as stored; turn it first, {0} = {1}·{2} with {2} of "
                           "d_in × {5} = {4} × {3} (x @ weight.T in PyTorch).",
                           letter, w.x, weight, d, run.d_in, out_name);
    const std::string whose = trace.weights == WeightsOrigin::generated
                                  ? fmt::format("this run's {} (generated from seed {})", weight, trace.seed)
                                  : fmt::format("the input's {}", weight);
    return fmt::format("{0} was computed as {1}·{2}ᵀ, with {2} transposed: {3} is d_in × {4} = {5} × {6}, to be used "
                       "as it stands, {0} = {1}·{2}; only a weight stored (out, in), as nn.Linear keeps it, is "
                       "turned first.",
                       letter, w.x, weight, whose, out_name, run.d_in, d);
}

// sqrt_d_model: which model width the scores were divided by the root of.
std::string sqrt_d_model_text(const Said& s) {
    const Variant& variant = s.variant;
    const RunShape& run = s.run;
    const bool several = s.several;
    const std::string& d_k = s.d_k;
    const std::string right = fmt::format("instead of √{} = {}, the width of {} queries and keys", d_k,
                                          root_text(static_cast<double>(run.d_head)), several ? "one head's" : "the");
    if (several && variant.width == static_cast<double>(run.heads * run.d_head))
        return fmt::format("the scores were divided by √(H·d_head) = {}, the width of {} heads' queries side by "
                           "side (d_model{}), {}: each head's scores are dot products of {} numbers.",
                           root_text(variant.width), run.heads == 2 ? "both" : fmt::format("all {}", run.heads),
                           run.d_in == run.heads * run.d_head ? ", which is d_in here too" : "", right, run.d_head);
    return fmt::format("the scores were divided by √d_in = {}, the width of the embeddings{}, {}: the scores are "
                       "dot products of {} numbers, not of {}.",
                       root_text(variant.width), several ? "" : " (d_model)", right, run.d_head, run.d_in);
}

// no_mask's two-sided variant: causal with a window, the window taken as self mode takes it.
std::string two_sided_window_text(const Said& s) {
    const std::int64_t w = s.trace.window;
    const std::int64_t before = w - 1;
    return fmt::format("the window of {} keys was taken on both sides, |i − j| < {}, as without the causal mask, so "
                       "queries also weighed the keys up to {} position{} after them: hide every key after its query too "
                       "(j > i); with the causal mask a window of {} keeps a query and at most {} key{} before it.",
                       w, w, before, before == 1 ? "" : "s", w, before, before == 1 ? "" : "s");
}

// finite_fill: the fill, and the largest weight a hidden key got under it.
std::string finite_fill_text(const Said& s) {
    const Trace& trace = s.trace;
    const int head = s.head;
    const Variant& variant = s.variant;
    const Pass& p = s.p;
    const Words& w = s.w;
    const bool several = s.several;
    // The largest weight a hidden key got under this fill (by magnitude: a sum may be negative).
    // In the learner's row when there is one and a key is hidden in it, else in the whole run.
    const Stage& masked = trace.at(StageId::masked, head);
    const auto largest_leak = [&](std::size_t from, std::size_t to) {
        double leaked = 0;
        if (!p.weights.empty() && masked.allowed)
            for (std::size_t i = from; i < to && i < p.weights.size(); ++i)
                for (std::size_t j = 0; j < p.weights[i].size(); ++j)
                    if (!(*masked.allowed)(at(i), at(j)) && std::fabs(p.weights[i][j]) > std::fabs(leaked))
                        leaked = p.weights[i][j];
        return leaked;
    };
    const std::size_t row = s.context.row ? static_cast<std::size_t>(*s.context.row) : 0;
    const double in_row = s.context.row ? largest_leak(row, row + 1) : 0;
    const double leaked = in_row != 0 ? in_row : largest_leak(0, p.weights.size());
    const std::string where = in_row != 0 ? fmt::format("in {}", row_name(masked, row)) : "in this run";
    const std::string fill = number_text(variant.fill);
    if (p.weights.empty() || leaked != 0)
        return fmt::format(
            "the hidden scores were set to {} instead of −∞, and a finite score still takes part in the {}{}: set "
            "them to −∞ (or leave them out) so that their weights are exactly 0.",
            fill, trace.normalization == Normalization::softmax ? "softmax" : "row's sum",
            p.weights.empty() ? ""
                              : fmt::format(" ({} a hidden {} gets a weight of {:.4g}{})", where, w.key, leaked,
                                            several ? fmt::format(" in head {}", std::max(head, 1)) : ""));
    return fmt::format("the hidden scores were set to {} instead of −∞; in this run their weights still come out "
                       "exactly 0, so only this stage shows it, but −∞ (or masked) is what the mask writes, and "
                       "it gives weight 0 whatever the scores are.",
                       fill);
}

// mask_after_softmax: the row whose weights sum to the least.
std::string mask_after_softmax_text(const Said& s) {
    const Trace& trace = s.trace;
    const int head = s.head;
    const Pass& p = s.p;
    const Words& w = s.w;
    const std::string& in_head = s.in_head;
    double least = 1;
    std::size_t row = 0;
    const Stage& masked = trace.at(StageId::masked, head);
    for (std::size_t i = 0; i < p.weights.size(); ++i) {
        double sum = 0;
        bool sees = false;
        for (std::size_t j = 0; j < p.weights[i].size(); ++j) {
            sum += p.weights[i][j];
            sees = sees || (*masked.allowed)(at(i), at(j));
        }
        if (sees && sum < least) least = sum, row = i;
    }
    return fmt::format("the softmax was taken over every {0} and the hidden {0}s' weights then set to 0 without "
                       "dividing again, so the rows sum to less than 1 ({1}{3} to {2:.4g}): hide the scores before "
                       "the softmax (or divide each row by its new sum).",
                       w.key, row_name(masked, row), least, in_head);
}

// softmax_overflow: the first row where e^s overflows or underflows, and how.
std::string softmax_overflow_text(const Said& s) {
    const Trace& trace = s.trace;
    const int head = s.head;
    const Pass& p = s.p;
    const bool single = trace.dtype == Dtype::float32;
    const char* type = single ? "float32" : "float64";
    const double largest = single ? std::log(static_cast<double>(std::numeric_limits<float>::max()))
                                  : std::log(std::numeric_limits<double>::max());
    const Stage& masked = trace.at(StageId::masked, head);
    const std::string lead = "e^s was taken of the scores themselves, without subtracting the row's largest first";
    const std::string fix = "subtract each row's largest score before taking e^s: the weights stay the same, and "
                            "every e^s is at most 1.";
    const std::string score = trace.temperature != 1 ? "score ÷ T" : "score";
    for (std::size_t i = 0; i < p.masked.size(); ++i) {
        double max = minus_inf;
        bool over = false, under = true, sum_over = false;
        float sum_f = 0;
        double sum_d = 0;
        for (const double v : p.masked[i]) {
            if (v == minus_inf) continue;
            const double s = v / trace.temperature;
            max = std::max(max, s);
            const double e = single ? static_cast<double>(std::exp(static_cast<float>(s))) : std::exp(s);
            over = over || std::isinf(e);
            under = under && e == 0;
            if (single) sum_f += static_cast<float>(e);
            else sum_d += e;
        }
        if (max == minus_inf) continue;
        sum_over = !over && std::isinf(single ? static_cast<double>(sum_f) : sum_d);
        if (over)
            return fmt::format("{}: in {} the largest {} is {:.6g}, and e^{:.6g} is beyond {} (whose largest number is "
                               "about e^{:.2f}), so it is ∞; ∞ ÷ ∞ is NaN, and each finite e^s ÷ ∞ is 0: {}",
                               lead, row_name(masked, i), score, max, max, type, largest, fix);
        if (sum_over)
            return fmt::format("{}: in {} each e^s is finite, but their sum is beyond {} (about e^{:.2f}), so it is "
                               "∞ and each weight, e^s ÷ ∞, is 0: {}",
                               lead, row_name(masked, i), type, largest, fix);
        if (under)
            return fmt::format("{}: in {} even the largest {}, {:.6g}, gives an e^s that is 0 in {}, so the row is "
                               "0 ÷ 0, NaN: {}",
                               lead, row_name(masked, i), score, max, type, fix);
    }
    return lead + ": " + fix;
}

// sum_instead_of_softmax: and, with negative scores, the first row whose "weights" leave [0, 1].
std::string sum_instead_of_softmax_text(const Said& s) {
    const Trace& trace = s.trace;
    const int head = s.head;
    const Pass& p = s.p;
    const bool several = s.several;
    std::string text = "each score was divided by its row's sum: softmax takes e to the power of each score first, "
                       "then divides by the row's sum of those";
    // Negative scores: the first row whose "weights" leave [0, 1], which e^s never lets a softmax's do.
    const Stage& masked = trace.at(StageId::masked, head);
    for (std::size_t i = 0; i < p.weights.size(); ++i) {
        bool negative = false, below = false, above = false, zero_sum = false;
        double sum = 0;
        for (const double v : p.masked[i])
            if (std::isfinite(v)) negative = negative || v < 0, sum += v;
        for (const double v : p.weights[i]) below = below || v < 0, above = above || v > 1;
        zero_sum = negative && sum == 0;
        if (!negative || !(below || above || zero_sum)) continue;
        const std::string what = zero_sum       ? "a division by 0"
                                 : below && above ? "negative weights and weights above 1"
                                 : below          ? "negative weights"
                                                  : "weights above 1";
        text += fmt::format("; with negative scores, as in {}{}, the division by their sum gives {}, which softmax "
                            "never does (e^s is never negative)",
                            row_name(masked, i), several ? fmt::format(" of head {}", std::max(head, 1)) : "", what);
        break;
    }
    return text + ".";
}

// context_from_scores: which scores were the weights.
std::string context_from_scores_text(const Said& s) {
    const Trace& trace = s.trace;
    const int head = s.head;
    const Variant& variant = s.variant;
    const Pass& p = s.p;
    const Words& w = s.w;
    const bool scaled = p.divisor != 1;
    std::string scores = variant.raw_scores ? "raw scores (before scaling)" : scaled ? "scaled scores" : "scores";
    if (trace.at(StageId::masked, head).allowed)
        scores += variant.every_key ? ", every key's, the hidden ones too," : ", with the hidden ones as 0,";
    return fmt::format("the context was summed with the {} as its weights: multiply the weights ({}) by {}.", scores,
                       trace.normalization == Normalization::softmax ? "the softmax of each row of scores"
                                                                      : "each score divided by its row's sum",
                       w.values);
}

std::string explanation(const Trace& trace, int head, Mistake mistake, const Variant& variant, const Pass& p,
                        const MistakeContext& context) {
    const RunShape run = shape_of(trace);
    const Words w = words_of(trace);
    const bool several = run.heads > 1;
    const std::string d_k = several ? "d_head" : "d_k";
    const std::string in_head = several ? fmt::format(" of head {}", std::max(head, 1)) : "";
    const Said s{trace, head, variant, p, context, run, w, several, d_k, in_head};
    switch (mistake) {
    case Mistake::transposed_w_q:
    case Mistake::transposed_w_k:
    case Mistake::transposed_w_v: return transposed_text(s, mistake);
    case Mistake::wrong_head_split:
        return fmt::format("Q, K and V were cut into heads by reading each n × {0} matrix row by row and cutting it into "
                           "pieces of n·{1} numbers (as .view(heads, n, d_head) does), which mixes the tokens' rows: "
                           "each head takes its own {1} columns of every token's row (.view(n, heads, d_head), then "
                           ".transpose(0, 1)).",
                           run.heads * run.d_head, run.d_head);
    case Mistake::keys_times_queries:
        return "the scores were computed as K·Qᵀ, the transpose of the right matrix: row i holds query i's dot products "
               "with every key, S = Q·Kᵀ.";
    case Mistake::no_tanh:
        return "the additive score was computed without its tanh, v_a · (s·W_a + h·U_a): take tanh of each entry of "
               "s·W_a + h·U_a first, e = v_a · tanh(s·W_a + h·U_a).";
    case Mistake::no_scaling:
        if (trace.scale_rule == ScaleRule::sqrt)
            return fmt::format("the scores were not scaled: divide each by √{} = {}{} before the softmax.", d_k,
                               root_text(static_cast<double>(run.d_head)),
                               several ? " (the width of one head's queries and keys)" : "");
        return fmt::format("the scores were not divided by {}, the divisor --scale gives this run: divide each by it "
                           "before the softmax.",
                           number_text(trace.scale));
    case Mistake::sqrt_d_model: return sqrt_d_model_text(s);
    case Mistake::divided_by_d_k:
        return fmt::format("the scores were divided by {} = {} itself: divide by its square root, {}.", d_k, run.d_head,
                           root_text(static_cast<double>(run.d_head)));
    case Mistake::no_mask:
        if (variant.two_sided) return two_sided_window_text(s);
        return forgotten_mask_text(trace, trace.at(StageId::masked, head), variant.forgotten) +
               ": set the scores the mask hides to −∞ before the softmax, so that their weights are exactly 0.";
    case Mistake::finite_fill: return finite_fill_text(s);
    case Mistake::mask_after_softmax: return mask_after_softmax_text(s);
    case Mistake::softmax_over_columns:
        return fmt::format("the softmax was taken down each column: take it along each row, so that each {}'s weights "
                           "sum to 1.",
                           w.query);
    case Mistake::softmax_overflow: return softmax_overflow_text(s);
    case Mistake::sum_instead_of_softmax: return sum_instead_of_softmax_text(s);
    case Mistake::softmax_instead_of_sum:
        return "softmax was used where this run divides each score by its row's sum (--normalize sum): divide the "
               "scores themselves by their row's sum.";
    case Mistake::context_from_scores: return context_from_scores_text(s);
    case Mistake::context_from_inputs:
        return fmt::format("the context was summed from {0} instead of the values: multiply the weights by V = {0}·W_v.",
                           w.x);
    }
    return std::string(mistake_info(mistake).summary);
}

}  // namespace
}  // namespace mistake_detail

std::span<const MistakeInfo> mistakes() { return mistake_detail::mistake_table; }

const MistakeInfo& mistake_info(Mistake id) {
    for (const auto& info : mistake_detail::mistake_table)
        if (info.id == id) return info;
    throw std::logic_error("a mistake without its entry");
}

bool diagnosable(StageId id) {
    switch (id) {
    case StageId::queries:
    case StageId::keys:
    case StageId::values:
    case StageId::queries_rotated:
    case StageId::keys_rotated:
    case StageId::scores:
    case StageId::scaled:
    case StageId::masked:
    case StageId::weights:
    case StageId::context:
    case StageId::concat:
    case StageId::output:
    case StageId::head_contributions: return true;
    default: return false;
    }
}

std::vector<Diagnosis> diagnose(const Trace& trace, StageId id, int head, const Reproduces& reproduces,
                                const MistakeContext& context) {
    using namespace mistake_detail;
    std::vector<Diagnosis> out;
    if (!diagnosable(id)) return out;
    for (const MistakeInfo& info : mistake_table) {
        if (!reaches(info.id, id)) continue;
        for (const Variant& variant : variants_of(trace, head, info.id, context)) {
            Pass pass;
            const auto m = stage_under(trace, id, head, variant, pass);
            if (!m || !reproduces(*m)) continue;
            // The explanation may quote the weights: a pass that stopped before them goes on.
            if (pass.weights.empty() && (info.id == Mistake::finite_fill || info.id == Mistake::sum_instead_of_softmax))
                if (auto full = compute(trace, head, variant, StageId::weights)) pass = std::move(*full);
            out.push_back({info.id, explanation(trace, head, info.id, variant, pass, context)});
            break;
        }
    }
    return out;
}

std::vector<Diagnosis> diagnose_feature(const Trace& trace, Eigen::Index row, Eigen::Index col, Eigen::Index entry,
                                        const std::function<bool(double)>& reproduces) {
    std::vector<Diagnosis> out;
    switch (family_of(trace.mode)) {  // a feature of tanh(s·W_a + h·U_a): the additive score's alone
    case ModeFamily::single_sequence: return out;
    case ModeFamily::encoder_decoder:
        if (trace.score != Score::additive) return out;
        break;
    }
    const double without_tanh =
        trace.at(StageId::projected_decoder).data(row, entry) + trace.at(StageId::projected_encoder).data(col, entry);
    if (reproduces(without_tanh))
        out.push_back({Mistake::no_tanh, "the entry was left as s·W_a + h·U_a, without its tanh: take tanh of each "
                                         "entry, so that every feature lies between −1 and 1, then e = v_a · "
                                         "tanh(s·W_a + h·U_a)."});
    return out;
}

std::optional<Matrix> renormalised_after_softmax(const Trace& trace, int head) {
    using namespace mistake_detail;
    Variant variant;
    variant.renormalise = true;
    const auto pass = compute(trace, head, variant, StageId::weights);
    if (!pass) return std::nullopt;
    return matrix_of(pass->weights);
}

std::uint64_t mistake_pass_bytes(double rows, double cols, double d_in, double d_k, double d_v) {
    // At the peak (after the heads: the head asked for kept while the next is computed) two
    // passes, each with its four score-sized grids (scores, scaled, masked, weights) and its
    // queries, keys and values; a transposed or mixed copy, the learner's scores for the
    // context and the matrix handed back; the inputs, the full projections, the weights, and
    // the contexts side by side. Each row of a grid costs its header too.
    const double numbers = 12 * rows * cols + 2 * rows * (4 * d_k + 2 * d_v) + rows * d_in + rows * (2 * d_k + d_v) +
                           2 * rows * d_v + d_in * (d_k + d_v);
    const double row_headers = 32 * rows + 4 * cols;
    return static_cast<std::uint64_t>(8 * numbers + 48 * row_headers) + (1u << 16);
}

double mistake_search_seconds(double rows, double cols, double d_in, double d_k, double d_v, double heads) {
    // A pass: the three projections, every head's scores and mix, and about a dozen passes
    // over the score-sized grids (scale, mask, exp, divide, copies). Measured: check-answers
    // of a differing row of weights, 1000 causal tokens of 64 numbers, twenty passes in about
    // 1.8 s of one core, about 1 ns an operation; the estimate leaves some room.
    const double pass = rows * d_in * (2 * d_k + d_v) + rows * cols * (d_k + d_v) + 12 * rows * cols * heads;
    constexpr double ways = 26;  // every mistake's ways: eight fills, four scores for the context, …
    return ways * pass * 1.5e-9;
}

}  // namespace attntrace
