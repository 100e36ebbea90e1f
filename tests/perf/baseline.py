#!/usr/bin/python3
"""Time plain attention in numpy and PyTorch: the baseline that attntrace is compared with.

    python3 tests/perf/baseline.py INPUT.json [--mode self|causal] [--dtype float32|float64]
        [--threads N] [--repeats R] [--warmup W] [--backend torch|numpy|both]
        [--format table|json]

INPUT.json is an attntrace input with "tokens", "embeddings" (n × d_in) and "weights"
{"query", "key", "value"} (d_in × d_k, d_in × d_k, d_in × d_v); other keys are ignored.
Each backend computes, the way a user would write it by hand (row vectors, as attntrace):

    Q = X·W_q, K = X·W_k, V = X·W_v          n × d_k, n × d_k, n × d_v
    S = Q·Kᵀ / √d_k                           n × n, held in memory whole
    causal: S[i, j] = −inf where j > i
    A = softmax of each row of S (row max subtracted first)
    Z = A·V                                   n × d_v

Loading (JSON parse + conversion to arrays) is timed on its own and is not part of the
compute time. Missing file, bad JSON or bad shapes: one line on stderr, exit status 1.
See README.md beside this file.
"""
import os
import sys


def _threads_from_argv(argv):
    """Read --threads from the raw command line, before argparse and before numpy.

    OpenBLAS reads OPENBLAS_NUM_THREADS once, when the library is loaded, so the variable must
    be set before `import numpy` (and before torch, which loads the same libblas.so.3).
    A bad value is left for argparse to report; the default is every CPU we may run on.
    """
    for i, arg in enumerate(argv):
        value = None
        if arg == "--threads" and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith("--threads="):
            value = arg.split("=", 1)[1]
        if value is not None:
            return value if value.isdigit() and int(value) > 0 else None
    return str(len(os.sched_getaffinity(0)))


_THREADS = _threads_from_argv(sys.argv[1:])
if _THREADS is not None:
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = _THREADS

import argparse  # noqa: E402  (everything below may load a BLAS: keep it after the env)
import ctypes  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

PROG = os.path.basename(sys.argv[0])


def fail(message):
    """One line on stderr and exit status 1: the contract for unusable input."""
    print(f"{PROG}: error: {message}", file=sys.stderr)
    sys.exit(1)


# ---------------------------------------------------------------------------------------
# Input


def load_input(path):
    """Return (X, Wq, Wk, Wv) as float64 arrays plus the parse and conversion times (s)."""
    t0 = time.perf_counter()
    try:
        with open(path, "rb") as f:
            doc = json.load(f)
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    except json.JSONDecodeError as e:
        fail(f"{path}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}")
    except UnicodeDecodeError as e:
        fail(f"{path}: not UTF-8 text: {e.reason} at byte {e.start}")
    t1 = time.perf_counter()

    if not isinstance(doc, dict):
        fail(f"{path}: the top level must be a JSON object")
    weights = doc.get("weights")
    if "embeddings" not in doc:
        fail(f"{path}: no \"embeddings\" (an array of n vectors)")
    if not isinstance(weights, dict) or not all(k in weights for k in ("query", "key", "value")):
        fail(f"{path}: the baseline needs \"weights\" with \"query\", \"key\" and \"value\"")

    def matrix(where, value):
        # float64 first: the JSON numbers are kept exactly; --dtype is applied later.
        try:
            m = np.array(value, dtype=np.float64)
        except (ValueError, TypeError):
            fail(f"{path}: {where} must be an array of equal-length arrays of numbers")
        if m.ndim != 2 or m.size == 0:
            fail(f"{path}: {where} must be a non-empty 2-d array, got shape {m.shape}")
        if not np.isfinite(m).all():
            fail(f"{path}: {where} holds a value that is not a finite number")
        return m

    X = matrix("/embeddings", doc["embeddings"])                    # n × d_in
    Wq, Wk, Wv = (matrix(f"/weights/{k}", weights[k]) for k in ("query", "key", "value"))
    n, d_in = X.shape
    tokens = doc.get("tokens")
    if isinstance(tokens, list) and len(tokens) != n:
        fail(f"{path}: {len(tokens)} tokens but {n} embedding rows")
    for name, W in (("query", Wq), ("key", Wk), ("value", Wv)):
        if W.shape[0] != d_in:
            fail(f"{path}: /weights/{name} has {W.shape[0]} rows, the embeddings have d_in={d_in}")
    if Wk.shape != Wq.shape:
        fail(f"{path}: /weights/key is {Wk.shape}, it must match /weights/query {Wq.shape}")
    t2 = time.perf_counter()
    return (X, Wq, Wk, Wv), t1 - t0, t2 - t1


# ---------------------------------------------------------------------------------------
# The two implementations. Shapes: X n×d_in, Wq/Wk d_in×d_k, Wv d_in×d_v, mask n×n bool
# (True = hidden) or None. Both return (A n×n, Z n×d_v).


def attention_numpy(X, Wq, Wk, Wv, mask):
    Q = X @ Wq                                   # n × d_k
    K = X @ Wk                                   # n × d_k
    V = X @ Wv                                   # n × d_v
    S = (Q @ K.T) / math.sqrt(Q.shape[1])        # n × n; a Python float keeps float32 float32
    if mask is not None:
        S[mask] = -np.inf                        # key j > query i: weight 0 after exp
    S -= S.max(axis=1, keepdims=True)            # row max becomes 0, so exp cannot overflow
    A = np.exp(S)                                # n × n
    A /= A.sum(axis=1, keepdims=True)
    return A, A @ V                              # Z: n × d_v


def attention_torch(X, Wq, Wk, Wv, mask):
    import torch
    Q = X @ Wq
    K = X @ Wk
    V = X @ Wv
    S = (Q @ K.T) / math.sqrt(Q.shape[1])
    if mask is not None:
        S = S.masked_fill(mask, float("-inf"))
    A = torch.softmax(S, dim=-1)                 # subtracts the row max itself
    return A, A @ V


def attention_torch_sdpa(X, Wq, Wk, Wv, mask):
    """torch's fused kernel (torch >= 2.0 only); A is never formed, so it returns None for it."""
    import torch.nn.functional as F
    Z = F.scaled_dot_product_attention(X @ Wq, X @ Wk, X @ Wv, is_causal=mask is not None)
    return None, Z


# ---------------------------------------------------------------------------------------
# Timing


def busy_cpu_seconds():
    """CPU seconds the whole machine has spent busy since boot (first line of /proc/stat)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]                 # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def measure(fn, inputs, warmup, repeats):
    """W untimed calls, then R timed ones. Returns the last (A, Z), wall and CPU seconds,
    and the CPU seconds other processes took meanwhile.

    CPU time / wall time shows how many threads really worked (about 1 or about N). The
    others' share tells whether the numbers are trustworthy: a build running alongside on a
    2-core machine can double the times.
    """
    for _ in range(warmup):
        fn(*inputs)
    walls, cpus = [], []
    result = None
    machine0, own0 = busy_cpu_seconds(), time.process_time()
    for _ in range(repeats):
        result = None                            # free the last n × n before the next run
        c0, t0 = time.process_time(), time.perf_counter()
        result = fn(*inputs)
        t1, c1 = time.perf_counter(), time.process_time()
        walls.append(t1 - t0)
        cpus.append(c1 - c0)
    others = (busy_cpu_seconds() - machine0) - (time.process_time() - own0)
    return result, walls, cpus, max(others, 0.0)


def checks(A, Z):
    """Numbers to compare with another implementation: Z[0][:3], Z[n-1][:3], top-3 of A[n-1]."""
    Z = np.asarray(Z, dtype=np.float64)
    out = {"z_first_row": Z[0, :3].tolist(), "z_last_row": Z[-1, :3].tolist(), "top3_last_row": None}
    if A is not None:
        last = np.asarray(A[-1], dtype=np.float64)
        order = np.argsort(-last, kind="stable")[:3]  # ties: the lower key index first
        out["top3_last_row"] = [{"key": int(j), "weight": float(last[j])} for j in order]
    return out


# ---------------------------------------------------------------------------------------
# What ran where


def machine_info():
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), model)
    except OSError:
        pass
    mem_kib = None
    try:
        with open("/proc/meminfo") as f:
            mem_kib = next((int(l.split()[1]) for l in f if l.startswith("MemTotal:")), None)
    except OSError:
        pass
    return {"cpu_model": model, "cores": os.cpu_count(), "usable_cores": len(os.sched_getaffinity(0)),
            "ram_gib": round(mem_kib / 2**20, 1) if mem_kib else None,
            "os": platform.platform()}


def blas_info():
    """The BLAS really loaded (numpy.show_config() on Debian only says "blas").

    Debian's numpy and torch both link libblas.so.3, which update-alternatives points at a
    BLAS; read the mapped files to see which, and ask OpenBLAS for its threads if it is one.
    """
    with open("/proc/self/maps") as f:
        paths = sorted({l.split()[-1] for l in f if "blas" in l.rsplit("/", 1)[-1]})
    info = {"libraries": paths, "openblas": None, "openblas_threads": None}
    openblas = next((p for p in paths if "openblas" in os.path.basename(p)), None)
    if openblas:
        lib = ctypes.CDLL(openblas)              # already loaded: same copy, same settings
        lib.openblas_get_config.restype = ctypes.c_char_p
        info["openblas"] = lib.openblas_get_config().decode()
        info["openblas_threads"] = lib.openblas_get_num_threads()
    return info


def debian_versions(packages):
    """Debian package versions (torch reports 1.13.0a0 for Debian's 1.13.1 build)."""
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Version}\n", *packages],
                             capture_output=True, text=True).stdout
    except OSError:
        return {}
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)


# ---------------------------------------------------------------------------------------


def main():
    def count(low):
        def parse(text):
            if not text.isdigit() or int(text) < low:
                raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {text!r}")
            return int(text)
        return parse

    p = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("input", metavar="INPUT.json")
    p.add_argument("--mode", choices=("self", "causal"), default="self")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--threads", type=count(1), default=int(_THREADS or 1),
                   help="threads for OpenBLAS, OpenMP and torch (default: all usable CPUs)")
    p.add_argument("--repeats", type=count(1), default=5, help="timed runs (default 5)")
    p.add_argument("--warmup", type=count(0), default=2, help="untimed runs first (default 2)")
    p.add_argument("--backend", choices=("torch", "numpy", "both"), default="both")
    p.add_argument("--format", choices=("table", "json"), default="table")
    args = p.parse_args()

    (X, Wq, Wk, Wv), parse_s, arrays_s = load_input(args.input)
    n, d_in = X.shape
    d_k, d_v = Wq.shape[1], Wv.shape[1]
    dtype = np.dtype(args.dtype)
    X, Wq, Wk, Wv = (np.ascontiguousarray(m, dtype=dtype) for m in (X, Wq, Wk, Wv))
    causal = args.mode == "causal"
    # Built once, outside the timing, like a registered buffer in a torch module.
    mask = np.triu(np.ones((n, n), dtype=bool), k=1) if causal else None   # n × n

    # The two n × n products: Q·Kᵀ is 2·n²·d_k flops, A·V 2·n²·d_v (4·n²·d when both are d).
    # Causal counts only the half at or below the diagonal, as attntrace does, although the
    # code here computes the whole square. The projections (6·n·d_in·d) are timed, not counted.
    flops = 2 * n * n * (d_k + d_v) // (2 if causal else 1)

    runs = []
    if args.backend in ("numpy", "both"):
        runs.append(("numpy", attention_numpy, (X, Wq, Wk, Wv, mask)))
    torch_info = None
    if args.backend in ("torch", "both"):
        import torch                             # only now: it costs memory and start-up time
        torch.set_num_threads(args.threads)
        t_inputs = tuple(torch.from_numpy(m) for m in (X, Wq, Wk, Wv)) + (
            torch.from_numpy(mask) if causal else None,)
        runs.append(("torch", attention_torch, t_inputs))
        sdpa = hasattr(torch.nn.functional, "scaled_dot_product_attention")
        if sdpa:
            runs.append(("torch-sdpa", attention_torch_sdpa, t_inputs))
        torch_info = {"version": torch.__version__, "threads": torch.get_num_threads(),
                      "sdpa_available": sdpa}

    results = {}
    for name, fn, inputs in runs:
        if name.startswith("torch"):
            import torch
            with torch.no_grad():
                (A, Z), walls, cpus, others = measure(fn, inputs, args.warmup, args.repeats)
        else:
            (A, Z), walls, cpus, others = measure(fn, inputs, args.warmup, args.repeats)
        median = statistics.median(walls)
        results[name] = {
            "median_s": median, "min_s": min(walls), "max_s": max(walls),
            "gflops": flops / median / 1e9, "cpu_per_wall": sum(cpus) / sum(walls),
            # CPUs other processes kept busy on average while this backend was timed. /proc/stat
            # counts in ticks of 10 ms, so below half a second of timing it says nothing.
            "others_cpu_per_wall": others / sum(walls) if sum(walls) >= 0.5 else None,
            "times_s": walls, **checks(A, Z)}
        del A, Z

    report = {
        "input": args.input, "machine": machine_info(),
        "libraries": {"python": platform.python_version(), "numpy": np.__version__,
                      "torch": torch_info, "blas": blas_info(),
                      "debian": debian_versions(["python3-numpy", "python3-torch",
                                                 "libopenblas0-pthread"])},
        "n": n, "d_in": d_in, "d_k": d_k, "d_v": d_v, "mode": args.mode, "dtype": args.dtype,
        "threads": args.threads, "warmup": args.warmup, "repeats": args.repeats,
        "flops_per_run": flops,
        "load_s": parse_s + arrays_s, "load_parse_s": parse_s, "load_arrays_s": arrays_s,
        "backends": results}

    if args.format == "json":
        print(json.dumps(report, indent=2))
    else:
        print_table(report)


def print_table(r):
    m, lib = r["machine"], r["libraries"]
    blas = lib["blas"]["openblas"] or ", ".join(lib["blas"]["libraries"]) or "none found"
    torch_text = (f"torch {lib['torch']['version']} ({lib['torch']['threads']} threads)"
                  if lib["torch"] else "torch not loaded")
    print(f"input     {r['input']}: n={r['n']} d_in={r['d_in']} d_k={r['d_k']} d_v={r['d_v']}, "
          f"loaded in {r['load_s']:.3f} s (parse {r['load_parse_s']:.3f} + arrays "
          f"{r['load_arrays_s']:.3f}), not timed below")
    print(f"machine   {m['cpu_model']}, {m['cores']} cores, {m['ram_gib']} GiB")
    print(f"libraries numpy {lib['numpy']}, {torch_text}; BLAS {blas} "
          f"({lib['blas']['openblas_threads']} threads)")
    print(f"run       mode={r['mode']} dtype={r['dtype']} threads={r['threads']}, "
          f"{r['warmup']} warm-up + {r['repeats']} timed runs, "
          f"{r['flops_per_run'] / 1e9:.3f} GFLOP counted per run")
    print()
    print(f"{'backend':<11} {'median s':>9} {'min s':>9} {'max s':>9} {'GFLOP/s':>8} "
          f"{'cpu/wall':>8} {'others':>6}")
    for name, s in r["backends"].items():
        others = s["others_cpu_per_wall"]
        print(f"{name:<11} {s['median_s']:9.4f} {s['min_s']:9.4f} {s['max_s']:9.4f} "
              f"{s['gflops']:8.2f} {s['cpu_per_wall']:8.2f} "
              f"{'-' if others is None else format(others, '.2f'):>6}")
    print()
    if any((s["others_cpu_per_wall"] or 0) > 0.1 for s in r["backends"].values()):
        print("warning: other processes used CPU while timing (column 'others', in CPUs); "
              "the times above are not clean")
        print()
    for name, s in r["backends"].items():
        row = lambda v: "[" + ", ".join(f"{x:.6f}" for x in v) + "]"  # noqa: E731
        top = ("  ".join(f"{t['key']}:{t['weight']:.6g}" for t in s["top3_last_row"])
               if s["top3_last_row"] else "(A not formed)")
        print(f"{name:<11} Z[0][:3]={row(s['z_first_row'])}  Z[n-1][:3]={row(s['z_last_row'])}  "
              f"top-3 keys of row n-1: {top}")


if __name__ == "__main__":
    main()
