#!/usr/bin/python3
"""PyTorch's forward and backward pass of one attention layer: the other side of compare.py --backward.

    /usr/bin/python3 tests/perf/backward_baseline.py INPUT.json [--mode self|causal]
        [--dtype float32|float64] [--threads N] [--loss sum|target] [--target T.npy]
        [--repeats R] [--warmup W] [--reference]

INPUT.json is an attntrace input with "embeddings" (n × d_in) and "weights" {"query", "key",
"value"} (tests/perf/baseline.py reads it). With X and the three weights as leaves of autograd,
each timed run computes, the way a user writes it by hand:

    Q = X·W_q, K = X·W_k, V = X·W_v
    S = Q·Kᵀ / √d_k (causal: −inf above the diagonal), A = softmax(S), Z = A·V
    L = Σ Z (sum) or ½‖Z − T‖² (target, T from a .npy of Z's shape)
    L.backward(): dL/dW_q, dL/dW_k, dL/dW_v and dL/dX

and reports the wall and CPU seconds of each timed run (CPU: this process's, every thread),
what the first forward and backward pass added to the resident memory the process held after
loading (the peak reset through /proc/self/clear_refs before it) and the peak resident memory
from there on, the loss, the three weights' gradients (of the first pass), and ‖dL/dx_i‖ for
every row, as JSON on stdout.
With --reference the pass is run once, in float64, and only its numbers are written.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import baseline  # noqa: E402  (sets the BLAS thread variables from --threads before numpy loads)

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402


def status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def forward_backward(X, Wq, Wk, Wv, mask, target):
    """One pass; returns (L, (dX, dW_q, dW_k, dW_v)). The leaves' gradients are reset first."""
    for leaf in (X, Wq, Wk, Wv):
        leaf.grad = None
    Q, K, V = X @ Wq, X @ Wk, X @ Wv
    S = (Q @ K.T) / math.sqrt(Q.shape[1])
    if mask is not None:
        S = S.masked_fill(mask, float("-inf"))
    Z = torch.softmax(S, dim=-1) @ V
    L = Z.sum() if target is None else 0.5 * ((Z - target) ** 2).sum()
    L.backward()
    return L.item(), (X.grad, Wq.grad, Wk.grad, Wv.grad)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("input")
    p.add_argument("--mode", choices=("self", "causal"), default="self")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    p.add_argument("--loss", choices=("sum", "target"), default="sum")
    p.add_argument("--target")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--reference", action="store_true", help="one float64 pass, its numbers only")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    dtype = torch.float64 if args.reference or args.dtype == "float64" else torch.float32

    (X, Wq, Wk, Wv), _, _ = baseline.load_input(args.input)
    leaves = [torch.tensor(m, dtype=dtype, requires_grad=True) for m in (X, Wq, Wk, Wv)]
    n = X.shape[0]
    mask = torch.ones(n, n, dtype=torch.bool).triu(1) if args.mode == "causal" else None
    target = None
    if args.loss == "target":
        target = torch.tensor(np.load(args.target), dtype=dtype)
    del X, Wq, Wk, Wv

    out = {"n": n, "mode": args.mode, "dtype": "float64" if args.reference else args.dtype, "threads": args.threads,
           "loss_kind": args.loss, "torch": torch.__version__, "blas": baseline.blas_info()}
    # what the first pass adds to the memory the process holds after loading (later passes
    # reuse what the allocator kept): the peak reset, then one pass
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before = status_kib("VmRSS")
    loss, (dX, dWq, dWk, dWv) = forward_backward(*leaves, mask, target)
    out["pass_added_mib"] = (status_kib("VmHWM") - before) / 1024
    if not args.reference:
        for _ in range(args.warmup):
            forward_backward(*leaves, mask, target)
        walls, cpus = [], []
        for _ in range(args.repeats):
            c0, t0 = time.process_time(), time.perf_counter()
            forward_backward(*leaves, mask, target)
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
        out["wall_s"], out["cpu_s"] = walls, cpus
    out["process_peak_mib"] = status_kib("VmHWM") / 1024  # since the reset: after loading
    out["loss"] = loss
    out["gradients"] = {"W_q": dWq.double().tolist(), "W_k": dWk.double().tolist(), "W_v": dWv.double().tolist()}
    out["input_norms"] = dX.double().norm(dim=1).tolist()
    if n <= 512:
        out["inputs"] = dX.double().tolist()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
