"""The tensor ops catalogue (`tensor_ops_cases.py`) gives PyTorch's outcomes: live when torch is
importable, else those recorded in `fixtures/tensor_ops_torch.json` (see `oracle.py`)."""

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import switchyard  # noqa: E402

import expressions as oracle  # noqa: E402
import tensor_ops_cases as catalogue  # noqa: E402

FIXTURE = oracle.load("tensor_ops")
CASES = [c if isinstance(c, tuple) else (c, ()) for c in catalogue.CASES]
KNOWN = getattr(catalogue, "KNOWN", {})


@pytest.mark.parametrize(("case", "watch"), CASES, ids=[c for c, _ in CASES])
def test_same_outcome_as_torch(case, watch):
    expected = oracle.expected(FIXTURE, case, watch)
    got = oracle.run(switchyard, case, watch)
    if case in KNOWN:
        assert not oracle.same(got, expected), f"fixed? remove it from KNOWN ({KNOWN[case]})"
    else:
        assert oracle.same(got, expected), f"\nswitchyard: {got}\ntorch:      {expected}"
