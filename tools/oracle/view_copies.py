"""Record PyTorch's view-copy operators (`<view>_copy` and its out= overload for every view case
of views.py, `narrow_copy`) and the scatter family (`*_scatter` and their out= overloads) on
CPU and meta tensors, for crates/cpu/tests/view_copies/mod.rs:

    /tmp/torchref/bin/python tools/oracle/view_copies.py > crates/cpu/tests/fixtures/view_copies.json

Cases come in pairs, CPU then meta, with the same arguments.
"""
import json
import os
import sys
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from views_common import describe, dtype_of, error, make, on, spec, values  # noqa: E402
import views  # noqa: E402  (its CASES: the view cases whose copies are recorded here)

warnings.filterwarnings("ignore")
A = torch.ops.aten

# The view operator of views.py -> (its copy, the copy's out= overload).
COPIES = {
    "view": ("view_copy", "view_copy.out"),
    "view.dtype": ("view_copy.dtype", "view_copy.dtype_out"),
    "expand": ("expand_copy", "expand_copy.out"),
    "transpose": ("transpose_copy.int", "transpose_copy.int_out"),
    "t": ("t_copy", "t_copy.out"),
    "permute": ("permute_copy", "permute_copy.out"),
    "squeeze": ("squeeze_copy", "squeeze_copy.out"),
    "squeeze.dim": ("squeeze_copy.dim", "squeeze_copy.dim_out"),
    "squeeze.dims": ("squeeze_copy.dims", "squeeze_copy.dims_out"),
    "unsqueeze": ("unsqueeze_copy", "unsqueeze_copy.out"),
    "slice.Tensor": ("slice_copy.Tensor", "slice_copy.Tensor_out"),
    "select.int": ("select_copy.int", "select_copy.int_out"),
    "narrow": ("narrow_copy", "narrow_copy.out"),
    "unfold": ("unfold_copy", "unfold_copy.out"),
    "diagonal": ("diagonal_copy", "diagonal_copy.out"),
    "as_strided": ("as_strided_copy", "as_strided_copy.out"),
    "split.Tensor": ("split_copy.Tensor", "split_copy.Tensor_out"),
    "split_with_sizes": ("split_with_sizes_copy", "split_with_sizes_copy.out"),
    "unbind.int": ("unbind_copy.int", "unbind_copy.int_out"),
    "alias": ("alias_copy", "alias_copy.out"),
    "detach": ("detach_copy", "detach_copy.out"),
}

CASES = []


def case(op, s, args, **extra):
    CASES.append(dict(op=op, self=s, args=args, **extra))


def empty_out(s, dtype=None):
    return spec(dtype=dtype or s["dtype"], sizes=(0,), device=s["device"])


for view_op, s, args in views.CASES:
    if view_op not in COPIES:
        continue
    copy_op, out_op = COPIES[view_op]
    case(copy_op, s, args)
    case(out_op, s, args, out=empty_out(s))

# narrow_copy: PyTorch's CPU kernel (its own checks and words) beyond views.py's narrow cases.
C23 = spec(sizes=(2, 3))
T32 = spec(sizes=(3, 2), strides=(1, 3), storage=6)
EXP = spec(sizes=(4, 3), strides=(0, 1), storage=3)
E03 = spec(sizes=(0, 3))
C234 = spec(sizes=(2, 3, 4))
I64_MIN, I64_MAX = -(2 ** 63), 2 ** 63 - 1
for s, args in ((C23, [(1, -5, 1), (1, -3, 1), (1, 3, 0), (1, 4, 0), (-3, 0, 1), (2, 0, 1), (-1, 1, 2),
                       (1, 1, 2 ** 62), (1, 1, I64_MIN), (1, I64_MIN, 1), (1, I64_MAX, 1), (0, -1, 1)]),
                (T32, [(0, 1, 2), (1, -1, 1)]), (EXP, [(1, 1, 2), (0, 1, 3)]), (E03, [(1, 1, 2), (0, 0, 0)]),
                (C234, [(1, 1, 2), (2, -3, 2), (0, 1, 1)])):
    for dim, start, length in args:
        a = {"dim": dim, "start": start, "length": length}
        case("narrow_copy", s, a)
        case("narrow_copy.out", s, a, out=empty_out(s))
for dt in ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float64"):
    case("narrow_copy", dict(C23, dtype=dt), {"dim": 1, "start": 1, "length": 2})
    case("narrow_copy.out", dict(T32, dtype=dt), {"dim": 0, "start": 1, "length": 2},
         out=spec(dtype=dt, sizes=(0,)))
# out= tensors of the right size (kept as they are), of another size (resized), of another dtype.
for op, a in (("narrow_copy.out", {"dim": 1, "start": 1, "length": 2}),
              ("slice_copy.Tensor_out", {"dim": 1, "start": 1, "end": None, "step": 1}),
              ("permute_copy.out", {"dims": [1, 0]}), ("t_copy.out", {}),
              ("expand_copy.out", {"size": [2, 2, 3], "implicit": False}),
              ("select_copy.int_out", {"dim": 1, "index": -1}),
              ("diagonal_copy.out", {"offset": 0, "dim1": 0, "dim2": 1})):
    case(op, C23, a, out=spec(sizes=(7,)))
    case(op, C23, a, out=spec(sizes=(0,), dtype="float64"))
    case(op, C23, a, out=spec(sizes=(2, 5, 3), strides=(1, 2, 10), storage=30))
# An out= of the right sizes and other strides keeps its strides (the elements follow them). Not
# for narrow_copy: PyTorch's CPU kernel copies bytes as if `out` were contiguous (see the test).
case("permute_copy.out", C23, {"dims": [1, 0]}, out=spec(sizes=(3, 2), strides=(1, 3), storage=6))
case("slice_copy.Tensor_out", C23, {"dim": 1, "start": 1, "end": None, "step": 1},
     out=spec(sizes=(2, 2), strides=(1, 2), storage=4))

# The scatter family: out-of-place writes of `src` into a view of `self`.
V3 = spec(sizes=(3,))
OFF = spec(sizes=(2, 3), strides=(6, 2), offset=3, storage=20)
C34 = spec(sizes=(3, 4))
T34 = spec(sizes=(3, 4), strides=(1, 3), storage=12)
Z = spec(sizes=())


def src(*sizes, dtype="float32"):
    return spec(sizes=sizes, dtype=dtype)


SCATTERS = []


def scatter(op, s, src_spec, **args):
    SCATTERS.append((op, s, src_spec, args))


for s in (C34, T34, C234):
    last = s["sizes"][-1]
    scatter("slice_scatter", s, src(*s["sizes"][:-1], 2), dim=-1, start=-3, end=-1, step=1)
    scatter("slice_scatter", s, src(*s["sizes"][:-1], 2), dim=-1, start=None, end=None, step=2)
    scatter("slice_scatter", s, src(*s["sizes"][:-1], 1), dim=-1, start=-1, end=None, step=3)
    scatter("slice_scatter", s, src(*s["sizes"][:-1], last), dim=-1, start=-100, end=100, step=1)
    scatter("slice_scatter", s, src(*s["sizes"][:-1], 0), dim=-1, start=3, end=1, step=1)
    scatter("slice_scatter", s, src(1, *s["sizes"][1:]), dim=0, start=1, end=2, step=1)
    scatter("slice_scatter", s, src(*s["sizes"][:-1], 2), dim=-1, start=None, end=None, step=-1)
    scatter("slice_scatter", s, src(*s["sizes"][:-1], 2), dim=-1, start=None, end=None, step=0)
    scatter("slice_scatter", s, src(*s["sizes"][:-1], 3), dim=-1, start=0, end=2, step=1)
    scatter("slice_scatter", s, src(*s["sizes"][:-1], 2), dim=len(s["sizes"]), start=0, end=2, step=1)
    scatter("select_scatter", s, src(*s["sizes"][:-1]), dim=-1, index=-1)
    scatter("select_scatter", s, src(*s["sizes"][1:]), dim=0, index=-3 if s["sizes"][0] >= 3 else -2)
    scatter("select_scatter", s, src(*s["sizes"][:-1]), dim=-1, index=last)
    scatter("select_scatter", s, src(*s["sizes"][:-1]), dim=-1, index=-last - 1)
    scatter("select_scatter", s, src(*s["sizes"][1:], 1), dim=0, index=0)
    scatter("select_scatter", s, src(*s["sizes"][:-1]), dim=-len(s["sizes"]) - 1, index=0)
    scatter("diagonal_scatter", s, src(3), offset=0, dim1=-2, dim2=-1)
    scatter("diagonal_scatter", s, src(2), offset=-1, dim1=-1, dim2=-2)
    scatter("diagonal_scatter", s, src(1), offset=3, dim1=-2, dim2=-1)
    scatter("diagonal_scatter", s, src(0), offset=10, dim1=-2, dim2=-1)
    scatter("diagonal_scatter", s, src(2), offset=0, dim1=-2, dim2=-1)
    scatter("diagonal_scatter", s, src(3), offset=0, dim1=0, dim2=0)
    scatter("as_strided_scatter", s, src(2, 2), size=[2, 2], stride=[4, 1], storage_offset=1)
    scatter("as_strided_scatter", s, src(3), size=[3], stride=[5], storage_offset=None)
    scatter("as_strided_scatter", s, src(2), size=[2, 1], stride=[1, 1], storage_offset=0)
    scatter("as_strided_scatter", s, src(4), size=[4], stride=[4], storage_offset=2)
for s in (spec(sizes=(2, 3, 4)),):
    scatter("diagonal_scatter", s, src(2, 3), offset=0, dim1=0, dim2=2)
    scatter("diagonal_scatter", s, src(4, 2), offset=-1, dim1=1, dim2=0)
scatter("select_scatter", V3, src(), dim=0, index=1)
scatter("select_scatter", Z, src(), dim=0, index=0)
scatter("slice_scatter", Z, src(), dim=0, start=0, end=1, step=1)
scatter("diagonal_scatter", V3, src(3), offset=0, dim1=0, dim2=1)
scatter("as_strided_scatter", Z, src(), size=[], stride=[], storage_offset=0)
scatter("slice_scatter", E03, src(0, 2), dim=1, start=1, end=None, step=1)
scatter("slice_scatter", EXP, src(4, 1), dim=1, start=1, end=2, step=1)
# src of another dtype is converted (copy_); a broadcastable src is not accepted.
scatter("slice_scatter", C34, src(3, 2, dtype="int64"), dim=1, start=0, end=2, step=1)
scatter("select_scatter", C34, src(4, dtype="float64"), dim=0, index=1)
scatter("slice_scatter", C34, src(1, 2), dim=1, start=0, end=2, step=1)
for dt in ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float64"):
    scatter("slice_scatter", dict(C34, dtype=dt), src(3, 2, dtype=dt), dim=1, start=1, end=None, step=2)
    scatter("select_scatter", dict(T34, dtype=dt), src(4, dtype=dt), dim=0, index=2)
    scatter("diagonal_scatter", dict(C34, dtype=dt), src(3, dtype=dt), offset=1, dim1=0, dim2=1)
    scatter("as_strided_scatter", dict(C34, dtype=dt), src(2, 3, dtype=dt), size=[2, 3], stride=[1, 4],
            storage_offset=1)

for op, s, sr, args in SCATTERS:
    case(op, s, args, src=sr)
    case(op + ".out", s, args, src=sr, out=empty_out(s))
# out= overloads: another dtype, another size, other strides of the right size.
for op, sr, args in (("slice_scatter.out", src(3, 2), {"dim": 1, "start": 1, "end": 3, "step": 1}),
                     ("select_scatter.out", src(3), {"dim": 1, "index": 0}),
                     ("diagonal_scatter.out", src(3), {"offset": 1, "dim1": 0, "dim2": 1}),
                     ("as_strided_scatter.out", src(2), {"size": [2], "stride": [5], "storage_offset": 1})):
    case(op, C34, args, src=sr, out=spec(sizes=(0,), dtype="int32"))
    case(op, C34, args, src=sr, out=spec(sizes=(5,)))
    case(op, C34, args, src=sr, out=spec(sizes=(3, 4), strides=(1, 3), storage=12))


def call(op, t, c):
    a = dict(c["args"])
    name, _, overload = op.partition(".")
    packet = getattr(A, name)
    fn = getattr(packet, overload or "default")
    if "dtype" in a and isinstance(a["dtype"], str):
        a["dtype"] = dtype_of(a["dtype"])
    if "dim" in a and isinstance(a["dim"], list) and name == "squeeze_copy":
        a["dim"] = list(a["dim"])
    kw = {}
    if "out" in c:
        out = c["out_tensor"]
        kw["out"] = out
    if "src" in c:
        return fn(t, make(c["src_on"]), **a, **kw)
    return fn(t, **a, **kw)


def record(c):
    c = json.loads(json.dumps(c))
    t = make(c["self"])
    if "src" in c:
        c["src_on"] = dict(c["src"], device=c["self"]["device"])
    out = None
    if "out" in c:
        if isinstance(c["out"], list):
            out = [make(s) for s in c["out"]]
        else:
            out = make(c["out"])
        c["out_tensor"] = out
    op = c["op"]
    if op in ("split_copy.Tensor_out", "split_with_sizes_copy.out", "unbind_copy.int_out"):
        # As many outputs as the functional overload returns.
        try:
            n = len(call(op.replace(".Tensor_out", ".Tensor").replace(".int_out", ".int").replace(".out", ""),
                         t, {k: v for k, v in c.items() if k != "out"}))
        except Exception:  # noqa: BLE001
            n = 1
        out = [make(c["out"]) for _ in range(n)]
        c["out"] = [c["out"]] * n
        c["out_tensor"] = out
    try:
        res = call(op, t, c)
    except Exception as e:  # noqa: BLE001
        c["expect"] = error(e)
    else:
        if "out" in c:
            res = out
        outs = list(res) if isinstance(res, (list, tuple)) else [res]
        descs = []
        for o in outs:
            d = describe(o, t, with_values=True)
            d.pop("storage_nbytes")
            d.pop("is_self")
            descs.append(d)
        c["expect"] = {"list": descs} if isinstance(res, (list, tuple)) else {"tensor": descs[0]}
    c.pop("out_tensor", None)
    c.pop("src_on", None)
    c["self_after"] = describe(t, with_values=True)
    c["self_after"].pop("storage_nbytes")
    return c


def main():
    cases = []
    for c in CASES:
        cases.append(record(c))
        m = dict(c, self=on("meta", c["self"]))
        if "out" in c:
            m["out"] = on("meta", c["out"])
        cases.append(record(m))
    json.dump({"torch_version": torch.__version__, "cases": cases}, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
