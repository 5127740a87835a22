"""``switchyard.nn``: modules, parameters, layers, ``functional`` and ``init``, with PyTorch's
names and behaviour (``torch.nn``)."""

from . import functional, init
from .layers import *  # noqa: F401,F403
from .layers import __all__ as _layers
from .module import Module
from .parameter import Buffer, Parameter

__all__ = ["Module", "Parameter", "Buffer", "functional", "init", *_layers]
