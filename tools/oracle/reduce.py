"""Record PyTorch's answers for the reduce operators: sum, mean, max / min (all forms),
amax / amin, argmax / argmin, prod, all / any, std / var / var_mean, softmax / log_softmax
(`_softmax`, `softmax.int` and their out= forms), cumsum / cumprod, linalg_vector_norm.
Run with the reference PyTorch:

    /tmp/torchref/bin/python tools/oracle/reduce.py > crates/cpu/tests/fixtures/reduce.json

Each case names the aten overload it calls (`sum.dim_IntList`, `max.dim_max`, ...), its
arguments (tensor specs from linalg_common.py or typed values: {"i": 3}, {"f": "0.5"},
{"b": true}, {"ints": [1, 2]}, {"none": null}, {"dtype": "float32"}, {"int"/"float": v} for
Scalars), the out= tensors for out overloads, the expected results or error, and the first
warning PyTorch emitted, if any."""
import json
import os
import sys
import warnings

import torch

sys.path.insert(0, os.path.dirname(__file__))
from linalg_common import ALL, DTYPES, FLOATS, enc, make, record, transposed  # noqa: E402

torch.manual_seed(0)
cases = []
aten = torch.ops.aten
INTS = ["uint8", "int8", "int16", "int32", "int64"]


def I(v):
    return (v, {"i": v})


def B(v):
    return (v, {"b": v})


def L(v):
    return (list(v), {"ints": list(v)})


def N():
    return (None, {"none": None})


def D(name):
    return (DTYPES[name], {"dtype": name})


def S(v):
    return (v, {"int": v} if isinstance(v, int) else {"float": enc(float(v))})


# out= keyword names of the multi-output overloads.
OUT_NAMES = {
    "max.dim_max": ["max", "max_values"],
    "min.dim_min": ["min", "min_indices"],
    "var_mean.correction_out": ["out0", "out1"],
}


def case(overload, name, args, out=None, kwargs=None):
    """`overload`: "name.overload" (".default" may be left out); `args`: (value, json) pairs
    in schema order, keyword-only ones in `kwargs` order appended (PyTorch gets them by
    name)."""
    base, _, ov = overload.partition(".")
    fn = getattr(getattr(aten, base), ov or "default")
    kwargs = kwargs or []
    values = [a[0] for a in args]
    kw = {k: a[0] for k, a in kwargs}
    entry = {"op": overload, "args": [a[1] for a in args] + [a[1] for _, a in kwargs]}
    if out is not None:
        entry["out"] = [o[1] for o in out]

    def run():
        if out is None:
            return fn(*values, **kw)
        o = [t[0] for t in out]
        names = OUT_NAMES.get(overload, ["out"])
        fn(*values, **kw, **dict(zip(names, o)))
        return tuple(o) if len(o) > 1 else o[0]

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        record(cases, name, run, **entry)
    msgs = [str(x.message).split(" (Triggered internally")[0] for x in w]
    if msgs:
        cases[-1]["warning"] = msgs[0]


f32 = "float32"

# --- sum -----------------------------------------------------------------------------------
for dt in ALL:
    case("sum", f"sum {dt}", [make(dt, [3, 4])], kwargs=[("dtype", N())])
    case("sum.dim_IntList", f"sum dim 1 {dt}", [make(dt, [3, 4]), L([1]), B(False)], kwargs=[("dtype", N())])
    case("sum.dim_IntList", f"sum dims 0,2 keepdim {dt}", [make(dt, [2, 3, 4]), L([0, 2]), B(True)], kwargs=[("dtype", N())])
    case("sum.dim_IntList", f"sum transposed dim 0 {dt}", [transposed(dt, [5, 6]), L([0]), B(False)], kwargs=[("dtype", N())])
    case("sum.IntList_out", f"sum out {dt}", [make(dt, [3, 4]), L([0]), B(False)], kwargs=[("dtype", N())],
         out=[make(dt if dt != "bool" else "int64", [4])])
case("sum", "sum dtype f64 of int", [make("int32", [5])], kwargs=[("dtype", D("float64"))])
case("sum", "sum dtype int8 of f32", [make(f32, [5])], kwargs=[("dtype", D("int8"))])
case("sum", "sum dtype f16 of f32", [make(f32, [5])], kwargs=[("dtype", D("float16"))])
case("sum", "sum empty", [make(f32, [0, 3])], kwargs=[("dtype", N())])
case("sum", "sum 0-dim", [make(f32, [])], kwargs=[("dtype", N())])
case("sum", "sum bool", [make("bool", [7])], kwargs=[("dtype", N())])
case("sum.dim_IntList", "sum empty list", [make(f32, [2, 3]), L([]), B(True)], kwargs=[("dtype", N())])
case("sum.dim_IntList", "sum None dims", [make(f32, [2, 3]), N(), B(False)], kwargs=[("dtype", N())])
case("sum.dim_IntList", "sum duplicate dims", [make(f32, [2, 3]), L([0, -2]), B(False)], kwargs=[("dtype", N())])
case("sum.dim_IntList", "sum dim out of range", [make(f32, [2, 3]), L([2]), B(False)], kwargs=[("dtype", N())])
case("sum.dim_IntList", "sum 0-dim dim 0", [make(f32, []), L([0]), B(True)], kwargs=[("dtype", N())])
case("sum.dim_IntList", "sum 0-dim dim -1", [make(f32, []), L([-1]), B(False)], kwargs=[("dtype", N())])
case("sum.dim_IntList", "sum 0-dim dim 1", [make(f32, []), L([1]), B(False)], kwargs=[("dtype", N())])
case("sum.dim_IntList", "sum empty dim 1", [make(f32, [0, 3]), L([1]), B(False)], kwargs=[("dtype", N())])
case("sum.dim_IntList", "sum empty dim 0", [make(f32, [0, 3]), L([0]), B(True)], kwargs=[("dtype", N())])
case("sum.dim_IntList", "sum sliced", [make(f32, [4, 3], strides=[6, 2], offset=1), L([1]), B(False)], kwargs=[("dtype", N())])
case("sum.dim_IntList", "sum expanded", [make(f32, [4, 3], strides=[0, 1]), L([0]), B(False)], kwargs=[("dtype", N())])
case("sum.dim_IntList", "sum 4d middle", [make("float64", [2, 3, 4, 5]), L([1, 3]), B(False)], kwargs=[("dtype", N())])
case("sum.dim_IntList", "sum int dtype f32", [make("int64", [3, 4]), L([1]), B(False)], kwargs=[("dtype", D(f32))])
case("sum.dim_IntList", "sum nan inf", [make(f32, [2, 3], values=[1.0, float("nan"), 2.0, float("inf"), float("-inf"), 3.0]), L([1]), B(False)], kwargs=[("dtype", N())])
case("sum.IntList_out", "sum out int into float", [make("int32", [3, 4]), L([1]), B(False)], kwargs=[("dtype", N())], out=[make(f32, [3])])
case("sum.IntList_out", "sum out float into int", [make(f32, [3, 4]), L([1]), B(False)], kwargs=[("dtype", N())], out=[make("int64", [3])])
case("sum.IntList_out", "sum out dtype mismatch", [make(f32, [3, 4]), L([1]), B(False)], kwargs=[("dtype", D("float64"))], out=[make(f32, [3])])
case("sum.IntList_out", "sum out resized", [make(f32, [3, 4]), L([1]), B(True)], kwargs=[("dtype", N())], out=[make(f32, [0])])
case("sum.IntList_out", "sum out transposed", [make(f32, [3, 4, 5]), L([1]), B(False)], kwargs=[("dtype", N())], out=[transposed(f32, [3, 5])])
case("sum.out", "sum.out", [make(f32, [3, 4])], kwargs=[("dtype", N())], out=[make(f32, [])])
case("sum.out", "sum.out int", [make("int16", [3, 4])], kwargs=[("dtype", N())], out=[make("int64", [])])

# --- mean ----------------------------------------------------------------------------------
for dt in ALL:
    case("mean", f"mean {dt}", [make(dt, [3, 4])], kwargs=[("dtype", N())])
    case("mean.dim", f"mean dim 0 {dt}", [make(dt, [3, 4]), L([0]), B(False)], kwargs=[("dtype", N())])
for dt in FLOATS:
    case("mean.dim", f"mean dims keepdim {dt}", [transposed(dt, [4, 6]), L([-1, 0]), B(True)], kwargs=[("dtype", N())])
    case("mean.out", f"mean out {dt}", [make(dt, [3, 4]), L([1]), B(False)], kwargs=[("dtype", N())], out=[make(dt, [3])])
case("mean", "mean int dtype f64", [make("int64", [5])], kwargs=[("dtype", D("float64"))])
case("mean", "mean f32 dtype int", [make(f32, [5])], kwargs=[("dtype", D("int32"))])
case("mean", "mean empty", [make(f32, [0])], kwargs=[("dtype", N())])
case("mean", "mean f32 dtype f64", [make(f32, [5])], kwargs=[("dtype", D("float64"))])
case("mean.dim", "mean duplicate", [make(f32, [2, 3]), L([1, 1]), B(False)], kwargs=[("dtype", N())])
case("mean.dim", "mean None", [make(f32, [2, 3]), N(), B(True)], kwargs=[("dtype", N())])
case("mean.dim", "mean empty dim", [make(f32, [0, 3]), L([0]), B(False)], kwargs=[("dtype", N())])
case("mean.out", "mean out int", [make(f32, [3, 4]), L([1]), B(False)], kwargs=[("dtype", N())], out=[make("int64", [3])])
case("mean.out", "mean out f64 from f32", [make(f32, [3, 4]), L([1]), B(False)], kwargs=[("dtype", N())], out=[make("float64", [3])])
case("mean.out", "mean out int input", [make("int64", [3, 4]), L([1]), B(False)], kwargs=[("dtype", N())], out=[make(f32, [3])])
case("mean.dtype_out", "mean.dtype_out", [make(f32, [3, 4])], kwargs=[("dtype", N())], out=[make(f32, [])])
case("mean.dtype_out", "mean.dtype_out f64", [make(f32, [3, 4])], kwargs=[("dtype", D("float64"))], out=[make("float64", [])])
case("mean.dtype_out", "mean.dtype_out cast error", [make(f32, [3, 4])], kwargs=[("dtype", N())], out=[make("int64", [])])
case("mean.dtype_out", "mean.dtype_out int", [make("int32", [3, 4])], kwargs=[("dtype", N())], out=[make("int64", [])])

# --- max / min / amax / amin / argmax / argmin ------------------------------------------------
NANV = [1.0, float("nan"), 3.0, -2.0, 3.0, float("nan")]
for op in ("max", "min"):
    for dt in ALL:
        case(op, f"{op} {dt}", [make(dt, [3, 4])])
        case(f"{op}.dim", f"{op}.dim 1 {dt}", [make(dt, [3, 4]), I(1), B(False)])
        case(f"{op}.dim", f"{op}.dim 0 keepdim transposed {dt}", [transposed(dt, [4, 5]), I(0), B(True)])
        case(f"amax" if op == "max" else "amin", f"a{op} {dt}", [make(dt, [3, 4]), L([0]), B(False)])
    case(f"{op}.dim", f"{op}.dim ties", [make(f32, [2, 4], values=[1, 3, 3, 0, 2, 2, 2, 2]), I(1), B(False)])
    case(f"{op}.dim", f"{op}.dim nan", [make(f32, [2, 3], values=NANV), I(1), B(False)])
    case(f"{op}.dim", f"{op}.dim nan dim0", [make(f32, [2, 3], values=NANV), I(0), B(False)])
    case(op, f"{op} nan", [make(f32, [6], values=NANV)])
    case(op, f"{op} empty", [make(f32, [0, 3])])
    case(op, f"{op} 0-dim", [make("int32", [])])
    case(f"{op}.dim", f"{op}.dim empty reduced", [make(f32, [0, 3]), I(0), B(False)])
    case(f"{op}.dim", f"{op}.dim empty kept", [make(f32, [0, 3]), I(1), B(False)])
    case(f"{op}.dim", f"{op}.dim 0-dim", [make(f32, []), I(0), B(True)])
    case(f"{op}.dim", f"{op}.dim 0-dim bad", [make(f32, []), I(1), B(True)])
    case(f"{op}.dim", f"{op}.dim out of range", [make(f32, [2, 3]), I(-3), B(True)])
    case(f"{op}.dim", f"{op}.dim sliced", [make("int64", [4, 3], strides=[6, 2], offset=1), I(0), B(False)])
    case(f"{op}.dim", f"{op}.dim 3d middle", [make("float64", [3, 5, 4]), I(1), B(False)])
    case(f"{op}.dim", f"{op}.dim bool", [make("bool", [3, 5]), I(1), B(False)])
    dim_out = f"{op}.dim_{op}"
    case(dim_out, f"{dim_out}", [make(f32, [3, 4]), I(1), B(False)], out=[make(f32, [3]), make("int64", [3])])
    case(dim_out, f"{dim_out} resize", [make(f32, [3, 4]), I(0), B(True)], out=[make(f32, [0]), make("int64", [0])])
    case(dim_out, f"{dim_out} wrong dtype", [make(f32, [3, 4]), I(1), B(False)], out=[make("float64", [3]), make("int64", [3])])
    case(dim_out, f"{dim_out} wrong index dtype", [make(f32, [3, 4]), I(1), B(False)], out=[make(f32, [3]), make("int32", [3])])
    case(f"{op}.unary_out", f"{op}.unary_out", [make(f32, [3, 4])], out=[make(f32, [])])
    case(f"{op}.unary_out", f"{op}.unary_out widen", [make("int32", [3, 4])], out=[make("int64", [])])
    case(f"{op}.unary_out", f"{op}.unary_out cast", [make(f32, [3, 4])], out=[make("int64", [])])
    case(f"{op}.unary_out", f"{op}.unary_out resize", [make(f32, [3, 4])], out=[make(f32, [2])])
    case(f"{op}.unary_out", f"{op}.unary_out empty", [make(f32, [0])], out=[make(f32, [])])
for op in ("argmax", "argmin"):
    for dt in ALL:
        case(op, f"{op} {dt}", [make(dt, [3, 4]), N(), B(False)])
    case(op, f"{op} dim transposed", [transposed(f32, [3, 4]), I(0), B(True)])
    case(op, f"{op} flat transposed", [transposed(f32, [3, 4]), N(), B(False)])
    case(op, f"{op} nan", [make(f32, [6], values=NANV), I(0), B(False)])
    case(op, f"{op} empty", [make(f32, [0]), N(), B(False)])
for op in ("amax", "amin"):
    case(op, f"{op} nan", [make(f32, [2, 3], values=NANV), L([1]), B(False)])
    case(op, f"{op} all", [make(f32, [2, 3]), L([]), B(True)])
    case(op, f"{op} empty", [make(f32, [0, 3]), L([1]), B(False)])
    case(op, f"{op} empty reduced", [make(f32, [0, 3]), L([0]), B(False)])

# --- prod / all / any / cumsum / cumprod / linalg_vector_norm (already landed) ---------------
for dt in ALL:
    case("prod", f"prod {dt}", [make(dt, [2, 3], low=1, high=2)], kwargs=[("dtype", N())])
    case("prod.dim_int", f"prod dim {dt}", [make(dt, [2, 3], low=1, high=2), I(1), B(False)], kwargs=[("dtype", N())])
    case("all", f"all {dt}", [make(dt, [2, 3])])
    case("any.dim", f"any dim {dt}", [make(dt, [2, 3]), I(0), B(False)])
    case("cumsum", f"cumsum {dt}", [make(dt, [3, 4]), I(1)], kwargs=[("dtype", N())])
    case("cumprod", f"cumprod {dt}", [transposed(dt, [3, 4], low=1, high=2), I(0)], kwargs=[("dtype", N())])
for dt in FLOATS:
    case("linalg_vector_norm", f"norm {dt}", [make(dt, [3, 4]), S(2), L([1]), B(False)], kwargs=[("dtype", N())])

# --- std / var / var_mean ------------------------------------------------------------------
for dt in ALL:
    case("var", f"var {dt}", [make(dt, [3, 4]), B(True)])
for dt in FLOATS:
    case("std", f"std {dt}", [make(dt, [3, 4]), B(True)])
    case("var.dim", f"var.dim {dt}", [transposed(dt, [4, 5]), L([0]), B(True), B(False)])
    case("var_mean.correction", f"var_mean {dt}", [make(dt, [3, 4]), L([1])], kwargs=[("correction", N()), ("keepdim", B(False))])
for op in ("std", "var"):
    case(op, f"{op} biased", [make("float64", [7]), B(False)])
    case(f"{op}.dim", f"{op}.dim keepdim", [make(f32, [3, 4, 5]), L([0, 2]), B(True), B(True)])
    case(f"{op}.dim", f"{op}.dim None", [make(f32, [3, 4]), N(), B(False), B(False)])
    case(f"{op}.dim", f"{op}.dim empty list", [make(f32, [3, 4]), L([]), B(True), B(False)])
    case(f"{op}.dim", f"{op}.dim duplicate", [make(f32, [3, 4]), L([1, -1]), B(True), B(False)])
    case(f"{op}.correction", f"{op}.correction 0", [make(f32, [3, 4]), L([1])], kwargs=[("correction", S(0)), ("keepdim", B(False))])
    case(f"{op}.correction", f"{op}.correction 2", [make(f32, [3, 4]), L([1])], kwargs=[("correction", S(2)), ("keepdim", B(True))])
    case(f"{op}.correction", f"{op}.correction 0.5", [make("float64", [3, 4]), N()], kwargs=[("correction", S(0.5)), ("keepdim", B(False))])
    case(f"{op}.correction", f"{op}.correction dof 0", [make(f32, [3, 4]), L([1])], kwargs=[("correction", S(4)), ("keepdim", B(False))])
    case(f"{op}.correction", f"{op}.correction dof < 0", [make(f32, [3, 4]), L([1])], kwargs=[("correction", S(6)), ("keepdim", B(False))])
    case(f"{op}.correction", f"{op}.correction single", [make(f32, [1]), N()], kwargs=[("correction", N()), ("keepdim", B(False))])
    case(f"{op}.correction", f"{op}.correction empty", [make(f32, [0]), N()], kwargs=[("correction", N()), ("keepdim", B(False))])
    case(f"{op}.correction", f"{op}.correction empty dim", [make(f32, [0, 3]), L([1])], kwargs=[("correction", N()), ("keepdim", B(False))])
    case(f"{op}.correction", f"{op}.correction int", [make("int64", [3, 4]), L([1])], kwargs=[("correction", N()), ("keepdim", B(False))])
    case(f"{op}.correction", f"{op}.correction 0-dim", [make("float64", []), N()], kwargs=[("correction", S(0)), ("keepdim", B(False))])
    case(f"{op}.correction", f"{op}.correction nan", [make(f32, [2, 3], values=NANV), L([1])], kwargs=[("correction", N()), ("keepdim", B(False))])
    case(f"{op}.correction", f"{op}.correction sliced", [make("float64", [4, 3], strides=[6, 2], offset=1), L([0])], kwargs=[("correction", N()), ("keepdim", B(False))])
    case(f"{op}.out", f"{op}.out", [make(f32, [3, 4]), L([1]), B(True), B(False)], out=[make(f32, [3])])
    case(f"{op}.out", f"{op}.out resize", [make(f32, [3, 4]), L([1]), B(True), B(True)], out=[make(f32, [5])])
    case(f"{op}.out", f"{op}.out f64 from f32", [make(f32, [3, 4]), L([1]), B(False), B(False)], out=[make("float64", [3])])
    case(f"{op}.out", f"{op}.out f32 from f64", [make("float64", [3, 4]), L([1]), B(False), B(False)], out=[make(f32, [3])])
    case(f"{op}.correction_out", f"{op}.correction_out", [make(f32, [3, 4]), L([0])], kwargs=[("correction", S(0)), ("keepdim", B(False))], out=[make(f32, [4])])
    case(f"{op}.correction_out", f"{op}.correction_out int out", [make(f32, [3, 4]), L([0])], kwargs=[("correction", N()), ("keepdim", B(False))], out=[make("int64", [4])])
case("var_mean", "var_mean", [make(f32, [3, 4]), B(True)])
case("var_mean", "var_mean biased", [make("float64", [3, 4]), B(False)])
case("var_mean.dim", "var_mean.dim", [make(f32, [3, 4, 2]), L([0, 2]), B(True), B(True)])
case("var_mean.dim", "var_mean.dim None", [make(f32, [3, 4]), N(), B(False), B(False)])
case("var_mean.correction", "var_mean.correction 2", [transposed(f32, [4, 5]), L([0])], kwargs=[("correction", S(2)), ("keepdim", B(True))])
case("var_mean.correction", "var_mean.correction dof 0", [make(f32, [3, 4]), L([1])], kwargs=[("correction", S(4)), ("keepdim", B(False))])
case("var_mean.correction", "var_mean.correction empty", [make(f32, [0, 2]), L([0])], kwargs=[("correction", N()), ("keepdim", B(False))])
case("var_mean.correction", "var_mean.correction int", [make("int32", [3, 4]), N()], kwargs=[("correction", N()), ("keepdim", B(False))])
case("var_mean.correction_out", "var_mean.correction_out", [make(f32, [3, 4]), L([1])], kwargs=[("correction", N()), ("keepdim", B(False))], out=[make(f32, [3]), make(f32, [3])])

# --- softmax / log_softmax -----------------------------------------------------------------
for log in (False, True):
    p = "log_softmax" if log else "softmax"
    for dt in ALL:
        case(f"{p}.int", f"{p}.int {dt}", [make(dt, [3, 5]), I(1), N()])
    for dt in FLOATS:
        case(f"_{p}", f"_{p} dim 0 {dt}", [transposed(dt, [4, 6]), I(0), B(False)])
        case(f"_{p}", f"_{p} 3d middle {dt}", [make(dt, [2, 5, 3]), I(1), B(False)])
        case(f"{p}.int", f"{p}.int dtype f32 of {dt}", [make(dt, [3, 5]), I(-1), D(f32)])
    case(f"{p}.int", f"{p}.int int dtype f64", [make("int64", [3, 5]), I(1), D("float64")])
    case(f"{p}.int", f"{p}.int big values", [make(f32, [2, 3], values=[1000.0, 1001.0, 1002.0, -1000.0, float("-inf"), 0.0]), I(1), N()])
    case(f"{p}.int", f"{p}.int all -inf", [make(f32, [1, 3], values=[float("-inf")] * 3), I(1), N()])
    case(f"{p}.int", f"{p}.int nan inf", [make(f32, [2, 3], values=[float("nan"), 1.0, 2.0, float("inf"), 1.0, 2.0]), I(1), N()])
    case(f"{p}.int", f"{p}.int 0-dim", [make(f32, []), I(0), N()])
    case(f"{p}.int", f"{p}.int 0-dim bad", [make(f32, []), I(1), N()])
    case(f"{p}.int", f"{p}.int empty", [make(f32, [0, 3]), I(1), N()])
    case(f"{p}.int", f"{p}.int out of range", [make(f32, [2, 3]), I(2), N()])
    case(f"{p}.int", f"{p}.int long row", [make(f32, [2, 1000]), I(1), N()])
    case(f"{p}.int", f"{p}.int sliced", [make(f32, [4, 3], strides=[6, 2], offset=1), I(1), N()])
    case(f"_{p}", f"_{p} half_to_float", [make("float16", [2, 3]), I(1), B(True)])
    case(f"{p}.int_out", f"{p}.int_out", [make(f32, [3, 5]), I(1), N()], out=[make(f32, [3, 5])])
    case(f"{p}.int_out", f"{p}.int_out transposed", [make(f32, [3, 5]), I(1), N()], out=[transposed(f32, [3, 5])])
    case(f"{p}.int_out", f"{p}.int_out resize", [make(f32, [3, 5]), I(0), N()], out=[make(f32, [0])])
    case(f"{p}.int_out", f"{p}.int_out dtype", [make(f32, [3, 5]), I(1), D("float64")], out=[make("float64", [3, 5])])
    case(f"{p}.int_out", f"{p}.int_out wrong dtype", [make(f32, [3, 5]), I(1), N()], out=[make("float64", [3, 5])])
    case(f"_{p}.out", f"_{p}.out", [make(f32, [3, 5]), I(0), B(False)], out=[make(f32, [3, 5])])

json.dump({"cases": cases}, sys.stdout, indent=None, separators=(",", ":"))
print()
