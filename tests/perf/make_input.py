#!/usr/bin/python3
"""Write a random attntrace input (tokens, embeddings, weights) for the perf baseline.

    python3 tests/perf/make_input.py --tokens 8192 --dim 64 --seed 1 -o /tmp/n8192.json

The file has the shape attntrace reads (docs/input-format.md):
    tokens      n strings "t0" … "t{n-1}"
    embeddings  n × d, uniform in [-1, 1)
    weights     query, key, value, each d × d, uniform in [-1/√d, 1/√d)
The 1/√d scale keeps each entry of Q = X·W_q near the size of an embedding entry, so the
scores do not blow up as d grows.

Values come from numpy's default_rng (PCG64) and are written at full float64 precision, so
any reader that parses the same file sees the same numbers. attntrace has its own generator
(splitmix64): this script does not try to match it, it only feeds the baseline until the
C++ side can write its own inputs.
"""
import argparse
import json
import math
import sys

import numpy as np


def positive(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=positive, required=True, help="n, the sequence length")
    parser.add_argument("--dim", type=positive, required=True, help="d, the embedding width")
    parser.add_argument("--seed", type=int, default=0, help="seed of default_rng (default 0)")
    parser.add_argument("-o", "--output", help="file to write (default: standard output)")
    args = parser.parse_args()

    n, d = args.tokens, args.dim
    rng = np.random.default_rng(args.seed)
    # Draw in a fixed order (X, then W_q, W_k, W_v) so one seed always gives one file.
    embeddings = rng.uniform(-1.0, 1.0, size=(n, d))               # n × d
    bound = 1.0 / math.sqrt(d)
    weights = {name: rng.uniform(-bound, bound, size=(d, d))      # d × d each
               for name in ("query", "key", "value")}

    doc = {
        "description": f"Random input for the perf baseline: n={n}, d={d}, "
                       f"numpy default_rng seed {args.seed}.",
        "tokens": [f"t{i}" for i in range(n)],
        # tolist() gives Python floats, which json writes with repr: shortest exact form.
        "embeddings": embeddings.tolist(),
        "weights": {name: w.tolist() for name, w in weights.items()},
    }
    if args.output:
        with open(args.output, "w", encoding="utf-8") as out:
            json.dump(doc, out)
            out.write("\n")
    else:
        json.dump(doc, sys.stdout)
        sys.stdout.write("\n")


if __name__ == "__main__":
    main()
