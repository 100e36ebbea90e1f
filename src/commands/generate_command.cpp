#include "commands/generate_command.hpp"

#include "input/generate.hpp"

namespace attntrace {

void run_generate(const GenerateRequest& request, std::ostream& out) {
    write_generated_input(out, request.tokens, request.dim, request.seed);
}

}  // namespace attntrace
