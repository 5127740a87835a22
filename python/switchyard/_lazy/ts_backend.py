"""``switchyard._lazy.ts_backend.init()``: registers the lazy backend (PyTorch's spelling for
its TorchScript backend; switchyard's lowers to its own programs over the CPU kernels)."""

from .. import _C

__all__ = ["init"]


def init():
    """Registers the lazy backend's kernels; idempotent."""
    _C._lazy_init()
