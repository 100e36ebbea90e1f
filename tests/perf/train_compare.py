#!/usr/bin/python3
"""attntrace train against the same training in PyTorch, in one run on one machine (issue 32).

    /usr/bin/python3 tests/perf/train_compare.py [--attntrace build/attntrace] [--steps 100]
        [--timed-steps 2000] [--threads 1,2] [--repeats 5]
    (or: tests/perf/compare.py --train …)

1. `attntrace train who_did_it --steps 0 -o init.json --write-examples task.jsonl` gives the
   initial weights and the task's examples (400 to train on, then 100 held out).
2. Agreement: `attntrace train who_did_it --steps S --every 1 -f json` (Adam, lr 0.05, batches
   of 16, float64) against the same loop in PyTorch written here: the same initial weights, the
   same batches (attntrace's order of the examples, a Fisher–Yates shuffle per epoch from
   SplitMix64 seeded with seed ^ 0xD1B54A32D192ED03, rewritten below), torch.optim.Adam, the
   loss −log A[q, k] of each example averaged over the batch. After every step both compute the
   mean loss over the 400 training examples; the largest difference over steps 0…S is reported
   and must be at most 1e-9. Then the same with `--optimizer sgd --momentum 0.9 --lr 0.2`
   against torch.optim.SGD.
3. Speed: steps per second over --timed-steps steps, each side timing its steps alone (no
   evaluation, no loading): attntrace's own "seconds" (its JSON report: the steps' time,
   measured inside the process) against PyTorch's loop timed here, the examples already padded
   into one tensor, a step being: index the batch, forward, backward, optimizer step. Same
   thread count on both sides (torch.set_num_threads); the two take turns, best of --repeats.
   The whole attntrace process (`attntrace train who_did_it`, the default 300 steps: task
   generated, trained, evaluated, report written) is timed too, wall clock, with the step at
   which held-out accuracy first reaches 95%.
Prints a markdown report; exit status 1 when agreement is above 1e-9 or a ratio below 5.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import torch

MASK64 = (1 << 64) - 1


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)


class Order:
    """The batches attntrace draws: a new Fisher–Yates order at the start of every epoch."""

    def __init__(self, count, seed):
        self.rng = SplitMix64(seed ^ 0xD1B54A32D192ED03)
        self.count = count
        self.order = []
        self.position = 0

    def next(self, size):
        if self.position == 0:
            self.order = list(range(self.count))
            for i in range(self.count, 1, -1):
                j = self.rng.next() % i
                self.order[i - 1], self.order[j] = self.order[j], self.order[i - 1]
        end = min(self.count, self.position + size)
        batch = self.order[self.position:end]
        self.position = 0 if end == self.count else end
        return batch


def read_task(path, held_fraction):
    examples = [json.loads(line) for line in open(path) if line.strip()]
    held = int(held_fraction * len(examples))
    return examples[:len(examples) - held]


class Padded:
    """The examples padded into one tensor, with each one's length, query and key (0-based)."""

    def __init__(self, examples, dtype):
        n = max(len(e["tokens"]) for e in examples)
        d = len(examples[0]["embeddings"][0])
        self.X = torch.zeros(len(examples), n, d, dtype=dtype)
        for b, e in enumerate(examples):
            self.X[b, :len(e["tokens"])] = torch.tensor(e["embeddings"], dtype=dtype)
        self.length = torch.tensor([len(e["tokens"]) for e in examples])
        self.query = torch.tensor([e["focus"]["query"] - 1 for e in examples])
        self.key = torch.tensor([e["focus"]["key"] - 1 for e in examples])
        self.positions = torch.arange(n)


def focus_loss(data, items, W_q, W_k, causal):
    """The mean over `items` of −log A[q, k], A[q] = softmax(K·q / √d_k) over the keys q may see."""
    X, query = data.X[items], data.query[items]
    q = X[torch.arange(len(items)), query] @ W_q           # B × d_k: only the query's row is needed
    K = X @ W_k                                             # B × n × d_k
    s = (K @ q.unsqueeze(2)).squeeze(2) / math.sqrt(W_q.shape[1])
    visible = data.positions.unsqueeze(0) < data.length[items].unsqueeze(1)
    if causal:
        visible &= data.positions.unsqueeze(0) <= query.unsqueeze(1)
    s = s.masked_fill(~visible, float("-inf"))
    chosen = s.gather(1, data.key[items].unsqueeze(1)).squeeze(1)
    return (torch.logsumexp(s, dim=1) - chosen).mean()


def torch_training(data, weights, optimizer, steps, batch, seed, evaluate, causal=False):
    W_q = torch.tensor(weights["query"], dtype=data.X.dtype, requires_grad=True)
    W_k = torch.tensor(weights["key"], dtype=data.X.dtype, requires_grad=True)
    W_v = torch.tensor(weights["value"], dtype=data.X.dtype, requires_grad=True)
    params = [W_q, W_k, W_v]
    opt = (torch.optim.Adam(params, lr=optimizer["lr"], betas=(0.9, 0.999), eps=1e-8)
           if optimizer["name"] == "adam" else torch.optim.SGD(params, lr=optimizer["lr"], momentum=optimizer["momentum"]))
    everything = torch.arange(data.X.shape[0])
    order = Order(data.X.shape[0], seed)
    batches = [torch.tensor(order.next(batch)) for _ in range(steps)]
    curve = []
    if evaluate:
        with torch.no_grad():
            curve.append(focus_loss(data, everything, W_q, W_k, causal).item())
    began, cpu = time.perf_counter(), time.process_time()
    for items in batches:
        opt.zero_grad(set_to_none=True)
        loss = focus_loss(data, items, W_q, W_k, causal)
        loss.backward()
        if W_v.grad is None:  # attntrace's W_v gets a zero gradient, torch's none: the same step
            W_v.grad = torch.zeros_like(W_v)
        opt.step()
        if evaluate:
            with torch.no_grad():
                curve.append(focus_loss(data, everything, W_q, W_k, causal).item())
    return curve, time.perf_counter() - began, time.process_time() - cpu


def attntrace_json(binary, arguments):
    out = subprocess.run([binary, "train"] + arguments + ["-f", "json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def agreement(binary, data, weights, steps, optimizer, extra):
    report = attntrace_json(binary, ["who_did_it", "--steps", str(steps), "--every", "1"] + extra)
    ours = [p["loss"] for p in report["curve"]]
    theirs, _, _ = torch_training(data, weights, optimizer, steps, 16, 123, evaluate=True)
    assert len(ours) == len(theirs) == steps + 1, (len(ours), len(theirs))
    worst = max(abs(a - b) for a, b in zip(ours, theirs))
    return ours, theirs, worst


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--attntrace", default=os.path.join(here, "..", "..", "build", "attntrace"))
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--timed-steps", type=int, default=2000)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    binary = os.path.abspath(args.attntrace)
    failures = []
    with tempfile.TemporaryDirectory() as work:
        init, task = os.path.join(work, "init.json"), os.path.join(work, "task.jsonl")
        subprocess.run([binary, "train", "who_did_it", "--steps", "0", "-o", init, "--write-examples", task],
                       check=True, capture_output=True)
        weights = json.load(open(init))["weights"]
        data = Padded(read_task(task, 0.2), torch.float64)
        print("# attntrace train against PyTorch\n")
        print(f"PyTorch {torch.__version__}, {os.cpu_count()} cores; task who_did_it: {data.X.shape[0]} training "
              f"examples of up to {data.X.shape[1]} tokens, d_in {data.X.shape[2]}, d_k 4, batches of 16, float64.\n")
        print("## Agreement: the mean training loss after every step\n")
        print("| optimizer | steps | loss at 0 | loss at the end (attntrace) | (PyTorch) | largest difference |")
        print("|---|---:|---:|---:|---:|---:|")
        torch.set_num_threads(1)
        for optimizer, extra in (({"name": "adam", "lr": 0.05}, []),
                                 ({"name": "sgd", "lr": 0.2, "momentum": 0.9},
                                  ["--optimizer", "sgd", "--lr", "0.2", "--momentum", "0.9"])):
            ours, theirs, worst = agreement(binary, data, weights, args.steps, optimizer, extra)
            label = optimizer["name"] + (f" (lr {optimizer['lr']}, momentum 0.9)" if optimizer["name"] == "sgd"
                                         else f" (lr {optimizer['lr']})")
            print(f"| {label} | {args.steps} | {ours[0]:.12f} | {ours[-1]:.6e} | {theirs[-1]:.6e} | {worst:.2e} |")
            if not worst <= 1e-9:
                failures.append(f"{optimizer['name']}: the curves differ by {worst:.2e}, more than 1e-9")
        print("\n## Speed: steps per second, the steps alone\n")
        print(f"{args.timed_steps} steps of Adam, batches of 16, float64; best of {args.repeats}, the two sides taking "
              "turns. attntrace's time is its own report's (the steps, measured in the process); PyTorch's the loop "
              "above without the evaluation.\n")
        print("| threads | attntrace steps/s | PyTorch steps/s | PyTorch CPU per step | ratio |")
        print("|---:|---:|---:|---:|---:|")
        for threads in [int(t) for t in args.threads.split(",")]:
            torch.set_num_threads(threads)
            ours, theirs, theirs_cpu = math.inf, math.inf, math.inf
            for _ in range(args.repeats):
                report = attntrace_json(binary, ["who_did_it", "--steps", str(args.timed_steps), "--every",
                                                 str(args.timed_steps), "--threads", str(threads)])
                ours = min(ours, report["seconds"])
                _, wall, cpu = torch_training(data, weights, {"name": "adam", "lr": 0.05}, args.timed_steps, 16, 123,
                                              evaluate=False)
                theirs, theirs_cpu = min(theirs, wall), min(theirs_cpu, cpu)
            ratio = theirs / ours
            print(f"| {threads} | {args.timed_steps / ours:,.0f} | {args.timed_steps / theirs:,.0f} | "
                  f"{theirs_cpu / args.timed_steps * 1e6:.0f} µs | {ratio:.1f}× |")
            if ratio < 5:
                failures.append(f"{threads} threads: attntrace is {ratio:.1f}× PyTorch's steps/s, below 5×")
        print("\n## The whole process: `attntrace train who_did_it` (300 steps)\n")
        best = math.inf
        for _ in range(args.repeats):
            began = time.perf_counter()
            report = attntrace_json(binary, ["who_did_it", "--every", "1"])
            best = min(best, time.perf_counter() - began)
        reached = next((p["step"] for p in report["curve"] if p["held_out_accuracy"] >= 0.95), None)
        final = report["curve"][-1]["held_out_accuracy"]
        print(f"Wall clock, best of {args.repeats}: {best:.3f} s (the steps alone: {report['seconds']:.4f} s, "
              f"{report['steps'] / report['seconds']:,.0f} steps/s). Held-out accuracy reaches 95% at step {reached} "
              f"and ends at {final:.0%}.")
        if reached is None or best > 5:
            failures.append("held-out accuracy did not reach 95% within 5 s")
    if failures:
        print("\n## Missed\n")
        for f in failures:
            print(f"- {f}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
