"""The argument parser of the generated bindings against PyTorch: every expression of
``parser_cases.py`` (hand-written cases and a sweep of every generated function and method
with wrong arguments) gives PyTorch's outcome: the value's ``repr`` and type, or the exception's
type and message, byte for byte. PyTorch runs live when it can be imported (or
``SWITCHYARD_ORACLE=live``); otherwise its outcomes come from ``fixtures/parser_torch.json``
(re-record with ``/tmp/torchref/bin/python python/tests/record_parser.py``).

Values that depend on random numbers or addresses are compared through expressions that
reduce them (``.shape``, differences of ``data_ptr()``), so both sides are deterministic.
"""

import json
import os
import pathlib
import sys
import warnings

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import switchyard  # noqa: E402

from outcome import outcome  # noqa: E402
from parser_cases import CASES, KNOWN, SWEEP  # noqa: E402

FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "parser_torch.json"


def _torch():
    if os.environ.get("SWITCHYARD_ORACLE") == "fixture":
        return None
    try:
        import torch
    except ImportError:
        if os.environ.get("SWITCHYARD_ORACLE") == "live":
            raise
        return None
    return torch


TORCH = _torch()
RECORDED = None if TORCH is not None else json.loads(FIXTURE.read_text())["outcomes"]


def expected(case):
    if TORCH is not None:
        return outcome(TORCH, case)
    assert case in RECORDED, "re-record the fixture (python/tests/record_parser.py)"
    return RECORDED[case]


@pytest.mark.parametrize("case", CASES + SWEEP)
def test_same_outcome_as_torch(case):
    # As the recorder: warnings (deprecated signatures) are not part of the outcome.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = expected(case)
        got = outcome(switchyard, case)
    if case in KNOWN:
        assert got != want, f"fixed? remove it from KNOWN ({KNOWN[case]})"
    else:
        assert got == want


def test_known_cases_exist():
    assert set(KNOWN) <= set(CASES + SWEEP)


def test_sweep_covers_every_generated_name():
    # Every module function and method of the tables is reachable under its PyTorch name.
    from parser_cases import _SKIP, _table_names

    for name, module in _table_names():
        if name in _SKIP:
            continue
        owner = {
            "": switchyard.Tensor,
            "switchyard": switchyard,
            "switchyard._C._nn": switchyard._C._nn,
            "switchyard._C._linalg": switchyard._C._linalg,
        }[module]
        assert callable(getattr(owner, name)), (module, name)


def test_aliasing_returns_are_the_callers_objects():
    x = switchyard.ones(2)
    assert x.add_(1) is x
    assert x.mul_(2, ) is x
    o = switchyard.zeros(2)
    assert switchyard.add(x, x, out=o) is o
    v, i = switchyard.zeros(2), switchyard.zeros(2, dtype=switchyard.int64)
    r = switchyard.max(switchyard.tensor([[1.0, 5.0], [3.0, 2.0]]), 1, out=(v, i))
    assert r.values is v and r.indices is i
    assert x.to(switchyard.float32) is x
    assert x.view(2) is not x


def test_named_tuples():
    r = switchyard.max(switchyard.tensor([[1.0, 5.0], [3.0, 2.0]]), 1)
    assert isinstance(r, tuple) and isinstance(r, switchyard.return_types.max)
    assert r.values.tolist() == [5.0, 3.0] and r.indices.tolist() == [1, 0]
    values, indices = r
    assert values.tolist() == [5.0, 3.0]
    assert type(r).__module__ == "switchyard.return_types"
    assert switchyard.return_types.max((1, 2)).indices == 2


def test_deprecated_signature_warns_once():
    # PyTorch's text (its str(warning) appends the C++ source location, "(Triggered internally
    # at .../python_arg_parser.cpp:1833.)", which is not part of the message).
    expected = (
        "This overload of sub is deprecated:\n"
        "\tsub(Tensor input, Number alpha, Tensor other, *, Tensor out = None)\n"
        "Consider using one of the following signatures instead:\n"
        "\tsub(Tensor input, Tensor other, *, Number alpha = 1, Tensor out = None)"
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a = switchyard.tensor([5.0, 6.0])
        first = switchyard.sub(a, 2, switchyard.ones(2))
        switchyard.sub(a, 2, switchyard.ones(2))
    assert first.tolist() == [3.0, 4.0]
    assert [(w.category, str(w.message)) for w in caught] == [(UserWarning, expected)]


def test_parsing_is_cached_and_errors_leave_no_state():
    # An error in one call does not affect the next (the parsed arguments are per call).
    with pytest.raises(TypeError):
        switchyard.add(switchyard.ones(2), "x")
    assert switchyard.add(switchyard.ones(2), 1).tolist() == [2.0, 2.0]


def test_only_builtin_exceptions_come_out():
    hostile = [
        lambda: switchyard.zeros(2**63),
        lambda: switchyard.zeros([2**62, 2**62]),
        lambda: switchyard.ones(2).view(2**63 - 1, 2),
        lambda: switchyard.sum(switchyard.ones(2), 2**63 - 1),
        lambda: switchyard.full((2,), 2**70),
        lambda: switchyard.arange(2**63 - 1, dtype=switchyard.int8),
        lambda: switchyard.ones(2).permute(*range(100)),
        lambda: switchyard.cat([switchyard.ones(2)] * 3, 2**40),
        lambda: switchyard.zeros(2, device=1),
        lambda: switchyard.ones(2).to(object()),
        lambda: switchyard.add(switchyard.ones(2), switchyard.ones(2), out=(1, 2)),
        lambda: switchyard.max(switchyard.ones(2), 0, out=(switchyard.ones(1),)),
        lambda: switchyard.max(switchyard.ones(2), 0, out=(1, 2)),
    ]
    # OverflowError too: PyTorch raises Python's own for ints beyond uint64.
    kinds = (RuntimeError, IndexError, ValueError, TypeError, NotImplementedError, OverflowError)
    for call in hostile:
        with pytest.raises(kinds):
            call()
