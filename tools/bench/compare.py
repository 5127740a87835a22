"""Issue 5's performance table: our criterion figures against PyTorch's on this machine, as
ratios, with the same statistic on both sides (the median).

1. Run our benchmarks, which leave criterion's estimates under <target>/criterion:
       cargo bench -p switchyard-cpu --bench binary --bench reduce --bench nn
2. Run this script with the PyTorch it should measure (it times PyTorch itself, 2 threads by
   default, a warm-up and then 31 runs of each figure):
       /tmp/torchref/bin/python tools/bench/compare.py [--target-dir target] [--threads 2]
           [--libtorch-overhead /tmp/libtorch_overhead]
   The tiny add compares with libtorch's C++ `at::add` (../shared/bench/libtorch_overhead.cpp,
   built as its header says); without --libtorch-overhead that row is left out.

Each row prints our median ("-" when that bench has not been run: the script then doubles as
PyTorch's figures alone), PyTorch's median (and best), the ratio PyTorch time / our time
(above 1 = we are faster; for the tiny add, our time / PyTorch's, the target being at most
0.3), the target and whether this run meets it. Run it on an idle machine: on a shared VM the
figures move by 10-20% from one minute to the next, so compare runs made back to back."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch

# (criterion id, label, target ratio (PyTorch time / ours) at least this)
ROWS = [
    ("binary_16M/add_out_16M_f32", "add out= 16M f32", 1.0),
    ("reduce/sum_16M_f32", "sum 16M f32", 1.0),
    ("nn/softmax_4096x1024_f32", "softmax [4096,1024] f32", 1.0),
    ("nn/log_softmax_4096x1024_f32", "log_softmax [4096,1024] f32", 1.0),
    ("nn/native_layer_norm_4096x1024_f32", "native_layer_norm [4096,1024]", 1.0),
    ("nn/matmul_1024_f32", "matmul 1024^2 f32", 0.7),
]


def time_torch(f, runs=31):
    """Median and best of `runs` timed calls after two warm-up calls, in seconds."""
    f()
    f()
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), min(ts)


def torch_figures():
    n = 16 * 1024 * 1024
    x, y, out = torch.rand(n), torch.rand(n), torch.empty(n)
    a, w, b = torch.rand(4096, 1024), torch.rand(1024), torch.rand(1024)
    m, k = torch.rand(1024, 1024), torch.rand(1024, 1024)
    return {
        "binary_16M/add_out_16M_f32": time_torch(lambda: torch.add(x, y, out=out)),
        "reduce/sum_16M_f32": time_torch(lambda: x.sum()),
        "nn/softmax_4096x1024_f32": time_torch(lambda: torch.softmax(a, 1)),
        "nn/log_softmax_4096x1024_f32": time_torch(lambda: torch.log_softmax(a, 1)),
        "nn/native_layer_norm_4096x1024_f32": time_torch(
            lambda: torch.native_layer_norm(a, [1024], w, b, 1e-5)
        ),
        "nn/matmul_1024_f32": time_torch(lambda: m @ k),
    }


def ours(target_dir, bench_id):
    """Criterion's median for `bench_id`, in seconds, or None when it has not been run."""
    path = os.path.join(target_dir, "criterion", *bench_id.split("/"), "new", "estimates.json")
    try:
        with open(path) as f:
            return json.load(f)["median"]["point_estimate"] / 1e9
    except FileNotFoundError:
        return None


def libtorch_tiny_add_ns(binary):
    """`add_tiny_nograd_ns` printed by ../shared/bench/libtorch_overhead.cpp."""
    text = subprocess.run([binary], capture_output=True, text=True, check=True).stdout
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == "add_tiny_nograd_ns":
            return float(value)
    raise SystemExit(f"{binary} printed no add_tiny_nograd_ns line")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target-dir", default="target")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--libtorch-overhead", help="path of the built libtorch_overhead.cpp")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads; ours from "
          f"{args.target_dir}/criterion (criterion medians)")
    theirs = torch_figures()
    fmt = "{:<31} {:>11} {:>11} {:>11} {:>7} {:>7} {:>5}"
    print(fmt.format("figure", "ours med", "torch med", "torch best", "ratio", "target", "met"))
    missing = []
    for bench_id, label, target in ROWS:
        mine = ours(args.target_dir, bench_id)
        med, best = theirs[bench_id]
        if mine is None:
            # PyTorch's figures alone are still worth printing.
            missing.append(bench_id)
            print(fmt.format(label, "-", f"{med * 1e3:.3f} ms", f"{best * 1e3:.3f} ms", "-",
                             f">={target}", "-"))
            continue
        ratio = med / mine
        print(fmt.format(label, f"{mine * 1e3:.3f} ms", f"{med * 1e3:.3f} ms",
                         f"{best * 1e3:.3f} ms", f"{ratio:.2f}", f">={target}",
                         "yes" if ratio >= target else "no"))
    if args.libtorch_overhead:
        mine = ours(args.target_dir, "add_tiny")
        if mine is None:
            missing.append("add_tiny")
        else:
            theirs_ns = libtorch_tiny_add_ns(args.libtorch_overhead)
            ratio = mine * 1e9 / theirs_ns
            print(fmt.format("tiny add (time ratio)", f"{mine * 1e9:.0f} ns",
                             f"{theirs_ns:.0f} ns", "-", f"{ratio:.2f}", "<=0.3",
                             "yes" if ratio <= 0.3 else "no"))
    if missing:
        print("not run yet (cargo bench -p switchyard-cpu): " + ", ".join(missing),
              file=sys.stderr)


if __name__ == "__main__":
    main()
