"""``switchyard._lazy.debug``: the pending IR of lazy tensors, as ``torch._lazy.debug``."""

from .. import _C

__all__ = ["dump_ir", "render_ir_graph"]


def dump_ir(tensors, ir_format):
    """The IR that syncing ``tensors`` would run: ``"text"`` (LTC's IR), ``"backend"`` (the
    program the active backend compiles for it, neither cached nor run) or ``"dot"`` (Graphviz,
    an addition of ours)."""
    return _C._dump_ir(list(tensors), ir_format)


def render_ir_graph(tensors):
    """The IR of ``tensors`` as a Graphviz graph."""
    return dump_ir(tensors, "dot")
