// The decode in the text formats: a heading, a report per step and a summary (reports.hpp).
#include "render/number.hpp"
#include "render/reports.hpp"
#include "render/text.hpp"

#include <fmt/format.h>

#include <cmath>

namespace attntrace {
namespace {

std::string vector_text(const std::vector<double>& v, int digits) {
    std::string text = "[";
    for (std::size_t k = 0; k < v.size(); ++k) text += (k ? ", " : "") + format_compact(v[k], digits);
    return text + "]";
}

// "1,536": thousands separated, for counts of bytes and dot products.
std::string count_text(std::int64_t n) {
    std::string digits = std::to_string(n), out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

std::string plural(std::int64_t n, std::string_view one, std::string_view many) {
    return fmt::format("{} {}", count_text(n), n == 1 ? one : many);
}

// " (head 2)", " (key/value head 1)": empty with one head.
std::string head_suffix(int head, std::string_view kind = "head") {
    return head > 0 ? fmt::format(" ({} {})", kind, head) : "";
}

// "columns 3–4 of W_k" for head g's block of `width` columns, "W_k" with one head.
std::string block_of(std::string_view matrix, int head, std::int64_t width) {
    if (head == 0) return std::string(matrix);
    const std::int64_t first = (head - 1) * width + 1;
    return width == 1 ? fmt::format("column {} of {}", first, matrix)
                      : fmt::format("columns {}–{} of {}", first, first + width - 1, matrix);
}

// "b_k" with one head, "entries 3–4 of b_k" for head g's block of the bias.
std::string bias_block(std::string_view bias, int head, std::int64_t width) {
    if (head == 0) return std::string(bias);
    const std::int64_t first = (head - 1) * width + 1;
    return width == 1 ? fmt::format("entry {} of {}", first, bias)
                      : fmt::format("entries {}–{} of {}", first, first + width - 1, bias);
}

// "x·W_k", "LN(x)·columns 1–4 of W_k + entries 1–4 of b_k": what a step multiplies (the
// token's vector, or after ln_1 its normalised vector) by which block, and the bias it adds.
std::string projection_text(const Decode& d, std::string_view weight, std::string_view bias, bool has_bias, int head,
                            std::int64_t width) {
    return fmt::format("{}·{}{}", d.layernorm ? "LN(x)" : "x", block_of(weight, head, width),
                       has_bias ? " + " + bias_block(bias, head, width) : "");
}

// The largest difference in words: "0 (exactly)" or "1.1e-16".
std::string difference_text(double d) { return d == 0 ? "0, to the last bit" : fmt::format("{:.1e}", d); }

// What a step's comparison with the full trace found.
std::string match_line(const Decode& d, const DecodeStep& s) {
    if (!s.matches_full_trace)
        return fmt::format("this step differs from row {} of the full causal trace by up to {}, more than the {} tolerance "
                           "of {:.0e}",
                           s.position, difference_text(s.max_difference), to_string(d.dtype), d.tolerance);
    if (s.max_difference == 0)
        return fmt::format("this step's q, k, v, scores, weights and context equal row {} of the full causal trace "
                           "(every row at once, by matrix products): largest difference {}",
                           s.position, difference_text(0));
    return fmt::format("this step's q, k, v, scores, weights and context equal row {} of the full causal trace within "
                       "{:.0e} of their size: largest difference {}, not 0, because the step's plain loops and the "
                       "trace's matrix products (Eigen) round the same sums differently",
                       s.position, d.tolerance, difference_text(s.max_difference));
}

Stage cache_table(StageId id, const KvCache& cache, const Decode& d, std::int64_t tokens) {
    const bool keys = id == StageId::keys;
    const Matrix& m = keys ? cache.keys : cache.values;
    Stage stage;
    stage.id = id;
    stage.head = cache.kv_head;
    stage.title = fmt::format("The {} cache{} after appending {}_{}: a row per token so far", keys ? "key" : "value",
                              head_suffix(cache.kv_head, "key/value head"), keys ? "k" : "v",
                              d.tokens[static_cast<std::size_t>(tokens - 1)]);
    stage.formula = keys ? "K_cache = [k_1; …; k_i]" : "V_cache = [v_1; …; v_i]";
    stage.rows = std::vector<std::string>(d.tokens.begin(), d.tokens.begin() + tokens);
    std::vector<std::string> cols;
    for (Eigen::Index c = 0; c < m.cols(); ++c) cols.push_back(fmt::format("{}{}", keys ? "k" : "v", c + 1));
    stage.cols = std::move(cols);
    stage.data = m.topRows(tokens);
    return stage;
}

Stage attention_table(const DecodeHead& h, const Decode& d, std::int64_t tokens) {
    Stage stage;
    stage.id = StageId::weights;
    stage.head = h.head;
    // The divisor of the scores and the temperature, each named, so that --scale 0.5 and
    // --temperature 0.5 do not read alike.
    const std::string divisor = d.scale_rule == ScaleRule::none   ? ""
                                : d.scale_rule == ScaleRule::sqrt ? fmt::format(" / √d_head (√{})", d.d_head)
                                                                  : fmt::format(" / {} (--scale)", d.scale);
    stage.title = fmt::format("The new query against every cached key{}: score, scaled, weight",
                              h.head > 0 ? fmt::format(" of key/value head {}", h.kv_head) : "");
    const std::string scaled = "score = q·K_cacheᵀ, " + (d.scale_rule == ScaleRule::none ? std::string("scaled = score (--scale none)")
                                                                                          : "scaled = score" + divisor);
    stage.formula = d.temperature == 1 ? fmt::format("{}, weight = softmax(scaled)", scaled)
                                       : fmt::format("{}, weight = softmax(scaled / T) at T = {}", scaled, d.temperature);
    stage.rows = std::vector<std::string>{"score", "scaled", "weight"};
    stage.row_stages = {StageId::scores, StageId::scaled, StageId::weights};  // shaded each as its stage is
    stage.cols = std::vector<std::string>(d.tokens.begin(), d.tokens.begin() + tokens);
    stage.data.resize(3, tokens);
    BoolMatrix allowed = BoolMatrix::Constant(3, tokens, true);  // a padding key: scaled −∞, weight exactly 0
    for (Eigen::Index j = 0; j < tokens; ++j) {
        const auto k = static_cast<std::size_t>(j);
        stage.data(0, j) = h.scores[k];
        stage.data(1, j) = h.scaled[k];
        stage.data(2, j) = h.weights[k];
        allowed(1, j) = allowed(2, j) = !std::isinf(h.scaled[k]);
    }
    if (!allowed.all()) stage.allowed = std::move(allowed);
    return stage;
}

Report heading(const Decode& d, const RenderOptions& options) {
    Report r;
    const std::int64_t n = static_cast<std::int64_t>(d.tokens.size());
    // As the trace's heading: how the scores became weights (the temperature, a --scale
    // other than √d_head) when it is not the plain softmax.
    const std::string weighting = weighting_text(d);
    r.title = fmt::format("attntrace decode · causal mode · {} tokens · {} · {}{} · {}", n, dims_text(d.dims),
                          to_string(d.dtype), weighting == "softmax" ? "" : " · " + weighting, d.origin);
    if (!d.description.empty()) r.preamble.push_back(d.description);
    for (const auto& note : d.notes) r.preamble.push_back("note: " + note);
    const std::string first = d.prefill == 1 ? fmt::format("token 1 (\"{}\")", d.tokens.front())
                                             : fmt::format("tokens 1–{}", d.prefill);
    r.preamble.push_back(fmt::format(
        "prefill: {} go{} in at once and {} key{} and value{} fill the cache; then {}",
        first, d.prefill == 1 ? "es" : "", d.prefill == 1 ? "its" : "their", d.prefill == 1 ? "" : "s",
        d.prefill == 1 ? "" : "s",
        d.prefill + 1 == n ? fmt::format("one step, position {}", n)
                           : fmt::format("one step per token, positions {}–{}", d.prefill + 1, n)));
    r.preamble.push_back(fmt::format("the prefill's keys and values, projected token by token, equal {} of the full "
                                     "trace's K and V{}: largest difference {}",
                                     d.prefill == 1 ? std::string("row 1") : fmt::format("rows 1–{}", d.prefill),
                                     d.prefill_difference == 0 ? "" : fmt::format(" within {:.0e} of their size", d.tolerance),
                                     difference_text(d.prefill_difference)));
    if (options.explain)
        for (auto& line : decode_explanation(d)) r.preamble.push_back(std::move(line));
    return r;
}

Report step_report(const Decode& d, const DecodeStep& s, int digits) {
    Report r;
    // A step is named by its position, as --step names it: the steps are positions P + 1 … n.
    const std::int64_t n = static_cast<std::int64_t>(d.tokens.size());
    r.title = fmt::format("step {} ({}) · \"{}\" · the cache now holds {}", s.position,
                          d.prefill + 1 == n ? std::string("the only step")
                                             : fmt::format("of steps {}–{}", d.prefill + 1, n),
                          s.token, plural(s.cache_tokens, "token", "tokens"));
    r.preamble.push_back(d.layernorm ? fmt::format("LN(x_{}) = {}: the token's vector after ln_1, what the projections read",
                                                   s.token, vector_text(s.x, digits))
                                     : fmt::format("x_{} = {}", s.token, vector_text(s.x, digits)));
    for (const KvCache& cache : d.caches) {
        const auto row = [&](const Matrix& m) {
            const auto r = m.row(s.position - 1);
            return vector_text(std::vector<double>(r.begin(), r.end()), digits);
        };
        r.preamble.push_back(fmt::format("k_{} = {} = {}, v_{} = {} = {}: appended to the cache{}", s.token,
                                         projection_text(d, "W_k", "b_k", d.bias_k, cache.kv_head, d.d_head), row(cache.keys),
                                         s.token, projection_text(d, "W_v", "b_v", d.bias_v, cache.kv_head, d.d_v),
                                         row(cache.values),
                                         cache.kv_head > 0 ? fmt::format(" of key/value head {}", cache.kv_head) : ""));
    }
    for (const DecodeHead& h : s.heads)
        r.preamble.push_back(fmt::format("q_{}{} = {} = {}: used by this step only, not cached", s.token,
                                         head_suffix(h.head), projection_text(d, "W_q", "b_q", d.bias_q, h.head, d.d_head),
                                         vector_text(h.q, digits)));
    const std::int64_t kv = static_cast<std::int64_t>(d.caches.size());
    r.preamble.push_back(fmt::format("cache: {} × {} × ({} + {}) numbers = {}, {} in {}",
                                     plural(s.cache_tokens, "token", "tokens"),
                                     plural(kv, "key/value head", "key/value heads"), d.d_head, d.d_v,
                                     count_text(s.cache_numbers), plural(s.cache_bytes, "byte", "bytes"),
                                     to_string(d.dtype)));
    for (const KvCache& cache : d.caches) {
        r.tables.push_back(cache_table(StageId::keys, cache, d, s.cache_tokens));
        r.tables.push_back(cache_table(StageId::values, cache, d, s.cache_tokens));
    }
    for (const DecodeHead& h : s.heads) r.tables.push_back(attention_table(h, d, s.cache_tokens));
    for (const DecodeHead& h : s.heads)
        r.footer.push_back(fmt::format("z_{}{} = Σ weight × v = {}", s.token, head_suffix(h.head), vector_text(h.context, digits)));
    r.footer.push_back(match_line(d, s));
    r.footer.push_back(fmt::format("dot products of the query with keys{}: {} with the cache, against {} recomputing the "
                                   "prefix's scores without one ({}×{})",
                                   s.heads.size() > 1 ? ", per head" : "", count_text(s.position),
                                   count_text(s.position * s.position), s.position, s.position));
    return r;
}

Report summary_report(const Decode& d) {
    Report r;
    r.title = "decode summary";
    const bool one = d.total_steps == 1;
    const std::string steps = one ? "the one step equals its row" : fmt::format("all {} steps equal their rows", d.total_steps);
    r.preamble.push_back(
        d.exact       ? fmt::format("{} of the full causal trace to the last bit (largest difference 0)", steps)
        : d.all_match ? fmt::format("{} of the full causal trace within {:.0e} of {} size (largest difference {:.1e})",
                                    steps, d.tolerance, one ? "its" : "their", d.max_difference)
                      : fmt::format("{} its row of the full causal trace within {:.0e}: largest difference {:.1e}",
                                    one ? "the one step does not equal" : "not every step equals", d.tolerance,
                                    d.max_difference));
    const std::string per_head = d.heads > 1 ? fmt::format(", per head (the {} heads do {} times as many)", d.heads, d.heads) : "";
    r.preamble.push_back(fmt::format(
        "dot products of queries with keys over the {}{}: {} with the cache (i at step i) against {} recomputing the "
        "prefix's scores at every step (i² at step i), {:.1f} times as many",
        plural(d.total_steps, "step", "steps"), per_head, count_text(d.dots_cached / d.heads),
        count_text(d.dots_recomputed / d.heads),
        static_cast<double>(d.dots_recomputed) / static_cast<double>(d.dots_cached)));
    r.footer.push_back(fmt::format("keys and values per token and for {} (one layer; bytes = 2 · layers · H_kv · d_head · "
                                   "{} bytes · tokens{}):",
                                   plural(d.context_tokens, "token", "tokens"), d.bytes_per_number,
                                   d.d_head == d.d_v ? "" : fmt::format(", with d_head + d_v = {} + {} for 2 · d_head", d.d_head, d.d_v)));
    std::size_t width = 0;
    for (const KvFootprint& f : d.footprint) width = std::max(width, f.layout.size());
    for (const KvFootprint& f : d.footprint)
        r.footer.push_back(fmt::format("  {}  H_kv = {}: {} numbers, {} per token; {} for {}{}", pad_right(f.layout, width),
                                       f.kv_heads, count_text(f.numbers_per_token),
                                       plural(f.bytes_per_token, "byte", "bytes"), plural(f.bytes, "byte", "bytes"),
                                       plural(d.context_tokens, "token", "tokens"), f.this_run ? "  ← this run" : ""));
    return r;
}

}  // namespace

std::vector<std::string> decode_explanation(const Decode& d) {
    // k_j and v_j as this run computes them: from x_j or LN(x_j), with or without a bias.
    const std::string x = d.layernorm ? "LN(x_j)" : "x_j";
    const std::string k = fmt::format("k_j = {}·W_k{}", x, d.bias_k ? " + b_k" : "");
    const std::string v = fmt::format("v_j = {}·W_v{}", x, d.bias_v ? " + b_v" : "");
    const std::string alone = d.layernorm ? " (LN normalises each token's vector on its own)" : "";
    return {"why the query is not cached: q_i is used once, by step i, to score the cache; a later step scores with its "
            "own token's query, so q_i is dropped when its step ends",
            fmt::format("why the keys and values are: every later step compares its query with k_1 … k_i and mixes v_1 "
                        "… v_i. Here {} and {} depend on token j alone{}, so each is computed once, at its own step, and "
                        "kept",
                        k, v, alone),
            "why only causal attention: with the causal mask, row j uses tokens 1 … j only, so a new token changes no "
            "earlier row and nothing cached goes stale. Without the mask every earlier token would attend to the new one "
            "as well, every earlier row would change at each step, and the whole n×n computation would start again"};
}

std::vector<Report> decode_reports(const Decode& decode, const RenderOptions& options) {
    std::vector<Report> reports{heading(decode, options)};
    for (const DecodeStep& step : decode.steps) reports.push_back(step_report(decode, step, options.digits));
    reports.push_back(summary_report(decode));
    return reports;
}

}  // namespace attntrace
