// Where output goes, run against the built binary: files replaced all or nothing, the paths
// that must not be replaced, descriptors, signals, resource limits and closed streams.
#include "support/cli.hpp"

#include <catch2/catch.hpp>

#include <csignal>

using Catch::Contains;

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
