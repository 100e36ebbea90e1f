#include "attention/compare.hpp"

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
    std::vector<std::string> hidden;
    for (Eigen::Index j = 0; j < weights_stage.col_count(); ++j)
        if (weights_stage.is_masked(in.position, j)) hidden.push_back(t.tokens[static_cast<std::size_t>(j)]);
    if (!hidden.empty())
        in.notes.push_back(fmt::format("{} mode hides the tokens after \"{}\" from it ({}): weight 0, no part in its context",
                                       to_string(t.mode), t.tokens[static_cast<std::size_t>(in.position)], bounded_list(hidden)));
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
        if (j == in.position || weights_stage.is_masked(in.position, j)) continue;
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
        throw DataError(fmt::format("the context vectors of \"{}\" are too large to compare: a length or their "
                                    "difference is beyond the double range; the input numbers are too large",
                                    printable(token)));
    return c;
}

}  // namespace attntrace
