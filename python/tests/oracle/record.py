"""Records PyTorch's outcomes of every oracle case into ``tests/fixtures/torch_oracle.json.gz``.

Run from ``python/`` with the reference Python (torch installed, switchyard importable from
the source tree, since the cases come from switchyard's schemas):
``/tmp/torchref/bin/python -m tests.oracle.record``.
"""

import gzip
import json
import pathlib
import time

import torch

from .cases import all_cases, case_hash
from .outcome import run

FIXTURE = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "torch_oracle.json.gz"


def main():
    torch.manual_seed(0)
    cases, _ = all_cases()
    start = time.time()
    outcomes = {}
    for case in cases:
        torch.manual_seed(0)
        outcomes[case["id"]] = run(torch, case)
    data = {"torch_version": torch.__version__, "case_hash": case_hash(cases),
            "outcomes": outcomes}
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    FIXTURE.write_bytes(gzip.compress(text.encode(), mtime=0))
    print(f"recorded {len(outcomes)} outcomes in {time.time() - start:.1f}s to {FIXTURE}")


if __name__ == "__main__":
    main()
