#include "render/reports.hpp"

#include "attention/stage_builder.hpp"
#include "render/number.hpp"
#include "render/text.hpp"

#include <fmt/format.h>

namespace attntrace {
namespace {

Stage word_table(StageId id, std::string title, std::string formula, const Labels& words, const Matrix& data) {
    Stage stage;
    stage.id = id;
    stage.title = std::move(title);
    stage.formula = std::move(formula);
    stage.rows = words;
    stage.cols = words;
    stage.data = data;
    return stage;
}

std::string pairs_text(const std::vector<WordPair>& pairs, int digits) {
    std::string text;
    for (const auto& p : pairs) text += fmt::format("{}{}–{} {:.{}f}", text.empty() ? "" : ", ", p.a, p.b, p.cosine, digits);
    return text;
}

std::string vector_text(const Vector& v, int digits) {
    std::string text = "[";
    for (Eigen::Index k = 0; k < v.size(); ++k) text += (k ? ", " : "") + format_fixed(v(k), digits);
    return text + "]";
}

// One line per other token, largest contribution first, columns aligned.
std::vector<std::string> moved_lines(const ContextIn& in, int digits) {
    std::size_t width = 0;
    for (const auto& c : in.moved_most) width = std::max(width, display_width(c.token));
    std::vector<std::string> lines;
    for (const auto& c : in.moved_most)
        lines.push_back(fmt::format("  {}  weight {} × value = {}  (size {})", pad_right(c.token, width),
                                    format_fixed(c.weight, digits), vector_text(c.vector, digits), format_fixed(c.size, digits)));
    return lines;
}

}  // namespace

Report similarity_report(const Similarity& s, int digits) {
    Report report;
    report.title = fmt::format("attntrace similarity · {} words · d = {} · {}", s.words.size(), s.dimension, s.origin);
    if (!s.description.empty()) report.preamble.push_back(s.description);
    const Labels words(s.words);
    report.tables.push_back(word_table(StageId::dot, "Dot products: large when vectors are long and point alike", "a · b",
                                       words, s.dot));
    report.tables.push_back(word_table(StageId::cosine, "Cosine similarity: the angle alone, from -1 to 1",
                                       "a · b / (|a| |b|)", words, s.cosine));
    if (s.words.size() > 1) {
        const std::size_t count = std::min<std::size_t>(3, s.words.size() * (s.words.size() - 1) / 2);
        report.footer.push_back("most alike (cosine): " + pairs_text(most_alike(s, count), digits));
        report.footer.push_back("least alike (cosine): " + pairs_text(least_alike(s, count), digits));
    }
    return report;
}

Report comparison_report(const Comparison& c, int digits) {
    Report report;
    report.title = fmt::format("attntrace compare · \"{}\" · {} mode", c.token, to_string(c.mode));
    for (const auto& [name, in] : {std::pair{"A", &c.a}, std::pair{"B", &c.b}})
        report.preamble.push_back(fmt::format("{}: {} (token {}){}{}", name, in->origin, in->position + 1,
                                              in->description.empty() ? "" : " — ", in->description));
    Stage table;
    table.id = StageId::context;
    table.title = fmt::format("The context vector of \"{}\" in each input, and how it moved", c.token);
    table.formula = "z = Σ_j a_j·v_j";
    table.rows = {"A", "B", "B − A"};
    table.cols = numbered("z", c.difference.size());
    table.data.resize(3, c.difference.size());
    table.data << c.a.context, c.b.context, c.difference;
    report.tables.push_back(std::move(table));
    report.footer.push_back(fmt::format("cosine(A, B) = {}   |A| = {}   |B| = {}   |B − A| = {}",
                                        c.cosine ? format_fixed(*c.cosine, digits) : "undefined (a zero vector)",
                                        format_fixed(c.norm_a, digits), format_fixed(c.norm_b, digits),
                                        format_fixed(c.norm_difference, digits)));
    for (const auto& [name, in] : {std::pair{"A", &c.a}, std::pair{"B", &c.b}}) {
        report.footer.push_back(fmt::format("other words that moved \"{}\" most in {}:", c.token, name));
        for (auto& line : moved_lines(*in, digits)) report.footer.push_back(std::move(line));
    }
    return report;
}

}  // namespace attntrace
