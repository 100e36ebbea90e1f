// JSON of the `similarity` (attntrace.similarity/1) and `compare` (attntrace.compare/1)
// commands, documented in docs/json-output.md.
#include "render/json_reports.hpp"

#include "render/json_writer.hpp"

namespace attntrace {
namespace {

using Buffer = fmt::memory_buffer;

void append_context(Buffer& out, const ContextIn& in) {
    out.append(std::string_view("{\"input\": "));
    append_json_string(out, in.origin);
    out.append(std::string_view(", \"description\": "));
    append_json_string(out, in.description);
    fmt::format_to(std::back_inserter(out), ", \"position\": {}, \"context\": ", in.position + 1);
    append_json_numbers(out, in.context, Dtype::float64);
    out.append(std::string_view(",\n     \"moved_most\": ["));
    for (std::size_t i = 0; i < in.moved_most.size(); ++i) {
        const auto& c = in.moved_most[i];
        out.append(std::string_view(i ? ",\n       {\"token\": " : "\n       {\"token\": "));
        append_json_string(out, c.token);
        fmt::format_to(std::back_inserter(out), ", \"position\": {}, \"weight\": ", c.position + 1);
        append_json_number(out, c.weight, Dtype::float64);
        out.append(std::string_view(", \"contribution\": "));
        append_json_numbers(out, c.vector, Dtype::float64);
        out.append(std::string_view(", \"size\": "));
        append_json_number(out, c.size, Dtype::float64);
        out.push_back('}');
    }
    out.append(std::string_view("]}"));
}

}  // namespace

void render_similarity_json(const SimilarityTables& t, const std::string& origin,
                            const std::string& description, std::ostream& os) {
    Buffer out;
    out.append(std::string_view("{\n  \"schema\": \"attntrace.similarity/1\",\n  \"input\": "));
    append_json_string(out, origin);
    out.append(std::string_view(",\n  \"description\": "));
    append_json_string(out, description);
    out.append(std::string_view(",\n  \"words\": "));
    append_json_string_array(out, t.words);
    out.append(std::string_view(",\n  \"dot\": "));
    append_json_matrix(out, t.dot, Dtype::float64, "  ");
    out.append(std::string_view(",\n  \"cosine\": "));
    append_json_matrix(out, t.cosine, Dtype::float64, "  ");
    out.append(std::string_view("\n}\n"));
    flush(out, os);
}

void render_comparison_json(const Comparison& c, std::ostream& os) {
    Buffer out;
    out.append(std::string_view("{\n  \"schema\": \"attntrace.compare/1\",\n  \"token\": "));
    append_json_string(out, c.token);
    out.append(std::string_view(",\n  \"mode\": "));
    append_json_string(out, to_string(c.mode));
    out.append(std::string_view(",\n  \"a\": "));
    append_context(out, c.a);
    out.append(std::string_view(",\n  \"b\": "));
    append_context(out, c.b);
    out.append(std::string_view(",\n  \"difference\": "));
    append_json_numbers(out, c.difference, Dtype::float64);
    out.append(std::string_view(",\n  \"cosine\": "));
    if (c.cosine) append_json_number(out, *c.cosine, Dtype::float64);
    else out.append(std::string_view("null"));
    out.append(std::string_view("\n}\n"));
    flush(out, os);
}

}  // namespace attntrace
