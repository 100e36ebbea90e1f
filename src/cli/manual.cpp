#include "cli/manual.hpp"

#include "util/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace attntrace {
namespace {

// Text for roff: backslashes and hyphens escaped (\- is the hyphen-minus a reader types), and
// a line that would start with a control character protected by \&.
std::string roff(std::string_view text) {
    std::string out;
    bool line_start = true;
    for (const char c : text) {
        if (line_start && (c == '.' || c == '\'')) out += "\\&";
        if (c == '\\') out += "\\e";
        else if (c == '-') out += "\\-";
        else out += c;
        line_start = c == '\n';
    }
    return out;
}

// Text for an argument of a macro (.B): as roff(), and its double quotes as \(dq, which roff
// would otherwise take for the quotes around an argument and drop.
std::string roff_argument(std::string_view text) {
    std::string out;
    for (const char c : roff(text)) {
        if (c == '"') out += "\\(dq";
        else out += c;
    }
    return out;
}

// "\fB-m\fR, \fB--mode\fR \fIMODE\fR" for a .TP heading.
std::string roff_heading(const OptionDoc& o) {
    if (o.flags.empty()) return fmt::format("\\fI{}\\fR", roff(o.positional));
    std::string out;
    for (const auto& flag : o.flags) out += fmt::format("{}\\fB{}\\fR", out.empty() ? "" : ", ", roff(flag));
    if (!o.metavar.empty()) out += fmt::format(" \\fI{}\\fR", roff(o.metavar));
    return out;
}

void roff_options(std::string& out, const std::vector<OptionDoc>& options, std::string_view group) {
    for (const OptionDoc& o : options)
        if (group.empty() || o.group == group) out += fmt::format(".TP\n{}\n{}\n", roff_heading(o), roff(o.help));
}

void roff_examples(std::string& out, const std::vector<UsageExample>& examples) {
    for (const UsageExample& e : examples) out += fmt::format(".TP\n.B {}\n{}\n", roff_argument(e.command), roff(e.says));
}

// "attntrace similarity [OPTIONS] INPUT": the command in bold, the rest as it is.
std::string roff_usage(const CommandDoc& c) {
    const std::string command = c.name.empty() ? "attntrace" : "attntrace " + c.name;
    return fmt::format(".B {}\n{}\n", roff_argument(command),
                       roff(c.usage.substr(std::min(c.usage.size(), command.size() + 1))));
}

// The values a completion offers for option `o`.
std::vector<std::string> offered(const OptionDoc& o, const ProgramDoc& doc) {
    if (o.completes == Completes::example) return doc.example_names;
    if (o.completes == Completes::choice || o.completes == Completes::list) return o.choices;
    return {};
}

std::string words(const std::vector<std::string>& items) { return fmt::format("{}", fmt::join(items, " ")); }

std::vector<std::string> all_flags(const CommandDoc& c) {
    std::vector<std::string> flags;
    for (const OptionDoc& o : c.options) flags.insert(flags.end(), o.flags.begin(), o.flags.end());
    return flags;
}

std::vector<std::string> subcommand_names(const ProgramDoc& doc) {
    std::vector<std::string> names;
    for (const CommandDoc& c : doc.subcommands) names.push_back(c.name);
    return names;
}

// Short help for the completion menus: the help up to its first ';' or '(' and at most 70
// characters, in characters the scripts' syntax gives no meaning to.
std::string short_help(std::string_view help) {
    std::string out(help.substr(0, help.find_first_of(";(")));
    while (!out.empty() && (out.back() == ' ' || out.back() == ',' || out.back() == ':')) out.pop_back();
    if (out.size() > 70) {
        out.resize(70);
        while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80) out.pop_back();
        if (!out.empty()) out.pop_back();  // the first byte of a cut character, or a letter
        out += "…";
    }
    // The characters the scripts' quoting gives meaning to, in a form they do not: an
    // apostrophe as ’, a colon before a space as a dash, brackets as parentheses; double
    // quotes, backslashes, backquotes and dollars dropped.
    std::string safe;
    for (std::size_t i = 0; i < out.size(); ++i) {
        const char c = out[i];
        if (c == '\'') safe += "’";
        else if (c == ':') safe += i + 1 < out.size() && out[i + 1] == ' ' ? " —" : " ";
        else if (c == '[') safe += '(';
        else if (c == ']') safe += ')';
        else if (c != '"' && c != '\\' && c != '`' && c != '$') safe += c;
    }
    return safe;
}

// bash: the `case` arms that complete an option's value.
void bash_values(std::string& out, const CommandDoc& c, const ProgramDoc& doc, std::string_view indent) {
    for (const OptionDoc& o : c.options) {
        if (o.flags.empty() || o.metavar.empty()) continue;
        std::string action;
        switch (o.completes) {
        case Completes::file: action = "_attntrace_files"; break;
        case Completes::input: action = "_attntrace_inputs"; break;
        case Completes::nothing: action = "return"; break;
        case Completes::list: action = fmt::format("_attntrace_list \"{}\"", words(offered(o, doc))); break;
        default: action = fmt::format("_attntrace_words \"{}\"", words(offered(o, doc)));
        }
        out += fmt::format("{}{}) {}; return ;;\n", indent, fmt::join(o.flags, "|"), action);
    }
}

}  // namespace

std::vector<std::string> help_lines(std::string_view text, std::size_t room, bool shell) {
    // The words: cut at spaces, and in a shell command only at spaces outside quotes (a break
    // inside '…' would become part of the quoted text).
    std::vector<std::string> words;
    std::string word;
    char quote = 0;
    for (const char c : text) {
        if (c == ' ' && quote == 0) {
            if (!word.empty()) words.push_back(std::move(word));
            word.clear();
            continue;
        }
        if (shell && quote == 0 && (c == '\'' || c == '"')) quote = c;
        else if (shell && c == quote) quote = 0;
        word += c;
    }
    if (!word.empty()) words.push_back(std::move(word));
    // A shell command's lines end in " \\" (the command goes on): two columns kept for it.
    const std::size_t fits = shell && room > 2 ? room - 2 : room;
    std::vector<std::string> lines;
    std::string line;
    for (const std::string& w : words) {
        if (!line.empty() && display_width(line) + 1 + display_width(w) > fits) {
            lines.push_back(shell ? line + " \\" : line);
            line.clear();
        }
        if (!line.empty()) line += ' ';
        line += w;
    }
    if (!line.empty() || lines.empty()) lines.push_back(line);
    return lines;
}

std::string help_row(std::string_view left, std::string_view text, std::size_t column, std::size_t width) {
    // A narrow terminal: the text under the name, indented, rather than a column a few
    // characters wide.
    constexpr std::size_t least_room = 24;
    if (width < column + least_room) column = std::min<std::size_t>(6, width / 4);
    const std::size_t room = width > column ? width - column : 1;
    std::string out(left);
    const std::size_t used = display_width(left);
    bool first = true;
    for (const std::string& line : help_lines(text, room)) {
        if (first && used + 1 <= column) out.append(column - used, ' ');  // by display width: "…" is one column
        else out += '\n' + std::string(column, ' ');
        out += line;
        first = false;
    }
    return out + '\n';
}

std::string examples_text(const std::vector<UsageExample>& examples, std::size_t width) {
    std::string out = "Examples:\n";
    constexpr std::size_t command_indent = 2, says_indent = 6;
    for (const UsageExample& e : examples) {
        bool first = true;
        // A command that fits on its line stays whole; a longer one goes on, indented, below.
        const std::size_t room = display_width(e.command) + command_indent <= width ? display_width(e.command) + 2
                                 : width > says_indent                              ? width - says_indent
                                                                                    : 1;
        for (const std::string& line : help_lines(e.command, room, true)) {
            out += std::string(first ? command_indent : says_indent, ' ') + line + '\n';
            first = false;
        }
        for (const std::string& line : help_lines(e.says, width > says_indent ? width - says_indent : 1))
            out += std::string(says_indent, ' ') + line + '\n';
    }
    return out;
}

// The sections after the examples, the same for every build: exit status, environment, files.
constexpr std::string_view man_page_end = R"~(.SH EXIT STATUS
.TP
.B 0
success (for \-\-check: every invariant holds)
.TP
.B 1
a problem with the input or its numbers, a limit, or an output that cannot be written; one
line starting \(lqattntrace: error:\(rq on standard error, nothing on standard output
.TP
.B 2
a usage error: an unknown option, a bad value, options that do not fit the input; one line
on standard error, nothing on standard output
.TP
.B 141
the reader of a pipe went away (or the program ended by SIGPIPE, which shells show as 141)
.SH ENVIRONMENT
.TP
.B NO_COLOR
set and not empty: no colour with \-\-color auto
.TP
.B TERM
\(lqdumb\(rq: no colour with \-\-color auto
.TP
.B COLUMNS
the width of tables written to standard output when it is not a terminal
.TP
.B OMP_NUM_THREADS
threads when \-\-threads is not given
.TP
.B ATTNTRACE_KERNELS
\(lqbaseline\(rq or \(lqavx2\(rq: use no wider copy of the kernels than that one (the copy
for any x86\-64 CPU, or the one for AVX2 with FMA), even where the CPU runs a wider one;
\-V says which copy runs
.SH FILES
.TP
.I share/doc/attntrace/
under the prefix attntrace was installed to (/usr for the Debian package, /usr/local for
\(lqmake install\(rq by default): the README, the change log, the documentation (docs/, with
the JSON Schemas in docs/schema/) and the example inputs (examples/, also built into the
program)
.TP
.I share/bash\-completion/completions/attntrace, share/zsh/vendor\-completions/_attntrace, share/fish/vendor_completions.d/attntrace.fish
completion of options, modes, formats, example names and commands (zsh's in
share/zsh/site\-functions/ under any prefix but /usr, where zsh looks for it)
.SH SEE ALSO
.BR jq (1),
.BR python3 (1)
)~";

std::string man_page(const ProgramDoc& doc) {
    std::string out = fmt::format(".TH ATTNTRACE 1 \"\" \"attntrace {}\" \"User Commands\"\n", doc.version);
    out += ".SH NAME\nattntrace \\- trace the attention mechanism step by step\n";
    out += ".SH SYNOPSIS\n" + roff_usage(doc.main);
    for (const CommandDoc& c : doc.subcommands) out += ".br\n" + roff_usage(c);
    out += ".SH DESCRIPTION\n";
    for (const auto& paragraph : doc.description) out += ".PP\n" + roff(paragraph) + "\n";
    out += ".SH OPTIONS\n";
    for (const auto& group : doc.groups) {
        out += fmt::format(".SS \"{}\"\n", roff(group));
        roff_options(out, doc.main.options, group);
    }
    out += ".SH COMMANDS\n";
    for (const CommandDoc& c : doc.subcommands) {
        out += fmt::format(".SS \"{}\"\n{}\n.PP\n{}", roff(c.name), roff(c.summary), roff_usage(c));
        roff_options(out, c.options, "");
        out += ".PP\nExamples:\n";
        roff_examples(out, c.examples);
    }
    out += ".SH EXAMPLES\n";
    roff_examples(out, doc.main.examples);
    out += man_page_end;
    return out;
}

std::string bash_completion(const ProgramDoc& doc) {
    std::string out = fmt::format(R"~(# bash completion for attntrace {}, generated from its option definitions by
# `attntrace --completions bash`. Needs nothing but bash.

_attntrace_words() {{ COMPREPLY=($(compgen -W "$1" -- "$cur")); }}
# A comma-separated list: complete the item after the last comma.
_attntrace_list() {{
    local done=""
    [[ $cur == *,* ]] && done=${{cur%,*}},
    COMPREPLY=($(compgen -P "$done" -W "$1" -- "${{cur##*,}}"))
    compopt -o nospace 2>/dev/null
}}
_attntrace_files() {{ compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")); }}
_attntrace_inputs() {{
    compopt -o filenames 2>/dev/null
    COMPREPLY=($(compgen -W "- $(printf 'example:%s ' {})" -- "$cur") $(compgen -f -X '!*.json' -- "$cur") \
               $(compgen -d -- "$cur"))
}}

_attntrace() {{
    local cur=${{COMP_WORDS[COMP_CWORD]}} prev="" i cmd=""
    (( COMP_CWORD > 0 )) && prev=${{COMP_WORDS[COMP_CWORD-1]}}
    # bash splits "--mode=causal" and "example:NAME" at = and :
    if [[ $prev == "=" ]]; then prev=${{COMP_WORDS[COMP_CWORD-2]}}; fi
    if [[ $cur == "=" ]]; then prev=${{COMP_WORDS[COMP_CWORD-1]}}; cur=""; fi
    if [[ $cur == ":" || $prev == ":" ]] && [[ ${{COMP_WORDS[COMP_CWORD-1]}}${{COMP_WORDS[COMP_CWORD-2]}} == *example* ]]; then
        [[ $cur == ":" ]] && cur=""
        _attntrace_words "{}"
        return
    fi
    for (( i = 1; i < COMP_CWORD; i++ )); do
        case ${{COMP_WORDS[i]}} in
            {}) cmd=${{COMP_WORDS[i]}}; break ;;
        esac
    done
    case $cmd in
)~",
                                  doc.version, words(doc.example_names), words(doc.example_names),
                                  fmt::join(subcommand_names(doc), "|"));
    for (const CommandDoc& c : doc.subcommands) {
        out += fmt::format("    {})\n        case $prev in\n", c.name);
        bash_values(out, c, doc, "            ");
        out += "        esac\n";
        const bool takes_input = std::any_of(c.options.begin(), c.options.end(), [](const OptionDoc& o) {
            return o.flags.empty() && o.completes == Completes::input;
        });
        // A positional of a few names (help's COMMAND): those names.
        const auto chosen = std::find_if(c.options.begin(), c.options.end(), [](const OptionDoc& o) {
            return o.flags.empty() && o.completes == Completes::choice;
        });
        const std::string argument = chosen != c.options.end()
                                         ? fmt::format("_attntrace_words \"{}\"", words(offered(*chosen, doc)))
                                         : std::string("_attntrace_inputs");
        out += fmt::format("        if [[ $cur == -* || {} == 0 ]]; then _attntrace_words \"{}\"; else {}; fi\n        ;;\n",
                           takes_input || chosen != c.options.end() ? 1 : 0, words(all_flags(c)), argument);
    }
    out += "    *)\n        case $prev in\n";
    bash_values(out, doc.main, doc, "            ");
    out += fmt::format(R"~(        esac
        if [[ $cur == -* ]]; then _attntrace_words "{}"; return; fi
        _attntrace_inputs
        COMPREPLY+=($(compgen -W "{}" -- "$cur"))
        ;;
    esac
}}
complete -F _attntrace attntrace
)~",
                       words(all_flags(doc.main)), words(subcommand_names(doc)));
    return out;
}

std::string zsh_completion(const ProgramDoc& doc) {
    const auto specs = [&](const CommandDoc& c) {
        std::string out;
        for (const OptionDoc& o : c.options) {
            std::string action;
            switch (o.completes) {
            case Completes::file: action = "_files"; break;
            case Completes::input: action = "_attntrace_input"; break;
            case Completes::nothing: action = " "; break;
            case Completes::list: action = fmt::format("_sequence compadd - {}", words(offered(o, doc))); break;
            default: action = fmt::format("({})", words(offered(o, doc)));
            }
            const std::string help = short_help(o.help);
            if (o.flags.empty()) {
                out += fmt::format("      '{}:{}:{}' \\\n", o.positional == "B" ? "2" : "1", help, action);
                continue;
            }
            const std::string value = o.metavar.empty() ? "" : fmt::format(":{}:{}", o.metavar, action);
            if (o.flags.size() == 1)
                out += fmt::format("      '{}[{}]{}' \\\n", o.flags[0], help, value);
            else
                out += fmt::format("      '({})'{{{}}}'[{}]{}' \\\n", words(o.flags), fmt::join(o.flags, ","), help, value);
        }
        return out;
    };
    std::string out = fmt::format(R"~(#compdef attntrace
# zsh completion for attntrace {}, generated from its option definitions by
# `attntrace --completions zsh`.

_attntrace_input() {{
  _alternative 'examples:example:(- {})' 'files:JSON file:_files -g "*.json"'
}}

_attntrace() {{
  local -a commands=(
)~",
                                  doc.version, [&] {
                                      std::string list;
                                      for (const auto& name : doc.example_names) list += "example\\:" + name + " ";
                                      return list;
                                  }());
    for (const CommandDoc& c : doc.subcommands) out += fmt::format("    '{}:{}'\n", c.name, short_help(c.summary));
    out += "  )\n  case ${words[2]} in\n";
    for (const CommandDoc& c : doc.subcommands) {
        out += fmt::format("    {})\n      shift words; (( CURRENT-- ))\n      _arguments -s \\\n", c.name);
        out += specs(c) + "      && return ;;\n";
    }
    out += "    *)\n      _arguments -s \\\n" + specs(doc.main);
    out += R"~(      '*::command:->first' && return
      _describe command commands ;;
  esac
}

_attntrace "$@"
)~";
    return out;
}

std::string fish_completion(const ProgramDoc& doc) {
    const std::string subcommands = words(subcommand_names(doc));
    std::string out = fmt::format(R"~(# fish completion for attntrace {}, generated from its option definitions by
# `attntrace --completions fish`.
complete -c attntrace -f
)~",
                                  doc.version);
    const auto options = [&](const CommandDoc& c, const std::string& condition) {
        for (const OptionDoc& o : c.options) {
            std::string line = fmt::format("complete -c attntrace -n '{}'", condition);
            if (o.flags.empty()) {
                if (o.completes == Completes::input) {
                    std::string inputs = "-";
                    for (const auto& name : doc.example_names) inputs += " example:" + name;
                    out += fmt::format("{} -k -a '(__fish_complete_suffix .json)'\n{} -a '{}'\n", line, line, inputs);
                } else if (o.completes == Completes::choice) {
                    out += fmt::format("{} -a '{}'\n", line, words(offered(o, doc)));
                }
                continue;
            }
            for (const auto& flag : o.flags)
                line += flag.starts_with("--") ? fmt::format(" -l {}", flag.substr(2)) : fmt::format(" -s {}", flag.substr(1));
            if (!o.metavar.empty()) line += o.completes == Completes::file || o.completes == Completes::input ? " -r -F" : " -x";
            if (const auto values = offered(o, doc); !values.empty()) line += fmt::format(" -a '{}'", words(values));
            out += fmt::format("{} -d '{}'\n", line, short_help(o.help));
        }
    };
    options(doc.main, "not __fish_seen_subcommand_from " + subcommands);
    for (const CommandDoc& c : doc.subcommands) {
        out += fmt::format("complete -c attntrace -n 'not __fish_seen_subcommand_from {}' -a {} -d '{}'\n", subcommands,
                           c.name, short_help(c.summary));
        options(c, "__fish_seen_subcommand_from " + c.name);
    }
    return out;
}

}  // namespace attntrace
