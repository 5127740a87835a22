"""``switchyard.nn.Parameter``: a tensor that a ``Module`` registers as one of its parameters."""

from .. import _C
from .._C import Tensor


class Parameter(Tensor):
    """A tensor that is a module parameter: assigning one to a ``Module`` attribute registers
    it, and it requires grad by default. It shares ``data``'s memory (``data`` detached)."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _C.tensor([])
        return Tensor._make_subclass(cls, data, requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, proto):
        return (Parameter, (self.detach(), self.requires_grad))


class Buffer(Tensor):
    """A tensor marked to be registered as a buffer when assigned to a ``Module`` attribute
    (``torch.nn.Buffer``)."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = _C.tensor([])
        t = Tensor._make_subclass(cls, data, data.requires_grad)
        t.persistent = persistent
        return t
