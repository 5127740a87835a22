"""Record PyTorch's answers for the shape family's tests (stack, repeat, constant_pad_nd,
embedding, one_hot, sort, logsumexp, cross_entropy_loss, max.other / min.other). Run with
the reference PyTorch:

    /tmp/torchref/bin/python tools/oracle/shape.py > crates/cpu/tests/fixtures/shape.json

The format is the indexing fixtures' (tools/oracle/indexing.py): every case lists its
inputs (whole storage plus sizes / strides / offset, so views are rebuilt exactly), its
arguments and optional out= tensors, and either PyTorch's outputs (row-major values, sizes,
strides, dtype) or its error (kind and first line of the message)."""
import json
import math
import warnings

import torch
import torch.nn.functional as F

warnings.filterwarnings("ignore")
torch.manual_seed(0)

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
          torch.float16, torch.bfloat16, torch.float32, torch.float64]
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
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
    raise TypeError(a)


aten = torch.ops.aten
# name -> how PyTorch runs it; args are positional, as in the Rust harness.
OPS = {
    "stack": lambda a, out: torch.stack(a[0], a[1], **out),
    "repeat": lambda a, out: aten.repeat.out(a[0], a[1], **out) if out else a[0].repeat(a[1]),
    "constant_pad_nd": lambda a, out: (aten.constant_pad_nd.out(a[0], a[1], *a[2:], **out) if out
                                       else torch.constant_pad_nd(a[0], a[1], *a[2:])),
    "embedding": lambda a, out: (aten.embedding.out(a[0], a[1], a[2], a[3], a[4], **out) if out
                                 else torch.embedding(a[0], a[1], a[2], a[3], a[4])),
    "one_hot": lambda a, out: F.one_hot(a[0], a[1]),
    "sort": lambda a, out: torch.sort(a[0], dim=a[1], descending=a[2], **out),
    "sort_stable": lambda a, out: torch.sort(a[0], stable=a[1], dim=a[2], descending=a[3], **out),
    "logsumexp": lambda a, out: torch.logsumexp(a[0], a[1], a[2], **out),
    "cross_entropy_loss": lambda a, out: aten.cross_entropy_loss(a[0], a[1], a[2], a[3], a[4], a[5]),
    "max_other": lambda a, out: torch.max(a[0], a[1], **out),
    "min_other": lambda a, out: torch.min(a[0], a[1], **out),
}

CASES = []


def case(op, *args, out=None, check_strides=True):
    rec = {"op": op, "args": [enc_arg(a) for a in args], "check_strides": check_strides}
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


f32, f64, i64 = torch.float32, torch.float64, torch.int64
NAN, INF = float("nan"), float("inf")

# ----------------------------------------------------------------------------- stack
for dt in DTYPES:
    case("stack", [data((2, 3), dt, 1), data((2, 3), dt, 2)], 0)
    case("stack", [data((2, 3), dt, 3), data((2, 3), dt, 4), data((2, 3), dt, 5)], -1)
case("stack", [data((2, 3), f32, 6)] * 2, 1)
case("stack", [T(data((3, 4), f32, 7)), strided(data((3, 4), f32, 8))], 2)
case("stack", [T(data((3, 4), f64, 7)), data((3, 4), f64, 8)], -2)
case("stack", [data((2,), torch.int32, 9), data((2,), torch.float16, 10), data((2,), torch.bool, 11)], 0)
case("stack", [torch.tensor(1.5), torch.tensor(2.5)], 0)
case("stack", [torch.tensor(1.5), torch.tensor(2.5)], -1)
case("stack", [torch.zeros(0, 3), torch.zeros(0, 3)], 1)
case("stack", [data((2, 3), f32, 12)], 0)
case("stack", [data((2, 3), f32, 12)] * 2, 0, out=torch.zeros(0))
case("stack", [data((2, 3), f32, 12)] * 2, 1, out=torch.zeros(2, 2, 3, dtype=f64))
case("stack", [data((2, 3), torch.int32, 12)] * 2, 0, out=torch.zeros(5))
case("stack", [data((2, 3), f32, 12)] * 2, 0, out=torch.zeros(0, dtype=i64))
case("stack", [], 0)
case("stack", [], 0, out=torch.zeros(0))
case("stack", [data((2, 3), f32, 1), torch.zeros(2)], 0)
case("stack", [data((2, 3), f32, 1), data((2, 3), f32, 2), torch.zeros(3, 2)], 1)
case("stack", [data((2, 3), f32, 1)] * 2, 3)
case("stack", [data((2, 3), f32, 1)] * 2, -4)
case("stack", [data((2, 3), f32, 1), torch.zeros(2)], 5)

# ----------------------------------------------------------------------------- repeat
for dt in DTYPES:
    case("repeat", data((2, 3), dt, 20), [2, 1])
    case("repeat", data((3,), dt, 21), [2, 1, 2])
case("repeat", T(data((3, 4), f32, 22)), [1, 3])
case("repeat", strided(data((2, 3), i64, 23)), [2, 2])
case("repeat", torch.tensor(3.5), [])
case("repeat", torch.tensor(3.5), [2, 3])
case("repeat", data((2, 3), f32, 24), [2, 0, 2])
case("repeat", torch.zeros(0, 2), [3, 2])
case("repeat", data((2, 3), f32, 24), [1, 1])
case("repeat", data((2, 3), f32, 24), [2])
case("repeat", data((2, 3), f32, 24), [2, -1])
case("repeat", data((2, 3), f32, 24), [0, -1])
case("repeat", data((2, 3), f32, 25), [2, 2], out=torch.zeros(0))
case("repeat", data((2, 3), f32, 25), [2, 2], out=torch.zeros(3, dtype=f64))

# ----------------------------------------------------------------------------- constant_pad_nd
for dt in DTYPES:
    case("constant_pad_nd", data((2, 3), dt, 30), [1, 2], 1)
    case("constant_pad_nd", data((2, 3), dt, 31), [0, 1, 2, 0], 0)
case("constant_pad_nd", data((2, 3), f32, 32), [1, 1, 1, 1], 2.5)
case("constant_pad_nd", data((2, 3), f32, 32), [1, 1], NAN)
case("constant_pad_nd", data((2, 3), f32, 32), [-1, 2], -INF)
case("constant_pad_nd", data((2, 3), i64, 33), [1, 1], 1.7)
case("constant_pad_nd", data((2, 3), torch.uint8, 33), [1, 1], -1)
case("constant_pad_nd", data((2, 3), torch.bool, 33), [1, 1], 2)
case("constant_pad_nd", data((2, 3), f32, 34), [-1, -1])
case("constant_pad_nd", data((2, 3), f32, 34), [0, 0, -1, 0])
case("constant_pad_nd", data((2, 3), f32, 34), [-2, -1, 1, 0])
case("constant_pad_nd", data((2, 3), f32, 34), [-3, 0])
case("constant_pad_nd", data((2, 3, 4), f64, 35), [1, -1, -1, 2], 9)
case("constant_pad_nd", T(data((3, 4), f32, 36)), [1, 0, 0, 2], 7)
case("constant_pad_nd", strided(data((2, 3), torch.int16, 37)), [2, 2], 5)
case("constant_pad_nd", data((2, 3), f32, 38), [])
case("constant_pad_nd", torch.tensor(4.0), [])
case("constant_pad_nd", torch.zeros(0, 2), [1, 1, 1, 1], 3)
case("constant_pad_nd", data((2, 3), f32, 38), [1, 2, 3])
case("constant_pad_nd", data((2, 3), f32, 38), [1, 1, 1, 1, 1, 1])
case("constant_pad_nd", data((2, 3), f32, 38), [-2, -1])
case("constant_pad_nd", data((2, 3), f32, 38), [0, 0, -2, -1])
case("constant_pad_nd", data((2, 3), f32, 38), [-4, 5])
case("constant_pad_nd", data((2, 3), f32, 38), [1, 1], 0, out=torch.zeros(0))
case("constant_pad_nd", data((2, 3), f32, 38), [1, 1], 0, out=torch.zeros(0, dtype=i64))

# ----------------------------------------------------------------------------- embedding
for dt in DTYPES:
    case("embedding", data((5, 3), dt, 40), torch.tensor([4, 0, 2, 2]), -1, False, False)
for it in [torch.int32, i64]:
    case("embedding", data((5, 3), f32, 41), torch.tensor([[1, 2], [4, 0], [3, 3]], dtype=it), -1, False, False)
case("embedding", data((5, 3), f32, 42), torch.tensor(3), 0, True, True)
case("embedding", T(data((3, 5), f64, 43).t().contiguous()), T(torch.tensor([[1, 2, 0], [4, 4, 1]])), 2, False, False)
case("embedding", strided(data((4, 3), f32, 44)), torch.tensor([[[3]], [[0]]]), -1, False, False)
case("embedding", data((5, 3), f32, 45), torch.zeros(0, 2, dtype=i64), -1, False, False)
case("embedding", data((5, 0), f32, 45), torch.tensor([1, 1]), -1, False, False)
case("embedding", data((5, 3), f32, 46), torch.tensor([1.0]), -1, False, False)
case("embedding", data((5, 3), f32, 46), torch.tensor([1], dtype=torch.int16), -1, False, False)
case("embedding", data((5,), f32, 46), torch.tensor([1]), -1, False, False)
case("embedding", data((5, 3, 1), f32, 46), torch.tensor([1]), -1, False, False)
case("embedding", data((5, 3), f32, 46), torch.tensor([5]), -1, False, False)
case("embedding", data((5, 3), f32, 46), torch.tensor([[-1]]), -1, False, False)
case("embedding", data((5, 3), f32, 47), torch.tensor([1, 0]), -1, False, False, out=torch.zeros(0))
case("embedding", data((5, 3), f32, 47), torch.tensor([1, 0]), -1, False, False, out=torch.zeros(0, dtype=i64))

# ----------------------------------------------------------------------------- one_hot
case("one_hot", torch.tensor([1, 0, 3]), -1)
case("one_hot", torch.tensor([1, 0, 3]), 6)
case("one_hot", torch.tensor([[2, 0], [1, 1]]), -1)
case("one_hot", T(torch.tensor([[2, 0, 4], [1, 1, 0]]).t().contiguous()), 5)
case("one_hot", strided(torch.tensor([3, 1, 2])), -1)
case("one_hot", torch.tensor(2), 4)
case("one_hot", torch.tensor(0), -1)
case("one_hot", torch.zeros(0, dtype=i64), 3)
case("one_hot", torch.zeros(2, 0, dtype=i64), 1)
case("one_hot", torch.zeros(0, dtype=i64), -1)
case("one_hot", torch.zeros(0, dtype=i64), 0)
for dt in [torch.int32, torch.uint8, torch.bool, f32]:
    case("one_hot", torch.tensor([1, 0]).to(dt), -1)
case("one_hot", torch.tensor([1, -2]), -1)
case("one_hot", torch.tensor([1, 2]), 2)
case("one_hot", torch.tensor([1, 2]), 0)
case("one_hot", torch.tensor([1, 2]), -3)

# ----------------------------------------------------------------------------- sort
ties = [3, 1, 2, 1, 3, 0, 2, 2]
for dt in DTYPES:
    x = torch.tensor(ties).to(dt) if dt != torch.bool else torch.tensor([1, 0, 1, 1, 0, 0, 1, 0]).bool()
    for desc in [False, True]:
        case("sort", x, -1, desc)
        case("sort_stable", x, True, 0, desc)
        case("sort_stable", x, None, 0, desc)
    case("sort", data((3, 5), dt, 50), 0, False)
    case("sort", data((3, 5), dt, 51), 1, True)
special = torch.tensor([1.0, NAN, -0.0, 0.0, -1.0, NAN, INF, -INF, 0.0, -0.0])
for dt in FLOATS:
    case("sort", special.to(dt), 0, False)
    case("sort", special.to(dt), 0, True)
    case("sort_stable", special.to(dt), False, -1, True)
case("sort", T(data((4, 6), f32, 52)), 0, False)
case("sort", T(data((4, 6), torch.int16, 53)), 1, True)
case("sort", strided(data((3, 7), f64, 54)), 1, False)
case("sort", data((2, 3, 4), torch.int32, 55).permute(2, 0, 1), 1, True)
case("sort", data((2, 3, 4), f32, 56)[:, 1:, ::2], -1, False)
case("sort", torch.tensor(2.5), -1, False)
case("sort", torch.tensor(7), 0, True)
case("sort", torch.zeros(0, 3), 1, False)
case("sort", torch.zeros(3, 0), 1, False)
case("sort", torch.ones(1000) * torch.tensor([1.0, 2.0]).repeat(500), 0, True)
case("sort", data((2, 3), f32, 57), 2, False)
case("sort", torch.tensor(2.5), 1, False)
case("sort", data((2, 3), f32, 58), 1, False, out=(torch.zeros(0), torch.zeros(0, dtype=i64)))
case("sort", data((2, 3), f32, 58), 0, True, out=(torch.zeros(5), torch.zeros(5, dtype=i64)))
case("sort", data((2, 3), i64, 58), 1, False, out=(torch.zeros(0), torch.zeros(0, dtype=i64)))
case("sort", data((2, 3), i64, 58), 1, False, out=(torch.zeros(0, dtype=i64), torch.zeros(0, dtype=torch.int32)))
case("sort_stable", data((2, 3), f32, 59), True, 1, True, out=(torch.zeros(0), torch.zeros(0, dtype=i64)))

# ----------------------------------------------------------------------------- logsumexp
for dt in DTYPES:
    case("logsumexp", data((3, 4), dt, 60), [1], False)
    case("logsumexp", data((3, 4), dt, 61), [0], True)
infs = torch.tensor([[1.0, INF, 2.0], [-INF, -INF, -INF], [NAN, 1.0, 2.0], [INF, -INF, 0.0],
                     [800.0, 800.0, -800.0], [-800.0, -801.0, -900.0]])
for dt in FLOATS:
    case("logsumexp", infs.to(dt), [1], False)
case("logsumexp", infs, [0], False)
case("logsumexp", data((2, 3, 4), f32, 62), [0, 2], False)
case("logsumexp", data((2, 3, 4), f64, 63), [-1, 0], True)
case("logsumexp", data((2, 3, 4), f32, 64), [0, 1, 2], False)
case("logsumexp", T(data((4, 5), f32, 65)), [0], False)
case("logsumexp", strided(data((3, 4), f64, 66)), [1], True)
case("logsumexp", data((2, 3), f32, 67).unsqueeze(1).expand(2, 4, 3), [1], False)
case("logsumexp", torch.tensor(2.5), [0], False)
case("logsumexp", torch.tensor(2.5), [], True)
case("logsumexp", torch.tensor(3), [], False)
case("logsumexp", torch.zeros(0, 3), [0], False)
case("logsumexp", torch.zeros(0, 3), [1], True)
case("logsumexp", data((2, 3), f32, 68), [], False)
case("logsumexp", data((2, 3), f32, 68), [0, 0], False)
case("logsumexp", data((2, 3), f32, 68), [2], False)
case("logsumexp", data((2, 3), f32, 69), [1], False, out=torch.zeros(0))
case("logsumexp", data((2, 3), f32, 69), [1], False, out=torch.zeros(5))
case("logsumexp", data((2, 3), f32, 69), [1], True, out=torch.zeros(2, 1, dtype=f64))
case("logsumexp", data((2, 3), i64, 69), [1], False, out=torch.zeros(0, dtype=f64))
case("logsumexp", data((2, 3), i64, 69), [1], False, out=torch.zeros(0, dtype=i64))
case("logsumexp", data((2, 3), f32, 69), [1], False, out=torch.zeros(0, dtype=torch.int32))
case("logsumexp", data((2, 3), f64, 69), [1], False, out=torch.zeros(0, dtype=f32))

# ----------------------------------------------------------------------------- cross_entropy_loss
CE = "cross_entropy_loss"
logits = data((4, 5), f32, 70)
tgt = torch.tensor([1, 0, 4, 2])
w = data((5,), f32, 71).abs() + 0.1
for red in [0, 1, 2]:
    case(CE, logits, tgt, None, red, -100, 0.0)
    case(CE, logits, tgt, w, red, -100, 0.0)
    case(CE, logits, torch.tensor([1, -100, 4, 2]), w, red, -100, 0.0)
    case(CE, logits, torch.tensor([1, 3, 4, 3]), None, red, 3, 0.0)
    case(CE, logits, tgt, None, red, -100, 0.2)
    case(CE, logits, torch.tensor([1, 3, 4, 3]), w, red, 3, 0.3)
    case(CE, logits, torch.tensor([1, 3, 4, 3]), None, red, 3, 0.3)
    probs = data((4, 5), f32, 72).softmax(1)
    case(CE, logits, probs, None, red, -100, 0.0)
    case(CE, logits, probs, w, red, -100, 0.0)
    case(CE, logits, probs, w, red, -100, 0.25)
    case(CE, data((2, 5, 3, 2), f64, 73), torch.randint(0, 5, (2, 3, 2)), w.double(), red, -100, 0.0)
    case(CE, data((2, 5, 3), f64, 74), torch.randint(0, 5, (2, 3)), None, red, -100, 0.1)
    case(CE, data((2, 5, 3), f64, 75), data((2, 5, 3), f64, 76).softmax(1), w.double(), red, -100, 0.1)
case(CE, data((5,), f32, 77), torch.tensor(3), None, 1, -100, 0.0)
case(CE, data((5,), f32, 77), torch.tensor(3), w, 0, -100, 0.4)
case(CE, data((5,), f32, 77), data((5,), f32, 78).softmax(0), None, 1, -100, 0.0)
case(CE, T(data((5, 4), f32, 79).t().contiguous()), strided(tgt), None, 1, -100, 0.0)
case(CE, logits.double(), tgt, None, 1, -100, 0.0)
case(CE, logits.to(torch.bfloat16), tgt, None, 1, -100, 0.0)
case(CE, torch.zeros(0, 5), torch.zeros(0, dtype=i64), None, 1, -100, 0.0)
case(CE, torch.zeros(0, 5), torch.zeros(0, 5), None, 1, -100, 0.0)
case(CE, torch.zeros(0, 5), torch.zeros(0, 5), None, 2, -100, 0.0)
case(CE, logits, tgt.float(), None, 1, -100, 0.0)
case(CE, logits, torch.zeros(4, 5, dtype=i64), None, 1, -100, 0.0)
case(CE, logits, probs, None, 1, 2, 0.0)
case(CE, logits, tgt, None, 1, -100, 1.5)
case(CE, logits, probs, None, 1, -100, 1.5)
case(CE, logits, probs, torch.ones(3), 1, -100, 0.0)
case(CE, logits, tgt, torch.ones(3), 1, -100, 0.0)
case(CE, logits, torch.tensor([1, 0, 5, 2]), None, 1, -100, 0.0)
case(CE, logits, probs, None, 3, -100, 0.0)
case(CE, logits, tgt.int(), None, 1, -100, 0.0)

# ----------------------------------------------------------------------------- max / min .other
for dt in DTYPES:
    case("max_other", data((2, 3), dt, 80), data((2, 3), dt, 81))
    case("min_other", data((2, 3), dt, 82), data((3,), dt, 83))
nan_a = torch.tensor([1.0, NAN, 3.0, -0.0, INF])
nan_b = torch.tensor([NAN, 2.0, 1.0, 0.0, -INF])
case("max_other", nan_a, nan_b)
case("min_other", nan_a, nan_b)
case("max_other", data((2, 3), torch.int32, 84), data((2, 3), f32, 85))
case("min_other", data((2, 3), torch.uint8, 84), data((2, 3), torch.int8, 85))
case("max_other", T(data((3, 4), f64, 86)), strided(data((3, 4), f64, 87)))
case("min_other", torch.tensor(2.0), data((2, 2), f32, 88))
case("max_other", torch.zeros(0, 3), torch.zeros(3))
case("max_other", data((2, 3), f32, 89), data((2, 3), f32, 90), out=torch.zeros(0))
case("min_other", data((2, 3), f32, 89), data((2, 3), f32, 90), out=torch.zeros(0, dtype=f64))
case("max_other", data((2, 3), f32, 89), data((2, 3), f32, 90), out=torch.zeros(0, dtype=i64))
case("min_other", data((2, 3), f32, 89), data((3, 2), f32, 90))

json.dump({"torch": torch.__version__, "cases": CASES}, __import__("sys").stdout)
