// --help: the options in their groups (positionals with the rest), a metavariable each, and the
// defaults CLI11 captured; every line wrapped to the width at spaces, and the columns padded by
// display width (cli/manual.hpp). And each command as data, for the man page and completions.
#include "cli/command_line.hpp"

#include "util/terminal.hpp"

#include <unistd.h>

namespace attntrace::cli {
namespace {

// The columns --help is laid out in: the terminal's, or 80 when standard output is not one.
std::size_t help_width() {
    constexpr std::size_t not_a_terminal = 80;
    if (!is_terminal(STDOUT_FILENO)) return not_a_terminal;
    const std::size_t columns = output_width(STDOUT_FILENO, true);
    return columns == 0 ? not_a_terminal : columns;
}

}  // namespace

std::map<const CLI::App*, std::vector<UsageExample>>& help_examples() {
    static std::map<const CLI::App*, std::vector<UsageExample>> examples;
    return examples;
}

std::string HelpFormatter::make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const {
    const std::size_t width = help_width();
    std::string out;
    for (const std::string& line : help_lines(app->get_description(), width)) out += line + '\n';
    std::string usage = make_usage(app, name);
    while (!usage.empty() && usage.back() == '\n') usage.pop_back();
    bool first = true;
    for (const std::string& line : help_lines(usage, width > 4 ? width - 4 : 1)) {
        out += (first ? "" : "    ") + line + '\n';
        first = false;
    }
    for (const std::string& group : app->get_groups()) {
        auto options = app->get_options([&](const CLI::Option* o) { return o->get_group() == group; });
        if (!group.empty() && group != unlisted_group && !options.empty()) out += make_group(group, false, options);
    }
    out += make_subcommands(app, mode) + "\n";
    if (const auto it = help_examples().find(app); it != help_examples().end())
        out += examples_text(it->second, width);
    return out;
}

// CLI11's usage line, without the arguments hidden from --help.
std::string HelpFormatter::make_usage(const CLI::App* app, std::string name) const {
    std::string out = "Usage: " + name;
    if (!app->get_options([](const CLI::Option* o) { return o->nonpositional(); }).empty()) out += " [OPTIONS]";
    for (const CLI::Option* o :
         app->get_options([](const CLI::Option* o) { return o->get_positional() && !o->get_group().empty(); }))
        out += " " + make_option_usage(o);
    if (!app->get_subcommands([](const CLI::App* sub) { return !sub->get_disabled() && !sub->get_name().empty(); })
             .empty())
        out += " [SUBCOMMAND]";
    return out + "\n";
}

std::string HelpFormatter::make_option(const CLI::Option* o, bool positional) const {
    return help_row("  " + make_option_name(o, positional) + make_option_opts(o), make_option_desc(o),
                    get_column_width(), help_width());
}

std::string HelpFormatter::make_subcommand(const CLI::App* sub) const {
    return help_row("  " + sub->get_display_name(), sub->get_description(), get_column_width(), help_width());
}

std::string HelpFormatter::make_option_name(const CLI::Option* o, bool) const {
    return o->get_positional() ? o->get_name(true, false) : o->get_name(false, true);
}

std::string HelpFormatter::make_option_opts(const CLI::Option* o) const {
    return o->get_option_text().empty() ? "" : " " + o->get_option_text();
}

std::string HelpFormatter::make_option_desc(const CLI::Option* o) const { return help_of(*o); }

std::string HelpFormatter::help_of(const CLI::Option& o) {
    const std::string& help = o.get_description();
    if (o.get_default_str().empty() || help.find("default") != std::string::npos) return help;
    return fmt::format("{} (default: {})", help, o.get_default_str());
}

// The last touches of a command's --help: its examples, and -h,--help last in its own group.
void finish_help(CLI::App& app, const std::vector<UsageExample>& examples) {
    help_examples()[&app] = examples;
    app.set_help_flag("-h,--help", "print this help and exit")->group("Help");
}

CommandDoc command_doc(const CLI::App& app, const std::vector<UsageExample>& examples) {
    CommandDoc doc;
    doc.name = app.get_parent() ? app.get_name() : "";
    doc.summary = app.get_description();
    std::string usage = HelpFormatter().make_usage(&app, doc.name.empty() ? "attntrace" : "attntrace " + doc.name);
    usage = usage.substr(usage.find(':') + 2);
    while (!usage.empty() && usage.back() == '\n') usage.pop_back();
    doc.usage = usage;
    doc.examples = examples;
    for (const CLI::Option* o : app.get_options()) {
        if (o->get_group().empty() || o->get_group() == unlisted_group) continue;
        OptionDoc option;
        if (o->get_positional()) option.positional = o->get_name(true, false);
        for (const auto& name : o->get_snames()) option.flags.push_back("-" + name);
        for (const auto& name : o->get_lnames()) option.flags.push_back("--" + name);
        option.metavar = o->get_option_text();
        option.help = HelpFormatter::help_of(*o);
        option.group = o->get_group();
        if (const auto it = option_values().find(o); it != option_values().end()) {
            option.choices = it->second.choices;
            option.completes = it->second.completes;
        }
        doc.options.push_back(std::move(option));
    }
    return doc;
}

}  // namespace attntrace::cli
