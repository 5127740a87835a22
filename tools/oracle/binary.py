"""Record PyTorch's answers for the binary pointwise operators (add, sub, mul, div, comparisons,
logical/bitwise ops, remainder, fmod, pow, maximum, minimum, atan2, where, clamp) in every
overload ops.yaml declares. Run with the reference PyTorch:

    /tmp/torchref/bin/python tools/oracle/binary.py > crates/cpu/tests/fixtures/binary.json

A case names the operator overload ("add.Tensor", "div_.Scalar_mode", "eq.Tensor_out") and
gives every schema argument in order (out= tensors included), encoded as in
linalg_common.py plus {"str": s} for strings and {"none": null} for None. The test calls the
overload through the dispatcher's boxed API with exactly these arguments."""
import json
import os
import sys
import warnings

import torch

sys.path.insert(0, os.path.dirname(__file__))
from linalg_common import ALL, FLOATS, enc, make, record, scalar  # noqa: E402

warnings.simplefilter("ignore")
torch.manual_seed(0)
aten = torch.ops.aten
cases = []
INTS = ["uint8", "int8", "int16", "int32", "int64"]


class S:
    """A Scalar argument."""

    def __init__(self, v):
        self.v = v


class Str:
    def __init__(self, v):
        self.v = v


def overload(name):
    base, _, ov = name.partition(".")
    return getattr(getattr(aten, base), ov or "default")


def encode(a):
    if a is None:
        return None, {"none": None}
    if isinstance(a, S):
        return a.v, scalar(a.v)
    if isinstance(a, Str):
        return a.v, {"str": a.v}
    if isinstance(a, tuple):  # (tensor, spec) from make()
        return a
    raise TypeError(a)


def case(name, op, *args):
    """`args`: every schema argument in order (tensors from make(), S(..) scalars, Str(..),
    None). Keyword-only arguments are passed by name, as Python does."""
    fn = overload(op)
    schema = fn._schema.arguments
    assert len(schema) == len(args), (op, len(schema), len(args))
    vals, specs = zip(*[encode(a) for a in args]) if args else ((), ())
    pos = [v for v, s in zip(vals, schema) if not s.kwarg_only]
    kw = {s.name: v for v, s in zip(vals, schema) if s.kwarg_only}
    mutated = [v for v, s in zip(vals, schema) if s.alias_info is not None and s.alias_info.is_write]
    record(cases, name, lambda: (fn(*pos, **kw), mutated)[0], op=op, args=list(specs))


def t(dt, sizes, **kw):
    return make(dt, sizes, **kw)


def fresh(spec_fn):
    """Each call makes a new tensor (in-place and out= cases mutate their arguments)."""
    return spec_fn()


def standard(base, ov, extra=(), dtypes=ALL, scalar_ov=None, scalar_vals=(S(2), S(-1.5), S(True)),
             inplace=None, out=None, low=-3, high=3):
    """The usual coverage of a binary Tensor overload `base.ov` with trailing `extra` args."""
    op = f"{base}.{ov}" if ov else base
    ex = list(extra)
    r = dict(low=low, high=high)
    for dt in dtypes:
        case(f"{op} {dt}", op, t(dt, [3, 4], **r), t(dt, [3, 4], **r), *ex)
    for a, b in [("int64", "float32"), ("uint8", "int8"), ("bool", "int32"), ("float16", "bfloat16"),
                 ("int16", "float64"), ("bool", "float16")]:
        case(f"{op} {a}x{b}", op, t(a, [2, 3], **r), t(b, [2, 3], **r), *ex)
    case(f"{op} 0-dim float64 with int32", op, t("int32", [4], **r), t("float64", [], **r), *ex)
    case(f"{op} 0-dim int64 with float16", op, t("float16", [4], **r), t("int64", [], **r), *ex)
    case(f"{op} 0-dim float64 with float32", op, t("float32", [4], **r), t("float64", [], **r), *ex)
    case(f"{op} 0-dim both", op, t("int32", [], **r), t("float32", [], **r), *ex)
    case(f"{op} broadcast", op, t("float32", [3, 1], **r), t("float32", [4], **r), *ex)
    case(f"{op} broadcast int", op, t("int64", [2, 1, 3], **r), t("int64", [4, 1], **r), *ex)
    case(f"{op} transposed", op, t("float32", [3, 4], strides=[1, 3], **r), t("float32", [3, 4], **r), *ex)
    case(f"{op} sliced", op, t("int32", [3, 4], strides=[10, 2], offset=1, **r), t("int32", [3, 4], strides=[0, 1], **r), *ex)
    case(f"{op} expanded f16", op, t("float16", [3, 4], strides=[0, 1], **r), t("float16", [3, 4], strides=[1, 3], **r), *ex)
    case(f"{op} empty", op, t("float32", [0, 3], **r), t("float32", [3], **r), *ex)
    case(f"{op} bad broadcast", op, t("float32", [3, 4], **r), t("float32", [3], **r), *ex)
    if scalar_ov:
        sop = f"{base}.{scalar_ov}"
        for dt in ["bool", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64"]:
            for s in scalar_vals:
                case(f"{sop} {dt} {s.v!r}", sop, t(dt, [5], **r), s, *ex)
    if inplace:
        iop = f"{base}_.{inplace}" if inplace != "-" else f"{base}_"
        case(f"{iop} float32", iop, t("float32", [3, 4], **r), t("float32", [4], **r), *ex)
        case(f"{iop} int64", iop, t("int64", [3, 4], **r), t("int64", [3, 4], **r), *ex)
        case(f"{iop} float16 by float64 0-dim", iop, t("float16", [3, 4], **r), t("float64", [], **r), *ex)
        case(f"{iop} int64 by float32 (cast error)", iop, t("int64", [3, 4], **r), t("float32", [3, 4], **r), *ex)
        case(f"{iop} float32 by int64", iop, t("float32", [3, 4], **r), t("int64", [3, 4], **r), *ex)
        case(f"{iop} broadcast error", iop, t("float32", [1, 4], **r), t("float32", [3, 4], **r), *ex)
        case(f"{iop} transposed self", iop, t("float32", [3, 4], strides=[1, 3], **r), t("float32", [3, 4], **r), *ex)
    if out:
        oop = f"{base}.{out}"
        case(f"{oop} float32", oop, t("float32", [3, 4], **r), t("float32", [3, 4], **r), *ex, t("float32", [3, 4]))
        case(f"{oop} resize empty", oop, t("int64", [3, 4], **r), t("int64", [4], **r), *ex, t("int64", [0]))
        case(f"{oop} resize nonempty", oop, t("float64", [2, 4], **r), t("float64", [4], **r), *ex, t("float64", [5]))
        case(f"{oop} int into float64", oop, t("int32", [3, 4], **r), t("int64", [3, 4], **r), *ex, t("float64", [3, 4]))
        case(f"{oop} float into int64", oop, t("float32", [3, 4], **r), t("float32", [3, 4], **r), *ex, t("int64", [3, 4]))
        case(f"{oop} transposed out", oop, t("float32", [3, 4], **r), t("float32", [3, 4], **r), *ex, t("float32", [3, 4], strides=[1, 3]))


A1 = [S(1)]

# --- add / sub -----------------------------------------------------------------------------
for base in ("add", "sub"):
    standard(base, "Tensor", A1, scalar_ov="Scalar", scalar_vals=(S(2), S(-1.5), S(True)),
             inplace="Tensor", out="out")
    for dt in ALL:
        case(f"{base}.Tensor {dt} alpha=2", f"{base}.Tensor", t(dt, [5]), t(dt, [5]), S(2))
        case(f"{base}.Tensor {dt} alpha=0.5", f"{base}.Tensor", t(dt, [5]), t(dt, [5]), S(0.5))
        case(f"{base}.Tensor {dt} alpha=True", f"{base}.Tensor", t(dt, [5]), t(dt, [5]), S(True))
    case(f"{base}.Tensor int8 alpha overflow", f"{base}.Tensor", t("int8", [5]), t("int8", [5]), S(1000))
    case(f"{base}.Tensor int out float alpha", f"{base}.out", t("int32", [5]), t("int32", [5]), S(0.5), t("float32", [5]))
    case(f"{base}.Tensor float16 alpha=3.25", f"{base}.Tensor", t("float16", [7]), t("float16", [7]), S(3.25))
    case(f"{base}.Scalar float32 alpha=-2", f"{base}.Scalar", t("float32", [5]), S(1.5), S(-2))
    case(f"{base}_.Scalar int64", f"{base}_.Scalar", t("int64", [5]), S(7), S(2))
    case(f"{base}_.Scalar int64 by float", f"{base}_.Scalar", t("int64", [5]), S(7.5), S(1))
    case(f"{base}.Scalar_out", f"{base}.Scalar_out", t("int64", [5]), S(3), S(2), t("int64", [5]))
    case(f"{base}.Scalar bool by bool", f"{base}.Scalar", t("bool", [5]), S(True), S(True))
    case(f"{base}.Tensor int64 wrap", f"{base}.Tensor", t("int64", [2], values=[2**62, -2**62]), t("int64", [2], values=[2**62, 2**62]), S(3))
case("add.Tensor uint8 wrap", "add.Tensor", t("uint8", [3], values=[250, 3, 128]), t("uint8", [3], values=[10, 255, 128]), S(1))
case("add.Tensor inf nan", "add.Tensor", t("float32", [4], values=[float("inf"), float("nan"), -0.0, 1e38]),
     t("float32", [4], values=[float("-inf"), 1.0, -0.0, 1e38]), S(1))

# --- mul -----------------------------------------------------------------------------------
standard("mul", "Tensor", scalar_ov="Scalar", inplace="Tensor", out="out")
case("mul_.Scalar int64", "mul_.Scalar", t("int64", [5]), S(3))
case("mul_.Scalar bool by bool", "mul_.Scalar", t("bool", [5]), S(False))
case("mul_.Scalar int64 by float", "mul_.Scalar", t("int64", [5]), S(0.5))
case("mul.Scalar_out", "mul.Scalar_out", t("float32", [5]), S(0.5), t("float32", [5]))
case("mul.Tensor int32 wrap", "mul.Tensor", t("int32", [2], values=[2**30, -7]), t("int32", [2], values=[8, 2**29]))

# --- div -----------------------------------------------------------------------------------
NZ = dict(low=1, high=5)
standard("div", "Tensor", scalar_ov="Scalar", inplace="Tensor", out="out")
case("div_.Scalar float32", "div_.Scalar", t("float32", [5]), S(4))
case("div_.Scalar int64 (cast error)", "div_.Scalar", t("int64", [5]), S(4))
case("div.Scalar_out", "div.Scalar_out", t("float64", [5]), S(3), t("float64", [5]))
case("div.Tensor by zero float", "div.Tensor", t("float32", [4], values=[1.0, -1.0, 0.0, -0.0]), t("float32", [4], values=[0.0, 0.0, 0.0, -0.0]))
case("div.Tensor int by zero", "div.Tensor", t("int64", [3], values=[1, -1, 0]), t("int64", [3], values=[0, 0, 0]))
for mode in (None, "trunc", "floor"):
    m = Str(mode) if mode else None
    standard("div", "Tensor_mode", [m], scalar_ov="Scalar_mode", scalar_vals=(S(2), S(-1.5), S(True)),
             inplace="Tensor_mode", out="out_mode", **NZ)
    vals = [7.0, -7.0, 7.5, -7.5, 0.0, -0.0, 1.0, -1.0, float("inf"), float("nan"), 5.0, -5.0]
    dvs = [2.0, 2.0, -2.0, -2.0, 3.0, 3.0, 0.0, 0.0, 2.0, 1.0, float("inf"), float("inf")]
    for dt in FLOATS:
        case(f"div.Tensor_mode {mode} {dt} edge", "div.Tensor_mode", t(dt, [12], values=vals), t(dt, [12], values=dvs), m)
    for dt in INTS:
        iv = [7, -7, 7, -7, 0, 5, 6, -6]
        idv = [2, 2, -2, -2, 3, -3, 3, -3]
        if dt == "uint8":
            iv, idv = [7, 200, 9, 0], [2, 3, 10, 4]
        case(f"div.Tensor_mode {mode} {dt} signs", "div.Tensor_mode", t(dt, [len(iv)], values=iv), t(dt, [len(idv)], values=idv), m)
        case(f"div.Tensor_mode {mode} {dt} by zero", "div.Tensor_mode", t(dt, [3], values=[1, 2, 3]), t(dt, [3], values=[1, 0, 1]), m)
    case(f"div.Scalar_mode {mode} int64 by 0", "div.Scalar_mode", t("int64", [3]), S(0), m)
    case(f"div.Scalar_mode {mode} float32 by 0", "div.Scalar_mode", t("float32", [3], values=[1.0, -1.0, 0.0]), S(0), m)
    case(f"div_.Scalar_mode {mode} int64", "div_.Scalar_mode", t("int64", [5]), S(2), m)
    case(f"div_.Scalar_mode {mode} float16", "div_.Scalar_mode", t("float16", [5]), S(-2.5), m)
case("div.Tensor_mode bad mode", "div.Tensor_mode", t("float32", [3]), t("float32", [3]), Str("round"))
case("div.Scalar_mode bad mode", "div.Scalar_mode", t("float32", [3]), S(2), Str("ceil"))

# --- comparisons ---------------------------------------------------------------------------
for base in ("eq", "ne", "lt", "le", "gt", "ge"):
    standard(base, "Tensor", scalar_ov="Scalar", scalar_vals=(S(1), S(0.5), S(True)),
             inplace="Tensor", out="Tensor_out", low=-2, high=2)
    nan = float("nan")
    case(f"{base}.Tensor nan inf", f"{base}.Tensor", t("float32", [5], values=[nan, 1.0, float("inf"), -0.0, nan]),
         t("float32", [5], values=[nan, nan, float("inf"), 0.0, 1.0]))
    case(f"{base}.Scalar int8 by 1000", f"{base}.Scalar", t("int8", [3], values=[-24, 0, 100]), S(1000))
    case(f"{base}.Scalar int by 2.5", f"{base}.Scalar", t("int64", [4], values=[1, 2, 3, 4]), S(2.5))
    case(f"{base}_.Scalar float16", f"{base}_.Scalar", t("float16", [5]), S(0))
    case(f"{base}.Scalar_out float", f"{base}.Scalar_out", t("int32", [5]), S(0), t("float32", [5]))

# --- logical --------------------------------------------------------------------------------
for base in ("logical_and", "logical_or", "logical_xor"):
    for dt in ALL:
        case(f"{base} {dt}", base, t(dt, [3, 4], low=-1, high=1), t(dt, [3, 4], low=-1, high=1))
    case(f"{base} mixed", base, t("float32", [3, 1], low=-1, high=1), t("int64", [4], low=-1, high=1))
    case(f"{base} nan", base, t("float64", [3], values=[float("nan"), 0.0, -0.0]), t("float64", [3], values=[1.0, float("nan"), 1.0]))
    case(f"{base} transposed", base, t("int32", [3, 4], strides=[1, 3], low=-1, high=1), t("bool", [4]))
    case(f"{base} empty", base, t("float32", [0, 2]), t("float32", [2]))
    case(f"{base}_ float32", f"{base}_", t("float32", [3, 4], low=-1, high=1), t("int32", [4], low=-1, high=1))
    case(f"{base}_ int8", f"{base}_", t("int8", [3, 4], low=-1, high=1), t("bool", [3, 4]))
    case(f"{base}.out float64", f"{base}.out", t("int32", [3, 4], low=-1, high=1), t("float32", [3, 4], low=-1, high=1), t("float64", [3, 4]))
    case(f"{base}.out resize", f"{base}.out", t("int32", [3, 4], low=-1, high=1), t("int32", [4], low=-1, high=1), t("bool", [0]))

# --- bitwise --------------------------------------------------------------------------------
for base in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    standard(base, "Tensor", dtypes=["bool"] + INTS + FLOATS, scalar_ov="Scalar",
             scalar_vals=(S(5), S(-1), S(True), S(1.5)), inplace="Tensor", out="Tensor_out", low=-50, high=50)
    for dt in ["bool", "uint8", "int64"]:
        case(f"{base}.Scalar_Tensor {dt}", f"{base}.Scalar_Tensor", S(6), t(dt, [4], low=-9, high=9))
    case(f"{base}.Scalar_Tensor float", f"{base}.Scalar_Tensor", S(6), t("float32", [4]))
    case(f"{base}_.Scalar int32", f"{base}_.Scalar", t("int32", [5], low=-40, high=40), S(12))
    case(f"{base}_.Scalar bool", f"{base}_.Scalar", t("bool", [5]), S(True))
    case(f"{base}.Scalar_out int16", f"{base}.Scalar_out", t("int16", [5], low=-40, high=40), S(-3), t("int16", [5]))

# --- maximum / minimum / clamp_min.Tensor / clamp_max.Tensor / atan2 ------------------------
nanv = [float("nan"), 1.0, -0.0, 0.0, float("inf"), 2.0]
nanw = [1.0, float("nan"), 0.0, -0.0, float("nan"), -float("inf")]
for base, ov, inplace, out in (("maximum", "", None, "out"), ("minimum", "", None, "out"),
                               ("clamp_min", "Tensor", "Tensor", "Tensor_out"),
                               ("clamp_max", "Tensor", "Tensor", "Tensor_out"),
                               ("atan2", "", "-", "out")):
    standard(base, ov, inplace=inplace, out=out)
    op = f"{base}.{ov}" if ov else base
    for dt in FLOATS:
        case(f"{op} {dt} nan", op, t(dt, [6], values=nanv), t(dt, [6], values=nanw))

# --- remainder / fmod -----------------------------------------------------------------------
for base in ("remainder", "fmod"):
    standard(base, "Tensor", scalar_ov="Scalar", scalar_vals=(S(3), S(-2), S(1.5), S(True)),
             inplace="Tensor", out="Tensor_out", low=1, high=7)
    vals = [7.0, -7.0, 7.5, -7.5, 0.0, -0.0, 1.0, float("inf"), float("nan"), 5.0, -5.0, 3.0]
    dvs = [3.0, 3.0, -2.0, -2.0, 3.0, -3.0, 0.0, 2.0, 1.0, float("inf"), float("inf"), -3.0]
    for dt in FLOATS:
        case(f"{base}.Tensor {dt} signs", f"{base}.Tensor", t(dt, [12], values=vals), t(dt, [12], values=dvs))
    for dt in INTS:
        iv, idv = ([7, -7, 7, -7, 0, 6], [3, 3, -3, -3, -3, -3]) if dt != "uint8" else ([7, 200, 9], [3, 7, 10])
        case(f"{base}.Tensor {dt} signs", f"{base}.Tensor", t(dt, [len(iv)], values=iv), t(dt, [len(idv)], values=idv))
        case(f"{base}.Tensor {dt} by zero", f"{base}.Tensor", t(dt, [3], values=[1, 2, 3]), t(dt, [3], values=[1, 0, 1]))
    case(f"{base}_.Scalar int64", f"{base}_.Scalar", t("int64", [5]), S(-2))
    case(f"{base}_.Scalar int64 by 0", f"{base}_.Scalar", t("int64", [5]), S(0))
    case(f"{base}.Scalar_out float64", f"{base}.Scalar_out", t("float64", [5]), S(-1.25), t("float64", [5]))
for dt in ["int64", "float32", "bool"]:
    case(f"remainder.Scalar_Tensor {dt}", "remainder.Scalar_Tensor", S(7), t(dt, [4], low=1, high=5))

# --- pow ------------------------------------------------------------------------------------
standard("pow", "Tensor_Tensor", inplace="Tensor", out="Tensor_Tensor_out", low=0, high=3)
for dt in INTS:
    case(f"pow.Tensor_Tensor {dt} negative exponents", "pow.Tensor_Tensor", t(dt, [6], values=[1, 2, 0, 3, 5, 1] if dt == "uint8" else [1, -1, -1, 2, 0, -2]),
         t(dt, [6], values=[3, 2, 0, 4, 3, 7] if dt == "uint8" else [-3, -3, -2, -1, 2, 5]))
pbase = [2.0, -2.0, 0.0, -0.0, 0.5, float("inf"), -float("inf"), float("nan"), 1.0, 3.0]
for e in (0, 1, 2, 3, -2, 0.5, -0.5, -1, 2.5, -1.5, True, False, 1.0, 0.0):
    for dt in ALL:
        vals = pbase if dt in FLOATS else ([1, 2, 0, 3, 5] if dt in ("uint8", "bool") else [1, -1, 2, 0, -3])
        if dt == "bool":
            vals = [True, False, True]
        case(f"pow.Tensor_Scalar {dt} {e!r}", "pow.Tensor_Scalar", t(dt, [len(vals)], values=vals), S(e))
case("pow.Tensor_Scalar int8 overflow exponent", "pow.Tensor_Scalar", t("int8", [3]), S(1000))
case("pow.Tensor_Scalar int strided", "pow.Tensor_Scalar", t("int32", [3, 4], strides=[1, 3]), S(3))
case("pow_.Scalar float32", "pow_.Scalar", t("float32", [5]), S(2))
case("pow_.Scalar int64 by float (error)", "pow_.Scalar", t("int64", [5]), S(2.5))
case("pow_.Scalar int64 by -1 (error)", "pow_.Scalar", t("int64", [5]), S(-1))
case("pow.Tensor_Scalar_out", "pow.Tensor_Scalar_out", t("float64", [5]), S(3), t("float64", [5]))
case("pow.Tensor_Scalar_out wrong dtype", "pow.Tensor_Scalar_out", t("int64", [5]), S(2.5), t("int64", [5]))
for b in (2, 1, 1.0, 2.5, -1, True, 0):
    for dt in ("int64", "float32", "float16", "bool", "uint8"):
        case(f"pow.Scalar {b!r} {dt}", "pow.Scalar", S(b), t(dt, [5], low=0, high=3))
case("pow.Scalar_out", "pow.Scalar_out", S(3), t("int32", [4], low=0, high=3), t("int32", [4]))
case("pow.Scalar_out float out", "pow.Scalar_out", S(3), t("int32", [4], low=0, high=3), t("float32", [4]))
case("pow.Scalar_out base 1", "pow.Scalar_out", S(1), t("float32", [4]), t("float64", [2]))

# --- clamp ----------------------------------------------------------------------------------
cv = [float("nan"), -3.0, -1.0, 0.0, 1.0, 2.5, 7.0, float("inf")]
for dt in ALL:
    vals = cv if dt in FLOATS else ([0, 1, 3, 5, 9] if dt == "uint8" else [-5, -1, 0, 2, 4])
    if dt == "bool":
        vals = [True, False]
    x = lambda: t(dt, [len(vals)], values=vals)
    case(f"clamp {dt} min max", "clamp", x(), S(-1), S(2))
    case(f"clamp {dt} min only", "clamp", x(), S(0), None)
    case(f"clamp {dt} max only", "clamp", x(), None, S(1))
    case(f"clamp {dt} float bounds", "clamp", x(), S(-0.5), S(1.5))
    case(f"clamp {dt} min > max", "clamp", x(), S(3), S(1))
    case(f"clamp_min {dt}", "clamp_min", x(), S(1))
    case(f"clamp_max {dt} float", "clamp_max", x(), S(0.5))
    case(f"clamp {dt} bool bounds", "clamp", x(), S(False), S(True))
case("clamp no bounds", "clamp", t("float32", [3]), None, None)
case("clamp nan bound", "clamp", t("float32", [8], values=cv), S(float("nan")), S(1))
case("clamp int8 overflow bound", "clamp", t("int8", [3]), S(1000), None)
case("clamp_ int64 float bound (error)", "clamp_", t("int64", [5]), S(0.5), S(2))
case("clamp_ float32", "clamp_", t("float32", [8], values=cv), S(-1), S(1))
case("clamp_min_ int32", "clamp_min_", t("int32", [5]), S(0))
case("clamp_max_ int32 by float (error)", "clamp_max_", t("int32", [5]), S(0.5))
case("clamp.out", "clamp.out", t("float32", [3, 4]), S(-1), S(1), t("float32", [3, 4]))
case("clamp.out int float bound", "clamp.out", t("int32", [3, 4]), S(-1.5), None, t("float32", [3, 4]))
case("clamp.out int float bound wrong out", "clamp.out", t("int32", [3, 4]), S(-1.5), None, t("int32", [3, 4]))
case("clamp.out strided", "clamp.out", t("float64", [3, 4], strides=[1, 3]), S(-1), S(1), t("float64", [0]))
case("clamp_min.out", "clamp_min.out", t("int64", [5]), S(-1), t("int64", [5]))
case("clamp_max.out", "clamp_max.out", t("float16", [5]), S(0.25), t("float16", [5]))
for dt in ALL:
    case(f"clamp.Tensor {dt}", "clamp.Tensor", t(dt, [3, 4]), t(dt, [4], low=-3, high=0), t(dt, [3, 1], low=0, high=3))
    case(f"clamp.Tensor {dt} min only", "clamp.Tensor", t(dt, [3, 4]), t(dt, [4]), None)
    case(f"clamp.Tensor {dt} max only", "clamp.Tensor", t(dt, [3, 4]), None, t(dt, [4]))
case("clamp.Tensor none", "clamp.Tensor", t("float32", [3]), None, None)
case("clamp.Tensor nan", "clamp.Tensor", t("float32", [8], values=cv), t("float32", [8], values=[0.0, float("nan")] * 4), t("float32", [8], values=[1.0] * 8))
case("clamp.Tensor min > max", "clamp.Tensor", t("float32", [8], values=cv), t("float32", [8], values=[3.0] * 8), t("float32", [8], values=[1.0] * 8))
case("clamp.Tensor promotes", "clamp.Tensor", t("int32", [3, 4]), t("float32", [4]), t("int64", [3, 1]))
case("clamp.Tensor 0-dim bounds", "clamp.Tensor", t("float16", [3, 4]), t("float64", []), t("float64", []))
case("clamp_.Tensor float32", "clamp_.Tensor", t("float32", [3, 4]), t("float32", [4]), t("float32", [4]))
case("clamp_.Tensor int by float (error)", "clamp_.Tensor", t("int32", [3, 4]), t("float32", [4]), None)
case("clamp.Tensor_out", "clamp.Tensor_out", t("float32", [3, 4]), t("float32", [4]), None, t("float32", [0]))
case("clamp_min_.Tensor", "clamp_min_.Tensor", t("float32", [3, 4]), t("float32", [4]))
case("clamp_max_.Tensor", "clamp_max_.Tensor", t("int64", [3, 4]), t("int64", [4]))

print(json.dumps({"torch_version": torch.__version__, "cases": cases}, separators=(",", ":")))
