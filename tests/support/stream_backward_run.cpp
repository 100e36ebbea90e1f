// Runs the streaming backward pass (attention/streaming_backward.hpp) on an input file and
// writes its result as JSON, for tests/perf/compare.py --backward (timed against PyTorch's
// autograd, and its gradients compared with PyTorch's), until the command line has
// `--summary --backward`. Not a test and not part of ctest.
//
//   attntrace_stream_backward FILE [option=value …]
//
// FILE: any input attntrace reads (JSON, .npy, .npz, safetensors). Options: mode (self,
// causal, plain; default self), dtype (float32, float64; default float32), threads, loss
// (sum, the default; target:PATH with PATH a .npy of the result's shape; focus:Q,K[,HEAD],
// 0-based row and column, 1-based head), heads, kv_heads, window, tile, and inputs=1 to
// write dX whole and norms=1 to write every row's ‖dL/dx_i‖ (otherwise only the largest, its
// row, and their mean).
//
// The output: {"loss", "dtype", "parameters": {name: rows}, "input_norms": …, "inputs": rows}.
#include "attention/streaming_backward.hpp"
#include "attention/trace.hpp"
#include "core/error.hpp"
#include "input/load.hpp"
#include "input/source.hpp"
#include "input/tensors.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <omp.h>

#include <cstdio>
#include <exception>
#include <iostream>
#include <map>
#include <stdexcept>
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

Matrix read_matrix(const std::string& path) {
    const InputText input = read_input(path);
    const TensorFile file = read_tensors(input.text, path, input.storage, default_max_input_bytes);
    if (file.tensors.size() != 1) throw DataError(path + ": one array expected");
    Matrix m = file.tensors.front().to_matrix(path);
    input.require_unchanged();
    return m;
}

Loss loss_of(const std::string& spec) {
    if (spec == "sum") return Loss::sum();
    if (spec.rfind("target:", 0) == 0) return Loss::towards(read_matrix(spec.substr(7)));
    if (spec.rfind("focus:", 0) != 0) throw UsageError("unknown loss " + spec);
    int q = 0, k = 0, head = 0;
    if (std::sscanf(spec.c_str() + 6, "%d,%d,%d", &q, &k, &head) < 2) throw UsageError("focus:Q,K[,HEAD]");
    return Loss::focus(q, k, head);
}

int run(int argc, char** argv) {
    if (argc < 2) throw UsageError("usage: attntrace_stream_backward FILE [option=value …]");
    std::map<std::string, std::string> o{{"mode", "self"}, {"dtype", "float32"}, {"loss", "sum"}};
    for (int i = 2; i < argc; ++i) {
        const std::string arg = argv[i];
        const auto eq = arg.find('=');
        if (eq == std::string::npos) throw UsageError("option=value expected, not " + arg);
        o[arg.substr(0, eq)] = arg.substr(eq + 1);
    }
    TraceOptions trace_options;
    StreamBackwardOptions options;
    for (const auto& [key, value] : o) {
        if (key == "mode") trace_options.mode = parse_enum<Mode>(value).value();
        else if (key == "dtype") trace_options.dtype = parse_enum<Dtype>(value).value();
        else if (key == "threads") omp_set_num_threads(std::stoi(value));
        else if (key == "heads") trace_options.heads = std::stoi(value);
        else if (key == "kv_heads") trace_options.kv_heads = std::stoi(value);
        else if (key == "window") trace_options.window = std::stol(value);
        else if (key == "tile") options.tile = std::stol(value);
        else if (key == "inputs") options.inputs = value == "1";
        else if (key != "loss" && key != "norms") throw UsageError("unknown option " + key);
    }
    const InputText input = read_input(argv[1]);
    LoadOptions load;
    load.float32_in_place = trace_options.dtype == Dtype::float32;  // as the summary reads float32 arrays
    const Problem problem = load_input(input, MemoryLimit{std::uint64_t{1} << 40, "no limit"}, load);
    const Loss loss = loss_of(o["loss"]);
    const StreamGradients g = stream_backward(problem, trace_options, loss, options);
    input.require_unchanged();

    nlohmann::json out;
    out["loss"] = g.value;
    out["dtype"] = std::string(to_string(g.dtype));
    out["parameters"] = nlohmann::json::object();
    for (const ParameterGradient& p : g.parameters) out["parameters"][p.name] = rows_of(p.data);
    if (o.count("norms") && o["norms"] == "1") {
        out["input_norms"] = g.input_norms;
    } else {
        std::size_t largest = 0;
        double mean = 0;
        for (std::size_t i = 0; i < g.input_norms.size(); ++i) {
            if (g.input_norms[i] > g.input_norms[largest]) largest = i;
            mean += g.input_norms[i];
        }
        out["input_norms"] = {{"rows", g.input_norms.size()},
                              {"largest", g.input_norms.empty() ? 0.0 : g.input_norms[largest]},
                              {"largest_row", largest},
                              {"mean", g.input_norms.empty() ? 0.0 : mean / static_cast<double>(g.input_norms.size())}};
    }
    if (g.inputs) out["inputs"] = rows_of(*g.inputs);
    std::cout << out.dump() << "\n";
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const UsageError& e) {
        std::cerr << "attntrace_stream_backward: error: " << e.what() << "\n";
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "attntrace_stream_backward: error: " << e.what() << "\n";
        return 1;
    }
}
