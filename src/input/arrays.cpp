#include "input/arrays.hpp"

#include "core/error.hpp"
#include "input/json_text.hpp"
#include "input/source.hpp"
#include "util/suggest.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <span>

namespace attntrace {
namespace {

// What an array is meant to be where it goes: a matrix (rows of numbers) or a vector.
enum class Rank { matrix, vector };

// The numbers of `t` packed for the JSON loader, checked to have the rank its place needs: a
// matrix is 2-d; a vector 1-d, or 2-d with one row (a bias saved as 1 × d).
Json packed(const Tensor& t, Rank rank, const std::string& origin, const std::string& name, MemoryBudget* budget,
            std::vector<std::string>& notes) {
    const bool fits = rank == Rank::matrix ? t.shape.size() == 2
                                           : t.shape.size() == 1 || (t.shape.size() == 2 && t.shape[0] == 1);
    if (!fits)
        throw DataError(fmt::format("{}: {} has shape {}: expected {}", origin, name, shape_text(t.shape),
                                    rank == Rank::matrix ? "a matrix (2 dimensions: rows × columns)"
                                                         : "a vector (1 dimension)"));
    if (t.elements() == 0)
        throw DataError(fmt::format("{}: {} has shape {}, which holds no numbers", origin, name, shape_text(t.shape)));
    if (budget) budget->charge(t.elements() * sizeof(double) * 2);  // the packed copy, then the loader's
    if (t.fortran_order && t.shape.size() >= 2)
        notes.push_back(fmt::format("{} was stored in Fortran (column-major) order and was read into row order, as "
                                    "NumPy's own shape says",
                                    name));
    // Converted straight into the packed form: one copy of the numbers, no matrix between.
    const std::size_t columns = t.shape.back();
    Json packed = rank == Rank::vector ? packed_vector(nullptr, 0) : packed_matrix(nullptr, 0, columns);
    auto& bytes = packed.get_binary();
    bytes.resize(t.elements() * sizeof(double));
    t.to_doubles(origin, reinterpret_cast<double*>(bytes.data()));
    return packed;
}

// The embeddings left where the file has them, when the run asks for that
// (LoadOptions::float32_in_place) and the array allows it: float32, little-endian, C order,
// aligned, a matrix, every number finite. Otherwise nullopt, and the numbers are copied as
// any others (a non-finite one is then refused by name). The storage is kept in `out`.
std::optional<Json> embeddings_in_place(const Tensor& t, const std::string& origin, const LoadOptions& options,
                                        ArrayDocument& out) {
    if (!options.float32_in_place || t.shape.size() != 2 || t.elements() == 0 || !t.storage) return std::nullopt;
    const float* data = t.float32_view();
    if (!data) return std::nullopt;
    const Eigen::Map<const Eigen::ArrayXf> numbers(data, static_cast<Eigen::Index>(t.elements()));
    const bool finite = std::isfinite(numbers.abs().maxCoeff<Eigen::PropagateNaN>());
    require_intact(t.storage, origin);  // what was just read was the file's own numbers
    if (!finite) return std::nullopt;
    out.in_place_storage = t.storage;
    return packed_float_rows({data, t.shape[0], t.shape[1]});
}

// The embeddings: in place when they may be, else packed.
Json embeddings_of(const Tensor& t, const std::string& origin, const std::string& name, const LoadOptions& options,
                   MemoryBudget* budget, ArrayDocument& out) {
    if (auto rows = embeddings_in_place(t, origin, options, out)) return std::move(*rows);
    return packed(t, Rank::matrix, origin, name, budget, out.notes);
}

// "t1", "t2", …: labels for rows that have none, packed as the parser packs an array of strings.
Json numbered_tokens(std::string_view prefix, std::size_t count) {
    std::vector<std::string> tokens;
    tokens.reserve(count);
    for (std::size_t i = 1; i <= count; ++i) tokens.push_back(fmt::format("{}{}", prefix, i));
    return packed_string_array(tokens);
}

// The rows of `t`, one per token: refused beyond the limit on tokens before any label is made.
std::size_t rows_of_tensor(const Tensor& t, const std::string& origin) {
    const std::size_t rows = t.shape.empty() ? 1 : t.shape[0];
    if (rows > max_tokens)
        throw DataError(fmt::format("{}: {} has {} rows, one per token, more than the limit of {} tokens", origin,
                                    t.name.empty() ? std::string("the array") : fmt::format("array \"{}\"", printable(t.name)),
                                    rows, max_tokens));
    return rows;
}

// --tokens, or numbered labels, for the rows of `t`; --tokens must give one per row.
Json tokens_for(const Tensor& t, const LoadOptions& options, std::string_view prefix, const std::string& origin,
                const std::string& name) {
    const std::size_t rows = rows_of_tensor(t, origin);
    if (!options.tokens) return numbered_tokens(prefix, rows);
    if (options.tokens->size() != rows)
        throw UsageError(fmt::format("--tokens gives {} token{} for the {} rows of {} in {}: give one per row",
                                     options.tokens->size(), options.tokens->size() == 1 ? "" : "s", rows, name,
                                     origin));
    // The labels are printed in every format: well-formed UTF-8 with nothing that acts on a
    // terminal, as the labels of a JSON input are (load.cpp), refused here where they enter.
    for (std::size_t i = 0; i < options.tokens->size(); ++i) {
        const std::string& token = (*options.tokens)[i];
        for (std::size_t at = 0; at < token.size();) {
            const std::size_t length = utf8_sequence_length(std::string_view(token).substr(at));
            if (length == 0)
                throw UsageError(fmt::format("--tokens: label {} (\"{}\") is not valid UTF-8: byte {} is 0x{:02x}", i + 1,
                                             printable(token, 24), at + 1,
                                             static_cast<unsigned>(static_cast<unsigned char>(token[at]))));
            at += length;
        }
        if (const auto c = first_control_character(token))
            throw UsageError(fmt::format("--tokens: label {} holds the control or formatting character U+{:04X}; labels "
                                         "are printed, so they must be plain text",
                                         i + 1, static_cast<std::uint32_t>(*c)));
    }
    return packed_string_array(*options.tokens);
}

// The names an .npz or safetensors input may use, and where each goes in the document.
struct Place {
    std::string_view array;
    std::string_view pointer;
    Rank rank;
};
constexpr Place single_places[] = {
    {"embeddings", "/embeddings", Rank::matrix},       {"query", "/weights/query", Rank::matrix},
    {"key", "/weights/key", Rank::matrix},             {"value", "/weights/value", Rank::matrix},
    {"output", "/weights/output", Rank::matrix},       {"query_bias", "/weights/query_bias", Rank::vector},
    {"key_bias", "/weights/key_bias", Rank::vector},   {"value_bias", "/weights/value_bias", Rank::vector},
    {"output_bias", "/weights/output_bias", Rank::vector},
};
constexpr Place pair_places[] = {
    {"encoder_states", "/source/states", Rank::matrix}, {"decoder_states", "/target/states", Rank::matrix},
    {"W_a", "/weights/W_a", Rank::matrix},              {"U_a", "/weights/U_a", Rank::matrix},
    {"v_a", "/weights/v_a", Rank::vector},              {"W", "/weights/W", Rank::matrix},
};

// Sets doc at a pointer of one or two keys ("/embeddings", "/weights/query").
void put(Json& doc, std::string_view pointer, Json value) {
    const auto slash = pointer.find('/', 1);
    if (slash == std::string_view::npos) {
        doc[std::string(pointer.substr(1))] = std::move(value);
        return;
    }
    doc[std::string(pointer.substr(1, slash - 1))][std::string(pointer.substr(slash + 1))] = std::move(value);
}

std::string array_name(const std::string& name) { return fmt::format("array \"{}\"", printable(name)); }

// The layout stated by --layout, else by a safetensors file's metadata ("layout"), put where a
// JSON input states it; the metadata's "description" becomes the input's description (an
// object of one per mode when it is one as text, as attntrace train writes it), its "mode" the
// input's mode, its "learned" (an object as text) the input's "learned" and its "heads" (a
// number as text) the input's "heads" unless --heads says.
void put_layout(ArrayDocument& out, const LoadOptions& options, const TensorFile& file) {
    if (const auto it = file.metadata.find("description"); it != file.metadata.end()) {
        Json text(it->second);
        if (it->second.starts_with('{')) {  // one per mode, as attntrace train writes it; else text as it is
            try {
                Json object = parse_json(it->second, file.origin + ": the metadata's \"description\"");
                if (object.is_object()) text = std::move(object);
            } catch (const DataError&) {
            }
        }
        out.doc["description"] = std::move(text);
        out.names["/description"] = "the metadata's \"description\"";
    }
    if (const auto it = file.metadata.find("mode"); it != file.metadata.end()) {
        out.doc["mode"] = it->second;
        out.names["/mode"] = "the metadata's \"mode\"";
    }
    if (const auto it = file.metadata.find("learned"); it != file.metadata.end()) {
        out.doc["learned"] = parse_json(it->second, file.origin + ": the metadata's \"learned\"");
        out.names["/learned"] = "the metadata's \"learned\"";
    }
    if (const auto it = file.metadata.find("heads"); it != file.metadata.end() && !options.heads_given) {
        out.doc["heads"] = parse_json(it->second, file.origin + ": the metadata's \"heads\"");  // a number, as train writes it
        out.names["/heads"] = "the metadata's \"heads\"";
    }
    if (options.layout) {
        out.doc["layout"] = std::string(to_string(*options.layout));
    } else if (const auto it = file.metadata.find("layout"); it != file.metadata.end()) {
        out.doc["layout"] = it->second;
        out.names["/layout"] = "the metadata's \"layout\"";
    }
}

ArrayDocument named_arrays(const TensorFile& file, const LoadOptions& options, MemoryBudget* budget) {
    ArrayDocument out;
    out.doc = Json::object();
    if (file.format == "npy") {  // one array: the embeddings
        const Tensor& t = file.tensors.front();
        out.doc["tokens"] = tokens_for(t, options, "t", file.origin, "the array");
        out.doc["embeddings"] = embeddings_of(t, file.origin, "the array", options, budget, out);
        out.names["/embeddings"] = "the array";
        put_layout(out, options, file);
        return out;
    }
    const bool pair = file.find("encoder_states") || file.find("decoder_states");
    const auto places = pair ? std::span<const Place>(pair_places) : std::span<const Place>(single_places);
    std::vector<std::string> known;
    for (const auto& place : places) known.emplace_back(place.array);
    for (const auto& t : file.tensors)
        if (t.name.ends_with("attn.c_attn.weight"))
            // Said for every command that reads arrays: similarity has no --from.
            throw DataError(fmt::format("{}: the file holds GPT-2's tensors ({}): the trace, decode, compare and "
                                        "check-answers read them with --from gpt2 --layer L",
                                        file.origin, printable(t.name)));
    for (const auto& t : file.tensors)
        if (std::none_of(places.begin(), places.end(), [&](const Place& p) { return p.array == t.name; })) {
            std::vector<std::string> all = known;
            for (const auto& p : pair ? std::span<const Place>(single_places) : std::span<const Place>(pair_places))
                all.emplace_back(p.array);
            const auto near = likely_typo(t.name, all);
            throw DataError(fmt::format("{}: unknown array \"{}\"{}; an input of {} reads {}", file.origin,
                                        printable(t.name), near ? fmt::format(" (did you mean \"{}\"?)", *near) : "",
                                        pair ? "encoder and decoder states" : "one sequence",
                                        fmt::join(known, ", ")));
        }
    if (pair) {
        for (const char* needed : {"encoder_states", "decoder_states"})
            if (!file.find(needed))
                throw DataError(fmt::format("{}: missing array \"{}\": bahdanau attention needs encoder_states (the "
                                            "source) and decoder_states (the target)",
                                            file.origin, needed));
        if (options.tokens)
            throw UsageError("--tokens labels the rows of one sequence; the encoder and decoder states of an array "
                             "input are labelled x1, x2, … and y1, y2, …");
        out.doc["source"]["tokens"] = numbered_tokens("x", rows_of_tensor(*file.find("encoder_states"), file.origin));
        out.doc["target"]["tokens"] = numbered_tokens("y", rows_of_tensor(*file.find("decoder_states"), file.origin));
    } else {
        const Tensor* embeddings = file.find("embeddings");
        if (!embeddings)
            throw DataError(fmt::format("{}: missing array \"embeddings\" (one row per token){}", file.origin,
                                        file.tensors.empty() ? "; the file holds no arrays"
                                                             : fmt::format("; it holds {}", fmt::join(file.names(), ", "))));
        out.doc["tokens"] = tokens_for(*embeddings, options, "t", file.origin, array_name("embeddings"));
        // The metadata's "tokens" (a JSON array of strings, as attntrace train writes it), unless --tokens.
        if (const auto it = file.metadata.find("tokens"); it != file.metadata.end() && !options.tokens) {
            out.doc["tokens"] = parse_json(it->second, file.origin + ": the metadata's \"tokens\"");
            out.names["/tokens"] = "the metadata's \"tokens\"";
        }
    }
    for (const auto& place : places)
        if (const Tensor* t = file.find(place.array)) {
            const std::string name = array_name(t->name);
            put(out.doc, place.pointer,
                place.pointer == "/embeddings" ? embeddings_of(*t, file.origin, name, options, budget, out)
                                               : packed(*t, place.rank, file.origin, name, budget, out.notes));
            out.names[std::string(place.pointer)] = name;
        }
    put_layout(out, options, file);
    return out;
}

// --from gpt2 --layer L ------------------------------------------------------------------

// The layer's tensors in GPT-2's names, with or without the "transformer." of a full model.
struct Gpt2Layer {
    const TensorFile& file;
    int layer;
    std::string prefix;  // "h.3." or "transformer.h.3."

    const Tensor& need(std::string_view part, std::size_t rank, const std::vector<std::size_t>& shape) const {
        const std::string name = prefix + std::string(part);
        const Tensor* t = file.find(name);
        if (!t) throw DataError(fmt::format("{}: missing tensor \"{}\" of GPT-2's layer", file.origin, name));
        if (t->shape.size() != rank || (!shape.empty() && t->shape != shape))
            throw DataError(fmt::format("{}: \"{}\" has shape {}, expected {} (GPT-2's layout)", file.origin, name,
                                        shape_text(t->shape), shape.empty() ? "another rank" : shape_text(shape)));
        return *t;
    }
};

// The layers a file holds ("0–11"), for the message when --layer names another.
std::string layers_in(const TensorFile& file) {
    std::vector<int> layers;
    for (const auto& name : file.names()) {
        for (std::string_view prefix : {"h.", "transformer.h."}) {
            if (!std::string_view(name).starts_with(prefix)) continue;
            const std::string rest = name.substr(prefix.size());
            const auto dot = rest.find('.');
            if (dot == std::string::npos || dot == 0 || dot > 4) continue;
            if (!std::all_of(rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(dot), [](char c) { return c >= '0' && c <= '9'; }))
                continue;
            int layer = 0;  // at most four digits, all of them read
            std::from_chars(rest.data(), rest.data() + dot, layer);
            layers.push_back(layer);
        }
    }
    std::sort(layers.begin(), layers.end());
    layers.erase(std::unique(layers.begin(), layers.end()), layers.end());
    if (layers.empty()) return "none";
    if (layers.back() - layers.front() + 1 == static_cast<int>(layers.size()))
        return layers.size() == 1 ? std::to_string(layers.front()) : fmt::format("{}–{}", layers.front(), layers.back());
    return fmt::format("{}", fmt::join(layers, ", "));
}

// A (1, n, d) array (a batch of one, as Hugging Face returns hidden states) as (n, d).
Tensor without_batch(const Tensor& t) {
    Tensor out = t;
    if (t.shape.size() == 3 && t.shape[0] == 1 && !t.fortran_order) out.shape = {t.shape[1], t.shape[2]};
    return out;
}

// The arrays of a file named inside the input (--hidden-states, a JSON input's .npy): its
// headers read (and an .npz's members inflated, charged to `budget`); a file shortened
// meanwhile is said to be, whatever else reading it found. Its numbers are read later, by
// Tensor::to_doubles, which checks the mapping again after reading them.
TensorFile tensors_of(const InputText& text, const LoadOptions& options, MemoryBudget* budget) {
    try {
        TensorFile file = read_tensors(text.text, text.origin, text.storage, options.max_input, budget);
        text.require_unchanged();
        return file;
    } catch (const DataError&) {
        text.require_unchanged();
        throw;
    }
}

// The hidden states: --hidden-states FILE (a .npy, or an archive's "hidden_states"), else the
// model file's own "hidden_states".
Tensor hidden_states(const TensorFile& model, const LoadOptions& options, std::optional<TensorFile>& other,
                     MemoryBudget* budget) {
    if (options.hidden_states) {
        const InputText text = read_input(*options.hidden_states, options.max_input);
        other = tensors_of(text, options, budget);
        if (other->format == "npy") return without_batch(other->tensors.front());
        if (const Tensor* t = other->find("hidden_states")) return without_batch(*t);
        throw DataError(fmt::format("{}: no array \"hidden_states\" (n × d, one row per token) in it", text.origin));
    }
    if (const Tensor* t = model.find("hidden_states")) return without_batch(*t);
    throw DataError(fmt::format("{}: no array \"hidden_states\" (n × d, one row per token): put it in the model file, "
                                "or name a file holding it with --hidden-states",
                                model.origin));
}

// Columns first … first + count − 1 of a packed matrix's numbers, as their own packed matrix.
Json column_block(const Matrix& m, Eigen::Index first, Eigen::Index count) {
    const Matrix block = m.middleCols(first, count);
    return packed_matrix(block.data(), static_cast<std::size_t>(block.rows()), static_cast<std::size_t>(block.cols()));
}

Json vector_block(const Matrix& v, Eigen::Index first, Eigen::Index count) {
    const Matrix block = v.middleCols(first, count);
    return packed_vector(block.data(), static_cast<std::size_t>(block.size()));
}

// --from gpt2's options checked against the file, and layer L found, with or without the
// "transformer." of a full model.
Gpt2Layer find_layer(const TensorFile& file, const LoadOptions& options) {
    if (file.format == "npy")
        throw UsageError("--from gpt2 reads a .safetensors or .npz file holding GPT-2's tensors by their names; a "
                         ".npy holds one array");
    if (!options.layer) throw UsageError("--from gpt2 needs --layer L: the layer whose attention to trace (from 0)");
    if (options.layout && *options.layout != WeightLayout::in_out)
        throw UsageError("--layout out_in does not fit --from gpt2: GPT-2's Conv1D weights are stored d_in × d_out "
                         "and used as X·W, which attntrace knows");
    const int layer = *options.layer;
    Gpt2Layer l{file, layer, fmt::format("h.{}.", layer)};
    if (!file.find(l.prefix + "attn.c_attn.weight")) l.prefix = "transformer." + l.prefix;
    if (!file.find(l.prefix + "attn.c_attn.weight"))
        throw DataError(fmt::format("{}: no layer {} of GPT-2's tensors (h.{}.attn.c_attn.weight); the layers here: {}",
                                    file.origin, layer, layer, layers_in(file)));
    return l;
}

// The layer's attention and ln_1 tensors, each of the shape GPT-2 gives it for d (the rows of
// c_attn, which holds the query, key and value weights side by side).
struct Gpt2Tensors {
    const Tensor &c_attn, &c_attn_bias, &c_proj, &c_proj_bias, &ln_weight, &ln_bias;
    std::size_t d;
};

Gpt2Tensors layer_tensors(const Gpt2Layer& l) {
    const Tensor& c_attn = l.need("attn.c_attn.weight", 2, {});
    const std::size_t d = c_attn.shape[0];
    if (c_attn.shape[1] != 3 * d)
        throw DataError(fmt::format("{}: \"{}attn.c_attn.weight\" has shape {}, expected ({}, {}): d × 3d, the "
                                    "query, key and value weights side by side",
                                    l.file.origin, l.prefix, shape_text(c_attn.shape), d, 3 * d));
    const Tensor& c_attn_bias = l.need("attn.c_attn.bias", 1, {3 * d});
    const Tensor& c_proj = l.need("attn.c_proj.weight", 2, {d, d});
    const Tensor& c_proj_bias = l.need("attn.c_proj.bias", 1, {d});
    const Tensor& ln_weight = l.need("ln_1.weight", 1, {d});
    const Tensor& ln_bias = l.need("ln_1.bias", 1, {d});
    return {c_attn, c_attn_bias, c_proj, c_proj_bias, ln_weight, ln_bias, d};
}

// GPT-2's heads are d_head = 64 wide; a file may say otherwise in its metadata (n_head).
int gpt2_heads(const TensorFile& file, std::size_t d) {
    const auto it = file.metadata.find("n_head");
    if (it == file.metadata.end()) {
        if (d % 64 == 0) return static_cast<int>(d / 64);
        throw UsageError(fmt::format("{}: d = {} does not split into GPT-2's heads of 64 numbers, and the file's "
                                     "metadata gives no n_head: say how many heads with --heads",
                                     file.origin, d));
    }
    std::uint64_t heads = 0;
    const std::string& text = it->second;
    const char* end = text.data() + text.size();
    // The whole text, or nothing: "1e3" and "12 heads" are not 1 and 12; a whole number too
    // large to count in is more heads than d has numbers.
    const auto [stop, error] = std::from_chars(text.data(), end, heads);
    if (error == std::errc::result_out_of_range && stop == end)
        throw DataError(fmt::format("{}: metadata n_head = \"{}\" is more heads than d = {} has numbers", file.origin,
                                    printable(text), d));
    if (error != std::errc() || stop != end)
        throw DataError(fmt::format("{}: metadata n_head = \"{}\" is not a whole number of heads", file.origin,
                                    printable(text)));
    if (heads < 1 || d % heads != 0)
        throw DataError(fmt::format("{}: metadata n_head = \"{}\" does not split d = {} into heads", file.origin,
                                    printable(it->second), d));
    return static_cast<int>(heads);  // a divisor of d, which is far below INT_MAX
}

// c_attn split into W_q, W_k and W_v with their biases, c_proj as W_o: put in the document
// with the names messages give them.
void put_attention_weights(ArrayDocument& out, const Gpt2Layer& l, const Gpt2Tensors& t, MemoryBudget* budget) {
    const TensorFile& file = l.file;
    const auto D = static_cast<Eigen::Index>(t.d);
    const Matrix w = t.c_attn.to_matrix(file.origin), b = t.c_attn_bias.to_matrix(file.origin);
    if (budget) budget->charge(static_cast<std::uint64_t>(w.size() + t.c_proj.elements()) * sizeof(double) * 3);
    const char* parts[] = {"query", "key", "value"};
    for (Eigen::Index part = 0; part < 3; ++part) {
        const std::string name = parts[part];
        out.doc["weights"][name] = column_block(w, part * D, D);
        out.doc["weights"][name + "_bias"] = vector_block(b, part * D, D);
        out.names["/weights/" + name] = fmt::format("\"{}attn.c_attn.weight\", columns {}–{}", l.prefix, part * D + 1, (part + 1) * D);
        out.names["/weights/" + name + "_bias"] = fmt::format("\"{}attn.c_attn.bias\", numbers {}–{}", l.prefix, part * D + 1, (part + 1) * D);
    }
    out.doc["weights"]["output"] = packed(t.c_proj, Rank::matrix, file.origin, l.prefix + "attn.c_proj.weight", budget, out.notes);
    out.doc["weights"]["output_bias"] = packed(t.c_proj_bias, Rank::vector, file.origin, l.prefix + "attn.c_proj.bias", budget, out.notes);
    out.names["/weights/output"] = fmt::format("\"{}attn.c_proj.weight\"", l.prefix);
    out.names["/weights/output_bias"] = fmt::format("\"{}attn.c_proj.bias\"", l.prefix);
    out.doc["layout"] = "in_out";  // Conv1D: x·W + b, known, so no square weight is refused
}

// ln_1, with the epsilon of the file's metadata (layer_norm_epsilon) when it gives one.
LayerNorm gpt2_layernorm(const Gpt2Layer& l, const Gpt2Tensors& t) {
    const TensorFile& file = l.file;
    LayerNorm ln;
    ln.gamma = t.ln_weight.to_matrix(file.origin).row(0);
    ln.beta = t.ln_bias.to_matrix(file.origin).row(0);
    if (const auto it = file.metadata.find("layer_norm_epsilon"); it != file.metadata.end()) {
        const std::string& text = it->second;
        const char* end = text.data() + text.size();
        // The whole text as a number, or refused: "0.5junk" is not 0.5.
        if (const auto [stop, error] = std::from_chars(text.data(), end, ln.epsilon); error != std::errc() || stop != end)
            ln.epsilon = -1;
        if (!(ln.epsilon > 0 && ln.epsilon < 1))
            throw DataError(fmt::format("{}: metadata layer_norm_epsilon = \"{}\" is not a number between 0 and 1",
                                        file.origin, printable(it->second)));
    }
    ln.name = l.prefix + "ln_1";
    return ln;
}

ArrayDocument gpt2_layer(const TensorFile& file, const LoadOptions& options, MemoryBudget* budget) {
    const Gpt2Layer l = find_layer(file, options);
    const Gpt2Tensors t = layer_tensors(l);
    std::optional<TensorFile> other;
    const Tensor x = hidden_states(file, options, other, budget);
    const std::string x_origin = other ? other->origin : file.origin;
    if (x.shape.size() == 2 && x.shape[1] != t.d)
        throw DataError(fmt::format("{}: the hidden states have {} numbers per token, and layer {} of {} expects d = {}",
                                    x_origin, x.shape[1], l.layer, file.origin, t.d));

    ArrayDocument out;
    out.doc = Json::object();
    // Said of causal mode only: in another mode the run is no longer the layer's own.
    out.doc["description"]["causal"] = fmt::format(
        "Layer {} read by GPT-2's tensor names: ln_1, then causal attention with the layer's own weights (c_attn split "
        "into W_q, W_k and W_v, c_proj as W_o), each with its bias",
        l.layer);
    out.doc["mode"] = "causal";
    out.doc["tokens"] = tokens_for(x, options, "t", x_origin, "the hidden states");
    out.doc["embeddings"] = packed(x, Rank::matrix, x_origin, "the hidden states", budget, out.notes);
    out.names["/embeddings"] = fmt::format("the hidden states ({})", x_origin);
    if (!options.heads_given) out.doc["heads"] = gpt2_heads(file, t.d);
    put_attention_weights(out, l, t, budget);
    out.layernorm = gpt2_layernorm(l, t);
    return out;
}

// Where a JSON input may name a .npy file instead of writing the numbers.
constexpr Place reference_places[] = {
    {"", "/embeddings", Rank::matrix},         {"", "/weights/query", Rank::matrix},
    {"", "/weights/key", Rank::matrix},        {"", "/weights/value", Rank::matrix},
    {"", "/weights/output", Rank::matrix},     {"", "/weights/query_bias", Rank::vector},
    {"", "/weights/key_bias", Rank::vector},   {"", "/weights/value_bias", Rank::vector},
    {"", "/weights/output_bias", Rank::vector}, {"", "/weights/W_a", Rank::matrix},
    {"", "/weights/U_a", Rank::matrix},        {"", "/weights/v_a", Rank::vector},
    {"", "/weights/W", Rank::matrix},          {"", "/source/states", Rank::matrix},
    {"", "/target/states", Rank::matrix},
};

// The value at a pointer of one or two keys, when every step is an object that has it.
Json* find_at(Json& doc, std::string_view pointer) {
    Json* at = &doc;
    for (std::size_t from = 1; from <= pointer.size();) {
        const auto slash = std::min(pointer.find('/', from), pointer.size());
        if (!at->is_object()) return nullptr;
        const auto it = at->find(std::string(pointer.substr(from, slash - from)));
        if (it == at->end()) return nullptr;
        at = &*it;
        from = slash + 1;
    }
    return at;
}

}  // namespace

ArrayDocument array_document(const TensorFile& file, const LoadOptions& options, MemoryBudget* budget) {
    if (options.from) return gpt2_layer(file, options, budget);
    return named_arrays(file, options, budget);
}

void resolve_array_references(Json& doc, const std::string& origin, const LoadOptions& options, ArrayNames& names,
                              std::vector<std::string>& notes, MemoryBudget* budget) {
    if (!doc.is_object()) return;
    const bool from_file = origin != "<stdin>" && !origin.starts_with("example:");
    const std::filesystem::path base = from_file ? std::filesystem::path(origin).parent_path() : std::filesystem::path();
    for (const auto& place : reference_places) {
        Json* value = find_at(doc, place.pointer);
        if (!value || !value->is_string()) continue;
        const std::string named = value->get<std::string>();
        const std::string where = fmt::format("{}: {}", origin, place.pointer);
        if (!named.ends_with(".npy"))
            throw DataError(fmt::format("{}: expected {}, or the name of a .npy file holding it, found the string \"{}\"",
                                        where,
                                        place.pointer == "/embeddings" ? "an object word → vector, an array of vectors"
                                        : place.rank == Rank::matrix   ? "a matrix (an array of rows)"
                                                                       : "a vector",
                                        printable(named)));
        const std::string path = (base / named).string();
        InputText text;
        try {
            text = read_input(path, options.max_input);
        } catch (const DataError& e) {
            throw DataError(fmt::format("{}: {}", where, e.what()));
        }
        const auto format = sniff_tensor_format(text.text);
        if (format != "npy")
            throw DataError(fmt::format("{}: {} is not a .npy file (it does not start with NumPy's magic bytes)", where,
                                        printable(path)));
        const TensorFile file = tensors_of(text, options, budget);
        const std::string name = fmt::format("{} ({})", place.pointer, printable(named));
        *value = packed(file.tensors.front(), place.rank, text.origin, name, budget, notes);  // checked as it reads
        names[std::string(place.pointer)] = name;
    }
}

}  // namespace attntrace
