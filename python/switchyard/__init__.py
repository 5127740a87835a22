"""switchyard: PyTorch's Python API over switchyard, a tensor runtime in Rust built around a
PyTorch-style operator dispatcher. ``import switchyard as torch`` runs what it covers.

The extension module ``switchyard._C`` holds the ``Tensor`` class, the ``dtype``, ``device`` and
``Size`` objects, ``tensor()`` and the operators by name (``switchyard.ops``); this package
re-exports them and adds what PyTorch writes in Python.
"""

from . import _C
from ._C import (
    Size,
    Tensor,
    bfloat16,
    bool,
    device,
    double,
    dtype,
    float,
    float16,
    float32,
    float64,
    half,
    int,
    int8,
    int16,
    int32,
    int64,
    long,
    short,
    tensor,
    uint8,
)
from ._C import is_grad_enabled, is_inference_mode_enabled, layout, strided
from ._ops import ops
from . import _tensor  # noqa: F401 - installs the Python-level Tensor methods
from . import autograd
from .autograd import enable_grad, inference_mode, no_grad, set_grad_enabled

# pyo3 names the extension type `switchyard.Tensor` at the C level, which Python prints in its
# own messages; PyTorch's says `Tensor` (`unsupported operand type(s) for +: 'Tensor' and 'str'`).
# Setting `__name__` of a heap type resets that C name; `__module__` stays "switchyard".
Tensor.__name__ = "Tensor"

__all__ = [
    "Size",
    "Tensor",
    "arange",
    "autograd",
    "bfloat16",
    "bool",
    "device",
    "double",
    "dtype",
    "enable_grad",
    "float",
    "float16",
    "float32",
    "float64",
    "full",
    "half",
    "inference_mode",
    "int",
    "int8",
    "int16",
    "int32",
    "int64",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "layout",
    "long",
    "no_grad",
    "ones",
    "ops",
    "set_grad_enabled",
    "short",
    "strided",
    "tensor",
    "uint8",
    "zeros",
]


def _size(size):
    """``zeros(2, 3)`` and ``zeros((2, 3))`` alike: the sizes as a list."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return list(size[0])
    return list(size)


def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


# The factories below are written over ``ops.aten`` until the generated bindings (plan step 4)
# give them PyTorch's argument parser.


def zeros(*size, dtype=None, device=None, requires_grad=False):
    """A tensor of zeros of the given size (``zeros(2, 3)`` or ``zeros((2, 3))``)."""
    return _finish(ops.aten.zeros.default(_size(size), dtype=dtype, device=device), requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False):
    """A tensor of ones of the given size."""
    return _finish(ops.aten.ones.default(_size(size), dtype=dtype, device=device), requires_grad)


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False):
    """A tensor of ``size`` filled with ``fill_value`` (dtype inferred from it if not given)."""
    return _finish(
        ops.aten.full.default(list(size), fill_value, dtype=dtype, device=device), requires_grad
    )


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """``arange(end)``, ``arange(start, end)``, ``arange(start, end, step)``: int64 if every
    bound is an integer, else the default float dtype."""
    if end is None:
        t = ops.aten.arange.default(start, dtype=dtype, device=device)
    else:
        t = ops.aten.arange.start_step(start, end, step, dtype=dtype, device=device)
    return _finish(t, requires_grad)
