#include "commands/similarity_command.hpp"

#include "attention/similarity.hpp"
#include "commands/guards.hpp"
#include "error.hpp"
#include "input/load.hpp"
#include "input/source.hpp"
#include "render/json_reports.hpp"
#include "render/report.hpp"
#include "util/hash_index.hpp"

#include <fmt/format.h>

namespace attntrace {
namespace {

// The words of an input: the embeddings object in file order, or else each distinct token.
Vocabulary vocabulary_of(const Problem& problem) {
    const auto* single = std::get_if<SingleSequenceInput>(&problem.input);
    if (!single)
        throw DataError(fmt::format("{}: similarity reads one sentence with its embeddings, not a "
                                    "source and a target",
                                    problem.origin));
    if (!problem.vocabulary.words.empty()) return problem.vocabulary;
    const auto& seq = single->sequence;
    std::vector<Eigen::Index> rows;  // the first row of each distinct token
    const HashIndex seen(seq.tokens.size(), [&](std::size_t i) { return std::string_view(seq.tokens[i]); });
    Vocabulary words;
    for (std::size_t i = 0; i < seq.tokens.size(); ++i)
        if (seen.find(seq.tokens[i], [&](std::size_t j) { return std::string_view(seq.tokens[j]); }).front() == i) {
            words.words.push_back(seq.tokens[i]);
            rows.push_back(static_cast<Eigen::Index>(i));
        }
    words.vectors = seq.vectors(rows, Eigen::all);
    return words;
}

Stage table_stage(std::string name, std::string title, std::string formula,
                  const std::vector<std::string>& words, const Matrix& data) {
    Stage stage;
    stage.name = std::move(name);
    stage.title = std::move(title);
    stage.formula = std::move(formula);
    stage.rows = words;
    stage.cols = words;
    stage.data = data;
    return stage;
}

std::string pairs_text(const std::vector<WordPair>& pairs, int digits) {
    std::string text;
    for (const auto& p : pairs)
        text += fmt::format("{}{}–{} {:.{}f}", text.empty() ? "" : ", ", p.a, p.b, p.cosine, digits);
    return text;
}

}  // namespace

void run_similarity(const SimilarityRequest& request, std::ostream& out) {
    const InputText input = read_input(request.input, request.max_input);
    write_similarity(load_input(input, request.max_memory), request, out);
}

void write_similarity(const Problem& problem, const SimilarityRequest& request, std::ostream& out) {
    const auto vocabulary = vocabulary_of(problem);
    const std::size_t words = vocabulary.words.size();
    const auto d = static_cast<double>(vocabulary.vectors.cols());
    const std::string what = fmt::format("the similarity tables of {} words", words);
    require_memory(similarity_bytes(words, d, request.render), request.max_memory, problem.origin, what, "");
    require_time(similarity_seconds(words, d), request.max_seconds, problem.origin, what, "");
    const SimilarityTables tables = similarity_tables(vocabulary, problem.origin);
    if (request.render.format == Format::json) {
        render_similarity_json(tables, problem.origin, problem.description, out);
        return;
    }
    Report report;
    report.title = fmt::format("attntrace similarity · {} words · d = {} · {}", tables.words.size(),
                               vocabulary.vectors.cols(), problem.origin);
    if (!problem.description.empty()) report.preamble.push_back(problem.description);
    report.tables.push_back(table_stage("dot", "Dot products: large when vectors are long and point alike",
                                        "a · b", tables.words, tables.dot));
    report.tables.push_back(table_stage("cosine", "Cosine similarity: the angle alone, from -1 to 1",
                                        "a · b / (|a| |b|)", tables.words, tables.cosine));
    if (tables.words.size() > 1) {
        const std::size_t count = std::min<std::size_t>(3, tables.words.size() * (tables.words.size() - 1) / 2);
        report.footer.push_back("most alike (cosine): " + pairs_text(most_alike(tables, count), request.render.digits));
        report.footer.push_back("least alike (cosine): " + pairs_text(least_alike(tables, count), request.render.digits));
    }
    render_report(report, request.render, out);
}

}  // namespace attntrace
