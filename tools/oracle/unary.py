"""Record PyTorch's answers for the unary pointwise operators (every overload: functional,
in-place, out=; `round.decimals`, `gelu(approximate=...)`, `nan_to_num(...)`). Run with the
reference PyTorch:

    /tmp/torchref/bin/python tools/oracle/unary.py > crates/cpu/tests/fixtures/unary.json

A case is {"name", "op": "aten::<name>[.<overload>]", "args": [...] (every schema argument in
order, out= last), "expect": {"results": [...], "warned": bool} | {"error": {kind, message}}}.
Arguments are tensor specs (see linalg_common.py), {"f": "0.5"}, {"i": 2}, {"s": "tanh"} or
{"none": null}. A tensor spec may instead be {"dtype", "linspace": [lo, hi, n]}: the 1-d tensor
of `lo + (hi - lo) * i / (n - 1)` computed in double and cast (used for the accuracy sweeps)."""
import json
import math
import os
import sys
import warnings

import torch

sys.path.insert(0, os.path.dirname(__file__))
from linalg_common import ALL, DTYPES, FLOATS, enc, error_spec, make, result_spec  # noqa: E402

aten = torch.ops.aten
cases = []

INTS = ["uint8", "int8", "int16", "int32", "int64"]

# name -> (in-place exists, out= exists, extra argument sets)
FLOAT_OPS = ["exp", "log", "log2", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan",
             "tanh", "sigmoid", "erf", "reciprocal"]
SAME_OPS = ["neg", "abs", "floor", "ceil", "round", "trunc", "sign", "bitwise_not", "silu",
            "relu"]
BOOL_OPS = ["logical_not", "isnan", "isinf", "isfinite"]
NO_INPLACE = {"isnan", "isinf", "isfinite"}
NO_OUT = {"isfinite"}

# Extra (python kwargs, json args) variants per operator; () means no extra arguments.
EXTRAS = {
    "gelu": [({"approximate": "none"}, [{"s": "none"}]), ({"approximate": "tanh"}, [{"s": "tanh"}])],
    "round.decimals": [({"decimals": d}, [{"i": d}]) for d in (1, 2, -1, 3)],
    "nan_to_num": [
        ({"nan": None, "posinf": None, "neginf": None}, [{"none": None}] * 3),
        ({"nan": 1.5, "posinf": 100.0, "neginf": -7.25},
         [{"f": "1.5"}, {"f": "100.0"}, {"f": "-7.25"}]),
        ({"nan": 0.0, "posinf": 1e10, "neginf": None}, [{"f": "0.0"}, {"f": "10000000000.0"}, {"none": None}]),
    ],
}


def all_ops():
    """(name, overload base, extras) for every operator tested."""
    ops = [(n, n, [({}, [])]) for n in FLOAT_OPS + SAME_OPS + BOOL_OPS]
    ops.append(("gelu", "gelu", EXTRAS["gelu"]))
    ops.append(("round.decimals", "round", EXTRAS["round.decimals"]))
    ops.append(("nan_to_num", "nan_to_num", EXTRAS["nan_to_num"]))
    return ops


def overload(base, kind, decimals):
    """The aten overload packet and our operator name for a variant."""
    if kind == "functional":
        pkt, name = getattr(aten, base), base
        ov = "decimals" if decimals else "default"
        return getattr(pkt, ov), f"aten::{name}" + (".decimals" if decimals else "")
    if kind == "inplace":
        pkt = getattr(aten, base + "_")
        ov = "decimals" if decimals else "default"
        return getattr(pkt, ov), f"aten::{base}_" + (".decimals" if decimals else "")
    pkt = getattr(aten, base)
    ov = "decimals_out" if decimals else "out"
    return getattr(pkt, ov), f"aten::{base}.{ov}"


SPECIAL = [float("-inf"), -100.0, -10.5, -3.0, -2.5, -1.5, -0.5, -1e-5, -0.0, 0.0, 1e-5, 0.25,
           0.5, 1.5, 2.5, 3.0, 7.0, 10.5, 88.5, 100.0, float("inf"), float("nan"), 1.0, -1.0,
           0.125, 65504.0, 1e-8]


def special_values(dtype, n=None):
    if dtype == "bool":
        vals = [True, False, True, True, False]
    elif dtype == "uint8":
        vals = [0, 1, 2, 3, 100, 200, 255, 7]
    elif dtype in INTS:
        vals = [-128 if dtype == "int8" else -1000, -3, -2, -1, 0, 1, 2, 3, 100, 127]
        vals = [max(min(v, 127), -128) if dtype == "int8" else v for v in vals]
    else:
        vals = list(SPECIAL) + [round(math.sin(i) * 4, 3) for i in range(13)]
    if n is not None:
        vals = (vals * (n // len(vals) + 1))[:n]
    return vals


def run_case(name, op_name, fn, args_json, out_index=None):
    entry = {"name": name, "op": op_name, "args": args_json}
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = fn()
            entry["expect"] = {"results": [result_spec(r)],
                               "warned": any("resized" in str(x.message) for x in w)}
        except Exception as e:  # noqa: BLE001 - errors are the point
            entry["expect"] = {"error": error_spec(e)}
    cases.append(entry)


def add(name, base, kind, extra, x, xspec, out=None, decimals=False):
    """One call of `base` (variant `kind`) on input `x` with extra kwargs."""
    kw, kwjson = extra
    fn, op_name = overload(base, kind, decimals)
    args = [xspec] + list(kwjson)
    if kind == "functional":
        run_case(name, op_name, lambda: fn(x, **kw), args)
    elif kind == "inplace":
        run_case(name, op_name, lambda: fn(x, **kw), args)
    else:
        o, ospec = out
        run_case(name, op_name, lambda: fn(x, **kw, out=o), args + [ospec])


def input_for(dtype, sizes=(27,), **kw):
    n = 1
    for s in sizes:
        n *= s
    vals = special_values(dtype, max(n, 1) + 8)
    return make(dtype, list(sizes), values=vals, **kw)


def expected_dtype(base, dtype):
    if base in BOOL_OPS:
        return "bool"
    if base in FLOAT_OPS and dtype not in FLOATS:
        return "float32"
    return dtype


for name, base, extras in all_ops():
    decimals = name == "round.decimals"
    for ei, extra in enumerate(extras):
        tag = f"{name}[{ei}]"
        # Every dtype, functional / in-place / out=.
        for dt in ALL:
            x, xs = input_for(dt)
            add(f"{tag} {dt}", base, "functional", extra, x, xs, decimals=decimals)
            if base not in NO_INPLACE:
                x, xs = input_for(dt)
                add(f"{tag}_ {dt}", base, "inplace", extra, x, xs, decimals=decimals)
            if base not in NO_OUT:
                x, xs = input_for(dt)
                od = expected_dtype(base, dt)
                o, os_ = make(od, [0], values=[])
                add(f"{tag}.out {dt}", base, "out", extra, x, xs, out=(o, os_), decimals=decimals)
        if ei > 0:
            continue
        # Layouts: transposed, sliced (step 2 with offset), 0-dim, empty, expanded.
        for dt in ["float32", "int32", "float16"]:
            x, xs = input_for(dt, (3, 4))
            xt = x.t()
            xts = dict(xs, sizes=list(xt.shape), strides=list(xt.stride()))
            add(f"{tag} transposed {dt}", base, "functional", extra, xt, xts, decimals=decimals)
            x, xs = make(dt, [5], strides=[2], offset=1, values=special_values(dt, 12))
            add(f"{tag} sliced {dt}", base, "functional", extra, x, xs, decimals=decimals)
            if base not in NO_INPLACE:
                x, xs = make(dt, [5], strides=[2], offset=1, values=special_values(dt, 12))
                add(f"{tag}_ sliced {dt}", base, "inplace", extra, x, xs, decimals=decimals)
        for dt in ["float32", "int64"]:
            x, xs = make(dt, [], values=special_values(dt, 3)[2:3])
            add(f"{tag} 0-dim {dt}", base, "functional", extra, x, xs, decimals=decimals)
            x, xs = make(dt, [0, 3], values=[])
            add(f"{tag} empty {dt}", base, "functional", extra, x, xs, decimals=decimals)
            x, xs = make(dt, [2, 3], strides=[0, 1], values=special_values(dt, 3))
            add(f"{tag} expanded {dt}", base, "functional", extra, x, xs, decimals=decimals)
        if base in NO_OUT:
            continue
        # out= rules: resize with a warning, transposed out, wrong dtypes.
        for dt in ["float32", "int64", "bool"]:
            od = expected_dtype(base, dt)
            x, xs = input_for(dt, (2, 3))
            o, os_ = make(od, [4], values=special_values(od, 4))
            add(f"{tag}.out resize-warn {dt}", base, "out", extra, x, xs, out=(o, os_), decimals=decimals)
            x, xs = input_for(dt, (2, 3))
            o, os_ = make(od, [3, 2], values=special_values(od, 6))
            o = o.t()
            os_ = dict(os_, sizes=[2, 3], strides=[1, 2])
            add(f"{tag}.out transposed-out {dt}", base, "out", extra, x, xs, out=(o, os_), decimals=decimals)
            for wrong in ["float64", "int64", "float16", "bool", "int16"]:
                if wrong == od:
                    continue
                x, xs = input_for(dt, (2, 3))
                o, os_ = make(wrong, [2, 3], values=special_values(wrong, 6))
                add(f"{tag}.out dtype {dt}->{wrong}", base, "out", extra, x, xs, out=(o, os_), decimals=decimals)
        # In-place on a broadcast-needing self is impossible for unary ops; in-place dtype rule:
        # an integer self for a float op.
        if base not in NO_INPLACE:
            x, xs = input_for("int32", (4,))
            add(f"{tag}_ int32 self", base, "inplace", extra, x, xs, decimals=decimals)

# Accuracy sweeps (f32 / f64 / f16 / bf16) of the floating-point functions.
SWEEPS = {
    "exp": (-105.0, 90.0), "log": (1e-6, 1000.0), "log2": (1e-6, 1000.0), "log1p": (-0.999, 50.0),
    "expm1": (-20.0, 20.0), "sqrt": (0.0, 1e6), "rsqrt": (1e-6, 1e4), "sin": (-50.0, 50.0),
    "cos": (-50.0, 50.0), "tan": (-50.0, 50.0), "tanh": (-10.0, 10.0), "sigmoid": (-30.0, 30.0),
    "erf": (-5.0, 5.0), "reciprocal": (-10.0, 10.0), "silu": (-30.0, 30.0),
}
SWEEP_N = 801


def linspace(dtype, lo, hi, n):
    vals = [lo + (hi - lo) * i / (n - 1) for i in range(n)]
    return torch.tensor(vals, dtype=torch.float64).to(DTYPES[dtype]), {
        "dtype": dtype, "linspace": [enc(lo), enc(hi), n]}


for dt in ["float32", "float64"]:
    for name, (lo, hi) in SWEEPS.items():
        x, xs = linspace(dt, lo, hi, SWEEP_N)
        add(f"sweep {name} {dt}", name, "functional", ({}, []), x, xs)
    for ei, extra in enumerate(EXTRAS["gelu"]):
        x, xs = linspace(dt, -10.0, 10.0, SWEEP_N)
        add(f"sweep gelu[{ei}] {dt}", "gelu", "functional", extra, x, xs)
    for d in (1, 2, -1):
        x, xs = linspace(dt, -50.0, 50.0, SWEEP_N)
        add(f"sweep round.decimals {d} {dt}", "round", "functional", ({"decimals": d}, [{"i": d}]), x, xs, decimals=True)

# Error: bad gelu approximation.
x, xs = input_for("float32", (3,))
add("gelu bad approximate", "gelu", "functional", ({"approximate": "foo"}, [{"s": "foo"}]), x, xs)

json.dump({"torch": torch.__version__, "cases": cases}, sys.stdout, indent=None, separators=(",", ":"))
print()
