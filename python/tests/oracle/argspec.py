"""Argument values as JSON data (so that a case list is the same under either library and
can be hashed), built into Python objects of a library by ``build``.

A value is a Python number, bool, string, None, a list of values, or a dict:
``{"tensor": nested data, "dtype": name, "layout": contig | t | slice | expand, "size": ...}``
(NaN and infinities allowed in the data, as Python's json writes them; ``t``: the data is the transposed shape, the tensor is ``aten.t`` of it; ``slice``: the data
has twice the last dimension, the tensor is its step-2 ``aten.slice``; ``expand``: the data
has a leading 1, expanded to ``size`` with stride 0), ``{"zeros": shape, "dtype": name}``
(empty shapes and out= tensors), ``{"dtype": name}`` alone (a dtype argument).

``Gen`` draws the data from ``random.Random(seed)`` in pure Python.
"""

import math
import random
import zlib

FLOATING = ("float16", "bfloat16", "float32", "float64")
INTEGRAL = ("int64", "int32", "uint8", "int8", "int16")


def seed_of(text):
    return zlib.crc32(text.encode())


class Gen:
    """Values for one case: ``dt`` the case's dtype, ``kind`` its tensor kind."""

    def __init__(self, case_id, dt="float32", kind="contig"):
        self.rng = random.Random(seed_of(case_id))
        self.dt = dt
        self.kind = kind
        self.tweak = None  # the case's argument variant, for overrides that depend on it

    # -- numbers -----------------------------------------------------------------------
    def _value(self, dtype, low, high):
        if dtype == "bool":
            return self.rng.random() < 0.5
        if dtype in FLOATING:
            return round(self.rng.uniform(low, high), 2)
        lo = 0 if dtype == "uint8" else int(low)
        return self.rng.randint(lo, int(high))

    def _data(self, shape, dtype, low, high):
        if not shape:
            return self._value(dtype, low, high)
        return [self._data(shape[1:], dtype, low, high) for _ in range(shape[0])]

    # -- tensors -----------------------------------------------------------------------
    def tensor(self, shape, dtype=None, layout="contig", low=-3, high=3):
        """A tensor of ``shape`` laid out as ``layout`` (contig, t, slice, expand)."""
        dtype = dtype or self.dt
        shape = list(shape)
        if 0 in shape:
            return {"zeros": shape, "dtype": dtype}
        if layout == "t" and len(shape) == 2:
            return {"tensor": self._data(shape[::-1], dtype, low, high), "dtype": dtype,
                    "layout": "t"}
        if layout == "slice" and len(shape) >= 1:
            src = shape[:-1] + [shape[-1] * 2]
            return {"tensor": self._data(src, dtype, low, high), "dtype": dtype,
                    "layout": "slice"}
        if layout == "expand" and len(shape) >= 1 and shape[0] > 1:
            return {"tensor": self._data([1] + shape[1:], dtype, low, high), "dtype": dtype,
                    "layout": "expand", "size": shape}
        return {"tensor": self._data(shape, dtype, low, high), "dtype": dtype}

    def T(self, shape, dtype=None, low=-3, high=3):
        """A tensor in the case's layout where it applies to ``shape``."""
        layout = self.kind if self.kind in ("t", "slice", "expand") else "contig"
        if layout == "t" and len(shape) != 2:
            layout = "slice"
        return self.tensor(shape, dtype, layout, low, high)

    def primary(self, position=0, dtype=None, low=-3, high=3):
        """The case's main tensor: (2, 3) in its kind; 0-dim; (0, 3); for ``bcast`` the
        second and later tensors are (3,)."""
        if self.kind == "zerodim":
            return self.tensor([], dtype, low=low, high=high)
        if self.kind == "empty":
            return self.tensor([0, 3], dtype)
        if self.kind == "bcast" and position > 0:
            return self.tensor([3], dtype, low=low, high=high)
        if self.kind == "mixed" and position > 0:
            return self.tensor([2, 3], "int64", low=low, high=high)
        if self.kind == "large":
            return self.tensor([4, 33], dtype, low=low, high=high)
        if self.kind == "number" and position > 0:
            return 2.5  # a Python number for a Tensor argument (a wrapped number)
        if self.kind == "mixed0d" and position > 0:
            return self.tensor([], "float64", low=low, high=high)
        if self.kind == "special" and position == 0 and (dtype or self.dt) in FLOATING:
            return {"tensor": [[math.nan, math.inf, -math.inf], [0.0, -0.0, 1.5]],
                    "dtype": dtype or self.dt}
        return self.T([2, 3], dtype, low, high)

    def primary_shape(self, position=0):
        return {"zerodim": [], "empty": [0, 3], "large": [4, 33]}.get(self.kind, [3] if (
            self.kind == "bcast" and position > 0) else [2, 3])

    def index(self, shape, high, layout="contig"):
        """int64 indices in ``[0, high)``."""
        if 0 in shape:
            return {"zeros": list(shape), "dtype": "int64"}
        return self.tensor(shape, "int64", layout, 0, high - 1)

    def mask(self, shape):
        return self.tensor(shape, "bool")

    def zeros(self, shape, dtype=None):
        return {"zeros": list(shape), "dtype": dtype or self.dt}

    @staticmethod
    def dtype(name):
        return {"dtype": name}


def build(lib, value, inputs):
    """``value`` as objects of ``lib``; every tensor built is appended to ``inputs``."""
    if isinstance(value, list):
        return [build(lib, v, inputs) for v in value]
    if not isinstance(value, dict):
        return value
    aten = lib.ops.aten
    if "zeros" in value:
        t = aten.zeros.default(value["zeros"], dtype=getattr(lib, value["dtype"]))
    elif "tensor" in value:
        t = lib.tensor(value["tensor"], dtype=getattr(lib, value["dtype"]))
        layout = value.get("layout", "contig")
        if layout == "t":
            t = aten.t.default(t)
        elif layout == "slice":
            t = aten.slice.Tensor(t, -1, 0, None, 2)
        elif layout == "expand":
            t = aten.expand.default(t, value["size"])
    else:
        return getattr(lib, value["dtype"])
    inputs.append(t)
    return t
