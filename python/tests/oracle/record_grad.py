"""Records PyTorch's gradient outcomes of every gradient case (``gradients.py``) into
``tests/fixtures/torch_oracle_grad.json.gz``.

Run from ``python/`` with the reference Python (torch installed, switchyard importable from
the source tree, since the cases come from switchyard's schemas):
``/tmp/torchref/bin/python -m tests.oracle.record_grad``.
"""

import gzip
import json
import time

import torch

from .gradients import FIXTURE, grad_case_hash, grad_cases, run_grad


def main():
    start = time.time()
    cases = grad_cases()
    outcomes = {}
    for gid, case, order in cases:
        torch.manual_seed(0)
        outcomes[gid] = run_grad(torch, case, order)
    data = {"torch_version": torch.__version__, "case_hash": grad_case_hash(cases),
            "outcomes": outcomes}
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    FIXTURE.write_bytes(gzip.compress(text.encode(), mtime=0))
    print(f"recorded {len(outcomes)} gradient outcomes in {time.time() - start:.1f}s to "
          f"{FIXTURE}")


if __name__ == "__main__":
    main()
