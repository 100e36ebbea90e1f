#!/usr/bin/python3
"""Several heads against one: attntrace's streaming path and PyTorch's multi-head attention,
side by side, in one run on one machine.

    /usr/bin/python3 tests/perf/heads.py [--attntrace build/attntrace] [--tokens 8192]
        [--model 64] [--heads 1,4,8] [--threads 2] [--repeats 7] [--warmup 2]

Writes one input of n tokens with d_in = d_model = d_out = --model and random W_q, W_k, W_v,
W_o (the same for every head count: H heads split their columns into blocks of d_model / H),
then for each H times
  - attntrace, the whole process: `attntrace FILE --summary -m self --heads H --dtype float32
    --threads T -s context`, reading and parsing the file included (the layer's output, concat
    times W_o, is computed, as PyTorch computes it);
  - PyTorch: torch.nn.functional.multi_head_attention_forward on the same matrices (in_proj
    is [W_qᵀ; W_kᵀ; W_vᵀ], out_proj is W_oᵀ, no biases, need_weights=False), compute only;
taking turns (each round runs every configuration once) and reporting medians. It checks
that the two agree on the output and prints a markdown report: the times, and each one's
ratio to its own one-head time.
"""
import os
import sys

THREADS = "2"
for i, arg in enumerate(sys.argv):
    if arg == "--threads" and i + 1 < len(sys.argv):
        THREADS = sys.argv[i + 1]
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ[var] = THREADS  # before numpy and torch load their BLAS

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def run_timed(command):
    with open(os.devnull, "wb") as null:
        start = time.perf_counter()
        pid = os.posix_spawn(command[0], command, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, null.fileno(), 1)])
        _, status, _ = os.wait4(pid, 0)
        seconds = time.perf_counter() - start
    if status != 0:
        sys.exit(f"heads.py: {' '.join(command)} failed")
    return seconds


def torch_seconds(x, w, heads):
    """One multi-head forward pass, as PyTorch's MultiheadAttention runs it (sequence first,
    batch of 1), timed from the projections to the output."""
    d = x.shape[-1]
    start = time.perf_counter()
    with torch.no_grad():
        out, _ = F.multi_head_attention_forward(
            x, x, x, d, heads, w["in_proj"], None, None, None, False, 0.0, w["out_proj"], None,
            training=False, need_weights=False)
    return time.perf_counter() - start, out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--attntrace", default="build/attntrace")
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--model", type=int, default=64)
    parser.add_argument("--heads", default="1,4,8")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    head_counts = [int(h) for h in args.heads.split(",")]
    n, d = args.tokens, args.model

    rng = np.random.default_rng(2026)
    x = rng.standard_normal((n, d))
    w_q, w_k, w_v, w_o = (rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(4))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "heads.json")
        with open(path, "w") as f:
            json.dump({"tokens": [f"t{i + 1}" for i in range(n)], "embeddings": x.tolist(),
                       "weights": {"query": w_q.tolist(), "key": w_k.tolist(), "value": w_v.tolist(),
                                   "output": w_o.tolist()}}, f)
        # PyTorch computes x·Wᵀ: its weights are ours transposed, stacked q, k, v.
        as_torch = {"in_proj": torch.tensor(np.concatenate([w_q.T, w_k.T, w_v.T]), dtype=torch.float32),
                    "out_proj": torch.tensor(w_o.T, dtype=torch.float32)}
        x_torch = torch.tensor(x, dtype=torch.float32).unsqueeze(1)  # (n, batch 1, d)
        commands = {h: [args.attntrace, path, "--summary", "-m", "self", "--heads", str(h), "--dtype", "float32",
                        "--threads", str(args.threads), "-s", "context"] for h in head_counts}
        ours = {h: [] for h in head_counts}
        theirs = {h: [] for h in head_counts}
        for turn in range(args.warmup + args.repeats):
            for h in head_counts:
                a = run_timed(commands[h])
                t, _ = torch_seconds(x_torch, as_torch, h)
                if turn >= args.warmup:
                    ours[h].append(a)
                    theirs[h].append(t)
        agreement = {}
        for h in head_counts:
            doc = json.loads(subprocess.run(commands[h] + ["-f", "json"], check=True, capture_output=True).stdout)
            _, out = torch_seconds(x_torch, as_torch, h)
            agreement[h] = float(np.max(np.abs(np.array(doc["output"]) - out.squeeze(1).numpy())))

    print(f"n = {n}, d_model = {d} (d_in = d_out = {d}), float32, {args.threads} threads, "
          f"medians of {args.repeats} runs after {args.warmup} warm-ups, torch {torch.__version__}\n")
    print("| heads | d_head | attntrace, whole process (s) | ÷ one head | PyTorch, compute (s) | ÷ one head "
          "| largest \\|output difference\\| |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    base_ours, base_theirs = statistics.median(ours[head_counts[0]]), statistics.median(theirs[head_counts[0]])
    for h in head_counts:
        a, t = statistics.median(ours[h]), statistics.median(theirs[h])
        print(f"| {h} | {d // h} | {a:.3f} | {a / base_ours:.2f}× | {t:.3f} | {t / base_theirs:.2f}× | {agreement[h]:.1e} |")


if __name__ == "__main__":
    main()
