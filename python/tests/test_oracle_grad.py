"""Gradients of every differentiable ops.yaml overload under switchyard and under PyTorch
(live, or recorded in ``fixtures/torch_oracle_grad.json.gz``), from the forward oracle's
cases (``oracle/gradients.py``): first-order gradients of a weighted sum of the outputs with
respect to every floating input, second order for a representative subset.

Differences listed in ``oracle/known_grad_differences.py`` must still differ; every overload
without a case in which PyTorch computes a gradient is listed in ``NO_GRADIENT`` with the
reason."""

import collections
import copy
import fnmatch
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import switchyard  # noqa: E402

from oracle.fixture import torch_or_none  # noqa: E402
from oracle.gradients import (  # noqa: E402
    RERECORD,
    expected_grad_outcome,
    grad_case_hash,
    grad_cases,
    grad_differences,
    grad_fn_differences,
    recorded,
    run_grad,
)
from oracle.known_grad_differences import KNOWN, KNOWN_GRAD_FN  # noqa: E402
from oracle.schema import yaml_overloads  # noqa: E402

CASES = grad_cases()
CASE_IDS = [gid for gid, _, _ in CASES]
BY_ID = {gid: (case, order) for gid, case, order in CASES}


def known_reason(gid, known=KNOWN):
    for pattern, reason in known.items():
        if fnmatch.fnmatchcase(gid, pattern):
            return reason
    return None


@pytest.mark.skipif(torch_or_none() is not None, reason="PyTorch runs live")
def test_fixture_is_current():
    data = recorded()
    assert data["torch_version"].startswith("2.15"), data["torch_version"]
    missing = [gid for gid in CASE_IDS if gid not in data["outcomes"]]
    assert not missing, f"{len(missing)} cases not recorded ({missing[:5]}...): {RERECORD}"
    assert data["case_hash"] == grad_case_hash(CASES), f"the cases changed: {RERECORD}"


def test_known_differences_name_cases():
    for known in (KNOWN, KNOWN_GRAD_FN):
        unused = [p for p in known if not any(fnmatch.fnmatchcase(i, p) for i in CASE_IDS)]
        assert not unused, f"known_grad_differences entries that match no case: {unused}"
        assert all(r.startswith(("bug", "justified")) for r in known.values())


@pytest.mark.parametrize("gid", CASE_IDS)
def test_same_gradients_as_torch(gid):
    case, order = BY_ID[gid]
    expected = expected_grad_outcome(gid, case, order)
    got = run_grad(switchyard, case, order)
    failures = []
    for known, compare in ((KNOWN, grad_differences), (KNOWN_GRAD_FN, grad_fn_differences)):
        diffs = compare(expected, got)
        reason = known_reason(gid, known)
        if reason is not None and not diffs:
            failures.append(f"same outcome as PyTorch now: remove it from "
                            f"known_grad_differences ({reason})")
        elif reason is None and diffs:
            failures.extend(diffs)
    assert not failures, "\n".join(failures)


def _expected(gid):
    case, order = BY_ID[gid]
    return expected_grad_outcome(gid, case, order)


def test_comparison_sees_each_field():
    """The comparison is not vacuous: perturbing any recorded field is a difference."""
    exp = _expected("mul.Tensor/float32/t/grad")
    grad = exp["grads"][0]
    assert grad["shape"] == [3, 2] and exp["requires_grad"] == [0], "the leaf is t's source"
    for key, value in [("dtype", "float64"), ("shape", [2, 3]), ("stride", [2, 1])]:
        other = copy.deepcopy(exp)
        other["grads"][0][key] = value
        assert grad_differences(exp, other), key
    other = copy.deepcopy(exp)
    other["grads"][0]["values"][0][0] = grad["values"][0][0] * (1 + 1e-4) + 1e-4
    assert grad_differences(exp, other)
    other["grads"][0]["values"][0][0] = grad["values"][0][0] * (1 + 1e-7)
    assert not grad_differences(exp, other), "within float32's tolerance"
    for mutate in (lambda o: o["grads"].__setitem__(1, None),
                   lambda o: o["grads"].pop(),
                   lambda o: o.__setitem__("requires_grad", []),
                   lambda o: o.pop("grads"),
                   lambda o: o.update(backward_raises="RuntimeError", message="x")):
        other = copy.deepcopy(exp)
        mutate(other)
        assert grad_differences(exp, other)
        assert grad_differences(other, exp)
    # Exceptions: type and message; second order.
    exp = _expected("resize.default/float32/contig/grad")
    assert exp["backward_raises"] == "RuntimeError"
    assert grad_differences(exp, dict(exp, message=exp["message"] + "."))
    assert grad_differences(exp, dict(exp, backward_raises="NotImplementedError"))
    exp = _expected("sin.default/float64/contig/grad2")
    assert exp["grad_requires_grad"] == [True] and exp["grads2"][0] is not None
    other = copy.deepcopy(exp)
    other["grads2"][0]["values"][0][0] += 1e-3
    assert grad_differences(exp, other)
    assert grad_differences(exp, dict(exp, grad_requires_grad=[False]))
    # grad_fn names, compared apart.
    assert exp["grad_fn"] == ["SinBackward0"]
    assert grad_fn_differences(exp, dict(exp, grad_fn=["CosBackward0"]))
    assert not grad_differences(exp, dict(exp, grad_fn=["CosBackward0"]))


def test_a_wrong_derivative_is_caught():
    """End to end: with aten::sin's Autograd kernel replaced by a Python kernel that
    redispatches below autograd (right values, no graph), the gradient oracle reports it."""
    from switchyard.library import Library

    lib = Library("aten", "IMPL")
    A = switchyard.ops.aten

    def sin_without_graph(keyset, x):
        return A.sin.default.redispatch(keyset.remove("AutogradCPU"), x)

    lib.impl("sin", sin_without_graph, "AutogradCPU", with_keyset=True)
    try:
        gid = "sin.default/float32/contig/grad"
        diffs = grad_differences(_expected(gid), run_grad(switchyard, BY_ID[gid][0]))
    finally:
        lib._destroy()
    assert any("requires_grad" in d for d in diffs), diffs
    gid = "sin.default/float32/contig/grad"
    assert not grad_differences(_expected(gid), run_grad(switchyard, BY_ID[gid][0]))


# -- coverage ------------------------------------------------------------------------------

_OUT = ("out= overload: PyTorch does not differentiate through out= (it refuses the call "
        "when an input requires grad, or its autograd fallback's backward raises 'derivative "
        "for aten::X is not implemented')")
_NON_DIFFERENTIABLE = ("outputs not differentiable: PyTorch's outputs do not require grad "
                       "(boolean, integral, or defined as non-differentiable)")
_NOT_IMPLEMENTED = ("PyTorch has no derivative: its backward raises 'derivative for ... is "
                    "not implemented' (compared in the gradient cases)")
_NO_FLOAT_INPUT = "no floating tensor input (factory, integral-only or condition-only)"

NO_GRADIENT = {
    # Patterns over "name.overload"; every overload without a case in which PyTorch computes
    # a gradient must match one, and every pattern must match such an overload.
    "*.out": _OUT, "*_out": _OUT, "*.output": _OUT, "*.out_mode": _OUT,
    "max.dim_max": _OUT, "min.dim_min": _OUT, "sort.values": _OUT,
    "sort.values_stable": _OUT, "topk.values": _OUT,
    **{f"{n}.*": _NON_DIFFERENTIABLE for n in (
        "all", "any", "argmax", "argmin", "eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf",
        "isfinite", "logical_and", "logical_or", "logical_xor", "logical_not", "detach",
        "detach_", "empty_like", "full_like", "ones_like", "zeros_like", "rand_like",
        "randn_like", "new_empty_strided", "nonzero", "nonzero_numpy")},
    "view.dtype": _NON_DIFFERENTIABLE + " (a view as another dtype)",
    "view_copy.dtype": _NON_DIFFERENTIABLE + " (a copy as another dtype)",
    **{f"{n}.*": _NO_FLOAT_INPUT for n in (
        "arange", "empty", "empty_strided", "eye", "full", "linspace", "ones", "zeros", "rand",
        "randn", "randint", "one_hot", "bitwise_and", "bitwise_and_", "bitwise_or",
        "bitwise_or_", "bitwise_xor", "bitwise_xor_", "bitwise_not", "bitwise_not_")},
    "where.default": _NO_FLOAT_INPUT + " (where(condition) is nonzero)",
    "where.Scalar": _NO_FLOAT_INPUT + " (condition and two Scalars)",
    **{k: _NOT_IMPLEMENTED for k in (
        "bernoulli.p", "normal_functional.default", "copy.default", "remainder.Scalar_Tensor",
        "scatter.reduce", "scatter.value_reduce", "scatter_.reduce", "scatter_.value_reduce",
        "resize.default", "set.source_Tensor", "set_.source_Tensor", "detach_copy.default")},
    "resize_.default": "PyTorch refuses resize_ of a tensor that requires grad",
    **{k: "backend plumbing, not run by the oracle (cases.NOT_RUN)" for k in (
        "_to_cpu.default", "_copy_from.default", "_copy_from_and_resize.default")},
}


@pytest.fixture(scope="module")
def without_gradient():
    computed = collections.Counter()
    for gid, case, order in CASES:
        exp = _expected(gid)
        if any(g is not None for g in exp.get("grads") or []):
            computed[(case["op"], case["overload"])] += 1
    return [f"{n}.{o}" for n, o in yaml_overloads() if not computed[(n, o)]]


def test_every_differentiable_overload_has_a_gradient_case(without_gradient):
    unlisted = [k for k in without_gradient
                if not any(fnmatch.fnmatchcase(k, p) for p in NO_GRADIENT)]
    assert not unlisted, f"overloads without a gradient case and without a reason: {unlisted}"


def test_no_gradient_entries_are_current(without_gradient):
    stale = [p for p in NO_GRADIENT
             if not any(fnmatch.fnmatchcase(k, p) for k in without_gradient)]
    assert not stale, f"NO_GRADIENT entries that match no overload without a gradient: {stale}"
    overloads = {f"{n}.{o}" for n, o in yaml_overloads()}
    covered = sorted(k for k in overloads - set(without_gradient)
                     if any(fnmatch.fnmatchcase(k, p) for p in NO_GRADIENT))
    assert not covered, f"NO_GRADIENT names overloads that have a gradient case: {covered}"


def test_second_order_subset():
    """Every ``SECOND_ORDER`` operator has second-order cases; PyTorch computes second-order
    gradients for all but those whose gradient is piecewise constant in the inputs (there
    the first-order gradient does not require grad, which is compared)."""
    from oracle.gradients import SECOND_ORDER

    ops, with_grads2 = set(), set()
    for gid, case, order in CASES:
        if order == 2:
            ops.add(case["op"])
            if any(g is not None for g in _expected(gid).get("grads2") or []):
                with_grads2.add(case["op"])
    assert ops == SECOND_ORDER and len(SECOND_ORDER) >= 40
    assert SECOND_ORDER - with_grads2 == {"amax", "clamp", "cumsum", "maximum", "mean",
                                          "sum", "where"}
