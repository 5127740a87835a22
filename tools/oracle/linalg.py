"""Record PyTorch's answers for the linalg kernels (mm, addmm, bmm, baddbmm, dot, matmul,
linear). Run with the reference PyTorch:

    /tmp/torchref/bin/python tools/oracle/linalg.py > crates/cpu/tests/fixtures/linalg.json

Each case names the operator, the variant (functional / out / inplace), its arguments as
tensor specs (see linalg_common.py) or scalars, and PyTorch's results (dtype, sizes, strides,
values) or error (kind and first line of the message)."""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from linalg_common import ALL, FLOATS, make, record, scalar, spec_of, transposed  # noqa: E402

torch.manual_seed(0)
cases = []


def case(op, name, args, variant="functional", out=None):
    """`args` is a list of (tensor, spec) pairs or Python scalars."""
    tensors = [a[0] if isinstance(a, tuple) else a for a in args]
    specs = [a[1] if isinstance(a, tuple) else scalar(a) for a in args]
    # Scalars (beta, alpha) are keyword-only in the schemas.
    positional = [t for t in tensors if isinstance(t, torch.Tensor)]
    kwargs = dict(zip(["beta", "alpha"], [t for t in tensors if not isinstance(t, torch.Tensor)]))
    aten = getattr(torch.ops.aten, op)

    def run():
        if variant == "functional":
            return aten.default(*positional, **kwargs)
        if variant == "out":
            o = out[0]
            aten.out(*positional, **kwargs, out=o)
            return o
        getattr(torch.ops.aten, op + "_").default(*positional, **kwargs)
        return positional[0]

    entry = {"op": op, "variant": variant, "args": specs}
    if out is not None:
        entry["out"] = out[1]
    record(cases, name, run, **entry)


def addmm_args(self_, m1, m2, beta=1, alpha=1):
    return [self_, m1, m2, beta, alpha]


# --- mm: every dtype, layouts, empty shapes, errors -------------------------------------
for dt in ALL:
    case("mm", f"mm {dt}", [make(dt, [3, 4]), make(dt, [4, 5])])
    case("dot", f"dot {dt}", [make(dt, [7]), make(dt, [7])])
    case("bmm", f"bmm {dt}", [make(dt, [2, 3, 4]), make(dt, [2, 4, 2])])
    case("addmm", f"addmm {dt}", addmm_args(make(dt, [3, 2]), make(dt, [3, 4]), make(dt, [4, 2]), 2, 3)
         if dt != "bool" else addmm_args(make(dt, [3, 2]), make(dt, [3, 4]), make(dt, [4, 2]), True, True))
    case("baddbmm", f"baddbmm {dt}", addmm_args(make(dt, [2, 3, 2]), make(dt, [2, 3, 4]), make(dt, [2, 4, 2]), 2, -1)
         if dt != "bool" else addmm_args(make(dt, [2, 3, 2]), make(dt, [2, 3, 4]), make(dt, [2, 4, 2]), True, True))
for dt in ["float32", "float64", "float16", "bfloat16", "int64", "int32"]:
    case("mm", f"mm transposed a {dt}", [transposed(dt, [5, 6]), make(dt, [6, 3])])
    case("mm", f"mm transposed b {dt}", [make(dt, [5, 6]), transposed(dt, [6, 3])])
    case("mm", f"mm sliced {dt}", [make(dt, [4, 3], strides=[10, 2], offset=1), make(dt, [3, 5], strides=[7, 1], offset=2)])
    case("mm", f"mm expanded {dt}", [make(dt, [4, 3], strides=[0, 1]), make(dt, [3, 5], strides=[1, 0])])
    case("bmm", f"bmm transposed {dt}", [transposed(dt, [3, 4, 5]), transposed(dt, [3, 5, 2])])
    case("bmm", f"bmm batch-last {dt}", [make(dt, [3, 4, 5], strides=[1, 15, 3]), make(dt, [3, 5, 2], strides=[10, 1, 5])])
    case("dot", f"dot strided {dt}", [make(dt, [6], strides=[3], offset=2), make(dt, [6], strides=[0])])
# Sizes that take gemm's blocked and threaded paths, and many small batched matrices.
for dt in ["float32", "float64"]:
    case("mm", f"mm large {dt}", [make(dt, [70, 130], gen=True), make(dt, [130, 90], gen=True)])
    case("mm", f"mm large transposed {dt}", [transposed(dt, [129, 67], gen=True), transposed(dt, [67, 65], gen=True)])
    case("bmm", f"bmm many small {dt}", [make(dt, [40, 5, 6], gen=True), make(dt, [40, 6, 7], gen=True)])
    case("baddbmm", f"baddbmm many small {dt}", addmm_args(make(dt, [40, 5, 7], gen=True), make(dt, [40, 5, 6], gen=True), make(dt, [40, 6, 7], gen=True), 0.5, 2))
    case("bmm", f"bmm large {dt}", [make(dt, [3, 70, 80], gen=True), make(dt, [3, 80, 70], gen=True)])
    case("dot", f"dot long {dt}", [make(dt, [1001], gen=True), make(dt, [1001], gen=True)])
case("mm", "mm large int64", [make("int64", [40, 70], gen=True), make("int64", [70, 50], gen=True)])
case("mm", "mm large float16", [make("float16", [40, 70], gen=True), make("float16", [70, 50], gen=True)])
case("bmm", "bmm large int32", [make("int32", [3, 40, 70], gen=True), make("int32", [3, 70, 50], gen=True)])
case("mm", "mm int8 wraps", [make("int8", [2, 30], low=50, high=100), make("int8", [30, 2], low=50, high=100)])
case("dot", "dot int8 wraps", [make("int8", [30], low=50, high=100), make("int8", [30], low=50, high=100)])
case("dot", "dot f16 accumulates in f32", [make("float16", [4], values=[1e4, -1e4, 1, 1e4, -1e4][:4] + [0.0]),
                                            make("float16", [4], values=[10.0, 10, 1, 10, 10][:4] + [0.0])])
case("dot", "dot f16 overflow", [make("float16", [4], values=[1e4] * 4), make("float16", [4], values=[10.0] * 4)])
for dt in ["float32", "int64"]:
    case("mm", f"mm k=0 {dt}", [make(dt, [3, 0]), make(dt, [0, 4])])
    case("mm", f"mm m=0 {dt}", [make(dt, [0, 3]), make(dt, [3, 4])])
    case("bmm", f"bmm empty batch {dt}", [make(dt, [0, 2, 3]), make(dt, [0, 3, 4])])
    case("bmm", f"bmm k=0 {dt}", [make(dt, [2, 2, 0]), make(dt, [2, 0, 4])])
    case("dot", f"dot empty {dt}", [make(dt, [0]), make(dt, [0])])
    case("addmm", f"addmm k=0 {dt}", addmm_args(make(dt, [3, 4]), make(dt, [3, 0]), make(dt, [0, 4]), 2, 3))
    case("addmm", f"addmm k=0 beta=0 {dt}", addmm_args(make(dt, [3, 4]), make(dt, [3, 0]), make(dt, [0, 4]), 0, 3))
    case("baddbmm", f"baddbmm k=0 {dt}", addmm_args(make(dt, [2, 3, 4]), make(dt, [2, 3, 0]), make(dt, [2, 0, 4]), 2, 3))

# --- addmm / baddbmm: beta/alpha, broadcasting self, NaN with beta=0 -----------------------
nan_self = make("float32", [3, 2], values=[float("nan")] * 6)
case("addmm", "addmm beta=0 ignores nan", addmm_args(nan_self, make("float32", [3, 4]), make("float32", [4, 2]), 0, 1))
case("addmm", "addmm beta=0.0 ignores nan", addmm_args(nan_self, make("float32", [3, 4]), make("float32", [4, 2]), 0.0, 2))
case("addmm", "addmm nan kept with beta", addmm_args(nan_self, make("float32", [3, 4]), make("float32", [4, 2]), 1, 1))
case("baddbmm", "baddbmm beta=0 ignores nan", addmm_args(make("float64", [2, 3, 2], values=[float("nan")] * 12),
                                                       make("float64", [2, 3, 4]), make("float64", [2, 4, 2]), 0, 1))
for name, shape in [("row", [2]), ("column", [3, 1]), ("scalar", []), ("one", [1, 2])]:
    case("addmm", f"addmm broadcast self {name}", addmm_args(make("float32", shape), make("float32", [3, 4]), make("float32", [4, 2]), 0.5, -2))
    case("addmm", f"addmm broadcast self {name} int", addmm_args(make("int64", shape), make("int64", [3, 4]), make("int64", [4, 2]), 3, -2))
case("baddbmm", "baddbmm broadcast self", addmm_args(make("float32", [3, 1]), make("float32", [2, 3, 4]), make("float32", [2, 4, 2]), 1.5, 1))
case("baddbmm", "baddbmm broadcast self 0-dim", addmm_args(make("float32", []), make("float32", [2, 3, 4]), make("float32", [2, 4, 2])))
case("addmm", "addmm int with float beta", addmm_args(make("int32", [2, 5]), make("int32", [2, 3]), make("int32", [3, 5]), 0.5, 1))
case("addmm", "addmm int with float alpha", addmm_args(make("int32", [2, 5]), make("int32", [2, 3]), make("int32", [3, 5]), 1, 2.5))
case("addmm", "addmm float with bool alpha", addmm_args(make("float32", [2, 5]), make("float32", [2, 3]), make("float32", [3, 5]), 1, True))
case("addmm", "addmm int8 alpha overflow", addmm_args(make("int8", [2, 5]), make("int8", [2, 3]), make("int8", [3, 5]), 1, 300))
case("addmm", "addmm f16 overflow rounds once", addmm_args(make("float16", [1, 1], values=[1.0]),
                                                          make("float16", [1, 4], values=[1e4] * 4),
                                                          make("float16", [4, 1], values=[10.0] * 4), -1, 0.5))
case("addmm", "addmm transposed operands", addmm_args(transposed("float64", [4, 3]), transposed("float64", [4, 5]), transposed("float64", [5, 3]), 0.25, 4))

# --- out= and in-place ---------------------------------------------------------------------
f = "float32"
case("mm", "mm out transposed", [make(f, [2, 3]), make(f, [3, 4])], "out", out=transposed(f, [2, 4]))
case("mm", "mm out resized", [make(f, [2, 3]), make(f, [3, 4])], "out", out=make(f, [3, 3]))
case("mm", "mm out empty resized", [make(f, [2, 3]), make(f, [3, 4])], "out", out=make(f, [0]))
case("mm", "mm out wrong dtype", [make(f, [2, 3]), make(f, [3, 4])], "out", out=make("float64", [2, 4]))
case("mm", "mm out expanded", [make(f, [2, 2]), make(f, [2, 2])], "out", out=make(f, [2, 2], strides=[0, 1]))
case("mm", "mm out int64 transposed", [make("int64", [2, 3]), make("int64", [3, 4])], "out", out=transposed("int64", [2, 4]))
case("mm", "mm out f16 sliced", [make("float16", [2, 3]), make("float16", [3, 4])], "out", out=make("float16", [2, 4], strides=[9, 2], offset=1))
case("bmm", "bmm out transposed", [make(f, [2, 2, 3]), make(f, [2, 3, 4])], "out", out=transposed(f, [2, 2, 4]))
case("bmm", "bmm out wrong dtype", [make(f, [2, 2, 3]), make(f, [2, 3, 4])], "out", out=make("float64", [2, 2, 4]))
case("addmm", "addmm out", addmm_args(make(f, [4]), make(f, [2, 3]), make(f, [3, 4]), 2, 1), "out", out=transposed(f, [2, 4]))
case("baddbmm", "baddbmm out", addmm_args(make(f, [2, 2, 4]), make(f, [2, 2, 3]), make(f, [2, 3, 4]), 2, 1), "out", out=make(f, [1]))
case("dot", "dot out resized", [make(f, [3]), make(f, [3])], "out", out=make(f, [2]))
case("dot", "dot out wrong dtype", [make(f, [3]), make(f, [3])], "out", out=make("float64", []))
for dt in ["float32", "float64", "int64", "bfloat16"]:
    case("addmm", f"addmm_ {dt}", addmm_args(make(dt, [2, 4]), make(dt, [2, 3]), make(dt, [3, 4]), 2, 1), "inplace")
    case("baddbmm", f"baddbmm_ {dt}", addmm_args(make(dt, [2, 2, 4]), make(dt, [2, 2, 3]), make(dt, [2, 3, 4]), 1, -1), "inplace")
case("addmm", "addmm_ transposed self", addmm_args(transposed(f, [2, 4]), make(f, [2, 3]), make(f, [3, 4]), 2, 1), "inplace")
case("addmm", "addmm_ wrong shape", addmm_args(make(f, [4]), make(f, [2, 3]), make(f, [3, 4])), "inplace")
case("addmm", "addmm_ 3-d self", addmm_args(make(f, [2, 2, 4]), make(f, [2, 3]), make(f, [3, 4])), "inplace")
case("addmm", "addmm_ dtype", addmm_args(make(f, [2, 4]), make("float64", [2, 3]), make("float64", [3, 4])), "inplace")
case("baddbmm", "baddbmm_ broadcast self", addmm_args(make(f, [1, 2, 4]), make(f, [2, 2, 3]), make(f, [2, 3, 4])), "inplace")
case("baddbmm", "baddbmm_ dtype", addmm_args(make(f, [2, 2, 4]), make("float64", [2, 2, 3]), make("float64", [2, 3, 4])), "inplace")

# Aliasing: the output is one of the inputs.
sq, sq_spec = make(f, [3, 3])
case("mm", "mm out aliases self", [(sq, sq_spec), make(f, [3, 3])], "out", out=(sq, sq_spec))
sq, sq_spec = make("int64", [3, 3])
case("mm", "mm out aliases mat2 int", [make("int64", [3, 3]), (sq, sq_spec)], "out", out=(sq, sq_spec))
base, _ = make(f, [4, 4])
case("mm", "mm out overlaps mat1 view", [(base[:3, :3], spec_of(base[:3, :3])), make(f, [3, 3])], "out",
     out=(base[1:, 1:], spec_of(base[1:, 1:])))
# (baddbmm_ with self also passed as batch1 is left out: PyTorch's small-matrix kernel reads
# batch1 while overwriting it, so its answer depends on loop order; the tests check that we
# compute from the values before the call.)

# --- errors --------------------------------------------------------------------------------
errs = [
    ("mm", "mm shapes", [make(f, [2, 3]), make(f, [4, 5])]),
    ("mm", "mm 1-d self", [make(f, [3]), make(f, [3, 3])]),
    ("mm", "mm 3-d self", [make(f, [2, 3, 4]), make(f, [4])]),
    ("mm", "mm 1-d mat2", [make(f, [2, 3]), make(f, [3])]),
    ("mm", "mm dtypes", [make(f, [2, 3]), make("float64", [3, 5])]),
    ("mm", "mm dtypes int half", [make("int16", [2, 3]), make("float16", [3, 5])]),
    ("mm", "mm shapes before dtypes", [make(f, [2, 3]), make("float64", [4, 5])]),
    ("addmm", "addmm shapes", addmm_args(make(f, [3]), make(f, [2, 3]), make(f, [4, 5]))),
    ("addmm", "addmm self not expandable", addmm_args(make(f, [4]), make(f, [2, 3]), make(f, [3, 5]))),
    ("addmm", "addmm self 3-d", addmm_args(make(f, [2, 2, 5]), make(f, [2, 3]), make(f, [3, 5]))),
    ("addmm", "addmm self dtype", addmm_args(make("float64", [5]), make(f, [2, 3]), make(f, [3, 5]))),
    ("addmm", "addmm mat1 dtype", addmm_args(make(f, [2, 5]), make("float64", [2, 3]), make(f, [3, 5]))),
    ("addmm", "addmm mat1 1-d", addmm_args(make(f, [2]), make(f, [3]), make(f, [3, 5]))),
    ("addmm", "addmm mat2 1-d", addmm_args(make(f, [2, 5]), make(f, [2, 3]), make(f, [3]))),
    ("addmm", "addmm bool", addmm_args(make("bool", [2, 5]), make("bool", [2, 3]), make("bool", [3, 5]))),
    ("bmm", "bmm 2-d batch1", [make(f, [2, 3]), make(f, [2, 3, 5])]),
    ("bmm", "bmm 2-d batch2", [make(f, [2, 2, 3]), make(f, [3, 5])]),
    ("bmm", "bmm batch mismatch", [make(f, [2, 2, 3]), make(f, [3, 3, 5])]),
    ("bmm", "bmm contraction mismatch", [make(f, [2, 2, 3]), make(f, [2, 4, 5])]),
    ("bmm", "bmm dtypes", [make(f, [2, 2, 3]), make("float64", [2, 3, 5])]),
    ("bmm", "bmm dtypes reversed", [make("float64", [2, 2, 3]), make(f, [2, 3, 5])]),
    ("baddbmm", "baddbmm batch mismatch", addmm_args(make(f, [2, 2, 5]), make(f, [2, 2, 3]), make(f, [3, 3, 5]))),
    ("baddbmm", "baddbmm self not expandable", addmm_args(make(f, [3, 2, 5]), make(f, [2, 2, 3]), make(f, [2, 3, 5]))),
    ("baddbmm", "baddbmm self too many dims", addmm_args(make(f, [2, 2, 2, 5]), make(f, [2, 2, 3]), make(f, [2, 3, 5]))),
    ("baddbmm", "baddbmm self last dim", addmm_args(make(f, [4]), make(f, [2, 2, 3]), make(f, [2, 3, 5]))),
    ("baddbmm", "baddbmm batch1 2-d", addmm_args(make(f, [2, 2, 5]), make(f, [2, 3]), make(f, [2, 3, 5]))),
    ("baddbmm", "baddbmm batch2 2-d", addmm_args(make(f, [2, 2, 5]), make(f, [2, 2, 3]), make(f, [2, 3]))),
    ("baddbmm", "baddbmm batch1 4-d", addmm_args(make(f, [2, 2, 5]), make(f, [2, 2, 3, 2]), make(f, [2, 3, 5]))),
    ("baddbmm", "baddbmm self dtype", addmm_args(make("float64", [2, 2, 5]), make(f, [2, 2, 3]), make(f, [2, 3, 5]))),
    ("baddbmm", "baddbmm batch2 dtype", addmm_args(make(f, [2, 2, 5]), make(f, [2, 2, 3]), make("float64", [2, 3, 5]))),
    ("baddbmm", "baddbmm self and batch2 dtype", addmm_args(make("float64", [2, 2, 5]), make(f, [2, 2, 3]), make("float64", [2, 3, 5]))),
    ("dot", "dot 2-d", [make(f, [2, 3]), make(f, [3])]),
    ("dot", "dot 0-d", [make(f, []), make(f, [3])]),
    ("dot", "dot 1-d and 2-d", [make("int32", [3]), make(f, [3, 1])]),
    ("dot", "dot sizes", [make(f, [3]), make(f, [4])]),
    ("dot", "dot dtypes", [make("int32", [3]), make(f, [4])]),
]
for op, name, args in errs:
    case(op, name, args)

# --- matmul and linear (composites, called through the dispatcher) -------------------------
shapes = [
    ("1-d 1-d", [3], [3]), ("2-d 1-d", [2, 3], [3]), ("1-d 2-d", [3], [3, 4]), ("2-d 2-d", [2, 3], [3, 4]),
    ("3-d 1-d", [2, 3, 4], [4]), ("3-d 2-d", [2, 3, 4], [4, 5]), ("1-d 3-d", [3], [2, 3, 4]),
    ("2-d 3-d", [5, 3], [2, 3, 4]), ("3-d 3-d", [2, 3, 4], [2, 4, 5]), ("4-d 3-d broadcast", [2, 1, 3, 4], [5, 4, 2]),
    ("4-d 1-d", [2, 2, 3, 4], [4]), ("empty batch", [0, 3, 4], [4, 2]), ("empty contraction", [2, 3, 0], [0, 4]),
]
for name, a, b in shapes:
    for dt in ["float32", "float64", "int64"]:
        case("matmul", f"matmul {name} {dt}", [make(dt, a), make(dt, b)])
for dt in ["float16", "bfloat16", "int32"]:
    case("matmul", f"matmul 3-d 3-d {dt}", [make(dt, [2, 3, 4]), make(dt, [2, 4, 5])])
case("matmul", "matmul transposed 3-d 2-d", [transposed(f, [2, 4, 3]), make(f, [4, 5])])
case("matmul", "matmul strided batch no fold", [make(f, [2, 3, 4], strides=[24, 4, 1]), make(f, [4, 5])])
case("matmul", "matmul out 2-d", [make(f, [2, 3]), make(f, [3, 4])], "out", out=make(f, [0]))
case("matmul", "matmul out 3-d", [make(f, [2, 3, 4]), make(f, [4, 5])], "out", out=make(f, [2, 3, 5]))
case("matmul", "matmul out batched", [make(f, [2, 3, 4]), make(f, [2, 4, 5])], "out", out=transposed(f, [2, 5, 3]))
case("matmul", "matmul out dot", [make(f, [3]), make(f, [3])], "out", out=make(f, []))
case("matmul", "matmul out wrong dtype", [make(f, [2, 3, 4]), make(f, [4, 5])], "out", out=make("float64", [2, 3, 5]))
for op, name, args in [
    ("matmul", "matmul 0-d", [make(f, []), make(f, [3])]),
    ("matmul", "matmul mv sizes", [make(f, [2, 3]), make(f, [4])]),
    ("matmul", "matmul folded mv sizes", [make(f, [2, 3, 4]), make(f, [5])]),
    ("matmul", "matmul folded mm sizes", [make(f, [2, 3, 4]), make(f, [5, 6])]),
    ("matmul", "matmul batch sizes", [make(f, [2, 3, 4]), make(f, [2, 5, 6])]),
    ("matmul", "matmul batch broadcast", [make(f, [2, 3, 4]), make(f, [3, 4, 6])]),
    ("matmul", "matmul dtypes", [make(f, [2, 3]), make("float64", [3, 4])]),
    ("matmul", "matmul bool", [make("bool", [2, 3]), make("bool", [3, 4])]),
]:
    case(op, name, args)


def lcase(name, args, variant="functional", out=None):
    values = [a[0] for a in args]
    entry = {"op": "linear", "variant": variant, "args": [a[1] for a in args]}
    if out is not None:
        entry["out"] = out[1]

    def run():
        if variant == "out":
            torch.ops.aten.linear.out(*values, out=out[0])
            return out[0]
        return torch.ops.aten.linear.default(*values)

    record(cases, name, run, **entry)


NONE = (None, {"none": None})
for dt in ["float32", "float64", "bfloat16", "int64"]:
    lcase(f"linear 2-d bias {dt}", [make(dt, [3, 4]), make(dt, [5, 4]), make(dt, [5])])
    lcase(f"linear 3-d bias {dt}", [make(dt, [2, 3, 4]), make(dt, [5, 4]), make(dt, [5])])
    lcase(f"linear no bias {dt}", [make(dt, [2, 3, 4]), make(dt, [5, 4]), NONE])
lcase("linear 1-d input bias", [make(f, [4]), make(f, [5, 4]), make(f, [5])])
lcase("linear 1-d weight", [make(f, [3, 4]), make(f, [4]), NONE])
lcase("linear transposed input bias", [transposed(f, [2, 4, 3]), make(f, [5, 4]), make(f, [5])])
lcase("linear 0-dim bias", [make(f, [2, 3, 4]), make(f, [5, 4]), make(f, [])])
lcase("linear empty", [make(f, [0, 4]), make(f, [5, 4]), make(f, [5])])
lcase("linear error 0-d", [make(f, []), make(f, [5, 4]), NONE])
lcase("linear error sizes", [make(f, [3, 4]), make(f, [5, 3]), make(f, [5])])
lcase("linear error dtypes", [make(f, [3, 4]), make("float64", [5, 4]), NONE])
lcase("linear out bias", [make(f, [3, 4]), make(f, [5, 4]), make(f, [5])], "out", out=make(f, [0]))
lcase("linear out 3-d bias", [make(f, [2, 3, 4]), make(f, [5, 4]), make(f, [5])], "out", out=make(f, [2, 3, 5]))
lcase("linear out no bias", [make(f, [2, 3, 4]), make(f, [5, 4]), NONE], "out", out=make(f, [2, 3, 5]))

json.dump({"torch_version": torch.__version__, "cases": cases}, sys.stdout, indent=None, separators=(",", ":"))
sys.stdout.write("\n")
