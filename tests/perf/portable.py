"""The portable build against a native one (docs/performance.md), whole process:
attntrace FILE --summary -m MODE --dtype D --threads T > /dev/null, for float32 and float64,
self and causal, 1 and 2 threads; the portable binary also with ATTNTRACE_KERNELS=avx2 and
=baseline. Each round runs every binary and configuration once, in turn; after 2 warm-up
rounds, prints a markdown table of the median and the minimum of the rounds.

Usage: portable.py PORTABLE_BINARY NATIVE_BINARY INPUT ROUNDS
  e.g. cmake -S . -B build-native -DATTNTRACE_NATIVE=ON && cmake --build build-native --target attntrace
       build/attntrace generate --tokens 8192 --dim 64 -o long.json
       /usr/bin/python3 tests/perf/portable.py build/attntrace build-native/attntrace long.json 9
"""
import os, statistics, subprocess, sys, time
portable, native, data, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
binaries = [("portable", portable, {}), ("portable, avx2 kernels", portable, {"ATTNTRACE_KERNELS": "avx2"}),
            ("portable, baseline kernels", portable, {"ATTNTRACE_KERNELS": "baseline"}), ("native", native, {})]
configs = [(d, m, t) for d in ("float32", "float64") for m in ("self", "causal") for t in (1, 2)]
times = {}
for r in range(rounds + 2):
    for (name, binary, env) in binaries:
        for (d, m, t) in configs:
            e = dict(os.environ, **env)
            t0 = time.perf_counter()
            subprocess.run([binary, data, "--summary", "-m", m, "--dtype", d, "--threads", str(t)], stdout=subprocess.DEVNULL,
                           stdin=subprocess.DEVNULL, env=e, check=True)
            if r >= 2:
                times.setdefault((name, d, m, t), []).append(time.perf_counter() - t0)
print("| dtype | mode | threads | portable (s) | native (s) | portable ÷ native | AVX2 kernels (s) | baseline kernels (s) |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for (d, m, t) in configs:
    p = times[("portable", d, m, t)]; n = times[("native", d, m, t)]; b = times[("portable, baseline kernels", d, m, t)]; a = times[("portable, avx2 kernels", d, m, t)]
    print(f"| {d} | {m} | {t} | {statistics.median(p):.3f} (min {min(p):.3f}) | {statistics.median(n):.3f} (min {min(n):.3f}) "
          f"| {statistics.median(p)/statistics.median(n):.2f} (min {min(p)/min(n):.2f}) | {statistics.median(a):.3f} (min {min(a):.3f}) | {statistics.median(b):.3f} (min {min(b):.3f}) |")
