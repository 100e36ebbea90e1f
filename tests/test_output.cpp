// Where output goes, run against the built binary: files replaced all or nothing, the paths
// that must not be replaced, descriptors, signals, resource limits and closed streams.
#include "support/cli.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <fstream>

using Catch::Contains;
using Catch::StartsWith;

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
