// Writes one backward pass as JSON, for tests/backward_torch.py to hold against PyTorch's
// autograd (the command line has no --backward yet). Not a test and not part of ctest.
//
//   attntrace_backward_dump EXAMPLE MODE LOSS [option=value …]
//
// LOSS: sum, target (T drawn here from a fixed LCG and written out), or focus:Q,K[,HEAD]
// (0-based row and column, 1-based head). Options: heads, kv_heads, positions (none,
// sinusoidal, rope), window, temperature, score (bahdanau), fill (a number), after_softmax=1.
// The output holds the trace's inputs and parameters, the loss, and every gradient keyed by
// its stage or parameter name (with "/HEAD" for a head's stage).
#include "attention/backward.hpp"
#include "attention/trace.hpp"
#include "input/examples.hpp"
#include "input/load.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <iostream>
#include <string>

using namespace attntrace;

namespace {

nlohmann::json rows_of(const Matrix& m) {
    nlohmann::json out = nlohmann::json::array();
    for (Eigen::Index r = 0; r < m.rows(); ++r) {
        nlohmann::json row = nlohmann::json::array();
        for (Eigen::Index c = 0; c < m.cols(); ++c) row.push_back(m(r, c));
        out.push_back(row);
    }
    return out;
}

Matrix lcg_matrix(Eigen::Index rows, Eigen::Index cols) {
    std::uint64_t state = 12345;
    Matrix m(rows, cols);
    for (Eigen::Index r = 0; r < rows; ++r)
        for (Eigen::Index c = 0; c < cols; ++c) {
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            m(r, c) = static_cast<double>(state >> 11) / static_cast<double>(1ULL << 53) * 2 - 1;
        }
    return m;
}

TraceOptions options_of(int argc, char** argv, Mode mode) {
    TraceOptions o;
    o.mode = mode;
    for (int i = 4; i < argc; ++i) {
        const std::string arg = argv[i];
        const std::string key = arg.substr(0, arg.find('=')), value = arg.substr(arg.find('=') + 1);
        if (key == "heads") o.heads = std::stoi(value);
        else if (key == "kv_heads") o.kv_heads = std::stoi(value);
        else if (key == "positions") o.positions = parse_enum<PositionScheme>(value).value();
        else if (key == "window") o.window = std::stol(value);
        else if (key == "dim") o.dim = std::stol(value);
        else if (key == "temperature") o.temperature = std::stod(value);
        else if (key == "score") o.score = parse_enum<Score>(value).value();
        else if (key == "fill") o.mask_method.fill = MaskMethod::Fill::value, o.mask_method.value = std::stod(value);
        else if (key == "after_softmax") o.mask_method.after_softmax = true;
        else throw std::invalid_argument("unknown option " + key);
    }
    return o;
}

Loss loss_of(const std::string& spec, const Trace& t) {
    if (spec == "sum") return Loss::sum();
    if (spec == "target") {
        const Stage& result = t.find(StageId::output) ? t.at(StageId::output) : t.at(StageId::context);
        return Loss::towards(lcg_matrix(result.row_count(), result.col_count()));
    }
    if (spec.rfind("focus:", 0) != 0) throw std::invalid_argument("unknown loss " + spec);
    int q = 0, k = 0, head = 0;
    if (std::sscanf(spec.c_str() + 6, "%d,%d,%d", &q, &k, &head) < 2) throw std::invalid_argument("focus:Q,K[,HEAD]");
    return Loss::focus(q, k, head);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 4) {
        std::cerr << "usage: attntrace_backward_dump EXAMPLE MODE LOSS [option=value …]\n";
        return 2;
    }
    const Problem problem = load_problem(find_example(argv[1])->json, argv[1]);
    const TraceOptions options = options_of(argc, argv, parse_enum<Mode>(argv[2]).value());
    const Trace t = trace(problem, options);
    const Loss loss = loss_of(argv[3], t);
    const Gradients g = backward(t, loss);
    nlohmann::json out;
    out["loss"] = g.value;
    out["heads"] = t.heads;
    out["kv_heads"] = t.kv_heads;
    out["scale"] = t.scale;
    if (loss.kind == LossKind::target) out["target"] = rows_of(loss.target);
    if (const auto* single = std::get_if<SingleSequenceInput>(&problem.input)) {
        out["inputs"] = rows_of(single->sequence.vectors);
    } else {
        const auto& pair = std::get<EncoderDecoderInput>(problem.input);
        out["encoder_states"] = rows_of(pair.source.vectors);
        out["decoder_states"] = rows_of(pair.target.vectors);
        if (pair.source_mask) out["source_mask"] = *pair.source_mask;
    }
    for (const Parameter& p : t.parameters) out["parameters"][p.name] = rows_of(p.data);
    for (const Stage& s : g.stages)
        out["gradients"][s.head > 0 ? std::string(s.key()) + "/" + std::to_string(s.head) : std::string(s.key())] =
            rows_of(s.data);
    std::cout << out.dump() << "\n";
    return 0;
}
