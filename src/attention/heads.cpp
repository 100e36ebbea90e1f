#include "attention/heads.hpp"

#include "core/error.hpp"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace attntrace {
namespace {

// "1, 2 or 4": the divisors of n, the counts that split it evenly.
std::string divisors_text(Eigen::Index n) {
    std::vector<std::string> out;
    for (Eigen::Index d = 1; d <= n && out.size() < 12; ++d)
        if (n % d == 0) out.push_back(std::to_string(d));
    std::string text;
    for (std::size_t i = 0; i < out.size(); ++i) text += (i == 0 ? "" : i + 1 == out.size() ? " or " : ", ") + out[i];
    return text;
}

[[noreturn]] void refuse(bool option, const std::string& message) {
    if (option) throw UsageError(message);
    throw DataError(message);
}

}  // namespace

HeadCounts head_counts(const SingleSequenceInput& input, const TraceOptions& options, const std::string& origin) {
    HeadCounts c;
    c.from_options = options.heads.has_value();
    c.kv_from_options = options.kv_heads.has_value();
    c.heads = options.heads.value_or(input.heads.value_or(1));
    c.kv_heads = options.kv_heads.value_or(input.kv_heads.value_or(c.heads));
    if (c.heads % c.kv_heads != 0) {
        const std::string kv = c.kv_from_options ? fmt::format("--kv-heads {}", c.kv_heads)
                                                 : fmt::format("{}: /kv_heads {}", origin, c.kv_heads);
        refuse(c.kv_from_options || c.from_options,
               fmt::format("{} does not divide the {} heads: each key/value head serves an equal group of query heads "
                           "(choose {})",
                           kv, c.heads, divisors_text(c.heads)));
    }
    return c;
}

HeadLayout head_layout(const Projections& w, const HeadCounts& counts, const std::string& origin) {
    HeadLayout l;
    l.heads = counts.heads;
    l.kv_heads = counts.kv_heads;
    l.d_model = w.query.cols();
    const std::string heads = counts.from_options ? fmt::format("--heads {}", l.heads) : fmt::format("{} heads", l.heads);
    if (l.d_model % l.heads != 0)
        refuse(counts.from_options,
               fmt::format("{}: /weights/query has {} columns (d_model), which do not split into {} of equal size; "
                           "the number of heads must divide d_model ({})",
                           origin, l.d_model, heads, divisors_text(l.d_model)));
    l.d_head = l.d_model / l.heads;
    const Eigen::Index kv_columns = l.kv_heads * l.d_head;
    if (w.key.cols() != kv_columns)
        refuse(counts.from_options || counts.kv_from_options,
               fmt::format("{}: /weights/key has {} columns, but {} key/value head{}{} of d_head = {} (d_model {} ÷ {}) "
                           "need{} {}",
                           origin, w.key.cols(), l.kv_heads, l.kv_heads == 1 ? "" : "s",
                           counts.kv_from_options ? fmt::format(" (--kv-heads {})", l.kv_heads) : "", l.d_head, l.d_model,
                           heads, l.kv_heads == 1 ? "s" : "", kv_columns));
    if (w.value.cols() % l.kv_heads != 0)
        refuse(counts.from_options || counts.kv_from_options,
               fmt::format("{}: /weights/value has {} columns, which do not split into {} key/value heads", origin,
                           w.value.cols(), l.kv_heads));
    l.d_v = w.value.cols() / l.kv_heads;
    if (w.output) {
        const Eigen::Index rows = l.heads * l.d_v;
        if (w.output->rows() != rows)
            refuse(counts.from_options || counts.kv_from_options,
                   fmt::format("{}: /weights/output has {} row{}, but the {} heads' contexts side by side have {} "
                               "numbers ({} heads × d_v = {} × {})",
                               origin, w.output->rows(), w.output->rows() == 1 ? "" : "s", l.heads, rows, l.heads,
                               l.heads, l.d_v));
        l.d_out = w.output->cols();
    }
    return l;
}

Eigen::Index generated_model_size(Eigen::Index d_in, const HeadCounts& counts, const TraceOptions& options) {
    const Eigen::Index d_model = options.dim.value_or(d_in);
    if (d_model % counts.heads != 0)
        refuse(counts.from_options,
               fmt::format("{} heads do not divide d_model = {} ({}): choose --heads from {}, or --dim a multiple of {}",
                           counts.heads, d_model, options.dim ? "--dim" : "d_in, the size of the embeddings",
                           divisors_text(d_model), counts.heads));
    return d_model;
}

Dims dims_of(const HeadLayout& layout, Eigen::Index d_in, Eigen::Index d_k, Eigen::Index d_v) {
    Dims dims;
    if (layout.several()) {
        dims = {{"d_in", d_in}, {"d_model", layout.d_model}, {"heads", layout.heads}, {"d_head", layout.d_head}};
        if (layout.grouped()) dims.emplace_back("kv_heads", layout.kv_heads);
        dims.emplace_back("d_v", layout.d_v);
    } else {
        dims = {{"d_in", d_in}, {"d_k", d_k}, {"d_v", d_v}};
    }
    if (layout.d_out > 0) dims.emplace_back("d_out", layout.d_out);
    return dims;
}

std::string columns_text(Eigen::Index first, Eigen::Index count) {
    return count == 1 ? fmt::format("column {}", first + 1) : fmt::format("columns {}–{}", first + 1, first + count);
}

}  // namespace attntrace
