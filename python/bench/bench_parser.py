"""Import time of ``switchyard`` and the per-call cost of the generated bindings.

``python python/bench/bench_parser.py`` (with ``python/`` on ``PYTHONPATH``; add ``--torch``
under a Python that has torch to time ``torch.add`` the same way in the same process).
Per-call figures are the median of 7 runs of ``timeit`` loops of 200 000 calls on 1-element
float32 tensors; import time is the median of 7 fresh interpreters (``python -X importtime``'s
cumulative figure for the package).
"""

import statistics
import subprocess
import sys
import timeit


def import_time(module):
    times = []
    for _ in range(7):
        out = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", f"import {module}"],
            capture_output=True,
            text=True,
            check=True,
        ).stderr
        for line in out.splitlines():
            parts = [p.strip() for p in line.split("|")]
            if len(parts) == 3 and parts[2] == module:
                times.append(int(parts[1]))
    return statistics.median(times)


def per_call(stmt, setup_globals, number=200_000):
    runs = [
        timeit.timeit(stmt, globals=setup_globals, number=number) / number for _ in range(7)
    ]
    return statistics.median(runs) * 1e9


def main():
    import switchyard

    a = switchyard.ones(1)
    b = switchyard.ones(1)
    g = {"lib": switchyard, "a": a, "b": b, "x": a}
    print(f"import switchyard: {import_time('switchyard') / 1000:.1f} ms")
    rows = [
        ("lib.add(a, b)", "switchyard.add(a, b)"),
        ("a.add(b)", "a.add(b)"),
        ("lib.add(a, 1)", "switchyard.add(a, 1)"),
        ("lib.ops.aten.add.Tensor(a, b)", "switchyard.ops.aten.add.Tensor(a, b)"),
        ("lib.sum(x, 0)", "switchyard.sum(x, 0)"),
        ("x.view(1, 1)", "x.view(1, 1)"),
    ]
    for stmt, label in rows:
        print(f"{label}: {per_call(stmt, g):.0f} ns")
    if "--torch" in sys.argv:
        import torch

        t = {"lib": torch, "a": torch.ones(1), "b": torch.ones(1), "x": torch.ones(1)}
        print(f"import torch: {import_time('torch') / 1000:.1f} ms")
        for stmt, label in rows:
            if "ops.aten" in stmt:
                continue
            print(f"{label.replace('switchyard', 'torch')}: {per_call(stmt, t):.0f} ns")


if __name__ == "__main__":
    main()
