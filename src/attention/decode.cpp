#include "attention/decode.hpp"

#include "attention/masks.hpp"
#include "core/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace attntrace {
namespace {

// The run's shape, read off the full trace.
struct Shape {
    Eigen::Index n = 0, d_in = 0, d_head = 0, d_v = 0;
    int heads = 1, kv_heads = 1;
    // The 1-based key/value head that 1-based query head h reads: ⌈h·G/H⌉ (attention/heads.hpp).
    int kv_head_of(int h) const { return (h * kv_heads + heads - 1) / heads; }
};

// y = x·W[:, first … first + count − 1], in the working precision T, one column at a time:
// y_c = Σ_i x_i · W(i, first + c), i in order.
template <typename T>
std::vector<T> project_row(const std::vector<T>& x, const Matrix& w, const Matrix* bias, Eigen::Index first,
                           Eigen::Index count) {
    std::vector<T> y(static_cast<std::size_t>(count), T(0));
    for (Eigen::Index c = 0; c < count; ++c) {
        T sum = bias ? static_cast<T>((*bias)(0, first + c)) : T(0);  // x·W + b
        for (Eigen::Index i = 0; i < w.rows(); ++i) sum += x[static_cast<std::size_t>(i)] * static_cast<T>(w(i, first + c));
        y[static_cast<std::size_t>(c)] = sum;
    }
    return y;
}

template <typename T>
std::vector<double> widened(const std::vector<T>& v) {
    return {v.begin(), v.end()};
}

// The growing cache of one key/value head in the working precision.
template <typename T>
struct CacheT {
    std::vector<std::vector<T>> keys, values;  // a row per token appended so far
};

// One query head's step: q against the whole cache, in four passes.
template <typename T>
DecodeHead attend_step(const std::vector<T>& q, const CacheT<T>& cache, const std::vector<bool>& padding, T divisor,
                       T temperature, bool scaled_at_all) {
    const std::size_t keys = cache.keys.size();
    std::vector<T> scores(keys), scaled(keys), weights(keys, T(0));
    // pass 1: a score per cached key, s_j = q · k_j, and s_j / divisor
    for (std::size_t j = 0; j < keys; ++j) {
        T dot = 0;
        for (std::size_t c = 0; c < q.size(); ++c) dot += q[c] * cache.keys[j][c];
        scores[j] = dot;
        scaled[j] = scaled_at_all ? dot / divisor : dot;
    }
    // pass 2: softmax of scaled / T over the visible keys (padding is hidden), the max subtracted first
    std::vector<T> tempered = scaled;
    if (temperature != T(1))
        for (T& t : tempered) t /= temperature;
    T max = -std::numeric_limits<T>::infinity();
    for (std::size_t j = 0; j < keys; ++j)
        if (!padding[j]) max = std::max(max, tempered[j]);
    std::vector<T> context(cache.values.front().size(), T(0));
    if (max != -std::numeric_limits<T>::infinity()) {  // a query that sees no key keeps weights 0
        T sum = 0;
        for (std::size_t j = 0; j < keys; ++j)
            if (!padding[j]) sum += weights[j] = std::exp(tempered[j] - max);
        for (T& w : weights) w /= sum;
        // pass 3: the context, Σ_j w_j · v_j
        for (std::size_t j = 0; j < keys; ++j)
            for (std::size_t c = 0; c < context.size(); ++c) context[c] += weights[j] * cache.values[j][c];
    }
    DecodeHead out;
    out.q = widened(q);
    out.scores = widened(scores);
    out.scaled = widened(scaled);
    for (std::size_t j = 0; j < keys; ++j)
        if (padding[j]) out.scaled[j] = -std::numeric_limits<double>::infinity();
    out.weights = widened(weights);
    out.context = widened(context);
    return out;
}

// The largest |a − b| over a row, and whether each is within `tolerance` of b's magnitude
// (an infinity must meet the same infinity).
struct Gap {
    double largest = 0;
    bool within = true;

    void add(double a, double b, double tolerance) {
        if (std::isinf(a) || std::isinf(b)) {
            within = within && a == b;
            return;
        }
        const double d = std::fabs(a - b);
        largest = std::max(largest, d);
        within = within && d <= tolerance * std::max(1.0, std::fabs(b));
    }
    void add(const std::vector<double>& a, const Stage& stage, Eigen::Index row, double tolerance) {
        for (std::size_t j = 0; j < a.size(); ++j) add(a[j], stage.data(row, static_cast<Eigen::Index>(j)), tolerance);
    }
};

// Padding tokens, as the trace's mask says: the last query sees every key the causal mask
// leaves it, so a key hidden from it is hidden as padding.
std::vector<bool> padding_of(const Trace& full, Eigen::Index n) {
    std::vector<bool> padding(static_cast<std::size_t>(n), false);
    const Stage& masked = full.at(StageId::masked, full.heads > 1 ? 1 : 0);
    if (masked.mask_reasons)
        for (Eigen::Index j = 0; j < n; ++j) padding[static_cast<std::size_t>(j)] = ((*masked.mask_reasons)(n - 1, j) & reason_padding) != 0;
    return padding;
}

template <typename T>
void run_steps(const Trace& full, const Shape& s, const DecodeOptions& options, Decode& out) {
    // What the projections read: the inputs, or after ln_1 each token's normalised vector
    // (a token's own numbers only, so the trace's row is the step's).
    const Stage* normed = full.find(StageId::layernorm);
    const Matrix& x_all = (normed ? *normed : full.at(StageId::inputs)).data;
    const Matrix& w_q = full.parameter("W_q").data;
    const Matrix& w_k = full.parameter("W_k").data;
    const Matrix& w_v = full.parameter("W_v").data;
    const auto bias = [&](std::string_view name) { return full.has_parameter(name) ? &full.parameter(name).data : nullptr; };
    const Matrix *b_q = bias("b_q"), *b_k = bias("b_k"), *b_v = bias("b_v");
    const std::vector<bool> padding = padding_of(full, s.n);
    const T divisor = static_cast<T>(full.scale);
    const T temperature = static_cast<T>(full.temperature);
    const bool scaled_at_all = full.scale_rule != ScaleRule::none;
    std::vector<CacheT<T>> caches(static_cast<std::size_t>(s.kv_heads));
    for (Eigen::Index i = 0; i < s.n; ++i) {
        std::vector<T> x(static_cast<std::size_t>(s.d_in));
        for (Eigen::Index c = 0; c < s.d_in; ++c) x[static_cast<std::size_t>(c)] = static_cast<T>(x_all(i, c));
        // The new token's key and value, appended to each key/value head's cache.
        Gap gap;
        for (int g = 1; g <= s.kv_heads; ++g) {
            CacheT<T>& cache = caches[static_cast<std::size_t>(g - 1)];
            cache.keys.push_back(project_row<T>(x, w_k, b_k, (g - 1) * s.d_head, s.d_head));
            cache.values.push_back(project_row<T>(x, w_v, b_v, (g - 1) * s.d_v, s.d_v));
            // one query head reading it, for the trace's keys and values stages
            const int h = s.heads > 1 ? (g - 1) * (s.heads / s.kv_heads) + 1 : 0;
            gap.add(widened(cache.keys.back()), full.at(StageId::keys, h), i, out.tolerance);
            gap.add(widened(cache.values.back()), full.at(StageId::values, h), i, out.tolerance);
        }
        if (i < options.prefill) {  // the prefill: keys and values only, compared all the same
            out.prefill_difference = std::max(out.prefill_difference, gap.largest);
            out.max_difference = std::max(out.max_difference, gap.largest);
            out.exact = out.exact && gap.largest == 0 && gap.within;
            out.all_match = out.all_match && gap.within;
            continue;
        }
        DecodeStep step;
        step.position = i + 1;
        step.token = out.tokens[static_cast<std::size_t>(i)];
        step.x = widened(x);
        step.cache_tokens = i + 1;
        step.cache_numbers = step.cache_tokens * s.kv_heads * (s.d_head + s.d_v);
        step.cache_bytes = step.cache_numbers * out.bytes_per_number;
        for (int head = 1; head <= s.heads; ++head) {
            const int g = s.kv_head_of(head);
            const std::vector<T> q = project_row<T>(x, w_q, b_q, (head - 1) * s.d_head, s.d_head);
            DecodeHead h = attend_step<T>(q, caches[static_cast<std::size_t>(g - 1)], padding, divisor, temperature,
                                          scaled_at_all);
            h.head = s.heads > 1 ? head : 0;
            h.kv_head = s.heads > 1 ? g : 0;
            const int id = h.head;  // the trace's stages are numbered so too (0 with one head)
            gap.add(h.q, full.at(StageId::queries, id), i, out.tolerance);
            gap.add(h.scores, full.at(StageId::scores, id), i, out.tolerance);
            gap.add(h.scaled, full.at(StageId::masked, id), i, out.tolerance);
            gap.add(h.weights, full.at(StageId::weights, id), i, out.tolerance);
            gap.add(h.context, full.at(StageId::context, id), i, out.tolerance);
            // the trace's keys after the query (the causal mask) carry weight 0
            const Stage& weights = full.at(StageId::weights, id);
            for (Eigen::Index j = i + 1; j < s.n; ++j) gap.add(0.0, weights.data(i, j), out.tolerance);
            step.heads.push_back(std::move(h));
        }
        step.max_difference = gap.largest;
        step.matches_full_trace = gap.within;
        out.all_match = out.all_match && gap.within;
        out.max_difference = std::max(out.max_difference, gap.largest);
        out.exact = out.exact && gap.largest == 0 && gap.within;
        out.dots_cached += (i + 1) * s.heads;
        out.dots_recomputed += (i + 1) * (i + 1) * s.heads;
        if (!options.step || *options.step == step.position) out.steps.push_back(std::move(step));
    }
    for (int g = 1; g <= s.kv_heads; ++g) {
        const CacheT<T>& cache = caches[static_cast<std::size_t>(g - 1)];
        KvCache kv{s.heads > 1 ? g : 0, Matrix(s.n, s.d_head), Matrix(s.n, s.d_v)};
        for (Eigen::Index j = 0; j < s.n; ++j) {
            for (Eigen::Index c = 0; c < s.d_head; ++c) kv.keys(j, c) = cache.keys[static_cast<std::size_t>(j)][static_cast<std::size_t>(c)];
            for (Eigen::Index c = 0; c < s.d_v; ++c) kv.values(j, c) = cache.values[static_cast<std::size_t>(j)][static_cast<std::size_t>(c)];
        }
        out.caches.push_back(std::move(kv));
    }
}

// Multi-head, this run's grouping (when it is one) and multi-query, for H heads.
std::vector<KvFootprint> footprints(const Shape& s, int bytes_per_number, std::int64_t tokens) {
    std::vector<std::pair<std::string_view, int>> layouts{{s.heads > 1 ? "multi-head" : "one head", s.heads}};
    if (s.kv_heads > 1 && s.kv_heads < s.heads) layouts.push_back({"grouped-query", s.kv_heads});
    if (s.heads > 1) layouts.push_back({"multi-query", 1});
    std::vector<KvFootprint> out;
    for (const auto& [name, g] : layouts) {
        KvFootprint f;
        f.layout = std::string(name);
        f.kv_heads = g;
        f.numbers_per_token = static_cast<std::int64_t>(g) * (s.d_head + s.d_v);
        f.bytes_per_token = kv_cache_bytes(g, s.d_head, s.d_v, bytes_per_number, 1);
        f.bytes = kv_cache_bytes(g, s.d_head, s.d_v, bytes_per_number, tokens);
        f.this_run = g == s.kv_heads;
        out.push_back(std::move(f));
    }
    return out;
}

}  // namespace

std::int64_t kv_cache_bytes(int kv_heads, std::int64_t d_head, std::int64_t d_v, int bytes_per_number,
                            std::int64_t tokens, int layers) {
    // Checked: d_head = 524288 and a --context of 2⁴⁰ would wrap round to a negative size.
    std::int64_t bytes = 0;
    if (__builtin_mul_overflow(static_cast<std::int64_t>(layers), static_cast<std::int64_t>(kv_heads), &bytes) ||
        __builtin_mul_overflow(bytes, d_head + d_v, &bytes) ||
        __builtin_mul_overflow(bytes, static_cast<std::int64_t>(bytes_per_number), &bytes) ||
        __builtin_mul_overflow(bytes, tokens, &bytes))
        throw DataError(fmt::format("the K/V cache of {} token{} ({} key/value head{} of {} + {} numbers, {} bytes each) "
                                    "would take more than 2^63 bytes, more than 64 bits count; give a smaller --context",
                                    tokens, tokens == 1 ? "" : "s", kv_heads, kv_heads == 1 ? "" : "s", d_head, d_v,
                                    bytes_per_number));
    return bytes;
}

Decode decode_steps(const Trace& full, const DecodeOptions& options) {
    Shape s;
    s.n = full.at(StageId::inputs).row_count();
    s.d_in = full.at(StageId::inputs).col_count();
    s.heads = full.heads;
    s.kv_heads = full.kv_heads;
    s.d_head = full.at(StageId::queries, s.heads > 1 ? 1 : 0).col_count();
    s.d_v = full.at(StageId::values, s.heads > 1 ? 1 : 0).col_count();
    if (s.n < 2)
        throw DataError(fmt::format("{}: decode needs at least 2 tokens, a prefill and one step; this input has {}",
                                    full.origin, s.n));
    if (options.prefill < 1 || options.prefill >= s.n)
        throw UsageError(fmt::format("--prefill {}: the prefill takes 1 to {} of the {} tokens, leaving at least one step",
                                     options.prefill, s.n - 1, s.n));
    if (options.step && (*options.step <= options.prefill || *options.step > s.n))
        throw UsageError(options.prefill + 1 == s.n
                             ? fmt::format("--step {}: the only step is position {} (after a prefill of {})", *options.step,
                                           s.n, options.prefill)
                             : fmt::format("--step {}: the steps are positions {} to {} (after a prefill of {})",
                                           *options.step, options.prefill + 1, s.n, options.prefill));
    if (options.context && *options.context < 1) throw UsageError("--context: give a number of tokens, 1 or more");
    Decode out;
    static_cast<RunHeader&>(out) = full;
    out.tokens = full.tokens.list();
    out.prefill = options.prefill;
    out.d_head = s.d_head;
    out.d_v = s.d_v;
    out.layernorm = full.find(StageId::layernorm) != nullptr;
    out.bias_q = full.has_parameter("b_q");
    out.bias_k = full.has_parameter("b_k");
    out.bias_v = full.has_parameter("b_v");
    out.bytes_per_number = full.dtype == Dtype::float32 ? 4 : 8;
    out.tolerance = full.dtype == Dtype::float32 ? 1e-5 : 1e-12;
    out.exact = out.all_match = true;
    out.total_steps = s.n - options.prefill;
    if (full.dtype == Dtype::float32) run_steps<float>(full, s, options, out);
    else run_steps<double>(full, s, options, out);
    out.context_tokens = options.context.value_or(s.n);
    try {
        out.footprint = footprints(s, out.bytes_per_number, out.context_tokens);
    } catch (const DataError& e) {
        throw DataError(fmt::format("{}: {}", full.origin, e.what()));
    }
    return out;
}

}  // namespace attntrace
