"""Record PyTorch's answers for the operators A.11's F3/F6/F8/F31/F36 cases need: aminmax
(functional and out=), block_diag, batch norm (`_native_batch_norm_legit` and its
`.no_stats` / `_functional` / `_no_training` / out= forms, `native_batch_norm`,
`batch_norm`, `instance_norm`) and `_fused_moving_avg_obs_fq_helper`. Run with the reference
PyTorch:

    /tmp/torchref/bin/python tools/oracle/norm_quant.py > crates/cpu/tests/fixtures/norm_quant.json

Arguments are tensor specs (see linalg_common.py), lists of them ({"tensors": [...]}) or
typed values ({"i": 3}, {"f": "0.5"}, {"b": true}, {"none": null}). The recorded results of
an operator that writes its arguments are its returns followed by the written arguments
after the call (running statistics, observer state, out= tensors), so the tests check both.
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from linalg_common import enc, make, record, transposed  # noqa: E402

torch.manual_seed(0)
cases = []
aten = torch.ops.aten
f = "float32"


def I(v):
    return (v, {"i": v})


def F(v):
    return (v, {"f": enc(float(v))})


def B(v):
    return (v, {"b": v})


def N():
    return (None, {"none": None})


def TL(*ts):
    return ([t[0] for t in ts], {"tensors": [t[1] for t in ts]})


def case(op, name, args, written=(), call=None, variant="functional", out=None):
    """`written`: indices of arguments whose post-call values are appended to the results.
    `out`: out= tensors, passed as keywords `out_names` by `call`."""
    values = [a[0] for a in args]
    entry = {"op": op, "variant": variant, "args": [a[1] for a in args], "written": list(written)}
    if out is not None:
        entry["out"] = [o[1] for o in out]

    def run():
        outs = [o[0] for o in out] if out is not None else []
        r = call(*values, *outs) if call is not None else getattr(aten, op)(*values)
        rs = list(r) if isinstance(r, (tuple, list)) else [r]
        return tuple(rs + [values[i] for i in written] + ([] if call is None else []))

    record(cases, name, run, **entry)


# --- aminmax --------------------------------------------------------------------------------
def D(dim):
    return I(dim) if dim is not None else N()


def am(x, dim, keepdim):
    return torch.aminmax(x, dim=dim, keepdim=keepdim)


def amc(name, x, dim=None, keepdim=False):
    case("aminmax", f"aminmax {name}", [x, D(dim), B(keepdim)], call=am)


for dt in ["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "int8", "bool"]:
    amc(dt, make(dt, [3, 4]))
    amc(f"{dt} dim 1", make(dt, [3, 4]), 1)
for dim, keepdim in [(None, True), (0, True), (-1, False), (-2, True)]:
    amc(f"dim={dim} keepdim={keepdim}", make(f, [2, 3, 4]), dim, keepdim)
NAN = [1.0, float("nan"), 3.0, -1.0, 2.0, 0.5]
amc("nan", make(f, [2, 3], values=NAN))
amc("nan dim", make(f, [2, 3], values=NAN), 1)
amc("inf", make(f, [4], values=[float("inf"), 1.0, -float("inf"), 2.0]))
amc("transposed", transposed(f, [5, 3]), 0)
amc("transposed all", transposed(f, [5, 3]), None, True)
amc("0-dim", make(f, []))
amc("0-dim dim 0", make(f, []), 0, True)
amc("0-dim dim -1", make(f, []), -1)
amc("long row", make(f, [3, 1000], gen=True), 1)
amc("empty other dim", make(f, [0, 3]), 1)
amc("error empty", make(f, [0]))
amc("error empty 2-d", make(f, [2, 0]), None, True)
amc("error empty dim", make(f, [0, 3]), 0)
amc("error dim range", make(f, [2, 3]), 2)
amc("error 0-dim dim 1", make(f, []), 1)


def am_out(x, dim, keepdim, mn, mx):
    return torch.aminmax(x, dim=dim, keepdim=keepdim, out=(mn, mx))


def amo(name, x, dim, keepdim, mn, mx):
    case("aminmax", f"aminmax out {name}", [x, D(dim), B(keepdim)], variant="out", out=[mn, mx], call=am_out)


amo("resize", make(f, [3, 4]), 1, False, make(f, [0]), make(f, [0]))
amo("all", make(f, [3, 4]), None, False, make(f, [0]), make(f, [0]))
amo("transposed", make(f, [4, 3, 2]), 2, False, transposed(f, [4, 3]), transposed(f, [4, 3]))
amo("keepdim", make("int64", [3, 4]), 1, True, make("int64", [3, 1]), make("int64", [3, 1]))
amo("error dtype", make(f, [3, 4]), 1, False, make("float64", [0]), make(f, [0]))
amo("error dtype max", make(f, [3, 4]), 1, False, make(f, [0]), make("int64", [0]))

# --- block_diag -----------------------------------------------------------------------------
bd = lambda ts: torch.block_diag(*ts)  # noqa: E731
case("block_diag", "block_diag 2-d", [TL(make(f, [2, 2]), make(f, [1, 3]))], call=bd)
case("block_diag", "block_diag 0-d 1-d 2-d", [TL(make(f, []), make(f, [3]), make(f, [2, 2]))], call=bd)
case("block_diag", "block_diag promotes int and float", [TL(make(f, [2, 2]), make("int64", [3]))], call=bd)
case("block_diag", "block_diag promotes float and double", [TL(make(f, [1, 2]), make("float64", [2, 1]))], call=bd)
case("block_diag", "block_diag int", [TL(make("int64", [2, 2]), make("int32", [1, 1]))], call=bd)
case("block_diag", "block_diag bool", [TL(make("bool", [2, 2]), make("bool", [1]))], call=bd)
case("block_diag", "block_diag empty rows", [TL(make(f, [2, 2]), make(f, [0, 3]))], call=bd)
case("block_diag", "block_diag empty 1-d", [TL(make(f, [2, 2]), make(f, [0]), make(f, [1, 1]))], call=bd)
case("block_diag", "block_diag transposed", [TL(transposed(f, [3, 2]), make(f, [2]))], call=bd)
case("block_diag", "block_diag none", [TL()], call=bd)
case("block_diag", "block_diag one", [TL(make(f, [2, 3]))], call=bd)
case("block_diag", "block_diag error 3-d", [TL(make(f, [2, 2]), make(f, [1, 2, 2]))], call=bd)

# --- batch norm -----------------------------------------------------------------------------
RM = lambda c, dt=f: make(dt, [c], low=-1, high=1)  # noqa: E731
RV = lambda c, dt=f: make(dt, [c], low=0.5, high=2)  # noqa: E731


def legit(x, w, b, rm, rv, training, momentum, eps):
    return aten._native_batch_norm_legit(x, w, b, rm, rv, training, momentum, eps)


for training in (True, False):
    for dt in ["float32", "float64"]:
        for wname, W, Bb in [("no params", N(), N()), ("params", make(dt, [3]), make(dt, [3]))]:
            case("_native_batch_norm_legit", f"legit {dt} training={training} {wname}",
                 [make(dt, [4, 3, 5]), W, Bb, RM(3, dt), RV(3, dt), B(training), F(0.1), F(1e-5)],
                 written=(3, 4))
    case("_native_batch_norm_legit", f"legit 2-d training={training}",
         [make(f, [6, 3]), make(f, [3]), N(), RM(3), RV(3), B(training), F(0.3), F(1e-3)], written=(3, 4))
    case("_native_batch_norm_legit", f"legit 4-d training={training}",
         [make(f, [2, 3, 2, 4]), N(), make(f, [3]), RM(3), RV(3), B(training), F(0.1), F(1e-5)], written=(3, 4))
    case("_native_batch_norm_legit", f"legit transposed training={training}",
         [transposed(f, [3, 4]), make(f, [4]), make(f, [4]), RM(4), RV(4), B(training), F(0.1), F(1e-5)],
         written=(3, 4))
    case("_native_batch_norm_legit", f"legit permuted 3-d training={training}",
         [transposed(f, [2, 3, 5]), make(f, [3]), make(f, [3]), RM(3), RV(3), B(training), F(0.1), F(1e-5)],
         written=(3, 4))
    for dt in ["float16", "bfloat16"]:
        case("_native_batch_norm_legit", f"legit {dt} float params training={training}",
             [make(dt, [4, 3, 2]), make(f, [3]), make(f, [3]), RM(3), RV(3), B(training), F(0.1), F(1e-5)],
             written=(3, 4))
        case("_native_batch_norm_legit", f"legit {dt} own params training={training}",
             [make(dt, [4, 3, 2]), N(), N(), RM(3, dt), RV(3, dt), B(training), F(0.1), F(1e-5)],
             written=(3, 4))
    case("_native_batch_norm_legit", f"legit momentum 1 training={training}",
         [make(f, [5, 2]), N(), N(), RM(2), RV(2), B(training), F(1.0), F(0.0)], written=(3, 4))
    case("_native_batch_norm_legit", f"legit long channels training={training}",
         [make("float64", [8, 3, 200], gen=True), N(), N(), RM(3, "float64"), RV(3, "float64"), B(training), F(0.1), F(1e-5)],
         written=(3, 4))
case("_native_batch_norm_legit", "legit one value per channel",
     [make(f, [1, 3]), N(), N(), RM(3), RV(3), B(True), F(0.1), F(1e-5)], written=(3, 4))
case("_native_batch_norm_legit", "legit constant channel",
     [make(f, [4, 2], values=[2.0] * 8), N(), N(), RM(2), RV(2), B(True), F(0.1), F(0.0)], written=(3, 4))
case("_native_batch_norm_legit", "legit empty eval",
     [make(f, [0, 3]), N(), N(), RM(3), RV(3), B(False), F(0.1), F(1e-5)], written=(3, 4))
for name, args in [
    ("1-d", [make(f, [3]), N(), N(), RM(3), RV(3), B(True), F(0.1), F(1e-5)]),
    ("empty training", [make(f, [0, 3]), N(), N(), RM(3), RV(3), B(True), F(0.1), F(1e-5)]),
    ("long", [make("int64", [2, 3]), N(), N(), RM(3), RV(3), B(True), F(0.1), F(1e-5)]),
    ("bool", [make("bool", [2, 3]), N(), N(), make("bool", [3]), make("bool", [3]), B(False), F(0.1), F(1e-5)]),
    ("double params", [make(f, [2, 3]), make("float64", [3]), N(), RM(3), RV(3), B(True), F(0.1), F(1e-5)]),
    ("double input float stats", [make("float64", [2, 3]), N(), N(), RM(3), RV(3), B(True), F(0.1), F(1e-5)]),
    ("half weight float stats", [make("float16", [2, 3]), make("float16", [3]), N(), RM(3), RV(3), B(True), F(0.1), F(1e-5)]),
    ("float weight double var", [make(f, [2, 3]), make(f, [3]), N(), RM(3), RV(3, "float64"), B(True), F(0.1), F(1e-5)]),
    ("running mean 2-d", [make(f, [2, 3]), N(), N(), make(f, [3, 1]), RV(3), B(True), F(0.1), F(1e-5)]),
]:
    case("_native_batch_norm_legit", f"legit error {name}", args, written=(3, 4))

for training in (True, False):
    case("_native_batch_norm_legit.no_stats", f"no_stats training={training}",
         [make(f, [4, 3, 2]), make(f, [3]), make(f, [3]), B(training), F(0.1), F(1e-5)],
         call=lambda *a: aten._native_batch_norm_legit.no_stats(*a))
case("_native_batch_norm_legit_functional", "legit functional",
     [make(f, [4, 3, 2]), make(f, [3]), N(), RM(3), RV(3), B(True), F(0.1), F(1e-5)], written=(3, 4))
case("_native_batch_norm_legit_functional", "legit functional eval",
     [make(f, [4, 3]), N(), N(), RM(3), RV(3), B(False), F(0.1), F(1e-5)], written=(3, 4))
case("_native_batch_norm_legit_no_training", "legit no_training",
     [make(f, [4, 3, 2]), make(f, [3]), make(f, [3]), RM(3), RV(3), F(0.1), F(1e-5)], written=(3, 4))
for training, stats in [(True, True), (True, False), (False, True), (False, False)]:
    rm, rv = (RM(3), RV(3)) if stats else (N(), N())
    case("native_batch_norm", f"native_batch_norm training={training} stats={stats}",
         [make(f, [4, 3, 2]), N(), N(), rm, rv, B(training), F(0.1), F(1e-5)],
         written=(3, 4) if stats else ())
case("native_batch_norm", "native_batch_norm mean only training",
     [make(f, [4, 3]), N(), N(), RM(3), N(), B(True), F(0.1), F(1e-5)])
case("native_batch_norm", "native_batch_norm var only eval",
     [make(f, [4, 3]), N(), N(), N(), RV(3), B(False), F(0.1), F(1e-5)])
case("native_batch_norm", "native_batch_norm mean only eval",
     [make(f, [4, 3]), N(), N(), RM(3), N(), B(False), F(0.1), F(1e-5)])


def legit_out(*a):
    *args, o, m, v = a
    return aten._native_batch_norm_legit.out(*args, out=o, save_mean=m, save_invstd=v)


def nbn_out(*a):
    *args, o, m, v = a
    return aten.native_batch_norm.out(*args, out=o, save_mean=m, save_invstd=v)


case("_native_batch_norm_legit.out", "legit out resize",
     [make(f, [4, 3, 2]), make(f, [3]), make(f, [3]), RM(3), RV(3), B(True), F(0.1), F(1e-5)],
     written=(3, 4), variant="out", out=[make(f, [0]), make(f, [0]), make(f, [0])], call=legit_out)
case("_native_batch_norm_legit.out", "legit out transposed",
     [make(f, [2, 3, 4]), N(), N(), RM(3), RV(3), B(True), F(0.1), F(1e-5)],
     written=(3, 4), variant="out", out=[make(f, [2, 3, 4], strides=[1, 2, 6]),
                                         make(f, [3]), make(f, [3])], call=legit_out)
case("_native_batch_norm_legit.out", "legit out eval keeps stats",
     [make(f, [2, 3]), N(), N(), RM(3), RV(3), B(False), F(0.1), F(1e-5)],
     written=(3, 4), variant="out", out=[make(f, [0]), make(f, [2]), make(f, [0])], call=legit_out)
case("_native_batch_norm_legit.out", "legit out error dtype",
     [make(f, [2, 3]), N(), N(), RM(3), RV(3), B(True), F(0.1), F(1e-5)],
     written=(3, 4), variant="out", out=[make("float64", [0]), make(f, [0]), make(f, [0])], call=legit_out)
case("_native_batch_norm_legit.out", "legit out error stat dtype",
     [make(f, [2, 3]), N(), N(), RM(3), RV(3), B(True), F(0.1), F(1e-5)],
     written=(3, 4), variant="out", out=[make(f, [0]), make("float64", [0]), make(f, [0])], call=legit_out)
case("native_batch_norm.out", "native_batch_norm out no stats",
     [make(f, [2, 3]), N(), N(), N(), N(), B(True), F(0.1), F(1e-5)],
     variant="out", out=[make(f, [0]), make(f, [0]), make(f, [0])], call=nbn_out)


def bn(*a):
    return torch.batch_norm(*a)


for training in (True, False):
    case("batch_norm", f"batch_norm training={training}",
         [make(f, [4, 3, 2]), make(f, [3]), make(f, [3]), RM(3), RV(3), B(training), F(0.1), F(1e-5), B(False)],
         written=(3, 4), call=bn)
case("batch_norm", "batch_norm no stats", [make(f, [4, 3]), N(), N(), N(), N(), B(True), F(0.1), F(1e-5), B(False)], call=bn)
case("batch_norm", "batch_norm empty", [make(f, [0, 3, 2]), make(f, [3]), make(f, [3]), RM(3), RV(3), B(True), F(0.1), F(1e-5), B(False)],
     written=(3, 4), call=bn)
for name, args in [
    ("running_mean size", [make(f, [4, 3]), N(), N(), RM(4), RV(3), B(True), F(0.1), F(1e-5), B(False)]),
    ("running_var size", [make(f, [4, 3]), N(), N(), RM(3), RV(2), B(True), F(0.1), F(1e-5), B(False)]),
    ("weight size", [make(f, [4, 3]), make(f, [4]), N(), RM(3), RV(3), B(True), F(0.1), F(1e-5), B(False)]),
    ("bias size", [make(f, [4, 3]), N(), make(f, [2]), RM(3), RV(3), B(True), F(0.1), F(1e-5), B(False)]),
    ("eval without stats", [make(f, [4, 3]), N(), N(), N(), N(), B(False), F(0.1), F(1e-5), B(False)]),
    ("eval without var", [make(f, [4, 3]), N(), N(), RM(3), N(), B(False), F(0.1), F(1e-5), B(False)]),
]:
    case("batch_norm", f"batch_norm error {name}", args, call=bn)


def inorm(*a):
    return torch.instance_norm(*a)


for use_stats in (True, False):
    case("instance_norm", f"instance_norm use_input_stats={use_stats}",
         [make(f, [2, 3, 4]), make(f, [3]), make(f, [3]), RM(3), RV(3), B(use_stats), F(0.1), F(1e-5), B(False)],
         written=(3, 4), call=inorm)
case("instance_norm", "instance_norm no stats", [make(f, [2, 3, 2, 2]), N(), N(), N(), N(), B(True), F(0.1), F(1e-5), B(False)],
     call=inorm)
case("instance_norm", "instance_norm transposed", [transposed(f, [2, 4, 3]), N(), N(), RM(4), RV(4), B(True), F(0.3), F(1e-5), B(False)],
     written=(3, 4), call=inorm)
for name, args in [
    ("no stats eval", [make(f, [2, 3, 4]), N(), N(), N(), N(), B(False), F(0.1), F(1e-5), B(False)]),
    ("weight size", [make(f, [2, 3, 4]), make(f, [4]), N(), RM(3), RV(3), B(True), F(0.1), F(1e-5), B(False)]),
    ("running_mean size", [make(f, [2, 3, 4]), N(), N(), RM(4), RV(3), B(True), F(0.1), F(1e-5), B(False)]),
    ("1-d", [make(f, [3]), N(), N(), N(), N(), B(True), F(0.1), F(1e-5), B(False)]),
]:
    case("instance_norm", f"instance_norm error {name}", args, call=inorm)

# --- _fused_moving_avg_obs_fq_helper -------------------------------------------------------
def fq(*a):
    return torch._fused_moving_avg_obs_fq_helper(*a)


ON = lambda: make(f, [1], values=[1.0])  # noqa: E731
OFF = lambda: make(f, [1], values=[0.0])  # noqa: E731
INF = lambda: make(f, [1], values=[float("inf")])  # noqa: E731
NINF = lambda: make(f, [1], values=[-float("inf")])  # noqa: E731
SC = lambda: make(f, [1], values=[1.0])  # noqa: E731
ZP = lambda dt="int32": make(dt, [1], values=[0])  # noqa: E731


def fq_case(name, x, obs, fqon, rmin, rmax, sc, zp, avg, qmin, qmax, axis, per_row=False, sym=False):
    case("_fused_moving_avg_obs_fq_helper", f"fq {name}",
         [x, obs, fqon, rmin, rmax, sc, zp, F(avg), I(qmin), I(qmax), I(axis), B(per_row), B(sym)],
         written=(3, 4, 5, 6), call=fq)


X = lambda: make(f, [2, 3, 4])  # noqa: E731
fq_case("first observation", X(), ON(), ON(), INF(), NINF(), SC(), ZP(), 0.01, 0, 255, 0)
fq_case("moving average", X(), ON(), ON(), make(f, [1], values=[-0.5]), make(f, [1], values=[0.5]), SC(), ZP(), 0.25, 0, 255, 0)
fq_case("observer off", X(), OFF(), ON(), make(f, [1], values=[-2.0]), make(f, [1], values=[1.0]), SC(), ZP(), 0.01, 0, 255, 0)
fq_case("fake quant off", X(), ON(), OFF(), make(f, [1], values=[-2.0]), make(f, [1], values=[1.0]), SC(), ZP(), 0.01, 0, 255, 0)
fq_case("both off", X(), OFF(), OFF(), make(f, [1], values=[-2.0]), make(f, [1], values=[1.0]), SC(), ZP(), 0.01, 0, 255, 0)
fq_case("signed range", X(), ON(), ON(), INF(), NINF(), SC(), ZP(), 0.01, -128, 127, 0)
fq_case("symmetric", X(), ON(), ON(), INF(), NINF(), SC(), ZP(), 0.01, -128, 127, 0, sym=True)
fq_case("symmetric unsigned", X(), ON(), ON(), INF(), NINF(), SC(), ZP(), 0.01, 0, 255, 0, sym=True)
fq_case("positive input", make(f, [6], values=[0.5, 1.0, 1.5, 2.0, 2.5, 3.0]), ON(), ON(), INF(), NINF(), SC(), ZP(), 0.01, 0, 255, 0)
fq_case("small scale", make(f, [3], values=[0.0, 1e-6, 2e-6]), ON(), ON(), INF(), NINF(), SC(), ZP(), 0.01, 0, 255, 0)
fq_case("small scale both signs", make(f, [3], values=[-1e-6, 0.0, 2e-6]), ON(), ON(), INF(), NINF(), SC(), ZP(), 0.01, 0, 255, 0)
fq_case("zero input", make(f, [3], values=[0.0, 0.0, 0.0]), ON(), ON(), INF(), NINF(), SC(), ZP(), 0.01, 0, 255, 0)
fq_case("clamped values", make(f, [4], values=[-10.0, -1.0, 1.0, 10.0]), OFF(), ON(), make(f, [1], values=[-1.0]),
        make(f, [1], values=[1.0]), SC(), ZP(), 0.01, 0, 15, 0)
fq_case("float zero point", X(), ON(), ON(), INF(), NINF(), SC(), ZP("float32"), 0.01, 0, 255, 0)
fq_case("long zero point", X(), ON(), ON(), INF(), NINF(), SC(), ZP("int64"), 0.01, 0, 255, 0)
fq_case("double scale", X(), ON(), ON(), INF(), NINF(), make("float64", [1], values=[1.0]), ZP(), 0.01, 0, 255, 0)
fq_case("long flags", X(), make("int64", [1], values=[1]), make("int64", [1], values=[1]), INF(), NINF(), SC(), ZP(), 0.01, 0, 255, 0)
fq_case("double input observer off", make("float64", [2, 3]), OFF(), ON(), make(f, [1], values=[-2.0]),
        make(f, [1], values=[1.0]), SC(), ZP(), 0.01, 0, 255, 0)
fq_case("half input observer off", make("float16", [2, 3]), OFF(), ON(), make(f, [1], values=[-2.0]),
        make(f, [1], values=[1.0]), SC(), ZP(), 0.01, 0, 255, 0)
fq_case("transposed input", transposed(f, [3, 4]), ON(), ON(), INF(), NINF(), SC(), ZP(), 0.01, 0, 255, 0)
fq_case("per row", make(f, [3, 4]), ON(), ON(), make(f, [3], values=[float("inf")] * 3),
        make(f, [3], values=[-float("inf")] * 3), make(f, [3], values=[1.0] * 3), make("int32", [3], values=[0] * 3), 0.01, 0, 255, 0, per_row=True)
fq_case("per row empty state", make(f, [3, 4]), ON(), ON(), make(f, [0]), make(f, [0]), make(f, [0]), make("int32", [0]),
        0.01, 0, 255, 0, per_row=True)
fq_case("per row 3-d", make(f, [3, 2, 2]), ON(), ON(), make(f, [3], values=[-0.1] * 3),
        make(f, [3], values=[0.1] * 3), make(f, [3], values=[1.0] * 3), make("int32", [3], values=[0] * 3), 0.5, -128, 127, 0, per_row=True, sym=True)
fq_case("per row float zero point", make(f, [2, 3]), ON(), ON(), make(f, [2], values=[float("inf")] * 2),
        make(f, [2], values=[-float("inf")] * 2), make(f, [2], values=[1.0] * 2), make(f, [2], values=[0.0] * 2), 0.01, 0, 255, 0, per_row=True)
for name, args in [
    ("ch_axis", (X(), ON(), ON(), INF(), NINF(), SC(), ZP(), 0.01, 0, 255, 3)),
    ("flag elements", (X(), make(f, [2]), ON(), INF(), NINF(), SC(), ZP(), 0.01, 0, 255, 0)),
    ("double input", (make("float64", [2, 3]), ON(), ON(), INF(), NINF(), SC(), ZP(), 0.01, 0, 255, 0)),
    ("half input", (make("float16", [2, 3]), ON(), ON(), INF(), NINF(), SC(), ZP(), 0.01, 0, 255, 0)),
    ("double running min", (X(), ON(), ON(), make("float64", [1], values=[1.0]), NINF(), SC(), ZP(), 0.01, 0, 255, 0)),
    ("quant range", (X(), ON(), ON(), INF(), NINF(), SC(), ZP(), 0.01, 10, 5, 0)),
    ("empty input", (make(f, [0]), ON(), ON(), INF(), NINF(), SC(), ZP(), 0.01, 0, 255, 0)),
    ("per row axis 1", (make(f, [3, 4]), ON(), ON(), make(f, [0]), make(f, [0]), make(f, [0]), make("int32", [0]), 0.01, 0, 255, 1, True)),
    ("per row scale size", (make(f, [3, 4]), OFF(), ON(), make(f, [3]), make(f, [3]), make(f, [2]), make("int32", [2]), 0.01, 0, 255, 0, True)),
]:
    fq_case(f"error {name}", *args)


# F6's call: one tensor for every argument.
def fq_aliased(x):
    r = torch._fused_moving_avg_obs_fq_helper(x, x, x, x, x, x, x, 1.0, 0, 1, 0)
    return r


case("_fused_moving_avg_obs_fq_helper", "fq one tensor for all (F6)", [make(f, [1], values=[1.0])], written=(0,),
     call=fq_aliased)
case("_fused_moving_avg_obs_fq_helper_functional", "fq functional one tensor for all (F6)", [make(f, [1], values=[1.0])],
     written=(0,), call=lambda x: aten._fused_moving_avg_obs_fq_helper_functional(x, x, x, x, x, x, x, 1.0, 0, 1, 0))

json.dump({"torch_version": torch.__version__, "cases": cases}, sys.stdout, indent=None, separators=(",", ":"))
sys.stdout.write("\n")
