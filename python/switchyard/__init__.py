"""switchyard: PyTorch's Python API over switchyard, a tensor runtime in Rust built around a
PyTorch-style operator dispatcher. ``import switchyard as torch`` runs what it covers.

The extension module ``switchyard._C`` holds the ``Tensor`` class, the ``dtype``, ``device`` and
``Size`` objects, ``tensor()`` and the operators by name (``switchyard.ops``); this package
re-exports them and adds what PyTorch writes in Python.
"""

import sys as _sys

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

__all__ = [
    "Size",
    "Tensor",
    "bfloat16",
    "bool",
    "channels_last",
    "channels_last_3d",
    "contiguous_format",
    "device",
    "double",
    "dtype",
    "float",
    "float16",
    "float32",
    "float64",
    "from_dlpack",
    "from_numpy",
    "half",
    "int",
    "int8",
    "int16",
    "int32",
    "int64",
    "layout",
    "long",
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
