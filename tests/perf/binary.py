"""The same long input read from JSON and from binary arrays (docs/performance.md, "Binary
inputs"), whole process: attntrace FILE --summary -m causal --dtype float32 > /dev/null, for
n = 8192 and 65536 tokens of d = 64. The inputs are written by `attntrace generate` with the
same seed in each format (JSON; safetensors and stored .npz as float32, whose numbers are the
JSON's rounded to floats, which is what --dtype float32 makes of the JSON's too, so the runs
compute the same thing). A second set of runs isolates the reading: plain mode with
--window 1, where each query sees one key and the attention costs next to nothing.

Each round runs every file once, in turn; after one warm-up round, prints a markdown table of
the median wall time, the median user + system CPU time and the largest peak RSS of the rounds.

Usage: binary.py ATTNTRACE ROUNDS_8192 ROUNDS_65536 FOLDER
  e.g. /usr/bin/python3 tests/perf/binary.py build/attntrace 15 5 /tmp/binary-inputs
"""
import os, resource, statistics, subprocess, sys, time

binary, rounds_small, rounds_large, folder = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
os.makedirs(folder, exist_ok=True)
formats = [("JSON", "json", []), ("safetensors", "safetensors", ["--dtype", "float32"]), ("npz", "npz", ["--dtype", "float32"])]
jobs = [("summary, causal", ["--summary", "-m", "causal", "--dtype", "float32"]),
        ("reading (plain, --window 1)", ["--summary", "-m", "plain", "--window", "1", "--dtype", "float32"])]


def run(args):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        sys.exit(f"{' '.join(args)} failed")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


print("| n | what | input | file (MB) | wall, median (s) | CPU, median (s) | peak RSS (MiB) |")
print("|---:|---|---|---:|---:|---:|---:|")
for n, rounds in ((8192, rounds_small), (65536, rounds_large)):
    files = {}
    for name, ext, extra in formats:
        path = os.path.join(folder, f"n{n}.{ext}")
        if not os.path.exists(path):
            subprocess.run([binary, "generate", "-n", str(n), "-d", "64", "--seed", "1", "-f", ext, *extra, "-o", path],
                           check=True)
        files[name] = path
    for job, args in jobs:
        results = {}
        for r in range(rounds + 1):
            for name, ext, _ in formats:
                layout = ["--layout", "in_out"] if ext == "npz" else []  # an .npz cannot state it
                measured = run([binary, files[name], *args, *layout])
                if r >= 1:
                    results.setdefault(name, []).append(measured)
        for name, ext, _ in formats:
            walls = [w for w, _, _ in results[name]]
            cpus = [c for _, c, _ in results[name]]
            rss = max(m for _, _, m in results[name])
            size = os.path.getsize(files[name]) / 1e6
            print(f"| {n} | {job} | {name} | {size:.1f} | {statistics.median(walls):.3f} | "
                  f"{statistics.median(cpus):.3f} | {rss:.0f} |")
