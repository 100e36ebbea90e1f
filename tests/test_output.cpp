// Where output goes, run against the built binary: files replaced all or nothing, the paths
// that must not be replaced, descriptors, signals, resource limits and closed streams.
#include "support/cli.hpp"
#include "util/output.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <fstream>
#include <iostream>
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
