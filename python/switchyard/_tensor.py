"""The methods of ``Tensor`` that PyTorch writes in Python (``torch/_tensor.py``), installed on
the extension type at import: ``__contains__``, ``__reversed__``, ``__format__``."""

from numbers import Number

from . import _C
from ._ops import ops

Tensor = _C.Tensor


def __contains__(self, element, /):
    """Whether ``element`` (a tensor or a number) equals some element of the tensor."""
    if isinstance(element, (Tensor, Number)):
        return bool(ops.aten.any.default(element == self).item())
    raise RuntimeError(
        f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a {type(element)}."
    )


def __reversed__(self):
    """The tensor reversed along dimension 0 (a 0-d tensor is itself)."""
    if self.dim() == 0:
        return self
    return ops.aten.flip.default(self, [0])


def __format__(self, format_spec):
    """A 0-d tensor formats as its value (``f"{t:.2f}"``); others as ``str``."""
    if self.dim() == 0 and not self.is_meta and type(self) is Tensor:
        return self.detach().item().__format__(format_spec)
    return object.__format__(self, format_spec)


def _make_subclass(cls, data, require_grad=False):
    """A ``cls`` object (a ``Tensor`` subclass such as ``nn.Parameter``) around ``data``
    detached: it shares ``data``'s memory, and ``require_grad`` sets its flag."""
    t = Tensor.__new__(cls, data.detach())
    t.requires_grad_(require_grad)
    return t


def _install():
    for f in (__contains__, __reversed__, __format__):
        setattr(Tensor, f.__name__, f)
    Tensor._make_subclass = staticmethod(_make_subclass)


_install()
