"""The oracle's cases, generated from the schemas of every ops.yaml overload.

Each case is JSON data: ``{"id", "op", "overload", "args", "kwargs", "values"}`` where
``args``/``kwargs`` hold ``argspec`` values and ``values`` is False when the outputs' values
are undefined (``empty``-like factories), so only their metadata is compared. Both libraries
call ``<lib>.ops.aten.<op>.<overload>(*args, **kwargs)`` with objects built from the same data.

Arguments are filled by name and type (``fill``); ``OVERRIDES`` gives the arguments that carry
structural constraints (shapes of matrix products and convolutions, indices in range, sizes
that fit), and the generic rules fill the rest. Variants: the dtypes float32, float64, int64,
bool (+ float16, bfloat16 for pointwise and reduction operators) on contiguous (2, 3)
tensors; float32 (int64 for bitwise operators) also transposed (``t``), step-2 sliced,
``expand``ed (stride 0), broadcast (later tensors (3,)), 0-dim and empty (0, 3); for several
tensor inputs, later ones int64 (``mixed``), 0-dim float64 (``mixed0d``) or a Python number
(``number``, int64 first input); for pointwise and reduction operators NaN/±inf/±0
(``special``) and (4, 33) inputs (``large``); argument variants (``dim=0``, ``keepdim``,
``dtype``, a bare int for ``int[N]``, float scalars with int64 tensors, loss options...);
out= overloads with empty, transposed and wrongly shaped out tensors.

Random operators (``RANDOM``) run only with arguments whose results do not depend on the
generator: switchyard has no ``manual_seed`` yet.
"""

import functools
import hashlib
import json
import re

import switchyard

from .argspec import FLOATING, Gen
from .schema import parse_schema, yaml_overloads, yaml_tags

SKIP = object()  # leave the argument to its default


class Unmapped(Exception):
    """An argument that neither the generic rules nor an override can fill."""


# Out dtypes of the generic out= tensors (the others take the case's dtype).
BOOL_OUT = {"all", "any", "eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf", "isfinite",
            "logical_and", "logical_or", "logical_xor", "logical_not"}
INDEX_OUT = {"argmax", "argmin", "nonzero"}
UNINITIALIZED = {"empty", "empty_like", "empty_strided", "new_empty_strided"}


def _scalar(dt, f=1.5, i=2, b=True):
    return b if dt == "bool" else (f if dt in FLOATING else i)


def _perm_index(g, rows, cols, high):
    """int64 indices (rows, cols), distinct within each row, in [0, high)."""
    data = [g.rng.sample(range(high), cols) for _ in range(rows)]
    return {"tensor": data, "dtype": "int64"}


# ---------------------------------------------------------------------------------------
# OVERRIDES: key -> fn(g) -> {argument name: value}; the generic rules fill the others.
# For each of the name, the name without a trailing "_" and without "_copy", the keys tried
# are "name.overload", "name.<overload without _out/out>" and "name". ``g.dt`` and ``g.kind``
# are the case's dtype and kind.
# ---------------------------------------------------------------------------------------


def _norm_args(g):
    # PyTorch's native_batch_norm.out reads uninitialized memory when its save_mean /
    # save_invstd need resizing and the input is not contiguous: sized outs there.
    outs = {"out": g.zeros([2, 3, 4]), "save_mean": g.zeros([3]),
            "save_invstd": g.zeros([3])} if g.kind == "slice" else {}
    return outs | {"input": g.T([2, 3, 4]), "weight": g.tensor([3]), "bias": g.tensor([3]),
            "running_mean": g.tensor([3]), "running_var": g.tensor([3], low=0.5, high=2),
            "training": True, "momentum": 0.1, "eps": 1e-5, "cudnn_enabled": False,
            "use_input_stats": True}


def _pool(g):
    return {"self": g.T([1, 2, 4, 4]), "kernel_size": [2, 2]}


def _dim_size(g):
    """The size of (2, 3) along the case's dim (1 unless the dim=0 variant)."""
    return 2 if (g.tweak or {}).get("dim") == 0 else 3


def _scatter_index(g):
    """(2, 2) indices with no two writes to one place: distinct within a row for dim 1,
    within a column for dim 0 (scatter's result is undefined for repeated targets)."""
    if _dim_size(g) == 2:
        first = g.rng.sample(range(2), 2)
        return {"tensor": [first, first[::-1]], "dtype": "int64"}
    return _perm_index(g, 2, 2, 3)


def _scatter(g):
    return {"self": g.T([2, 3]), "dim": 1, "index": _scatter_index(g),
            "src": g.T([2, 3]), "value": _scalar(g.dt), "reduce": "add"}


def _fq(g):
    return {"self": g.T([2, 3]), "observer_on": {"tensor": [1], "dtype": "int64"},
            "fake_quant_on": {"tensor": [1], "dtype": "int64"},
            "running_min": {"tensor": [-1.0], "dtype": "float32"},
            "running_max": {"tensor": [1.0], "dtype": "float32"},
            "scale": {"tensor": [0.1], "dtype": "float32"},
            "zero_point": {"tensor": [0], "dtype": "int32"},
            "averaging_const": 0.01, "quant_min": 0, "quant_max": 255, "ch_axis": 0}


def _index_put(g):
    # Rows 1 and 0 (distinct: without accumulate, repeated indices have no defined result),
    # each set from a (3,) values tensor (broadcast); the accumulate variant adds.
    return {"self": g.T([2, 3]), "indices": [{"tensor": [1, 0], "dtype": "int64"}],
            "values": g.tensor([3]), "accumulate": False}


_VIEW_DTYPE = {"float32": "int32", "float64": "int64", "int64": "float64"}

OVERRIDES = {
    "_fused_moving_avg_obs_fq_helper.out": lambda g: _fq(g) | {
        "out0": g.zeros([0]), "out1": g.zeros([0], "bool")},
    "native_dropout.out": lambda g: {"p": 0.5, "train": False, "out0": g.zeros([0]),
                                     "out1": g.zeros([0], "bool")},
    "split_copy.Tensor_out": lambda g: {"split_size": 2, "dim": -1,
                                        "out": [g.zeros([2, 2]), g.zeros([2, 1])]},
    "view_copy.dtype_out": lambda g: {"dtype": g.dtype(_VIEW_DTYPE.get(g.dt, "uint8")),
                                      "out": g.zeros([0], _VIEW_DTYPE.get(g.dt, "uint8"))},
    "_batch_norm_impl_index": _norm_args,
    "batch_norm": _norm_args,
    "instance_norm": _norm_args,
    "native_batch_norm": _norm_args,
    "_native_batch_norm_legit": _norm_args,
    "_native_batch_norm_legit_functional": _norm_args,
    "_native_batch_norm_legit_no_training": _norm_args,
    "_fused_moving_avg_obs_fq_helper": _fq,
    "_fused_moving_avg_obs_fq_helper_functional": _fq,
    "fused_moving_avg_obs_fake_quant": _fq,
    "_index_put_impl": _index_put,
    "index_put": _index_put,
    "index.Tensor": lambda g: {"self": g.T([2, 3]),
                               "indices": [{"tensor": [1, 0, 1], "dtype": "int64"}]},
    "index.Tensor_out": lambda g: {"self": g.T([2, 3]),
                                   "indices": [{"tensor": [1, 0, 1], "dtype": "int64"}]},
    "_unsafe_view": lambda g: {"size": [3, 2]},
    "view": lambda g: {"size": [3, 2]} if g.kind != "empty" else {"size": [3, -1]},
    "view.dtype": lambda g: {"dtype": g.dtype(_VIEW_DTYPE.get(g.dt, "uint8"))},
    "reshape": lambda g: {"shape": [-1]},
    "arange": lambda g: {"end": 5, "start": 1, "step": 1},
    "arange.start_step": lambda g: {"start": 0, "end": 2, "step": 0.5},
    "arange.start_out": lambda g: {"start": 0, "end": 2, "step": 0.5},
    "linspace": lambda g: {"start": 0, "end": 1, "steps": 5},
    "as_strided": lambda g: {"self": g.T([2, 3]), "size": [2, 2], "stride": [1, 2],
                             "storage_offset": 1},
    "as_strided_scatter": lambda g: {"self": g.T([2, 3]), "src": g.tensor([2, 2]),
                                     "size": [2, 2], "stride": [1, 2], "storage_offset": 1},
    "avg_pool2d": _pool,
    "max_pool2d": _pool,
    "max_pool2d_with_indices": _pool,
    "addmm": lambda g: {"self": g.T([2, 2]), "mat1": g.T([2, 3]), "mat2": g.T([3, 2])},
    "baddbmm": lambda g: {"self": g.T([2, 2, 2]), "batch1": g.T([2, 2, 3]),
                          "batch2": g.T([2, 3, 2])},
    "bmm": lambda g: {"self": g.T([2, 2, 3]), "mat2": g.T([2, 3, 4])},
    "mm": lambda g: {"self": g.T([2, 3]), "mat2": g.T([3, 4])},
    "matmul": lambda g: {"self": g.T([2, 3]), "other": g.T([3, 4])},
    "dot": lambda g: {"self": g.T([3]), "tensor": g.T([3])},
    "linear": lambda g: {"input": g.T([2, 3]), "weight": g.T([4, 3]), "bias": g.tensor([4])},
    "bernoulli": lambda g: {"self": {"tensor": [[0.0, 1.0, 1.0], [0.0, 0.0, 1.0]],
                                     "dtype": g.dt}, "p": 1.0},
    "bernoulli.Tensor": lambda g: {"self": g.T([2, 3]),
                                   "p": {"tensor": [[0.0, 1.0, 1.0], [0.0, 0.0, 1.0]],
                                         "dtype": "float32"}},
    "bernoulli.Tensor_out": lambda g: {"self": g.T([2, 3]),
                                       "p": {"tensor": [[0.0, 1.0, 1.0], [0.0, 0.0, 1.0]],
                                             "dtype": "float32"}},
    "bernoulli_.Tensor": lambda g: {"self": g.T([2, 3]),
                                    "p": {"tensor": [[0.0, 1.0, 1.0], [0.0, 0.0, 1.0]],
                                          "dtype": "float32"}},
    "bernoulli_.float": lambda g: {"self": g.T([2, 3]), "p": 0.0},
    "block_diag": lambda g: {"tensors": [g.T([2, 3]), g.T([1, 2])]},
    "cat": lambda g: {"tensors": [g.primary(), g.primary()], "dim": 0},
    "stack": lambda g: {"tensors": [g.primary(), g.primary()], "dim": 0},
    "chunk": lambda g: {"chunks": 2, "dim": -1},
    "clamp.Tensor": lambda g: {"min": g.tensor([3], low=-3, high=0),
                               "max": g.tensor([3], low=0, high=3)},
    "clamp.Tensor_out": lambda g: {"min": g.tensor([3], low=-3, high=0),
                                   "max": g.tensor([3], low=0, high=3)},
    "clamp_.Tensor": lambda g: {"min": g.tensor([3], low=-3, high=0),
                                "max": g.tensor([3], low=0, high=3)},
    "clamp_max.Tensor": lambda g: {"max": g.tensor([3], low=0, high=3)},
    "clamp_min.Tensor": lambda g: {"min": g.tensor([3], low=-3, high=0)},
    "clamp_max": lambda g: {"max": 0.5 if g.dt in FLOATING else 1},
    "clamp_min": lambda g: {"min": -0.5 if g.dt in FLOATING else -1},
    "clamp": lambda g: {"min": -0.5 if g.dt in FLOATING else -1,
                        "max": 0.5 if g.dt in FLOATING else 1},
    "constant_pad_nd": lambda g: {"pad": [1, 1]},
    "conv2d": lambda g: {"input": g.T([1, 2, 4, 4]), "weight": g.T([3, 2, 2, 2]),
                         "bias": g.tensor([3])},
    "convolution": lambda g: {"input": g.T([1, 2, 4, 4]), "weight": g.T([3, 2, 2, 2]),
                              "bias": g.tensor([3]), "stride": [1, 1], "padding": [0, 0],
                              "dilation": [1, 1], "transposed": False,
                              "output_padding": [0, 0], "groups": 1},
    "cross_entropy_loss": lambda g: {"self": g.T([2, 3]), "target": g.index([2], 3)},
    "diagonal_scatter": lambda g: {"src": g.tensor([2])},
    "dropout": lambda g: {"p": 0.5, "train": False},
    "native_dropout": lambda g: {"p": 0.5, "train": False},
    "embedding": lambda g: {"weight": g.T([4, 3]), "indices": g.index([2, 2], 4)},
    "empty.memory_format": lambda g: {"size": [2, 3]},
    "empty.out": lambda g: {"size": [2, 3]},
    "empty_strided": lambda g: {"size": [2, 3], "stride": [1, 2]},
    "new_empty_strided": lambda g: {"size": [2, 3], "stride": [1, 2]},
    "expand": lambda g: {"self": g.tensor([3]), "size": [2, 3]},
    "expand_as": lambda g: {"self": g.tensor([3]), "other": g.primary()},
    "eye": lambda g: {"n": 3, "m": 2},
    "fill.Tensor": lambda g: {"value": g.tensor([])},
    "fill_.Tensor": lambda g: {"value": g.tensor([])},
    "flip": lambda g: {"dims": [-1]},
    "full": lambda g: {"size": [2, 3], "fill_value": 1.5},
    "full_like": lambda g: {"fill_value": 2},
    "gather": lambda g: {"self": g.T([2, 3]), "dim": 1,
                         "index": g.index([2, 2], _dim_size(g))},
    "index_select": lambda g: {"self": g.T([2, 3]), "dim": 1,
                               "index": {"tensor": [2, 0, 2], "dtype": "int64"}},
    "layer_norm": lambda g: {"input": g.T([2, 3]), "normalized_shape": [3],
                             "weight": g.tensor([3]), "bias": g.tensor([3])},
    "native_layer_norm": lambda g: {"input": g.T([2, 3]), "normalized_shape": [3],
                                    "weight": g.tensor([3]), "bias": g.tensor([3]),
                                    "eps": 1e-5},
    "masked_fill.Tensor": lambda g: {"value": g.tensor([])},
    "masked_fill_.Tensor": lambda g: {"value": g.tensor([])},
    "movedim.intlist": lambda g: {"source": [0], "destination": [1]},
    "movedim.int": lambda g: {"source": 0, "destination": 1},
    "narrow": lambda g: {"dim": 1, "start": 1, "length": 2},
    "nll_loss": lambda g: {"self": g.T([2, 3]), "target": g.index([2], 3)},
    "nll_loss_nd": lambda g: {"self": g.T([2, 3]), "target": g.index([2], 3)},
    "nll_loss_forward": lambda g: {"self": g.T([2, 3]), "target": g.index([2], 3),
                                   "weight": None, "reduction": 1, "ignore_index": -100},
    "normal": lambda g: {"mean": 1.0, "std": 0.0},
    "normal_": lambda g: {"mean": 1.0, "std": 0.0},
    "normal_functional": lambda g: {"mean": 1.0, "std": 0.0},
    "one_hot": lambda g: {"self": g.index([2, 2], 3), "num_classes": 3},
    "permute": lambda g: {"dims": [1, 0]},
    "rand": lambda g: {"size": [0, 3]},
    "randn": lambda g: {"size": [0, 3]},
    "randint": lambda g: {"size": [2, 3], "high": 1},
    "randint.low": lambda g: {"size": [2, 3], "low": 3, "high": 4},
    "randint.low_generator": lambda g: {"size": [2, 3], "low": 3, "high": 4},
    "rand_like": lambda g: {"self": g.zeros([0, 3])},
    "randn_like": lambda g: {"self": g.zeros([0, 3])},
    "repeat": lambda g: {"repeats": [2, 1]},
    "resize": lambda g: {"size": [3, 2]},
    "roll": lambda g: {"shifts": [1], "dims": [-1]},
    "round.decimals": lambda g: {"decimals": 1},
    "round.decimals_out": lambda g: {"decimals": 1},
    "round_.decimals": lambda g: {"decimals": 1},
    "scatter": _scatter,
    "scatter_add": _scatter,
    "select": lambda g: {"dim": 1, "index": 1},
    "select_scatter": lambda g: {"self": g.T([2, 3]), "src": g.tensor([2]), "dim": 1,
                                 "index": 1},
    "slice": lambda g: {"dim": 1, "start": 0, "end": 3, "step": 2},
    "slice_scatter": lambda g: {"self": g.T([2, 3]), "src": g.tensor([2, 2]), "dim": 1,
                                "start": 0, "end": 3, "step": 2},
    "split": lambda g: {"split_size": 2, "dim": -1},
    "split.sizes": lambda g: {"split_size": [1, 2], "dim": -1},
    "split_with_sizes": lambda g: {"split_sizes": [1, 2], "dim": -1},
    "squeeze": lambda g: {"self": g.T([2, 1, 3]), "dim": 1, "dims": [1]},
    "topk": lambda g: {"k": 2},
    "transpose": lambda g: {"dim0": 0, "dim1": -1},
    "unfold": lambda g: {"dimension": 1, "size": 2, "step": 1},
    "unfold_backward": lambda g: {"grad_in": g.T([2, 2, 2]), "input_sizes": [2, 3], "dim": 1,
                                  "size": 2, "step": 1},
    "uniform": lambda g: {"from": 0.5, "to": 0.5},
    "unsqueeze": lambda g: {"dim": 0},
    "to.device": lambda g: {"device": "cpu", "dtype": g.dtype("float64")},
    "to.dtype": lambda g: {"dtype": g.dtype("float64")},
    "zeros": lambda g: {"size": [2, 3]},
    "ones": lambda g: {"size": [2, 3]},
    "set": lambda g: {"source": g.T([3, 2])},
}
# Operators that also get a case whose first input holds NaN, ±inf and ±0.0 (besides every
# pointwise and reduction operator).
SPECIAL_VALUES = {"sort", "topk", "max", "min", "argmax", "argmin", "amax", "amin", "aminmax",
                  "cumsum", "cumprod", "logsumexp", "softmax", "log_softmax", "_softmax",
                  "_log_softmax", "isnan", "isinf", "isfinite", "nan_to_num", "maximum",
                  "minimum", "clamp", "clamp_min", "clamp_max", "where", "masked_fill",
                  "nonzero", "linalg_vector_norm", "mse_loss", "layer_norm"}

# Operators the harness does not call, with the reason.
NOT_RUN = {
    "_to_cpu": "backend plumbing: moves tensors of an external backend to the CPU",
    "_copy_from": "backend plumbing: the copy hook of external backends (no CPU kernel in "
                  "PyTorch)",
    "_copy_from_and_resize": "backend plumbing: the copy hook of external backends (no CPU "
                             "kernel in PyTorch)",
}
# Names whose outputs depend on the generator: only cases whose values do not are run.
RANDOM = {"bernoulli", "bernoulli_", "rand", "rand_like", "randn", "randn_like", "randint",
          "normal", "normal_", "normal_functional", "uniform", "uniform_", "dropout",
          "dropout_", "native_dropout"}


def _override(name, overload):
    stripped = overload
    for suffix in ("_out", "out"):
        if overload.endswith(suffix):
            stripped = overload[: -len(suffix)] or "default"
            break
    for base in (name, name.rstrip("_"), name.replace("_copy", "").rstrip("_")):
        for key in (f"{base}.{overload}", f"{base}.{stripped}", base):
            if key in OVERRIDES:
                return OVERRIDES[key]
    return None


def fill(name, arg, g, position):
    """The generic value of ``arg`` (``SKIP``: its default)."""
    base, n = arg.base, arg.name
    if base == "Tensor":
        if arg.is_list and arg.written and arg.kwarg_only:
            return [g.zeros([0]) for _ in range(2)]
        if arg.is_list:
            raise Unmapped(arg)
        if arg.written and arg.kwarg_only:
            dt = g.dt
            if name.rstrip("_") in BOOL_OUT:
                dt = "bool"
            elif name in INDEX_OUT or "indices" in n or n == "max_values":
                # max.dim_max's second out (named max_values) holds the indices.
                dt = "int64"
            return g.zeros([0], dt)
        if arg.optional and arg.has_default:
            return SKIP
        if n in ("mask", "condition"):
            return g.mask(g.primary_shape())
        if n in ("index", "indices"):
            raise Unmapped(arg)
        return g.primary(position)
    if arg.has_default:
        return SKIP
    if base == "Scalar":
        if n in ("min",):
            return -0.5 if g.dt in FLOATING else -1
        if n in ("max",):
            return 0.5 if g.dt in FLOATING else 1
        if n in ("other", "value", "fill_value", "self", "exponent"):
            return _scalar(g.dt)
        raise Unmapped(arg)
    if base in ("int", "SymInt"):
        if n == "dim" and not arg.is_list:
            return -1
        if n == "dim" and arg.is_list:
            return [-1]
        if n in ("dim0",):
            return 0
        if n in ("dim1",):
            return 1
        raise Unmapped(arg)
    if base == "bool":
        return n == "unbiased"
    if base == "float":
        if n == "p":
            return 0.5
        if n == "eps":
            return 1e-5
        raise Unmapped(arg)
    if base == "str":
        if n == "rounding_mode":
            return "floor"
        if n == "reduce":
            return "add"
        raise Unmapped(arg)
    if base == "ScalarType":
        return g.dtype("float64")
    if base in ("Generator", "Layout", "MemoryFormat") or (base == "Device" and arg.optional):
        return None
    if base == "Device":
        return "cpu"
    if arg.optional:
        return None
    raise Unmapped(arg)


def _args_of(name, overload, arguments, g, tweak=None):
    override = _override(name, overload)
    g.tweak = tweak
    given = override(g) if override else {}
    given = dict(given)
    if tweak:
        given.update(tweak)
        for k, v in tweak.items():
            if v == "OUT_5":
                given[k] = fill(name, next(a for a in arguments if a.name == k), g, 0)
                given[k] = {"zeros": [5], "dtype": given[k]["dtype"]}
            elif v == "OUT_T":
                given[k] = g.tensor([2, 3], layout="t")
            elif v == "LARGE":
                given[k] = g.tensor([4, 33])
            elif v == "WEIGHT3":
                given[k] = g.tensor([3], low=0.5, high=2)
    values, position = {}, 0
    for arg in arguments:
        if arg.name in given:
            v = given[arg.name]
            if v is SKIP:
                continue
            if arg.type.endswith(("[]", "[]?")) and isinstance(v, int) and arg.base in (
                    "int", "SymInt"):
                # An unsized int[] takes no bare int under torch.ops (int[N] does).
                v = [v]
            values[arg.name] = v
            if arg.base == "Tensor":
                position += 1
            continue
        v = fill(name, arg, g, position)
        if arg.base == "Tensor" and not (arg.written and arg.kwarg_only):
            position += 1
        if v is not SKIP:
            values[arg.name] = v
    args, kwargs, positional = [], {}, True
    for arg in arguments:
        if arg.name not in values:
            positional = False
            continue
        if positional and not arg.kwarg_only:
            args.append(values[arg.name])
        else:
            kwargs[arg.name] = values[arg.name]
    return args, kwargs


def _variants(name, overload, arguments, tags, name_tags):
    """``[(dt, kind, tweak label, tweak)]`` for one overload."""
    tensor_inputs = [a for a in arguments if a.base == "Tensor" and not a.is_list
                     and not (a.written and a.kwarg_only) and not (a.optional and a.has_default)]
    is_out = any(a.written and a.kwarg_only for a in arguments)
    overridden = _override(name, overload) is not None
    dts = ["float32", "float64", "int64", "bool"]
    if tags & {"pointwise", "reduction"} and not is_out:
        dts += ["float16", "bfloat16"]
    kinds = ["t", "slice", "expand", "zerodim", "empty"]
    if len(tensor_inputs) >= 2:
        kinds += ["bcast", "mixed", "mixed0d"]
    if tags & {"pointwise", "reduction"} or name.rstrip("_") in SPECIAL_VALUES:
        # NaN/±inf/±0 inputs; (4, 33) inputs, past vector widths and into loop tails.
        kinds += ["special", "large"]
    if overridden:
        kinds = ["slice"]
    if not tensor_inputs:
        kinds = []
    if is_out:
        kinds = kinds[:1]
    main = "int64" if name.startswith("bitwise") else "float32"
    if is_out:
        dts = [main, "float32" if main == "int64" else "int64"]
    out = [(dt, "contig", "", None) for dt in dts]
    out += [(main, k, "", None) for k in kinds]
    if len(tensor_inputs) >= 2 and not overridden and not is_out:
        out.append(("int64", "number", "", None))
    if is_out:
        outs = [a.name for a in arguments if a.written and a.kwarg_only and not a.is_list]
        if "pointwise" in name_tags and len(outs) == 1 and not overridden:
            # A transposed out of the right shape: written in place, strides kept.
            out.append((main, "contig", "out_t", {outs[0]: "OUT_T"}))
        if len(outs) == 1 and not overridden:
            # A non-empty out of another shape: resized (PyTorch warns), then written.
            out.append((main, "contig", "out_resize", {outs[0]: "OUT_5"}))
        return out
    names = {a.name: a for a in arguments}
    tweaks = []
    if "dim" in names and names["dim"].base == "int":
        tweaks.append(("dim=0", {"dim": [0] if names["dim"].is_list else 0}))
        if re.search(r"\[\d+\]", names["dim"].type):
            tweaks.append(("dim=bare_int", {"dim": 0}))
    if "kernel_size" in names:
        tweaks.append(("kernel=bare_int", {"kernel_size": 2}))
    if "keepdim" in names:
        tweaks.append(("keepdim", {"keepdim": True}))
    if "dtype" in names and names["dtype"].optional:
        tweaks.append(("dtype=float64", {"dtype": {"dtype": "float64"}}))
        if not tensor_inputs:
            tweaks.append(("dtype=int64", {"dtype": {"dtype": "int64"}}))
    if "approximate" in names:
        tweaks.append(("tanh", {"approximate": "tanh"}))
    if "rounding_mode" in names:
        tweaks.append(("trunc", {"rounding_mode": "trunc"}))
    if "reduce" in names and names["reduce"].base == "str":
        tweaks.append(("multiply", {"reduce": "multiply"}))
    if "accumulate" in names:
        tweaks.append(("accumulate", {"accumulate": True}))
    if "training" in names:
        tweaks.append(("eval", {"training": False}))
    if "train" in names:
        tweaks.append(("train_p0", {"train": True, "p": 0.0}))
    if "reduction" in names and names["reduction"].base == "int":
        tweaks.append(("reduction=none", {"reduction": 0}))
        tweaks.append(("reduction=sum", {"reduction": 2}))
    if "ignore_index" in names:
        tweaks.append(("ignore_index=1", {"ignore_index": 1}))
    if name in ("nll_loss", "nll_loss_nd", "nll_loss_forward", "cross_entropy_loss"):
        tweaks.append(("weight", {"weight": "WEIGHT3"}))
    if "label_smoothing" in names:
        tweaks.append(("label_smoothing", {"label_smoothing": 0.1}))
    if "stable" in names:
        tweaks.append(("stable", {"stable": True}))
        tweaks.append(("stable_large", {"stable": True, "self": "LARGE"}))
    if "descending" in names:
        tweaks.append(("descending", {"descending": True}))
    if "ceil_mode" in names:
        tweaks.append(("stride1_pad1", {"stride": [1, 1], "padding": [1, 1]}))
    scalars = [a.name for a in arguments if a.base == "Scalar" and not a.has_default]
    if scalars and tensor_inputs:
        # A float Scalar with an integral tensor (type promotion with a wrapped number).
        out.append(("int64", "contig", "float_scalar", {n: 1.5 for n in scalars}))
    out += [(main, "contig", label, tw) for label, tw in tweaks]
    return out


@functools.cache
def all_cases():
    """Every case, in a fixed order, and the overloads left without one
    (``{(name, overload): reason}``)."""
    tags = yaml_tags()
    cases, unmapped = [], {}
    name_tags = {}
    for (name, _), t in tags.items():
        name_tags.setdefault(name, set()).update(t)
    for name, overload in yaml_overloads():
        if name in NOT_RUN:
            unmapped[(name, overload)] = NOT_RUN[name]
            continue
        schema = str(getattr(getattr(switchyard.ops.aten, name), overload)._schema)
        _, _, arguments, _ = parse_schema(schema)
        for dt, kind, label, tweak in _variants(name, overload, arguments,
                                                tags.get((name, overload), set()),
                                                name_tags.get(name, set())):
            cid = f"{name}.{overload}/{dt}/{kind}" + (f"/{label}" if label else "")
            g = Gen(cid, dt, kind)
            try:
                args, kwargs = _args_of(name, overload, arguments, g, tweak)
            except Unmapped as e:
                unmapped[(name, overload)] = str(e.args[0])
                break
            cases.append({"id": cid, "op": name, "overload": overload, "args": args,
                          "kwargs": kwargs, "values": name not in UNINITIALIZED})
    return cases, unmapped


def case_hash(cases):
    return hashlib.sha256(json.dumps(cases, sort_keys=True).encode()).hexdigest()
