"""``switchyard._lazy``: the lazy device, as ``torch._lazy``. Operators on tensors on
``device="lazy"`` record a graph; ``mark_step()`` compiles it (or takes it from the cache) and
runs it. Initialise the backend first with ``switchyard._lazy.ts_backend.init()`` (PyTorch's
spelling; switchyard's backend is its own compiler, not TorchScript)."""

from .. import _C
from . import debug, metrics, ts_backend  # noqa: F401

__all__ = ["mark_step", "wait_device_ops", "sync_multi", "to_cpu", "get_graph_hash", "metrics", "ts_backend"]


def mark_step(device: str = "", wait: bool = False):
    """Runs the pending graph of every live lazy tensor (one compiled program, cached by the
    graph's structure) and replaces each tensor's recorded operations by its data."""
    _C._mark_step()
    if wait:
        wait_device_ops()


def wait_device_ops(devices=None):
    """Waits for pending device work (switchyard executes synchronously)."""
    _C._wait_device_ops()


def sync_multi(tensors, devices=None):
    """Runs the pending graph of ``tensors`` only."""
    _C._sync_multi(list(tensors))


def to_cpu(tensors, devices=None):
    """The tensors copied to the CPU (their pending graph runs first)."""
    return [t.to("cpu") for t in tensors]


def get_graph_hash(tensors):
    """The hash (hex) of the graph syncing ``tensors`` would run, ``None`` if nothing is
    pending."""
    return _C._graph_hash(list(tensors))
