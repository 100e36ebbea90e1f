#include "commands/similarity_command.hpp"

#include "attention/modes.hpp"
#include "attention/similarity.hpp"
#include "commands/guards.hpp"
#include "core/error.hpp"
#include "input/load.hpp"
#include "input/source.hpp"
#include "render/render.hpp"
#include "render/svg.hpp"
#include "util/hash_index.hpp"

#include <fmt/format.h>

namespace attntrace {
namespace {

// The words of an input: the embeddings object in file order, or else each distinct token.
Vocabulary vocabulary_of(const Problem& problem) {
    check_file_mode(problem);
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

}  // namespace

void run_similarity(const SimilarityRequest& request, Outputs& outputs) {
    // Opened before any work, so that a path that cannot be written is refused at once.
    std::ostream* svg = request.svg_path ? &outputs.add(*request.svg_path) : nullptr;
    const InputText input = read_input(request.input, request.max_input);
    write_similarity(load_input(input, request.max_memory, with_max_input(request.load, request.max_input)), request, outputs.main(), svg);
}

void write_similarity(const Problem& problem, const SimilarityRequest& request, std::ostream& out, std::ostream* svg) {
    const auto vocabulary = vocabulary_of(problem);
    const std::size_t words = vocabulary.words.size();
    const auto d = static_cast<double>(vocabulary.vectors.cols());
    // The subject of "… needs about" and "… takes about": one job, whatever the count.
    const std::string what = fmt::format("making the similarity tables of {} word{}", words, words == 1 ? "" : "s");
    require_memory(similarity_bytes(words, d, request.render), request.max_memory, problem.origin, what, "");
    require_time(similarity_seconds(words, d, request.render.format), request.max_seconds, problem.origin, what, "");
    if (svg) {
        const std::string picture = fmt::format("the picture of {} word{}", words, words == 1 ? "" : "s");
        require_memory(similarity_bytes(words, d, request.render) + plane_bytes(words, d), request.max_memory,
                       problem.origin, fmt::format("{} with {}", what, picture), "");
        require_time(similarity_seconds(words, d, request.render.format) + plane_seconds(words, d), request.max_seconds, problem.origin,
                     fmt::format("{} with {}", what, picture), "");
    }
    std::vector<std::string> notes = problem.notes;
    const std::string description = description_for(problem, "similarity", notes);
    Similarity tables = similarity_of(vocabulary, problem.origin, description);
    tables.notes = std::move(notes);
    if (svg) render_svg(plane_of(vocabulary, problem.origin, description), *svg);
    render(tables, request.render, out);
}

}  // namespace attntrace
