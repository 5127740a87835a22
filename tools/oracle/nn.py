"""Record PyTorch's answers for the nn kernels: mse_loss, nll_loss_forward / nll_loss /
nll_loss_nd / cross_entropy_loss, avg_pool2d, max_pool2d(_with_indices), native_layer_norm /
layer_norm, convolution / conv2d, embedding, one_hot, and the deterministic cases of
native_dropout / dropout. Run with the reference PyTorch:

    /tmp/torchref/bin/python tools/oracle/nn.py > crates/cpu/tests/fixtures/nn.json

Arguments are tensor specs (see linalg_common.py) or typed values: {"i": 3}, {"f": "0.5"},
{"b": true}, {"ints": [1, 2]}, {"none": null}, {"int"/"float"/"bool": v} for Scalars."""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from linalg_common import ALL, FLOATS, enc, make, record, transposed  # noqa: E402

torch.manual_seed(0)
cases = []
aten = torch.ops.aten


def I(v):
    return (v, {"i": v})


def F(v):
    return (v, {"f": enc(float(v))})


def B(v):
    return (v, {"b": v})


def L(v):
    return (list(v), {"ints": list(v)})


def N():
    return (None, {"none": None})


def case(op, name, args, variant="functional", out=None, call=None):
    """`args`: (value, json) pairs in schema order. `call` overrides how PyTorch is called."""
    values = [a[0] for a in args]
    entry = {"op": op, "variant": variant, "args": [a[1] for a in args]}
    if out is not None:
        entry["out"] = [o[1] for o in out]

    def run():
        if call is not None:
            return call(*values)
        if variant == "functional":
            return getattr(aten, op).default(*values)
        if variant == "out":
            overload = getattr(aten, op)
            o = [t[0] for t in out]
            if op == "nll_loss_forward":
                overload.output(*values, output=o[0], total_weight=o[1])
            elif op == "max_pool2d_with_indices":
                overload.out(*values, out=o[0], indices=o[1])
            else:
                overload.out(*values, out=o[0])
            return tuple(o) if len(o) > 1 else o[0]
        raise ValueError(variant)

    record(cases, name, run, **entry)


f = "float32"
L64 = "int64"

# --- mse_loss ------------------------------------------------------------------------------
for dt in ALL:
    for red in (0, 1, 2):
        case("mse_loss", f"mse_loss {dt} reduction={red}", [make(dt, [3, 4]), make(dt, [3, 4]), I(red)])
case("mse_loss", "mse_loss broadcast", [make(f, [3, 4]), make(f, [4]), I(0)])
case("mse_loss", "mse_loss broadcast mean", [make(f, [3, 1]), make(f, [4]), I(1)])
case("mse_loss", "mse_loss promotes", [make(f, [3, 4]), make("float64", [4]), I(1)])
case("mse_loss", "mse_loss int and float", [make("int32", [3, 4]), make(f, [3, 4]), I(2)])
case("mse_loss", "mse_loss f16 rounding", [make("float16", [64], low=-100, high=100), make("float16", [64], low=-100, high=100), I(0)])
case("mse_loss", "mse_loss bf16 mean", [make("bfloat16", [64], low=-100, high=100), make("bfloat16", [64], low=-100, high=100), I(1)])
case("mse_loss", "mse_loss transposed", [transposed(f, [3, 5]), make(f, [3, 5]), I(0)])
case("mse_loss", "mse_loss empty mean", [make(f, [0, 5]), make(f, [5]), I(1)])
case("mse_loss", "mse_loss empty sum", [make(f, [0, 5]), make(f, [5]), I(2)])
case("mse_loss", "mse_loss 0-dim", [make(f, []), make(f, []), I(0)])
case("mse_loss", "mse_loss shapes", [make(f, [3, 5]), make(f, [4]), I(0)])
case("mse_loss", "mse_loss shapes mean", [make(f, [3, 5]), make(f, [4]), I(1)])
case("mse_loss", "mse_loss out double", [make(f, [3, 5]), make(f, [5]), I(1)], "out", out=[make("float64", [3])])
case("mse_loss", "mse_loss out none double", [make(f, [3, 5]), make(f, [5]), I(0)], "out", out=[make("float64", [3])])
case("mse_loss", "mse_loss out none int", [make(f, [3, 5]), make(f, [5]), I(0)], "out", out=[make("int64", [3, 5])])
case("mse_loss", "mse_loss out transposed", [make(f, [3, 5]), make(f, [5]), I(0)], "out", out=[transposed(f, [3, 5])])

# --- nll_loss_forward ----------------------------------------------------------------------
def target(values, dtype=L64):
    return make(dtype, [len(values)], values=values)


for dt in ALL:
    for red in (0, 1, 2):
        case("nll_loss_forward", f"nll_loss_forward {dt} reduction={red}",
             [make(dt, [4, 5]), target([1, 0, 4, 2]), N(), I(red), I(-100)])
for red in (0, 1, 2, 5):
    case("nll_loss_forward", f"nll weight ignore reduction={red}",
         [make(f, [5, 4]), target([1, 3, 2, 3, 0]), make(f, [4], low=0, high=2), I(red), I(3)])
    case("nll_loss_forward", f"nll 1-d reduction={red}", [make(f, [5]), make(L64, [], values=[3]), N(), I(red), I(-100)])
    case("nll_loss_forward", f"nll 1-d target[1] reduction={red}", [make(f, [5]), target([2]), make(f, [5]), I(red), I(-100)])
    case("nll_loss_forward", f"nll byte target reduction={red}", [make(f, [3, 5]), target([0, 7, 1], "uint8"), N(), I(red), I(7)])
    case("nll_loss_forward", f"nll all ignored reduction={red}", [make(f, [2, 4]), target([-100, -100]), N(), I(red), I(-100)])
    case("nll_loss_forward", f"nll empty reduction={red}", [make(f, [0, 4]), target([]), N(), I(red), I(-100)])
    case("nll_loss_forward", f"nll weighted all ignored reduction={red}", [make(f, [2, 4]), target([1, 1]), make(f, [4]), I(red), I(1)])
big = [i * 7 % 13 for i in range(3000)]
for dt in FLOATS:
    case("nll_loss_forward", f"nll cascade {dt}", [make(dt, [3000, 13], gen=True), target(big), N(), I(1), I(5)])
    case("nll_loss_forward", f"nll cascade weighted {dt}", [make(dt, [3000, 13], gen=True), target(big), make(dt, [13], low=0, high=3), I(2), I(5)])
case("nll_loss_forward", "nll transposed input", [transposed(f, [4, 3]), target([2, 0, 1, 2]), N(), I(0), I(-100)])
case("nll_loss_forward", "nll strided target", [make(f, [3, 4]), make(L64, [3], strides=[2], values=[1, 9, 3, 9, 0]), N(), I(1), I(-100)])
case("nll_loss_forward", "nll out", [make(f, [3, 4]), target([1, 2, 3]), N(), I(0), I(-100)], "out", out=[make(f, [2]), make(f, [3])])
case("nll_loss_forward", "nll out reduced", [make(f, [3, 4]), target([1, 2, 3]), N(), I(1), I(-100)], "out", out=[make(f, [2]), make(f, [3])])
case("nll_loss_forward", "nll out dtype", [make(f, [3, 4]), target([1, 2, 3]), N(), I(1), I(-100)], "out", out=[make("float64", [2]), make(f, [3])])
nll_errors = [
    ("target out of bounds", [make(f, [3, 5]), target([1, 5, 2]), N(), I(1), I(-100)]),
    ("target negative", [make(f, [3, 5]), target([1, -1, 2]), N(), I(0), I(-100)]),
    ("target out of bounds 1-d", [make(f, [5]), make(L64, [], values=[5]), N(), I(1), I(-100)]),
    ("input 3-d", [make(f, [3, 5, 2]), target([1, 0, 2]), N(), I(1), I(-100)]),
    ("input 0-d", [make(f, []), make(L64, [], values=[0]), N(), I(1), I(-100)]),
    ("target 2-d", [make(f, [3, 5]), make(L64, [3, 1], values=[0, 1, 2]), N(), I(1), I(-100)]),
    ("target float", [make(f, [3, 5]), target([0.0, 1.0, 2.0], f), N(), I(1), I(-100)]),
    ("target int", [make(f, [3, 5]), target([0, 1, 2], "int32"), N(), I(1), I(-100)]),
    ("target float 3-d input", [make(f, [3, 5, 2]), target([0.0, 1.0, 2.0], f), N(), I(1), I(-100)]),
    ("target float size mismatch", [make(f, [3, 5]), target([0.0, 1.0], f), N(), I(1), I(-100)]),
    ("target 2-d float", [make(f, [3, 5]), make(f, [3, 1]), N(), I(1), I(-100)]),
    ("size mismatch", [make(f, [3, 5]), target([0, 1]), N(), I(1), I(-100)]),
    ("1-d input 1-d target", [make(f, [5]), target([0, 1]), N(), I(1), I(-100)]),
    ("weight shape", [make(f, [3, 5]), target([0, 1, 2]), make(f, [4]), I(1), I(-100)]),
    ("weight 2-d", [make(f, [3, 5]), target([0, 1, 2]), make(f, [5, 1]), I(1), I(-100)]),
    ("weight dtype", [make(f, [3, 5]), target([0, 1, 2]), make("float64", [5]), I(1), I(-100)]),
    ("input long", [make(L64, [3, 5]), target([0, 1, 2]), N(), I(1), I(-100)]),
]
for name, args in nll_errors:
    case("nll_loss_forward", f"nll error {name}", args)

# --- pooling -------------------------------------------------------------------------------
x4 = lambda dt=f, shape=(2, 3, 7, 8), **kw: make(dt, list(shape), **kw)  # noqa: E731
pool_params = [
    ("k2", [2, 2], [], [0, 0], [1, 1], False),
    ("k3 s2 p1", [3, 3], [2, 2], [1, 1], [1, 1], False),
    ("k3 s2 p1 ceil", [3, 3], [2, 2], [1, 1], [1, 1], True),
    ("k2x3 s1x2", [2, 3], [1, 2], [1, 0], [1, 1], True),
    ("single ints", [3], [2], [1], [1], False),
    ("dilation", [3, 2], [1, 2], [1, 1], [2, 3], False),
    ("dilation ceil", [2, 2], [2, 3], [1, 1], [2, 2], True),
]
for pname, k, s, p, d, ceil in pool_params:
    case("max_pool2d_with_indices", f"max_pool {pname}", [x4(), L(k), L(s), L(p), L(d), B(ceil)])
    if d == [1, 1]:
        for cip in (True, False):
            case("avg_pool2d", f"avg_pool {pname} count_include_pad={cip}", [x4(), L(k), L(s), L(p), B(ceil), B(cip), N()])
for dt in ALL:
    case("max_pool2d_with_indices", f"max_pool {dt}", [x4(dt), L([2, 2]), L([1, 2]), L([1, 1]), L([1, 1]), B(False)])
    case("avg_pool2d", f"avg_pool {dt}", [x4(dt), L([3, 2]), L([2, 1]), L([1, 1]), B(True), B(False), N()])
case("avg_pool2d", "avg_pool divisor_override", [x4(), L([3, 3]), L([2, 2]), L([1, 1]), B(False), B(True), I(5)])
case("avg_pool2d", "avg_pool negative divisor", [x4(), L([2, 2]), L([]), L([0]), B(False), B(True), I(-3)])
case("avg_pool2d", "avg_pool long divisor", [x4(L64), L([3, 3]), L([2, 2]), L([1, 1]), B(False), B(True), I(4)])
case("avg_pool2d", "avg_pool 3-d", [make(f, [3, 6, 5]), L([2, 2]), L([]), L([1]), B(True), B(True), N()])
case("max_pool2d_with_indices", "max_pool 3-d", [make(f, [3, 6, 5]), L([2, 2]), L([]), L([1]), L([1]), B(True)])
cl, _ = make(f, [2, 3, 6, 5])
cl = cl.contiguous(memory_format=torch.channels_last)
from linalg_common import spec_of  # noqa: E402
case("avg_pool2d", "avg_pool channels_last", [(cl, spec_of(cl)), L([2, 2]), L([1, 1]), L([1]), B(False), B(True), N()])
case("max_pool2d_with_indices", "max_pool channels_last", [(cl, spec_of(cl)), L([2, 2]), L([1, 1]), L([1]), L([1]), B(False)])
case("avg_pool2d", "avg_pool transposed", [transposed(f, [2, 3, 6, 5]), L([2, 2]), L([1, 1]), L([1]), B(False), B(True), N()])
case("max_pool2d_with_indices", "max_pool transposed", [transposed(f, [2, 3, 6, 5]), L([2, 2]), L([1, 1]), L([1]), L([1]), B(False)])
case("max_pool2d_with_indices", "max_pool empty batch", [x4(shape=(0, 3, 6, 5)), L([2, 2]), L([]), L([0]), L([1]), B(False)])
case("avg_pool2d", "avg_pool empty batch", [x4(shape=(0, 3, 6, 5)), L([2, 2]), L([]), L([0]), B(False), B(True), N()])
nan_vals = [float("nan") if i % 7 == 3 else float(i % 5) for i in range(2 * 3 * 4 * 4)]
case("max_pool2d_with_indices", "max_pool nan", [make(f, [2, 3, 4, 4], values=nan_vals), L([2, 2]), L([1, 1]), L([0]), L([1]), B(False)])
case("max_pool2d_with_indices", "max_pool ties", [make(f, [1, 1, 4, 4], values=[1.0] * 16), L([3, 3]), L([1, 1]), L([1]), L([1]), B(False)])
case("max_pool2d_with_indices", "max_pool big", [make(f, [4, 8, 32, 32], gen=True), L([3, 3]), L([2, 2]), L([1]), L([1]), B(True)])
case("avg_pool2d", "avg_pool big", [make(f, [4, 8, 32, 32], gen=True), L([3, 3]), L([2, 2]), L([1]), B(True), B(False), N()])
case("max_pool2d_with_indices", "max_pool out", [x4(), L([2, 2]), L([]), L([0]), L([1]), B(False)], "out", out=[make(f, [1]), make(L64, [1])])
case("avg_pool2d", "avg_pool out transposed", [make(f, [2, 3, 6, 6]), L([2, 2]), L([]), L([0]), B(False), B(True), N()], "out", out=[transposed(f, [2, 3, 3, 3])])
case("avg_pool2d", "avg_pool out channels_last input", [(cl, spec_of(cl)), L([2, 2]), L([1, 1]), L([1]), B(False), B(True), N()], "out", out=[make(f, [2, 3, 7, 6])])
pool_errors = [
    ("kernel 3 ints", [3, 3, 3], [], [0], [1]),
    ("kernel empty", [], [], [0], [1]),
    ("stride 3 ints", [3, 3], [1, 1, 1], [0], [1]),
    ("padding 3 ints", [3, 3], [1, 1], [1, 1, 1], [1]),
    ("dilation 3 ints", [3, 3], [1, 1], [1, 1], [1, 1, 1]),
    ("kernel zero", [0, 3], [1, 1], [1, 1], [1, 1]),
    ("kernel zero no pad", [0, 3], [1, 1], [0, 0], [1, 1]),
    ("stride zero", [3, 3], [0, 1], [1, 1], [1, 1]),
    ("stride negative", [3, 3], [-1, 1], [1, 1], [1, 1]),
    ("pad too big", [3, 3], [1, 1], [2, 1], [1, 1]),
    ("pad negative", [3, 3], [1, 1], [-1, 1], [1, 1]),
    ("dilation zero", [3, 3], [1, 1], [1, 1], [0, 1]),
    ("dilation zero no pad", [2, 2], [1, 1], [0, 0], [0, 0]),
    ("output too small", [9, 9], [1, 1], [0, 0], [1, 1]),
]
for name, k, s, p, d in pool_errors:
    case("max_pool2d_with_indices", f"max_pool error {name}", [x4(), L(k), L(s), L(p), L(d), B(False)])
    case("avg_pool2d", f"avg_pool error {name}", [x4(), L(k), L(s), L(p[:2] if p else p), B(False), B(True), N()])
case("avg_pool2d", "avg_pool error divisor zero", [x4(), L([2, 2]), L([]), L([0]), B(False), B(True), I(0)])
for name, shape in [("2-d", (7, 8)), ("5-d", (1, 2, 3, 7, 8)), ("empty channels", (2, 0, 7, 8)), ("empty height", (2, 3, 0, 8)), ("3-d empty", (0, 7, 8))]:
    case("max_pool2d_with_indices", f"max_pool error {name}", [x4(shape=shape), L([2, 2]), L([]), L([0]), L([1]), B(False)])
    case("avg_pool2d", f"avg_pool error {name}", [x4(shape=shape), L([2, 2]), L([]), L([0]), B(False), B(True), N()])
for dt in ["int32", "uint8", "bool", "int16"]:
    case("avg_pool2d", f"avg_pool error {dt}", [x4(dt), L([2, 2]), L([]), L([0]), B(False), B(True), N()])

# --- native_layer_norm ---------------------------------------------------------------------
for dt in FLOATS:
    for wname, w, b in [("affine", True, True), ("weight", True, False), ("bias", False, True), ("plain", False, False)]:
        W = make(dt, [5]) if w else N()
        Bb = make(dt, [5]) if b else N()
        case("native_layer_norm", f"layer_norm {dt} {wname}", [make(dt, [3, 4, 5]), L([5]), W, Bb, F(1e-5)])
for dt in ["float16", "bfloat16"]:
    case("native_layer_norm", f"layer_norm {dt} float params", [make(dt, [3, 4]), L([4]), make(f, [4]), make(f, [4]), F(1e-5)])
    case("native_layer_norm", f"layer_norm {dt} float bias only", [make(dt, [3, 4]), L([4]), N(), make(f, [4]), F(1e-5)])
case("native_layer_norm", "layer_norm 2 dims", [make(f, [2, 3, 4]), L([3, 4]), make(f, [3, 4]), make(f, [3, 4]), F(1e-3)])
case("native_layer_norm", "layer_norm all dims", [make(f, [2, 3, 4]), L([2, 3, 4]), N(), N(), F(1e-5)])
case("native_layer_norm", "layer_norm transposed", [transposed(f, [6, 5]), L([5]), make(f, [5]), make(f, [5]), F(1e-5)])
case("native_layer_norm", "layer_norm long rows", [make(f, [4, 1000], gen=True), L([1000]), make(f, [1000], gen=True), make(f, [1000], gen=True), F(1e-5)])
case("native_layer_norm", "layer_norm many rows", [make("float64", [300, 130], gen=True), L([130]), N(), N(), F(1e-6)])
case("native_layer_norm", "layer_norm constant rows", [make(f, [2, 8], values=[3.0] * 16), L([8]), N(), N(), F(1e-5)])
case("native_layer_norm", "layer_norm empty rows", [make(f, [0, 3, 4]), L([4]), N(), N(), F(1e-5)])
case("native_layer_norm", "layer_norm empty normalized", [make(f, [2, 0]), L([0]), N(), N(), F(1e-5)])
ln_errors = [
    ("shape", [make(f, [2, 3, 4]), L([3]), N(), N(), F(1e-5)]),
    ("too many dims", [make(f, [2, 3, 4]), L([2, 3, 4, 5]), N(), N(), F(1e-5)]),
    ("empty shape", [make(f, [2, 3, 4]), L([]), N(), N(), F(1e-5)]),
    ("0-dim input", [make(f, []), L([]), N(), N(), F(1e-5)]),
    ("weight shape", [make(f, [2, 3, 4]), L([4]), make(f, [3]), N(), F(1e-5)]),
    ("bias shape", [make(f, [2, 3, 4]), L([4]), N(), make(f, [3]), F(1e-5)]),
    ("weight 2-d", [make(f, [2, 3, 4]), L([4]), make(f, [2, 2]), N(), F(1e-5)]),
    ("long input", [make(L64, [2, 4]), L([4]), N(), N(), F(1e-5)]),
    ("long input float weight", [make("int32", [2, 4]), L([4]), make(f, [4]), N(), F(1e-5)]),
    ("float input double weight", [make(f, [2, 4]), L([4]), make("float64", [4]), N(), F(1e-5)]),
    ("double input float weight", [make("float64", [2, 4]), L([4]), make(f, [4]), make(f, [4]), F(1e-5)]),
    ("half input float weight double bias", [make("float16", [2, 4]), L([4]), make(f, [4]), make("float64", [4]), F(1e-5)]),
    ("half weight bfloat16 bias", [make("float16", [2, 4]), L([4]), make("float16", [4]), make("bfloat16", [4]), F(1e-5)]),
    ("float bias half", [make(f, [2, 4]), L([4]), make(f, [4]), make("float16", [4]), F(1e-5)]),
    ("bf16 input half bias", [make("bfloat16", [2, 4]), L([4]), N(), make("float16", [4]), F(1e-5)]),
    ("shape before dtype", [make(f, [2, 4]), L([3]), make(f, [3]), make("float64", [3]), F(1e-5)]),
]
for name, args in ln_errors:
    case("native_layer_norm", f"layer_norm error {name}", args)

# --- composites, called through the dispatcher ----------------------------------------------
for red in (0, 1, 2):
    case("nll_loss", f"nll_loss reduction={red}", [make(f, [4, 5]), target([1, 0, 4, 2]), N(), I(red), I(-100)])
    case("nll_loss_nd", f"nll_loss_nd 2-d reduction={red}", [make(f, [4, 5]), target([1, 0, 4, 2]), make(f, [5], low=0, high=2), I(red), I(0)])
    case("nll_loss_nd", f"nll_loss_nd 1-d reduction={red}", [make(f, [5]), make(L64, [], values=[3]), N(), I(red), I(-100)])
    case("nll_loss_nd", f"nll_loss_nd 3-d reduction={red}", [make(f, [2, 4, 3]), make(L64, [2, 3], values=[0, 3, 1, 2, 2, 0]), N(), I(red), I(-100)])
    case("nll_loss_nd", f"nll_loss_nd 4-d reduction={red}", [make("float64", [2, 3, 2, 2]), make(L64, [2, 2, 2], values=[0, 2, 1, 1, 2, 0, 0, 1]), make("float64", [3], low=0, high=2), I(red), I(1)])
    case("nll_loss_nd", f"nll_loss_nd 5-d reduction={red}", [make(f, [2, 3, 2, 1, 2]), make(L64, [2, 2, 1, 2], values=[0, 2, 1, 1, 2, 0, 0, 1]), N(), I(red), I(-100)])
    case("nll_loss_nd", f"nll_loss_nd 3-d empty reduction={red}", [make(f, [0, 4, 3]), make(L64, [0, 3], values=[]), N(), I(red), I(-100)])
case("nll_loss", "nll_loss out", [make(f, [4, 5]), target([1, 0, 4, 2]), N(), I(1), I(-100)], "out", out=[make(f, [3])])
case("nll_loss_nd", "nll_loss_nd error 0-d", [make(f, []), make(L64, [], values=[0]), N(), I(1), I(-100)])
case("nll_loss_nd", "nll_loss_nd error batch", [make(f, [3, 4]), target([0, 1]), N(), I(1), I(-100)])
case("nll_loss_nd", "nll_loss_nd error target size", [make(f, [2, 4, 3]), make(L64, [2, 2], values=[0, 1, 2, 3]), N(), I(1), I(-100)])
for pname, k, s, p, d, ceil in pool_params:
    case("max_pool2d", f"max_pool2d {pname}", [x4(), L(k), L(s), L(p), L(d), B(ceil)])
case("max_pool2d", "max_pool2d int64", [x4(L64), L([2, 2]), L([]), L([0]), L([1]), B(False)])
case("max_pool2d", "max_pool2d error kernel", [x4(), L([2, 2, 2]), L([]), L([0]), L([1]), B(False)])
for dt in FLOATS:
    case("layer_norm", f"layer_norm composite {dt}", [make(dt, [3, 4, 5]), L([4, 5]), make(dt, [4, 5]), make(dt, [4, 5]), F(1e-5), B(True)])
case("layer_norm", "layer_norm composite no params", [transposed(f, [6, 5]), L([6]), N(), N(), F(1e-5), B(False)])
case("layer_norm", "layer_norm composite error", [make(f, [2, 3]), L([4]), N(), N(), F(1e-5), B(False)])
for train in (False, True):
    case("dropout", f"dropout train={train} p=0", [make(f, [3, 4]), F(0.0), B(train)])
case("dropout", "dropout eval", [make(f, [3, 4]), F(0.5), B(False)])
case("dropout", "dropout p=1", [make(f, [3, 4]), F(1.0), B(True)])
case("dropout", "dropout error p", [make(f, [3, 4]), F(1.5), B(True)])
case("dropout", "dropout error p eval", [make(f, [3, 4]), F(-0.5), B(False)])
case("native_dropout", "native_dropout eval", [make(f, [3, 4]), F(0.5), B(False)])
case("native_dropout", "native_dropout eval int", [make(L64, [3, 4]), F(0.5), B(False)])
case("native_dropout", "native_dropout p=1", [make(f, [3, 4]), F(1.0), B(True)])
case("native_dropout", "native_dropout p=0 double", [make("float64", [3, 4]), F(0.0), N()])
case("native_dropout", "native_dropout error p", [make(f, [3, 4]), F(1.5), B(True)])
case("native_dropout", "native_dropout error int", [make(L64, [3, 4]), F(0.5), B(True)])
case("native_dropout", "native_dropout error bool", [make("bool", [3, 4]), F(0.5), N()])

# --- convolution / conv2d -----------------------------------------------------------------
conv_params = [
    ("plain", [2, 3, 6, 5], [4, 3, 3, 3], [1, 1], [0, 0], [1, 1], 1),
    ("stride pad", [2, 3, 7, 6], [4, 3, 3, 2], [2, 1], [1, 2], [1, 1], 1),
    ("dilation", [1, 2, 8, 8], [3, 2, 3, 3], [1, 2], [2, 1], [2, 3], 1),
    ("groups", [2, 4, 5, 5], [6, 2, 3, 3], [1, 1], [1, 1], [1, 1], 2),
    ("depthwise", [1, 3, 5, 4], [3, 1, 2, 2], [1, 1], [0, 0], [1, 1], 3),
    ("1x1", [2, 5, 3, 3], [2, 5, 1, 1], [1, 1], [0, 0], [1, 1], 1),
]
for name, xs, wsz, st, pd, dl, g in conv_params:
    for with_bias in (False, True):
        b = make(f, [wsz[0]]) if with_bias else N()
        case("convolution", f"convolution {name} bias={with_bias}",
             [make(f, xs), make(f, wsz), b, L(st), L(pd), L(dl), B(False), L([0, 0]), I(g)])
for dt in ["float64", "float16", "bfloat16", "int64"]:
    case("convolution", f"convolution {dt}", [make(dt, [1, 2, 5, 5]), make(dt, [3, 2, 3, 3]), make(dt, [3]), L([1, 1]), L([1, 1]), L([1, 1]), B(False), L([0, 0]), I(1)])
case("convolution", "convolution 1-d", [make(f, [2, 3, 7]), make(f, [4, 3, 3]), make(f, [4]), L([2]), L([1]), L([1]), B(False), L([0]), I(1)])
case("convolution", "convolution 3-d", [make(f, [1, 2, 4, 4, 3]), make(f, [2, 2, 2, 2, 2]), N(), L([1]), L([0]), L([1]), B(False), L([0]), I(1)])
case("convolution", "convolution single ints", [make(f, [1, 2, 6, 6]), make(f, [3, 2, 3, 3]), N(), L([2]), L([1]), L([1]), B(False), L([0]), I(1)])
case("convolution", "convolution transposed input", [transposed(f, [2, 3, 6, 6]), make(f, [2, 3, 2, 2]), N(), L([1, 1]), L([0, 0]), L([1, 1]), B(False), L([0, 0]), I(1)])
case("convolution", "convolution double bias", [make(f, [1, 2, 5, 5]), make(f, [3, 2, 3, 3]), make("float64", [3]), L([1, 1]), L([0, 0]), L([1, 1]), B(False), L([0, 0]), I(1)])
case("convolution", "convolution empty batch", [make(f, [0, 2, 5, 5]), make(f, [3, 2, 3, 3]), N(), L([1, 1]), L([0, 0]), L([1, 1]), B(False), L([0, 0]), I(1)])
conv_errors = [
    ("weight dtype", [1, 2, 5, 5], [3, 2, 3, 3], [1, 1], [0, 0], [1, 1], 1, "float64"),
    ("channels", [1, 4, 5, 5], [3, 2, 3, 3], [1, 1], [0, 0], [1, 1], 1, f),
    ("groups divisible", [1, 4, 5, 5], [3, 2, 3, 3], [1, 1], [0, 0], [1, 1], 2, f),
    ("groups zero", [1, 4, 5, 5], [4, 2, 3, 3], [1, 1], [0, 0], [1, 1], 0, f),
    ("kernel too big", [1, 2, 2, 2], [3, 2, 3, 3], [1, 1], [0, 0], [1, 1], 1, f),
    ("stride zero", [1, 2, 5, 5], [3, 2, 3, 3], [0, 1], [0, 0], [1, 1], 1, f),
    ("padding negative", [1, 2, 5, 5], [3, 2, 3, 3], [1, 1], [-1, 0], [1, 1], 1, f),
    ("dilation zero", [1, 2, 5, 5], [3, 2, 3, 3], [1, 1], [0, 0], [0, 1], 1, f),
    ("input dims", [2, 5, 5], [3, 2, 3, 3], [1, 1], [0, 0], [1, 1], 1, f),
    ("weight 2-d", [2, 5], [3, 2], [1, 1], [0, 0], [1, 1], 1, f),
    ("stride length", [1, 2, 5, 5], [3, 2, 3, 3], [1, 1, 1], [0, 0], [1, 1], 1, f),
]
for name, xs, wsz, st, pd, dl, g, wdt in conv_errors:
    case("convolution", f"convolution error {name}", [make(f, xs), make(wdt, wsz), N(), L(st), L(pd), L(dl), B(False), L([0, 0]), I(g)])
case("convolution", "convolution error bias size", [make(f, [1, 2, 5, 5]), make(f, [3, 2, 3, 3]), make(f, [4]), L([1, 1]), L([0, 0]), L([1, 1]), B(False), L([0, 0]), I(1)])
case("conv2d", "conv2d batched", [make(f, [2, 3, 6, 5]), make(f, [4, 3, 3, 3]), make(f, [4]), L([1]), L([1]), L([1]), I(1)])
case("conv2d", "conv2d unbatched", [make(f, [3, 6, 5]), make(f, [4, 3, 3, 3]), N(), L([2, 1]), L([0]), L([1]), I(1)])
case("conv2d", "conv2d groups", [make("float64", [1, 4, 6, 5]), make("float64", [4, 2, 3, 3]), make("float64", [4]), L([1]), L([1]), L([1]), I(2)])
case("conv2d", "conv2d error 2-d", [make(f, [2, 5]), make(f, [3, 2, 3, 3]), N(), L([1]), L([0]), L([1]), I(1)])
case("conv2d", "conv2d error bias dtype", [make(f, [2, 5, 5]), make(f, [3, 2, 3, 3]), make("float64", [3]), L([1]), L([0]), L([1]), I(1)])

# Appended last, so that the random values of the cases above stay as they were recorded.
def channels_last(dtype, sizes):
    """A 4-d tensor laid out NHWC."""
    n, c, h, w = sizes
    return make(dtype, sizes, strides=[h * w * c, 1, w * c, c])


# Transposed convolutions (PyTorch's conv_transpose), and its errors.
conv_t_params = [
    ("plain", [2, 2, 5, 4], [2, 3, 2, 2], [1, 1], [0, 0], [1, 1], [0, 0], 1),
    ("stride pad outpad dilation", [1, 2, 5, 5], [2, 3, 2, 2], [2, 1], [1, 0], [1, 2], [1, 0], 1),
    ("groups", [2, 4, 5, 5], [4, 3, 3, 3], [1, 1], [1, 1], [1, 1], [0, 0], 2),
    ("1-d", [2, 3, 7], [3, 4, 3], [2], [1], [1], [1], 1),
    ("3-d", [1, 2, 3, 3, 2], [2, 2, 2, 2, 2], [1], [0], [1], [0], 1),
    ("padding eats the output", [1, 2, 2, 2], [2, 3, 2, 2], [1, 1], [1, 1], [1, 1], [0, 0], 1),
]
for name, xs, wsz, st, pd, dl, op_, g in conv_t_params:
    for with_bias in (False, True):
        b = make(f, [wsz[1] * g]) if with_bias else N()
        case("convolution", f"convolution transposed {name} bias={with_bias}",
             [make(f, xs), make(f, wsz), b, L(st), L(pd), L(dl), B(True), L(op_), I(g)])
case("convolution", "convolution transposed float64", [make("float64", [1, 2, 4, 4]), make("float64", [2, 3, 3, 3]), make("float64", [3]), L([2, 2]), L([1, 1]), L([1, 1]), B(True), L([1, 1]), I(1)])
case("convolution", "convolution transposed int64", [make("int64", [1, 2, 3, 3]), make("int64", [2, 3, 2, 2]), N(), L([1, 1]), L([0, 0]), L([1, 1]), B(True), L([0, 0]), I(1)])
case("convolution", "convolution transposed empty batch", [make(f, [0, 2, 5, 5]), make(f, [2, 3, 2, 2]), N(), L([1, 1]), L([0, 0]), L([1, 1]), B(True), L([0, 0]), I(1)])
case("convolution", "convolution transposed channels-last input", [channels_last(f, [1, 2, 5, 5]), make(f, [2, 3, 3, 3]), N(), L([1, 1]), L([0, 0]), L([1, 1]), B(True), L([0, 0]), I(1)])
case("convolution", "convolution channels-last input", [channels_last(f, [1, 2, 5, 5]), make(f, [3, 2, 3, 3]), make(f, [3]), L([1, 1]), L([1, 1]), L([1, 1]), B(False), L([0, 0]), I(1)])
conv_t_errors = [
    ("channels", [1, 4, 5, 5], [2, 3, 2, 2], None, [1, 1], [0, 0], [1, 1], [0, 0], 1),
    ("bias size", [1, 2, 5, 5], [2, 3, 2, 2], [4], [1, 1], [0, 0], [1, 1], [0, 0], 1),
    ("output padding", [1, 2, 5, 5], [2, 3, 2, 2], None, [1, 1], [0, 0], [1, 1], [1, 0], 1),
    ("output padding 1-d", [2, 3, 7], [3, 4, 3], None, [2], [1], [1], [2], 1),
    ("output padding 3-d", [1, 2, 3, 3, 2], [2, 2, 2, 2, 2], None, [1], [0], [1], [1], 1),
    ("output size", [1, 2, 1, 1], [2, 3, 1, 1], None, [1, 1], [1, 1], [1, 1], [0, 0], 1),
    ("negative output padding", [1, 2, 5, 5], [2, 3, 2, 2], None, [1, 1], [0, 0], [1, 1], [-1, 0], 1),
    ("groups", [1, 3, 5, 5], [3, 3, 2, 2], None, [1, 1], [0, 0], [1, 1], [0, 0], 2),
]
for name, xs, wsz, bsz, st, pd, dl, op_, g in conv_t_errors:
    b = make(f, bsz) if bsz else N()
    case("convolution", f"convolution transposed error {name}", [make(f, xs), make(f, wsz), b, L(st), L(pd), L(dl), B(True), L(op_), I(g)])
json.dump({"torch_version": torch.__version__, "cases": cases}, sys.stdout, indent=None, separators=(",", ":"))
sys.stdout.write("\n")
