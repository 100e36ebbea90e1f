#include "input/reader.hpp"

#include "util/suggest.hpp"

#include <algorithm>

namespace attntrace {
namespace {

std::string numbers(std::size_t count) { return fmt::format("{} number{}", count, count == 1 ? "" : "s"); }

// "/embeddings/1 (row 2)": a JSON pointer counts from 0, and a row in words from 1.
std::string row_place(std::string_view pointer, std::size_t row) {
    return fmt::format("{} (row {})", pointer_child(pointer, row), row + 1);
}

}  // namespace

Matrix Reader::matrix(const Json& value, std::string_view pointer) const {
    if (is_packed_matrix(value)) {  // the parser's fast form: rows of finite numbers, one length
        if (packed_columns(value) > max_dimension) too_long(pointer_child(pointer, 0), packed_columns(value));
        Matrix m(static_cast<Eigen::Index>(rows_of(value)), static_cast<Eigen::Index>(packed_columns(value)));
        copy_packed(value, m.data());  // row-major: the same order
        return m;
    }
    if (!value.is_array() || value.empty())
        fail(pointer, "expected a matrix (an array of rows), found " + describe(value));
    std::vector<std::size_t> lengths;
    for (std::size_t r = 0; r < value.size(); ++r) lengths.push_back(vector_length(value[r], pointer_child(pointer, r)));
    const VectorNames rows{"row", [](std::size_t r) { return fmt::format("row {}", r + 1); },
                           [&](std::size_t r) { return row_place(pointer, r); }};
    const std::size_t width = common_length(pointer, lengths, rows);
    Matrix m(static_cast<Eigen::Index>(value.size()), static_cast<Eigen::Index>(width));
    for (std::size_t r = 0; r < value.size(); ++r)
        m.row(static_cast<Eigen::Index>(r)) = vector(value[r], pointer_child(pointer, r), 0, "");
    return m;
}

Matrix Reader::weight(const Json& value, std::string_view pointer, Eigen::Index rows, Eigen::Index cols,
                      std::string_view names) const {
    Matrix m = matrix(value, pointer);
    const bool out_in = layout_ == WeightLayout::out_in;
    if (out_in) m.transposeInPlace();
    const auto fits = [&](Eigen::Index r, Eigen::Index c) { return (rows <= 0 || r == rows) && (cols <= 0 || c == cols); };
    if (!fits(m.rows(), m.cols())) {
        const auto expected = fmt::format("{}×{}", rows > 0 ? std::to_string(rows) : std::string("…"),
                                          cols > 0 ? std::to_string(cols) : std::string("…"));
        const std::string given = out_in ? fmt::format("shape {}×{} (out × in), used transposed as {}×{},", m.cols(),
                                                       m.rows(), m.rows(), m.cols())
                                         : fmt::format("shape {}×{}", m.rows(), m.cols());
        std::string hint;
        if (fits(m.cols(), m.rows()))
            hint = out_in ? "; it fits as stored: its layout may be in_out (used as X·W)"
                          : "; it fits transposed: a weight taken from PyTorch's nn.Linear is stored (out, in), so "
                            "say --layout out_in (or \"layout\": \"out_in\" in a JSON input)";
        fail(pointer, fmt::format("{} does not fit: expected {} ({}){}", given, expected, names, hint));
    }
    if (m.rows() == m.cols() && !layout_stated_ && array_at(pointer))
        fail(pointer, fmt::format(
                          "a square weight ({0}×{0}) from a binary array, and no layout stated: PyTorch's nn.Linear "
                          "stores its weight as (out, in) and computes x·Wᵀ, attntrace's default is (in, out) used "
                          "as x·W, and a square matrix fits both, so attntrace does not guess; say --layout out_in "
                          "for a weight as nn.Linear holds it, or --layout in_out for one already d_in × d_out (or "
                          "\"layout\" in a JSON input)",
                          m.rows()));
    return m;
}

std::size_t Reader::common_length(std::string_view pointer, const std::vector<std::size_t>& lengths,
                                  const VectorNames& names) const {
    std::vector<std::pair<std::size_t, std::size_t>> counts;  // (length, how many), in order of first use
    for (const std::size_t length : lengths) {
        const auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == length; });
        if (it == counts.end()) counts.emplace_back(length, 1);
        else ++it->second;
    }
    if (counts.size() == 1) return counts.front().first;
    const auto most = std::max_element(counts.begin(), counts.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    const bool clear_majority = std::count_if(counts.begin(), counts.end(), [&](const auto& c) { return c.second == most->second; }) == 1;
    if (!clear_majority) {
        std::vector<std::string> groups;
        for (const auto& [length, count] : counts) {
            if (groups.size() == 8) break;
            std::vector<std::string> holders;
            for (std::size_t i = 0; i < lengths.size() && holders.size() < 3; ++i)
                if (lengths[i] == length) holders.push_back(names.name(i));
            groups.push_back(fmt::format("{} in {}", numbers(length), bounded_join(holders, count)));
        }
        fail(pointer, fmt::format("the {}s differ in length and no length is the most common, so none can be taken as "
                                  "right: {}",
                                  names.noun, bounded_join(groups, counts.size(), "; ")));
    }
    const std::size_t right = most->first;
    const std::size_t odd = lengths.size() - most->second;
    if (odd == 1) {
        const std::size_t i = static_cast<std::size_t>(std::find_if(lengths.begin(), lengths.end(), [&](std::size_t n) { return n != right; }) - lengths.begin());
        fail(names.place(i), fmt::format("vector of {}, expected {} like the other {} {}s", numbers(lengths[i]), right,
                                         most->second, names.noun));
    }
    std::vector<std::string> odd_ones;
    for (std::size_t i = 0; i < lengths.size() && odd_ones.size() < 8; ++i)
        if (lengths[i] != right) odd_ones.push_back(fmt::format("{} has {}", names.name(i), lengths[i]));
    fail(pointer, fmt::format("the most common length is {} ({} of {} {}s), and {} {}s differ: {}", numbers(right),
                              most->second, lengths.size(), names.noun, odd, names.noun, bounded_join(odd_ones, odd)));
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
    std::string out;
    for (const auto& item : items) {
        if (!out.empty()) out += separator;
        out += item;
    }
    return out;
}

void Reader::only_keys(const Json& object, std::string_view pointer, std::initializer_list<std::string_view> known,
                       const Aliases& aliases) const {
    const std::vector<std::string> names(known.begin(), known.end());
    for (const auto& [key, value] : object.items()) {
        if (std::find(names.begin(), names.end(), key) != names.end()) continue;
        if (const Alias* alias = find_alias(aliases, key))
            fail(pointer_child(pointer, key), fmt::format("unknown field \"{}\": {} (known fields: {})", printable(key),
                                                          alias->where, join(names, ", ")));
        const auto suggestion = closest_names(key, names, 1);  // none for a key too long to be a typo
        fail(pointer_child(pointer, key),
             fmt::format("unknown field \"{}\" ({}known fields: {})", printable(key),
                         suggestion.empty() ? "" : fmt::format("did you mean \"{}\"? ", suggestion.front()),
                         join(names, ", ")));
    }
}

}  // namespace attntrace
