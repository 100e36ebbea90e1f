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

Then, with --round2 (issue 18's report, docs/performance.md), in the same run:
  - the lecture example in every mode and format beside a busy process (tests/perf/small.py);
  - the bound: this machine's BLAS GEMM rate (numpy, square 2048³, best of 6) and its fastest
    exp (numpy's and torch's over 65,536 numbers, attntrace's own over 4096 per thread, all in
    cache, repeated); the work of the timed run at those rates: the projections X·W_q, X·W_k,
    X·W_v (6·n·d² operations, "X·W"), attention's products Q·Kᵀ and A·V (4·n²·d, 2·n²·d
    causal) and its exponentials (heads·n², half of them causal); the streaming path's compute
    time (`attntrace bench`: the median of 3 runs after a warm-up, or one run after it when the
    warm-up took more than a quarter of a second; it projects too) and PyTorch's (baseline.py,
    which projects too) as fractions of the sum, "the bound", and attntrace's also of the bound
    without X·W (the issue's words: attention's products and exps), for n = 4096, 8192, 16384
    with d = 64, for d = 128 and for 8 heads of 64 at n = 8192 (self and causal, float32 and
    float64); the 70% target is checked against the bound on every row;
  - n = 131072 causal --summary, whole process: time and peak memory;
  - the full trace as JSON, n = 2048 causal: time, size and MB/s, against the same trace with
    only the context written (the computing and a little formatting);
and checks issue 18's thresholds (exit status 1 when one is missed, each named).

With --backward (issue 31), instead, the streaming backward pass through the test tool
build/tests/attntrace_stream_backward (`cmake --build build --target attntrace_stream_backward`) against
PyTorch's autograd (tests/perf/backward_baseline.py), 2 threads unless --threads says
otherwise (its largest count is taken):
  - agreement on toy inputs: attntrace in float64 (every gradient and dX whole) against
    PyTorch in float64, self and causal, loss sum and target, tiles of 256 and of 8;
  - n = --tokens, d = --dim, float32, self and causal, loss sum and target: the whole
    attntrace process (reading the JSON file included) against PyTorch's forward and backward
    pass (compute only: the input already in tensors), wall and CPU seconds, best of
    --repeats rounds in which the two sides take turns; peak memory (attntrace's whole
    process by /usr/bin/time; PyTorch's whole process, and what one pass adds to it); the
    gradients of both held to PyTorch's float64 ones;
  - the bound: the products' work at this machine's GEMM rate (numpy's BLAS, 2048³, best of
    6, on one thread and on all, measured again each round and the best kept) and the
    exponentials at the fastest exp measured, against attntrace's CPU seconds (one thread's
    rates) and wall seconds (all threads');
  - n = --memory-tokens causal, loss sum, float32, from a float32 safetensors file: peak
    memory against the file's size + 64 MiB; and the time per doubling of n from n = --tokens.
With --train (issue 32), instead, tests/perf/train_compare.py: attntrace train against the same
training in PyTorch (agreement of the curves, steps per second); its options are its own.
Debian's numpy and torch use the libblas.so.3 that update-alternatives chooses; when that is
the reference BLAS and OpenBLAS is installed (libopenblas0-pthread), the Python children
here are pointed at OpenBLAS (LD_LIBRARY_PATH), which the report says.
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
sys.path.insert(0, HERE)
import small  # noqa: E402  (tests/perf/small.py: the lecture example, and the verdict)


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
    return json.loads(subprocess.run(command, check=True, capture_output=True, text=True, env=python_env(threads)).stdout)


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


def machine_rates(threads):
    """This machine's rates from other libraries, on `threads` threads: GEMM GFLOP/s (numpy's
    matrix product through the BLAS, 2048³, best of 6) and exps per second (numpy's vectorised
    exp, and torch's, each over 65,536 numbers in cache, repeated), for float32 and float64."""
    script = """
import json, sys, threading, time, numpy as np, torch
threads = int(sys.argv[1])
torch.set_num_threads(threads)
out = {}
for name, dt, tdt in (("float32", np.float32, torch.float32), ("float64", np.float64, torch.float64)):
    a = np.random.rand(2048, 2048).astype(dt); b = np.random.rand(2048, 2048).astype(dt)
    best = 1e9
    for _ in range(6):
        t = time.perf_counter(); a @ b; best = min(best, time.perf_counter() - t)
    size, reps = 1 << 16, 256
    def numpy_exp(times):
        x = (-20 * np.random.rand(size)).astype(dt); y = np.empty_like(x); np.exp(x, out=y)
        t = time.perf_counter()
        for _ in range(reps): np.exp(x, out=y)
        times.append(time.perf_counter() - t)
    numpy_rate = 0
    for _ in range(3):  # numpy's exp is one thread: a thread each, side by side (it releases the GIL)
        times = []; workers = [threading.Thread(target=numpy_exp, args=(times,)) for _ in range(threads)]
        t = time.perf_counter(); [w.start() for w in workers]; [w.join() for w in workers]
        numpy_rate = max(numpy_rate, threads * size * reps / (time.perf_counter() - t))
    x = -20 * torch.rand(size, dtype=tdt); y = torch.empty_like(x); torch.exp(x, out=y)
    torch_rate = 0
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(reps): torch.exp(x, out=y)
        torch_rate = max(torch_rate, size * reps / (time.perf_counter() - t))
    out[name] = {"gemm_gflops": 2 * 2048 ** 3 / best / 1e9, "numpy_exp": numpy_rate, "torch_exp": torch_rate}
print(json.dumps(out))
"""
    return json.loads(subprocess.run(["/usr/bin/python3", "-c", script, str(threads)], check=True, capture_output=True,
                                     text=True, env=python_env(threads)).stdout)


def float32_rates(threads):
    """machine_rates' float32 figures alone, for measuring them again between the runs."""
    script = """
import json, sys, threading, time, numpy as np, torch
threads = int(sys.argv[1])
torch.set_num_threads(threads)
a = np.random.rand(2048, 2048).astype(np.float32); b = np.random.rand(2048, 2048).astype(np.float32)
best = 1e9
for _ in range(6):
    t = time.perf_counter(); a @ b; best = min(best, time.perf_counter() - t)
size, reps = 1 << 16, 256
def numpy_exp(times):
    x = (-20 * np.random.rand(size)).astype(np.float32); y = np.empty_like(x); np.exp(x, out=y)
    t = time.perf_counter()
    for _ in range(reps): np.exp(x, out=y)
    times.append(time.perf_counter() - t)
numpy_rate = 0
for _ in range(3):
    times = []; workers = [threading.Thread(target=numpy_exp, args=(times,)) for _ in range(threads)]
    t = time.perf_counter(); [w.start() for w in workers]; [w.join() for w in workers]
    numpy_rate = max(numpy_rate, threads * size * reps / (time.perf_counter() - t))
x = -20 * torch.rand(size); y = torch.empty_like(x); torch.exp(x, out=y)
torch_rate = 0
for _ in range(3):
    t = time.perf_counter()
    for _ in range(reps): torch.exp(x, out=y)
    torch_rate = max(torch_rate, size * reps / (time.perf_counter() - t))
print(json.dumps({"gemm_gflops": 2 * 2048 ** 3 / best / 1e9, "numpy_exp": numpy_rate, "torch_exp": torch_rate}))
"""
    return json.loads(subprocess.run(["/usr/bin/python3", "-c", script, str(threads)], check=True, capture_output=True,
                                     text=True, env=python_env(threads)).stdout)


def bound_seconds(gemm_gflops, exp_per_s, n, d, heads, mode):
    """The machine's bound for `attntrace bench`'s streaming run, in seconds: (X·W, attention's
    products, exp). X·W: the projections Q, K and V of X, n × d by d × d each (bench's random
    problem): 6·n·d² operations. Attention's products: Q·Kᵀ and A·V, 4·n²·d operations (2·n²·d
    causal, d summed over the heads). Both at the BLAS's GEMM rate; then the heads·n²
    exponentials (half of them causal) at the fastest exp rate measured."""
    causal = mode == "causal"
    projections = 6 * n * d * d / (gemm_gflops * 1e9)
    products = (2 if causal else 4) * n * n * d / (gemm_gflops * 1e9)
    exps = heads * n * n / (2 if causal else 1) / exp_per_s
    return projections, products, exps


def streaming_bench(binary, sizes, d, heads, threads):
    """attntrace bench, streaming path: ({(n, mode, dtype): compute seconds}, {dtype: exp per second})."""
    out = json.loads(run_output([binary, "bench", "--sizes", ",".join(map(str, sizes)), "--dim", str(d), "--heads",
                                 str(heads), "--modes", "self,causal", "--dtypes", "float32,float64", "--threads",
                                 str(threads), "--paths", "streaming", "--repeats", "3", "--max-time", "0", "-f", "json"]))
    seconds = {(r["n"], r["mode"], r["dtype"]): r["seconds"] for r in out["runs"]}
    exp = {e["dtype"]: e["g_per_s"] * 1e9 for e in out["exp"] if e["threads"] == threads}
    return seconds, exp


def round2(binary, folder, threads, small_runs):
    """Issue 18's report: markdown lines and the thresholds missed."""
    lines, misses = [], []

    lines += ["### The lecture example", ""]
    small_lines, small_misses, rss = small.small_report(binary, small_runs, 10)
    lines += small_lines + ["", f"Peak resident memory of `attntrace` on the built-in example: {rss:.1f} MiB.", ""]
    misses += small_misses

    rates = machine_rates(threads)
    # (n, d, heads): d = 64 at three lengths, d = 128, and 8 heads of 64 (d_model = 512)
    shapes = [(4096, 64, 1), (8192, 64, 1), (16384, 64, 1), (8192, 128, 1), (8192, 512, 8)]
    measured, own_exp = {}, {}
    for d, heads in sorted({(d, h) for _, d, h in shapes}):
        seconds, exp = streaming_bench(binary, sorted(n for n, dd, h in shapes if (dd, h) == (d, heads)), d, heads, threads)
        measured.update({(n, d, heads, mode, dtype): t for (n, mode, dtype), t in seconds.items()})
        own_exp = exp  # the same exp in every run: the last is kept
    exp_rate = {dtype: max(rates[dtype]["numpy_exp"], rates[dtype]["torch_exp"], own_exp[dtype])
                for dtype in ("float32", "float64")}
    lines += ["### The bound", "",
              f"In this run, on {threads} threads: BLAS GEMM (numpy, 2048³, best of 6): float32 "
              f"{rates['float32']['gemm_gflops']:.1f}, float64 {rates['float64']['gemm_gflops']:.1f} GFLOP/s. "
              "exp, in cache (10⁹ per second): "
              + "; ".join(f"{dtype} numpy {rates[dtype]['numpy_exp'] / 1e9:.2f}, torch {rates[dtype]['torch_exp'] / 1e9:.2f}, "
                          f"attntrace's own {own_exp[dtype] / 1e9:.2f}" for dtype in ("float32", "float64"))
              + ". The bound takes the fastest of the three.", "",
              "| n | d | heads | mode | dtype | X·W (s) | Q·Kᵀ, A·V (s) | exp (s) | bound (s) | attntrace streaming (s) "
              "| of the bound | of the bound without X·W | PyTorch compute (s) | PyTorch of the bound |",
              "|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for n, d, heads in shapes:
        path = os.path.join(folder, f"bound_{n}_{d}.json")
        if heads == 1:  # PyTorch's single-head baseline reads the same input
            subprocess.run([binary, "generate", "--tokens", str(n), "--dim", str(d), "-o", path], check=True)
        for mode in ("self", "causal"):
            for dtype in ("float32", "float64"):
                projections, products, exps = bound_seconds(rates[dtype]["gemm_gflops"], exp_rate[dtype], n, d, heads, mode)
                bound = projections + products + exps
                ours = measured[(n, d, heads, mode, dtype)]
                torch_cells = "— | —"
                if heads == 1:
                    command = [sys.executable, os.path.join(HERE, "baseline.py"), path, "--mode", mode, "--dtype", dtype,
                               "--threads", str(threads), "--warmup", "1", "--repeats", "3", "--backend", "torch",
                               "--format", "json"]
                    base = json.loads(subprocess.run(command, check=True, capture_output=True, text=True,
                                                     env=python_env(threads)).stdout)
                    torch_s = base["backends"]["torch"]["median_s"]
                    torch_cells = f"{torch_s:.4f} | {bound / torch_s:.0%}"
                lines.append(f"| {n} | {d} | {heads} | {mode} | {dtype} | {projections:.4f} | {products:.4f} | {exps:.4f} | "
                             f"{bound:.4f} | {ours:.4f} | {bound / ours:.0%} | {(products + exps) / ours:.0%} | {torch_cells} |")
                if bound / ours < 0.7:
                    misses.append(f"streaming, n = {n}, d = {d}, {heads} head(s), {mode}, {dtype}: "
                                  f"{bound / ours:.0%} of the bound < 70%")
        if os.path.exists(path):
            os.remove(path)

    lines += ["", "### 131,072 tokens", "", "| n | mode | dtype | wall (s) | peak (MiB) |", "|---:|---|---|---:|---:|"]
    long_path = os.path.join(folder, "long.json")
    subprocess.run([binary, "generate", "--tokens", "131072", "--dim", "64", "-o", long_path], check=True)
    for dtype in ("float64", "float32"):
        wall, peak = small.time_and_peak([binary, long_path, "--summary", "-m", "causal", "--dtype", dtype, "--threads",
                                    str(threads)])
        lines.append(f"| 131072 | causal | {dtype} | {wall:.1f} | {peak:.0f} |")
        if wall > 30:
            misses.append(f"131072 causal {dtype}: {wall:.1f} s > 30")
        if peak > 1024:
            misses.append(f"131072 causal {dtype}: {peak:.0f} MiB > 1024")
    os.remove(long_path)

    lines += ["", "### The full trace as JSON", "",
              "| n | mode | output | wall (s) | written (MB) | MB/s | peak (MiB) |", "|---:|---|---|---:|---:|---:|---:|"]
    trace_path = os.path.join(folder, "trace.json")
    subprocess.run([binary, "generate", "--tokens", "2048", "--dim", "64", "-o", trace_path], check=True)
    out_path = os.path.join(folder, "out.json")
    for label, extra in (("every stage", []), ("the context only", ["-s", "context"])):
        wall, peak = small.time_and_peak([binary, trace_path, "-m", "causal", "-f", "json", "--threads", str(threads),
                                    "-o", out_path] + extra)
        size = os.path.getsize(out_path) / 1e6
        lines.append(f"| 2048 | causal | {label} | {wall:.2f} | {size:.1f} | {size / wall:.0f} | {peak:.0f} |")
    return lines, misses


OPENBLAS_DIR = "/usr/lib/x86_64-linux-gnu/openblas-pthread"


def python_env(threads):
    """The environment of a Python child: its BLAS threads, and OpenBLAS when the system's
    libblas.so.3 is the reference one but OpenBLAS is installed beside it."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    system = os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")
    if "openblas" not in system and os.path.exists(os.path.join(OPENBLAS_DIR, "libblas.so.3")):
        env["LD_LIBRARY_PATH"] = OPENBLAS_DIR + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


def run_measured(command):
    """Wall seconds and CPU seconds (user + system, every thread) of one child process."""
    with open(os.devnull, "wb") as null:
        start = time.perf_counter()
        pid = os.posix_spawn(command[0], command, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, null.fileno(), 1)])
        _, status, usage = os.wait4(pid, 0)
        wall = time.perf_counter() - start
    if status != 0:
        sys.exit(f"{os.path.basename(sys.argv[0])}: {' '.join(command)} failed")
    return wall, usage.ru_utime + usage.ru_stime


def torch_backward(path, mode, dtype, threads, loss, target, repeats=1, warmup=1, reference=False):
    command = ["/usr/bin/python3", os.path.join(HERE, "backward_baseline.py"), path, "--mode", mode, "--dtype", dtype,
               "--threads", str(threads), "--loss", loss, "--repeats", str(repeats), "--warmup", str(warmup)]
    if target:
        command += ["--target", target]
    if reference:
        command.append("--reference")
    return json.loads(subprocess.run(command, check=True, capture_output=True, text=True,
                                     env=python_env(threads)).stdout)


def ours_backward(tool, path, mode, dtype, threads, loss, target, extra=()):
    spec = "sum" if loss == "sum" else f"target:{target}"
    command = [tool, path, f"mode={mode}", f"dtype={dtype}", f"threads={threads}", f"loss={spec}"] + list(extra)
    return command, lambda: json.loads(run_output(command))


def relative(mine, theirs):
    """max |mine − theirs| over max(1, max |theirs|), of two nested lists of numbers."""
    import numpy as np
    a, b = np.asarray(mine, dtype=np.float64), np.asarray(theirs, dtype=np.float64)
    if a.shape != b.shape:
        sys.exit(f"compare.py: shapes {a.shape} and {b.shape} differ")
    return float(np.abs(a - b).max() / max(1.0, float(np.abs(b).max())))


def worst_difference(ours, torch_out, whole_inputs):
    """The largest relative difference over the loss, dW_q, dW_k, dW_v and ‖dL/dx_i‖ (and dX
    whole when both have it)."""
    worst = {"loss": abs(ours["loss"] - torch_out["loss"]) / max(1.0, abs(torch_out["loss"]))}
    for name in ("W_q", "W_k", "W_v"):
        worst[name] = relative(ours["parameters"][name], torch_out["gradients"][name])
    worst["‖dx_i‖"] = relative(ours["input_norms"], torch_out["input_norms"])
    if whole_inputs:
        worst["dX"] = relative(ours["inputs"], torch_out["inputs"])
    return worst


def write_target(path, rows, cols, seed):
    import numpy as np
    np.save(path, np.random.default_rng(seed).uniform(-1, 1, size=(rows, cols)))


def backward_work(n, d, mode, loss):
    """(the products' operations, exps) of one streaming forward and backward pass, n tokens of
    d_in = d_k = d_v = d: the forward's Q·Kᵀ and P·V; the backward's recomputed Q·Kᵀ, dP = dZ·Vᵀ,
    dV = Pᵀ·dZ, dK = dSᵀ·Q, dQ = dS·K (2.5 times the forward's) — a sum's dZ is one row, so its
    dP and dV are no products (1.5 times); 2·n²·d operations each, half of them causal; the
    projections, dW = Xᵀ·d… and dX = d…·Wᵀ, 18·n·d²; an exp per pair a query sees, twice."""
    half = 0.5 if mode == "causal" else 1.0
    products = 2 + (3 if loss == "sum" else 5)
    return products * 2 * n * n * d * half + 18 * n * d * d, 2 * n * n * half


def backward_report(args, binary, folder):
    """Issue 31's report: markdown lines and the thresholds missed."""
    tool = os.path.abspath(args.stream_backward)
    if not os.path.exists(tool):
        sys.exit(f"{tool} is missing: build it with cmake --build build --target attntrace_stream_backward")
    threads = max(int(t) for t in args.threads.split(","))
    lines, misses = [], []

    # agreement on toy inputs, float64
    toy = os.path.join(folder, "toy.json")
    subprocess.run([binary, "generate", "--tokens", "37", "--dim", "8", "--seed", "3", "-o", toy], check=True)
    toy_target = os.path.join(folder, "toy_target.npy")
    write_target(toy_target, 37, 8, 4)
    lines += ["### Agreement with PyTorch in float64, toy inputs", "",
              "`attntrace generate --tokens 37 --dim 8 --seed 3`; attntrace in float64 with tiles of 256 keys and of 8, "
              "PyTorch's autograd in float64; the largest difference relative to max(1, PyTorch's largest entry):", "",
              "| mode | loss | tile | L | dW_q | dW_k | dW_v | dX |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for mode in ("self", "causal"):
        for loss in ("sum", "target"):
            reference = torch_backward(toy, mode, "float64", threads, loss, toy_target, reference=True)
            for tile in (256, 8):
                _, run = ours_backward(tool, toy, mode, "float64", threads, loss, toy_target,
                                       [f"tile={tile}", "inputs=1", "norms=1"])
                w = worst_difference(run(), reference, True)
                lines.append(f"| {mode} | {loss} | {tile} | {w['loss']:.1e} | {w['W_q']:.1e} | {w['W_k']:.1e} | "
                             f"{w['W_v']:.1e} | {w['dX']:.1e} |")
                if max(w.values()) > 1e-12:
                    misses.append(f"toy {mode} {loss} tile {tile}: {max(w.values()):.1e} from PyTorch float64 > 1e-12")

    # n = --tokens: time, memory and agreement
    n, d = args.tokens, args.dim
    path = os.path.join(folder, "long.json")
    subprocess.run([binary, "generate", "--tokens", str(n), "--dim", str(d), "--seed", "1", "-o", path], check=True)
    target = os.path.join(folder, "long_target.npy")
    write_target(target, n, d, 2)
    configs = [(mode, loss) for mode in ("self", "causal") for loss in ("sum", "target")]
    ours_times = {c: [] for c in configs}
    torch_runs = {c: [] for c in configs}
    counts = sorted({1, threads})
    rate = {t: {"gemm_gflops": 0.0, "numpy_exp": 0.0, "torch_exp": 0.0} for t in counts}
    for _ in range(args.repeats):  # the two sides and the machine's rates take turns, each a round
        for c in configs:
            command, _ = ours_backward(tool, path, c[0], "float32", threads, c[1], target)
            ours_times[c].append(run_measured(command))
        for c in configs:
            torch_runs[c].append(torch_backward(path, c[0], "float32", threads, c[1], target, repeats=1, warmup=1))
        for t in counts:  # the best of the rounds: a busy machine only ever lowers them
            measured = float32_rates(t)
            rate[t] = {k: max(rate[t][k], measured[k]) for k in rate[t]}
    rows = {}
    for c in configs:
        command, run = ours_backward(tool, path, c[0], "float32", threads, c[1], target, ["norms=1"])
        _, peak = small.time_and_peak(command)
        ours = run()
        reference = torch_backward(path, c[0], "float64", threads, c[1], target, reference=True)
        t32 = torch_runs[c][-1]
        rows[c] = {"wall": min(w for w, _ in ours_times[c]), "cpu": min(u for _, u in ours_times[c]), "peak": peak,
                   "torch_wall": min(r["wall_s"][0] for r in torch_runs[c]),
                   "torch_cpu": min(r["cpu_s"][0] for r in torch_runs[c]),
                   "torch_peak": max(r["process_peak_mib"] for r in torch_runs[c]),
                   "torch_added": max(r["pass_added_mib"] for r in torch_runs[c]),
                   "ours_error": worst_difference(ours, reference, False),
                   "torch_error": worst_difference({"loss": t32["loss"], "parameters": t32["gradients"],
                                                    "input_norms": t32["input_norms"]}, reference, False),
                   "blas": t32["blas"], "torch_version": t32["torch"]}
    blas = rows[configs[0]]["blas"]
    lines += ["", f"### n = {n}, d = {d}, float32, {threads} threads", "",
              f"Input: `attntrace generate --tokens {n} --dim {d} --seed 1` (JSON, "
              f"{os.path.getsize(path) / 1e6:.1f} MB), the target of the target loss a float64 .npy of numbers of "
              f"[-1, 1) from numpy's generator (seed 2). attntrace: the whole process "
              f"(`attntrace_stream_backward FILE mode=M dtype=float32 threads={threads} loss=…`, reading included). "
              f"PyTorch {rows[configs[0]]['torch_version']} ({', '.join(os.path.basename(p) for p in blas['libraries'])}"
              f"{', ' + str(blas['openblas_threads']) + ' threads' if blas['openblas_threads'] else ''}): "
              "autograd's forward and backward pass of the same loss, the tensors already loaded, one warm-up pass. "
              f"Best of {args.repeats} rounds, the two sides taking turns.", "",
              "| mode | loss | attntrace wall (s) | CPU (s) | PyTorch wall (s) | CPU (s) | PyTorch ÷ attntrace, wall | CPU "
              "| attntrace peak (MiB) | PyTorch peak (MiB) | one pass adds (MiB) |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for c in configs:
        r = rows[c]
        lines.append(f"| {c[0]} | {c[1]} | {r['wall']:.3f} | {r['cpu']:.3f} | {r['torch_wall']:.3f} | {r['torch_cpu']:.3f} "
                     f"| {r['torch_wall'] / r['wall']:.2f}× | {r['torch_cpu'] / r['cpu']:.2f}× | {r['peak']:.0f} | "
                     f"{r['torch_peak']:.0f} | {r['torch_added']:.0f} |")
        if r["torch_wall"] / r["wall"] < 3:
            misses.append(f"n = {n} {c[0]} {c[1]}: PyTorch / attntrace wall {r['torch_wall'] / r['wall']:.2f} < 3")
        if r["torch_cpu"] / r["cpu"] < 3:
            misses.append(f"n = {n} {c[0]} {c[1]}: PyTorch / attntrace CPU {r['torch_cpu'] / r['cpu']:.2f} < 3")
        if r["peak"] > r["torch_added"] / 10:
            misses.append(f"n = {n} {c[0]} {c[1]}: attntrace's peak {r['peak']:.0f} MiB > a tenth of the "
                          f"{r['torch_added']:.0f} MiB PyTorch's pass adds")
    lines += ["", "Each side's float32 gradients against PyTorch's float64 ones (the largest difference relative to "
              "max(1, the largest entry)):", "",
              "| mode | loss | attntrace: L | dW_q | dW_k | dW_v | ‖dx_i‖ | PyTorch float32: L | dW_q | dW_k | dW_v | ‖dx_i‖ |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    names = ("loss", "W_q", "W_k", "W_v", "‖dx_i‖")
    for c in configs:
        e, t = rows[c]["ours_error"], rows[c]["torch_error"]
        lines.append(f"| {c[0]} | {c[1]} | " + " | ".join(f"{e[k]:.1e}" for k in names) + " | "
                     + " | ".join(f"{t[k]:.1e}" for k in names) + " |")
        if max(e.values()) > 1e-4:
            misses.append(f"n = {n} {c[0]} {c[1]}: float32 gradients {max(e.values()):.1e} from PyTorch float64 > 1e-4")

    # the bound
    own = {}
    for t in counts:
        bench = json.loads(run_output([binary, "bench", "--sizes", "256", "--dim", "16", "--modes", "self", "--dtypes",
                                       "float32", "--threads", str(t), "--paths", "streaming", "--repeats", "1",
                                       "--max-time", "0", "-f", "json"]))
        own[t] = max(e["g_per_s"] * 1e9 for e in bench["exp"] if e["dtype"] == "float32" and e["threads"] == t)
    exp_rate = {t: max(rate[t]["numpy_exp"], rate[t]["torch_exp"], own[t]) for t in (1, threads)}
    lines += ["", "### The bound", "",
              f"This machine's rates in this run, float32, each the best of the {args.repeats} rounds above: GEMM "
              "(numpy on the BLAS named above, 2048³, best of 6) "
              f"{rate[1]['gemm_gflops']:.1f} GFLOP/s on one thread, {rate[threads]['gemm_gflops']:.1f} on {threads}; "
              f"exp in cache (the fastest of numpy's, torch's and attntrace's own) {exp_rate[1] / 1e9:.2f}·10⁹/s on one "
              f"thread, {exp_rate[threads] / 1e9:.2f}·10⁹/s on {threads}. The work of one pass (docstring of "
              "backward_work): the products of the forward (Q·Kᵀ, P·V), of the backward (the recomputed Q·Kᵀ, dZ·Vᵀ, "
              "Pᵀ·dZ, dSᵀ·Q, dS·K: 2.5 times the forward's; a sum's dZ is one row, which leaves three, 1.5 times), "
              "the projections and the weights' gradients, and two exps per pair a query sees. The bound is that work "
              "at those rates; \"of the bound\" is the bound over attntrace's time (CPU seconds against one "
              "thread's rates, wall seconds against all threads'). For a sum the bound of the general case (2.5 "
              "times) is shown too.", "",
              "| mode | loss | work (GFLOP) | exps (10⁹) | bound, one thread (CPU s) | attntrace CPU (s) | of the bound "
              f"| bound, {threads} threads (s) | attntrace wall (s) | of the bound | of the 2.5× bound (CPU) |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for c in configs:
        r = rows[c]
        flops, exps = backward_work(n, d, c[0], c[1])
        general, _ = backward_work(n, d, c[0], "target")
        bound = {t: flops / (rate[t]["gemm_gflops"] * 1e9) + exps / exp_rate[t] for t in (1, threads)}
        bound_general = general / (rate[1]["gemm_gflops"] * 1e9) + exps / exp_rate[1]
        lines.append(f"| {c[0]} | {c[1]} | {flops / 1e9:.1f} | {exps / 1e9:.3f} | {bound[1]:.3f} | {r['cpu']:.3f} | "
                     f"{bound[1] / r['cpu']:.0%} | {bound[threads]:.3f} | {r['wall']:.3f} | {bound[threads] / r['wall']:.0%} "
                     f"| {bound_general / r['cpu']:.0%} |")
        if bound[1] / r["cpu"] < 0.7:
            misses.append(f"n = {n} {c[0]} {c[1]}: {bound[1] / r['cpu']:.0%} of the bound (CPU) < 70%")

    # long inputs: memory and the time per doubling
    lines += ["", f"### Longer inputs: causal, loss sum, float32, {threads} threads", "",
              "From float32 safetensors files (`attntrace generate -f safetensors --dtype float32`), which the pass reads "
              "where they are mapped; one run each, /usr/bin/time.", "",
              "| n | file (MiB) | wall (s) | CPU (s) | ÷ the previous n | peak (MiB) | peak − file (MiB) |",
              "|---:|---:|---:|---:|---:|---:|---:|"]
    previous = None
    sizes = []
    m = n
    while m <= args.memory_tokens:
        sizes.append(m)
        m *= 2
    for m in sizes:
        long_path = os.path.join(folder, f"long_{m}.safetensors")
        subprocess.run([binary, "generate", "--tokens", str(m), "--dim", str(d), "--seed", "1", "-f", "safetensors",
                        "--dtype", "float32", "-o", long_path], check=True)
        command, _ = ours_backward(tool, long_path, "causal", "float32", threads, "sum", None)
        wall, cpu = run_measured(command)
        _, peak = small.time_and_peak(command)
        size = os.path.getsize(long_path) / 2**20
        os.remove(long_path)
        ratio = f"{cpu / previous:.2f}×" if previous else "—"
        previous = cpu
        lines.append(f"| {m} | {size:.1f} | {wall:.2f} | {cpu:.2f} | {ratio} | {peak:.0f} | {peak - size:.0f} |")
        if m == args.memory_tokens and peak > size + 64:
            misses.append(f"n = {m} causal: peak {peak:.0f} MiB > the file's {size:.0f} MiB + 64")
    return lines, misses


def main():
    if "--train" in sys.argv[1:]:  # issue 32's report: attntrace train against PyTorch (its own options)
        import train_compare
        sys.argv.remove("--train")
        return train_compare.main()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--attntrace", default=os.path.join(HERE, "..", "..", "build", "attntrace"))
    p.add_argument("--tokens", type=int, default=8192)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--dtypes", default="float32,float64")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--memory-tokens", type=int, default=65536)
    p.add_argument("--round2", action="store_true", help="issue 18's report and thresholds as well")
    p.add_argument("--small-runs", type=int, default=300)
    p.add_argument("--backward", action="store_true", help="issue 31's report: the streaming backward pass instead")
    p.add_argument("--stream-backward", default=os.path.join(HERE, "..", "..", "build", "tests", "attntrace_stream_backward"))
    args = p.parse_args()
    binary = os.path.abspath(args.attntrace)

    if args.backward:
        with tempfile.TemporaryDirectory() as folder:
            lines, misses = backward_report(args, binary, folder)
        print("\n".join(lines))
        print()
        return small.verdict(misses)

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
        rss = {dtype: small.time_and_peak([binary, memory_path, "--summary", "-m", "causal", "--dtype", dtype])[1]
               for dtype in ("float32", "float64")}
        size_mib = os.path.getsize(memory_path) / 2**20
        os.remove(memory_path)
        top_threads = max(int(t) for t in args.threads.split(","))
        extra, misses = round2(binary, folder, top_threads, args.small_runs) if args.round2 else ([], [])

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
          f"(a {size_mib:.0f} MiB file): float32 {rss['float32']:.0f} MiB, float64 {rss['float64']:.0f} MiB")
    if not args.round2:
        return 0
    for r in rows:  # issue 18: the whole process at least 3 times as fast as PyTorch's compute alone
        if r["mode"] == "self" and r["threads"] == top_threads and r["torch"] / r["attntrace"] < 3:
            misses.append(f"n = {args.tokens} self {r['dtype']}: PyTorch / attntrace {r['torch'] / r['attntrace']:.2f} < 3")
    print()
    print("\n".join(extra))
    print()
    return small.verdict(misses)


if __name__ == "__main__":
    sys.exit(main())
