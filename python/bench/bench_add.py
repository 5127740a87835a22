"""Times a one-element float32 ``a + b`` from Python under switchyard and under torch in one
process (both imported; runs alternate; each figure the median of many runs), as issue 20's
benchmark asks (target: switchyard <= 0.5x torch).

Run with a Python that has torch, from the repository root, with the extension linked:
``PYTHONPATH=python /tmp/torchref/bin/python python/bench/bench_add.py``. Build the extension
optimised for figures worth quoting (the test build's kernel crates are at opt-level 1 with
debug assertions): ``cargo build --workspace --locked --example ext --profile pybench --config
'profile.pybench.inherits="release"'`` and link ``<target>/pybench/examples/libext.so``.
"""

import statistics
import timeit

import switchyard
import torch

N = 20000  # additions per run
RUNS = 41


def per_call(lib):
    a = lib.tensor([1.5])
    b = lib.tensor([2.5])
    return timeit.timeit("a + b", globals={"a": a, "b": b}, number=N) / N


def main():
    for lib in (switchyard, torch):  # warm up both
        per_call(lib)
    times = {"switchyard": [], "torch": []}
    for _ in range(RUNS):
        times["switchyard"].append(per_call(switchyard))
        times["torch"].append(per_call(torch))
    sy = statistics.median(times["switchyard"])
    th = statistics.median(times["torch"])
    print(f"torch {torch.__version__}, {RUNS} runs of {N} additions, medians:")
    print(f"  switchyard a + b: {sy * 1e9:7.1f} ns")
    print(f"  torch      a + b: {th * 1e9:7.1f} ns")
    print(f"  ratio: {sy / th:.2f}x torch")


if __name__ == "__main__":
    main()
