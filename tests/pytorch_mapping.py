#!/usr/bin/python3
"""The PyTorch mapping of docs/multi-head.md, checked against PyTorch itself.

    /usr/bin/python3 tests/pytorch_mapping.py [--attntrace build/attntrace] [--seed 0]

Needs Debian's python3-torch (tests/perf/README.md); not part of `make test`. Two layers, in
float64, causal, without biases, and the first again with its biases:
  - torch.nn.MultiheadAttention(8, 2): W_q, W_k, W_v are in_proj_weight's three blocks of rows,
    transposed, and W_o is out_proj.weight transposed; with bias=True, b_q, b_k, b_v are
    in_proj_bias's three blocks and b_o is out_proj.bias (drawn at random here: PyTorch starts
    them at zero);
  - a grouped-query layer of four Linear layers (q_proj, k_proj, v_proj, o_proj, as in
    Hugging Face's LLaMA, without its rotary positions), 4 query heads sharing 2 key/value
    heads the way LLaMA's repeat_kv shares them: each weight transposed, "kv_heads": 2.
Each is written as an attntrace input, traced with -f json, and attntrace's output and every
head's weights are compared with PyTorch's. Prints the largest differences; exits 1 if any is
above 1e-12.
"""
import argparse
import json
import subprocess
import sys

import torch


def trace(attntrace, doc):
    r = subprocess.run([attntrace, "-", "-m", "causal", "-f", "json"], input=json.dumps(doc), capture_output=True,
                       text=True)
    if r.returncode != 0:
        sys.exit(f"attntrace failed: {r.stderr.strip()}")
    return json.loads(r.stdout)


def stage(t, name, head=None):
    for s in t["stages"]:
        if s["name"] == name and s.get("head") == head:
            return torch.tensor(s["data"], dtype=torch.float64)
    sys.exit(f"no stage {name} of head {head}")


def compare(label, t, output, weights):
    worst = (stage(t, "output") - output).abs().max().item()
    for h in range(weights.shape[0]):
        worst = max(worst, (stage(t, "weights", h + 1) - weights[h]).abs().max().item())
    print(f"{label}: largest difference {worst:.2g}")
    return worst


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attntrace", default="build/attntrace")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    n, d = 5, 8
    x = torch.randn(n, d, dtype=torch.float64)
    hidden = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)  # True: the key is hidden
    tokens = [f"t{i + 1}" for i in range(n)]

    H = 2
    mha = torch.nn.MultiheadAttention(d, H, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        out, per_head = mha(x[None], x[None], x[None], attn_mask=hidden, average_attn_weights=False)
        W = mha.in_proj_weight
        doc = {"tokens": tokens, "embeddings": x.tolist(), "heads": H,
               "weights": {"query": W[0:d].T.tolist(), "key": W[d:2 * d].T.tolist(),
                           "value": W[2 * d:3 * d].T.tolist(), "output": mha.out_proj.weight.T.tolist()}}
    worst = compare("nn.MultiheadAttention, 2 heads", trace(args.attntrace, doc), out[0], per_head[0])

    mha = torch.nn.MultiheadAttention(d, H, bias=True, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_bias.copy_(torch.randn(3 * d, dtype=torch.float64))
        mha.out_proj.bias.copy_(torch.randn(d, dtype=torch.float64))
        out, per_head = mha(x[None], x[None], x[None], attn_mask=hidden, average_attn_weights=False)
        W, b = mha.in_proj_weight, mha.in_proj_bias
        doc = {"tokens": tokens, "embeddings": x.tolist(), "heads": H,
               "weights": {"query": W[0:d].T.tolist(), "key": W[d:2 * d].T.tolist(),
                           "value": W[2 * d:3 * d].T.tolist(), "output": mha.out_proj.weight.T.tolist(),
                           "query_bias": b[0:d].tolist(), "key_bias": b[d:2 * d].tolist(),
                           "value_bias": b[2 * d:3 * d].tolist(), "output_bias": mha.out_proj.bias.tolist()}}
    worst = max(worst, compare("nn.MultiheadAttention with biases, 2 heads", trace(args.attntrace, doc), out[0],
                               per_head[0]))

    H, G, d_head = 4, 2, 2
    q_proj = torch.nn.Linear(d, H * d_head, bias=False, dtype=torch.float64)
    k_proj = torch.nn.Linear(d, G * d_head, bias=False, dtype=torch.float64)
    v_proj = torch.nn.Linear(d, G * d_head, bias=False, dtype=torch.float64)
    o_proj = torch.nn.Linear(H * d_head, d, bias=False, dtype=torch.float64)
    with torch.no_grad():
        q = q_proj(x).view(n, H, d_head).transpose(0, 1)                                   # H × n × d_head
        k = k_proj(x).view(n, G, d_head).transpose(0, 1).repeat_interleave(H // G, dim=0)  # repeat_kv
        v = v_proj(x).view(n, G, d_head).transpose(0, 1).repeat_interleave(H // G, dim=0)
        a = (q @ k.transpose(1, 2) / d_head ** 0.5).masked_fill(hidden, float("-inf")).softmax(-1)
        out = o_proj((a @ v).transpose(0, 1).reshape(n, H * d_head))
        doc = {"tokens": tokens, "embeddings": x.tolist(), "heads": H, "kv_heads": G,
               "weights": {"query": q_proj.weight.T.tolist(), "key": k_proj.weight.T.tolist(),
                           "value": v_proj.weight.T.tolist(), "output": o_proj.weight.T.tolist()}}
    worst = max(worst, compare("q/k/v/o_proj, 4 heads, 2 key/value heads", trace(args.attntrace, doc), out, a))
    sys.exit(1 if worst > 1e-12 else 0)


if __name__ == "__main__":
    main()
