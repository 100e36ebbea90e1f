// attntrace: trace the attention mechanism step by step. This file only starts the command
// line (src/cli/): options → a request → a command (load → trace → render).
#include "cli/commands.hpp"
#include "core/error.hpp"
#include "util/output.hpp"

#include <CLI/CLI.hpp>

namespace {
constexpr const char* version = "attntrace 0.1.0";
}  // namespace

int main(int argc, char** argv) {
    using namespace attntrace;
    if (const auto problem = prepare_output()) return fail(exit_data_error, *problem);
    CLI::App app{"Trace the attention mechanism step by step: scores, scaling, masking, softmax "
                 "weights and context vectors, as tables, JSON, markdown or CSV.",
                 "attntrace"};
    app.set_version_flag("--version", version);
    app.get_formatter()->column_width(30);
    const Command trace = add_trace_command(app);
    const std::vector<Command> subcommands = add_subcommands(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() != 0) return fail(exit_usage_error, std::string(e.what()) + " (see attntrace --help)");
        return write_to_stdout([&](std::ostream& out) { app.exit(e, out, out); });  // --help, --version
    }
    for (const Command& command : subcommands)
        if (command.app->parsed()) return command.run();
    return trace.run();
}
