"""``switchyard.ops``: operators by name, as ``torch.ops``.

``switchyard.ops.aten.add`` is the overload packet of ``aten::add`` and
``switchyard.ops.aten.add.Tensor`` one overload; calling either matches the arguments to the
schema as ``torch.ops`` does (``switchyard._C.OpOverload``). Packets are looked up in the
dispatcher on first use, so operators defined at run time appear too.
"""

import types

from . import _C


class _OpNamespace(types.ModuleType):
    """``switchyard.ops.<namespace>``: attribute access finds the operator packet."""

    def __init__(self, name):
        super().__init__("switchyard.ops." + name)
        self.name = name

    def __getattr__(self, op_name):
        if op_name.startswith("__"):
            raise AttributeError(op_name)
        packet = _C._get_packet(self.name, op_name)
        setattr(self, op_name, packet)
        return packet


class _Ops(types.ModuleType):
    """``switchyard.ops``: attribute access gives the namespace (``aten``, ``myns``)."""

    def __init__(self):
        super().__init__("switchyard.ops")

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        namespace = _OpNamespace(name)
        setattr(self, name, namespace)
        return namespace


ops = _Ops()
