#!/usr/bin/python3
"""Two builds of attntrace side by side: with the distribution's hardening flags and without.

    /usr/bin/python3 tests/perf/hardening.py HARDENED UNHARDENED [--rounds 10] [--small 100]

HARDENED and UNHARDENED are two attntrace binaries built from the same sources, the first with
ATTNTRACE_HARDENING=ON (the default), the second with -DATTNTRACE_HARDENING=OFF. Each round
runs, for each binary in turn (the order alternating from round to round, so that both meet
the same state of the machine):

  - a long summary: a generated input of 8192 tokens of 64 numbers, --summary, self mode,
    float64, the default threads;
  - the small example: `attntrace -s weights` (the lecture's your_journey), --small times.

and measures the CPU seconds (user + system) of the children, from getrusage. Prints, per
workload, each binary's median and its range over the rounds, and the ratio of the medians
(hardened / unhardened). A benchmark, not a test: it measures this machine as it is.
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile


def cpu_seconds(command, times):
    """CPU seconds (user + system) of running `command` `times` times, output discarded."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(times):
        subprocess.run(command, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("hardened")
    parser.add_argument("unhardened")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--small", type=int, default=100, help="runs of the small example per round")
    args = parser.parse_args()
    binaries = {"hardened": args.hardened, "unhardened": args.unhardened}
    with tempfile.TemporaryDirectory() as folder:
        long_input = os.path.join(folder, "long.json")
        subprocess.run([args.hardened, "generate", "-n", "8192", "-d", "64", "-o", long_input], check=True)
        workloads = {
            "long summary (n = 8192, d = 64, self, float64)": (["--summary", "-m", "self", long_input], 1),
            f"small example (-s weights, {args.small} runs)": (["-s", "weights"], args.small),
        }
        # The two binaries print the same: they are the same program.
        for arguments, _ in workloads.values():
            outputs = {subprocess.run([b] + arguments, capture_output=True, check=True).stdout for b in binaries.values()}
            if len(outputs) != 1:
                sys.exit("the two binaries print different outputs for " + " ".join(arguments))
        seconds = {(w, b): [] for w in workloads for b in binaries}
        for round_ in range(args.rounds):
            order = list(binaries) if round_ % 2 == 0 else list(reversed(list(binaries)))
            for workload, (arguments, times) in workloads.items():
                for name in order:
                    seconds[(workload, name)].append(cpu_seconds([binaries[name]] + arguments, times))
    print(f"CPU seconds (user + system), {args.rounds} rounds, each binary in turn, order alternating\n")
    print("| workload | hardened: median (range) | unhardened: median (range) | hardened / unhardened |")
    print("| --- | ---: | ---: | ---: |")
    for workload in workloads:
        h, u = seconds[(workload, "hardened")], seconds[(workload, "unhardened")]
        print(f"| {workload} | {statistics.median(h):.3f} ({min(h):.3f}–{max(h):.3f}) | "
              f"{statistics.median(u):.3f} ({min(u):.3f}–{max(u):.3f}) | {statistics.median(h) / statistics.median(u):.3f} |")


if __name__ == "__main__":
    main()
