// The command line's messages: CLI11's errors said our way, what was given in the wrong place,
// and the closest name to a misspelt command or option.
#include "cli/command_line.hpp"

#include "util/suggest.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

namespace attntrace::cli {
namespace {

// Every name an option of `app` answers to ("--temperature", "-q").
std::vector<std::string> option_names(const CLI::App& app) {
    std::vector<std::string> names{"--help"};
    for (const CLI::Option* option : app.get_options()) {
        for (const auto& name : option->get_lnames()) names.push_back("--" + name);
        for (const auto& name : option->get_snames()) names.push_back("-" + name);
    }
    return names;
}

// The option of `app` that CLI11's messages call `name` (its get_name(): "--output", "INPUT").
const CLI::Option* option_named(const CLI::App& app, std::string_view name) {
    for (const CLI::Option* option : app.get_options())
        if (!name.empty() && option->get_name() == name) return option;
    return nullptr;
}

// "--output FILE", "INPUT": an option as its --help line shows it, with what it takes.
std::string usage_of(const CLI::App& app, std::string_view name) {
    const CLI::Option* o = option_named(app, name);
    if (!o) return std::string(name);
    if (o->get_positional()) return o->get_name(true, false);
    const std::string flag = o->get_lnames().empty() ? "-" + o->get_snames().front() : "--" + o->get_lnames().front();
    return o->get_option_text().empty() ? flag : flag + " " + o->get_option_text();
}

// The text after `prefix` when `text` starts with it.
std::optional<std::string_view> after(std::string_view text, std::string_view prefix) {
    if (!text.starts_with(prefix)) return std::nullopt;
    return text.substr(prefix.size());
}
}  // namespace

// "attntrace", or "attntrace decode": the command `app` is, as a user types it.
std::string command_name(const CLI::App& app) {
    return app.get_parent() ? "attntrace " + app.get_name() : std::string("attntrace");
}

// "A and B", "INPUT": the positionals `app` takes.
std::string positionals_of(const CLI::App& app) {
    std::vector<std::string> names;
    for (const CLI::Option* o : app.get_options([](const CLI::Option* o) { return o->get_positional(); }))
        names.push_back(o->get_name(true, false));
    if (names.empty()) return "no arguments besides its options";
    if (names.size() == 1) return "one argument, " + names.front();
    const std::string last = names.back();
    names.pop_back();
    return fmt::format("{} and {}", fmt::join(names, ", "), last);
}

namespace {

// "attntrace compare takes A and B: "x" is one too many" for the arguments `active` was
// given beyond its own; nothing when there are none.
std::optional<std::string> arguments_too_many(const CLI::App& active) {
    std::vector<std::string> extras = active.remaining();
    if (const auto dashes = std::find(extras.begin(), extras.end(), "--"); dashes != extras.end())
        extras.erase(dashes);  // CLI11 hands the "--" back among them
    if (extras.empty()) return std::nullopt;
    std::vector<std::string> shown;
    for (std::size_t i = 0; i < extras.size() && i < 4; ++i) shown.push_back(fmt::format("\"{}\"", printable(extras[i], 64)));
    return fmt::format("{} takes {}: {} {} too many", command_name(active), positionals_of(active),
                       bounded_join(shown, extras.size()), extras.size() == 1 ? "is one" : "are");
}

}  // namespace

// CLI11's messages said our way, naming the option as --help shows it and saying what to do
// ("--output needs a value: --output FILE" for "--output: 1 required TEXT missing"). Each
// form CLI11 2 has for what a user can type; the messages of our own validators ("--digits:
// expected a whole number from 0 to 17, found 99") are kept. `active`: the command parsed.
std::string said_our_way(const CLI::ParseError& e, const CLI::App& active) {
    const std::string text = e.what();
    const std::string command = command_name(active);
    const auto split = [&](std::string_view separator) -> std::pair<std::string, std::string> {
        const std::size_t at = text.find(separator);
        if (at == std::string::npos) return {text, ""};
        return {text.substr(0, at), text.substr(at + separator.size())};
    };
    if (dynamic_cast<const CLI::RequiredError*>(&e)) {  // "INPUT is required", "--token is required"
        const auto [name, rest] = split(" is required");
        const CLI::Option* o = option_named(active, name);
        return o ? fmt::format("{} needs {}: {}", command, usage_of(active, name), o->get_description())
                 : fmt::format("{} needs {}", command, printable(name, 64));
    }
    if (dynamic_cast<const CLI::ArgumentMismatch*>(&e)) {
        // "--output: 1 required TEXT missing", "--format: At Most 1 required but received 2",
        // "--sizes: At least 1 required but received 0"
        const auto [name, rest] = split(": ");
        if (rest.starts_with("At Most")) {
            const CLI::Option* o = option_named(active, name);
            std::vector<std::string> given;
            if (o)
                for (const std::string& value : o->results()) given.push_back(printable(value, 24));
            return fmt::format("{} is given {} times{}: give it once", name, given.size() > 1 ? given.size() : 2,
                               given.size() > 1 ? fmt::format(" ({})", fmt::join(given, ", ")) : "");
        }
        if (rest.ends_with("missing") || rest.starts_with("At least"))
            return fmt::format("{} needs a value: {}", name, usage_of(active, name));
    }
    if (dynamic_cast<const CLI::ExtrasError*>(&e))  // "The following argument was not expected: b"
        if (auto too_many = arguments_too_many(active)) return *too_many;
    if (dynamic_cast<const CLI::RequiresError*>(&e)) {  // "--layer requires --from"
        const auto [name, needed] = split(" requires ");
        return fmt::format("{} needs {}", usage_of(active, name), usage_of(active, needed));
    }
    if (dynamic_cast<const CLI::ExcludesError*>(&e)) {  // "INPUT excludes --example"
        const auto [name, other] = split(" excludes ");
        return fmt::format("{} and {} do not go together: give one of them", name, other);
    }
    if (dynamic_cast<const CLI::ConversionError*>(&e)) {
        // "--tidy: too many inputs for a flag", "--tidy: Should be true/false or a number",
        // "Could not convert: --top = x", "The value x is not an allowed value for --top"
        if (const auto rest = after(text, "Could not convert: ")) {
            const std::string_view value = rest->substr(std::min(rest->find(" = "), rest->size()));
            const std::string_view name = rest->substr(0, rest->find(" = "));
            if (const CLI::Option* o = option_named(active, name); o && o->get_expected_max() == 0)
                return fmt::format("{} is a flag: give it alone, without a value", name);
            return fmt::format("{}: cannot read \"{}\" as its value", name,
                               printable(value.size() > 3 ? value.substr(3) : std::string_view(), 64));
        }
        if (text.ends_with(": too many inputs for a flag") || text.ends_with(": Should be true/false or a number"))
            return fmt::format("{} is a flag: give it alone, without a value", split(": ").first);
        if (const auto rest = after(text, "The value ")) {
            const std::size_t at = rest->find(" is not an allowed value for ");
            if (at != std::string_view::npos)
                return fmt::format("{}: \"{}\" is not a value it takes", rest->substr(at + 29),
                                   printable(rest->substr(0, at), 64));
        }
    }
    if (dynamic_cast<const CLI::ValidationError*>(&e))
        if (const auto rest = after(text, ": ")) return std::string(*rest);  // a hidden option's validator names it
    return text;
}

// What was given to attntrace itself when `command` runs, which neither may drop: an argument
// after "--" that the command has no place for (CLI11 hands it up to attntrace's INPUT), or
// an option before the command's name. Empty when there is none.
std::string given_to_attntrace(const CLI::App& app, const CLI::App& command) {
    for (const CLI::Option* o : app.get_options()) {
        if (o->count() == 0) continue;
        if (o->get_positional()) {
            std::vector<std::string> shown;
            for (const std::string& arg : o->results()) shown.push_back(fmt::format("\"{}\"", printable(arg, 64)));
            return fmt::format("{} takes {}: {} {} too many", command_name(command), positionals_of(command),
                               bounded_join(shown, shown.size()), shown.size() == 1 ? "is one" : "are");
        }
        const std::string name = o->get_name();
        if (option_named(command, name))
            return fmt::format("{} is given before {}: a command's options go after its name ({} {} …)", name,
                               command.get_name(), command_name(command), name);
        return fmt::format("{} has no option {} (attntrace's own, for a trace without a command)", command_name(command),
                           name);
    }
    return {};
}

// A first word that is neither a file nor an example but close to a command's name: that
// name, in a message. Empty otherwise. (`attntrace simlarity` alone parses, its word taken for
// the INPUT; with more words CLI11 finds one too many.)
std::string misspelt_command(const std::vector<Command>& subcommands, int argc, char** argv) {
    if (argc < 2) return {};
    const std::string first = argv[1];
    std::vector<std::string> commands{"help"};
    for (const Command& command : subcommands) commands.push_back(command.app->get_name());
    std::error_code error;
    if (first.starts_with("-") || first.starts_with("example:") || std::filesystem::exists(first, error)) return {};
    if (const auto near = likely_typo(first, commands))
        return fmt::format("\"{}\" is neither a file nor a command (did you mean {}?)", printable(first, 64), *near);
    return {};
}

// CLI11's "argument was not expected" (or "--token is required") made useful: a first word
// that is no file but close to a command's name gets that name; else an option the command
// does not have gets the closest one it has. Empty when neither applies.
std::string unexpected_argument(const CLI::App& app, const std::vector<Command>& subcommands, int argc, char** argv) {
    const CLI::App* active = &app;
    for (const Command& command : subcommands)
        if (command.app->parsed()) active = command.app;
    // A misspelt command first: the options after it are that command's.
    if (active == &app)
        if (std::string misspelt = misspelt_command(subcommands, argc, argv); !misspelt.empty()) return misspelt;
    const std::vector<std::string> known = option_names(*active);
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--") break;  // nothing after it is an option
        if (arg.size() < 2 || arg[0] != '-') continue;
        const std::string name = arg.substr(0, arg.find('='));
        if (std::find(known.begin(), known.end(), name) != known.end()) continue;
        const auto near = name.size() > 2 ? likely_typo(name, known) : std::nullopt;  // "-x": any letter is one away
        const std::string command = active == &app ? "attntrace" : "attntrace " + active->get_name();
        return fmt::format("{} has no option {}{}", command, printable(name, 64),
                           near ? fmt::format(" (did you mean {}?)", *near) : "");
    }
    return {};
}

}  // namespace attntrace::cli
