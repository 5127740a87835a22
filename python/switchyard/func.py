"""``switchyard.func``: function transforms, as ``torch.func``. ``functionalize(f)`` runs ``f``
with its in-place and out= operators (and, with ``remove="mutations_and_views"``, its views)
replaced by functional ones, writing the mutations of its inputs back afterwards."""

import functools

from . import _C
from ._C import Tensor

__all__ = ["functionalize"]

_REMOVE = ("mutations", "mutations_and_views")


def _flatten(obj):
    """The leaves of nested lists, tuples and dicts, and how to rebuild them."""
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        specs, leaves = [], []
        for item in obj:
            sub_leaves, sub_spec = _flatten(item)
            leaves.extend(sub_leaves)
            specs.append((len(sub_leaves), sub_spec))
        return leaves, (type(obj), specs)
    if isinstance(obj, dict):
        keys = list(obj)
        leaves, spec = _flatten([obj[k] for k in keys])
        return leaves, (dict, keys, spec)
    return [obj], None


def _unflatten(leaves, spec):
    if spec is None:
        return leaves[0]
    if spec[0] is dict:
        _, keys, inner = spec
        return dict(zip(keys, _unflatten(leaves, inner)))
    kind, specs = spec
    out, at = [], 0
    for n, sub in specs:
        out.append(_unflatten(leaves[at : at + n], sub))
        at += n
    return kind(out)


def functionalize(func, *, remove="mutations"):
    """``func`` as a program without mutations (``remove="mutations"``) or also without views
    (``"mutations_and_views"``); calling it gives ``func``'s results and leaves its tensor
    arguments changed as ``func`` changes them."""
    if remove not in _REMOVE:
        raise RuntimeError(
            f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}."
            " Valid options are:\n     remove='mutations': all inplace and out= operators will be removed"
            " from the program, and replaced with their out-of-place equivalents.\n"
            "     remove='mutations_and_views': In addition to the above, all aliasing operators {view}"
            " will be replaced with their non-aliasing counterparts, {view}_copy.\n"
        )

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        leaves, spec = _flatten((args, kwargs))
        positions = [i for i, leaf in enumerate(leaves) if isinstance(leaf, Tensor)]
        result = {}

        def inner(tensors):
            new = list(leaves)
            for i, t in zip(positions, tensors):
                new[i] = t
            call_args, call_kwargs = _unflatten(new, spec)
            out = func(*call_args, **call_kwargs)
            out_leaves, out_spec = _flatten(out)
            result["leaves"], result["spec"] = out_leaves, out_spec
            return [leaf for leaf in out_leaves if isinstance(leaf, Tensor)]

        outputs = iter(_C._functionalize(inner, [leaves[i] for i in positions], remove))
        out_leaves = [next(outputs) if isinstance(leaf, Tensor) else leaf for leaf in result["leaves"]]
        return _unflatten(out_leaves, result["spec"])

    return wrapped
