"""NumPy and DLPack interop without copies: ``from_numpy``, ``Tensor.numpy``, ``__array__``,
``__dlpack__``, ``__dlpack_device__`` and ``from_dlpack``, with PyTorch's names and signatures.
The work is done in ``switchyard._C`` (``crates/python/src/interop.rs``); this module attaches
the methods to ``Tensor`` as ``torch/_tensor.py`` defines them in Python.
"""

from . import _C
from ._C import Tensor, from_dlpack, from_numpy

__all__ = ["from_dlpack", "from_numpy"]


def numpy(self, *, force=False):
    """The tensor as a NumPy array sharing its memory (``force=True``: detached and copied
    to the CPU first when needed)."""
    return _C.tensor_to_numpy(self, force)


def __array__(self, dtype=None, copy=None):
    # NumPy 2's protocol: ``copy=False`` may not copy, so a dtype change is refused then.
    array = self.numpy()
    if dtype is None:
        return array.copy() if copy else array
    if copy is False and array.dtype != dtype:
        raise ValueError("Unable to avoid copy while creating an array as requested.")
    return array.astype(dtype, copy=bool(copy))


def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    """A DLPack capsule over the tensor's memory (``dltensor_versioned`` when the consumer
    asks for version 1 or later)."""
    return _C.tensor_to_dlpack(self, stream, max_version, dl_device, copy)


def __dlpack_device__(self):
    """``(device_type, device_id)`` in DLPack's codes: ``(1, 0)`` for the CPU."""
    return _C.tensor_dlpack_device(self)


for _name, _fn in [
    ("numpy", numpy),
    ("__array__", __array__),
    ("__dlpack__", __dlpack__),
    ("__dlpack_device__", __dlpack_device__),
]:
    _fn.__qualname__ = f"Tensor.{_name}"
    setattr(Tensor, _name, _fn)
del _name, _fn
