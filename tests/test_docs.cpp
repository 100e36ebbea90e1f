// What the docs say attntrace prints is run again here, three ways.
//
// 1. Console blocks. Every command shown with its output in README.md and docs/*.md
//    (```console blocks whose lines start with "$ build/attntrace") is run again from the
//    source tree; the test fails when the output drifts from the page. A block whose last
//    line is "[exit status N]" expects that exit status (attntrace does not print the line).
//
// 2. Test comments, for a sentence of prose that says what attntrace prints or does. Right
//    after the sentence, an HTML comment (invisible on the rendered page) names a command and
//    what its output must hold:
//
//        <!-- test: build/attntrace -m causal --window 2 -s masked
//        shows: S'' = S' with −∞ where key j > query i or i − j ≥ 2
//        -->
//
//    The first line is `<!-- test: ` and the command, quoted as in a console block; the
//    comment ends with a line `-->`; each line between is `key: value` (all of them may be
//    indented, to keep the comment inside a list item):
//      shows: TEXT            TEXT occurs in stdout + stderr
//      shows N times: TEXT    ... exactly N times
//      lacks: TEXT            TEXT does not occur
//      line: A … B … C        a line of the output starts with A, ends with C and holds B
//                             between them (no " … ": a line is exactly the text; "A …"
//                             leaves the end open, "… C" the start)
//      stderr: LINE           stderr is exactly LINE and a newline
//      stdout: empty          nothing on stdout
//      exit: N                the exit status (0 unless given)
//      json: PATH exists | PATH absent | PATH = JSON | PATH ≈ NUMBER | PATH size N
//                             stdout parsed as JSON; PATH is a JSON pointer where a segment
//                             `key=value` in an array picks the first element whose `key` is
//                             the string `value` (/stages/name=masked/mask_reason/0/1);
//                             numbers compare within 1e-6 of their size; ≈ takes a number
//                             shortened on the page: within half a unit of its last decimal
//      same as: build/attntrace ARGS   that command prints the same bytes, with the same status
//      stderr: empty          nothing on stderr
//    and about the folder the command ran in (any of these gives it a fresh folder):
//      holds NAME: TEXT       after the run, the file NAME holds TEXT (read through a link)
//      lacks NAME: TEXT       ... does not hold it
//      absent: NAME           there is no file NAME (NAME* : none whose name starts so)
//      is link: NAME          NAME is still a symbolic link
//      mode NAME: 644         NAME's permission bits
//    and, to set the run up (no claim of their own):
//      file NAME: TEXT        a line of a file NAME, in a fresh folder the command runs in
//                             (several lines with the same NAME make one file; NAME may
//                             name a subfolder, which is made)
//      hex NAME: 7b 0a …      bytes of that file, in hexadecimal (no newline added)
//      link NAME: TARGET      a symbolic link; hard link NAME: FILE, a second name for FILE
//      socket: NAME           a Unix socket bound at NAME
//      chmod NAME: 444        permission bits set before the run
//      setup: build/attntrace ARGS     run first in that folder (say, generate -o long.json)
//      stdin: TEXT            a line fed on standard input (not with a folder)
//      env: NAME=VALUE        an environment variable for the runs
//    and where the command's output goes, when not to a pipe read whole:
//      terminal: COLUMNS      stdout and stderr a pseudo-terminal that wide (the output is
//                             what the terminal received)
//      stdout to: PATH        stdout opened on PATH (/dev/full); ">> PATH" appends; "closed"
//                             closes it; "closed pipe" is a pipe whose reader has gone
//                             ("closed pipe, SIGPIPE ignored": and SIGPIPE ignored)
//      file size limit: N     a limit of N bytes on every file written (as ulimit -f)
//                             (at least 1024: LLVM's OpenMP runtime, in the sanitizer builds,
//                             sizes a 1 KiB file in /dev/shm as it starts, and fails below that)
//      umask: 027             the file mode mask the run starts with
//      signal: NAME after MS ms   the signal sent MS milliseconds after the start; in a
//                             terminal (200 columns), "NAME when TEXT" sends it once TEXT shows
//    In the command, in every value and in the names of files, {U+XXXX} stands for that
//    character (an escape, a bidirectional control), which a page cannot show.
//    The expected text is the sentence's own claim (a quoted phrase, a count, a field and its
//    value), written from the sentence, not pasted from a run. A comment must assert something,
//    and one at the margin has a blank line before and after it, so that it never splits a
//    paragraph of the rendered page.
//
// 3. The weight generator docs/input-format.md describes is written out here from the page, and
//    the weights it gives must be those attntrace prints under `parameters`.
#include "support/cli.hpp"

#include "support/catch.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

namespace {

struct Shown {
    std::string file;
    int line = 0;
    std::string command;
    std::vector<std::string> args;
    std::string output;
};

// Splits a command line at spaces, honouring '…' and "…" quoting (no other shell syntax).
std::vector<std::string> split_args(const std::string& command) {
    std::vector<std::string> args;
    std::string current;
    bool any = false;
    char quote = 0;
    for (const char c : command) {
        if (quote) {
            if (c == quote) quote = 0;
            else current += c;
        } else if (c == '\'' || c == '"') {
            quote = c;
            any = true;
        } else if (c == ' ') {
            if (any || !current.empty()) args.push_back(current);
            current.clear();
            any = false;
        } else {
            current += c;
        }
    }
    if (any || !current.empty()) args.push_back(current);
    return args;
}

std::vector<Shown> shown_commands(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::vector<Shown> out;
    bool in_console = false;
    int number = 0;
    for (std::string line; std::getline(in, line);) {
        ++number;
        if (!in_console) {
            in_console = line == "```console";
            continue;
        }
        if (line == "```") {
            in_console = false;
            continue;
        }
        const std::string prompt = "$ build/attntrace";
        if (line.rfind("$ ", 0) == 0) {
            REQUIRE(line.rfind(prompt, 0) == 0);  // only our own commands are shown
            Shown shown;
            shown.file = path.filename().string();
            shown.line = number;
            shown.command = line.substr(2);
            shown.args = split_args(line.substr(prompt.size()));
            out.push_back(std::move(shown));
        } else {
            REQUIRE(!out.empty());
            out.back().output += line + "\n";
        }
    }
    return out;
}

// --check, decode and --tiles print the rounding error they measured (say "= 5.6e-17"); its
// last digits depend on how the compiler ordered the sums (the sanitizer builds are clang -O1,
// the release GCC -O3), and so does whether it is 0 at all: a sum rounded the same way twice
// gives exactly 0, which decode words differently ("largest difference 0, to the last bit"
// against "within 1e-12 of their size: largest difference 5.6e-17, not 0, because …"). So in
// their output a figure below 1e-12 (the tolerance) reads as "ε", and a residual of 0 and the
// words around either read alike. Everything else is still compared, byte for byte.
std::string without_rounding_residuals(const Shown& shown, const std::string& text) {
    const auto has = [&](const std::string& arg) { return std::find(shown.args.begin(), shown.args.end(), arg) != shown.args.end(); };
    if (!has("--check") && !has("--tiles") && !has("decode")) return text;
    static const std::regex tiny(R"(\b\d(\.\d+)?e-(1[3-9]|[2-9]\d|\d{3})\b)");
    static const std::vector<std::pair<std::regex, std::string>> same_residual{
        {std::regex(R"( \(every row at once, by matrix products\): largest difference 0, to the last bit)"), " ≈ (ε)"},
        {std::regex(R"(: largest difference 0, to the last bit)"), " ≈ (ε)"},
        {std::regex(R"( within 1e-12 of their size: largest difference ε(, not 0(, because|:) [^\n]*)?)"), " ≈ (ε)"},
        {std::regex(R"(\(largest difference 0\))"), "(largest difference ε)"},
        {std::regex(R"( to the last bit \(largest difference ε\))"), " within 1e-12 of their size (largest difference ε)"},
        {std::regex(R"(largest \|context − weights·values\| = 0,)"), "largest |context − weights·values| = ε,"},
    };
    std::string out = std::regex_replace(text, tiny, "ε");
    for (const auto& [pattern, replacement] : same_residual) out = std::regex_replace(out, pattern, replacement);
    return out;
}

// JSON and JSON Lines print every number in full: their last digits depend on the build too
// (GCC or clang, the copy of the kernels the CPU runs: 0.9422 with one, 0.9421999999999999
// with another). Where the text differs, the JSON is compared field by field, numbers within
// 1e-6 of their size (float32's precision is about 6e-8), fields in the same order.
bool same_json(const nlohmann::ordered_json& x, const nlohmann::ordered_json& y) {
    if (x.is_number() && y.is_number()) {
        const double u = x.get<double>(), v = y.get<double>();
        return std::abs(u - v) <= 1e-6 * std::max({1.0, std::abs(u), std::abs(v)});
    }
    if (x.type() != y.type() || x.size() != y.size()) return false;
    if (x.is_object()) {
        for (auto a = x.begin(), b = y.begin(); a != x.end(); ++a, ++b)
            if (a.key() != b.key() || !same_json(*a, *b)) return false;
        return true;
    }
    if (x.is_array()) {
        for (std::size_t i = 0; i < x.size(); ++i)
            if (!same_json(x[i], y[i])) return false;
        return true;
    }
    return x == y;
}

// Each line of JSON Lines, or the whole text as one JSON document.
bool same_json_text(const std::string& got, const std::string& shown, bool lines) {
    std::istringstream a(got), b(shown);
    std::string line_a, line_b;
    try {
        if (!lines) return same_json(nlohmann::ordered_json::parse(got), nlohmann::ordered_json::parse(shown));
        while (true) {
            const bool more_a = static_cast<bool>(std::getline(a, line_a)),
                       more_b = static_cast<bool>(std::getline(b, line_b));
            if (more_a != more_b) return false;
            if (!more_a) return true;
            if (!same_json(nlohmann::ordered_json::parse(line_a), nlohmann::ordered_json::parse(line_b))) return false;
        }
    } catch (const nlohmann::json::exception&) {
        return false;
    }
}

// ---- Claims in prose: <!-- test: … --> comments ----------------------------------------------

struct Claim {
    std::string file;
    int line = 0;
    std::string command;                                    // "build/attntrace …", as written
    std::vector<std::pair<std::string, std::string>> items;  // key, value, in order
};

std::string trimmed(const std::string& text) {
    const auto first = text.find_first_not_of(' ');
    if (first == std::string::npos) return "";
    return text.substr(first, text.find_last_not_of(' ') - first + 1);
}

// Every `<!-- test: build/attntrace ARGS` … `-->` comment of a page, with its lines `key: value`.
std::vector<Claim> marked_claims(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::vector<Claim> out;
    bool open = false, just_closed = false;
    int number = 0;
    std::string previous;  // the line before, as written
    const std::string start = "<!-- test: ";
    for (std::string raw; std::getline(in, raw); previous = raw) {
        ++number;
        const std::string line = trimmed(raw);  // indented, a comment stays inside its list item
        const bool indented = raw != line;
        if (just_closed) {
            // A comment at the margin stands between paragraphs, not inside one (which it
            // would split in two on the rendered page).
            INFO(path.filename().string() << ":" << number << ": a blank line after a test comment");
            CHECK((line.empty() || line.rfind(start, 0) == 0));
            just_closed = false;
        }
        if (!open) {
            if (line.rfind(start, 0) != 0) continue;
            INFO(path.filename().string() << ":" << number << ": a blank line before a test comment");
            CHECK((indented || trimmed(previous).empty() || trimmed(previous) == "-->"));
            Claim claim;
            claim.file = path.filename().string();
            claim.line = number;
            claim.command = trimmed(line.substr(start.size()));
            out.push_back(std::move(claim));
            open = true;
            continue;
        }
        if (line == "-->") {
            open = false;
            just_closed = !indented;
            continue;
        }
        const auto colon = line.find(':');
        INFO(path.filename().string() << ":" << number << ": " << line);
        REQUIRE(colon != std::string::npos);  // each line of a claim is `key: value`
        std::string value = line.substr(colon + 1);
        if (value.starts_with(" ")) value.erase(0, 1);
        out.back().items.emplace_back(trimmed(line.substr(0, colon)), value);
    }
    INFO(path.filename().string() << ": a test comment is not closed by a line `-->`");
    CHECK(!open);
    return out;
}

// A JSON pointer, where a segment `key=value` in an array picks the first element whose member
// `key` is the string `value` (`/stages/name=masked/mask_reason/0/1`). Null when absent.
const nlohmann::ordered_json* at_path(const nlohmann::ordered_json& document, const std::string& path) {
    const nlohmann::ordered_json* here = &document;
    std::size_t begin = 0;
    if (path.empty()) return here;
    if (path[0] != '/') return nullptr;
    while (begin < path.size()) {
        const std::size_t end = std::min(path.find('/', begin + 1), path.size());
        const std::string segment = path.substr(begin + 1, end - begin - 1);
        begin = end;
        if (here->is_object()) {
            const auto found = here->find(segment);
            if (found == here->end()) return nullptr;
            here = &*found;
        } else if (here->is_array()) {
            const auto equals = segment.find('=');
            if (equals != std::string::npos) {
                const std::string key = segment.substr(0, equals), wanted = segment.substr(equals + 1);
                const auto found = std::find_if(here->begin(), here->end(), [&](const nlohmann::ordered_json& e) {
                    return e.is_object() && e.contains(key) && (*e.find(key)) == wanted;
                });
                if (found == here->end()) return nullptr;
                here = &*found;
            } else {
                if (segment.empty() || segment.find_first_not_of("0123456789") != std::string::npos) return nullptr;
                const std::size_t index = std::stoul(segment);
                if (index >= here->size()) return nullptr;
                here = &(*here)[index];
            }
        } else {
            return nullptr;
        }
    }
    return here;
}

std::size_t occurrences(const std::string& text, const std::string& part) {
    std::size_t count = 0;
    for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++count;
    return count;
}

// "7b 0a" → "{\n": the bytes of a file that text cannot show (a control character, bad UTF-8).
std::string from_hex(const std::string& text) {
    std::string bytes, digits;
    for (const char c : text)
        if (c != ' ') digits += c;
    REQUIRE(digits.size() % 2 == 0);
    for (std::size_t i = 0; i < digits.size(); i += 2) bytes += static_cast<char>(std::stoi(digits.substr(i, 2), nullptr, 16));
    return bytes;
}

std::vector<std::string> attntrace_args(const std::string& command) {
    const std::string prompt = "build/attntrace";
    REQUIRE(command.rfind(prompt, 0) == 0);  // only our own commands
    return split_args(command.substr(prompt.size()));
}

// "{U+1B}" → the character U+001B, in UTF-8: what a page cannot show.
std::string with_characters(const std::string& text) {
    static const std::regex code(R"(\{U\+([0-9A-Fa-f]{2,6})\})");
    std::string out;
    auto from = text.cbegin();
    for (std::sregex_iterator it(text.begin(), text.end(), code), end; it != end; ++it) {
        out.append(from, (*it)[0].first);
        const auto c = static_cast<std::uint32_t>(std::stoul((*it)[1], nullptr, 16));
        if (c < 0x80) out += static_cast<char>(c);
        else if (c < 0x800) out += static_cast<char>(0xC0 | (c >> 6)), out += static_cast<char>(0x80 | (c & 0x3F));
        else if (c < 0x10000)
            out += static_cast<char>(0xE0 | (c >> 12)), out += static_cast<char>(0x80 | ((c >> 6) & 0x3F)),
                out += static_cast<char>(0x80 | (c & 0x3F));
        else
            out += static_cast<char>(0xF0 | (c >> 18)), out += static_cast<char>(0x80 | ((c >> 12) & 0x3F)),
                out += static_cast<char>(0x80 | ((c >> 6) & 0x3F)), out += static_cast<char>(0x80 | (c & 0x3F));
        from = (*it)[0].second;
    }
    out.append(from, text.cend());
    return out;
}

// The test process's working folder and environment, set for a run and restored after it
// (the runners of the special destinations start attntrace where the test process is).
class Surroundings {
public:
    Surroundings(const std::string& folder, const std::map<std::string, std::string>& env) : was_(std::filesystem::current_path()) {
        std::filesystem::current_path(folder);
        for (const auto& [name, value] : env) {
            const char* before = std::getenv(name.c_str());
            saved_.emplace_back(name, before ? std::optional<std::string>(before) : std::nullopt);
            if (value.empty()) ::unsetenv(name.c_str());
            else ::setenv(name.c_str(), value.c_str(), 1);
        }
    }
    ~Surroundings() {
        for (const auto& [name, value] : saved_) {
            if (value) ::setenv(name.c_str(), value->c_str(), 1);
            else ::unsetenv(name.c_str());
        }
        std::filesystem::current_path(was_);
    }
    Surroundings(const Surroundings&) = delete;
    Surroundings& operator=(const Surroundings&) = delete;

private:
    std::filesystem::path was_;
    std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// The file mode mask, set for a run (which inherits it) and restored after it; "" keeps it.
class ScopedUmask {
public:
    explicit ScopedUmask(const std::string& bits) : set_(!bits.empty()) {
        if (set_) was_ = ::umask(static_cast<mode_t>(std::stoi(bits, nullptr, 8)));
    }
    ~ScopedUmask() {
        if (set_) ::umask(was_);
    }
    ScopedUmask(const ScopedUmask&) = delete;
    ScopedUmask& operator=(const ScopedUmask&) = delete;

private:
    bool set_;
    mode_t was_ = 0;
};

int signal_named(const std::string& name) {
    static const std::map<std::string, int> signals{{"INT", SIGINT}, {"TERM", SIGTERM}, {"HUP", SIGHUP}, {"QUIT", SIGQUIT},
                                                    {"PIPE", SIGPIPE}, {"ALRM", SIGALRM}, {"USR1", SIGUSR1}};
    REQUIRE(signals.contains(name));
    return signals.at(name);
}

// Runs one marked claim and checks each of its assertions; returns how many it made.
int check_claim(const Claim& claim) {
    INFO(claim.file << ":" << claim.line << ": " << claim.command);
    std::map<std::string, std::string> files;
    std::vector<std::string> setups;
    std::vector<std::pair<std::string, std::string>> links, hard_links, modes;
    std::vector<std::string> sockets;
    std::string input, terminal, stdout_to, size_limit, signal, mask_bits;
    bool has_input = false, needs_folder = false;
    int expected_exit = 0;
    for (const auto& [raw_key, raw] : claim.items) {
        const std::string key = with_characters(raw_key), value = with_characters(raw);
        if (key == "file size limit") size_limit = value;
        else if (key.starts_with("file ")) files[key.substr(5)] += value + "\n";
        else if (key.starts_with("hex ")) files[key.substr(4)] += from_hex(value);
        else if (key == "setup") setups.push_back(value);
        else if (key == "stdin") input += value + "\n", has_input = true;
        else if (key == "exit") expected_exit = std::stoi(value);
        else if (key.starts_with("link ")) links.emplace_back(key.substr(5), value);
        else if (key.starts_with("hard link ")) hard_links.emplace_back(key.substr(10), value);
        else if (key.starts_with("chmod ")) modes.emplace_back(key.substr(6), value);
        else if (key == "socket") sockets.push_back(value);
        else if (key == "terminal") terminal = value;
        else if (key == "stdout to") stdout_to = value;
        else if (key == "signal") signal = value;
        else if (key == "umask") mask_bits = value;
        needs_folder = needs_folder || key.starts_with("holds ") || key.starts_with("lacks ") || key == "absent" ||
                       key == "is link" || key.starts_with("mode ");
    }
    std::map<std::string, std::string> env{{"COLUMNS", ""}, {"NO_COLOR", ""}};
    for (const auto& [key, value] : claim.items)
        if (key == "env") env[value.substr(0, value.find('='))] = with_characters(value.substr(value.find('=') + 1));
    // A command that writes a file (-o, --svg, or its stdout to a path) runs in a folder of its
    // own, never in the source tree; /dev/… and - are not files it makes.
    const std::vector<std::string> words = split_args(with_characters(claim.command));
    for (std::size_t i = 0; i + 1 < words.size(); ++i)
        if ((words[i] == "-o" || words[i] == "--output" || words[i] == "--svg") && words[i + 1] != "-" &&
            !words[i + 1].starts_with("/dev/"))
            needs_folder = true;
    if (!stdout_to.empty() && !stdout_to.starts_with("/dev/") && !stdout_to.starts_with("closed")) needs_folder = true;
    std::optional<cli::TempDir> folder;
    std::string where = ATTNTRACE_SOURCE_DIR;
    if (needs_folder || !files.empty() || !setups.empty() || !links.empty() || !hard_links.empty() || !sockets.empty()) {
        REQUIRE(!has_input);  // stdin runs outside the folder
        folder.emplace();
        where = folder->path();
        for (const auto& [name, text] : files) {
            std::filesystem::create_directories(std::filesystem::path(*folder / name).parent_path());
            std::ofstream(*folder / name, std::ios::binary) << text;
        }
        for (const auto& [name, target] : links) std::filesystem::create_symlink(target, *folder / name);
        for (const auto& [name, target] : hard_links) std::filesystem::create_hard_link(*folder / target, *folder / name);
        for (const auto& name : sockets) {
            const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
            REQUIRE(fd >= 0);
            sockaddr_un address{};
            address.sun_family = AF_UNIX;
            const std::string path = *folder / name;
            REQUIRE(path.size() < sizeof address.sun_path);
            std::strcpy(address.sun_path, path.c_str());
            REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
            ::close(fd);  // the socket file stays
        }
        for (const auto& setup : setups) {
            INFO("setup: " << setup);
            REQUIRE(cli::run_in(where, attntrace_args(setup), env).exit_code == 0);
        }
        for (const auto& [name, bits] : modes)
            std::filesystem::permissions(*folder / name, static_cast<std::filesystem::perms>(std::stoi(bits, nullptr, 8)));
    }
    const bool special = !terminal.empty() || !stdout_to.empty() || !size_limit.empty() || !signal.empty() || !mask_bits.empty();
    REQUIRE((!special || !has_input));
    const auto run = [&](const std::string& command) {
        const std::vector<std::string> args = attntrace_args(with_characters(command));
        if (has_input) return cli::run(args, input, env);
        if (!special) return cli::run_in(where, args, env);
        const Surroundings here(where, env);
        const ScopedUmask mask(mask_bits);
        static const std::regex when(R"((\w+) when (.+))");
        if (std::smatch m; !terminal.empty() && std::regex_match(signal, m, when))
            return cli::run_in_terminal_until(args, m[2], signal_named(m[1]));
        if (!terminal.empty()) return cli::run_in_terminal(args, env, static_cast<unsigned short>(std::stoi(terminal)));
        if (!size_limit.empty()) {
            REQUIRE(std::stoull(size_limit) >= 1024);  // see "file size limit" above
            return cli::run_with_file_size_limit(args, std::stoull(size_limit));
        }
        if (!signal.empty()) {
            static const std::regex after(R"((\w+) after (\d+) ms)");
            std::smatch m;
            REQUIRE(std::regex_match(signal, m, after));
            return cli::run_and_signal(args, std::stoi(m[2]), signal_named(m[1]));
        }
        if (stdout_to == "closed") return cli::run_with_stdout_closed(args);
        if (stdout_to == "closed pipe") return cli::run_into_closed_pipe(args, false);
        if (stdout_to == "closed pipe, SIGPIPE ignored") return cli::run_into_closed_pipe(args, true);
        if (stdout_to.starts_with(">> ")) {
            const cli::TempDir errors;
            cli::Result r = cli::run_appending(args, stdout_to.substr(3), errors / "stderr");
            r.err = cli::slurp(errors / "stderr");
            return r;
        }
        if (!stdout_to.empty()) return cli::run_to_file(args, stdout_to);
        return cli::run(args, "", env);  // only the umask
    };
    const cli::Result r = run(claim.command);
    const std::string both = r.out + r.err;
    INFO("stdout:\n" << r.out << "stderr:\n" << r.err);
    CHECK(r.exit_code == expected_exit);
    std::optional<nlohmann::ordered_json> document;
    const auto json = [&]() -> const nlohmann::ordered_json& {
        if (!document) {
            try {
                document = nlohmann::ordered_json::parse(r.out);
            } catch (const nlohmann::json::exception&) {
                FAIL("stdout is not one JSON document");
            }
        }
        return *document;
    };
    static const std::regex shows_times(R"(shows (\d+) times?)");
    static const std::regex json_item(R"((\S+) (exists|absent|= (.+)|≈ (-?\d+(\.(\d+))?)|size (\d+)))");
    int asserted = 0;
    const auto in_folder = [&](const std::string& name) { return std::filesystem::path(where) / name; };
    for (const auto& [raw_key, raw] : claim.items) {
        INFO(raw_key << ": " << raw);
        const std::string key = with_characters(raw_key), value = with_characters(raw);
        std::smatch m;
        if (key.starts_with("holds ") || key.starts_with("lacks ")) {
            const std::string text = cli::read_file(in_folder(key.substr(6)));
            INFO(key.substr(6) << " holds:\n" << text);
            CHECK(std::filesystem::exists(in_folder(key.substr(6))));
            CHECK((text.find(value) != std::string::npos) == key.starts_with("holds "));
        } else if (key == "absent") {
            if (value.ends_with("*")) {
                const std::string prefix = value.substr(0, value.size() - 1);
                for (const auto& entry : std::filesystem::directory_iterator(where)) {
                    INFO(entry.path().filename().string());
                    CHECK(!entry.path().filename().string().starts_with(prefix));
                }
            } else {
                CHECK(!std::filesystem::exists(std::filesystem::symlink_status(in_folder(value))));
            }
        } else if (key == "is link") {
            CHECK(std::filesystem::is_symlink(in_folder(value)));
        } else if (key.starts_with("mode ")) {
            const auto bits = std::filesystem::status(in_folder(key.substr(5))).permissions() & std::filesystem::perms::mask;
            CHECK(static_cast<int>(bits) == std::stoi(value, nullptr, 8));
        } else if (key == "stderr" && value == "empty") {
            CHECK(r.err.empty());
        } else if (key == "shows") {
            CHECK(both.find(value) != std::string::npos);
        } else if (key == "lacks") {
            CHECK(both.find(value) == std::string::npos);
        } else if (std::regex_match(key, m, shows_times)) {
            CHECK(occurrences(both, value) == std::stoul(m[1]));
        } else if (key == "line") {
            // a line of the output that starts with the first part and ends with the last,
            // holding the others in order between them
            // ("A …" leaves the end open, "… C" the start)
            std::string pattern = value;
            const bool open_end = pattern.ends_with(" …"), open_start = pattern.starts_with("… ");
            if (open_end) pattern.erase(pattern.size() - std::string(" …").size());
            if (open_start) pattern.erase(0, std::string("… ").size());
            std::vector<std::string> parts;
            if (open_start) parts.emplace_back();
            for (std::size_t from = 0;;) {
                const auto dots = pattern.find(" … ", from);
                parts.push_back(pattern.substr(from, dots == std::string::npos ? std::string::npos : dots - from));
                if (dots == std::string::npos) break;
                from = dots + std::string(" … ").size();
            }
            if (open_end) parts.emplace_back();
            bool found = false;
            std::istringstream lines(both);
            for (std::string line; !found && std::getline(lines, line);) {
                if (parts.size() == 1) {
                    found = line == parts[0];
                    continue;
                }
                if (!line.starts_with(parts.front()) || !line.ends_with(parts.back()) ||
                    line.size() < parts.front().size() + parts.back().size())
                    continue;
                std::size_t at = parts.front().size();
                const std::size_t end = line.size() - parts.back().size();
                found = true;
                for (std::size_t i = 1; found && i + 1 < parts.size(); ++i) {
                    at = line.find(parts[i], at);
                    found = at != std::string::npos && at + parts[i].size() <= end;
                    if (found) at += parts[i].size();
                }
            }
            CHECK(found);
        } else if (key == "stderr") {
            CHECK(r.err == value + "\n");
        } else if (key == "stdout" && value == "empty") {
            CHECK(r.out.empty());
        } else if (key == "same as") {
            const cli::Result other = run(value);
            CHECK(other.exit_code == r.exit_code);
            CHECK(other.out + other.err == both);
        } else if (key == "json") {
            REQUIRE(std::regex_match(value, m, json_item));
            const nlohmann::ordered_json* found = at_path(json(), m[1]);
            const std::string how = m[2];
            if (how == "absent") {
                CHECK(found == nullptr);
            } else {
                REQUIRE(found != nullptr);
                if (how == "exists") {
                    // found
                } else if (how.starts_with("= ")) {
                    CHECK(same_json(*found, nlohmann::ordered_json::parse(std::string(m[3]))));
                } else if (how.starts_with("size ")) {
                    CHECK(found->size() == std::stoul(m[7]));
                } else {  // ≈ a number shortened to its decimals: within half of its last place
                    REQUIRE(found->is_number());
                    const double written = std::stod(m[4]), half = 0.5 * std::pow(10.0, -static_cast<double>(m[6].length()));
                    CHECK(std::abs(found->get<double>() - written) <= half);
                }
            }
        } else if (key == "exit") {
            // checked above, with the run
        } else if (key == "setup" || key == "stdin" || key == "env" || key.starts_with("file ") || key.starts_with("hex ") ||
                   key.starts_with("link ") || key.starts_with("hard link ") || key.starts_with("chmod ") ||
                   key == "socket" || key == "terminal" || key == "stdout to" || key == "file size limit" ||
                   key == "signal" || key == "umask") {
            continue;  // how to run, not a claim
        } else {
            FAIL("unknown key in a test comment: " << key);
        }
        ++asserted;
    }
    return asserted;
}

}  // namespace

TEST_CASE("the output shown in README.md and docs/ is what attntrace prints", "[docs]") {
    const std::filesystem::path root = ATTNTRACE_SOURCE_DIR;
    std::vector<std::filesystem::path> pages{root / "README.md"};
    for (const auto& entry : std::filesystem::directory_iterator(root / "docs"))
        if (entry.path().extension() == ".md") pages.push_back(entry.path());
    std::map<std::string, std::size_t> checked;
    for (const auto& page : pages) {
        for (Shown shown : shown_commands(page)) {
            INFO(shown.file << ":" << shown.line << ": " << shown.command);
            // A command may be shown failing (check-answers grading, a refused run): its output
            // then ends with this line, which attntrace does not print.
            static const std::regex exit_line(R"(\[exit status (\d+)\]\n$)");
            int expected_exit = 0;
            if (std::smatch m; std::regex_search(shown.output, m, exit_line)) {
                expected_exit = std::stoi(m[1]);
                shown.output.erase(static_cast<std::size_t>(m.position(0)));
            }
            // The docs show what a pipe or a file receives: no terminal width, no colour.
            // From the source tree, as a reader who cloned it runs them: data/… are its files.
            const auto r = cli::run_in(ATTNTRACE_SOURCE_DIR, shown.args, {{"COLUMNS", ""}, {"NO_COLOR", ""}});
            CHECK(r.exit_code == expected_exit);
            const auto format = std::find_if(shown.args.begin(), shown.args.end(),
                                             [](const std::string& a) { return a == "json" || a == "jsonl"; });
            if (format != shown.args.end() && r.out + r.err != shown.output)
                CHECK(same_json_text(r.out + r.err, shown.output, *format == "jsonl"));
            else CHECK(without_rounding_residuals(shown, r.out + r.err) == without_rounding_residuals(shown, shown.output));
            ++checked[shown.file];
        }
    }
    // Each page keeps its examples as console blocks (a page that lost them would pass unseen).
    CHECK(checked["README.md"] >= 1);
    CHECK(checked["walkthrough.md"] >= 15);
    CHECK(checked["multi-head.md"] >= 7);
    CHECK(checked["from-pytorch.md"] >= 2);
    CHECK(checked["input-format.md"] >= 1);
    CHECK(checked["output-formats.md"] >= 4);
    CHECK(checked["gradients.md"] >= 6);
}

TEST_CASE("what the prose of README.md and docs/ says attntrace prints holds", "[docs]") {
    const std::filesystem::path root = ATTNTRACE_SOURCE_DIR;
    std::vector<std::filesystem::path> pages{root / "README.md"};
    for (const auto& entry : std::filesystem::directory_iterator(root / "docs"))
        if (entry.path().extension() == ".md") pages.push_back(entry.path());
    std::map<std::string, std::size_t> claims;
    const auto tree = [&] {  // what the top of the source tree holds: no claim may add to it
        std::set<std::string> names;
        for (const auto& entry : std::filesystem::directory_iterator(root)) names.insert(entry.path().filename().string());
        return names;
    };
    const std::set<std::string> before = tree();
    for (const auto& page : pages) {
        for (const Claim& claim : marked_claims(page)) {
            INFO(claim.file << ":" << claim.line << ": " << claim.command);
            CHECK(check_claim(claim) > 0);  // a comment that asserts nothing is a mistake
            CHECK(tree() == before);
            ++claims[claim.file];
        }
    }
    // A page that lost its comments would pass unseen.
    CHECK(claims["README.md"] >= 30);
    CHECK(claims["walkthrough.md"] >= 15);
    CHECK(claims["input-format.md"] >= 90);
    CHECK(claims["json-output.md"] >= 45);
    CHECK(claims["positions.md"] >= 10);
    CHECK(claims["multi-head.md"] >= 8);
    CHECK(claims["bahdanau.md"] >= 8);
    CHECK(claims["from-pytorch.md"] >= 8);
    CHECK(claims["performance.md"] >= 3);
    CHECK(claims["streaming.md"] >= 2);
    CHECK(claims["architecture.md"] >= 1);
    CHECK(claims["output-formats.md"] >= 140);
    CHECK(claims["robustness.md"] >= 80);
    CHECK(claims["gradients.md"] >= 15);
}

namespace {

// splitmix64 and the entries it gives, as docs/input-format.md ("Generated weights") writes them.
struct DocumentedGenerator {
    std::uint64_t state;
    std::uint64_t next() {
        state += 0x9E3779B97F4A7C15ULL;
        std::uint64_t z = state;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }
    double entry(double scale) { return scale * (2.0 * (static_cast<double>(next() >> 11) * 0x1.0p-53) - 1.0); }
    std::vector<std::vector<double>> matrix(std::size_t rows, std::size_t cols, double scale) {
        std::vector<std::vector<double>> m(rows, std::vector<double>(cols));
        for (auto& row : m)
            for (double& x : row) x = entry(scale);  // row by row
        return m;
    }
};

nlohmann::json parameters_of(const std::vector<std::string>& args) {
    std::vector<std::string> all = args;
    for (const char* a : {"-f", "json", "-s", "parameters"}) all.emplace_back(a);
    const auto r = cli::run_in(ATTNTRACE_SOURCE_DIR, all, {});
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(r.out).at("parameters");
}

void require_exact(const nlohmann::json& shown, const std::vector<std::vector<double>>& want) {
    REQUIRE(shown.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
        REQUIRE(shown[i].size() == want[i].size());
        for (std::size_t j = 0; j < want[i].size(); ++j) CHECK(shown[i][j].get<double>() == want[i][j]);
    }
}

}  // namespace

TEST_CASE("the weight generator docs/input-format.md describes makes the weights attntrace uses", "[docs]") {
    const double d_in = 3;  // your_journey
    SECTION("self and causal: W_q, then W_k, then W_v from one stream, scale 1/√d_in") {
        DocumentedGenerator g{123};
        const auto p = parameters_of({"-m", "self"});
        require_exact(p["W_q"], g.matrix(3, 3, 1 / std::sqrt(d_in)));
        require_exact(p["W_k"], g.matrix(3, 3, 1 / std::sqrt(d_in)));
        require_exact(p["W_v"], g.matrix(3, 3, 1 / std::sqrt(d_in)));
    }
    SECTION("another seed and --dim") {
        DocumentedGenerator g{7};
        const auto p = parameters_of({"-m", "causal", "--seed", "7", "--dim", "2"});
        require_exact(p["W_q"], g.matrix(3, 2, 1 / std::sqrt(d_in)));
        require_exact(p["W_k"], g.matrix(3, 2, 1 / std::sqrt(d_in)));
        require_exact(p["W_v"], g.matrix(3, 2, 1 / std::sqrt(d_in)));
    }
    SECTION("several heads: the stream goes on to W_o, d_model × d_model, scale 1/√d_model") {
        DocumentedGenerator g{123};
        const auto p = parameters_of({"-m", "self", "--dim", "4", "--heads", "2"});
        require_exact(p["W_q"], g.matrix(3, 4, 1 / std::sqrt(d_in)));
        require_exact(p["W_k"], g.matrix(3, 4, 1 / std::sqrt(d_in)));
        require_exact(p["W_v"], g.matrix(3, 4, 1 / std::sqrt(d_in)));
        require_exact(p["W_o"], g.matrix(4, 4, 1 / std::sqrt(4.0)));
    }
    SECTION("G key/value heads: W_k and W_v are d_in × (G·d_model / H)") {
        DocumentedGenerator g{123};
        const auto p = parameters_of({"-m", "self", "--dim", "4", "--heads", "2", "--kv-heads", "1"});
        require_exact(p["W_q"], g.matrix(3, 4, 1 / std::sqrt(d_in)));
        require_exact(p["W_k"], g.matrix(3, 2, 1 / std::sqrt(d_in)));
        require_exact(p["W_v"], g.matrix(3, 2, 1 / std::sqrt(d_in)));
        require_exact(p["W_o"], g.matrix(4, 4, 1 / std::sqrt(4.0)));
    }
    SECTION("an input with W_q, W_k and W_v but no output: W_o (H·d_v × H·d_v) from its own stream") {
        cli::TempDir dir;
        std::ofstream(dir / "in.json")
            << R"({"sentence": "a b c", "embeddings": {"a": [1, 0, 0], "b": [0, 1, 0], "c": [0, 0, 1]}, "heads": 2,
                   "weights": {"query": [[1, 0], [0, 1], [1, 1]], "key": [[1, 0], [0, 1], [1, 1]],
                               "value": [[1, 0], [0, 1], [1, 1]]}})";
        DocumentedGenerator g{123};
        const auto p = parameters_of({dir / "in.json", "-m", "self"});
        require_exact(p["W_o"], g.matrix(2, 2, 1 / std::sqrt(2.0)));  // H·d_v = 2 · 1
    }
    cli::TempDir dir;
    std::ofstream(dir / "bahdanau.json")
        << R"({"source": {"tokens": ["x", "y"], "states": [[1, 0], [0, 1]]},
               "target": {"tokens": ["p", "q", "r"], "states": [[1, 0, 0], [0, 1, 0], [0, 0, 1]]}})";
    const double d_s = 3, d_h = 2;
    SECTION("bahdanau's additive score: W_a, U_a, v_a from one stream, d_a the larger of d_s and d_h") {
        DocumentedGenerator g{123};
        const auto p = parameters_of({dir / "bahdanau.json"});
        require_exact(p["W_a"], g.matrix(3, 3, 1 / std::sqrt(d_s)));
        require_exact(p["U_a"], g.matrix(2, 3, 1 / std::sqrt(d_h)));
        require_exact(nlohmann::json::array({p["v_a"]}), g.matrix(1, 3, 1 / std::sqrt(3.0)));
    }
    SECTION("d_a = --dim") {
        DocumentedGenerator g{123};
        const auto p = parameters_of({dir / "bahdanau.json", "--dim", "4"});
        require_exact(p["W_a"], g.matrix(3, 4, 1 / std::sqrt(d_s)));
        require_exact(p["U_a"], g.matrix(2, 4, 1 / std::sqrt(d_h)));
        require_exact(nlohmann::json::array({p["v_a"]}), g.matrix(1, 4, 1 / std::sqrt(4.0)));
    }
    SECTION("the general score: W, d_s × d_h, scale 1/√d_s") {
        DocumentedGenerator g{123};
        const auto p = parameters_of({dir / "bahdanau.json", "--score", "general"});
        require_exact(p["W"], g.matrix(3, 2, 1 / std::sqrt(d_s)));
    }
}
