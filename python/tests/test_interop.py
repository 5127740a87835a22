"""NumPy and DLPack interop (docs/python-plan.md §5): memory shared without copies, both ways.

``CASES`` run under ``torch`` and under ``switchyard``; their outcomes (values, dtypes, shapes,
strides, whether memory is shared, exceptions with their messages) are compared with PyTorch's,
recorded in ``fixtures/interop_torch.json`` by running this file under PyTorch's Python:
``/tmp/torchref/bin/python python/tests/test_interop.py``. The tests below them check what
needs more than one library (lifetimes, PyTorch live when it is installed).
"""

import gc
import json
import pathlib
import subprocess
import sys
import warnings

import numpy as np

try:
    import pytest
except ImportError:  # recording under PyTorch's Python, which has no pytest
    pytest = None

FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "interop_torch.json"


def _meta(lib):
    return lib.ops.aten.empty.memory_format([2], device="meta")


def _shared(lib):
    # Writes through either side are seen by the other.
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = lib.from_numpy(a)
    a[0, 1] = 50
    lib.ops.aten.add_.Tensor(t, lib.tensor(1.0))
    return t, a


def _numpy_shared(lib):
    t = lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    n = t.numpy()
    n[1, 2] = -1
    return t, n, np.shares_memory(n, t.numpy())


def _numpy_view(lib, f):
    t = lib.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]], dtype=lib.int32)
    return f(lib, t).numpy()


def _dlpack_twice(lib):
    c = lib.tensor([1.0, 2.0]).__dlpack__()
    lib.from_dlpack(c)
    return lib.from_dlpack(c)


def _np_from_dlpack_writes(lib):
    t = lib.tensor([1, 2, 3], dtype=lib.int16)
    a = np.from_dlpack(t)
    a[2] = 30
    return t, a, a.flags["WRITEABLE"]


def _from_dlpack_writes(lib):
    a = np.arange(4.0)
    t = lib.from_dlpack(a)
    lib.ops.aten.mul_.Tensor(t, lib.tensor(2.0))
    return a, t


CASES = {
    # from_numpy: every dtype both libraries have, layouts, sharing
    **{
        f"from_numpy_{d}": (lambda d: lambda lib: lib.from_numpy(np.array([[0, 1], [2, 3]], dtype=d)))(d)
        for d in ["float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "bool"]
    },
    "from_numpy_step": lambda lib: lib.from_numpy(np.arange(12.0).reshape(3, 4)[:, ::2]),
    "from_numpy_transposed": lambda lib: lib.from_numpy(np.arange(6, dtype=np.int64).reshape(2, 3).T),
    "from_numpy_offset": lambda lib: lib.from_numpy(np.arange(6, dtype=np.int64).reshape(2, 3)[1:, 1:]),
    "from_numpy_0dim": lambda lib: lib.from_numpy(np.array(3.5)),
    "from_numpy_empty": lambda lib: lib.from_numpy(np.zeros((0, 3), dtype=np.float32)),
    "from_numpy_broadcast": lambda lib: lib.from_numpy(np.broadcast_to(np.arange(3.0), (2, 3))),
    "from_numpy_shares": _shared,
    "from_numpy_list": lambda lib: lib.from_numpy([1, 2]),
    "from_numpy_str": lambda lib: lib.from_numpy(np.array(["a", "b"])),
    "from_numpy_object": lambda lib: lib.from_numpy(np.array([1, None], dtype=object)),
    "from_numpy_big_endian": lambda lib: lib.from_numpy(np.zeros(3, dtype=">f4")),
    "from_numpy_negative_stride": lambda lib: lib.from_numpy(np.arange(6.0)[::-1]),
    "from_numpy_odd_stride": lambda lib: lib.from_numpy(
        np.ndarray((2,), dtype=np.float32, buffer=bytearray(16), offset=0, strides=(6,))
    ),
    "from_numpy_uint16": lambda lib: lib.from_numpy(np.zeros(2, dtype=np.uint16)),
    "from_numpy_complex": lambda lib: lib.from_numpy(np.zeros(2, dtype=np.complex64)),
    "from_numpy_resize": lambda lib: lib.ops.aten.resize_.default(lib.from_numpy(np.arange(6.0)), [100]),
    # Tensor.numpy()
    **{
        f"numpy_{d}": (lambda d: lambda lib: lib.tensor([[0, 1], [2, 3]], dtype=getattr(lib, d)).numpy())(d)
        for d in ["float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "bool"]
    },
    "numpy_bfloat16": lambda lib: lib.tensor([1.0], dtype=lib.bfloat16).numpy(),
    "numpy_0dim": lambda lib: lib.tensor(2.5).numpy(),
    "numpy_transposed": lambda lib: _numpy_view(lib, lambda lib, t: lib.ops.aten.t.default(t)),
    "numpy_offset": lambda lib: _numpy_view(lib, lambda lib, t: lib.ops.aten.slice.Tensor(t, 1, 1)),
    "numpy_expanded": lambda lib: lib.ops.aten.expand.default(lib.tensor([1.0, 2.0]), [3, 2]).numpy(),
    "numpy_shares": _numpy_shared,
    "numpy_requires_grad": lambda lib: lib.tensor([1.0], requires_grad=True).numpy(),
    "numpy_force": lambda lib: lib.tensor([1.0, 2.0], requires_grad=True).numpy(force=True),
    "numpy_meta": lambda lib: _meta(lib).numpy(),
    "numpy_resize_view": lambda lib: (
        lambda t: (t.numpy(), lib.ops.aten.resize_.default(t, [4]), t.numpy())
    )(lib.tensor([1.0, 2.0])),
    "asarray": lambda lib: np.asarray(lib.tensor([[1, 2]], dtype=lib.int64)),
    "asarray_dtype": lambda lib: np.asarray(lib.tensor([1.5, 2.5]), dtype=np.float64),
    "array_copies": lambda lib: (lambda t: (np.array(t), np.shares_memory(np.array(t), t.numpy())))(
        lib.tensor([1.0])
    ),
    # DLPack
    "np_from_dlpack": _np_from_dlpack_writes,
    "np_from_dlpack_strided": lambda lib: np.from_dlpack(lib.ops.aten.t.default(lib.tensor([[1.0, 2.0], [3.0, 4.0]]))),
    "np_from_dlpack_bool": lambda lib: np.from_dlpack(lib.tensor([True, False])),
    "from_dlpack_numpy": _from_dlpack_writes,
    "from_dlpack_numpy_strided": lambda lib: lib.from_dlpack(np.arange(12, dtype=np.int32).reshape(3, 4)[::2, 1:]),
    "from_dlpack_numpy_0dim": lambda lib: lib.from_dlpack(np.array(7, dtype=np.int8)),
    "from_dlpack_numpy_empty": lambda lib: lib.from_dlpack(np.zeros((2, 0))),
    "from_dlpack_capsule_twice": _dlpack_twice,
    "from_dlpack_legacy_capsule": lambda lib: lib.from_dlpack(lib.tensor([3, 4]).__dlpack__()),
    "from_dlpack_versioned_capsule": lambda lib: lib.from_dlpack(lib.tensor([3, 4]).__dlpack__(max_version=(1, 0))),
    "dlpack_requires_grad": lambda lib: lib.tensor([1.0], requires_grad=True).__dlpack__(),
    "dlpack_meta": lambda lib: _meta(lib).__dlpack__(),
    "dlpack_device": lambda lib: tuple(int(x) for x in lib.tensor([1]).__dlpack_device__()),
    "dlpack_device_meta": lambda lib: _meta(lib).__dlpack_device__(),
}

# Outcomes that differ from PyTorch's on purpose, each with the reason. The test checks they
# still differ, so an entry goes once the difference does.
KNOWN = {
    "from_numpy_uint16": "switchyard has no uint16 dtype: refused with PyTorch's message listing our dtypes",
    "from_numpy_complex": "switchyard has no complex dtypes: refused likewise",
    "from_numpy_str": "the refusal lists switchyard's dtypes, which are fewer than PyTorch's",
    "from_numpy_object": "the refusal lists switchyard's dtypes, which are fewer than PyTorch's",
}


def describe(lib, value):
    """A comparable description of a result: tensors and arrays by dtype, shape, strides and
    values; tuples element by element; anything else by repr."""
    if isinstance(value, tuple):
        return ["tuple"] + [describe(lib, v) for v in value]
    if isinstance(value, lib.Tensor):
        return ["tensor", str(value.dtype), list(value.shape), list(value.stride()), value.tolist()]
    if isinstance(value, np.ndarray):
        return ["ndarray", str(value.dtype), list(value.shape), list(value.strides), value.tolist(),
                bool(value.flags["WRITEABLE"])]
    return ["value", repr(value)]


def outcome(lib, case):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return describe(lib, CASES[case](lib))
    except Exception as e:  # noqa: BLE001 - the outcome is the exception
        return ["raise", type(e).__name__, str(e)]


def _fixture():
    return json.loads(FIXTURE.read_text())


def test_fixture_covers_every_case():
    missing = sorted(set(CASES) - set(_fixture()["outcomes"]))
    assert not missing, f"re-record the fixture (run this file under PyTorch): {missing}"


def _parametrize(f):
    return pytest.mark.parametrize("case", sorted(CASES))(f) if pytest else f


@_parametrize
def test_same_outcome_as_torch(case):
    import switchyard

    expected = _fixture()["outcomes"][case]
    got = outcome(switchyard, case)
    if case in KNOWN:
        assert got != expected, f"fixed? remove it from KNOWN ({KNOWN[case]})"
    else:
        assert got == expected


def test_known_refusals_say_what_is_supported():
    import switchyard

    for case in ["from_numpy_uint16", "from_numpy_complex"]:
        kind, name, message = outcome(switchyard, case)
        assert (kind, name) == ("raise", "TypeError")
        assert "The only supported types are: float64, float32, float16, int64, int32, int16, int8, uint8, and bool." in message


def test_memory_lives_as_long_as_either_side():
    import switchyard

    a = np.arange(1000.0)
    before = sys.getrefcount(a)
    t = switchyard.from_numpy(a)
    assert sys.getrefcount(a) == before + 1
    del a
    gc.collect()
    assert t.tolist()[999] == 999.0
    n = switchyard.tensor([1.0, 2.0]).numpy()
    gc.collect()
    assert n.tolist() == [1.0, 2.0]
    # Dropping the tensor releases the array.
    b = np.zeros(4)
    before = sys.getrefcount(b)
    u = switchyard.from_numpy(b)
    del u
    gc.collect()
    assert sys.getrefcount(b) == before
    # A consumed capsule's memory is freed by the last tensor over it.
    c = np.arange(5.0)
    before = sys.getrefcount(c)
    v = switchyard.from_dlpack(c)
    assert sys.getrefcount(c) > before
    del v
    gc.collect()
    assert sys.getrefcount(c) == before


def test_read_only_arrays_warn_once():
    code = (
        "import warnings, numpy as np, switchyard\n"
        "warnings.simplefilter('always')\n"
        "a = np.zeros(3); a.setflags(write=False)\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    switchyard.from_numpy(a); switchyard.from_numpy(a)\n"
        "print(len(w), w[0].category.__name__, str(w[0].message)[:42])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1 UserWarning The given NumPy array is not writable, and"


def test_sixteen_million_elements_are_not_copied():
    import switchyard

    a = np.zeros(16 << 20, dtype=np.float32)
    t = switchyard.from_numpy(a)
    a[-1] = 3.0
    n = t.numpy()
    assert np.shares_memory(n, a) and n[-1] == 3.0


def test_torch_round_trip_live():
    try:
        import torch
    except ImportError:
        pytest.skip("PyTorch is not installed (CI runs from the recorded fixture)")
    import switchyard

    x = switchyard.tensor([[1.0, 2.0], [3.0, 4.0]])
    y = torch.from_dlpack(x)
    y[0, 1] = 20.0
    assert x.tolist() == [[1.0, 20.0], [3.0, 4.0]]
    z = torch.arange(6.0).reshape(2, 3).t()
    w = switchyard.from_dlpack(z)
    assert w.stride() == z.stride() and w.tolist() == z.tolist()
    z[0, 0] = -1.0
    assert w.tolist()[0][0] == -1.0


def record():
    import torch

    outcomes = {case: outcome(torch, case) for case in CASES}
    FIXTURE.write_text(
        json.dumps({"torch_version": torch.__version__, "outcomes": outcomes}, indent=1, sort_keys=True, default=repr) + "\n"
    )
    print(f"wrote {len(outcomes)} outcomes to {FIXTURE}")


if __name__ == "__main__":
    record()
