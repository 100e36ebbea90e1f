#include "stepper/edited_input.hpp"

#include "render/json_writer.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace attntrace::stepper {

std::string write_edited_input(const Problem& problem, const std::string& path) {
    const auto* single = std::get_if<SingleSequenceInput>(&problem.input);
    if (!single) return "only a single sequence's input is written";
    if (single->layernorm) return "an input read with --from gpt2 keeps its ln_1, which an input file cannot hold";
    fmt::memory_buffer buffer;
    JsonWriter json(buffer);
    json.object();
    json.key("tokens").strings(single->sequence.tokens);
    json.key("embeddings").matrix(single->sequence.vectors, Dtype::float64);
    if (single->weights) {
        const Projections& w = *single->weights;
        json.key("weights").object();
        json.key("query").matrix(w.query, Dtype::float64).key("key").matrix(w.key, Dtype::float64);
        json.key("value").matrix(w.value, Dtype::float64);
        if (w.output) json.key("output").matrix(*w.output, Dtype::float64);
        const std::pair<const char*, const std::optional<Vector>*> biases[] = {
            {"query_bias", &w.query_bias}, {"key_bias", &w.key_bias}, {"value_bias", &w.value_bias}, {"output_bias", &w.output_bias}};
        for (const auto& [name, bias] : biases)
            if (*bias) json.key(name).numbers(**bias, Dtype::float64);
        json.end();
    }
    if (single->heads) json.key("heads").integer(*single->heads);
    if (single->kv_heads) json.key("kv_heads").integer(*single->kv_heads);
    if (single->positions) json.key("positions").string(to_string(*single->positions));
    if (single->padding) json.key("padding").strings(*single->padding);
    json.end();
    buffer.push_back('\n');
    const std::string temporary = fmt::format("{}.attntrace-{}", path, ::getpid());
    {
        std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
        out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
        out.flush();
        if (!out) {
            const std::string why = std::strerror(errno);
            std::remove(temporary.c_str());
            return fmt::format("cannot write {}: {}", path, why);
        }
    }
    std::error_code error;
    std::filesystem::rename(temporary, path, error);
    if (error) {
        std::remove(temporary.c_str());
        return fmt::format("cannot write {}: {}", path, error.message());
    }
    return {};
}

}  // namespace attntrace::stepper
