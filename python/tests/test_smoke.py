"""Smoke tests of the extension: the expressions of ``smoke_cases.py`` give PyTorch's outcome
(recorded in ``fixtures/smoke_torch.json``), plus checks computed by hand."""

import json
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import switchyard  # noqa: E402

from outcome import outcome  # noqa: E402
from smoke_cases import CASES, KNOWN  # noqa: E402

FIXTURE = json.loads((pathlib.Path(__file__).parent / "fixtures" / "smoke_torch.json").read_text())


def test_fixture_covers_every_case():
    missing = [c for c in CASES if c not in FIXTURE["outcomes"]]
    assert not missing, f"re-record the fixture (python/tests/record_smoke.py): {missing}"


@pytest.mark.parametrize("case", CASES)
def test_same_outcome_as_torch(case):
    expected = FIXTURE["outcomes"][case]
    got = outcome(switchyard, case)
    if case in KNOWN:
        assert got != expected, f"fixed? remove it from KNOWN ({KNOWN[case]})"
    else:
        assert got == expected


def test_dtype_objects_are_singletons():
    assert switchyard.tensor([1.5]).dtype is switchyard.float32
    assert switchyard.float is switchyard.float32
    assert switchyard.zeros(1, dtype=switchyard.int64).dtype is switchyard.long


def test_size_is_a_tuple():
    s = switchyard.zeros(2, 3).shape
    assert isinstance(s, tuple) and isinstance(s, switchyard.Size)
    assert s == (2, 3) and list(s) == [2, 3]


def test_tolist_keeps_int64_exact():
    big = 2**62 + 1
    assert switchyard.tensor([big, -big]).tolist() == [big, -big]


def test_ops_return_tuples_and_lists():
    values, indices = switchyard.ops.aten.max.dim(switchyard.tensor([[1.0, 5.0], [3.0, 2.0]]), 1)
    assert values.tolist() == [5.0, 3.0] and indices.tolist() == [1, 0]
    parts = switchyard.ops.aten.split.Tensor(switchyard.arange(5), 2)
    assert isinstance(parts, list) and [p.tolist() for p in parts] == [[0, 1], [2, 3], [4]]


def test_overload_packet_tries_each_overload():
    assert switchyard.ops.aten.add(switchyard.tensor([1, 2]), 3).tolist() == [4, 5]
    with pytest.raises(RuntimeError, match="failed to match any schema"):
        switchyard.ops.aten.add(switchyard.tensor([1.0]), "a")
    assert "Tensor" in switchyard.ops.aten.add.overloads()


def test_only_builtin_exceptions_come_out():
    hostile = [
        lambda: switchyard.zeros(-1),
        lambda: switchyard.zeros(2**62, 2**62),
        lambda: switchyard.tensor([[1], [2, 3]]),
        lambda: switchyard.ops.aten.sum.dim_IntList(switchyard.ones(2), [2**63 - 1]),
        lambda: switchyard.ops.aten.add.Tensor(switchyard.ones(2), None),
        lambda: switchyard.arange(0, 10, 0),
        lambda: switchyard.full((2,), object()),
        lambda: switchyard.device("nope"),
        lambda: switchyard.tensor([1.0]).size(2**63 - 1),
    ]
    for call in hostile:
        with pytest.raises((RuntimeError, IndexError, ValueError, TypeError, NotImplementedError)):
            call()


def test_errors_name_the_operator_in_a_note():
    with pytest.raises(RuntimeError) as info:
        switchyard.ops.aten.add.Tensor(switchyard.ones(2), switchyard.ones(3))
    assert str(info.value) == (
        "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"
    )
    assert any("aten::add.Tensor" in note for note in getattr(info.value, "__notes__", []))


def test_dispatch_introspection():
    table = switchyard._C._dispatch_dump_table("aten::add.Tensor")
    assert "CPU: wrapper_CPU_add_Tensor [kernel]" in table.splitlines()
    state = switchyard._C._dispatch_dump("aten::add.Tensor")
    assert "schema: aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor" in state
    # PyTorch returns an empty string for an operator it does not know.
    assert switchyard._C._dispatch_dump("aten::nosuch") == ""
    assert switchyard._C._dispatch_dump_table("aten::nosuch") == ""


def test_dispatch_explain_uses_the_callers_arguments():
    a = switchyard.tensor([1.0, 2.0], requires_grad=True)
    text = switchyard._C._dispatch_explain(switchyard.ops.aten.mul.Tensor, a, 2)
    assert "[callBoxed] aten::mul.Tensor at AutogradCPU -> autograd_mul_Tensor" in text
    assert "result 0: grad_fn=<MulBackward0>" in text
    assert text.rstrip().endswith("result: tensor([2., 4.], grad_fn=<MulBackward0>)")
    with pytest.raises(RuntimeError, match="Expected a value of type 'Tensor' for argument 'other'"):
        switchyard._C._dispatch_explain(switchyard.ops.aten.mul.Tensor, a, "x")
