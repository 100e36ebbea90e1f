#include "render/worked_text.hpp"

#include "attention/modes.hpp"

#include "render/number.hpp"
#include "render/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

namespace attntrace {
namespace {

// The words a worked example uses for its family's rows and what their weights mix.
struct FamilyWords {
    std::string_view row;         // "query"
    std::string_view context;     // "z": the name of the row's context, z_i
    std::string_view mixed;       // "values": what the context is the weighted sum of
    std::string_view mixed_one;   // "its value vector"
    std::string_view unscaled;    // why an unscaled score is not divided
};

FamilyWords family_words(Mode mode) {
    switch (family_of(mode)) {
    case ModeFamily::single_sequence:
        return {"query", "z", "values", "its value vector", "scaling: none (the simplified version uses raw dot products)"};
    case ModeFamily::encoder_decoder:
        return {"target", "c", "encoder states", "its encoder state", "scaling: none (the scores are used as they are)"};
    }
    unknown_family();
}

class Writer {
public:
    explicit Writer(int digits) : digits_(digits) {}

    std::string number(double value) const { return format_compact(value, digits_); }

    std::string vector(const std::vector<double>& values) const {
        std::string out = "[";
        for (std::size_t k = 0; k < values.size(); ++k) out += (k ? ", " : "") + number(values[k]);
        return out + "]";
    }

    // "a₁×b₁ + a₂×b₂ + …"; negative factors in parentheses so the signs read clearly.
    std::string products(const std::vector<double>& a, const std::vector<double>& b) const {
        std::string out;
        for (std::size_t k = 0; k < a.size(); ++k)
            out += fmt::format("{}{}×{}", k ? " + " : "", factor(a[k]), factor(b[k]));
        return out;
    }

    std::string factor(double value) const {
        const std::string text = number(value);
        return text.front() == '-' ? "(" + text + ")" : text;
    }

    void line(std::string text) { lines_.push_back(std::move(text)); }
    std::vector<std::string> take() { return std::move(lines_); }

private:
    int digits_;
    std::vector<std::string> lines_;
};

// Labels padded to one width so the "=" signs line up.
std::size_t widest(const std::vector<std::string>& labels) {
    std::size_t width = 0;
    for (const auto& label : labels) width = std::max(width, display_width(label));
    return width;
}

void write_scores(Writer& out, const WorkedExample& w) {
    const bool additive = !w.additive.empty();
    std::vector<std::string> names;
    for (const auto& key : w.keys) names.push_back(fmt::format("{}·{}", w.query, key));
    const std::size_t width = widest(names);
    if (additive) {
        out.line(fmt::format("scores: e = v_a · tanh(s·W_a + h_j·U_a), with v_a = {}", out.vector(w.v_a)));
        for (const auto& a : w.additive) {
            out.line(fmt::format("  {}: h·U_a = {}; tanh(s·W_a + h·U_a) = tanh({}) = {}", a.key, out.vector(a.projected_key),
                                 out.vector(a.sum), out.vector(a.features)));
            out.line(fmt::format("  {:>{}}  e = {} = {}", "", display_width(a.key), out.products(w.v_a, a.features),
                                 out.number(a.value)));
        }
        return;
    }
    out.line(w.positions && w.positions->scheme == PositionScheme::rope
                 ? "scores: the rotated query's dot product with every rotated key"
                 : "scores: the query's dot product with every key");
    for (std::size_t j = 0; j < w.dots.size(); ++j)
        out.line(fmt::format("  {} = {} = {}", pad_right(names[j], width),
                             out.products(w.dots[j].query, w.dots[j].key_vector), out.number(w.dots[j].value)));
}

// Each projected vector entry as the input row times a column of the matrix.
void write_projection(Writer& out, const WorkedProjection& p) {
    const auto first = static_cast<std::size_t>(p.first_column);
    const std::string plus = p.bias.empty() ? "" : fmt::format(", plus entry {} of {}", first == 0 ? "k" : fmt::format("{} + k", first), p.bias_name);
    if (first == 0)
        out.line(fmt::format("  entry k of {} is {} times column k of {}{}:", p.output, p.input_label, p.matrix, plus));
    else
        out.line(fmt::format("  entry k of {} is {} times column {} + k of {}{} (this head's columns):", p.output,
                             p.input_label, first, p.matrix, plus));
    for (std::size_t k = 0; k < p.columns.size(); ++k)
        out.line(fmt::format("  entry {} = {}{} = {}   (column {} of {}: {})", k + 1, out.products(p.input, p.columns[k]),
                             p.bias.empty() ? "" : " + " + (p.bias[k] < 0 ? "(" + out.number(p.bias[k]) + ")" : out.number(p.bias[k])), out.number(p.result[k]), first + k + 1,
                             p.matrix, out.vector(p.columns[k])));
}

void write_projections(Writer& out, const WorkedExample& w) {
    for (const auto& p : w.projections) write_projection(out, p);
}

// "where "journey" stands: position 1 (counted from 0)"
std::string standing(const WorkedExample& w) {
    const std::int64_t first = w.positions->position - w.row;
    return fmt::format("\"{}\" stands at position {} (counted from {})", w.query, w.positions->position, first);
}

// Sinusoidal positions: the query's embedding plus the encoding of its position, entry by entry.
void write_encoding(Writer& out, const WorkedExample& w) {
    const WorkedPositions& p = *w.positions;
    const std::size_t d = p.encoding.size();
    out.line(fmt::format("position encoding: {}; ω_i = 10000^(−2i/{}) = {}", standing(w), d, out.vector(p.frequencies)));
    out.line(fmt::format("  e_{} = {}", w.query, out.vector(p.embedding)));
    std::vector<std::string> terms;
    for (std::size_t k = 0; k < d; ++k)
        terms.push_back(fmt::format("{}({}×{})", k % 2 == 0 ? "sin" : "cos", p.position, out.number(p.frequencies[k / 2])));
    out.line(fmt::format("  pe_{} = [{}] = {}", w.query, fmt::join(terms, ", "), out.vector(p.encoding)));
    out.line(fmt::format("  x_{} = e_{} + pe_{} = {}", w.query, w.query, w.query, out.vector(w.inputs.front().values)));
}

// RoPE: each pair (k, k + h) of the vector turned by its angle φk.
void write_rotation(Writer& out, const WorkedRotation& r) {
    const std::size_t h = r.before.size() / 2;
    out.line(fmt::format("  {}{} at position {}: φ = {}", r.vector, r.why.empty() ? "" : fmt::format(" ({})", r.why),
                         r.position, out.vector(r.angles)));
    for (std::size_t k = 0; k < h; ++k) {
        const std::string angle = out.number(r.angles[k]);
        out.line(fmt::format("    pair {}: {}×cos({}) − {}×sin({}) = {};  {}×cos({}) + {}×sin({}) = {}", k + 1,
                             out.factor(r.before[k]), angle, out.factor(r.before[k + h]), angle, out.number(r.after[k]),
                             out.factor(r.before[k + h]), angle, out.factor(r.before[k]), angle, out.number(r.after[k + h])));
    }
    out.line(fmt::format("    RoPE({}) = {}", r.vector, out.vector(r.after)));
}

void write_rotations(Writer& out, const WorkedExample& w) {
    if (!w.positions || w.positions->scheme != PositionScheme::rope) return;
    const WorkedPositions& p = *w.positions;
    const std::size_t h = p.frequencies.size();
    out.line(fmt::format("RoPE: {}; pair k, numbers k and k + {}, turns by φk = p·θ_k, θ_k = 10000^(−2(k−1)/{}) = {}",
                         standing(w), h, 2 * h, out.vector(p.frequencies)));
    for (const auto& r : p.rotations) write_rotation(out, r);
}

// Several heads: the token's output row from the heads' contexts and W_o.
void write_output(Writer& out, const WorkedExample& w) {
    if (!w.output) return;
    out.line(fmt::format("{} = {} = {}", w.output->input_label, w.head ? "the heads' context rows side by side" : "the context row",
                         out.vector(w.output->input)));
    out.line(fmt::format("{} = {}·W_o{} = {}", w.output->output, w.output->input_label,
                         w.output->bias.empty() ? "" : " + " + w.output->bias_name, out.vector(w.output->result)));
    write_projection(out, *w.output);
}

// Every key's division, or only key `only`'s.
void write_scaling(Writer& out, const WorkedExample& w, std::optional<std::size_t> only = std::nullopt) {
    const std::vector<double> scores = w.additive.empty() ? [&] {
        std::vector<double> v;
        for (const auto& d : w.dots) v.push_back(d.value);
        return v;
    }() : [&] {
        std::vector<double> v;
        for (const auto& a : w.additive) v.push_back(a.value);
        return v;
    }();
    switch (w.scale_rule) {
    case ScaleRule::none:
        out.line(std::string(w.scale_given ? std::string_view("scaling: none (--scale none; the Transformer divides by √d_k)")
                                           : family_words(w.mode).unscaled));
        return;
    case ScaleRule::sqrt:
        out.line(fmt::format("scaling: each score ÷ √{} = ÷ √{} = ÷ {}", w.head ? "d_head" : "d_k", *w.d_k,
                             out.number(w.divisor)));
        break;
    case ScaleRule::value:
        out.line(fmt::format("scaling: each score ÷ {} (--scale)", out.number(w.divisor)));
        break;
    }
    for (std::size_t j = 0; j < scores.size(); ++j)
        if (!only || *only == j)
            out.line(fmt::format("  {} ÷ {} = {}", out.number(scores[j]), out.number(w.divisor), out.number(w.scaled[j])));
}

// Softmax at a temperature: the scores ÷ T first.
void write_temperature(Writer& out, const WorkedExample& w) {
    if (w.tempered.empty()) return;
    out.line(fmt::format("temperature: each score ÷ T = ÷ {} ({})", out.number(w.temperature),
                         w.temperature < 1 ? "T < 1 widens the gaps: sharper weights" : "T > 1 narrows the gaps: flatter weights"));
    const auto visible = [&](std::size_t j) { return w.allowed.empty() || w.allowed[j]; };
    for (std::size_t j = 0; j < w.keys.size(); ++j)
        if (visible(j))
            out.line(fmt::format("  {} ÷ {} = {}", out.number(w.scaled[j]), out.number(w.temperature), out.number(w.tempered[j])));
}

void write_mask(Writer& out, const WorkedExample& w) {
    if (w.allowed.empty()) {
        out.line("mask: none, every key is visible");
        return;
    }
    std::vector<std::string> hidden;
    for (std::size_t j = 0; j < w.keys.size(); ++j)
        if (!w.allowed[j]) hidden.push_back(w.keys[j]);
    if (hidden.empty())
        out.line("mask: no key is hidden from this query");
    else
        out.line(fmt::format("mask: {} excluded ({}): score −∞, weight exactly 0", fmt::join(hidden, ", "),
                             w.mask_reason));
}

void write_weights(Writer& out, const WorkedExample& w) {
    const auto visible = [&](std::size_t j) { return w.allowed.empty() || w.allowed[j]; };
    if (!w.allowed.empty() && std::none_of(w.allowed.begin(), w.allowed.end(), [](bool a) { return a; })) {
        out.line("weights: every key is masked, so every weight is 0 (nothing is divided by a zero sum)");
        return;
    }
    const std::size_t width = widest(w.keys);
    const std::vector<double>& scores = w.tempered.empty() ? w.scaled : w.tempered;
    if (w.normalization == Normalization::sum && !(w.sum > 0 && std::isfinite(w.sum))) {
        // Only a padding row gets here (any other row with such a sum is refused): left at 0.
        out.line(fmt::format("weights: the visible scores sum to {}, which cannot divide them; this padding row stands "
                             "for nothing, so its weights are left 0, not divided (see the note)",
                             out.number(w.sum)));
        return;
    }
    if (w.normalization == Normalization::sum) {
        out.line(fmt::format("weights: each score ÷ their sum {}", out.number(w.sum)));
        for (std::size_t j = 0; j < w.keys.size(); ++j)
            out.line(visible(j) ? fmt::format("  {}  {} ÷ {} = {}", pad_right(w.keys[j], width), out.number(scores[j]),
                                              out.number(w.sum), out.number(w.weights[j]))
                                : fmt::format("  {}  excluded: 0", pad_right(w.keys[j], width)));
        return;
    }
    const std::string s = w.tempered.empty() ? "s" : "(s/T)";
    if (w.exps_unshifted) {
        const auto& e = *w.exps_unshifted;
        out.line(fmt::format("softmax: e^{} of each score, divided by their sum", s));
        for (std::size_t j = 0; j < w.keys.size(); ++j)
            out.line(visible(j) ? fmt::format("  {}  exp({}) = {}", pad_right(w.keys[j], width), out.number(scores[j]),
                                              out.number(e[j]))
                                : fmt::format("  {}  excluded: exp(−∞) = 0", pad_right(w.keys[j], width)));
        out.line(fmt::format("  sum = {}", out.number(w.sum_unshifted)));
        for (std::size_t j = 0; j < w.keys.size(); ++j)
            if (visible(j))
                out.line(fmt::format("  {}  {} ÷ {} = {}", pad_right(w.keys[j], width), out.number(e[j]),
                                     out.number(w.sum_unshifted), out.number(w.weights[j])));
        out.line(fmt::format("  the same weights with the row max {} subtracted first, which is how attntrace computes "
                             "them: e^(−max) multiplies every term and cancels in the division; it only keeps e^x from "
                             "overflowing when scores are large",
                             out.number(w.max)));
    } else {
        out.line(fmt::format("softmax: e^{} would overflow for scores this large ({}), so subtract the row max {} "
                             "first: e^(−max) multiplies every term and cancels in the division",
                             s,
                             w.dtype == Dtype::float32 ? "this run is float32, and e^89 is beyond the largest float32"
                                                       : "e^710 is beyond the largest double",
                             out.number(w.max)));
    }
    for (std::size_t j = 0; j < w.keys.size(); ++j)
        out.line(visible(j) ? fmt::format("  {}  exp({} − {}) = exp({}) = {}", pad_right(w.keys[j], width),
                                          out.number(scores[j]), out.factor(w.max), out.number(w.shifted[j]),
                                          out.number(w.exps[j]))
                            : fmt::format("  {}  excluded: exp(−∞) = 0", pad_right(w.keys[j], width)));
    out.line(fmt::format("  sum = {}", out.number(w.sum)));
    for (std::size_t j = 0; j < w.keys.size(); ++j)
        if (visible(j))
            out.line(fmt::format("  {}  {} ÷ {} = {}", pad_right(w.keys[j], width), out.number(w.exps[j]),
                                 out.number(w.sum), out.number(w.weights[j])));
    if (!w.zeroed_then_renormalised.empty()) {
        double gap = 0;
        for (std::size_t j = 0; j < w.weights.size(); ++j)
            gap = std::max(gap, std::abs(w.weights[j] - w.zeroed_then_renormalised[j]));
        out.line(fmt::format("  the other way to mask: softmax over all keys, set the excluded to 0, "
                             "divide by what is left: {} (largest difference {:.1e}: the same weights)",
                             out.vector(w.zeroed_then_renormalised), gap));
    }
}

// The key or keys with the largest weight.
void write_strongest(Writer& out, const WorkedExample& w) {
    if (w.strongest.empty()) return;
    const auto top = std::max_element(w.weights.begin(), w.weights.end());
    if (w.strongest.size() == 1)
        out.line(fmt::format("largest weight: {} on {}", out.number(*top), w.strongest.front()));
    else
        out.line(fmt::format("largest weight: {} on each of {} ({} tied)", out.number(*top), fmt::join(w.strongest, ", "),
                             w.strongest.size()));
}

void write_context(Writer& out, const WorkedExample& w) {
    const FamilyWords words = family_words(w.mode);
    const std::string name = fmt::format("{}_{}", words.context, w.query);
    out.line(fmt::format("context: the weighted sum of the {}", words.mixed));
    const std::string indent(display_width(name), ' ');
    for (std::size_t j = 0; j < w.values.size(); ++j)
        out.line(fmt::format("  {} {} {}×{}", j == 0 ? name : indent, j == 0 ? "=" : "+",
                             out.number(w.weights[j]), out.vector(w.values[j].values)));
    out.line(fmt::format("  {} = {}", indent, out.vector(w.context)));
}

// "−∞" or the number.
std::string running(const Writer& out, double value) { return std::isinf(value) ? "−∞" : out.number(value); }

// The largest |a_k − b_k|.
double largest_gap(const std::vector<double>& a, const std::vector<double>& b) {
    double largest = 0;
    for (std::size_t k = 0; k < a.size() && k < b.size(); ++k) largest = std::max(largest, std::fabs(a[k] - b[k]));
    return largest;
}

// Why the tiles' numbers differ from the full row's in their last bits, from what this row
// did: a float32 trace against the tiles' float64, the rescales that happened (a later tile
// raising m; e^0 = 1 and the first tile's e^(−∞) = 0 round nothing), and the context divided
// by l once at the end where the trace multiplies weights already divided by their sum.
std::string tiles_rounding(const WorkedExample& w) {
    if (w.dtype == Dtype::float32)
        return "the full trace computed this row in float32, the tiles compute it in float64 from the same scores";
    std::size_t rescales = 0;
    for (const WorkedTile& t : w.tiles)
        if (!t.skipped && !t.hidden && std::isfinite(t.m_before) && t.rescale != 1) ++rescales;
    const double weights = largest_gap(w.tiled_weights, w.weights), context = largest_gap(w.tiled_context, w.context);
    std::vector<std::string> causes;
    if (weights > 0)
        causes.push_back(rescales > 0 ? fmt::format("the weights went through {} rescale{} by e^(m_old − m_new), each "
                                                    "rounded (largest difference {:.1e})",
                                                    rescales, rescales == 1 ? "" : "s", weights)
                                      : fmt::format("the weights' sum l was added in another order (largest "
                                                    "difference {:.1e})",
                                                    weights));
    if (context > 0)
        causes.push_back(fmt::format("the context is the accumulator ÷ l, where the full trace multiplies the values by "
                                     "weights already divided by their sum, a matrix product that rounds in its own order "
                                     "(largest difference {:.1e}{})",
                                     context, weights == 0 ? "; the weights are the same to the last bit" : ""));
    std::string text;
    for (std::size_t k = 0; k < causes.size(); ++k) text += (k ? "; " : "") + causes[k];
    return text;
}

// The same row by the online softmax, a tile of keys at a time (--tiles).
void write_tiles(Writer& out, const WorkedExample& w) {
    if (w.tile_size == 0) return;
    const std::string s = w.tempered.empty() ? "s" : "s/T";
    out.line(fmt::format("online softmax in tiles of {} key{}: the streaming path's way through this row, never holding "
                         "all its weights at once; m is the largest {} so far, l = Σ e^({} − m) and the accumulator "
                         "Σ e^({} − m)·v over the keys so far",
                         w.tile_size, w.tile_size == 1 ? "" : "s", s, s, s));
    for (std::size_t t = 0; t < w.tiles.size(); ++t) {
        const WorkedTile& tile = w.tiles[t];
        const auto first = static_cast<std::size_t>(tile.first);
        out.line(fmt::format("  tile {} · {} · scores {}", t + 1, fmt::join(tile.keys, ", "), [&] {
            std::string text = "[";
            for (std::size_t k = 0; k < tile.scores.size(); ++k) text += (k ? ", " : "") + running(out, tile.scores[k]);
            return text + "]";
        }()));
        if (tile.skipped) {
            out.line("    skipped: every key comes after the query, so the causal mask hides them all and the tile is "
                     "never read");
            continue;
        }
        if (tile.hidden) {
            out.line(fmt::format("    every key is hidden by the mask: m, l and the accumulator stay as they were (m = {}, "
                                 "l = {}); {}",
                                 running(out, tile.m_before), out.number(tile.l),
                                 std::isinf(tile.m_before)
                                     ? "nothing is rescaled: with no key seen yet, e^(m_old − m_new) would be e^(−∞ + ∞), "
                                       "which is no number"
                                     : "the tile's max, −∞, does not raise m, so the rescale would be e^0 = 1"));
            continue;
        }
        out.line(fmt::format("    tile max {}; m: {} → {}; rescale e^(m_old − m_new) = {}", out.number(tile.tile_max),
                             running(out, tile.m_before), out.number(tile.m_after),
                             std::isinf(tile.m_before) ? "e^(−∞) = 0 (nothing before)" : out.number(tile.rescale)));
        std::string terms, mixes;
        for (std::size_t k = 0; k < tile.keys.size(); ++k) {
            if (std::isinf(tile.scores[k])) continue;
            terms += fmt::format(" + e^({} − {})", out.number(tile.scores[k]), out.factor(tile.m_after));
            mixes += fmt::format(" + {}×{}", out.number(tile.exps[k]), out.vector(w.values[first + k].values));
        }
        out.line(fmt::format("    l = {}×{}{} = {}", out.number(tile.rescale), out.number(tile.l_before), terms,
                             out.number(tile.l)));
        out.line(fmt::format("    accumulator = {}×{}{} = {}", out.number(tile.rescale), out.vector(tile.accumulator_before),
                             mixes, out.vector(tile.accumulator)));
    }
    if (w.final_sum == 0) {
        out.line("  end: no key was seen, so the weights and the context stay 0, as in the full trace");
    } else {
        out.line(fmt::format("  end: weights e^({} − m)/l with m = {}, l = {}: {}", s, out.number(w.final_max),
                             out.number(w.final_sum), out.vector(w.tiled_weights)));
        out.line(fmt::format("       context = accumulator ÷ l = {}", out.vector(w.tiled_context)));
    }
    if (!w.matches_full_softmax)
        out.line(fmt::format("  these differ from the full softmax row above by up to {:.1e}, more than the tolerance {:.0e}",
                             w.tiles_difference, w.tiles_tolerance));
    else if (w.tiles_difference == 0)
        out.line("  the same weights and context as the full softmax row above, to the last bit (largest difference 0)");
    else
        out.line(fmt::format("  the same weights and context as the full softmax row above within {:.0e} of their size: "
                             "largest difference {:.1e}, not 0: {}",
                             w.tiles_tolerance, w.tiles_difference, tiles_rounding(w)));
}

// One key's score: its dot product, or its additive score with the tanh features.
void write_score_of(Writer& out, const WorkedExample& w, std::size_t j) {
    if (!w.additive.empty()) {
        const WorkedAdditive& a = w.additive[j];
        out.line(fmt::format("score of {}: e = v_a · tanh(s·W_a + h·U_a), with s_{}·W_a = {} and v_a = {}", a.key, w.query,
                             out.vector(w.inputs.back().values), out.vector(w.v_a)));
        out.line(fmt::format("  h_{}·U_a = {}; tanh(s·W_a + h·U_a) = tanh({}) = {}", a.key, out.vector(a.projected_key),
                             out.vector(a.sum), out.vector(a.features)));
        out.line(fmt::format("  e = {} = {}", out.products(w.v_a, a.features), out.number(a.value)));
        return;
    }
    const WorkedDot& d = w.dots[j];
    out.line(fmt::format("score: {} · {}, entry by entry", w.query, d.key));
    out.line(fmt::format("  {}·{} = {} = {}", w.query, d.key, out.products(d.query, d.key_vector), out.number(d.value)));
}

// The masking of key `j` in the row: what the mask does to the row, then to this entry.
void write_mask_of(Writer& out, const WorkedExample& w, std::size_t j) {
    write_mask(out, w);
    const bool visible = w.allowed.empty() || w.allowed[j];
    out.line(visible ? fmt::format("  {} is visible, so its entry keeps the scaled score {}", w.keys[j], out.number(w.scaled[j]))
                     : fmt::format("  {} is excluded, so its entry is −∞", w.keys[j]));
}

// Entry k of the context: the row's weights times entry k of each value vector.
void write_context_entry(Writer& out, const WorkedExample& w, std::size_t k) {
    out.line(fmt::format("context entry {}: each weight times entry {} of {}, summed", k + 1, k + 1,
                         family_words(w.mode).mixed_one));
    std::vector<double> entries;
    for (const auto& v : w.values) entries.push_back(v.values[k]);
    out.line(fmt::format("  {} = {}", out.products(w.weights, entries), out.number(w.context[k])));
}

// Entry k of the output row: the context row (the heads' side by side) times column k of W_o.
void write_output_entry(Writer& out, const WorkedExample& w, std::size_t k) {
    const WorkedProjection& p = *w.output;
    out.line(fmt::format("{} = {} = {}", p.input_label, w.head ? "the heads' context rows side by side" : "the context row",
                         out.vector(p.input)));
    out.line(fmt::format("  entry {} of {} = {} times column {} of {} {}{}", k + 1, p.output, p.input_label, k + 1, p.matrix,
                         out.vector(p.columns[k]), p.bias.empty() ? "" : ", plus entry " + std::to_string(k + 1) + " of " + p.bias_name));
    out.line(fmt::format("  = {}{} = {}", out.products(p.input, p.columns[k]),
                         p.bias.empty() ? "" : " + " + out.factor(p.bias[k]), out.number(p.result[k])));
}

}  // namespace

std::vector<std::string> worked_lines(const WorkedExample& w, int digits) {
    Writer out(digits);
    out.line(fmt::format("worked example · {} \"{}\" (row {}) · {} mode{}", family_words(w.mode).row,
                         w.query, w.row + 1, to_string(w.mode), w.head ? fmt::format(" · head {}", w.head) : ""));
    const bool encoded = w.positions && w.positions->scheme == PositionScheme::sinusoidal;
    if (encoded) write_encoding(out, w);
    for (std::size_t k = encoded ? 1 : 0; k < w.inputs.size(); ++k)  // x_i, when encoded, closes the encoding's lines
        out.line(fmt::format("{} = {}", w.inputs[k].label, out.vector(w.inputs[k].values)));
    write_projections(out, w);
    write_rotations(out, w);
    write_scores(out, w);
    write_scaling(out, w);
    write_mask(out, w);
    write_temperature(out, w);
    write_weights(out, w);
    write_strongest(out, w);
    write_context(out, w);
    write_tiles(out, w);
    write_output(out, w);
    return out.take();
}

std::vector<std::string> worked_entry_lines(const WorkedExample& w, StageId stage, std::size_t col, int digits) {
    Writer out(digits);
    switch (stage) {
    case StageId::scores: write_score_of(out, w, col); break;
    case StageId::scaled:
        write_score_of(out, w, col);
        write_scaling(out, w, col);
        break;
    case StageId::masked: write_mask_of(out, w, col); break;
    case StageId::weights:
        write_mask(out, w);
        write_temperature(out, w);
        write_weights(out, w);
        break;
    case StageId::context: write_context_entry(out, w, col); break;
    case StageId::output:
        if (w.output) write_output_entry(out, w, col);
        break;
    default: break;
    }
    return out.take();
}

std::vector<std::string> projection_lines(const WorkedProjection& projection, int digits) {
    Writer out(digits);
    write_projection(out, projection);
    return out.take();
}

bool worked_stage(StageId id) {
    return id == StageId::scores || id == StageId::scaled || id == StageId::masked || id == StageId::weights ||
           id == StageId::context || id == StageId::output;
}

std::vector<std::vector<std::string>> row_arithmetic(const Trace& trace, const Stage& stage, Eigen::Index row, int head,
                                                     int digits) {
    const auto cols = static_cast<std::size_t>(stage.data.cols());
    std::vector<std::vector<std::string>> cells(cols);
    if (worked_stage(stage.id)) {
        const WorkedExample w = work_through(trace, row, head);
        for (std::size_t c = 0; c < cols; ++c) cells[c] = worked_entry_lines(w, stage.id, c, digits);
    } else if ((stage.id == StageId::queries || stage.id == StageId::keys || stage.id == StageId::values) &&
               trace.mode != Mode::plain) {
        const auto lines = projection_lines(work_projection(trace, stage.id, row, stage.head), digits);
        for (std::size_t c = 0; c < cols && !lines.empty(); ++c) {
            const std::string entry = fmt::format("entry {} =", c + 1);  // this column's line, after the first
            const auto line = std::find_if(lines.begin() + 1, lines.end(),
                                           [&](const std::string& l) { return l.find(entry) != std::string::npos; });
            cells[c] = line == lines.end() ? lines : std::vector<std::string>{lines.front(), *line};
        }
    }
    return cells;
}

}  // namespace attntrace
