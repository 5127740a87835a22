"""``switchyard.library``: define operators and register Python kernels with the dispatcher,
as ``torch.library`` does.

    lib = Library("myns", "DEF")
    lib.define("foo(Tensor x, int n=1) -> Tensor")
    lib.impl("foo", lambda x, n=1: x * n, "CPU")
    switchyard.ops.myns.foo(t, 3)

A kernel receives the operator's arguments as Python objects (positional ones by position,
keyword-only ones by keyword; trailing arguments equal to their defaults left out, as PyTorch
does) and returns what the schema returns. ``with_keyset=True`` passes the call's
``DispatchKeySet`` first; a fallback also receives the ``OpOverload`` (after the keyset), and
``op.redispatch(keyset, *args, **kwargs)`` calls below a key. Registrations last until
``_destroy()``, which also runs when the library is garbage-collected and at exit.
"""

import atexit
import weakref

from . import _C
from ._C import DispatchKeySet, OpOverload, _ExcludeDispatchKeyGuard, _IncludeDispatchKeyGuard

__all__ = ["Library", "DispatchKeySet", "fallthrough_kernel"]

_live = weakref.WeakSet()


def fallthrough_kernel():
    """A dummy kernel standing for "fall through to the next key" (``torch.library``'s)."""
    raise NotImplementedError("fallthrough_kernel() should never be called.")


class Library:
    """A block of registrations: ``kind`` is ``"DEF"`` (owns namespace ``ns``), ``"FRAGMENT"``
    (adds definitions to it) or ``"IMPL"`` (kernels for ``dispatch_key``, or for the key each
    ``impl`` names)."""

    def __init__(self, ns, kind, dispatch_key=""):
        if kind not in ("IMPL", "DEF", "FRAGMENT"):
            raise ValueError("Unsupported kind: ", kind)
        if ns in ("prim",) and kind in ("DEF",):
            raise ValueError(ns, " is a reserved namespace. Please try creating a library with another name.")
        self.m = _C._Library(kind, ns, dispatch_key)
        self.ns = ns
        self.kind = kind
        self.dispatch_key = dispatch_key
        self._op_defs = set()
        _live.add(self)

    def __repr__(self):
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})>"

    def define(self, schema, alias_analysis="", *, tags=()):
        """Defines an operator by its schema string; returns its name."""
        if alias_analysis not in ["", "FROM_SCHEMA", "CONSERVATIVE"]:
            raise RuntimeError(f"Invalid alias_analysis type {alias_analysis}")
        if self.m is None:
            raise AssertionError("Library object has been destroyed")
        name = self.m.define(schema, alias_analysis)
        self._op_defs.add(f"{self.ns}::{name}")
        return name

    def impl(self, op_name, fn, dispatch_key="", *, with_keyset=False, allow_override=True):
        """Registers ``fn`` as the kernel of ``op_name`` (a name or an ``OpOverload``) at
        ``dispatch_key`` (default: the library's)."""
        if not callable(fn):
            raise TypeError(f"Input function is required to be a callable but found type {type(fn)}")
        if self.m is None:
            raise AssertionError("Library object has been destroyed")
        if dispatch_key == "":
            dispatch_key = self.dispatch_key
        if isinstance(op_name, OpOverload):
            name = op_name.name()
            ns, _, rest = name.partition("::")
            if ns != self.ns and self.kind != "IMPL":
                pass
            op_name = name if ns != self.ns else rest
        if fn is fallthrough_kernel:
            raise NotImplementedError("registering a fallthrough from Python is not supported yet")
        self.m.impl_(op_name, fn, dispatch_key, with_keyset)

    def fallback(self, fn, dispatch_key="", *, with_keyset=False):
        """Registers ``fn`` as the fallback of ``dispatch_key``, called as
        ``fn([keyset,] op, *args, **kwargs)``. Only in libraries of namespace ``"_"``."""
        if dispatch_key == "":
            dispatch_key = self.dispatch_key
        if self.ns != "_":
            raise RuntimeError(
                f"""Fallback can only be registered using library fragment on the global namespace "_" but it is {self.ns}"""
            )
        if dispatch_key == "":
            raise AssertionError("dispatch_key must not be empty for fallback")
        if self.m is None:
            raise AssertionError("Library object has been destroyed")
        self.m.fallback(fn, dispatch_key, with_keyset)

    def _destroy(self):
        """Undoes every registration of this library and releases its functions."""
        if self.m is not None:
            self.m._destroy()
        self.m = None
        _live.discard(self)

    def __del__(self):
        m = getattr(self, "m", None)
        if m is not None:
            m._destroy()


def _redispatch(self, keyset, *args, **kwargs):
    """Calls the operator from the highest key of ``keyset`` (below the caller's key when the
    caller removed its own)."""
    return _C._redispatch(self, keyset, *args, **kwargs)


OpOverload.redispatch = _redispatch


@atexit.register
def _destroy_all():
    # Kernels must not call into Python while the interpreter shuts down.
    for lib in list(_live):
        lib._destroy()
