#include "commands/generate_command.hpp"

#include "core/error.hpp"
#include "input/generate.hpp"

#include <fmt/format.h>

namespace attntrace {

void run_generate(const GenerateRequest& request, std::ostream& out) {
    if (request.format == "json") {
        if (request.dtype != "float64")
            throw UsageError("--dtype float32 applies to --format npz and safetensors; JSON writes each number exactly");
        write_generated_input(out, request.tokens, request.dim, request.seed);
        return;
    }
    if (request.to_terminal)
        throw UsageError(fmt::format("--format {} writes binary, and the output is a terminal: give -o FILE or redirect it",
                                     request.format));
    write_generated_arrays(out, request.tokens, request.dim, request.seed,
                           request.format == "npz" ? ArrayFormat::npz : ArrayFormat::safetensors,
                           request.dtype == "float32", request.max_bytes);
}

}  // namespace attntrace
