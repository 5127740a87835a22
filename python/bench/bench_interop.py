"""Times NumPy interop: ``from_numpy`` and ``Tensor.numpy()`` of 1 and 16M float32 elements,
for switchyard and (when installed in the same Python) PyTorch, alternating in one process.
Both should take constant time: the 16M rows are no slower than the 1-element rows.

    PYTHONPATH=python /tmp/torchref/bin/python python/bench/bench_interop.py
"""

import statistics
import timeit

import numpy as np

import switchyard

try:
    import torch
except ImportError:
    torch = None


def per_call_ns(stmt, number=20000, repeat=7):
    runs = timeit.repeat(stmt, number=number, repeat=repeat)
    return statistics.median(runs) / number * 1e9


def main():
    libs = [("switchyard", switchyard)] + ([("torch", torch)] if torch else [])
    print(f"{'operation':<24}" + "".join(f"{name:>14}" for name, _ in libs) + "   (ns per call, median of 7)")
    for n in [1, 16 << 20]:
        a = np.zeros(n, dtype=np.float32)
        row_from = []
        row_to = []
        for _, lib in libs:
            t = lib.from_numpy(a)
            row_from.append(per_call_ns(lambda lib=lib: lib.from_numpy(a)))
            row_to.append(per_call_ns(lambda t=t: t.numpy()))
        label = "1" if n == 1 else "16M"
        print(f"{'from_numpy ' + label:<24}" + "".join(f"{x:>14.0f}" for x in row_from))
        print(f"{'numpy() ' + label:<24}" + "".join(f"{x:>14.0f}" for x in row_to))


if __name__ == "__main__":
    main()
