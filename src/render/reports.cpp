#include "render/reports.hpp"

#include "attention/modes.hpp"
#include "attention/positions.hpp"
#include "attention/stage_builder.hpp"
#include "render/number.hpp"
#include <cmath>
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

std::string tokens_text(const Trace& trace) {
    switch (family_of(trace.mode)) {
    case ModeFamily::single_sequence: return fmt::format("{} token{}", trace.tokens.size(), trace.tokens.size() == 1 ? "" : "s");
    case ModeFamily::encoder_decoder:
        return fmt::format("{} source → {} target token{}", trace.source_tokens.size(), trace.target_tokens.size(),
                           trace.target_tokens.size() == 1 ? "" : "s");
    }
    unknown_family();
}

std::string trace_title(const Trace& trace) {
    return fmt::format("attntrace · {} · {} · {} · {} · {}", mode_text(trace), tokens_text(trace), dims_text(trace.dims),
                       weighting_text(trace), trace.origin);
}

std::string mode_text(const RunHeader& run) {
    const std::string mode = mode_spec(run.mode).takes_score
                                 ? fmt::format("{} mode ({} score)", to_string(run.mode), to_string(run.score))
                                 : fmt::format("{} mode", to_string(run.mode));
    if (run.positions == PositionScheme::none) return mode;
    return fmt::format("{} · {}", mode, positions_text(run.positions, run.first_position));
}

std::string weighting_text(const RunHeader& run) {
    std::string text(to_string(run.normalization));
    if (run.normalization == Normalization::softmax && run.temperature != 1)
        text += fmt::format(" at T = {}", run.temperature);
    if (run.scale_rule != mode_spec(run.mode).default_scale() || run.scale_rule == ScaleRule::value)
        text += run.scale_rule == ScaleRule::none ? " · scores unscaled"
                : run.scale_rule == ScaleRule::sqrt ? fmt::format(" · scores ÷ √{}", std::lround(run.scale * run.scale))
                                                    : fmt::format(" · scores ÷ {}", run.scale);
    return text;
}

std::string check_verdict(const CheckReport& report) {
    const std::size_t n = report.warnings.size();
    return fmt::format("all {} checks passed{}", report.checks.size(),
                       n == 0 ? "" : fmt::format(", with {} warning{}", n, n == 1 ? "" : "s"));
}

std::string parameters_heading(const Trace& trace) {
    if (trace.parameters.empty()) {
        switch (family_of(trace.mode)) {
        case ModeFamily::single_sequence:
            return "none · plain attention has no trainable weights: the embeddings themselves are the queries, keys and values";
        case ModeFamily::encoder_decoder: return "none · Luong's dot score compares decoder and encoder states as they are";
        }
        unknown_family();
    }
    std::vector<std::string_view> names, generated;  // generated: drawn though the input gives the others
    for (const auto& p : trace.parameters) (p.generated ? generated : names).push_back(p.name);
    const std::string from_seed = fmt::format("generated from seed {} (splitmix64), not learned", trace.seed);
    std::string text = fmt::format("{} · {}", fmt::join(names, ", "),
                                   trace.weights == WeightsOrigin::generated ? from_seed : std::string("given in the input"));
    if (!generated.empty()) text += fmt::format("; {} {}", fmt::join(generated, ", "), from_seed);
    return text;
}

Stage parameter_table(const Parameter& p) {
    Stage stage;
    stage.id = StageId::parameters;
    stage.title = p.name;
    stage.formula = p.formula;
    if (p.vector) stage.rows = Labels{p.name};
    else stage.rows = numbered(p.row_prefix, p.data.rows());
    stage.cols = numbered(p.col_prefix, p.data.cols());
    stage.data = p.data;
    return stage;
}

Report similarity_report(const Similarity& s, int digits) {
    Report report;
    report.title = fmt::format("attntrace similarity · {} word{} · d = {} · {}", s.words.size(),
                               s.words.size() == 1 ? "" : "s", s.dimension, s.origin);
    if (!s.description.empty()) report.preamble.push_back(s.description);
    for (const auto& note : s.notes) report.preamble.push_back("note: " + note);
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
    for (const auto& [name, in] : {std::pair{"A", &c.a}, std::pair{"B", &c.b}}) {
        report.preamble.push_back(fmt::format("{}: {} (token {}){}{}", name, in->origin, in->position + 1,
                                              in->description.empty() ? "" : " — ", in->description));
        for (const auto& note : in->notes) report.preamble.push_back(fmt::format("note on {}: {}", name, note));
    }
    Stage table;
    table.id = c.output ? StageId::output : StageId::context;
    table.title = c.output ? fmt::format("The output vector of \"{}\" in each input, and how it moved", c.token)
                           : fmt::format("The context vector of \"{}\" in each input, and how it moved", c.token);
    table.formula = c.output ? "output = concat·W_o" : "z = Σ_j a_j·v_j";
    table.rows = {"A", "B", "B − A"};
    table.cols = numbered(c.output ? "o" : "z", c.difference.size());
    table.data.resize(3, c.difference.size());
    table.data << c.a.context, c.b.context, c.difference;
    report.tables.push_back(std::move(table));
    report.footer.push_back(fmt::format("cosine(A, B) = {}   |A| = {}   |B| = {}   |B − A| = {}",
                                        c.cosine ? format_fixed(*c.cosine, digits) : "undefined (a zero vector)",
                                        format_fixed(c.norm_a, digits), format_fixed(c.norm_b, digits),
                                        format_fixed(c.norm_difference, digits)));
    for (const auto& [name, in] : {std::pair{"A", &c.a}, std::pair{"B", &c.b}}) {
        if (in->moved_most.empty()) continue;  // the output of several heads (see the notes)
        report.footer.push_back(fmt::format("other words that moved \"{}\" most in {}:", c.token, name));
        for (auto& line : moved_lines(*in, digits)) report.footer.push_back(std::move(line));
    }
    return report;
}

}  // namespace attntrace
