"""``switchyard._lazy.debug``: the pending IR of lazy tensors, as ``torch._lazy.debug``."""

from .. import _C

__all__ = ["dump_ir", "render_ir_graph"]


def dump_ir(tensors, ir_format):
    """The IR that syncing ``tensors`` would run, as ``"text"`` or ``"dot"`` (Graphviz)."""
    return _C._dump_ir(list(tensors), ir_format)


def render_ir_graph(tensors):
    """The IR of ``tensors`` as a Graphviz graph."""
    return dump_ir(tensors, "dot")
