// Where output goes: files replaced all or nothing, the paths that must not be replaced,
// descriptors, signals, resource limits and closed streams. Mostly the built binary; the
// Outputs class itself where a test needs this process's own descriptors.
#include "support/cli.hpp"
#include "util/output.hpp"
#include "util/progress.hpp"
#include "util/utf8.hpp"

#include "support/catch.hpp"
#include <fmt/format.h>

#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sys/stat.h>
#include <unistd.h>

using Catch::Contains;
using Catch::StartsWith;

namespace {

// Points this process's descriptor 1 at `path` while it lives.
class StdoutTo {
public:
    explicit StdoutTo(const std::string& path) : saved_(::dup(1)) {
        std::cout.flush();
        std::fflush(stdout);
        const int file = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::dup2(file, 1);
        ::close(file);
    }
    ~StdoutTo() {
        ::dup2(saved_, 1);
        ::close(saved_);
    }
    StdoutTo(const StdoutTo&) = delete;
    StdoutTo& operator=(const StdoutTo&) = delete;

private:
    int saved_;
};

ino_t inode_of(const std::string& path) {
    struct stat info {};
    ::stat(path.c_str(), &info);
    return info.st_ino;
}

}  // namespace

TEST_CASE("every signal that ends attntrace removes its temporaries first", "[output][cli][signals]") {
    const cli::TempDir folder;

    // The reader of stdout went away: SIGPIPE, while the --svg temporary waits for the commit.
    const auto piped = cli::run_into_closed_pipe({"-f", "json", "--svg", folder / "p.svg"}, false);
    CHECK(piped.exit_code == 128 + SIGPIPE);
    CHECK(folder.names() == std::vector<std::string>{});

    for (const int signal : {SIGHUP, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU}) {
        INFO("signal " << signal);
        auto args = cli::busy_run_args();
        args.insert(args.end(), {"-o", folder / "out.txt"});
        const auto stopped = cli::run_and_signal(args, 300, signal);
        CHECK(stopped.exit_code == 128 + signal);  // the default action, after the clean-up
        CHECK(folder.names() == std::vector<std::string>{});
    }
}

TEST_CASE("a closed stdout is an error, and no file opened later takes its place", "[output][cli]") {
    const cli::TempDir folder;
    const auto closed = cli::run_with_stdout_closed({"--svg", folder / "c.svg"});
    CHECK(closed.exit_code == 1);
    CHECK(closed.err == "attntrace: error: cannot write output: standard output is closed\n");
    CHECK(folder.names() == std::vector<std::string>{});

    // With -o FILE the run does not need stdout.
    const auto to_file = cli::run_with_stdout_closed({"-s", "inputs", "-o", folder / "t.txt", "--svg", folder / "c.svg"});
    CHECK(to_file.exit_code == 0);
    CHECK_THAT(cli::read_file(folder / "t.txt"), StartsWith("attntrace · plain mode"));
    CHECK_THAT(cli::read_file(folder / "c.svg"), StartsWith("<?xml"));
}

TEST_CASE("a write that fails at the end replaces no file, under ulimit -f too", "[output][cli]") {
    const cli::TempDir folder;
    std::ofstream(folder / "out.txt") << "old";
    // The table (about 540 bytes) fits in 4 KiB, the heatmap (about 9 KB) does not. Both
    // wait in their buffers until the commit, which writes and syncs both before it renames.
    const auto r = cli::run_with_file_size_limit(
        {"-s", "inputs", "-o", folder / "out.txt", "--svg", folder / "pic.svg"}, 4096);
    CHECK(r.exit_code == 1);
    CHECK(r.err == "attntrace: error: cannot write " + folder / "pic.svg" + ": File too large\n");
    CHECK(cli::read_file(folder / "out.txt") == "old");
    CHECK(folder.names() == std::vector<std::string>{"out.txt"});
}

TEST_CASE("a run that fails late leaves nothing on stdout", "[output][cli]") {
    // 20 tokens of 128 numbers: about 285 KB of JSON on stdout, a heatmap of about 51 KB.
    // The heatmap's write fails at the end; the JSON, held until then, is never written.
    cli::TempFile input(cli::run({"generate", "--tokens", "20", "--dim", "128"}).out);
    const auto r = cli::run({input.path(), "-f", "json", "--svg", "/dev/full"});
    CHECK(r.exit_code == 1);
    CHECK(r.err == "attntrace: error: cannot write /dev/full: No space left on device\n");
    CHECK(r.out.empty());
}

TEST_CASE("stdout is held in memory up to 16 MiB, then streamed", "[output]") {
    const cli::TempDir folder;
    const std::string file = folder / "stdout";
    const auto written = [&](std::size_t bytes, bool commit) {
        {
            const StdoutTo redirect(file);
            attntrace::Outputs outputs(std::nullopt);
            outputs.main() << std::string(bytes, 'x');
            if (commit) outputs.commit();
        }  // without commit(): as when an exception leaves the command
        return cli::read_file(file).size();
    };
    CHECK(written(1 << 20, false) == 0);
    CHECK(written(1 << 20, true) == 1 << 20);
    CHECK(written(16 << 20, false) == 0);
    CHECK(written((16 << 20) + 1, false) == 16 << 20);  // the cap is reached: streaming starts
    CHECK(written((16 << 20) + 1, true) == (16 << 20) + 1);
}

TEST_CASE("a path of an open descriptor is written through it, never replaced", "[output][cli]") {
    const cli::TempDir folder;
    const std::string log = folder / "log.txt", errors = folder / "errors.txt";
    for (const std::string path : {"/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"}) {
        INFO(path);
        std::ofstream(log) << "before\n";
        const ino_t inode = inode_of(log);
        const auto r = cli::run_appending({"-s", "inputs", "-o", path}, log, errors);
        CHECK(r.exit_code == 0);
        CHECK_THAT(cli::read_file(log), StartsWith("before\nattntrace · plain mode"));  // appended
        CHECK(inode_of(log) == inode);  // the same file, not a new one renamed over it
    }
    std::ofstream(errors) << "before\n";
    const auto to_stderr = cli::run_appending({"-s", "inputs", "-o", folder / "t.txt", "--svg", "/dev/stderr"}, log, errors);
    CHECK(to_stderr.exit_code == 0);
    CHECK_THAT(cli::read_file(errors), StartsWith("before\n<?xml"));

    const auto closed = cli::run({"-o", "/dev/fd/999"});
    CHECK(closed.exit_code == 1);
    CHECK(closed.err == "attntrace: error: cannot write /dev/fd/999: descriptor 999 is not open\n");
    const auto read_only = cli::run({"-o", "/dev/stdin"});
    CHECK(read_only.exit_code == 1);
    CHECK(read_only.err == "attntrace: error: cannot write /dev/stdin: descriptor 0 is not open for writing\n");
    CHECK(folder.names() == std::vector<std::string>{"errors.txt", "log.txt", "t.txt"});
}

TEST_CASE("a /proc/PID/fd/N path of this very process is written through descriptor N", "[output]") {
    const cli::TempDir folder;
    const std::string log = folder / "log.txt";
    std::ofstream(log) << "before\n";
    const int fd = ::open(log.c_str(), O_WRONLY | O_APPEND);
    {
        attntrace::Outputs outputs(fmt::format("/proc/{}/fd/{}", ::getpid(), fd));
        outputs.main() << "after\n";
        outputs.commit();
    }
    ::close(fd);
    CHECK(cli::read_file(log) == "before\nafter\n");
}

TEST_CASE("a symlink is followed to its end and stays a symlink, even when it dangles", "[output][cli]") {
    const cli::TempDir folder;
    // link.txt → sub/chain.txt → ../target.txt (relative to sub/), which is not there yet.
    std::filesystem::create_directory(folder / "sub");
    std::filesystem::create_symlink("sub/chain.txt", folder / "link.txt");
    std::filesystem::create_symlink("../target.txt", folder / "sub/chain.txt");
    const auto r = cli::run({"-s", "inputs", "-o", folder / "link.txt"});
    CHECK(r.exit_code == 0);
    CHECK(std::filesystem::is_symlink(folder / "link.txt"));
    CHECK(std::filesystem::is_symlink(folder / "sub/chain.txt"));
    CHECK_THAT(cli::read_file(folder / "target.txt"), StartsWith("attntrace · plain mode"));

    // 40 links in a row are followed, one more is refused, and so is a loop.
    std::ofstream(folder / "end.txt") << "old";
    for (int i = 1; i <= 41; ++i)
        std::filesystem::create_symlink(i == 41 ? "end.txt" : fmt::format("hop{}", i + 1), folder / fmt::format("hop{}", i));
    CHECK(cli::run({"-s", "inputs", "-o", folder / "hop2"}).exit_code == 0);
    CHECK_THAT(cli::read_file(folder / "end.txt"), StartsWith("attntrace · plain mode"));
    std::filesystem::create_symlink("loop", folder / "loop");
    for (const std::string name : {"hop1", "loop"}) {
        const auto refused = cli::run({"-o", folder / name});
        CHECK(refused.exit_code == 1);
        CHECK(refused.err == "attntrace: error: cannot write " + folder / name + ": Too many levels of symbolic links\n");
        CHECK(std::filesystem::is_symlink(folder / name));
    }
}

TEST_CASE("two outputs may not be one file, however it is spelled", "[output][cli]") {
    const cli::TempDir folder;
    std::filesystem::create_directory(folder / "sub");
    const std::string x = folder / "x.txt";
    const auto refused = [&](const std::string& svg) {
        INFO("-o " << x << " --svg " << svg);
        const auto r = cli::run({"-o", x, "--svg", svg});
        CHECK(r.exit_code == 2);
        // The same name twice is said once.
        CHECK(r.err == (svg == x ? "attntrace: error: two outputs go to " + x + ": give each output its own\n"
                                 : "attntrace: error: " + x + " and " + svg + " are the same file: give each output its own\n"));
    };
    // Not there yet: compared by folder and name.
    for (const std::string& svg : {x, folder / "./x.txt", folder / "sub/../x.txt"}) refused(svg);
    CHECK(folder.names() == std::vector<std::string>{"sub"});

    // There: compared by device and inode.
    std::ofstream(x) << "old";
    std::filesystem::create_symlink("x.txt", folder / "link.txt");
    std::filesystem::create_hard_link(x, folder / "hard.txt");
    for (const std::string& svg : {x, folder / "sub/../x.txt", folder / "link.txt", folder / "hard.txt"}) refused(svg);
    CHECK(cli::read_file(x) == "old");

    // stdout counts too.
    const auto r = cli::run_to_file({"--svg", x}, x);
    CHECK(r.exit_code == 2);
    CHECK(r.err == "attntrace: error: the standard output (-) and " + x +
                       " are the same file: give each output its own\n");
    CHECK(folder.names() == std::vector<std::string>{"hard.txt", "link.txt", "sub", "x.txt"});

    // So does "-", the standard output by name, for -o and --svg alike.
    for (const auto& args : {std::vector<std::string>{"--svg", "-"}, std::vector<std::string>{"-o", "-", "--svg", "-"}}) {
        const auto both = cli::run(args);
        CHECK(both.exit_code == 2);
        CHECK(both.out.empty());
        CHECK(both.err == "attntrace: error: two outputs go to the standard output (-): give each output its own (-o "
                          "FILE for the main output, and - for this one)\n");
    }
}

TEST_CASE("a file name of up to 255 bytes can be written", "[output][cli]") {
    const cli::TempDir folder;
    std::string euros;
    for (int i = 0; i < 85; ++i) euros += "€";  // 255 bytes, the most a name may have
    std::string long_name(240, 'a');
    long_name.append(".txt");
    for (const std::string& name : {long_name, euros}) {
        INFO(name.size() << " bytes");
        const auto r = cli::run({"-s", "inputs", "-o", folder / name});
        CHECK(r.exit_code == 0);
        CHECK_THAT(cli::read_file(folder / name), StartsWith("attntrace · plain mode"));
    }
    CHECK(folder.names().size() == 2);
}

TEST_CASE("a temporary's name is cut to fit at a character boundary", "[output]") {
    const cli::TempDir folder;
    std::string euros;
    for (int i = 0; i < 85; ++i) euros += "€";
    const attntrace::Outputs outputs(folder / euros);
    const auto names = folder.names();
    REQUIRE(names.size() == 1);
    // 238 bytes would fit beside ".attntrace-XXXXXX"; 237 end on a character.
    CHECK(names.front().size() == 237 + 17);
    CHECK(names.front().substr(0, 237 + 11) == euros.substr(0, 237) + ".attntrace-");
}

TEST_CASE("a file without write permission is not replaced", "[output][cli]") {
    const cli::TempDir folder;
    const std::string file = folder / "read-only.txt";
    std::filesystem::create_symlink("read-only.txt", folder / "link.txt");
    for (const auto permissions : {std::filesystem::perms::owner_read | std::filesystem::perms::group_read |
                                       std::filesystem::perms::others_read,
                                   std::filesystem::perms::none}) {
        std::ofstream(file) << "old";
        std::filesystem::permissions(file, permissions);
        for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
                 {"-o", file}, {"--svg", file}, {"-o", folder / "link.txt"}}) {
            INFO(args[0] << " " << args[1]);
            const auto r = cli::run(args);
            CHECK(r.exit_code == 1);
            CHECK(r.err == "attntrace: error: cannot write " + args[1] + ": it is read-only\n");
            CHECK(r.out.empty());
        }
        CHECK(cli::read_file(file) == "old");  // even as root, who could write it
        CHECK(folder.names() == std::vector<std::string>{"link.txt", "read-only.txt"});
        std::filesystem::remove(file);
    }
}

TEST_CASE("a replaced file keeps its owner and group", "[output][cli]") {
    if (::geteuid() != 0) {
        WARN("only root may give a file to another user: not checked");
        return;
    }
    const cli::TempDir folder;
    const std::string file = folder / "theirs.txt";
    std::ofstream(file) << "old";
    REQUIRE(::chown(file.c_str(), 4321, 4322) == 0);
    REQUIRE(::chmod(file.c_str(), 02640) == 0);  // set-group-ID too, which chown would clear
    CHECK(cli::run({"-s", "inputs", "-o", file}).exit_code == 0);
    CHECK_THAT(cli::read_file(file), StartsWith("attntrace · plain mode"));
    struct stat info {};
    REQUIRE(::stat(file.c_str(), &info) == 0);
    CHECK(info.st_uid == 4321);
    CHECK(info.st_gid == 4322);
    CHECK((info.st_mode & 07777) == 02640);
}

TEST_CASE("a hard link is broken by the rename, the path named gets the output", "[output][cli]") {
    const cli::TempDir folder;
    std::ofstream(folder / "named.txt") << "old";
    std::filesystem::create_hard_link(folder / "named.txt", folder / "other.txt");
    CHECK(cli::run({"-s", "inputs", "-o", folder / "named.txt"}).exit_code == 0);
    CHECK_THAT(cli::read_file(folder / "named.txt"), StartsWith("attntrace · plain mode"));
    CHECK(cli::read_file(folder / "other.txt") == "old");
    CHECK(std::filesystem::hard_link_count(folder / "other.txt") == 1);
}

TEST_CASE("the progress bar's clock: minutes and seconds, then hours", "[output][progress]") {
    CHECK(attntrace::clock_text(0) == "0:00");
    CHECK(attntrace::clock_text(0.4) == "0:00");
    CHECK(attntrace::clock_text(59.4) == "0:59");
    CHECK(attntrace::clock_text(61) == "1:01");
    CHECK(attntrace::clock_text(3599) == "59:59");
    CHECK(attntrace::clock_text(3661) == "1:01:01");
    CHECK(attntrace::clock_text(-3) == "0:00");
}

TEST_CASE("the progress bar shows the time elapsed and an estimate of the time left", "[output][progress]") {
    using Clock = attntrace::ProgressBar::Clock;
    const Clock::time_point start{};
    Clock::time_point now = start;
    std::FILE* file = std::tmpfile();
    REQUIRE(file != nullptr);
    const auto drawn = [&] {
        std::fflush(file);
        std::string text(static_cast<std::size_t>(std::ftell(file)), '\0');
        std::rewind(file);
        text.resize(std::fread(text.data(), 1, text.size(), file));
        std::fseek(file, 0, SEEK_END);
        return text;
    };
    {
        attntrace::ProgressBar bar("attention", {file, true, 120, [&] { return now; }});
        // Under a second: nothing.
        now = start + std::chrono::milliseconds(900);
        bar.update(10, 100);
        CHECK(drawn().empty());
        // 30 of 100 after 1.5 s: 1.5 s elapsed (shown rounded, 0:02) and 70 more at that pace,
        // 1.5 × 70 / 30 = 3.5 s (0:04). 30 % of 30 marks is 9.
        now = start + std::chrono::milliseconds(1500);
        bar.update(30, 100);
        CHECK(drawn() == "\rattention [#########.....................]  30% · 0:02 elapsed · ETA 0:04\x1b[K");
        // Within a tenth of a second of the last drawing: not drawn again.
        now += std::chrono::milliseconds(50);
        bar.update(40, 100);
        CHECK(drawn().size() == std::string("\rattention [#########.....................]  30% · 0:02 elapsed · ETA 0:04\x1b[K").size());
        // 80 of 100 after 12 s: ETA 12 × 20 / 80 = 3 s.
        now = start + std::chrono::seconds(12);
        bar.update(80, 100);
        CHECK_THAT(drawn(), Contains("\rattention [########################......]  80% · 0:12 elapsed · ETA 0:03\x1b[K"));
    }
    // Erased at the end: the line as it was.
    CHECK_THAT(drawn(), Catch::EndsWith("\r\x1b[K"));
    std::fclose(file);
    // Not a terminal: nothing at all.
    std::FILE* quiet = std::tmpfile();
    {
        attntrace::ProgressBar bar("attention", {quiet, false, 120, [&] { return now; }});
        now += std::chrono::seconds(5);
        bar.update(1, 2);
    }
    CHECK(std::ftell(quiet) == 0);
    std::fclose(quiet);
}

TEST_CASE("the progress bar fits the terminal: the bar narrows, then the time and the estimate go",
          "[output][progress]") {
    using attntrace::ProgressBar;
    const std::string full = ProgressBar::line("attention", 30, 100, 1.5, 120);
    CHECK(full == "attention [#########.....................]  30% · 0:02 elapsed · ETA 0:04");
    // Every line one column short of the terminal at most (a full line would wrap on some).
    for (std::size_t columns = 10; columns <= 120; ++columns) {
        const std::string line = ProgressBar::line("attention", 30, 100, 1.5, columns);
        INFO(columns << ": " << line);
        CHECK((attntrace::display_width(line) < columns || line == "attention 30%"));
    }
    // 9 + 2 + 30 + 2 + 4 + 15 + 11 = 73 columns in all; in 70 (69 usable) the bar takes 26
    // marks (7 of them filled); in 40, without the time, 11 (3); in 30, without the estimate too,
    // 12 (3); in 20 no bar fits.
    CHECK(ProgressBar::line("attention", 30, 100, 1.5, 70) ==
          "attention [#######...................]  30% · 0:02 elapsed · ETA 0:04");
    CHECK(ProgressBar::line("attention", 30, 100, 1.5, 40) == "attention [###........]  30% · ETA 0:04");
    CHECK(ProgressBar::line("attention", 30, 100, 1.5, 30) == "attention [###.........]  30%");
    CHECK(ProgressBar::line("attention", 30, 100, 1.5, 20) == "attention 30%");
    // Done: no estimate.
    CHECK(ProgressBar::line("attention", 100, 100, 7, 120) == "attention [##############################] 100% · 0:07 elapsed");
}

TEST_CASE("Ctrl-C while the progress bar shows erases its line", "[output][progress][signals]") {
    // A summary of seconds on a terminal: once the bar shows its estimate, SIGINT (Ctrl-C).
    const auto r = cli::run_in_terminal_until(cli::busy_run_args(), "ETA", SIGINT);
    CHECK(r.exit_code == 128 + SIGINT);
    const std::size_t bar = r.out.rfind("attention [");
    REQUIRE(bar != std::string::npos);
    // After the last drawing of the bar: the erasure, and nothing else (the summary was held).
    const std::string after = r.out.substr(r.out.find("\x1b[K", bar) + 3);
    CHECK(after == "\r\x1b[K");
}
