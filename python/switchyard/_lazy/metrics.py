"""``switchyard._lazy.metrics``: the lazy backend's counters and timings, as
``torch._lazy.metrics`` (``MarkStep``, ``CachedCompile``, ``UncachedCompile``, ``lazy::<op>``
for traced operators, ``aten::<op>`` for those run eagerly by the fallback, ...)."""

from .. import _C

__all__ = ["reset", "counter_names", "counter_value", "metrics_report"]


def reset():
    """Resets every counter and timing."""
    _C._reset_metrics()


def counter_names():
    """The names of the counters that have counted something."""
    return _C._counter_names()


def counter_value(name: str):
    """A counter's value, ``None`` if it never counted."""
    return _C._counter_value(name)


def metrics_report():
    """Counters and timings as text."""
    return _C._metrics_report()
