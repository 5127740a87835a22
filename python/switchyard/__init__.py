"""switchyard: PyTorch's Python API over switchyard, a tensor runtime in Rust built around a
PyTorch-style operator dispatcher. ``import switchyard as torch`` runs what it covers.

The extension module ``switchyard._C`` holds the ``Tensor`` class, the ``dtype``, ``device`` and
``Size`` objects, ``tensor()`` and the operators by name (``switchyard.ops``); this package
re-exports them and adds what PyTorch writes in Python.
"""

import builtins as _builtins
import sys as _sys
from typing import TYPE_CHECKING as _TYPE_CHECKING

if _TYPE_CHECKING:
    # The operator functions are set from ``_C``'s tables below; type checkers see them in
    # ``_C.pyi`` (as ``torch/__init__.py`` imports ``_VariableFunctions`` for its checkers).
    from ._C import *  # noqa: F403

from . import _C
from ._C import (
    Size,
    Tensor,
    bfloat16,
    bool,
    channels_last,
    channels_last_3d,
    contiguous_format,
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
    layout,
    long,
    memory_format,
    preserve_format,
    short,
    strided,
    tensor,
    uint8,
)
from ._interop import from_dlpack, from_numpy
from ._ops import ops
from . import return_types

# The operator functions generated from ops.yaml (``add``, ``sum``, ``zeros``, ``arange``, ...),
# each with PyTorch's argument parser (``switchyard._C``'s bindings), as ``torch``'s own.
for _name in _C._torch_function_names:
    globals()[_name] = getattr(_C, _name)
del _name

# ``import switchyard._C._nn`` as ``import torch._C._nn`` works.
_sys.modules[__name__ + "._C._nn"] = _C._nn
_sys.modules[__name__ + "._C._linalg"] = _C._linalg
from ._C import Generator, default_generator, is_grad_enabled, is_inference_mode_enabled
from . import random
from .random import get_rng_state, initial_seed, manual_seed, seed, set_rng_state
from . import _tensor  # noqa: F401 - installs the Python-level Tensor methods
from . import autograd
from .autograd import enable_grad, inference_mode, no_grad, set_grad_enabled
from . import func, nn, optim  # noqa: E402 - after the functions they use


def broadcast_shapes(*shapes):
    """The shape every one of ``shapes`` broadcasts to (``torch.broadcast_shapes``)."""
    result = []
    for shape in shapes:
        shape = (shape,) if isinstance(shape, _builtins.int) else tuple(shape)
        for i, n in enumerate(reversed(shape)):
            if i == len(result):
                result.append(n)
            elif result[i] == 1 or n == result[i]:
                result[i] = n
            elif n != 1:
                raise RuntimeError(
                    f"Shape mismatch: objects cannot be broadcast to a single shape.  Mismatch is between {list(shapes[0]) if len(shapes) else ''} and {list(shape)}."
                )
    return Size(reversed(result))


def broadcast_tensors(*tensors):
    """Views of ``tensors`` expanded to their common shape (``torch.broadcast_tensors``)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(t.expand(shape) for t in tensors)

# pyo3 names the extension type `switchyard.Tensor` at the C level, which Python prints in its
# own messages; PyTorch's says `Tensor` (`unsupported operand type(s) for +: 'Tensor' and 'str'`).
# Setting `__name__` of a heap type resets that C name; `__module__` stays "switchyard".
Tensor.__name__ = "Tensor"

__all__ = [
    "Generator",
    "Size",
    "Tensor",
    "default_generator",
    "get_rng_state",
    "random",
    "seed",
    "set_rng_state",
    "autograd",
    "func",
    "broadcast_shapes",
    "broadcast_tensors",
    "initial_seed",
    "manual_seed",
    "nn",
    "optim",
    "bfloat16",
    "bool",
    "channels_last",
    "channels_last_3d",
    "contiguous_format",
    "device",
    "double",
    "dtype",
    "enable_grad",
    "float",
    "float16",
    "float32",
    "float64",
    "from_dlpack",
    "from_numpy",
    "half",
    "inference_mode",
    "int",
    "int8",
    "int16",
    "int32",
    "int64",
    "layout",
    "long",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "enable_grad",
    "no_grad",
    "set_grad_enabled",
    "memory_format",
    "ops",
    "preserve_format",
    "return_types",
    "short",
    "strided",
    "tensor",
    "uint8",
    *_C._torch_function_names,
]
