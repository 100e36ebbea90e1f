#include "attention/compare.hpp"

#include "attention/masks.hpp"
#include "attention/modes.hpp"
#include "attention/numeric.hpp"
#include "core/error.hpp"
#include "util/suggest.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace attntrace {
namespace {

Eigen::Index find_token(const Trace& t, const std::string& token) {
    for (std::size_t i = 0; i < t.tokens.size(); ++i)
        if (t.tokens[i] == token) return static_cast<Eigen::Index>(i);
    const std::string folded = fold_case(token);
    for (std::size_t i = 0; i < t.tokens.size(); ++i)
        if (fold_case(t.tokens[i]) == folded) return static_cast<Eigen::Index>(i);
    const auto near = likely_typo(token, t.tokens.size(), [&](std::size_t i) { return std::string_view(t.tokens[i]); });
    throw UsageError(fmt::format("--token: \"{}\" does not occur in {}{} (tokens: {})", printable(token), t.origin,
                                 near ? fmt::format(" (did you mean {}?)", printable(*near, 24)) : "",
                                 bounded_list(t.tokens)));
}

// Why key j is hidden from query i: the masked stage's reasons, or, when the mask was
// applied after softmax (and the masked stage records none), the same rules read off the run:
// the causal mask hides the keys after the query, the window those too far from it, and a
// padding key is hidden from every query, its own row included (no other rule hides a token
// from itself).
std::uint8_t hidden_why(const Trace& t, const Stage& weights, Eigen::Index i, Eigen::Index j) {
    const Stage& masked = t.at(StageId::masked);
    if (masked.mask_reasons) return (*masked.mask_reasons)(i, j);
    if (!weights.is_masked(i, j)) return 0;
    const bool causal = mode_spec(t.mode).causal;
    std::uint8_t why = 0;
    if (causal && j > i) why |= reason_causal;
    if (t.window > 0 && (causal ? i - j >= t.window : std::abs(i - j) >= t.window)) why |= reason_window;
    if (weights.is_masked(j, j)) why |= reason_padding;
    return why;
}

// "the causal mask", "the window of 2 (--window 2)", "padding": what hides a key, for one
// set of reasons.
std::string cause_text(const Trace& t, std::uint8_t why) {
    std::vector<std::string> causes;
    if (why & reason_causal) causes.emplace_back("the causal mask");
    if (why & reason_window)
        causes.push_back(fmt::format("the window of {} (--window {}: {})", t.window, t.window,
                                     t.window == 1               ? std::string("a query sees only itself")
                                     : !mode_spec(t.mode).causal ? fmt::format("a query sees the keys less than {} away", t.window)
                                     : t.window == 2             ? std::string("a query sees itself and the one before it")
                                                                 : fmt::format("a query sees itself and the {} before it", t.window - 1)));
    if (why & reason_padding) causes.emplace_back("the padding mask");
    std::string text;
    for (std::size_t k = 0; k < causes.size(); ++k) text += (k == 0 ? "" : " and ") + causes[k];
    return text;
}

// "the 3 tokens before "bank" (We, sat, on)", "the token after it (river)".
std::string side_text(const std::vector<std::string>& tokens, std::string_view side, const std::string& word) {
    return fmt::format("the {} {} \"{}\" ({})", tokens.size() == 1 ? std::string("token") : fmt::format("{} tokens", tokens.size()),
                       side, word, bounded_list(tokens));
}

// One note per cause that hides keys from the word at `row`, naming the tokens before it and
// after it, and what their weights are in this run.
std::vector<std::string> hidden_notes(const Trace& t, const Stage& weights, Eigen::Index row) {
    std::vector<std::uint8_t> causes;  // each set of reasons once: causal, window, padding, then together
    for (Eigen::Index j = 0; j < weights.col_count(); ++j)
        if (const std::uint8_t why = hidden_why(t, weights, row, j);
            weights.is_masked(row, j) && why != 0 && std::find(causes.begin(), causes.end(), why) == causes.end())
            causes.push_back(why);
    std::sort(causes.begin(), causes.end());
    const std::string word = printable(t.tokens[static_cast<std::size_t>(row)]);
    std::vector<std::string> notes;
    for (const std::uint8_t why : causes) {
        std::vector<std::string> before, after;
        double largest = 0;  // the largest weight a hidden key kept (a finite --mask-fill)
        for (Eigen::Index j = 0; j < weights.col_count(); ++j) {
            if (!weights.is_masked(row, j) || hidden_why(t, weights, row, j) != why) continue;
            (j < row ? before : after).push_back(t.tokens[static_cast<std::size_t>(j)]);
            largest = std::max(largest, std::abs(weights.data(row, j)));
        }
        std::string which;
        if (!before.empty()) which = side_text(before, "before", word);
        if (!after.empty())
            which += before.empty() ? side_text(after, "after", word)
                                    : fmt::format(" and the {} after it ({})",
                                                  after.size() == 1 ? std::string("token") : fmt::format("{} tokens", after.size()),
                                                  bounded_list(after));
        const std::string effect =
            largest == 0 ? ": weight 0, no part in its context"
                         : fmt::format(", yet the finite --mask-fill leaves them weight (up to {:.4g}), so they still "
                                       "move its context",
                                       largest);
        const bool several = (why & (why - 1)) != 0;
        notes.push_back(fmt::format("{} hide{} {} from it{}", cause_text(t, why), several ? "" : "s", which, effect));
    }
    return notes;
}

ContextIn context_in(const Trace& t, const std::string& token, std::size_t top) {
    ContextIn in;
    in.origin = t.origin;
    in.description = t.description;
    in.position = find_token(t, token);
    in.notes = t.notes;
    if (t.weights == WeightsOrigin::generated)
        in.notes.push_back(fmt::format("weights generated from seed {} (splitmix64), not learned", t.seed));
    if (t.positions == PositionScheme::sinusoidal)
        in.notes.push_back(fmt::format("sinusoidal position encodings added to the embeddings (positions from {}), so "
                                       "the word's context depends on where it stands",
                                       t.first_position));
    if (t.positions == PositionScheme::rope)
        in.notes.push_back(fmt::format("queries and keys rotated by their positions (RoPE, positions from {}), so the "
                                       "scores depend on how far apart the tokens stand",
                                       t.first_position));
    const Stage& weights_stage = t.at(StageId::weights);  // the mask is the same for every head
    for (auto& note : hidden_notes(t, weights_stage, in.position)) in.notes.push_back(std::move(note));
    if (const Stage* output = t.find(StageId::output)) {
        // Several heads (or a W_o): the layer's output is what the token becomes; every head's
        // weights feed it, so no single weight × value says what moved it.
        in.context = output->data.row(in.position);
        in.notes.push_back(fmt::format("the vectors compared are the output of {} mixed by W_o; each head weighs the "
                                       "tokens differently, so no single list of what moved the word is shown (see "
                                       "head_contributions in a trace)",
                                       t.heads == 1 ? std::string("the context") : fmt::format("the {} heads", t.heads)));
        return in;
    }
    in.context = t.at(StageId::context).data.row(in.position);
    const Matrix& weights = weights_stage.data;
    const Matrix& values = t.at(StageId::values).data;
    for (Eigen::Index j = 0; j < values.rows(); ++j) {
        // A hidden key with weight 0 adds nothing; one a finite --mask-fill left weight moved it.
        if (j == in.position || (weights_stage.is_masked(in.position, j) && weights(in.position, j) == 0)) continue;
        Contribution c;
        c.token = t.tokens[static_cast<std::size_t>(j)];
        c.position = j;
        c.weight = weights(in.position, j);
        c.vector = c.weight * values.row(j);
        c.size = scaled_norm(c.vector);
        in.moved_most.push_back(std::move(c));
    }
    std::stable_sort(in.moved_most.begin(), in.moved_most.end(),
                     [](const Contribution& x, const Contribution& y) { return x.size > y.size; });
    if (in.moved_most.size() > top) in.moved_most.resize(top);
    return in;
}

}  // namespace

Comparison compare_contexts(const Trace& a, const Trace& b, const std::string& token, std::size_t top) {
    Comparison c;
    c.token = token;
    c.mode = a.mode;
    c.output = a.find(StageId::output) != nullptr;
    c.a = context_in(a, token, top);
    c.b = context_in(b, token, top);
    if (c.a.context.size() != c.b.context.size())
        throw DataError(fmt::format("the context vectors of \"{}\" have {} numbers in {} but {} in {}: "
                                    "compare inputs whose values have one size",
                                    token, c.a.context.size(), a.origin, c.b.context.size(), b.origin));
    c.difference = c.b.context - c.a.context;
    c.norm_a = scaled_norm(c.a.context);
    c.norm_b = scaled_norm(c.b.context);
    c.norm_difference = scaled_norm(c.difference);
    c.cosine = scaled_cosine(c.a.context, c.b.context);
    const bool sizes_finite = std::all_of(c.a.moved_most.begin(), c.a.moved_most.end(), [](const Contribution& x) { return std::isfinite(x.size); }) &&
                              std::all_of(c.b.moved_most.begin(), c.b.moved_most.end(), [](const Contribution& x) { return std::isfinite(x.size); });
    if (!std::isfinite(c.norm_a) || !std::isfinite(c.norm_b) || !std::isfinite(c.norm_difference) || !sizes_finite)
        throw DataError(fmt::format("{}{}: the context vectors of \"{}\" are too large to compare: a length or their "
                                    "difference is beyond the double range; the input numbers are too large",
                                    a.origin, b.origin == a.origin ? "" : " and " + b.origin, printable(token)));
    return c;
}

}  // namespace attntrace
