// What a teacher hands out: `cmake --install` into a staging folder, then the installed
// program, its man page (read by man -l), its completions (read by bash, fish and zsh), and
// the Debian package CPack makes (`make deb`), with one version everywhere. Expected names
// (modes, examples, options) come from the source tree, not from the program.
#include "support/cli.hpp"

#include "support/catch.hpp"
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

using Catch::Contains;
using Catch::StartsWith;

namespace fs = std::filesystem;

namespace {

// Whether two texts are the same but for numbers that differ by one in their last printed
// digit ("0.003847" and "0.003848"; "0.1999" and "0.2000"), printed with as many decimals.
bool same_but_last_digits(const std::string& a, const std::string& b) {
    static const std::regex number(R"(-?\d+\.\d+)");
    // The text around the numbers (parts 0, 2, 4, …) and the numbers (1, 3, …).
    const auto parts = [](const std::string& text) {
        return std::vector<std::string>(std::sregex_token_iterator(text.begin(), text.end(), number, {-1, 0}),
                                        std::sregex_token_iterator());
    };
    // A number as a count of its last digit's units: "-0.0123" is -123.
    const auto units = [](std::string text) {
        text.erase(std::remove(text.begin(), text.end(), '.'), text.end());
        return std::stoll(text);
    };
    const auto decimals = [](const std::string& text) { return text.size() - text.find('.') - 1; };
    const std::vector<std::string> x = parts(a), y = parts(b);
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i) {
        if (x[i] == y[i]) continue;
        if (!std::regex_match(x[i], number) || !std::regex_match(y[i], number)) return false;
        if (decimals(x[i]) != decimals(y[i]) || std::llabs(units(x[i]) - units(y[i])) > 1) return false;
    }
    return true;
}

const std::string version = ATTNTRACE_VERSION;
const std::string build_dir = ATTNTRACE_BUILD_DIR;

// Installs the build into a fresh staging folder, once for the whole test run.
const std::string& staged() {
    static const cli::TempDir stage;
    static const bool installed = [] {
        const auto r = cli::run_program({"cmake", "--install", build_dir, "--prefix", stage.path()});
        INFO(r.out << r.err);
        REQUIRE(r.exit_code == 0);
        return true;
    }();
    (void)installed;
    return stage.path();
}

// The built-in examples: the names of data/*.json, sorted.
std::vector<std::string> example_names() {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(fs::path(ATTNTRACE_SOURCE_DIR) / "data"))
        if (entry.path().extension() == ".json") names.push_back(entry.path().stem());
    std::sort(names.begin(), names.end());
    return names;
}

std::string joined(std::vector<std::string> words) {
    std::sort(words.begin(), words.end());
    std::string out;
    for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
    return out;
}

// Every long option --help lists ("--mode", …), read off the help text.
std::set<std::string> long_options(const std::string& help) {
    std::set<std::string> names;
    static const std::regex option(R"((?:^|[ ,])(--[a-z][a-z0-9-]*))");
    std::istringstream in(help);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("  ", 0) != 0 || line.rfind("      ", 0) == 0) continue;  // option lines only
        const std::string head = line.substr(0, line.find("  ", 2));
        for (auto it = std::sregex_iterator(head.begin(), head.end(), option); it != std::sregex_iterator(); ++it)
            names.insert((*it)[1]);
    }
    return names;
}

// The example command lines at the end of a --help ("Examples:", each command indented by two
// spaces, what it shows by six), a command that goes on below (" \\") joined back into one.
std::vector<std::string> example_commands(const std::string& help) {
    std::vector<std::string> commands;
    std::istringstream in(help.substr(help.find("\nExamples:\n")));
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("  ", 0) != 0 || line.rfind("   ", 0) == 0) continue;
        std::string command = line.substr(2);
        while (command.ends_with(" \\") && std::getline(in, line))
            command = command.substr(0, command.size() - 1) + line.substr(line.find_first_not_of(' '));
        commands.push_back(command);
    }
    return commands;
}

}  // namespace

TEST_CASE("cmake --install puts the program, man page, completions, docs and examples under the prefix", "[install]") {
    const fs::path prefix = staged();
    for (const char* file :
         {"bin/attntrace", "share/man/man1/attntrace.1.gz", "share/bash-completion/completions/attntrace",
          "share/zsh/site-functions/_attntrace", "share/fish/vendor_completions.d/attntrace.fish",
          "share/doc/attntrace/README.md", "share/doc/attntrace/CHANGELOG.md", "share/doc/attntrace/LICENSE",
          "share/doc/attntrace/copyright", "share/doc/attntrace/docs/walkthrough.md",
          "share/doc/attntrace/docs/schema/input.schema.json", "share/doc/attntrace/docs/schema/trace.schema.json"}) {
        INFO(file);
        CHECK(fs::is_regular_file(prefix / file));
    }
    for (const auto& name : example_names()) {
        INFO(name);
        CHECK(fs::is_regular_file(prefix / "share/doc/attntrace/examples" / (name + ".json")));
    }

    // The installed program runs, on its built-in example and on an installed example file.
    const std::string program = prefix / "bin/attntrace";
    const auto v = cli::run_program({program, "-V"});
    CHECK(v.exit_code == 0);
    CHECK_THAT(v.out, StartsWith("attntrace " + version + "\nkernels: "));
    const auto lecture = cli::run_program({program, "-s", "weights"});
    CHECK(lecture.exit_code == 0);
    CHECK(lecture.out == cli::run({"-s", "weights"}).out);
    const auto file = cli::run_program(
        {program, (prefix / "share/doc/attntrace/examples/teacher_students_fr.json").string(), "-s", "weights"});
    CHECK(file.exit_code == 0);
    CHECK_THAT(file.out, Contains("Attention weights"));
}

TEST_CASE("one version: the build's, in --version, the man page and the change log", "[install]") {
    const auto v = cli::run({"--version"});
    CHECK(v.exit_code == 0);
    CHECK_THAT(v.out, StartsWith("attntrace " + version + "\n"));
    CHECK_THAT(cli::read_file(build_dir + "/manual/attntrace.1"),
               StartsWith(".TH ATTNTRACE 1 \"\" \"attntrace " + version + "\" \"User Commands\"\n"));
    // The newest release in the change log is this one.
    const std::string changelog = cli::read_file(std::string(ATTNTRACE_SOURCE_DIR) + "/CHANGELOG.md");
    std::smatch first;
    REQUIRE(std::regex_search(changelog, first, std::regex(R"(\n## (\S+))")));
    CHECK(first[1] == version);
}

TEST_CASE("the installed man page reads with man -l: every option, examples, exit status", "[install]") {
    const std::string page = fs::path(staged()) / "share/man/man1/attntrace.1.gz";
    const std::map<std::string, std::string> env{{"MANPAGER", "cat"}, {"PAGER", "cat"}, {"MANWIDTH", "100"},
                                                 {"MAN_KEEP_FORMATTING", ""}, {"LANG", "C.UTF-8"}};
    const auto man = cli::run_program({"man", "-l", page}, "", env);
    INFO(man.err);
    REQUIRE(man.exit_code == 0);
    for (const char* section : {"NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "COMMANDS", "EXAMPLES", "EXIT STATUS",
                                "ENVIRONMENT", "FILES"}) {
        INFO(section);
        CHECK_THAT(man.out, Contains("\n" + std::string(section) + "\n"));
    }
    CHECK_THAT(man.out, Contains("attntrace - trace the attention mechanism step by step"));
    CHECK_THAT(man.out, Contains("attntrace " + version));
    // Every option of every command's --help is in the page, and every example as it is typed
    // (quotes included: a page that dropped them would show commands that do not run).
    std::size_t example_count = 0;
    for (const auto& command :
         {std::vector<std::string>{}, {"similarity"}, {"generate"}, {"bench"}, {"compare"}, {"decode"}, {"check-answers"},
          {"quiz"}}) {
        auto args = command;
        args.push_back("--help");
        const std::string help = cli::run(args).out;
        for (const auto& option : long_options(help)) {
            if (option == "--help") continue;
            INFO(option);
            CHECK_THAT(man.out, Contains(option));
        }
        for (const auto& example : example_commands(help)) {
            INFO(example);
            CHECK_THAT(man.out, Contains("\n       " + example + "\n"));
            ++example_count;
        }
    }
    CHECK(example_count >= 17);  // two or more for each command
    CHECK_THAT(man.out, Contains("attntrace -f json | jq '.stages[] | select(.name == \"weights\") | .data[1]'"));
    // groff has nothing to warn about.
    const auto warnings = cli::run_program({"man", "--warnings", "-l", page}, "", env);
    CHECK(warnings.exit_code == 0);
    CHECK(warnings.err.empty());
}

TEST_CASE("bash completes options, modes, example names and commands from the installed script", "[install]") {
    const std::string script = fs::path(staged()) / "share/bash-completion/completions/attntrace";
    const cli::TempDir cwd;  // no files to offer
    const std::string program = R"(
cd ")" + cwd.path() + R"("
source "$1"
complete -p attntrace
comp() {
    COMP_WORDS=("$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMPREPLY=()
    _attntrace 2>/dev/null
    printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ' | sed 's/ $//'; echo
}
comp attntrace --mode ''
comp attntrace -m c
comp attntrace --example ''
comp attntrace --mo
comp attntrace sim
comp attntrace -f ''
comp attntrace -s scores,w
comp attntrace similarity --s
comp attntrace compare example:big_dream example:big_mistake --mode ''
comp attntrace help de
comp attntrace h
)";
    const auto r = cli::run_program({"bash", "-c", program, "bash", script});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    std::istringstream lines(r.out);
    std::vector<std::string> got;
    for (std::string line; std::getline(lines, line);) got.push_back(line);
    REQUIRE(got.size() == 12);
    CHECK(got[0] == "complete -F _attntrace attntrace");
    CHECK(got[1] == "bahdanau causal plain self");
    CHECK(got[2] == "causal");
    CHECK(got[3] == joined(example_names()));
    CHECK(got[4] == "--mode");
    CHECK(got[5] == "similarity");
    CHECK(got[6] == "csv html json jsonl markdown table");
    CHECK(got[7] == "scores,weights");
    CHECK(got[8] == "--shade --svg");
    CHECK(got[9] == "bahdanau causal plain self");
    CHECK(got[10] == "decode");  // attntrace help COMMAND
    CHECK(got[11] == "help");
}

TEST_CASE("fish completes options, modes and example names from the installed script", "[install]") {
    const std::string script = fs::path(staged()) / "share/fish/vendor_completions.d/attntrace.fish";
    const cli::TempDir home;
    const std::map<std::string, std::string> env{{"HOME", home.path()},
                                                 {"XDG_CONFIG_HOME", home / "config"},
                                                 {"XDG_DATA_HOME", home / "data"}};
    // The candidates fish offers for a command line, without their descriptions, sorted.
    const auto complete = [&](const std::string& line) {
        const auto r = cli::run_program({"fish", "--no-config", "-c", "source $argv[1]; complete -C '" + line + "'", script},
                                        "", env);
        INFO(line << "\n" << r.err);
        CHECK(r.exit_code == 0);
        std::vector<std::string> words;
        std::istringstream in(r.out);
        for (std::string w; std::getline(in, w);) words.push_back(w.substr(0, w.find('\t')));
        return joined(words);
    };
    CHECK(complete("attntrace --mode ") == "bahdanau causal plain self");
    CHECK(complete("attntrace --example ") == joined(example_names()));
    CHECK(complete("attntrace --mo") == "--mode");
    CHECK(complete("attntrace simi") == "similarity");
    CHECK(complete("attntrace similarity --s") == "--shade --svg");
    CHECK(complete("attntrace help de") == "decode");
    // The menu's descriptions keep the help's words: an apostrophe as ’, a colon as a dash.
    const auto described = cli::run_program(
        {"fish", "--no-config", "-c", "source $argv[1]; complete -C 'attntrace --position-o'", script}, "", env);
    CHECK(described.out == "--position-offset\twith --positions — the first token’s position\n");
}

TEST_CASE("zsh reads the installed completion script", "[install]") {
    // Under a prefix other than /usr, in site-functions: Debian's zsh reads
    // /usr/local/share/zsh/site-functions, not /usr/local/share/zsh/vendor-completions.
    const std::string script = fs::path(staged()) / "share/zsh/site-functions/_attntrace";
    CHECK_FALSE(fs::exists(fs::path(staged()) / "share/zsh/vendor-completions"));
    // The two folders the completion goes to, /usr's and /usr/local's, are where zsh looks.
    const auto fpath = cli::run_program({"zsh", "-f", "-c", "print -l $fpath"});
    CHECK_THAT(fpath.out, Contains("/usr/share/zsh/vendor-completions\n"));
    CHECK_THAT(fpath.out, Contains("/usr/local/share/zsh/site-functions\n"));
    CHECK_THAT(cli::read_file(script), StartsWith("#compdef attntrace\n"));
    const auto r = cli::run_program({"zsh", "-n", script});
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.err.empty());
}

TEST_CASE("the Debian package: one version, its dependencies, its files, and the program runs from it", "[install]") {
    const cli::TempDir out;
    const auto packed = cli::run_program({"cpack", "-G", "DEB", "-B", out.path(), "--config", build_dir + "/CPackConfig.cmake"});
    INFO(packed.out << packed.err);
    REQUIRE(packed.exit_code == 0);
    std::string deb;
    for (const auto& entry : fs::directory_iterator(out.path()))
        if (entry.path().extension() == ".deb") deb = entry.path();
    REQUIRE(!deb.empty());
    CHECK(fs::path(deb).filename().string().rfind("attntrace_" + version + "_", 0) == 0);

    const auto field = [&](const std::string& name) {
        const auto r = cli::run_program({"dpkg-deb", "-f", deb, name});
        CHECK(r.exit_code == 0);
        return r.out.substr(0, r.out.find_last_not_of('\n') + 1);
    };
    CHECK(field("Package") == "attntrace");
    CHECK(field("Version") == version);
    // The libraries the binary links, found by dpkg-shlibdeps.
    const std::string depends = field("Depends");
    for (const char* library : {"libc6", "libgcc-s1", "libstdc++6", "libfmt", "libutf8proc"}) {
        INFO(depends);
        CHECK_THAT(depends, Contains(library));
    }
    // OpenMP's runtime: GCC's (libgomp1), or LLVM's in a clang build (libomp5-14).
    CHECK_THAT(depends, Contains("libgomp1") || Contains("libomp5"));

    const auto contents = cli::run_program({"dpkg-deb", "-c", deb});
    for (const char* file : {"./usr/bin/attntrace", "./usr/share/man/man1/attntrace.1.gz",
                             "./usr/share/bash-completion/completions/attntrace",
                             "./usr/share/zsh/vendor-completions/_attntrace", "./usr/share/doc/attntrace/copyright",
                             "./usr/share/doc/attntrace/examples/your_journey.json"}) {
        INFO(file);
        CHECK_THAT(contents.out, Contains(file));
    }

    // Unpacked, the program runs the lecture example.
    const auto unpacked = cli::run_program({"dpkg-deb", "-x", deb, out / "root"});
    REQUIRE(unpacked.exit_code == 0);
    const auto lecture = cli::run_program({out / "root/usr/bin/attntrace", "-s", "weights"});
    CHECK(lecture.exit_code == 0);
    CHECK(lecture.out == cli::run({"-s", "weights"}).out);

    // apt would install it: its dependencies resolve on this system (a simulation, nothing installed).
    const auto apt = cli::run_program({"apt-get", "install", "--simulate", "--no-install-recommends", deb});
    INFO(apt.out << apt.err);
    CHECK(apt.exit_code == 0);
    CHECK_THAT(apt.out, Contains("Inst attntrace ("));
}

TEST_CASE("the portable binary runs on a CPU without AVX (qemu-x86_64 -cpu Conroe), and uses AVX2 where there is",
          "[portable][qemu]") {
    const std::string program = ATTNTRACE_BINARY;
    const auto old = cli::run_program({"qemu-x86_64", "-cpu", "Conroe", program, "-V"});
    INFO(old.err);
    REQUIRE(old.exit_code == 0);
    const std::string copies = " (the build holds kernels for any x86-64, AVX2 and AVX-512)\n";
    CHECK(old.out == "attntrace " + version + "\nkernels: any x86-64 CPU, chosen at run time: this CPU lacks AVX2 or FMA" +
                         copies);
    // qemu's emulation has AVX2 but no AVX-512: a Haswell gets the AVX2 copy.
    const auto newer = cli::run_program({"qemu-x86_64", "-cpu", "Haswell", program, "-V"});
    CHECK(newer.exit_code == 0);
    CHECK(newer.out == "attntrace " + version + "\nkernels: AVX2 with FMA, chosen at run time: this CPU lacks AVX-512" +
                           copies);

    // The lecture example, every mode, and the streaming summary: the same tables as here. The
    // AVX2 kernels round differently in the last bits (FMA rounds once), which shows only in
    // rounding residuals printed in full ("largest difference 5.6e-17"): those below 1e-12
    // read as ε on both sides.
    const auto residuals = [](const std::string& text) {
        static const std::regex tiny(R"(\b\d(\.\d+)?e-(1[3-9]|[2-9]\d|\d{3})\b)");
        return std::regex_replace(text, tiny, "ε");
    };
    const cli::TempFile long_input(cli::run({"generate", "-n", "300", "-d", "16"}).out);
    for (const auto& args :
         {std::vector<std::string>{"-s", "weights"}, {"-m", "self"}, {"-m", "causal", "-q", "journey"},
          {"--example", "teacher_students_fr"}, {long_input.path(), "--summary", "-m", "causal"},
          {long_input.path(), "--summary", "--dtype", "float32"}}) {
        auto words = std::vector<std::string>{"qemu-x86_64", "-cpu", "Conroe", program};
        words.insert(words.end(), args.begin(), args.end());
        const auto emulated = cli::run_program(words, "", {{"COLUMNS", ""}});
        INFO(words.back() << "\n" << emulated.err);
        CHECK(emulated.exit_code == 0);
        const std::string here = residuals(cli::run(args, "", {{"COLUMNS", ""}}).out);
        // In float32 the two copies' last bits can put a printed number on either side of a
        // rounding boundary (0.003847 on one CPU, 0.003848 on another, n = 300 on an AVX2
        // host): there each number may differ by one in its last digit, the text not at all.
        if (args.back() == "float32") CHECK(same_but_last_digits(residuals(emulated.out), here));
        else CHECK(residuals(emulated.out) == here);
    }
}

TEST_CASE("same_but_last_digits lets a printed number move by one in its last digit, and nothing else", "[portable]") {
    CHECK(same_but_last_digits("t1 0.003847, t2 5.70", "t1 0.003848, t2 5.70"));
    CHECK(same_but_last_digits("x 0.999 y", "x 1.000 y"));  // a carry is one step too
    CHECK(same_but_last_digits("x 0.1999 y", "x 0.2000 y"));
    CHECK(same_but_last_digits("-0.0001", "0.0001") == false);  // two steps across zero
    CHECK(same_but_last_digits("-0.0001", "0.0000"));
    CHECK(same_but_last_digits("0.003847", "0.003849") == false);
    CHECK(same_but_last_digits("t1 0.5", "t2 0.5") == false);
    CHECK(same_but_last_digits("0.5 0.5", "0.5") == false);
    CHECK(same_but_last_digits("0.5", "0.50") == false);
}

TEST_CASE("the portable binary runs the widest copy of the kernels this CPU has, and any narrower one when asked",
          "[portable]") {
    // What this CPU has, read from /proc/cpuinfo rather than asked of the program.
    const std::string cpuinfo = cli::read_file("/proc/cpuinfo");
    const std::string flags = cpuinfo.substr(cpuinfo.find("\nflags"), cpuinfo.find('\n', cpuinfo.find("\nflags") + 1) -
                                                                          cpuinfo.find("\nflags")) + " ";
    const auto has = [&](const std::string& flag) { return flags.find(" " + flag + " ") != std::string::npos; };
    const bool avx2 = has("avx2") && has("fma");
    const bool avx512_cpu = avx2 && has("avx512f") && has("avx512dq") && has("avx512bw") && has("avx512vl");
    // A sanitizer build made on a CPU without AVX-512 leaves that copy out (CMakeLists.txt).
    const bool avx512 = avx512_cpu && ATTNTRACE_HAS_AVX512_COPY;
    const auto v = cli::run({"-V"});
    CHECK_THAT(v.out, Contains(avx512       ? "\nkernels: AVX-512, chosen at run time: the widest this CPU has"
                               : avx512_cpu ? "\nkernels: AVX2 with FMA, chosen at run time: the widest copy this build holds"
                               : avx2       ? "\nkernels: AVX2 with FMA, chosen at run time: this CPU lacks AVX-512"
                                            : "\nkernels: any x86-64 CPU, chosen at run time: this CPU lacks AVX2 or FMA"));
    CHECK_THAT(v.out, Contains(ATTNTRACE_HAS_AVX512_COPY ? "(the build holds kernels for any x86-64, AVX2 and AVX-512)\n"
                                                         : "(the build holds kernels for any x86-64, AVX2)\n"));
    // Each narrower copy on request, with the same tables and summaries.
    const cli::TempFile long_input(cli::run({"generate", "-n", "300", "-d", "16"}).out);
    for (const char* copy : {"avx2", "baseline"}) {
        INFO(copy);
        const std::map<std::string, std::string> env{{"ATTNTRACE_KERNELS", copy}, {"COLUMNS", ""}};
        const bool narrower = std::string(copy) == "avx2" ? avx512 : avx2;  // than what this CPU could run
        if (narrower)
            CHECK_THAT(cli::run({"-V"}, "", env).out, Contains(std::string(", as ATTNTRACE_KERNELS=") + copy + " asks"));
        for (const auto& args : {std::vector<std::string>{"-m", "self"}, {"-m", "causal", "--explain"},
                                 {long_input.path(), "--summary", "-m", "causal"}}) {
            const auto r = cli::run(args, "", env);
            CHECK(r.exit_code == 0);
            CHECK(r.out == cli::run(args, "", {{"COLUMNS", ""}}).out);
        }
    }
}

namespace {

// The words of `text`, split at white space.
std::vector<std::string> words_in(const std::string& text) {
    std::vector<std::string> words;
    std::istringstream in(text);
    for (std::string word; in >> word;) words.push_back(word);
    return words;
}

}  // namespace

TEST_CASE("the program is built with the distribution's hardening flags", "[install][hardening]") {
    // What Debian's dpkg-buildflags gives with every hardening feature on, less what is not
    // hardening (-g, -O2, the file prefix map, -Wdate-time): each flag must be in the compile
    // command of every file of the program, and in none of the tests' own (compiled at -O0,
    // where _FORTIFY_SOURCE does nothing but warn).
    std::vector<std::string> wanted;
    for (const char* variable : {"CXXFLAGS", "CPPFLAGS"}) {
        const auto r = cli::run_program({"dpkg-buildflags", "--get", variable}, "",
                                        {{"DEB_BUILD_MAINT_OPTIONS", "hardening=+all"}});
        REQUIRE(r.exit_code == 0);  // dpkg-dev, which `make test` installs
        for (const std::string& flag : words_in(r.out))
            if (flag != "-g" && !flag.starts_with("-O") && !flag.starts_with("-ffile-prefix-map") && flag != "-Wdate-time")
                wanted.push_back(flag);
    }
    INFO(joined(wanted));
    for (const char* flag : {"-fstack-protector-strong", "-D_FORTIFY_SOURCE=2", "-Wformat", "-Werror=format-security"})
        CHECK(std::find(wanted.begin(), wanted.end(), flag) != wanted.end());
    const nlohmann::json commands = nlohmann::json::parse(cli::read_file(build_dir + "/compile_commands.json"));
    std::size_t program_files = 0, test_files = 0;
    for (const auto& entry : commands) {
        const std::string file = entry["file"], command = entry["command"];
        const std::vector<std::string> flags = words_in(command);
        const auto has = [&](const std::string& flag) { return std::find(flags.begin(), flags.end(), flag) != flags.end(); };
        INFO(file);
        if (file.find("/tests/") != std::string::npos) {
            if (file.find("/tests/test_") == std::string::npos) continue;
            CHECK_FALSE(has("-D_FORTIFY_SOURCE=2"));
            ++test_files;
            continue;
        }
        for (const std::string& flag : wanted) {
            INFO(flag);
            CHECK(has(flag));
        }
        ++program_files;
    }
    CHECK(program_files >= 10);
    CHECK(test_files >= 10);
    // And what the link made of them, read off the binary: bound at start (-z now, dpkg's
    // bindnow), a read-only segment for the relocations (-z relro), position-independent (PIE),
    // stack canaries and the C library's checked functions called.
    const std::string program = ATTNTRACE_BINARY;
    const auto dynamic = cli::run_program({"readelf", "-d", "-W", program});
    CHECK_THAT(dynamic.out, Contains("BIND_NOW") || Contains("Flags: NOW"));
    CHECK_THAT(dynamic.out, Contains("PIE"));
    // libstdc++ first among the libraries it needs, so that the symbols bound at start are
    // found in the first library searched (CMakeLists.txt: it makes up for -z now's cost).
    const std::size_t needed = dynamic.out.find("(NEEDED)");
    REQUIRE(needed != std::string::npos);
    CHECK_THAT(dynamic.out.substr(needed, dynamic.out.find('\n', needed) - needed), Contains("[libstdc++.so.6]"));
    CHECK_THAT(cli::run_program({"readelf", "-l", "-W", program}).out, Contains("GNU_RELRO"));
    const std::string symbols = cli::run_program({"readelf", "--dyn-syms", "-W", program}).out;
    CHECK_THAT(symbols, Contains("__stack_chk_fail"));
    static const std::regex checked(R"(__[a-z]+_chk\b)");
    CHECK(std::distance(std::sregex_iterator(symbols.begin(), symbols.end(), checked), std::sregex_iterator()) >= 2);
}

TEST_CASE("the Debian package passes lintian without errors", "[install][lintian]") {
    const cli::TempDir out;
    const auto packed = cli::run_program({"cpack", "-G", "DEB", "-B", out.path(), "--config", build_dir + "/CPackConfig.cmake"});
    INFO(packed.out << packed.err);
    REQUIRE(packed.exit_code == 0);
    std::string deb;
    for (const auto& entry : fs::directory_iterator(out.path()))
        if (entry.path().extension() == ".deb") deb = entry.path();
    REQUIRE(!deb.empty());
    // lintian (which `make test` installs), its tags one a line: "E: attntrace: TAG …" for an error.
    const auto r = cli::run_program({"lintian", "--no-tag-display-limit", deb});
    INFO(r.out << r.err);
    REQUIRE(r.err.find("not found") == std::string::npos);
    std::vector<std::string> errors;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);)
        if (line.starts_with("E: ")) errors.push_back(line);
    CHECK(errors.empty());
    CHECK(r.exit_code == 0);
    // The two it reported before: a maintainer address that reaches no one, and no changelog.
    CHECK_THAT(cli::run_program({"dpkg-deb", "-f", deb, "Maintainer"}).out, !Contains("localhost"));
    CHECK_THAT(cli::run_program({"dpkg-deb", "-c", deb}).out, Contains("./usr/share/doc/attntrace/changelog.gz"));
    // The change log is this version's, in Debian's format (dpkg's own parser reads it).
    const auto parsed = cli::run_program({"dpkg-parsechangelog", "-l", build_dir + "/debian/changelog", "-S", "Version"});
    CHECK(parsed.exit_code == 0);
    CHECK(parsed.out == version + "\n");
}
