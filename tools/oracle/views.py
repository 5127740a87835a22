"""Record PyTorch's view operators (sizes, strides, storage offsets, aliasing, version
sharing, errors) on CPU and meta tensors for crates/cpu/tests/views.rs:

    /tmp/torchref/bin/python tools/oracle/views.py > crates/cpu/tests/fixtures/views.json
"""
import json
import os
import sys
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from views_common import describe, dtype_of, error, make, on, shares_version, spec, values  # noqa: E402

warnings.filterwarnings("ignore")
A = torch.ops.aten
I64_MIN, I64_MAX = -(2 ** 63), 2 ** 63 - 1

# Inputs: contiguous, transposed, strided with an offset, expanded, 0-dim, empty, size-1 dims.
C23 = spec(sizes=(2, 3))
T32 = spec(sizes=(3, 2), strides=(1, 3), storage=6)
OFF = spec(sizes=(2, 3), strides=(6, 2), offset=3, storage=20)
EXP = spec(sizes=(4, 3), strides=(0, 1), storage=3)
ROW = spec(sizes=(1, 3))
Z = spec(sizes=())
E03 = spec(sizes=(0, 3))
C234 = spec(sizes=(2, 3, 4))
P423 = spec(sizes=(4, 2, 3), strides=(1, 12, 4), storage=24)
ONES = spec(sizes=(1, 3, 1, 2), strides=(7, 2, 7, 1), storage=6)
V6 = spec(sizes=(6,))
V5 = spec(sizes=(5,))
C24 = spec(sizes=(2, 4))

# (op, self spec, args); args are keyword-named as in the schema.
CASES = []


def case(op, s, **args):
    CASES.append((op, s, args))


for size in ([6], [3, 2], [-1], [-1, 2], [2, -1, 1], [1, 6, 1], [2, 5], [-1, -1], [-2, 3], [6, 0]):
    case("view", C23, size=size)
for s, sizes in ((T32, [[6], [3, 2], [3, 1, 2], [6, 1], [1, 3, 2]]),
                 (OFF, [[6], [2, 3, 1], [2, 1, 3], [1, 2, 3]]),
                 (EXP, [[12], [2, 2, 3], [4, 3, 1], [4, 1, 3]]),
                 (P423, [[4, 6], [24], [2, 2, 2, 3], [4, 2, 3, 1]]),
                 (E03, [[-1, 0], [0, -1], [3, 0], [-1], [0, 3, 1], [1, 0, 3]]),
                 (Z, [[], [1], [-1], [1, 1], [2]]),
                 (ONES, [[3, 2], [6], [3, 1, 2], [1, 1, 1, 3, 2, 1]])):
    for size in sizes:
        case("view", s, size=size)
        case("reshape", s, shape=size)
for s, size in ((C23, [3, 2]), (T32, [3, 2]), (OFF, [2, 3, 1]), (C23, [7])):
    case("_unsafe_view", s, size=size)
for size in ([6], [-1, 2], [3, 2]):
    case("reshape", C23, shape=size)
    case("reshape", OFF, shape=size)

for s, sizes in ((C23, [[2, 3], [4, 2, 3], [-1, -1], [2, 4], [3], [1, -1, -1], [-1, 2, 3]]),
                 (ROW, [[4, 3], [2, 4], [3], [-1, 2, 3], [2, 2, 3], [0, 3], [-2, 3]]),
                 (Z, [[2, 3], [-1], [], [0]]),
                 (EXP, [[2, 4, 3], [4, 3]]),
                 (spec(sizes=(3, 1)), [[3, 4], [-1, 4], [2, 3, 4], [3, -1]]),
                 (OFF, [[5, 2, 3]])):
    for size in sizes:
        case("expand", s, size=size)

for s, pairs in ((C234, [(0, 2), (-1, 0), (1, 1), (0, 3), (-4, 0)]), (Z, [(0, -1), (0, 1)]),
                 (OFF, [(0, 1)]), (EXP, [(1, 0)])):
    for d0, d1 in pairs:
        case("transpose", s, dim0=d0, dim1=d1)
        case("transpose_", s, dim0=d0, dim1=d1)
for s in (C23, V6, Z, C234, OFF):
    case("t", s)
    case("t_", s)
for s, dims_list in ((C234, [[2, 0, 1], [-1, 0, 1], [0, 0, 1], [0, 1], [0, 1, 3], [0, 1, 2]]),
                     (Z, [[], [0]]), (P423, [[1, 2, 0]]), (OFF, [[1, 0]])):
    for dims in dims_list:
        case("permute", s, dims=dims)

for s in (ONES, Z, C23, EXP, E03, spec(sizes=(1,))):
    case("squeeze", s)
    case("squeeze_", s)
for s, dims in ((ONES, [0, 1, -2, 3, 4, -5]), (Z, [0, -1, 1]), (C23, [0]), (spec(sizes=(1, 1)), [1])):
    for d in dims:
        case("squeeze.dim", s, dim=d)
        case("squeeze_.dim", s, dim=d)
for s, dl in ((ONES, [[0, 2], [0, 0], [], [1, 2], [-1, -2], [0, 4]]), (Z, [[0], [0, -1], []])):
    for dims in dl:
        case("squeeze.dims", s, dim=dims)
        case("squeeze_.dims", s, dim=dims)
for s, dims in ((C23, [0, 1, 2, -1, -3, 3, -4]), (Z, [0, -1, 1]), (T32, [1, 2]), (EXP, [0, 1]),
                (OFF, [2, 1]), (E03, [1])):
    for d in dims:
        case("unsqueeze", s, dim=d)
        case("unsqueeze_", s, dim=d)

for s in (C23, OFF, EXP):
    for (dim, start, end, step) in ((0, None, None, 1), (1, 1, None, 1), (1, -2, None, 1),
                                    (1, None, -1, 1), (1, 0, 3, 2), (1, -100, 100, 1), (1, 5, 2, 1),
                                    (0, 1, 0, 1), (1, None, None, 0), (1, None, None, -1),
                                    (2, None, None, 1), (-1, 0, 3, 3), (1, I64_MIN, I64_MAX, 1),
                                    (1, 1, I64_MAX, 2), (0, -1, None, 5), (1, 2, 2, 1)):
        case("slice.Tensor", s, dim=dim, start=start, end=end, step=step)
case("slice.Tensor", Z, dim=0, start=0, end=1, step=1)
case("slice.Tensor", E03, dim=0, start=0, end=1, step=1)
for s, pairs in ((C23, [(0, 1), (1, -1), (1, -3), (1, 3), (0, -3), (2, 0), (0, -2)]), (Z, [(0, 0)]),
                 (OFF, [(1, 2), (0, 1)]), (EXP, [(0, 3), (1, 0)]), (E03, [(1, 1), (0, 0)])):
    for dim, index in pairs:
        case("select.int", s, dim=dim, index=index)
for s, args in ((C23, [(1, 1, 2), (1, -1, 1), (0, 0, 0), (1, 3, 0), (1, 4, 0), (1, -4, 0), (1, 2, 2),
                       (1, 0, -1), (2, 0, 1), (-1, -3, 3)]),
                (Z, [(0, 0, 1)]), (OFF, [(1, 1, 2)])):
    for dim, start, length in args:
        case("narrow", s, dim=dim, start=start, length=length)
for s, args in ((C234, [(2, 2, 1), (2, 2, 2), (2, 4, 1), (2, 5, 1), (2, -1, 1), (2, 2, 0), (-1, 3, 2),
                        (0, 1, 3), (3, 1, 1)]),
                (OFF, [(1, 2, 1), (0, 2, 1)]), (Z, [(0, 1, 1), (0, 0, 1), (0, 2, 1), (-1, 1, 2)]),
                (E03, [(0, 0, 1), (1, 3, 1)]), (EXP, [(0, 2, 2)])):
    for d, size, step in args:
        case("unfold", s, dimension=d, size=size, step=step)
for s, args in ((C23, [(0, 0, 1), (1, 0, 1), (-1, 0, 1), (5, 0, 1), (-5, 0, 1), (0, 1, 0), (0, -1, -2),
                       (2, 0, 1), (-2, 1, 0), (0, 0, 0), (0, 0, 2)]),
                (C234, [(0, 0, 2), (1, 2, 0), (0, 1, 1), (-1, -1, 1)]), (V6, [(0, 0, 1)]),
                (Z, [(0, 0, 1)]), (OFF, [(1, 0, 1)]), (EXP, [(0, 1, 0)]), (E03, [(0, 0, 1)])):
    for offset, d1, d2 in args:
        case("diagonal", s, offset=offset, dim1=d1, dim2=d2)

for s, args in ((C23, [((3, 2), (1, 3), None), ((2,), (1,), 5), ((2,), (1,), 4), ((6,), (1,), None),
                       ((7,), (1,), None), ((2,), (1, 2), None), ((2,), (-1,), None), ((2,), (1,), -1),
                       ((0,), (1,), 100), ((-1,), (1,), None), ((2, 2), (0, 1), 2), ((), (), 5),
                       ((), (), 6)]),
                (OFF, [((2,), (1,), None), ((4, 4), (4, 1), None), ((5, 5), (4, 1), None)]),
                (Z, [((1,), (1,), None), ((3,), (0,), None)])):
    for size, stride, off in args:
        case("as_strided", s, size=list(size), stride=list(stride), storage_offset=off)
        case("as_strided_", s, size=list(size), stride=list(stride), storage_offset=off)

for s, args in ((C23, [(1, 0), (2, 1), (5, 1), (0, 1), (-1, 0), (2, -1), (1, 2)]),
                (E03, [(0, 0), (2, 0), (1, 1)]), (Z, [(1, 0)]), (OFF, [(2, 1)]), (V5, [(2, 0)])):
    for size, dim in args:
        case("split.Tensor", s, split_size=size, dim=dim)
for s, args in ((C23, [([1, 1], 0), ([1, 2], 1), ([3, 0], 1), ([1, 1], 1), ([1, -1, 3], 1), ([0, 2, 0], 0),
                       ([2], 2)]),
                (Z, [([1], 0)]), (E03, [([0, 0], 0)]), (OFF, [([2, 1], 1)])):
    for sizes, dim in args:
        case("split_with_sizes", s, split_sizes=sizes, dim=dim)
        case("split.sizes", s, split_size=sizes, dim=dim)
for s, args in ((C23, [(2, 1), (3, 1), (4, 1), (1, 0), (0, 0), (-1, 0), (2, 2)]),
                (E03, [(3, 0), (2, 1)]), (Z, [(1, 0)]), (V5, [(3, 0), (2, 0), (5, 0), (6, 0)]),
                (V6, [(4, 0)])):
    for chunks, dim in args:
        case("chunk", s, chunks=chunks, dim=dim)
for s, dims in ((C23, [0, 1, -1, 2]), (Z, [0]), (E03, [0, 1]), (OFF, [1]), (EXP, [0])):
    for d in dims:
        case("unbind.int", s, dim=d)
for s, args in ((C234, [(0, -1), (1, 2), (0, 0), (2, 1), (0, 1), (-2, -1), (3, 3)]), (T32, [(0, 1)]),
                (Z, [(0, -1), (0, 0)]), (V6, [(0, 0)]), (P423, [(1, 2), (0, 1)]), (OFF, [(0, 1)])):
    for a, b in args:
        case("flatten.using_ints", s, start_dim=a, end_dim=b)
for s, args in ((C234, [(0, 2), (-1, 0), (1, 1), (3, 0)]), (Z, [(0, 0), (-1, 0)])):
    for a, b in args:
        case("movedim.int", s, source=a, destination=b)
for s, args in ((C234, [([0, 1], [2, 0]), ([0, 1], [0]), ([0, 0], [0, 1]), ([0, 1], [1, 1]), ([], []),
                        ([2, 0, 1], [0, 1, 2]), ([-1], [0])]),
                (Z, [([0], [0])])):
    for a, b in args:
        case("movedim.intlist", s, source=a, destination=b)
for s in (C23, OFF, EXP, Z, E03):
    case("alias", s)
    case("detach", s)


F = lambda dt, **kw: spec(dtype=dt, **kw)  # noqa: E731
for s, dts in ((C23, ["int16", "float64", "int32", "uint8", "float32", "bfloat16"]),
               (C24, ["float64", "int64", "int8"]),
               (spec(sizes=(2, 2), strides=(4, 1), offset=1, storage=8), ["float64", "int16"]),
               (spec(sizes=(2, 2), strides=(6, 1), storage=8), ["float64"]),
               (spec(sizes=(2, 2), strides=(5, 1), storage=8), ["int16", "float64"]),
               (T32, ["int16", "float32"]), (Z, ["int16", "int32", "float64"]),
               (F("int16", sizes=(2, 4)), ["int32", "float32", "uint8", "bool", "float16", "int64"]),
               (F("bool", sizes=(2, 4)), ["uint8", "int8", "float16"]),
               (F("float16", sizes=(3,)), ["int16", "bfloat16", "int8"]),
               (F("int64", sizes=(2, 1)), ["int32", "float16", "bool"]),
               (E03, ["float64", "int16"])):
    for dt in dts:
        case("view.dtype", s, dtype=dt)

for s, other in ((C23, [6]), (T32, [6]), (C23, [3, 2]), (C23, [7])):
    case("view_as", s, other=other)
    case("reshape_as", s, other=other)
for s, other in ((ROW, [4, 3]), (C23, [2, 4]), (Z, [2, 2])):
    case("expand_as", s, other=other)

for s, args in ((C23, [([3, 2], None), ([10], None), ([2, 3], None), ([0], None), ([-1], None),
                       ([2, 3], "preserve_format"), ([2, 3], "channels_last"), ([1, 2, 3], "contiguous_format")]),
                (T32, [([3, 2], None), ([2, 3], None), ([3, 2], "contiguous_format")]),
                (OFF, [([2, 3], None), ([4, 5], None), ([30], None)]),
                (spec(sizes=(2, 3, 4, 5)), [([2, 3, 4, 5], "channels_last"), ([2, 3, 4, 5, 1], "channels_last_3d"),
                                            ([1, 2, 3, 4, 5], "channels_last"), ([3, 4, 5, 2], "channels_last")]),
                (Z, [([], None), ([2, 2], None)]), (E03, [([5], None)])):
    for size, fmt in args:
        case("resize_", s, size=size, memory_format=fmt)


def run(op, t, a):
    if op == "view":
        return t.view(a["size"])
    if op == "reshape":
        return t.reshape(a["shape"])
    if op == "_unsafe_view":
        return A._unsafe_view(t, a["size"])
    if op == "expand":
        return t.expand(a["size"])
    if op in ("transpose", "transpose_"):
        return getattr(t, op)(a["dim0"], a["dim1"])
    if op in ("t", "t_", "squeeze", "squeeze_", "detach_"):
        return getattr(t, op)()
    if op == "detach":
        return A.detach(t)
    if op == "alias":
        return A.alias(t)
    if op == "permute":
        return t.permute(a["dims"])
    if op in ("squeeze.dim", "squeeze_.dim", "squeeze.dims", "squeeze_.dims"):
        return getattr(t, op.split(".")[0])(a["dim"] if isinstance(a["dim"], int) else tuple(a["dim"]))
    if op in ("unsqueeze", "unsqueeze_"):
        return getattr(t, op)(a["dim"])
    if op == "slice.Tensor":
        return A.slice.Tensor(t, a["dim"], a["start"], a["end"], a["step"])
    if op == "select.int":
        return A.select.int(t, a["dim"], a["index"])
    if op == "narrow":
        return t.narrow(a["dim"], a["start"], a["length"])
    if op == "unfold":
        return t.unfold(a["dimension"], a["size"], a["step"])
    if op == "diagonal":
        return t.diagonal(a["offset"], a["dim1"], a["dim2"])
    if op in ("as_strided", "as_strided_"):
        return getattr(t, op)(a["size"], a["stride"], a["storage_offset"])
    if op == "split.Tensor":
        return A.split.Tensor(t, a["split_size"], a["dim"])
    if op == "split_with_sizes":
        return A.split_with_sizes(t, a["split_sizes"], a["dim"])
    if op == "split.sizes":
        return A.split.sizes(t, a["split_size"], a["dim"])
    if op == "chunk":
        return t.chunk(a["chunks"], a["dim"])
    if op == "unbind.int":
        return t.unbind(a["dim"])
    if op == "flatten.using_ints":
        return t.flatten(a["start_dim"], a["end_dim"])
    if op == "movedim.int":
        return A.movedim.int(t, a["source"], a["destination"])
    if op == "movedim.intlist":
        return A.movedim.intlist(t, a["source"], a["destination"])
    if op == "view.dtype":
        return t.view(dtype_of(a["dtype"]))
    if op in ("view_as", "reshape_as", "expand_as"):
        other = torch.zeros(a["other"], device=t.device)
        return getattr(t, op)(other)
    if op == "resize_":
        fmt = a["memory_format"]
        return t.resize_(a["size"], memory_format=getattr(torch, fmt) if fmt else None)
    raise ValueError(op)


def record(op, s, a):
    t = make(s)
    entry = {"op": op, "self": s, "args": a}
    try:
        out = run(op, t, a)
    except Exception as e:  # noqa: BLE001
        entry["expect"] = error(e)
        return entry
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    descs = [describe(o, t, with_values=(op == "resize_")) for o in outs]
    if op == "resize_":
        for d in descs:
            d.pop("values", None)
    for d, o in zip(descs, outs):
        if s["device"] == "cpu" and op != "resize_":
            d["values"] = values(o)
    if outs and op not in ("resize_",) and not any(d["is_self"] for d in descs):
        # Shared version counters: an in-place write to the input shows in the outputs.
        fresh = make(s)
        fresh_out = run(op, fresh, a)
        fresh_outs = list(fresh_out) if isinstance(fresh_out, (tuple, list)) else [fresh_out]
        entry["shares_version"] = [shares_version(o, fresh) for o in fresh_outs[:1]][0] if fresh_outs else None
    entry["expect"] = {"list": descs} if isinstance(out, (tuple, list)) else {"tensor": descs[0]}
    entry["self_after"] = describe(t)
    return entry


def main():
    cases = []
    for op, s, a in CASES:
        cases.append(record(op, s, a))
        cases.append(record(op, on("meta", s), a))
    json.dump({"torch_version": torch.__version__, "cases": cases}, sys.stdout, indent=None,
              separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
