"""Records PyTorch's outcomes of the oracle catalogues (``tensor_ops_cases.py``,
``indexing_cases.py``, ``autograd_cases.py``) into ``fixtures/<name>_torch.json``.

Run from the repository root with a Python that has torch:
``/tmp/torchref/bin/python python/tests/record.py``.
"""

import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import torch  # noqa: E402

import autograd_cases  # noqa: E402
import indexing_cases  # noqa: E402
import expressions as oracle  # noqa: E402
import tensor_ops_cases  # noqa: E402

CATALOGUES = {
    "tensor_ops": tensor_ops_cases,
    "indexing": indexing_cases,
    "autograd": autograd_cases,
}


def cases(module):
    """``(case, watch)`` pairs of a catalogue."""
    return [c if isinstance(c, tuple) else (c, ()) for c in module.CASES]


def main():
    for name, module in CATALOGUES.items():
        outcomes = {case: oracle.run(torch, case, watch) for case, watch in cases(module)}
        out = {"torch_version": torch.__version__, "outcomes": outcomes}
        path = oracle.FIXTURES / f"{name}_torch.json"
        path.write_text(json.dumps(out, indent=0, sort_keys=True) + "\n")
        print(f"wrote {len(outcomes)} outcomes to {path}")


if __name__ == "__main__":
    main()
