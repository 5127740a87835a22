"""Record PyTorch's answers for the indexing kernels' tests (cat, index_select, gather,
scatter*, index.Tensor, index_put_, masked_fill_, masked_select, flip, roll, tril, triu,
sort, topk). Run with a PyTorch install:

    python tools/oracle/indexing.py > crates/cpu/tests/fixtures/indexing.json

Every case lists its inputs (the whole storage of each tensor plus sizes / strides / offset,
so strided views are rebuilt exactly), its arguments, and either PyTorch's outputs (values in
row-major order, sizes, strides, dtype) or its error (kind and message). The JSON is
committed; the tests read it, so CI needs no PyTorch."""
import json
import math
import warnings

import torch

warnings.filterwarnings("ignore")
torch.manual_seed(0)

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
          torch.float16, torch.bfloat16, torch.float32, torch.float64]
NAME = {d: str(d).replace("torch.", "") for d in DTYPES}


def value(v):
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(float(v))


def enc_input(t):
    """A tensor as (storage, geometry): the storage flattened, so views are rebuilt exactly."""
    n = t.untyped_storage().nbytes() // t.element_size()
    base = torch.as_strided(t, (n,), (1,), 0)
    return {"dtype": NAME[t.dtype], "storage": [value(v) for v in base.tolist()],
            "sizes": list(t.shape), "strides": list(t.stride()), "offset": t.storage_offset()}


def enc_output(t):
    return {"dtype": NAME[t.dtype], "values": [value(v) for v in t.reshape(-1).tolist()],
            "sizes": list(t.shape), "strides": list(t.stride())}


def enc_arg(a):
    if isinstance(a, torch.Tensor):
        return {"tensor": enc_input(a)}
    if isinstance(a, (list, tuple)):
        return {"list": [enc_arg(x) for x in a]}
    if a is None:
        return {"none": True}
    if isinstance(a, bool):
        return {"bool": a}
    if isinstance(a, int):
        return {"int": a}
    if isinstance(a, float):
        return {"float": value(a)}
    if isinstance(a, str):
        return {"str": a}
    raise TypeError(a)


CASES = []

# name -> how PyTorch runs it; args are positional, as in the Rust harness.
OPS = {
    "cat": lambda a, out: torch.cat(a[0], a[1], **out),
    "index_select": lambda a, out: torch.index_select(a[0], a[1], a[2], **out),
    "gather": lambda a, out: torch.gather(a[0], a[1], a[2], **out),
    "scatter_src": lambda a, out: torch.scatter(a[0], a[1], a[2], a[3], **out),
    "scatter_src_": lambda a, out: a[0].scatter_(a[1], a[2], a[3]),
    "scatter_value": lambda a, out: torch.scatter(a[0], a[1], a[2], a[3], **out),
    "scatter_value_": lambda a, out: a[0].scatter_(a[1], a[2], a[3]),
    "scatter_reduce": lambda a, out: torch.scatter(a[0], a[1], a[2], a[3], reduce=a[4], **out),
    "scatter_reduce_": lambda a, out: a[0].scatter_(a[1], a[2], a[3], reduce=a[4]),
    "scatter_value_reduce": lambda a, out: torch.scatter(a[0], a[1], a[2], a[3], reduce=a[4], **out),
    "scatter_value_reduce_": lambda a, out: a[0].scatter_(a[1], a[2], a[3], reduce=a[4]),
    "scatter_add": lambda a, out: torch.scatter_add(a[0], a[1], a[2], a[3], **out),
    "scatter_add_": lambda a, out: a[0].scatter_add_(a[1], a[2], a[3]),
    "index": lambda a, out: (torch.ops.aten.index.Tensor_out(a[0], a[1], **out) if out
                             else torch.ops.aten.index.Tensor(a[0], a[1])),
    "index_put_": lambda a, out: torch.ops.aten._index_put_impl_(a[0], a[1], a[2], a[3]),
    "masked_fill_scalar_": lambda a, out: a[0].masked_fill_(a[1], a[2]),
    "masked_fill_tensor_": lambda a, out: a[0].masked_fill_(a[1], a[2]),
    "masked_select": lambda a, out: torch.masked_select(a[0], a[1], **out),
    "flip": lambda a, out: torch.flip(a[0], a[1]),
    "roll": lambda a, out: torch.roll(a[0], a[1], a[2]),
    "tril": lambda a, out: torch.tril(a[0], a[1], **out),
    "tril_": lambda a, out: a[0].tril_(a[1]),
    "triu": lambda a, out: torch.triu(a[0], a[1], **out),
    "triu_": lambda a, out: a[0].triu_(a[1]),
    "sort": lambda a, out: torch.sort(a[0], stable=a[1], dim=a[2], descending=a[3], **out),
    "topk": lambda a, out: torch.topk(a[0], a[1], a[2], a[3], a[4], **out),
}


def case(op, *args, out=None, check_strides=True):
    enc_args = [enc_arg(a) for a in args]
    rec = {"op": op, "args": enc_args, "check_strides": check_strides}
    kw = {}
    if out is not None:
        rec["out"] = [enc_input(o) for o in out] if isinstance(out, tuple) else [enc_input(out)]
        kw = {"out": out}
    try:
        r = OPS[op](list(args), kw)
        if isinstance(r, torch.Tensor):
            r = (r,)
        rec["result"] = [enc_output(x) for x in r]
    except Exception as e:  # noqa: BLE001 - we record whatever PyTorch raises
        rec["error"] = {"kind": type(e).__name__, "message": str(e).split("\n")[0]}
    CASES.append(rec)


def data(shape, dtype, seed=None, low=-5, high=5):
    """Deterministic test values of any dtype (floats include fractions)."""
    if seed is not None:
        torch.manual_seed(seed)
    n = math.prod(shape)
    if dtype == torch.bool:
        return (torch.randint(0, 2, (n,)) == 1).reshape(shape)
    if dtype.is_floating_point:
        return (torch.randn(n) * 3).to(dtype).reshape(shape)
    lo = 0 if dtype == torch.uint8 else low
    return torch.randint(lo, high, (n,)).to(dtype).reshape(shape)


def T(x):
    """A transposed (non-contiguous) view with the same values."""
    return x.t().contiguous().t() if x.dim() == 2 else x


def strided(x):
    """A view of `x` whose elements are spaced by 2 along the last dimension."""
    big = torch.zeros(*x.shape[:-1], x.shape[-1] * 2, dtype=x.dtype)
    big[..., ::2] = x
    return big[..., ::2]


# ----------------------------------------------------------------------------- cat
for dt in DTYPES:
    case("cat", [data((2, 3), dt, 1), data((1, 3), dt, 2)], 0)
    case("cat", [data((2, 3), dt, 3), data((2, 2), dt, 4)], -1)
case("cat", [T(data((3, 4), torch.float32, 5)), data((3, 4), torch.float32, 6)], 1)
case("cat", [strided(data((2, 3), torch.int64, 7)), data((2, 1), torch.int64, 8)], 1)
case("cat", [data((2, 3), torch.int32, 9), data((1, 3), torch.bool, 10), data((1, 3), torch.float16, 11)], 0)
case("cat", [data((2,), torch.int64, 9), data((2,), torch.int32, 10)], 0)
case("cat", [data((2,), torch.uint8, 9), data((2,), torch.int8, 10)], 0)
case("cat", [data((2, 3), torch.float32, 12), torch.zeros(0, dtype=torch.float64)], 0)
case("cat", [torch.zeros(0), data((2, 3), torch.int32, 12)], 1)
case("cat", [torch.zeros(0), torch.zeros(0, dtype=torch.int64)], 5)
case("cat", [torch.zeros(2, 0), torch.zeros(3, 0)], 0)
case("cat", [data((2, 3, 4, 5), torch.float32, 13).to(memory_format=torch.channels_last)] * 2, 0)
case("cat", [data((2, 3, 4, 5), torch.float32, 13).to(memory_format=torch.channels_last),
             data((2, 3, 4, 5), torch.float32, 14)], 1)
case("cat", [data((2, 3), torch.float32, 15)] * 3, 0, out=torch.zeros(0))
case("cat", [data((2, 3), torch.int32, 15)] * 2, 1, out=torch.zeros(2, 6, dtype=torch.float64))
case("cat", [data((2, 3), torch.float32, 15)] * 2, 1, out=torch.zeros(5, dtype=torch.float32))
case("cat", [data((2, 3), torch.float32, 15)] * 2, 0, out=torch.zeros(0, dtype=torch.int32))
case("cat", [data((2, 3), torch.float32, 15)] * 2, 0, out=torch.zeros(0, dtype=torch.bool))
case("cat", [torch.tensor(1.0), torch.tensor(2.0)], 0)
case("cat", [], 0)
case("cat", [data((2, 3), torch.float32, 1), data((3,), torch.float32, 1)], 0)
case("cat", [data((2, 3), torch.float32, 1), data((3, 4), torch.float32, 1)], 0)
case("cat", [data((2, 3), torch.float32, 1), data((3, 4), torch.float32, 1)], 1)
case("cat", [data((2, 3), torch.float32, 1)] * 2, 2)
case("cat", [data((2, 3), torch.float32, 1)] * 2, -3)
case("cat", [torch.zeros(2, 0), torch.zeros(3, 1)], 0)

# ----------------------------------------------------------------------------- index_select
for dt in DTYPES:
    case("index_select", data((4, 3), dt, 20), 0, torch.tensor([3, 0, 0, 2]))
    case("index_select", data((2, 5), dt, 21), 1, torch.tensor([4, 1], dtype=torch.int32))
case("index_select", data((3, 4, 20), torch.float32, 22), 1, torch.tensor([3, 1, 1]))
case("index_select", T(data((4, 5), torch.float64, 23)), 0, torch.tensor([1, 3]))
case("index_select", T(data((4, 5), torch.int16, 23)), 1, torch.tensor([4, 0, 2]))
case("index_select", strided(data((3, 40), torch.float32, 24)), 1, torch.tensor([39, 0, 7]))
case("index_select", data((6,), torch.int64, 25), 0, torch.tensor([5, 0, 5]))
case("index_select", torch.tensor(7.5), 0, torch.tensor([0]))
case("index_select", torch.tensor(7.5), 0, torch.tensor(0))
case("index_select", data((4, 3), torch.float32, 26), 0, torch.tensor([], dtype=torch.int64))
case("index_select", data((4, 3), torch.float32, 26), 0, torch.tensor([1, 2]), out=torch.zeros(7))
case("index_select", data((4, 3), torch.float32, 26), 2, torch.tensor([0]))
case("index_select", data((4, 3), torch.float32, 26), 0, torch.tensor([[0]]))
case("index_select", data((4, 3), torch.float32, 26), 0, torch.tensor([0.0]))
case("index_select", data((4, 3), torch.float32, 26), 0, torch.tensor([4]))
case("index_select", data((4, 3), torch.float32, 26), 0, torch.tensor([-1]))
case("index_select", data((4,), torch.float32, 26), 0, torch.tensor([4]))
case("index_select", torch.tensor(7.5), 0, torch.tensor([1]))
case("index_select", torch.tensor(7.5), 0, torch.tensor([0, 0]))
case("index_select", data((4, 3), torch.float32, 26), 0, torch.tensor([1]), out=torch.zeros(0, dtype=torch.int64))
case("index_select", torch.zeros(0, 3), 0, torch.tensor([0]))
case("index_select", torch.zeros(2, 0), 0, torch.tensor([1, 0]))

# ----------------------------------------------------------------------------- gather
for dt in DTYPES:
    case("gather", data((3, 4), dt, 30), 0, torch.tensor([[2, 0, 1, 1], [0, 0, 2, 1]]))
    case("gather", data((3, 4), dt, 31), 1, torch.tensor([[3, 0], [1, 1], [2, 3]], dtype=torch.int32))
case("gather", data((2, 3, 4), torch.float32, 32), 2, torch.randint(0, 4, (2, 2, 6)))
case("gather", data((2, 3, 4), torch.float32, 33), 0, torch.randint(0, 2, (2, 3, 4)))
case("gather", T(data((4, 3), torch.float64, 34)), 0, torch.tensor([[3, 2, 1], [0, 0, 0]]))
case("gather", data((4, 3), torch.int64, 35), 1, T(torch.tensor([[0, 1, 2, 0], [2, 2, 1, 0]]).t().contiguous()))
case("gather", torch.tensor(4.0), 0, torch.tensor(0))
case("gather", torch.tensor(4.0), 0, torch.tensor([0, 0]))
case("gather", data((3, 4), torch.float32, 36), 0, torch.zeros(0, 4, dtype=torch.int64))
case("gather", data((3, 4), torch.float32, 36), 0, torch.zeros(0, dtype=torch.float32))
case("gather", data((3, 4), torch.float32, 36), 1, torch.tensor([[1]]), out=torch.zeros(5, 5))
case("gather", data((3, 4), torch.float32, 36), 2, torch.tensor([[0]]))
case("gather", data((3, 4), torch.float32, 36), 0, torch.tensor([[0.0]]))
case("gather", data((3, 4), torch.float32, 36), 0, torch.tensor([0]))
case("gather", data((3, 4), torch.float32, 36), 0, torch.zeros(2, 5, dtype=torch.int64))
case("gather", data((3, 4), torch.float32, 36), 0, torch.tensor([[3]]))
case("gather", data((3, 4), torch.float32, 36), 1, torch.tensor([[-1]]))

# ----------------------------------------------------------------------------- scatter
idx2 = torch.tensor([[0, 1, 2, 0], [2, 0, 0, 1]])
for dt in DTYPES:
    case("scatter_src", data((3, 4), dt, 40), 0, idx2, data((2, 4), dt, 41))
    case("scatter_value", data((3, 4), dt, 42), 1, torch.tensor([[3], [0], [1]]), 1)
    case("scatter_add", data((3, 4), dt, 43), 0, idx2, data((2, 4), dt, 44))
    case("scatter_reduce", data((3, 4), dt, 45), 0, idx2, data((2, 4), dt, 46), "multiply")
    case("scatter_reduce", data((3, 4), dt, 47), 0, idx2, data((2, 4), dt, 48), "add")
    case("scatter_value_reduce", data((3, 4), dt, 49), 1, torch.tensor([[0, 0], [1, 3], [2, 2]]),
         2 if not dt.is_floating_point else 1.5, "add")
    case("scatter_value_reduce", data((3, 4), dt, 50), 1, torch.tensor([[0, 0], [1, 3], [2, 2]]), 3, "multiply")
case("scatter_src_", data((3, 4), torch.float32, 51), 1, torch.tensor([[3, 2], [0, 1]], dtype=torch.int32),
     data((2, 3), torch.float32, 52))
case("scatter_add_", data((5,), torch.float32, 53), 0, torch.tensor([0, 0, 4, 0, 1, 0]), data((6,), torch.float32, 54))
case("scatter_add_", data((5,), torch.float16, 53), 0, torch.tensor([0, 0, 4, 0, 1, 0]), data((6,), torch.float16, 54))
case("scatter_add_", T(data((4, 3), torch.float64, 55)), 0, torch.tensor([[3, 3, 3]]), data((1, 3), torch.float64, 56))
case("scatter_add", data((3, 4), torch.float32, 57), 1, strided(torch.tensor([[0, 1], [1, 3], [3, 3]])),
     T(data((4, 3), torch.float32, 58).t().contiguous()))
case("scatter_value_", data((3,), torch.int64, 59), 0, torch.tensor([1]), 2.7)
case("scatter_value_", data((3,), torch.uint8, 59), 0, torch.tensor([1]), 300)
case("scatter_value_", torch.tensor(3.0), 0, torch.tensor(0), 9.0)
case("scatter_reduce_", data((3, 4), torch.float32, 60), 0, idx2, data((2, 4), torch.float32, 61), "add")
case("scatter_value_reduce_", data((3, 4), torch.float32, 62), 0, idx2, 2.0, "multiply")
case("scatter_src", data((3, 4), torch.float32, 63), 0, torch.zeros(0, dtype=torch.int64), data((2, 4), torch.float32, 64))
case("scatter_src", data((3, 4), torch.float32, 63), 0, idx2, data((2, 4), torch.float32, 64), out=torch.zeros(0))
case("scatter_src", data((3, 4), torch.float32, 63), 0, idx2, data((2, 4), torch.float64, 64))
case("scatter_src", data((3, 4), torch.float32, 63), 0, idx2.float(), data((2, 4), torch.float32, 64))
case("scatter_src", data((3, 4), torch.float32, 63), 0, torch.tensor([[3]]), data((2, 4), torch.float32, 64))
case("scatter_src", data((3, 4), torch.float32, 63), 0, torch.tensor([[-1]]), data((2, 4), torch.float32, 64))
case("scatter_src", data((3, 4), torch.float32, 63), 2, idx2, data((2, 4), torch.float32, 64))
case("scatter_src", data((3, 4), torch.float32, 63), 0, torch.zeros(2, 5, dtype=torch.int64), data((2, 5), torch.float32, 64))
case("scatter_src", data((3, 4), torch.float32, 63), 0, torch.zeros(2, 4, dtype=torch.int64), data((1, 4), torch.float32, 64))
case("scatter_src", data((3, 4), torch.float32, 63), 0, torch.zeros(4, dtype=torch.int64), data((4,), torch.float32, 64))
case("scatter_value", data((3, 4), torch.float32, 63), 1, torch.zeros(3, 5, dtype=torch.int64), 1.0)
case("scatter_reduce", data((3, 4), torch.float32, 63), 0, idx2, data((2, 4), torch.float32, 64), "max")
case("scatter_value_reduce", data((3, 4), torch.float32, 63), 0, idx2, 1.0, "mean")

# ----------------------------------------------------------------------------- index.Tensor
a = data((3, 4), torch.float32, 70)
b = data((2, 3, 4), torch.float32, 71)
for dt in DTYPES:
    case("index", data((3, 4), dt, 72), [torch.tensor([2, 0, -1])])
    case("index", data((3, 4), dt, 73), [None, torch.tensor([[3, 0], [1, 1]])])
    case("index", data((3, 4), dt, 74), [data((3, 4), torch.bool, 75)])
case("index", b, [torch.tensor([1, 0]), None, torch.tensor([3, 2])])
case("index", b, [None, torch.tensor([0, 2]), torch.tensor([1, 3])])
case("index", b, [torch.tensor([[1], [0]]), torch.tensor([0, 1, 2])])
case("index", b, [torch.tensor(1)])
case("index", b, [torch.tensor(1), None, torch.tensor([0, -1])])
case("index", b, [None, None, torch.tensor([-4, 3], dtype=torch.int32)])
case("index", b, [torch.tensor([True, False])])
case("index", b, [None, torch.tensor([True, False, True])])
case("index", b, [data((2, 3), torch.bool, 76)])
case("index", b, [torch.tensor([1, 0, 1], dtype=torch.uint8)[:2]])
case("index", b, [None, torch.tensor([0, 2]), data((4,), torch.bool, 77)])
case("index", T(data((4, 3), torch.int64, 78)), [torch.tensor([3, 1])])
case("index", T(data((4, 3), torch.int64, 78)), [None, torch.tensor([2, 0, 1])])
case("index", b.transpose(0, 2), [None, torch.tensor([0, 1])], check_strides=False)
case("index", a, [strided(torch.tensor([[0, 2, 1]]))])
case("index", torch.zeros(0, 3), [torch.tensor([], dtype=torch.int64)])
case("index", a, [torch.tensor([0, 1])], out=torch.zeros(0))
case("index", a, [torch.tensor([5])])
case("index", a, [None, torch.tensor([5])])
case("index", a, [None, torch.tensor([-5])])
case("index", a, [torch.tensor([0]), torch.tensor([0]), torch.tensor([0])])
case("index", a, [torch.tensor([0, 1]), torch.tensor([0, 1, 2])])
case("index", a, [torch.tensor([0.0])])
case("index", a, [torch.tensor([0], dtype=torch.int16)])
case("index", a, [torch.tensor([True, False])])
case("index", a, [None, torch.tensor([True, False])])
case("index", torch.zeros(0, 3), [torch.tensor([0])])
case("index", torch.tensor(5.0), [torch.tensor(True)])
case("index", a, [])
case("index", a, [torch.tensor([0])], out=torch.zeros(0, dtype=torch.int64))

# ----------------------------------------------------------------------------- index_put_
for dt in DTYPES:
    case("index_put_", data((3, 4), dt, 80), [torch.tensor([2, 0])], data((2, 4), dt, 81), False)
    case("index_put_", data((3, 4), dt, 82), [torch.tensor([2, 0, 2]), torch.tensor([1, 1, 1])],
         data((3,), dt, 83), True)
case("index_put_", data((5,), torch.float32, 84), [torch.tensor([0, 0, 3, 0])], data((4,), torch.float32, 85), True)
case("index_put_", data((5,), torch.float16, 84), [torch.tensor([0, 0, 3, 0])], data((4,), torch.float16, 85), True)
case("index_put_", data((3, 4), torch.float32, 86), [None, torch.tensor([-1, 0])], torch.tensor(7.0), False)
case("index_put_", data((3, 4), torch.float32, 87), [data((3, 4), torch.bool, 88)], torch.tensor(-1.0), False)
case("index_put_", data((3, 4), torch.float32, 87), [data((3,), torch.bool, 88)], torch.tensor(-1.0, dtype=torch.float64), False)
case("index_put_", data((3, 4), torch.int32, 87), [None, data((4,), torch.bool, 89)], torch.tensor(9), False)
case("index_put_", data((3, 4), torch.float32, 87), [data((3,), torch.bool, 88)], data((4,), torch.float32, 1), False)
case("index_put_", data((3, 4), torch.float32, 87), [data((3,), torch.bool, 90)], torch.tensor(2.0), True)
case("index_put_", data((2, 3, 4), torch.float64, 91), [torch.tensor([1, 0]), None, torch.tensor([3, 2])],
     data((2, 3), torch.float64, 92), False)
case("index_put_", T(data((4, 3), torch.float32, 93)), [torch.tensor([1, 3])], data((3,), torch.float32, 94), True)
case("index_put_", data((3, 4), torch.float32, 95), [torch.tensor([0])], torch.tensor([1.0], dtype=torch.float64), False)
case("index_put_", data((3, 4), torch.float32, 95), [torch.tensor([0])], torch.ones(2), False)
case("index_put_", data((3, 4), torch.float32, 95), [torch.tensor([7])], torch.tensor(1.0), False)
case("index_put_", data((3, 4), torch.float32, 95), [torch.tensor([7])], torch.tensor(1.0), True)
case("index_put_", data((3, 4), torch.float32, 95), [torch.tensor([0])] * 3, torch.tensor(1.0), False)
case("index_put_", data((3, 4), torch.float32, 95), [torch.ones(2, dtype=torch.bool)], torch.tensor(1.0), False)

# ----------------------------------------------------------------------------- masked_fill_
for dt in DTYPES:
    case("masked_fill_scalar_", data((3, 4), dt, 100), data((3, 4), torch.bool, 101), True if dt == torch.bool else 3)
    case("masked_fill_tensor_", data((3, 4), dt, 102), data((4,), torch.bool, 103),
         torch.tensor(False) if dt == torch.bool else torch.tensor(-2.5 if dt.is_floating_point else -2))
case("masked_fill_scalar_", data((3, 4), torch.float32, 104), data((3, 1), torch.bool, 105), float("nan"))
case("masked_fill_scalar_", T(data((4, 3), torch.float64, 106)), T(data((4, 3), torch.bool, 107)), 1.25)
case("masked_fill_scalar_", data((3,), torch.int64, 108), torch.ones(3, dtype=torch.bool), 2.5)
case("masked_fill_scalar_", data((3,), torch.float16, 108), torch.ones(3, dtype=torch.bool), 1e6)
case("masked_fill_scalar_", data((3,), torch.uint8, 108), torch.ones(3, dtype=torch.bool), 300)
case("masked_fill_scalar_", data((3,), torch.uint8, 108), torch.ones(3, dtype=torch.bool), -3)
case("masked_fill_scalar_", data((3, 4), torch.float32, 109), torch.ones(3, 4, dtype=torch.uint8), 1.0)
case("masked_fill_scalar_", data((3, 4), torch.float32, 109), torch.ones(3, 4, dtype=torch.int64), 1.0)
case("masked_fill_scalar_", data((3, 4), torch.float32, 109), torch.ones(2, 3, 4, dtype=torch.bool), 1.0)
case("masked_fill_scalar_", data((3, 4), torch.float32, 109), torch.ones(2, 4, dtype=torch.bool), 1.0)
case("masked_fill_tensor_", data((3, 4), torch.float32, 110), torch.ones(4, dtype=torch.bool), torch.tensor([1.0]))
case("masked_fill_tensor_", data((3,), torch.int64, 111), torch.ones(3, dtype=torch.bool), torch.tensor(2.5))

# ----------------------------------------------------------------------------- masked_select
for dt in DTYPES:
    case("masked_select", data((3, 4), dt, 120), data((3, 4), torch.bool, 121))
case("masked_select", data((4,), torch.float32, 122), data((3, 4), torch.bool, 123))
case("masked_select", data((3, 4), torch.float32, 124), data((4,), torch.bool, 125))
case("masked_select", T(data((4, 3), torch.int32, 126)), T(data((4, 3), torch.bool, 127)))
case("masked_select", data((3, 4), torch.float32, 128), torch.zeros(3, 4, dtype=torch.bool))
case("masked_select", torch.tensor(2.0), torch.tensor(True))
case("masked_select", data((3, 4), torch.float32, 129), data((3, 4), torch.bool, 130), out=torch.zeros(2, 2))
case("masked_select", data((3, 4), torch.float32, 131), torch.ones(3, 4, dtype=torch.uint8))
case("masked_select", data((3, 4), torch.float32, 131), torch.ones(3, 4, dtype=torch.bool), out=torch.zeros(0, dtype=torch.int64))
case("masked_select", data((3, 4), torch.float32, 131), torch.ones(2, 4, dtype=torch.bool))

# ----------------------------------------------------------------------------- flip / roll
for dt in DTYPES:
    case("flip", data((2, 3, 4), dt, 140), [0, 2])
    case("roll", data((3, 4), dt, 141), [1, -3], [0, 1])
case("flip", T(data((4, 3), torch.float32, 142)), [0])
case("flip", T(data((4, 3), torch.float32, 142)), [-1, 0])
case("flip", strided(data((2, 5), torch.int64, 143)), [1])
case("flip", torch.tensor(3.0), [0])
case("flip", torch.tensor(3.0), [])
case("flip", torch.zeros(0, 2), [0])
case("flip", data((2, 3), torch.float32, 144), [0, 0])
case("flip", data((2, 3), torch.float32, 144), [0, -2])
case("flip", data((2, 3), torch.float32, 144), [2])
case("roll", data((3, 4), torch.int64, 145), [5], [])
case("roll", data((3, 4), torch.int64, 145), [-13], [1])
case("roll", data((3, 4), torch.int64, 145), [1, 1], [0, 0])
case("roll", data((2, 3, 4), torch.float32, 146), [1, 2, 3], [0, 1, 2])
case("roll", T(data((4, 3), torch.float32, 147)), [1], [0])
case("roll", T(data((4, 3), torch.float32, 147)), [2], [])
case("roll", torch.zeros(0, 3), [1], [1])
case("roll", torch.tensor(5.0), [1], [])
case("roll", torch.tensor(5.0), [1], [0])
case("roll", data((3, 4), torch.int64, 145), [1, 2], [0])
case("roll", data((3, 4), torch.int64, 145), [], [])
case("roll", data((3, 4), torch.int64, 145), [1], [2])

# ----------------------------------------------------------------------------- tril / triu
for dt in DTYPES:
    case("tril", data((4, 5), dt, 150), 0)
    case("triu", data((2, 3, 4), dt, 151), 1)
for k in (-5, -2, -1, 0, 1, 3, 7):
    case("tril", data((4, 3), torch.float32, 152), k)
    case("triu", data((3, 5), torch.int64, 153), k)
case("tril", T(data((4, 3), torch.float32, 154)), 0)
case("triu", strided(data((3, 4), torch.float64, 155)), -1)
case("tril_", data((3, 4), torch.float32, 156), 1)
case("triu_", T(data((4, 4), torch.float32, 157)), 0)
case("tril", data((4, 3), torch.float32, 158), 0, out=torch.zeros(1))
case("triu", torch.zeros(0, 3), 0)
case("tril", data((3,), torch.float32, 159), 0)
case("triu", torch.tensor(1.0), 0)

# ----------------------------------------------------------------------------- sort / topk
for dt in DTYPES:
    case("sort", data((3, 6), dt, 160), True, -1, False)
    case("sort", data((3, 6), dt, 161), True, 0, True)
    if dt != torch.bool:
        case("topk", data((3, 6), dt, 162, -50, 50), 2, -1, True, True)
        case("topk", data((3, 6), dt, 163, -50, 50), 3, 0, False, True)
fl = torch.tensor([3.0, float("nan"), -1.0, float("inf"), 2.0, float("-inf"), float("nan"), 0.0, -0.0, 2.0])
case("sort", fl, True, 0, False)
case("sort", fl, True, 0, True)
case("sort", fl.to(torch.float16), True, 0, False)
case("sort", torch.tensor([2, 1, 2, 1, 2, 0, 1]), True, 0, False)
case("sort", torch.tensor([2, 1, 2, 1, 2, 0, 1]), True, 0, True)
case("sort", torch.tensor([2, 1, 2, 1, 2, 0, 1]), None, 0, True)
case("sort", T(data((5, 4), torch.float32, 164)), True, 1, False)
case("sort", T(data((5, 4), torch.float32, 164)), True, 0, True)
case("sort", strided(data((3, 5), torch.float32, 165)), True, -1, False)
case("sort", torch.tensor(3.0), True, 0, False)
case("sort", torch.zeros(0, 3), True, 1, False)
case("sort", data((3, 6), torch.float32, 166), True, 2, False)
case("sort", data((2, 3), torch.float32, 166), True, -1, False, out=(torch.zeros(0), torch.zeros(0, dtype=torch.int64)))
case("topk", fl, 4, 0, True, True)
case("topk", fl, 4, 0, False, True)
case("topk", data((200,), torch.float32, 167), 3, 0, True, True)
case("topk", data((200,), torch.float32, 168), 3, 0, False, True)
case("topk", T(data((5, 4), torch.float64, 169)), 2, 0, True, True)
case("topk", torch.tensor(3.0), 1, 0, True, True)
case("topk", torch.tensor(3.0), 0, 0, True, True)
case("topk", torch.tensor(3.0), 2, 0, True, True)
case("topk", data((3, 4), torch.float32, 170), 5, 1, True, True)
case("topk", data((3, 4), torch.float32, 170), -1, 1, True, True)
case("topk", data((3, 4), torch.float32, 170), 0, 1, True, True)
case("topk", data((3, 4), torch.float32, 170), 4, 1, True, True)
case("topk", data((3, 4), torch.float32, 170), 1, 2, True, True)
case("topk", data((3,), torch.bool, 171), 1, 0, True, True)
case("topk", data((3, 4), torch.float32, 172), 2, 1, True, True, out=(torch.zeros(1), torch.zeros(1, dtype=torch.int64)))

print(json.dumps({"torch_version": torch.__version__, "cases": CASES}, indent=None, separators=(",", ":")))
