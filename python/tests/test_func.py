"""``switchyard.func.functionalize`` against ``torch.func.functionalize``: outputs, the inputs'
values, sizes and strides after the call (mutations written back), gradients through the
transform, errors. PyTorch's outcomes are recorded in ``fixtures/func_torch.json`` by running
this file under PyTorch's Python: ``/tmp/torchref/bin/python python/tests/test_func.py``."""

import json
import pathlib

FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "func_torch.json"


def _t(x):
    return [str(x.dtype), list(x.shape), list(x.stride()), x.detach().reshape(-1).tolist()]


def _describe(value):
    if isinstance(value, (list, tuple)):
        return [type(value).__name__] + [_describe(v) for v in value]
    if isinstance(value, dict):
        return {k: _describe(v) for k, v in value.items()}
    if hasattr(value, "dtype") and hasattr(value, "stride"):
        return _t(value)
    return repr(value)


def _run(lib, f, *inputs, remove="mutations"):
    out = lib.func.functionalize(f, remove=remove)(*inputs)
    return {"out": _describe(out), "inputs": [_describe(x) for x in inputs]}


def _view_add(x):
    y = x.view(2, 3)
    y.add_(1)
    return y * 2


def _slice_fill(x):
    x[1:, ::2].fill_(-1.0)
    return x.sum()


def _out_into_input(lib):
    def f(x, y):
        lib.add(x, y, out=x)
        return x.mul(2)

    return f


def _transpose_(x):
    x.transpose_(0, 1)
    return x + 0


def _resize_(x):
    x.resize_(4)
    return x


def _structure(x, n, scale=2.0):
    y = x.clone()
    y.mul_(scale)
    return {"sum": y.sum(), "parts": (y[0], n, [y[1], "text"])}


def _factory_inside(lib):
    def f(x):
        z = lib.zeros(2, 3)
        z.add_(x)
        z[0].copy_(x[1])
        return z

    return f


def _grad(lib):
    x = lib.arange(6.0).reshape(2, 3).requires_grad_()

    def f(a):
        b = a * 1  # mutate a non-leaf copy
        b.view(6)[::2].mul_(3)
        return (b * b).sum()

    y = lib.func.functionalize(f)(x)
    y.backward()
    return {"y": y.item(), "grad": _t(x.grad)}


def _raises(lib):
    class Boom(ValueError):
        pass

    def f(x):
        raise Boom("from f")

    try:
        lib.func.functionalize(f)(lib.ones(1))
    except Boom as e:
        return ["same exception object", str(e)]


CASES = {
    "view_add": lambda lib: _run(lib, _view_add, lib.arange(6.0)),
    "view_add_no_views": lambda lib: _run(lib, _view_add, lib.arange(6.0), remove="mutations_and_views"),
    "slice_fill": lambda lib: _run(lib, _slice_fill, lib.arange(12.0).reshape(3, 4)),
    "slice_fill_no_views": lambda lib: _run(lib, _slice_fill, lib.arange(12.0).reshape(3, 4), remove="mutations_and_views"),
    "out_into_input": lambda lib: _run(lib, _out_into_input(lib), lib.arange(3.0), lib.ones(3)),
    "transpose_": lambda lib: _run(lib, _transpose_, lib.arange(6.0).reshape(2, 3)),
    "resize_": lambda lib: _run(lib, _resize_, lib.arange(6.0)),
    "structure": lambda lib: _run(lib, _structure, lib.arange(4.0).reshape(2, 2), 7),
    "factory_inside": lambda lib: _run(lib, _factory_inside(lib), lib.arange(3.0)),
    "grad": _grad,
    "raises": _raises,
    "invalid_remove": lambda lib: lib.func.functionalize(lambda x: x, remove="views"),
}


def outcome(lib, case):
    try:
        return ["value", CASES[case](lib)]
    except Exception as e:  # noqa: BLE001 - the outcome is the exception
        return ["raise", type(e).__name__, str(e)]


def _parametrize(f):
    try:
        import pytest
    except ImportError:
        return f
    return pytest.mark.parametrize("case", sorted(CASES))(f)


def test_fixture_covers_every_case():
    recorded = json.loads(FIXTURE.read_text())["outcomes"]
    assert not sorted(set(CASES) - set(recorded)), "re-record the fixture (run this file under PyTorch)"


@_parametrize
def test_same_outcome_as_torch(case):
    import switchyard

    expected = json.loads(FIXTURE.read_text())["outcomes"][case]
    got = json.loads(json.dumps(outcome(switchyard, case)))
    assert got == expected, f"{case}:\n ours:    {got}\n PyTorch: {expected}"


def test_nested_functionalize_is_refused():
    # PyTorch 2.15 fails on this with an internal assert; ours refuses it by name.
    import pytest

    import switchyard as sy

    inner = sy.func.functionalize(_view_add)
    with pytest.raises(RuntimeError, match="nested functionalize\\(\\) is not supported"):
        sy.func.functionalize(lambda x: inner(x))(sy.arange(6.0))


if __name__ == "__main__":
    import torch
    import torch.func  # noqa: F401

    outcomes = {case: outcome(torch, case) for case in CASES}
    FIXTURE.write_text(json.dumps({"torch_version": torch.__version__, "outcomes": outcomes}, indent=1) + "\n")
    print(f"wrote {len(outcomes)} outcomes to {FIXTURE}")
