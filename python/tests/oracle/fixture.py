"""PyTorch's outcomes: live (``torch`` importable, or ``SWITCHYARD_ORACLE=live``) or recorded
in ``tests/fixtures/torch_oracle.json.gz`` (``SWITCHYARD_ORACLE=fixture`` forces it)."""

import functools
import gzip
import importlib
import json
import os
import pathlib

FIXTURE = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "torch_oracle.json.gz"
RERECORD = "re-record the oracle: cd python && /tmp/torchref/bin/python -m tests.oracle.record"


@functools.cache
def torch_or_none():
    mode = os.environ.get("SWITCHYARD_ORACLE", "")
    if mode == "fixture":
        return None
    try:
        return importlib.import_module("torch")
    except ImportError:
        if mode == "live":
            raise
        return None


@functools.cache
def recorded():
    return json.loads(gzip.decompress(FIXTURE.read_bytes()))


def expected_outcome(case):
    """PyTorch's outcome of ``case``."""
    torch = torch_or_none()
    if torch is not None:
        from .outcome import run

        torch.manual_seed(0)
        return run(torch, case)
    outcomes = recorded()["outcomes"]
    if case["id"] not in outcomes:
        raise AssertionError(f"no recorded outcome for {case['id']}: {RERECORD}")
    return outcomes[case["id"]]
