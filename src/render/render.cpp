#include "render/render.hpp"

#include "attention/modes.hpp"
#include "core/error.hpp"
#include "render/formats.hpp"
#include "render/html.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>
#include <string_view>

namespace attntrace {
namespace {

// A set of products.
class Products {
public:
    constexpr Products(std::initializer_list<Product> products) {
        for (const Product p : products) bits_ |= 1u << static_cast<unsigned>(p);
    }
    constexpr bool contains(Product p) const { return (bits_ >> static_cast<unsigned>(p)) & 1u; }

private:
    unsigned bits_ = 0;
};

// What refusals call each product, and the sentence of a product that few formats show.
struct ProductEntry {
    Product product;
    std::string_view noun;
    std::string_view only;  // empty: the format's own refusal
};
constexpr ProductEntry product_table[] = {
    {Product::trace, "a trace", ""},
    {Product::summary, "a summary", ""},
    {Product::similarity, "the similarity tables", ""},
    {Product::comparison, "a comparison", ""},
    {Product::check, "the report of --check", ""},
    {Product::decode, "a decode", ""},
    {Product::gradients, "the gradients of --summary --backward", ""},
    {Product::answers, "the report of check-answers", "check-answers writes table (text) or json"},
    {Product::quiz, "a quiz", "quiz writes table (a transcript) or json"},
    {Product::bench, "the report of bench", "bench writes table or json"},
    {Product::training, "the report of train", "train writes table or json"},
    {Product::rnn, "the report of rnn", "rnn writes table or json"},
};

// Which format shows which product: a row a format, with its renderer and, for a format that
// shows few products, what it tells the others ({} is the product's noun).
struct FormatEntry {
    Format format;
    const Renderer& (*renderer)();
    Products shows;
    std::string_view refusal;
};
constexpr Products documents{Product::trace, Product::summary, Product::similarity, Product::comparison,
                             Product::check, Product::decode,  Product::gradients};
constexpr Products everything{Product::trace,     Product::summary, Product::similarity, Product::comparison,
                              Product::check,     Product::decode,  Product::gradients,  Product::answers,
                              Product::quiz,      Product::bench,   Product::training, Product::rnn};
constexpr FormatEntry format_table[] = {
    {Format::table, table_renderer, everything, ""},
    {Format::json, json_renderer, everything, ""},
    {Format::markdown, markdown_renderer, documents, ""},
    {Format::csv, csv_renderer, documents, ""},
    {Format::jsonl, jsonl_renderer, {Product::summary, Product::training},
     "--format jsonl writes lines (a --summary's, one per query, or train's curve, one per point); {} is one document: "
     "use --format json"},
    {Format::html, html_renderer, {Product::trace, Product::summary, Product::decode},
     "--format html draws a page of a trace (with --backward, its gradients), a --summary or a decode; {} is not one: use "
     "--format table or json"},
};

const FormatEntry& entry(Format format) {
    return *std::find_if(std::begin(format_table), std::end(format_table),
                         [&](const FormatEntry& e) { return e.format == format; });
}

// The renderer of `format` as the interface of `product`, refused where the table says the
// format does not show it.
template <typename Interface>
const Interface& shown_by(Format format, Product product) {
    require_format(format, product);
    return dynamic_cast<const Interface&>(entry(format).renderer());
}

}  // namespace

const Renderer& renderer(Format format) { return entry(format).renderer(); }

bool shows(Format format, Product product) { return entry(format).shows.contains(product); }

void require_format(Format format, Product product) {
    if (shows(format, product)) return;
    const ProductEntry& p = *std::find_if(std::begin(product_table), std::end(product_table),
                                          [&](const ProductEntry& e) { return e.product == product; });
    if (!p.only.empty()) throw UsageError(std::string(p.only));
    const std::string_view refusal = entry(format).refusal;
    if (!refusal.empty()) throw UsageError(fmt::format(fmt::runtime(refusal), p.noun));
    throw UsageError(fmt::format("--format {} does not show {}", to_string(format), p.noun));
}

std::vector<std::string> formats_showing(Product product) {
    std::vector<std::string> names;
    for (const FormatEntry& e : format_table)
        if (e.shows.contains(product)) names.emplace_back(to_string(e.format));
    return names;
}

void render(const Trace& trace, const RenderOptions& options, std::ostream& out) {
    shown_by<ShowsTrace>(options.format, Product::trace).trace(trace, options, out);
}
void render(const Summary& summary, const RenderOptions& options, std::ostream& out) {
    shown_by<ShowsSummary>(options.format, Product::summary).summary(summary, options, out);
}
void render(const Similarity& similarity, const RenderOptions& options, std::ostream& out) {
    shown_by<ShowsSimilarity>(options.format, Product::similarity).similarity(similarity, options, out);
}
void render(const Comparison& comparison, const RenderOptions& options, std::ostream& out) {
    shown_by<ShowsComparison>(options.format, Product::comparison).comparison(comparison, options, out);
}
void render(const Trace& trace, const CheckReport& report, const RenderOptions& options, std::ostream& out) {
    shown_by<ShowsCheck>(options.format, Product::check).check(trace, report, options, out);
}
void render(const Decode& decode, const RenderOptions& options, std::ostream& out) {
    shown_by<ShowsDecode>(options.format, Product::decode).decode(decode, options, out);
}
void render(const StreamGradients& gradients, const RenderOptions& options, std::ostream& out) {
    shown_by<ShowsGradients>(options.format, Product::gradients).gradients(gradients, options, out);
}
void render(const AnswerReport& report, const RenderOptions& options, std::ostream& out) {
    shown_by<ShowsAnswers>(options.format, Product::answers).answers(report, options, out);
}
void render(const QuizEvent& event, const RenderOptions& options, std::ostream& out) {
    shown_by<ShowsQuiz>(options.format, Product::quiz).quiz(event, options, out);
}
void render(const BenchReport& report, const RenderOptions& options, std::ostream& out) {
    shown_by<ShowsBench>(options.format, Product::bench).bench(report, options, out);
}
void render(const TrainReport& report, const RenderOptions& options, std::ostream& out) {
    shown_by<ShowsTraining>(options.format, Product::training).training(report, options, out);
}
void render(const RnnReport& report, const RenderOptions& options, std::ostream& out) {
    shown_by<ShowsRnn>(options.format, Product::rnn).rnn(report, options, out);
}

std::vector<Shown> shown_stages(const Trace& trace, const RenderOptions& options) {
    const auto order = mode_spec(trace.mode).stages;
    const auto rank = [&](StageId id) { return std::find(order.begin(), order.end(), id) - order.begin(); };
    const auto selected = [&](StageId id) {
        return options.stages.empty() || std::find(options.stages.begin(), options.stages.end(), id) != options.stages.end();
    };
    std::vector<Shown> out;
    bool parameters_placed = false;
    for (const Stage& stage : trace.stages) {
        if (!parameters_placed && rank(stage.id) > rank(StageId::parameters)) {
            parameters_placed = true;
            if (selected(StageId::parameters)) out.push_back({StageId::parameters, nullptr});
        }
        if (selected(stage.id) && (options.head == 0 || stage.head == 0 || stage.head == options.head))
            out.push_back({stage.id, &stage});
    }
    if (!parameters_placed && selected(StageId::parameters)) out.push_back({StageId::parameters, nullptr});
    return out;
}

}  // namespace attntrace
