#!/usr/bin/python3
"""attntrace's backward pass (src/attention/backward.hpp) against PyTorch's autograd, in float64.

    /usr/bin/python3 tests/backward_torch.py [--dump build/tests/attntrace_backward_dump]

Needs Debian's python3-torch and the dump tool (`cmake --build build --target attntrace_backward_dump`);
not part of `make test`. For each toy run below the dump tool
(tests/support/backward_dump.cpp) writes the run's inputs, parameters, loss and every gradient
attntrace computes; this script builds the same forward pass from those inputs and parameters
with torch operations of its own, takes the loss's gradients with autograd (retain_grad on every
intermediate stage), and compares each of attntrace's gradients with torch's. Prints the largest
difference per run (relative to max(1, |torch's|)); exits 1 if any is above 1e-12.
"""
import argparse
import json
import math
import os
import subprocess
import sys

import torch

RUNS = [
    ("your_journey", "self", "sum", []),
    ("your_journey", "self", "target", []),
    ("your_journey", "self", "focus:1,0", []),
    ("your_journey", "causal", "sum", []),
    ("your_journey", "causal", "target", []),
    ("your_journey", "causal", "focus:1,0", []),
    ("your_journey", "plain", "sum", []),
    ("your_journey", "plain", "focus:1,2", []),
    ("your_journey", "causal", "sum", ["window=2", "temperature=0.7"]),
    ("your_journey", "causal", "sum", ["fill=-1"]),
    ("your_journey", "causal", "target", ["after_softmax=1"]),
    ("two_heads", "causal", "sum", []),
    ("two_heads", "causal", "target", []),
    ("two_heads", "self", "focus:6,1,2", []),
    ("your_journey", "causal", "sum", ["heads=3", "kv_heads=1"]),
    ("your_journey", "causal", "target", ["heads=2", "dim=4", "positions=rope"]),
    ("your_journey", "self", "sum", ["positions=sinusoidal"]),
    ("black_cat_fr", "bahdanau", "target", ["score=additive"]),
    ("black_cat_fr", "bahdanau", "sum", ["score=additive"]),  # one-hot states: Σ c = 3 whatever α, so 0
    ("black_cat_fr", "bahdanau", "target", ["score=dot"]),
    ("black_cat_fr", "bahdanau", "focus:1,2", ["score=general"]),
    ("padded_cat_fr", "bahdanau", "target", ["score=additive", "temperature=2"]),
    ("padded_cat_fr", "bahdanau", "focus:2,1", ["score=additive"]),
]


def leaf(rows):
    return torch.tensor(rows, dtype=torch.float64, requires_grad=True)


def kept(t, name, stages):
    """An intermediate stage whose gradient autograd should keep."""
    t.retain_grad()
    stages[name] = t
    return t


def options(extra):
    return dict(o.split("=", 1) for o in extra)


def rotate(x, first=0):
    """RoPE, "rotate half": pair (i, i + h) of row r turned by (first + r)·10000^(−2i/d)."""
    n, d = x.shape
    h = d // 2
    theta = torch.tensor([10000.0 ** (-2.0 * i / d) for i in range(h)], dtype=torch.float64)
    phi = torch.arange(n, dtype=torch.float64)[:, None] * theta[None, :]
    a, b = x[:, :h], x[:, h:]
    return torch.cat([a * torch.cos(phi) - b * torch.sin(phi), b * torch.cos(phi) + a * torch.sin(phi)], dim=1)


def hidden_mask(n, causal, window):
    i = torch.arange(n)[:, None]
    j = torch.arange(n)[None, :]
    hide = torch.zeros(n, n, dtype=torch.bool)
    if causal:
        hide |= j > i
    if window:
        hide |= (i - j >= window) if causal else ((i - j).abs() >= window)
    return hide


def attend(scores, hide, opt, stages, suffix):
    """Scale, mask, softmax, as the trace does; returns the weights."""
    scaled = kept(scores / opt["scale"], "scaled" + suffix, stages)
    t = float(opt.get("temperature", 1))
    if "after_softmax" in opt:
        masked = kept(scaled * 1, "masked" + suffix, stages)
        a = torch.softmax(masked / t, dim=1).masked_fill(hide, 0.0)
    else:
        fill = float(opt["fill"]) if "fill" in opt else -math.inf
        masked = kept(scaled.masked_fill(hide, fill), "masked" + suffix, stages)
        a = torch.softmax(masked / t, dim=1)
    return kept(a, "weights" + suffix, stages)


def single_forward(d, mode, opt, stages, leaves):
    x = leaves["inputs"] = leaf(d["inputs"])
    n, d_in = x.shape
    if opt.get("positions") == "sinusoidal":
        leaves["embeddings"] = leaves.pop("inputs")
        p = torch.arange(n, dtype=torch.float64)[:, None]
        k = torch.arange(d_in)
        w = torch.tensor([10000.0 ** (-2.0 * (c // 2) / d_in) for c in range(d_in)], dtype=torch.float64)
        pe = torch.where(k % 2 == 0, torch.sin(p * w), torch.cos(p * w))
        x = kept(x + pe, "inputs", stages)
    P = {name: leaf(m) for name, m in d.get("parameters", {}).items()}
    leaves.update(P)
    if mode == "plain":
        q, k, v = (kept(x * 1, s, stages) for s in ("queries", "keys", "values"))
    else:
        q, k, v = (kept(x @ P[w], s, stages) for s, w in (("queries", "W_q"), ("keys", "W_k"), ("values", "W_v")))
    heads, kv = d["heads"], d["kv_heads"]
    several = heads > 1
    d_head, d_v = q.shape[1] // heads, v.shape[1] // kv
    hide = hidden_mask(n, mode == "causal", int(opt.get("window", 0)))
    k_groups, v_groups = [], []
    for g in range(kv):
        kg, vg = k[:, g * d_head:(g + 1) * d_head], v[:, g * d_v:(g + 1) * d_v]
        if opt.get("positions") == "rope":
            kg = kept(rotate(kg), f"keys_rotated/{g * (heads // kv) + 1}" if several else "keys_rotated", stages)
        k_groups.append(kg)
        v_groups.append(vg)
    contexts, weights = [], []
    for h in range(heads):
        sfx = f"/{h + 1}" if several else ""
        qh = q[:, h * d_head:(h + 1) * d_head]
        if opt.get("positions") == "rope":
            qh = kept(rotate(qh), "queries_rotated" + sfx, stages)
        g = h // (heads // kv)
        s = kept(qh @ k_groups[g].T, "scores" + sfx, stages)
        a = attend(s, hide, {**opt, "scale": d["scale"]}, stages, sfx)
        weights.append(a)
        contexts.append(kept(a @ v_groups[g], "context" + sfx, stages))
    result = contexts[0]
    if several:
        result = kept(torch.cat(contexts, dim=1), "concat", stages)
    if "W_o" in P:
        result = kept(result @ P["W_o"], "output", stages)
    return result, weights


def pair_forward(d, opt, stages, leaves):
    h = leaves["encoder_states"] = leaf(d["encoder_states"])
    s = leaves["decoder_states"] = leaf(d["decoder_states"])
    P = {name: leaf(m) for name, m in d.get("parameters", {}).items()}
    leaves.update(P)
    score = opt.get("score", "additive")
    if score == "additive":
        ps = kept(s @ P["W_a"], "projected_decoder", stages)
        ph = kept(h @ P["U_a"], "projected_encoder", stages)
        e = (torch.tanh(ps[:, None, :] + ph[None, :, :]) * P["v_a"][0]).sum(dim=2)
    else:
        ps = kept(s @ P["W"] if score == "general" else s * 1, "projected_decoder", stages)
        ph = kept(h * 1, "projected_encoder", stages)
        e = ps @ ph.T
    e = kept(e, "scores", stages)
    visible = torch.tensor(d.get("source_mask", [True] * h.shape[0]))
    hide = (~visible)[None, :].expand(s.shape[0], -1)
    a = attend(e, hide, {**opt, "scale": 1.0}, stages, "")
    return kept(a @ h, "context", stages), [a]


def torch_gradient(key, d, leaves, stages):
    """Torch's gradient of what attntrace keys as `key` ("W_q", "scores/2", "keys/3", …)."""
    t = leaves.get(key, stages.get(key))
    if t is not None:
        return t.grad if t.grad is not None else torch.zeros_like(t)
    name, head = key.split("/")
    heads, kv = d["heads"], d["kv_heads"]
    h, per = int(head), heads // kv
    if name == "keys_rotated":  # the key/value head's rotated keys, kept under its first query head
        return torch_gradient(f"{name}/{(h - 1) // per * per + 1}", d, leaves, stages)
    full = stages[name].grad  # queries, keys, values: a head's block of columns of Q, K or V
    block = h - 1 if name == "queries" else (h - 1) // per
    width = full.shape[1] // (heads if name == "queries" else kv)
    return full[:, block * width:(block + 1) * width]


def run(dump, example, mode, loss, extra):
    if not os.path.exists(dump):
        sys.exit(f"{dump} is missing: build it with cmake --build build --target attntrace_backward_dump")
    r = subprocess.run([dump, example, mode, loss, *extra], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"attntrace_backward_dump failed: {r.stderr.strip()}")
    d = json.loads(r.stdout)
    opt = options(extra)
    stages, leaves = {}, {}
    if mode == "bahdanau":
        result, weights = pair_forward(d, opt, stages, leaves)
    else:
        result, weights = single_forward(d, mode, opt, stages, leaves)
    if loss == "sum":
        L = result.sum()
    elif loss == "target":
        L = 0.5 * ((result - torch.tensor(d["target"], dtype=torch.float64)) ** 2).sum()
    else:
        q, k, *head = (int(v) for v in loss[len("focus:"):].split(","))
        L = -torch.log(weights[(head[0] - 1) if head else 0][q, k])
    L.backward()
    worst, where = abs(L.item() - d["loss"]) / max(1.0, abs(L.item())), "loss"
    for key, ours in d["gradients"].items():
        theirs = torch_gradient(key, d, leaves, stages)
        diff = ((torch.tensor(ours, dtype=torch.float64) - theirs).abs() / theirs.abs().clamp(min=1.0)).max().item()
        if diff > worst:
            worst, where = diff, key
    return worst, where, len(d["gradients"])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dump", default="build/tests/attntrace_backward_dump")
    args = parser.parse_args()
    failed = False
    overall = 0.0
    for example, mode, loss, extra in RUNS:
        worst, where, count = run(args.dump, example, mode, loss, extra)
        overall = max(overall, worst)
        failed |= worst > 1e-12
        print(f"{example:13} {mode:8} {loss:11} {' '.join(extra):34} {count:3} gradients  "
              f"largest difference {worst:.2e} ({where})")
    print(f"largest difference over every run: {overall:.2e} (tolerance 1e-12)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
