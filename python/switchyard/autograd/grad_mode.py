"""Grad modes as context managers and decorators, shaped as ``torch/autograd/grad_mode.py``
(and ``torch/utils/_contextlib.py``): each saves this thread's mode on entry and restores it
on exit through ``_C._set_grad_enabled``; ``inference_mode`` holds a ``_C._InferenceMode``.
"""

import functools
import inspect
import warnings

from .. import _C

__all__ = ["enable_grad", "inference_mode", "no_grad", "set_grad_enabled"]


def _wrap_generator(ctx_factory, func):
    """A generator function whose body runs under a fresh context at every resumption (the
    caller's mode is in force between them), as PyTorch's ``_wrap_generator``."""

    @functools.wraps(func)
    def generator_context(*args, **kwargs):
        gen = func(*args, **kwargs)
        try:
            with ctx_factory():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with ctx_factory():
                        gen.close()
                    raise
                except BaseException as e:  # noqa: BLE001 - forwarded into the generator
                    with ctx_factory():
                        response = gen.throw(e)
                else:
                    with ctx_factory():
                        response = gen.send(request)
        except StopIteration as e:
            return e.value

    return generator_context


def context_decorator(ctx_factory, func):
    """``func`` run under ``ctx_factory()`` (a generator function per resumption)."""
    if inspect.isgeneratorfunction(func):
        return _wrap_generator(ctx_factory, func)

    @functools.wraps(func)
    def decorate_context(*args, **kwargs):
        with ctx_factory():
            return func(*args, **kwargs)

    return decorate_context


class _DecoratorContextManager:
    """A context manager that is also a decorator (a new instance per call)."""

    def __call__(self, orig_func):
        if inspect.isclass(orig_func):
            warnings.warn(
                "Decorating classes is deprecated and will be disabled in future versions. "
                "You should only decorate functions or methods. To preserve the current "
                "behavior of class decoration, you can directly decorate the `__init__` "
                "method and nothing else.",
                FutureWarning,
                stacklevel=2,
            )

            def func(*args, **kwargs):
                return orig_func(*args, **kwargs)
        else:
            func = orig_func
        return context_decorator(self.clone, func)

    def __enter__(self):
        raise NotImplementedError

    def __exit__(self, exc_type, exc_value, traceback):
        raise NotImplementedError

    def clone(self):
        return self.__class__()


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """Also a decorator without parentheses (``@no_grad``)."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecoratorContextManager):
    """Operations record no history inside (``with no_grad():`` or ``@no_grad``)."""

    def __init__(self) -> None:
        self.prev = False

    def __enter__(self) -> None:
        self.prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        _C._set_grad_enabled(self.prev)


class enable_grad(_NoParamDecoratorContextManager):
    """Operations record history inside, also within ``no_grad``."""

    def __enter__(self) -> None:
        self.prev = _C.is_grad_enabled()
        _C._set_grad_enabled(True)

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        _C._set_grad_enabled(self.prev)


class set_grad_enabled(_DecoratorContextManager):
    """Sets grad mode to ``mode``: at once when called, and as a context manager or
    decorator for a block."""

    def __init__(self, mode: bool) -> None:
        self.prev = _C.is_grad_enabled()
        self.mode = mode
        _C._set_grad_enabled(mode)

    def __call__(self, orig_func):
        _C._set_grad_enabled(self.prev)
        return super().__call__(orig_func)

    def __enter__(self) -> None:
        _C._set_grad_enabled(self.mode)

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        _C._set_grad_enabled(self.prev)

    def __str__(self) -> str:
        return f"{type(self).__module__}.{type(self).__qualname__}(mode={self.mode})"

    def __repr__(self) -> str:
        return str(self)

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):
    """Inference mode inside: no history, no version counting; tensors made inside are
    inference tensors. ``inference_mode(False)`` leaves it for a block."""

    def __init__(self, mode: bool = True) -> None:
        self.mode = mode

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)

    def __enter__(self) -> None:
        self._inference_mode_context = _C._InferenceMode(self.mode)
        self._inference_mode_context.__enter__()

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        self._inference_mode_context.__exit__(exc_type, exc_value, traceback)

    def clone(self):
        return self.__class__(self.mode)
