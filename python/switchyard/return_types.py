"""``switchyard.return_types``: the named tuples some operators return (``max``, ``sort``,
``topk``, ...), as ``torch.return_types``: tuples whose items are also fields
(``switchyard.max(x, 1).values``). The classes are made by the extension, one per
``RETURN_TYPES`` entry of the generated signature tables; ``<name>_out`` is the class of the
out= form.
"""

from . import _C

globals().update(_C._return_types)

__all__ = sorted(_C._return_types)
