"""The oracle harness of the catalogue tests (``test_tensor_ops.py``, ``test_indexing.py``,
``test_autograd.py``): one piece of code run under ``torch`` and under ``switchyard`` (each
bound to the name ``torch``), the outcomes compared.

A case is a Python expression, or statements ending in an assignment to ``result``; it runs in
a namespace with fresh sample tensors (:func:`namespace`). Its outcome (:func:`describe`) is
the result with every tensor as dtype, shape, strides, values, ``requires_grad`` and the name of
its ``grad_fn``, and, when an input was given as ``watch``, whether writing into the result
writes into each input (views share storage) and each input's ``_version`` change; or the
exception's type and message. Values compare with torch.testing's default tolerances, the rest
exactly.

Torch's outcomes come live when ``import torch`` works, else from the fixture ``record.py``
wrote (``/tmp/torchref/bin/python python/tests/record.py``).
"""

import json
import math
import operator
import pathlib
import warnings

FIXTURES = pathlib.Path(__file__).parent / "fixtures"

try:  # pragma: no cover - depends on the environment
    import torch as _torch
except ImportError:
    _torch = None


def namespace(lib):
    """Fresh inputs for one case (built the same way under both libraries)."""
    A = lib.ops.aten
    return {
        "torch": lib,
        "A": A,
        "operator": operator,
        # int64 (2, 3, 4) holding 0..23
        "x": A.view.default(A.arange.default(24), [2, 3, 4]),
        "f": lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]),
        "i": lib.tensor([3, -2, 5]),
        "i32": lib.tensor([3, -2, 5], dtype=lib.int32),
        "u8": lib.tensor([3, 2, 5], dtype=lib.uint8),
        "b": lib.tensor([True, False, True]),
        "f32": lib.tensor([1.5, -2.0, 4.0]),
        "f64": lib.tensor([1.5, -2.0, 4.0], dtype=lib.float64),
        "f16": lib.tensor([1.5, -2.0, 4.0], dtype=lib.float16),
        "m": lib.tensor([[True, False, True], [False, True, True]]),
        "z": lib.tensor(1.5),
        "zi": lib.tensor(2),
        "e": lib.zeros(0, 3),
        "ip": inplace,
    }


def inplace(name, t, other):
    """``operator.<name>(t, other)`` (an in-place operator): whether it returned ``t`` itself,
    the change of ``t._version``, and ``t``."""
    before = t._version
    result = getattr(operator, name)(t, other)
    return (result is t, t._version - before, t)


def _number(v):
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
    return v


def _values(v):
    if isinstance(v, list):
        return [_values(x) for x in v]
    return _number(v)


def _is_tensor(lib, v):
    return isinstance(v, lib.Tensor)


def describe(lib, v):
    """A JSON-able description of a value."""
    if _is_tensor(lib, v):
        fn = v.grad_fn
        return {
            "tensor": True,
            "dtype": repr(v.dtype),
            "shape": list(v.shape),
            "stride": list(v.stride()),
            "values": _values(v.tolist()),
            "requires_grad": v.requires_grad,
            "grad_fn": None if fn is None else fn.name(),
        }
    if isinstance(v, (bool, int, float, str)) or v is None:
        return {"value": _number(v), "type": type(v).__name__}
    if isinstance(v, (tuple, list)):
        return {"seq": type(v).__name__, "items": [describe(lib, x) for x in v]}
    if type(v).__name__ in ("Size",):
        return {"seq": "Size", "items": list(v)}
    if hasattr(v, "name") and hasattr(v, "next_functions"):
        return {"node": v.name()}
    if isinstance(v, type(lib.float32)):
        return {"dtype": repr(v)}
    return {"repr": repr(v), "type": type(v).__name__}


def _aliases(lib, result, inputs):
    """For each watched input: whether writing into ``result`` changes it (shared storage)."""
    if not _is_tensor(lib, result) or result.numel() == 0 or result.dtype == lib.bool:
        return None
    snapshots = {k: t.tolist() for k, t in inputs.items()}
    try:
        lib.ops.aten.fill_.Scalar(result, 99)
    except Exception as e:  # noqa: BLE001 - a refused write is an outcome too
        return {"refused": type(e).__name__}
    return {k: t.tolist() != snapshots[k] for k, t in inputs.items()}


def run(lib, case, watch=()):
    """The outcome of ``case`` under ``lib``."""
    ns = namespace(lib)
    inputs = {k: ns[k] for k in watch}
    versions = {k: t._version for k, t in inputs.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if "result =" in case or "\n" in case:
                exec(case, ns)  # noqa: S102 - test programs only
                value = ns["result"]
            else:
                value = eval(case, ns)  # noqa: S307 - test expressions only
        except Exception as e:  # noqa: BLE001 - every exception is an outcome
            return {"raises": type(e).__name__, "message": str(e)}
        out = {"result": describe(lib, value)}
        if inputs:
            out["versions"] = {k: t._version - versions[k] for k, t in inputs.items()}
            out["aliases"] = _aliases(lib, value, inputs)
    return out


def _close(a, b, rtol, atol):
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y, rtol, atol) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= atol + rtol * abs(b)
    return a == b and type(a) is type(b)


_TOLERANCES = {
    "torch.float32": (1.3e-6, 1e-5),
    "torch.float64": (1e-7, 1e-7),
    "torch.float16": (1e-3, 1e-5),
    "torch.bfloat16": (1.6e-2, 1e-5),
}


def same(got, expected):
    """Whether two outcomes agree (float values within tolerance, everything else exactly)."""
    if isinstance(got, dict) and isinstance(expected, dict):
        if got.get("tensor") and expected.get("tensor"):
            rest = lambda d: {k: v for k, v in d.items() if k != "values"}  # noqa: E731
            tol = _TOLERANCES.get(expected["dtype"], (0.0, 0.0))
            return rest(got) == rest(expected) and _close(got["values"], expected["values"], *tol)
        return got.keys() == expected.keys() and all(same(got[k], expected[k]) for k in got)
    if isinstance(got, list) and isinstance(expected, list):
        return len(got) == len(expected) and all(same(a, b) for a, b in zip(got, expected))
    return got == expected


def load(name):
    """torch's recorded outcomes of a catalogue, or ``None`` when torch runs live."""
    if _torch is not None:
        return None
    return json.loads((FIXTURES / f"{name}_torch.json").read_text())["outcomes"]


def expected(fixture, case, watch=()):
    """torch's outcome of ``case``: live, or from the fixture."""
    if fixture is None:
        return run(_torch, case, watch)
    assert case in fixture, f"re-record the oracle (python/tests/record.py): {case!r}"
    return fixture[case]
