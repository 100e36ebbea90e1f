#include "attention/worked.hpp"

#include "attention/heads.hpp"
#include "attention/masks.hpp"
#include "attention/modes.hpp"
#include "attention/positions.hpp"
#include "core/stage.hpp"
#include "core/error.hpp"
#include "core/problem.hpp"
#include "util/suggest.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>

namespace attntrace {
namespace {

std::vector<double> row_of(const Stage& stage, Eigen::Index row) {
    const auto r = stage.data.row(row);
    return {r.begin(), r.end()};
}

std::vector<LabelledVector> labelled_rows(const Stage& stage, std::string_view symbol) {
    std::vector<LabelledVector> out;
    for (Eigen::Index j = 0; j < stage.row_count(); ++j)
        out.push_back({fmt::format("{}_{}", symbol, stage.rows[static_cast<std::size_t>(j)]), row_of(stage, j)});
    return out;
}

// e^x of each visible entry and their sum; none when one of them, or the sum, overflows
// the run's number type (float32 overflows near e^88.7, long before float64 does).
std::optional<std::vector<double>> plain_exps(const std::vector<double>& scores, const std::vector<bool>& allowed,
                                              Dtype dtype, double& sum) {
    const double largest = dtype == Dtype::float32 ? double{std::numeric_limits<float>::max()}
                                                   : std::numeric_limits<double>::max();
    const auto fits = [&](double x) { return std::isfinite(x) && x <= largest; };
    std::vector<double> exps(scores.size(), 0.0);
    sum = 0;
    for (std::size_t j = 0; j < scores.size(); ++j)
        if (allowed.empty() || allowed[j]) {
            exps[j] = std::exp(scores[j]);
            if (!fits(exps[j])) return std::nullopt;
            sum += exps[j];
        }
    if (!fits(sum)) return std::nullopt;
    return exps;
}

// Softmax written out over the visible entries of `scores`: as a learner computes it (e^s)
// and as attntrace does (e^(s − max)); and the other way to mask: softmax over every entry of
// `unmasked`, zero the hidden ones, divide by what is left.
void work_normalisation(WorkedExample& w, const std::vector<double>& scores,
                        const std::vector<double>& unmasked) {
    const auto visible = [&](std::size_t j) { return w.allowed.empty() || w.allowed[j]; };
    const std::size_t n = scores.size();
    if (w.normalization == Normalization::sum) {
        w.sum = 0;
        for (std::size_t j = 0; j < n; ++j)
            if (visible(j)) w.sum += scores[j];
        return;
    }
    w.exps_unshifted = plain_exps(scores, w.allowed, w.dtype, w.sum_unshifted);
    w.max = -std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < n; ++j)
        if (visible(j)) w.max = std::max(w.max, scores[j]);
    w.shifted.assign(n, -std::numeric_limits<double>::infinity());
    w.exps.assign(n, 0.0);
    w.sum = 0;
    for (std::size_t j = 0; j < n; ++j)
        if (visible(j)) {
            w.shifted[j] = scores[j] - w.max;
            w.exps[j] = std::exp(w.shifted[j]);
            w.sum += w.exps[j];
        }
    if (w.allowed.empty()) return;
    double all_max = -std::numeric_limits<double>::infinity(), all_sum = 0, kept = 0;
    for (const double s : unmasked) all_max = std::max(all_max, s);
    std::vector<double> all(n);
    for (std::size_t j = 0; j < n; ++j) all_sum += all[j] = std::exp(unmasked[j] - all_max);
    for (std::size_t j = 0; j < n; ++j) kept += visible(j) ? all[j] / all_sum : 0.0;
    w.zeroed_then_renormalised.assign(n, 0.0);
    if (kept > 0)
        for (std::size_t j = 0; j < n; ++j)
            if (visible(j)) w.zeroed_then_renormalised[j] = all[j] / all_sum / kept;
}

// Each entry ÷ T (the softmax temperature).
std::vector<double> divided(std::vector<double> values, double t) {
    for (double& v : values) v /= t;
    return values;
}

// The mask of the row (when the mode applies one, with why) and the normalisation after it.
void work_mask_and_weights(WorkedExample& w, const Stage& masked, std::string_view reason) {
    if (masked.applied) {
        const auto allowed = masked.allowed->row(w.row);
        w.allowed.assign(allowed.begin(), allowed.end());
        w.mask_reason = reason;
    }
    if (w.normalization == Normalization::softmax && w.temperature != 1) {
        w.tempered = divided(row_of(masked, w.row), w.temperature);
        work_normalisation(w, w.tempered, divided(w.scaled, w.temperature));
    } else {
        work_normalisation(w, row_of(masked, w.row), w.scaled);
    }
}

// `output` = `input`·W, column by column, with W the columns first … first + count − 1 of the
// trace's parameter `name` (all of them when count is 0).
// The bias that goes with a weight: b_q for W_q ("" for a weight without a subscript, W).
std::string bias_of(std::string_view weight) {
    return weight.starts_with("W_") ? "b_" + std::string(weight.substr(2)) : std::string();
}

WorkedProjection projection(const Trace& trace, const LabelledVector& input, const std::string& output,
                            std::string_view name, std::vector<double> result, Eigen::Index first = 0,
                            Eigen::Index count = 0) {
    const Matrix& m = trace.parameter(name).data;
    WorkedProjection out{output, input.label, std::string(name), input.values, {}, std::move(result), first, {}, {}};
    const Eigen::Index end = count ? first + count : m.cols();
    for (Eigen::Index k = first; k < end; ++k) {
        const auto column = m.col(k);
        out.columns.emplace_back(column.begin(), column.end());
    }
    // W_q's bias is b_q, W_o's b_o: added after the product, the same columns.
    const std::string bias = bias_of(name);
    if (!bias.empty() && trace.has_parameter(bias)) {
        const Matrix& b = trace.parameter(bias).data;
        out.bias_name = bias;
        for (Eigen::Index k = first; k < end; ++k) out.bias.push_back(b(0, k));
    }
    return out;
}

// The same, appended to the inputs as "output = input·W" too (the input is the last of them:
// x_i, or LN(x_i) after a layer normalisation).
void add_projection(WorkedExample& w, const Trace& trace, const std::string& output, std::string_view name,
                    std::vector<double> result, Eigen::Index first = 0, Eigen::Index count = 0) {
    const LabelledVector input = w.inputs.back();
    const std::string bias = bias_of(name);
    const std::string product =
        fmt::format("{}·{}{}", input.label, name, !bias.empty() && trace.has_parameter(bias) ? " + " + bias : "");
    const std::string label = output == product ? product : fmt::format("{} = {}", output, product);
    w.inputs.push_back({count ? fmt::format("{}, {}", label, columns_text(first, count)) : label, result});
    w.projections.push_back(projection(trace, input, output, name, std::move(result), first, count));
}

// How this run scaled its scores (the mode's own rule or --scale's).
void work_scale(WorkedExample& w, const Trace& trace, Eigen::Index d_k) {
    w.scale_rule = trace.scale_rule;
    w.scale_given = trace.scale_rule != mode_spec(trace.mode).default_scale() || trace.scale_rule == ScaleRule::value;
    w.divisor = trace.scale;
    if (trace.scale_rule == ScaleRule::sqrt) w.d_k = d_k;
}

// Position information for row i: the query's encoding (sinusoidal), or the rotation of its
// query and of the key it weighs most (RoPE; its own key when every key is masked).
WorkedPositions work_positions(const Trace& trace, const WorkedExample& w) {
    WorkedPositions p;
    p.scheme = trace.positions;
    p.position = trace.first_position + w.row;
    if (p.scheme == PositionScheme::sinusoidal) {
        p.embedding = row_of(trace.at(StageId::embeddings), w.row);
        p.encoding = row_of(trace.at(StageId::positions), w.row);
        const auto d = static_cast<Eigen::Index>(p.encoding.size());
        for (Eigen::Index i = 0; 2 * i < d; ++i) p.frequencies.push_back(sinusoid_frequency(i, d));
        return p;
    }
    const Stage& angles = trace.at(StageId::positions);
    for (Eigen::Index k = 0; k < angles.col_count(); ++k) p.frequencies.push_back(rotary_frequency(k, 2 * angles.col_count()));
    const auto rotation = [&](StageId before, StageId after, std::string_view symbol, Eigen::Index row, std::string why) {
        return WorkedRotation{fmt::format("{}_{}", symbol, trace.at(before, w.head).rows[static_cast<std::size_t>(row)]),
                              std::move(why), trace.first_position + row, row_of(angles, row),
                              row_of(trace.at(before, w.head), row), row_of(trace.at(after, w.head), row)};
    };
    p.rotations.push_back(rotation(StageId::queries, StageId::queries_rotated, "q", w.row, ""));
    const Eigen::Index top = trace.at(StageId::weights, w.head).strongest[static_cast<std::size_t>(w.row)];
    p.rotations.push_back(rotation(StageId::keys, StageId::keys_rotated, "k", top >= 0 ? top : w.row,
                                   top >= 0 ? "the key with the largest weight" : "the query's own key"));
    return p;
}

// Why the keys hidden from query `row` are hidden: one reason, or each reason with its keys
// ("with, one: they come after it …; <pad>: a padding token …").
std::string hidden_because(const Stage& masked, Eigen::Index row) {
    const auto because = [](std::uint8_t reasons) {
        std::vector<std::string> parts;
        if (reasons & reason_causal) parts.push_back("they come after it, and a causal model must not see the future");
        if (reasons & reason_window) parts.push_back("outside the sliding window");
        if (reasons & reason_padding) parts.push_back("padding, which stands for nothing");
        return fmt::format("{}", fmt::join(parts, "; and "));
    };
    std::vector<std::pair<std::uint8_t, std::vector<std::string>>> groups;  // in order of first key
    for (Eigen::Index j = 0; j < masked.col_count(); ++j) {
        const std::uint8_t r = (*masked.mask_reasons)(row, j);
        if (r == 0) continue;
        auto it = std::find_if(groups.begin(), groups.end(), [r](const auto& g) { return g.first == r; });
        if (it == groups.end()) it = groups.insert(groups.end(), {r, {}});
        it->second.push_back(masked.cols[static_cast<std::size_t>(j)]);
    }
    if (groups.size() == 1) return because(groups.front().first);
    std::vector<std::string> parts;
    for (const auto& [reasons, keys] : groups) parts.push_back(fmt::format("{}: {}", fmt::join(keys, ", "), because(reasons)));
    return fmt::format("{}", fmt::join(parts, "; "));
}

void work_single(WorkedExample& w, const Trace& trace) {
    const Eigen::Index i = w.row;
    const int h = w.head;  // 0 with one head
    const bool plain = !mode_spec(trace.mode).learned_projections;
    const bool rope = trace.positions == PositionScheme::rope;
    const Stage& keys = trace.at(rope ? StageId::keys_rotated : StageId::keys, h);
    const Stage& queries = trace.at(rope ? StageId::queries_rotated : StageId::queries, h);
    if (trace.positions != PositionScheme::none) w.positions = work_positions(trace, w);
    w.inputs.push_back({fmt::format("x_{}", w.query), row_of(trace.at(StageId::inputs), i)});
    if (const Stage* normed = trace.find(StageId::layernorm))  // ln_1: what the projections read
        w.inputs.push_back({fmt::format("LN(x_{})", w.query), row_of(*normed, i)});
    if (!plain) {
        const Eigen::Index d_head = queries.col_count();
        add_projection(w, trace, fmt::format("q_{}", w.query), "W_q", row_of(trace.at(StageId::queries, h), i),
                       h ? (h - 1) * d_head : 0, h ? d_head : 0);
    }
    for (Eigen::Index j = 0; j < keys.row_count(); ++j)
        w.dots.push_back({w.keys[static_cast<std::size_t>(j)], row_of(queries, i), row_of(keys, j),
                          trace.at(StageId::scores, h).data(i, j)});
    work_scale(w, trace, queries.col_count());
    w.scaled = row_of(trace.at(StageId::scaled, h), i);
    const Stage& masked = trace.at(StageId::masked, h);
    work_mask_and_weights(w, masked, masked.mask_reasons ? hidden_because(masked, i) : std::string());
    w.values = labelled_rows(trace.at(StageId::values, h), plain ? "x" : "v");
    // The heads' contexts side by side, mixed by W_o, for this token.
    if (const Stage* output = trace.find(StageId::output)) {
        const Stage* concat = trace.find(StageId::concat);
        const LabelledVector input{fmt::format("{}_{}", concat ? "concat" : "z", w.query),
                                   row_of(concat ? *concat : trace.at(StageId::context), i)};
        w.output = projection(trace, input, fmt::format("output_{}", w.query), "W_o", row_of(*output, i));
    }
}

void work_bahdanau(WorkedExample& w, const Trace& trace) {
    const Eigen::Index t = w.row;
    const Stage& decoder = trace.at(StageId::decoder_states);
    const Stage& encoder = trace.at(StageId::encoder_states);
    const Stage& projected_decoder = trace.at(StageId::projected_decoder);
    const Stage& scores = trace.at(StageId::scores);
    w.inputs.push_back({fmt::format("s_{}", w.query), row_of(decoder, t)});
    switch (trace.score) {
    case Score::additive: {
        add_projection(w, trace, fmt::format("s_{}·W_a", w.query), "W_a", row_of(projected_decoder, t));
        const Stage& projected_encoder = trace.at(StageId::projected_encoder);
        const auto v = trace.parameter("v_a").data.row(0);
        w.v_a.assign(v.begin(), v.end());
        for (Eigen::Index j = 0; j < encoder.row_count(); ++j) {
            WorkedAdditive a{w.keys[static_cast<std::size_t>(j)], row_of(projected_encoder, j), {}, {}, scores.data(t, j)};
            for (std::size_t k = 0; k < a.projected_key.size(); ++k) {
                a.sum.push_back(w.inputs.back().values[k] + a.projected_key[k]);
                a.features.push_back(std::tanh(a.sum.back()));
            }
            w.additive.push_back(std::move(a));
        }
        break;
    }
    case Score::dot:
    case Score::general:
        if (trace.score == Score::general) {
            add_projection(w, trace, fmt::format("s_{}·W", w.query), "W", row_of(projected_decoder, t));
        }
        for (Eigen::Index j = 0; j < encoder.row_count(); ++j)
            w.dots.push_back({w.keys[static_cast<std::size_t>(j)], w.inputs.back().values,
                              row_of(encoder, j), scores.data(t, j)});
        break;
    }
    work_scale(w, trace, 0);
    w.scaled = row_of(scores, t);
    work_mask_and_weights(w, trace.at(StageId::masked), "source.mask hides them");
    w.values = labelled_rows(encoder, "h");
}

}  // namespace

WorkedExample work_through(const Trace& trace, Eigen::Index row, int head) {
    if (trace.heads > 1 && (head < 1 || head > trace.heads))
        throw UsageError(fmt::format("--head {}: the heads are numbered 1 to {}", head, trace.heads));
    WorkedExample w;
    w.head = trace.heads > 1 ? head : 0;
    w.mode = trace.mode;
    w.score = trace.score;
    w.normalization = trace.normalization;
    w.temperature = trace.temperature;
    w.dtype = trace.dtype;
    w.row = row;
    const Stage& weights = trace.at(StageId::weights, w.head);
    w.query = weights.rows[static_cast<std::size_t>(row)];
    w.keys = weights.cols;
    if (mode_spec(trace.mode).reads_pair) work_bahdanau(w, trace);
    else work_single(w, trace);
    w.weights = row_of(weights, row);
    // The `tied` largest weights of the row, in key order.
    const auto r = static_cast<std::size_t>(row);
    if (weights.strongest[r] >= 0) {
        std::vector<std::size_t> order(w.weights.size());
        std::iota(order.begin(), order.end(), std::size_t{0});
        std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return w.weights[a] > w.weights[b]; });
        order.resize(static_cast<std::size_t>(weights.tied[r]));
        std::sort(order.begin(), order.end());
        for (const std::size_t j : order) w.strongest.push_back(w.keys[j]);
    }
    w.context = row_of(trace.at(StageId::context, w.head), row);
    return w;
}

WorkedProjection work_projection(const Trace& trace, StageId id, Eigen::Index row, int head) {
    const Stage& stage = trace.at(id, head);
    const std::string_view weight = id == StageId::queries ? "W_q" : id == StageId::keys ? "W_k" : "W_v";
    const std::string_view symbol = id == StageId::queries ? "q" : id == StageId::keys ? "k" : "v";
    const Stage* normed = trace.find(StageId::layernorm);  // ln_1: what the projections read
    const Stage& input = normed ? *normed : trace.at(StageId::inputs);
    const std::string& token = input.rows[static_cast<std::size_t>(row)];
    const LabelledVector x{normed ? fmt::format("LN(x_{})", token) : fmt::format("x_{}", token), row_of(input, row)};
    // With several heads each reads its own block of the columns (keys and values: its key/value head's).
    const int block = id == StageId::queries || stage.kv_head == 0 ? head : stage.kv_head;
    const Eigen::Index width = stage.col_count();
    const bool split = trace.heads > 1;
    return projection(trace, x, fmt::format("{}_{}", symbol, token), weight, row_of(stage, row),
                      split ? (block - 1) * width : 0, split ? width : 0);
}

void work_tiles(WorkedExample& w, Eigen::Index size, bool causal) {
    constexpr double minus_infinity = -std::numeric_limits<double>::infinity();
    const std::vector<double>& row = w.tempered.empty() ? w.scaled : w.tempered;  // what softmax reads
    const auto visible = [&](std::size_t j) { return w.allowed.empty() || w.allowed[j]; };
    const std::size_t n = row.size(), d_v = w.context.size(), b = static_cast<std::size_t>(size);
    w.tile_size = size;
    w.tiles_tolerance = w.dtype == Dtype::float32 ? 1e-5 : 1e-12;
    double m = minus_infinity, l = 0;
    std::vector<double> acc(d_v, 0.0);
    for (std::size_t first = 0; first < n; first += b) {
        WorkedTile t;
        t.first = static_cast<std::int64_t>(first);
        const std::size_t end = std::min(n, first + b);
        t.keys.assign(w.keys.begin() + static_cast<std::ptrdiff_t>(first), w.keys.begin() + static_cast<std::ptrdiff_t>(end));
        for (std::size_t j = first; j < end; ++j) t.scores.push_back(visible(j) ? row[j] : minus_infinity);
        t.m_before = t.m_after = m;
        t.l_before = t.l = l;
        t.accumulator_before = t.accumulator = acc;
        t.exps.assign(end - first, 0.0);
        t.tile_max = *std::max_element(t.scores.begin(), t.scores.end());
        t.skipped = causal && static_cast<std::int64_t>(first) > w.row;  // the streaming path never reads it
        t.hidden = !t.skipped && t.tile_max == minus_infinity;
        if (!t.skipped && !t.hidden) {
            // m grows to the tile's max; what came before is rescaled by e^(m_old − m_new)
            // (e^(−∞) = 0 on the first visible tile, where l and the accumulator are still 0).
            t.m_after = m = std::max(m, t.tile_max);
            t.rescale = std::exp(t.m_before - m);
            l *= t.rescale;
            for (double& a : acc) a *= t.rescale;
            for (std::size_t j = first; j < end; ++j) {
                if (!visible(j)) continue;
                const double e = t.exps[j - first] = std::exp(row[j] - m);
                l += e;
                for (std::size_t c = 0; c < d_v; ++c) acc[c] += e * w.values[j].values[c];
            }
            t.l = l;
            t.accumulator = acc;
        }
        w.tiles.push_back(std::move(t));
    }
    w.final_max = m;
    w.final_sum = l;
    w.tiled_weights.assign(n, 0.0);
    w.tiled_context.assign(d_v, 0.0);
    if (l > 0) {  // a row that sees no key keeps weights 0 and context 0, as the trace does
        for (std::size_t j = 0; j < n; ++j)
            if (visible(j)) w.tiled_weights[j] = std::exp(row[j] - m) / l;
        for (std::size_t c = 0; c < d_v; ++c) w.tiled_context[c] = acc[c] / l;
    }
    double largest = 0;
    bool within = true;
    const auto compare = [&](const std::vector<double>& a, const std::vector<double>& b2) {
        for (std::size_t k = 0; k < a.size(); ++k) {
            const double d = std::fabs(a[k] - b2[k]);
            largest = std::max(largest, d);
            within = within && d <= w.tiles_tolerance * std::max(1.0, std::fabs(b2[k]));
        }
    };
    compare(w.tiled_weights, w.weights);
    compare(w.tiled_context, w.context);
    w.tiles_difference = largest;
    w.matches_full_softmax = within;
}

Eigen::Index find_query_row(const std::vector<std::string>& tokens, const std::string& spec, std::string_view what) {
    for (std::size_t i = 0; i < tokens.size(); ++i)
        if (tokens[i] == spec) return static_cast<Eigen::Index>(i);
    // Ignoring case: the first token of one spelling; two spellings ("The", "the") are ambiguous.
    const std::string folded = fold_case(spec);
    std::vector<std::size_t> matches;
    for (std::size_t i = 0; i < tokens.size(); ++i)
        if (fold_case(tokens[i]) == folded &&
            std::none_of(matches.begin(), matches.end(), [&](std::size_t m) { return tokens[m] == tokens[i]; }))
            matches.push_back(i);
    if (matches.size() == 1) return static_cast<Eigen::Index>(matches.front());
    if (matches.size() > 1) {
        std::string found;
        for (std::size_t k = 0; k < matches.size() && k < 8; ++k)
            found += fmt::format("{}\"{}\" (position {})", k ? ", " : "", printable(tokens[matches[k]], 24), matches[k] + 1);
        throw UsageError(fmt::format("{}: \"{}\" matches {}{} when case is ignored; give one as spelled, or its position",
                                     what, printable(spec, 24), found, matches.size() > 8 ? ", …" : ""));
    }
    std::size_t position = 0;
    const char* end = spec.data() + spec.size();
    if (const auto [stop, error] = std::from_chars(spec.data(), end, position);
        error == std::errc() && stop == end && position >= 1 && position <= tokens.size())
        return static_cast<Eigen::Index>(position - 1);
    const auto near = likely_typo(spec, tokens.size(), [&](std::size_t i) { return std::string_view(tokens[i]); });
    throw UsageError(fmt::format("{}: \"{}\" is neither a token nor a position from 1 to {}{} "
                                 "(tokens: {})",
                                 what, printable(spec), tokens.size(),
                                 near ? fmt::format(" (did you mean {}?)", printable(*near, 24)) : "",
                                 bounded_list(tokens)));
}

}  // namespace attntrace
