#!/usr/bin/python3
"""The fixed cost of a long run, phase by phase: what an n = 8192, d = 64 summary pays besides
its n² part, measured side by side in CPU seconds (issue 30; docs/performance.md).

    /usr/bin/python3 tests/perf/fixed_cost.py [--attntrace build/attntrace] [--read-time TOOL]
        [--tokens 8192] [--dim 64] [--threads 2] [--rounds 7] [--no-torch]

Each round runs every command below once, in turn, as its own process; a command's time is
its best round, in CPU seconds (user + system of the child, all its threads, from wait4)
beside the wall seconds of that round:

  - start: `attntrace --version`, the process alone;
  - read: TOOL INPUT.json --whole (tests/perf/read_time.cpp, when --read-time names it built):
    the JSON input read into its arrays, and nothing else;
  - the float32 summary of self and of causal attention, whole process, from the JSON input
    and from the same numbers as a float32 .safetensors file (no text to parse);
  - PyTorch's compute alone, self and causal (tests/perf/baseline.py: the input already in
    tensors; its best round's wall seconds times its CPU per wall second).

Then what the differences say: causal attention computes half of the n² part (n(n + 1)/2 of
the n² scores), so self − causal is half of it, the n² part of self is twice that, and
2·causal − self is what the run pays besides: the fixed cost. The JSON reading is the JSON
run less the .safetensors run. Prints a markdown report on stdout.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare import python_env, run_measured  # noqa: E402  (the BLAS compare.py points PyTorch at; a timed child)


def torch_compute(path, mode, threads, rounds):
    """(CPU seconds, wall seconds) of PyTorch's best compute round (baseline.py)."""
    command = ["/usr/bin/python3", os.path.join(HERE, "baseline.py"), path, "--mode", mode, "--dtype", "float32",
               "--threads", str(threads), "--warmup", "2", "--repeats", str(rounds), "--backend", "torch",
               "--format", "json"]
    out = json.loads(subprocess.run(command, check=True, capture_output=True, text=True, env=python_env(threads)).stdout)
    torch = out["backends"]["torch"]
    return torch["min_s"] * torch["cpu_per_wall"], torch["min_s"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--attntrace", default=os.path.join(HERE, "..", "..", "build", "attntrace"))
    p.add_argument("--read-time", default=None, help="tests/perf/read_time.cpp, built (its header says how)")
    p.add_argument("--tokens", type=int, default=8192)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--no-torch", action="store_true")
    args = p.parse_args()
    binary = os.path.abspath(args.attntrace)
    with tempfile.TemporaryDirectory() as folder:
        text = os.path.join(folder, "input.json")
        arrays = os.path.join(folder, "input.safetensors")
        generate = [binary, "generate", "--tokens", str(args.tokens), "--dim", str(args.dim)]
        subprocess.run(generate + ["-o", text], check=True)
        subprocess.run(generate + ["-f", "safetensors", "--dtype", "float32", "-o", arrays], check=True)
        summary = ["--summary", "--dtype", "float32", "--threads", str(args.threads)]
        commands = {"start": [binary, "--version"]}
        if args.read_time:
            commands["read"] = [os.path.abspath(args.read_time), text, "--whole"]
        for mode in ("self", "causal"):
            commands[f"{mode}, JSON"] = [binary, text, "-m", mode] + summary
            commands[f"{mode}, safetensors"] = [binary, arrays, "-m", mode] + summary
        best = {name: (float("inf"), 0.0) for name in commands}
        for _ in range(args.rounds):
            for name, command in commands.items():
                wall, cpu = run_measured(command)
                if cpu < best[name][0]:
                    best[name] = (cpu, wall)
        torch = {} if args.no_torch else {mode: torch_compute(text, mode, args.threads, args.rounds)
                                          for mode in ("self", "causal")}
        sizes = (os.path.getsize(text) / 1e6, os.path.getsize(arrays) / 1e6)

    print(f"n = {args.tokens}, d = {args.dim}, float32, {args.threads} threads; best of {args.rounds} rounds taken in "
          f"turn; the JSON input {sizes[0]:.1f} MB, the float32 .safetensors {sizes[1]:.1f} MB\n")
    print("| run | CPU s | wall s |")
    print("|---|---:|---:|")
    for name, (cpu, wall) in best.items():
        print(f"| {name} | {cpu:.3f} | {wall:.3f} |")
    for mode, (cpu, wall) in torch.items():
        print(f"| PyTorch, {mode}, compute alone | {cpu:.3f} | {wall:.3f} |")
    print()
    for source in ("JSON", "safetensors"):
        s, c = best[f"self, {source}"][0], best[f"causal, {source}"][0]
        print(f"- from {source}: the n² part of self {2 * (s - c):.3f} CPU s, the fixed cost (2·causal − self) "
              f"{2 * c - s:.3f} CPU s; causal saves {s / c:.2f}× over self (CPU), "
              f"{best[f'self, {source}'][1] / best[f'causal, {source}'][1]:.2f}× (wall)")
    print(f"- reading the JSON, less reading the .safetensors: "
          f"{best['self, JSON'][0] - best['self, safetensors'][0]:.3f} CPU s (self), "
          f"{best['causal, JSON'][0] - best['causal, safetensors'][0]:.3f} (causal)")
    if "read" in best:
        print(f"- read_time --whole: {best['read'][0]:.3f} CPU s, the start of a process "
              f"(`--version`) {best['start'][0]:.3f}")
    for mode, (cpu, wall) in torch.items():
        mine = best[f"{mode}, JSON"]
        print(f"- {mode}: PyTorch's compute alone / attntrace's whole process from JSON: {cpu / mine[0]:.2f}× (CPU), "
              f"{wall / mine[1]:.2f}× (wall)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
