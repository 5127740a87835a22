"""Gradients in the per-operator oracle (issue 20, docs/python-plan.md §10.1 "Autograd").

The forward cases of ``cases.py`` are reused: every case with a float32/float64 tensor input
whose forward succeeds under PyTorch (the forward oracle's outcome) is run again with each
floating input a leaf requiring grad. A leaf is the tensor built from the case's data, before
its layout view (``t``, ``slice``, ``expand``), so the gradient also flows through the view;
an argument the operator writes in place (``self`` of ``add_``...) is ``clone`` of its leaf, so
that the in-place formula (not the leaf refusal) is exercised; out= tensors and buffers
(``BUFFERS``: running statistics, observer state) are plain tensors, except in one
``/grad_buffers`` case per such overload, which compares the refusal of a buffer that
requires grad. scatter's ``src`` gets a variant shaped like its index (``/src_like_index``),
as its formula requires. The floating outputs that require grad are
reduced with deterministic weights, ``loss = Σ (out_i * w_i).sum()`` (``w_i`` from the case's
RNG, in the output's shape and dtype), and ``lib.autograd.grad(loss, leaves,
allow_unused=True)`` gives the gradients.

Second order (``SECOND_ORDER`` operators): ``create_graph=True``, then
``grad(Σ (g_j * v_j).sum(), leaves, allow_unused=True)`` over the first-order gradients that
require grad.

An outcome is JSON data: ``{"forward_raises": type, "message"}`` when the call with leaves
raises (out= overloads refuse leaves); else ``{"requires_grad": [indices of the outputs that
require grad], "grad_fn": [each output's grad_fn.name()]}`` and, when some output does,
``"grads"`` (per leaf ``None`` or a tensor record: dtype, shape,
strides, values) or ``"backward_raises"``/``"message"``; for second order also
``"grad_requires_grad"`` and ``"grads2"`` or ``"backward2_raises"``.
"""

import functools
import hashlib
import json
import warnings

from .argspec import Gen
from .cases import all_cases
from .outcome import _close, _dtype_name, _encode_values
from .schema import parse_schema

GRAD_DTYPES = ("float32", "float64")

# Operators whose cases also get a second-order check: pointwise, reductions, matrix
# products, normalisation and losses.
SECOND_ORDER = {
    "sin", "cos", "tan", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "reciprocal",
    "tanh", "sigmoid", "silu", "gelu", "erf", "pow", "mul", "div", "atan2", "abs", "relu",
    "clamp", "where", "maximum", "sum", "mean", "prod", "var", "std", "linalg_vector_norm",
    "logsumexp", "softmax", "log_softmax", "cumsum", "cumprod", "amax", "mm", "bmm",
    "matmul", "addmm", "baddbmm", "dot", "linear", "layer_norm", "mse_loss",
    "cross_entropy_loss", "conv2d",
}
# The second-order subset: these kinds only (contiguous, a view, broadcasting, 0-dim), no
# argument variants, to keep the suite's time down.
SECOND_ORDER_KINDS = {"contig", "t", "bcast", "zerodim"}


@functools.cache
def _schema_arguments(op, overload):
    import switchyard

    schema = str(getattr(getattr(switchyard.ops.aten, op), overload)._schema)
    return parse_schema(schema)[2]


def _floating_data(value):
    """Whether an argspec value holds a float32/float64 tensor."""
    if isinstance(value, list):
        return any(_floating_data(v) for v in value)
    return isinstance(value, dict) and ("tensor" in value or "zeros" in value) and \
        value.get("dtype") in GRAD_DTYPES


# Buffers: inputs PyTorch's formulas declare non-differentiable (running statistics of batch
# norm, observer state of fake quantization). They stay plain tensors, as in real programs;
# the ``/grad_buffers`` variant (first case of each such overload) makes them leaves too, to
# compare the refusal.
BUFFERS = {"running_mean", "running_var", "running_min", "running_max", "scale", "zero_point"}


def _roles(case, buffers=False):
    """``[(value, role)]`` for the positional arguments and ``{name: (value, role)}`` for
    the keyword ones; role ``leaf``, ``inplace`` (a written ``self``) or ``plain``."""
    arguments = _schema_arguments(case["op"], case["overload"])
    positional = [a for a in arguments if not a.kwarg_only]
    by_name = {a.name: a for a in arguments}

    def role(arg):
        if arg is not None and arg.name in BUFFERS and not (buffers and not arg.written):
            return "plain"
        if arg is None or not arg.written:
            return "leaf"
        return "inplace" if arg.name == "self" and not arg.kwarg_only else "plain"

    args = [(v, role(positional[i] if i < len(positional) else None))
            for i, v in enumerate(case["args"])]
    kwargs = {k: (v, role(by_name.get(k))) for k, v in case["kwargs"].items()}
    return args, kwargs


def is_grad_case(case, buffers=False):
    args, kwargs = _roles(case, buffers)
    return any(r != "plain" and _floating_data(v) for v, r in args + list(kwargs.values()))


def _has_buffers(case):
    names = {a.name for a in _schema_arguments(case["op"], case["overload"])
             if not a.written and not a.kwarg_only}
    return bool(names & BUFFERS)


def build_leaves(lib, value, role, leaves):
    """``value`` as objects of ``lib`` (as ``argspec.build``), its floating tensors built as
    leaves requiring grad (appended to ``leaves``) under the layout view."""
    if isinstance(value, list):
        return [build_leaves(lib, v, role, leaves) for v in value]
    if not isinstance(value, dict):
        return value
    aten = lib.ops.aten
    if "zeros" not in value and "tensor" not in value:
        return getattr(lib, value["dtype"])
    dtype = getattr(lib, value["dtype"])
    if "zeros" in value:
        t = aten.zeros.default(value["zeros"], dtype=dtype)
    else:
        t = lib.tensor(value["tensor"], dtype=dtype)
    if role != "plain" and value["dtype"] in GRAD_DTYPES:
        t.requires_grad_()
        leaves.append(t)
        if role == "inplace":
            t = aten.clone.default(t)
    layout = value.get("layout", "contig")
    if layout == "t":
        t = aten.t.default(t)
    elif layout == "slice":
        t = aten.slice.Tensor(t, -1, 0, None, 2)
    elif layout == "expand":
        t = aten.expand.default(t, value["size"])
    return t


def _tensors(lib, value):
    """The tensors of an output, flattened in order."""
    if isinstance(value, lib.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(lib, v)]
    return []


def _weights(lib, rng, t):
    """A tensor of ``t``'s shape and dtype with values in [-1, 1] from ``rng``."""

    def data(shape):
        if not shape:
            return round(rng.uniform(-1, 1), 2)
        return [data(shape[1:]) for _ in range(shape[0])]

    shape = list(t.shape)
    if 0 in shape:
        return lib.ops.aten.zeros.default(shape, dtype=t.dtype)
    return lib.tensor(data(shape), dtype=t.dtype)


def _weighted_sum(lib, rng, tensors):
    aten = lib.ops.aten
    loss = None
    for t in tensors:
        term = aten.sum.default(aten.mul.Tensor(t, _weights(lib, rng, t)))
        loss = term if loss is None else aten.add.Tensor(loss, term)
    return loss


def _encode_grad(g):
    if g is None:
        return None
    values = g
    if getattr(g, "_is_zerotensor", lambda: False)():
        # PyTorch's formulas return some zero gradients as ZeroTensors (storage-less,
        # ``_efficientzerotensor``), whose values cannot be read: they are zeros.
        values = g.new_zeros(g.shape)
    return {"dtype": _dtype_name(g), "shape": list(g.shape), "stride": list(g.stride()),
            "values": _encode_values(values.tolist())}


def _floating(lib, t):
    return t.dtype in (lib.float16, lib.bfloat16, lib.float32, lib.float64)


def second_order(case):
    return case["op"] in SECOND_ORDER and case["id"].count("/") == 2 and \
        case["id"].rsplit("/", 1)[1] in SECOND_ORDER_KINDS


def run_grad(lib, case, order=1):
    """The gradient outcome of ``case`` under ``lib`` (``torch`` or ``switchyard``);
    ``order`` 2 adds second-order gradients, ``"buffers"`` makes buffers leaves too."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _run_grad(lib, case, order)


def _run_grad(lib, case, order):
    aten = lib.ops.aten
    args, kwargs = _roles(case, buffers=order == "buffers")
    leaves = []
    args = [build_leaves(lib, v, r, leaves) for v, r in args]
    kwargs = {k: build_leaves(lib, v, r, leaves) for k, (v, r) in kwargs.items()}
    rng = Gen(case["id"] + "/grad").rng
    try:
        op = getattr(getattr(aten, case["op"]), case["overload"])
        result = op(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - every exception is an outcome
        return {"forward_raises": type(e).__name__, "message": str(e)}
    outputs = _tensors(lib, result)
    requires = [i for i, t in enumerate(outputs) if t.requires_grad]
    out = {"requires_grad": requires,
           "grad_fn": [None if t.grad_fn is None else t.grad_fn.name() for t in outputs]}
    differentiable = [outputs[i] for i in requires if _floating(lib, outputs[i])]
    if not differentiable:
        return out
    try:
        loss = _weighted_sum(lib, rng, differentiable)
        grads = lib.autograd.grad(loss, leaves, allow_unused=True, create_graph=order == 2)
    except Exception as e:  # noqa: BLE001
        out.update(backward_raises=type(e).__name__, message=str(e))
        return out
    out["grads"] = [_encode_grad(g) for g in grads]
    if order == 2:
        live = [g for g in grads if g is not None and g.requires_grad]
        out["grad_requires_grad"] = [g is not None and g.requires_grad for g in grads]
        if live:
            try:
                loss2 = _weighted_sum(lib, rng, live)
                grads2 = lib.autograd.grad(loss2, leaves, allow_unused=True)
            except Exception as e:  # noqa: BLE001
                out.update(backward2_raises=type(e).__name__, message2=str(e))
                return out
            out["grads2"] = [_encode_grad(g) for g in grads2]
    return out


@functools.cache
def grad_cases():
    """``[(grad case id, forward case, order)]``: every case with a floating input whose
    forward succeeds under PyTorch (first order); the ``SECOND_ORDER`` subset again with
    ``order`` 2."""
    from .fixture import expected_outcome

    out, buffers_seen = [], set()
    for case in all_cases()[0]:
        if "raises" in expected_outcome(case):
            continue
        key = (case["op"], case["overload"])
        if _has_buffers(case) and key not in buffers_seen and is_grad_case(case, True):
            buffers_seen.add(key)
            out.append((case["id"] + "/grad_buffers", case, "buffers"))
        if not is_grad_case(case):
            continue
        out.append((case["id"] + "/grad", case, 1))
        if second_order(case):
            out.append((case["id"] + "/grad2", case, 2))
        if case["op"] in SRC_LIKE_INDEX and case["overload"] in ("src", "default"):
            # scatter's src gradient is gather(grad, index): it has the index's shape, so
            # the forward case's (2, 3) src with a (2, 2) index fails PyTorch's own shape
            # check; this variant's src has the index's shape.
            variant = _src_like_index(case)
            out.append((variant["id"] + "/grad", variant, 1))
    return out


SRC_LIKE_INDEX = {"scatter", "scatter_", "scatter_add", "scatter_add_"}


def _src_like_index(case):
    variant = json.loads(json.dumps(case))
    variant["id"] = case["id"] + "/src_like_index"
    names = [a.name for a in _schema_arguments(case["op"], case["overload"])
             if not a.kwarg_only]
    if "src" in variant["kwargs"]:
        src = variant["kwargs"]["src"]
    else:
        src = variant["args"][names.index("src")]
    # Keep the first two columns of the data (the layout's source shape has them first
    # for contig and slice layouts: slice takes every other column of the data).
    if src.get("layout") == "slice":
        src["tensor"] = [row[:4] for row in src["tensor"]]
    else:
        src["tensor"] = [row[:2] for row in src["tensor"]]
    return variant


def grad_case_hash(cases):
    data = [(gid, c, order) for gid, c, order in cases]
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


# -- comparison ---------------------------------------------------------------------------


def _diff_grads(exp, got, path, diffs):
    if len(exp) != len(got):
        diffs.append(f"{path}: {len(exp)} gradients != {len(got)}")
        return
    for i, (e, g) in enumerate(zip(exp, got)):
        where = f"{path}[{i}]"
        if e is None or g is None:
            if e is not g:
                diffs.append(f"{where}: torch {e and 'a tensor'} != ours {g and 'a tensor'}")
            continue
        for key in ("dtype", "shape", "stride"):
            if e[key] != g[key]:
                diffs.append(f"{where}.{key}: torch {e[key]} != ours {g[key]}")
        if e["dtype"] == g["dtype"] and e["shape"] == g["shape"]:
            if not _close(g["values"], e["values"], e["dtype"]):
                diffs.append(f"{where}.values: torch {e['values']} != ours {g['values']}")


def grad_fn_differences(expected, got):
    """The differences between the outputs' ``grad_fn`` names (compared apart from the
    gradients, so that a node's name does not hide its gradients' values)."""
    if "grad_fn" in expected and "grad_fn" in got and expected["grad_fn"] != got["grad_fn"]:
        return [f"grad_fn: torch {expected['grad_fn']} != ours {got['grad_fn']}"]
    return []


def grad_differences(expected, got):
    """The differences between PyTorch's gradient outcome and ours (empty when they agree),
    ``grad_fn`` names apart. Values compare with torch.testing's default tolerances per dtype
    (``outcome.TOLERANCES``), as forward values do: no case needed them loosened."""
    diffs = []
    for key in ("forward_raises", "backward_raises", "backward2_raises"):
        if key in expected or key in got:
            if (expected.get(key), expected.get("message" if key != "backward2_raises"
                                                else "message2")) != \
                    (got.get(key), got.get("message" if key != "backward2_raises"
                                           else "message2")):
                e = expected.get(key), expected.get("message"), expected.get("message2")
                g = got.get(key), got.get("message"), got.get("message2")
                diffs.append(f"{key}: torch {e} != ours {g}")
                return diffs
    for key in ("requires_grad", "grad_requires_grad"):
        if expected.get(key) != got.get(key):
            diffs.append(f"{key}: torch {expected.get(key)} != ours {got.get(key)}")
    for key in ("grads", "grads2"):
        if (key in expected) != (key in got):
            diffs.append(f"{key}: torch {'has' if key in expected else 'has no'} gradients, "
                         f"ours {'has' if key in got else 'has no'}")
        elif key in expected:
            _diff_grads(expected[key], got[key], key, diffs)
    return diffs


# -- PyTorch's outcomes: live or recorded ---------------------------------------------------

FIXTURE = __import__("pathlib").Path(__file__).resolve().parents[1] / "fixtures" / \
    "torch_oracle_grad.json.gz"
RERECORD = ("re-record the gradient oracle: cd python && /tmp/torchref/bin/python -m "
            "tests.oracle.record_grad")


@functools.cache
def recorded():
    import gzip

    return json.loads(gzip.decompress(FIXTURE.read_bytes()))


def expected_grad_outcome(gid, case, order):
    """PyTorch's gradient outcome of a gradient case."""
    from .fixture import torch_or_none

    torch = torch_or_none()
    if torch is not None:
        torch.manual_seed(0)
        return run_grad(torch, case, order)
    outcomes = recorded()["outcomes"]
    if gid not in outcomes:
        raise AssertionError(f"no recorded outcome for {gid}: {RERECORD}")
    return outcomes[gid]
