#!/usr/bin/python3
"""attntrace against numpy and PyTorch, side by side, in one run on one machine.

    python3 tests/perf/compare.py [--attntrace build/attntrace] [--tokens 8192] [--dim 64]
        [--threads 1,2] [--dtypes float32,float64] [--repeats 5] [--warmup 2] [--memory-tokens 65536]

For each mode (self, causal), dtype and thread count it times
  - attntrace, the whole process: `attntrace FILE --summary -m MODE --dtype D --threads T`,
    reading and parsing the file included (median of R runs after W warm-ups, wall clock;
    the configurations take turns, one run each per round, so that the machine's drift over
    the minutes of a run touches them alike and their ratios stay fair);
  - numpy and PyTorch computing the same attention (tests/perf/baseline.py: matmul, softmax,
    matmul on the n×n matrix, compute only, loading excluded), same file, same threads;
then checks that all three agree (the last query's top keys and weights, context rows), and
measures attntrace's peak resident memory for a causal summary of --memory-tokens tokens.
Prints a markdown report on stdout.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run_timed(command):
    """Wall seconds of one child process, spawned directly (posix_spawn, output to /dev/null,
    reaped with wait4) so that Python adds as little as possible to what is measured."""
    with open(os.devnull, "wb") as null:
        start = time.perf_counter()
        pid = os.posix_spawn(command[0], command, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, null.fileno(), 1)])
        _, status, _ = os.wait4(pid, 0)
        seconds = time.perf_counter() - start
    if status != 0:
        sys.exit(f"compare.py: {' '.join(command)} failed")
    return seconds


def run_output(command):
    return subprocess.run(command, check=True, capture_output=True).stdout


def peak_rss_kib(command):
    with open(os.devnull, "wb") as null:
        pid = os.posix_spawn(command[0], command, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, null.fileno(), 1)])
        _, status, usage = os.wait4(pid, 0)
    if status != 0:
        sys.exit(f"compare.py: {' '.join(command)} failed")
    return usage.ru_maxrss


def attntrace_times(binary, path, configs, warmup, repeats):
    """Times `attntrace FILE --summary` (it computes Z = A·V as the baselines do, and prints the
    summary) for every (mode, dtype, threads) in `configs`, in turns: each round runs each
    configuration once. Returns {config: times}."""
    commands = {c: [binary, path, "--summary", "-m", c[0], "--dtype", c[1], "--threads", str(c[2])] for c in configs}
    times = {c: [] for c in configs}
    for turn in range(warmup + repeats):
        for c in configs:
            seconds = run_timed(commands[c])
            if turn >= warmup:
                times[c].append(seconds)
    return times


def attntrace_summary(binary, path, mode, dtype, threads):
    """One more, untimed run with the context vectors in JSON, for the agreement check."""
    return json.loads(run_output([binary, path, "--summary", "-m", mode, "--dtype", dtype, "--threads", str(threads),
                                  "-f", "json", "-s", "context"]))


def baseline(path, mode, dtype, threads, warmup, repeats):
    command = [sys.executable, os.path.join(HERE, "baseline.py"), path, "--mode", mode, "--dtype", dtype,
               "--threads", str(threads), "--warmup", str(warmup), "--repeats", str(repeats), "--format", "json"]
    return json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)


def agreement(summary, base, dtype):
    """Largest difference between attntrace and a baseline over the values both report."""
    tolerance = 1e-4 if dtype == "float32" else 1e-9
    last = summary["queries"][-1]["top"]
    worst = 0.0
    for name, backend in base["backends"].items():
        for mine, theirs in zip(last, backend["top3_last_row"]):
            worst = max(worst, abs(mine["weight"] - theirs["weight"]))
            if mine["index"] != theirs["key"] and abs(mine["weight"] - theirs["weight"]) > tolerance:
                sys.exit(f"compare.py: {name} ranks key {theirs['key']} where attntrace ranks {mine['index']}")
        for row, field in ((0, "z_first_row"), (-1, "z_last_row")):
            for mine, theirs in zip(summary["context"][row], backend[field]):
                worst = max(worst, abs(mine - theirs))
    if worst > tolerance:
        sys.exit(f"compare.py: attntrace and the baselines differ by {worst:g} (> {tolerance:g})")
    return worst


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--attntrace", default=os.path.join(HERE, "..", "..", "build", "attntrace"))
    p.add_argument("--tokens", type=int, default=8192)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--dtypes", default="float32,float64")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--memory-tokens", type=int, default=65536)
    args = p.parse_args()
    binary = os.path.abspath(args.attntrace)

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "input.json")
        subprocess.run([binary, "generate", "--tokens", str(args.tokens), "--dim", str(args.dim), "-o", path], check=True)
        configs = [(mode, dtype, threads) for dtype in args.dtypes.split(",") for mode in ("self", "causal")
                   for threads in (int(t) for t in args.threads.split(","))]
        attntrace = attntrace_times(binary, path, configs, args.warmup, args.repeats)
        rows = []
        for mode, dtype, threads in configs:
            times = attntrace[(mode, dtype, threads)]
            summary = attntrace_summary(binary, path, mode, dtype, threads)
            base = baseline(path, mode, dtype, threads, args.warmup, args.repeats)
            worst = agreement(summary, base, dtype)
            rows.append({"dtype": dtype, "mode": mode, "threads": threads,
                         "attntrace": statistics.median(times),
                         "numpy": base["backends"]["numpy"]["median_s"],
                         "torch": base["backends"]["torch"]["median_s"],
                         "load": base["load_s"], "worst": worst, "machine": base["machine"],
                         "libraries": base["libraries"]})
        memory_path = os.path.join(folder, "memory.json")
        subprocess.run([binary, "generate", "--tokens", str(args.memory_tokens), "--dim", str(args.dim), "-o", memory_path],
                       check=True)
        rss = {dtype: peak_rss_kib([binary, memory_path, "--summary", "-m", "causal", "--dtype", dtype])
               for dtype in ("float32", "float64")}
        size_mib = os.path.getsize(memory_path) / 2**20

    m = rows[0]["machine"]
    lib = rows[0]["libraries"]
    print(f"Machine: {m['cpu_model']}, {m['cores']} cores, {m['ram_gib']} GiB; {m['os']}  ")
    print(f"Libraries: numpy {lib['numpy']}, torch {lib['torch']['version']}, BLAS {lib['blas']['openblas']}  ")
    print(f"Input: `attntrace generate --tokens {args.tokens} --dim {args.dim}` (d_in = d_k = d_v = {args.dim}); "
          f"median of {args.repeats} runs after {args.warmup} warm-ups, wall clock  ")
    print(f"The baselines load the file in about {statistics.median(r['load'] for r in rows):.2f} s, not counted below; "
          f"attntrace's time includes reading it.\n")
    print("| dtype | mode | threads | attntrace (whole process) s | numpy (compute) s | torch (compute) s | torch / attntrace | agree within |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['dtype']} | {r['mode']} | {r['threads']} | {r['attntrace']:.3f} | {r['numpy']:.3f} | {r['torch']:.3f} "
              f"| {r['torch'] / r['attntrace']:.2f}× | {r['worst']:.1e} |")
    print()
    for dtype in sorted({r["dtype"] for r in rows}):
        pick = {(r["mode"], r["threads"]): r["attntrace"] for r in rows if r["dtype"] == dtype}
        top = max(t for _, t in pick)
        if ("self", top) in pick and ("causal", top) in pick:
            print(f"- {dtype}, {top} threads: causal is {pick[('self', top)] / pick[('causal', top)]:.2f}× faster than self")
        for mode in ("self", "causal"):
            if (mode, 1) in pick and (mode, top) in pick and top > 1:
                print(f"- {dtype}, {mode}: {top} threads are {pick[(mode, 1)] / pick[(mode, top)]:.2f}× faster than 1")
    print(f"- peak resident memory, causal --summary of {args.memory_tokens} tokens × {args.dim} "
          f"(a {size_mib:.0f} MiB file): float32 {rss['float32'] / 1024:.0f} MiB, float64 {rss['float64'] / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
