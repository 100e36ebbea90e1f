// What the files of the command line share (cli/commands.cpp, subcommands.cpp, messages.cpp,
// help.cpp): how a parsed command runs, the state it holds from parsing to running, and the
// functions each file gives the others. The four are compiled as one translation unit (a unity
// build, CMakeLists.txt), so CLI11 is parsed once; they build file by file too.
#pragma once

#include "cli/flags.hpp"
#include "cli/manual.hpp"
#include "core/error.hpp"
#include "util/output.hpp"

#include <CLI/CLI.hpp>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace attntrace::cli {

inline constexpr std::size_t max_message_chars = 2000;

// The group of options a command takes only to refuse them with their reason (decode's --window):
// left out of --help, the man page and the completions. (CLI11's hidden group, "", would also
// drop the option's name from the messages of its validators.)
inline constexpr std::string_view unlisted_group = "Refused with a reason";

// What a parsed command does: returns the exit status.
using Runner = std::function<int()>;

struct Command {
    CLI::App* app;  // the subcommand, or the top level for the main job
    Runner run;     // empty until a subcommand's options are added (run_command_line)
};

// What a command holds from parsing to running: the request, whose fields its own options fill
// as they are parsed, and the flags (cli/flags.hpp's bundles, or the command's own) turned into
// the rest of the request when it runs.
template <typename Request, typename Flags>
struct State {
    Request request;
    Flags flags;
};

// Prints "attntrace: error: MESSAGE" as one line on stderr: breaks become spaces, anything
// else that could act on the terminal is escaped, and the whole is bounded (an argument
// echoed by CLI11 may be megabytes long). Returns `code`.
int fail(int code, std::string message);

// Runs `job` on the outputs (stdout, or FILE for -o, and any files the job adds), committing
// them only when the job succeeds; returns the exit status. A job that returns a status (the
// verdicts of check-answers and the quiz) has it returned when nothing failed.
template <typename Job>
int run(Job&& job, const std::optional<std::string>& output_path) {
    int status = 0;
    try {
        Outputs outputs(output_path);
        if constexpr (std::is_invocable_v<Job, Outputs&>) {
            if constexpr (std::is_void_v<std::invoke_result_t<Job, Outputs&>>) job(outputs);
            else status = job(outputs);
        } else {
            job(outputs.main());
        }
        outputs.commit();
        return status;
    } catch (const BrokenPipe&) {
        return exit_broken_pipe;
    } catch (const UsageError& e) {
        return fail(exit_usage_error, e.what());
    } catch (const DataError& e) {
        return fail(exit_data_error, e.what());
    } catch (const std::bad_alloc&) {
        return fail(exit_data_error, "out of memory");
    } catch (const std::exception& e) {
        return fail(exit_data_error, fmt::format("internal error: {}", e.what()));
    }
}

// A command that reads an input and traces it: its flags turned into the request, then `job`
// given the request and the outputs (-o FILE or stdout).
template <typename Request, typename Job>
Runner run_traced(std::shared_ptr<State<Request, TracedFlags>> s, Job job) {
    return [s, job] {
        return run(
            [&](Outputs& outputs) {
                s->flags.apply(s->request, outputs.main_output());
                return job(std::move(s->request), outputs);
            },
            s->flags.output.path);
    };
}

// A subcommand: its name and summary, what adds its options (and returns what runs it), and
// the examples at the end of its --help. Adding one is an entry of the table and its function,
// both in cli/subcommands.cpp.
struct Subcommand {
    const char* name;
    const char* summary;
    Runner (*add)(CLI::App*);
    std::vector<UsageExample> examples;
};
// The subcommands, in the order of attntrace --help.
const std::vector<Subcommand>& subcommand_table();

// "attntrace", or "attntrace decode": the command `app` is, as a user types it
// (cli/messages.cpp, as the rest of this block).
std::string command_name(const CLI::App& app);
// "A and B", "INPUT": the positionals `app` takes.
std::string positionals_of(const CLI::App& app);
// CLI11's messages said our way, naming the option as --help shows it and saying what to do.
// `active`: the command parsed.
std::string said_our_way(const CLI::ParseError& e, const CLI::App& active);
// What was given to attntrace itself when `command` runs, which neither may drop. Empty when
// there is none.
std::string given_to_attntrace(const CLI::App& app, const CLI::App& command);
// A first word that is neither a file nor an example but close to a command's name: that name,
// in a message. Empty otherwise.
std::string misspelt_command(const std::vector<Command>& subcommands, int argc, char** argv);
// An unknown option or a misspelt command, said usefully; empty when neither applies.
std::string unexpected_argument(const CLI::App& app, const std::vector<Command>& subcommands, int argc, char** argv);

// --help's layout: the options in their groups, each line wrapped to the width, and the
// examples at the end (cli/help.cpp, as the rest of this block).
class HelpFormatter : public CLI::Formatter {
public:
    std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const override;
    std::string make_usage(const CLI::App* app, std::string name) const override;
    std::string make_option(const CLI::Option* o, bool positional) const override;
    std::string make_subcommand(const CLI::App* sub) const override;
    std::string make_option_name(const CLI::Option* o, bool) const override;
    std::string make_option_opts(const CLI::Option* o) const override;
    std::string make_option_desc(const CLI::Option* o) const override;
    // The help with the default, when it has one it does not state.
    static std::string help_of(const CLI::Option& o);
};
// The examples at the end of each command's --help.
std::map<const CLI::App*, std::vector<UsageExample>>& help_examples();
// The last touches of a command's --help: its examples, and -h,--help last in its own group.
void finish_help(CLI::App& app, const std::vector<UsageExample>& examples);
// A command as data, for the man page and the completions.
CommandDoc command_doc(const CLI::App& app, const std::vector<UsageExample>& examples);

}  // namespace attntrace::cli
