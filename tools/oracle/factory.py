"""Record PyTorch's answers for the factory kernels' tests (empty, empty_strided, arange,
linspace, eye, full's dtype inference, and the seeded random fills uniform_, normal_,
bernoulli_, random_/randint). Run with a PyTorch install:

    python tools/oracle/factory.py > crates/cpu/tests/fixtures/factory.json

Random cases record a seed and a sequence of fills on one generator, so the tests check that
switchyard draws PyTorch's numbers from the same mt19937 stream (including the normal sample
cached between calls and TensorIterator's element order on strided tensors). The JSON is
committed; the tests read it, so CI needs no PyTorch."""
import json
import math
import warnings

import torch

warnings.filterwarnings("ignore")

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
          torch.float16, torch.bfloat16, torch.float32, torch.float64]
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
NAME = {d: str(d).replace("torch.", "") for d in DTYPES}


def value(v):
    if isinstance(v, (bool, int)):
        return v
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(float(v))


def scalar(v):
    if isinstance(v, bool):
        return {"bool": v}
    if isinstance(v, int):
        return {"int": v}
    return {"float": value(v)}


def enc_output(t):
    """Outputs up to 4096 elements are stored whole; larger ones as a sample of (index, value)
    pairs covering both ends, the middle (where parallel chunks meet) and a stride, to keep
    the fixture small."""
    flat = [value(v) for v in t.reshape(-1).tolist()]
    rec = {"dtype": NAME[t.dtype], "sizes": list(t.shape), "strides": list(t.stride())}
    n = len(flat)
    if n <= 4096:
        rec["values"] = flat
    else:
        keep = set(range(512)) | set(range(n - 512, n)) | set(range(n // 2 - 300, n // 2 + 300)) | set(range(0, n, 101))
        rec["sample"] = [[i, flat[i]] for i in sorted(keep)]
    return rec


def error(e):
    return {"kind": type(e).__name__, "message": str(e).split("\n")[0]}


def run(rec, f):
    try:
        rec["result"] = enc_output(f())
    except Exception as e:  # noqa: BLE001 - we record whatever PyTorch raises
        rec["error"] = error(e)
    return rec


DETERMINISTIC = []

# ----------------------------------------------------------------------------- empty
for size, fmt in [((2, 3), None), ((2, 3, 4, 5), "channels_last"), ((2, 3, 4, 5, 6), "channels_last_3d"),
                  ((0, 3), None), ((), None), ((2, 3), "preserve_format"), ((2, 3), "channels_last"),
                  ((2, 3, 4), "channels_last_3d"), ((2, -1), None), ((2, 3, 1, 1), "channels_last")]:
    kw = {} if fmt is None else {"memory_format": getattr(torch, fmt)}
    rec = {"op": "empty", "size": list(size), "memory_format": fmt, "dtype": "float64"}
    try:
        t = torch.empty(size, dtype=torch.float64, **kw)
        rec["result"] = {"dtype": "float64", "sizes": list(t.shape), "strides": list(t.stride())}
    except Exception as e:  # noqa: BLE001
        rec["error"] = error(e)
    DETERMINISTIC.append(rec)
for size, stride in [((2, 3), (1, 2)), ((2, 3), (0, 0)), ((2, 3), (1,)), ((2, 3), (-1, 1)), ((2, -3), (1, 1)),
                     ((4,), (3,))]:
    rec = {"op": "empty_strided", "size": list(size), "stride": list(stride), "dtype": "int16"}
    try:
        t = torch.empty_strided(size, stride, dtype=torch.int16)
        rec["result"] = {"dtype": "int16", "sizes": list(t.shape), "strides": list(t.stride())}
    except Exception as e:  # noqa: BLE001
        rec["error"] = error(e)
    DETERMINISTIC.append(rec)

# ----------------------------------------------------------------------------- arange
nan, inf = float("nan"), float("inf")
ARANGE = [(0, 5, 1), (0, 1, 0.1), (0.3, 100, 0.37), (-5, 7, 0.013), (10, 0, -3), (1, 2, 1 / 3),
          (0, 5, 0.5), (0.5, 5.7, 1), (-1.5, 5, 0.7), (2.5, -3.5, -0.25), (0, 10**18 + 1, 10**17),
          (0, 70000, 10000), (True, 5, 1), (0, 2, True), (5, 5, 1), (100, 1000, 7)]
for s, e, st in ARANGE:
    for dt in [None] + DTYPES:
        rec = {"op": "arange", "start": scalar(s), "end": scalar(e), "step": scalar(st),
               "dtype": None if dt is None else NAME[dt]}
        kw = {} if dt is None else {"dtype": dt}
        DETERMINISTIC.append(run(rec, lambda: torch.arange(s, e, st, **kw)))
for s, e, st, dt in [(0.3, 0.3 + 0.37 * 70000.5, 0.37, torch.float64), (0.3, 0.3 + 0.37 * 70000.5, 0.37, torch.float32),
                     (0.1, 0.1 + 0.7 * 40000, 0.7, torch.float16), (-3, 40000, 1, torch.int16),
                     (0, 1e20, 1e-5, torch.float32), (0, 5, 0, None), (0, 5, -1, None), (0, inf, 1, None),
                     (nan, 5, 1, None), (0, 5, nan, None), (0, 5, inf, None), (0, 5, 1, torch.bool),
                     (0, 300, 1, torch.int8), (-3, 3, 1, torch.uint8), (0, 1e39, 1e38, torch.float16),
                     (0, 1e19, 1e18, torch.int64)]:
    rec = {"op": "arange", "start": scalar(s), "end": scalar(e), "step": scalar(st),
           "dtype": None if dt is None else NAME[dt]}
    kw = {} if dt is None else {"dtype": dt}
    DETERMINISTIC.append(run(rec, lambda: torch.arange(s, e, st, **kw)))
for out in [torch.zeros(2, 3), torch.zeros(0), torch.zeros(7), torch.zeros(3, 4).t(), torch.zeros(6, dtype=torch.int32)[::2]]:
    rec = {"op": "arange_out", "start": scalar(0), "end": scalar(6), "step": scalar(1),
           "out": {"dtype": NAME[out.dtype], "sizes": list(out.shape), "strides": list(out.stride())}}
    DETERMINISTIC.append(run(rec, lambda: torch.arange(0, 6, 1, out=out)))

# ----------------------------------------------------------------------------- linspace
for s, e, n in [(0, 1, 5), (-3.7, 2.2, 11), (10, -10, 7), (0, 10, 4), (0, 1, 1), (0, 1, 0), (0, 1, 2),
                (1.5, 1e4, 1001), (-1, 1, 100), (0, 300, 4), (0, 255, 9), (3, 3, 5)]:
    for dt in DTYPES:
        rec = {"op": "linspace", "start": scalar(s), "end": scalar(e), "steps": n, "dtype": NAME[dt]}
        DETERMINISTIC.append(run(rec, lambda: torch.linspace(s, e, n, dtype=dt)))
for s, e, n, dt in [(0, 1, -1, torch.float32), (0.1, 0.9, 40001, torch.float32)]:
    rec = {"op": "linspace", "start": scalar(s), "end": scalar(e), "steps": n, "dtype": NAME[dt]}
    DETERMINISTIC.append(run(rec, lambda: torch.linspace(s, e, n, dtype=dt)))
for out in [torch.zeros(2, 3), torch.zeros(5), torch.zeros(3, 5).t()[:, 0]]:
    rec = {"op": "linspace_out", "start": scalar(-1.0), "end": scalar(1.0), "steps": 5,
           "out": {"dtype": NAME[out.dtype], "sizes": list(out.shape), "strides": list(out.stride())}}
    DETERMINISTIC.append(run(rec, lambda: torch.linspace(-1.0, 1.0, 5, out=out)))

# ----------------------------------------------------------------------------- eye
for n, m in [(3, 3), (2, 4), (4, 2), (0, 3), (1, 1), (-1, 2), (2, -3)]:
    for dt in (torch.float32, torch.bool, torch.int64, torch.bfloat16):
        rec = {"op": "eye", "n": n, "m": m, "dtype": NAME[dt]}
        DETERMINISTIC.append(run(rec, lambda: torch.eye(n, m, dtype=dt)))
for out in [torch.zeros(3, 2), torch.zeros(2, 3).t(), torch.zeros(0)]:
    rec = {"op": "eye_out", "n": 2, "m": 3,
           "out": {"dtype": NAME[out.dtype], "sizes": list(out.shape), "strides": list(out.stride())}}
    DETERMINISTIC.append(run(rec, lambda: torch.eye(2, 3, out=out)))

# ----------------------------------------------------------------------------- full
FULL = []
for v in (True, 3, -2, 2.5, float("nan")):
    for dt in (None, torch.float16, torch.int32, torch.bool, torch.uint8):
        rec = {"fill": scalar(v), "dtype": None if dt is None else NAME[dt]}
        kw = {} if dt is None else {"dtype": dt}
        FULL.append(run(rec, lambda: torch.full((2,), v, **kw)))
FULL.append(run({"fill": scalar(300), "dtype": "uint8"}, lambda: torch.full((2,), 300, dtype=torch.uint8)))

# ----------------------------------------------------------------------------- random
RANDOM = []


def make(spec):
    """A fresh zero tensor of a fill's spec: contiguous, transposed or every other element."""
    dt = getattr(torch, spec["dtype"])
    size = tuple(spec["sizes"])
    view = spec.get("view", "contiguous")
    if view == "transposed":
        return torch.zeros(size[::-1], dtype=dt).t()
    if view == "strided":
        return torch.zeros(*size[:-1], size[-1] * 2, dtype=dt)[..., ::2]
    if view == "channels_last":
        return torch.zeros(size, dtype=dt).contiguous(memory_format=torch.channels_last)
    if view == "permuted3":
        return torch.zeros(size[2], size[0], size[1], dtype=dt).permute(1, 2, 0)
    return torch.zeros(size, dtype=dt)


def p_tensor(spec, g):
    t = torch.rand(tuple(spec["sizes"]), generator=g, dtype=torch.float64).to(getattr(torch, spec["dtype"]))
    if spec.get("view") == "transposed":
        t = t.t()
    return t


def random_case(seed, steps):
    g = torch.Generator().manual_seed(seed)
    rec = {"seed": seed, "steps": steps, "results": []}
    for st in steps:
        t = make(st["tensor"])
        try:
            op = st["op"]
            if op == "uniform_":
                t.uniform_(st["from"], st["to"], generator=g)
            elif op == "normal_":
                t.normal_(st["mean"], st["std"], generator=g)
            elif op == "bernoulli_float":
                t.bernoulli_(st["p"], generator=g)
            elif op == "bernoulli_tensor":
                p = torch.tensor(st["p"]["values"], dtype=torch.float64).reshape(st["p"]["sizes"])
                p = p.to(getattr(torch, st["p"]["dtype"]))
                if st["p"].get("view") == "transposed":
                    p = p.t()
                t.bernoulli_(p, generator=g)
            elif op == "random_":
                t.random_(st["from"], st["to"], generator=g)
            rec["results"].append(enc_output(t))
        except Exception as e:  # noqa: BLE001
            rec["results"].append({"error": error(e)})
    RANDOM.append(rec)


def T(dtype, sizes, view="contiguous"):
    return {"dtype": NAME[dtype], "sizes": list(sizes), "view": view}


for dt in FLOATS:
    for seed in (0, 1, 42):
        random_case(seed, [{"op": "uniform_", "tensor": T(dt, (40,)), "from": 0.0, "to": 1.0}])
        random_case(seed, [{"op": "uniform_", "tensor": T(dt, (5, 7)), "from": -3.7, "to": 2.2}])
        random_case(seed, [{"op": "uniform_", "tensor": T(dt, (5, 7), "transposed"), "from": 1.0, "to": 100.0}])
    random_case(7, [{"op": "uniform_", "tensor": T(dt, (3000,)), "from": -3.7, "to": 2.2}])
    random_case(8, [{"op": "uniform_", "tensor": T(dt, (3, 4), "strided"), "from": 0.0, "to": 2.0},
                    {"op": "uniform_", "tensor": T(dt, (2, 3, 4), "permuted3"), "from": -1.0, "to": 1.0}])
    for seed in (0, 3):
        random_case(seed, [{"op": "normal_", "tensor": T(dt, (37,)), "mean": 0.0, "std": 1.0}])
        random_case(seed, [{"op": "normal_", "tensor": T(dt, (16,)), "mean": 2.5, "std": 0.5}])
        random_case(seed, [{"op": "normal_", "tensor": T(dt, (5,)), "mean": 0.0, "std": 1.0},
                           {"op": "normal_", "tensor": T(dt, (3,)), "mean": 1.0, "std": 2.0},
                           {"op": "normal_", "tensor": T(dt, (4, 5), "transposed"), "mean": -1.0, "std": 3.0},
                           {"op": "normal_", "tensor": T(dt, (20,)), "mean": 0.0, "std": 1.0},
                           {"op": "normal_", "tensor": T(dt, (1,)), "mean": 0.0, "std": 1.0}])
    random_case(11, [{"op": "normal_", "tensor": T(dt, (4099,)), "mean": 0.5, "std": 2.0}])
    random_case(12, [{"op": "normal_", "tensor": T(dt, (64, 64)), "mean": 0.0, "std": 1.0}])
for dt in DTYPES:
    random_case(5, [{"op": "bernoulli_float", "tensor": T(dt, (30,)), "p": 0.3},
                    {"op": "bernoulli_float", "tensor": T(dt, (4, 5), "transposed"), "p": 0.5}])
for pdt in FLOATS:
    probs = [[0.1, 0.9, 0.5, 0.0], [1.0, 0.25, 0.75, 0.33], [0.6, 0.4, 0.2, 0.8]]
    for dt in (torch.float32, torch.int64, torch.bool, torch.float16):
        random_case(6, [{"op": "bernoulli_tensor", "tensor": T(dt, (3, 4)),
                         "p": {"values": [x for r in probs for x in r], "sizes": [3, 4], "dtype": NAME[pdt]}}])
    random_case(6, [{"op": "bernoulli_tensor", "tensor": T(torch.float32, (3, 4), "transposed"),
                     "p": {"values": [x for r in probs for x in r], "sizes": [3, 4], "dtype": NAME[pdt]}}])
    random_case(6, [{"op": "bernoulli_tensor", "tensor": T(torch.float64, (4, 3)),
                     "p": {"values": [x for r in probs for x in r], "sizes": [3, 4], "dtype": NAME[pdt],
                           "view": "transposed"}}])
random_case(6, [{"op": "bernoulli_tensor", "tensor": T(torch.float32, (3, 4)),
                 "p": {"values": [0.2, 0.5, 0.9, 0.7], "sizes": [4], "dtype": "float32"}}])
random_case(6, [{"op": "bernoulli_tensor", "tensor": T(torch.float32, (3,)),
                 "p": {"values": [0.2, 1.5, 0.9], "sizes": [3], "dtype": "float32"}}])
random_case(6, [{"op": "bernoulli_tensor", "tensor": T(torch.float32, (3,)),
                 "p": {"values": [0.2, 0.5, 0.9, 0.1], "sizes": [4], "dtype": "float64"}}])
random_case(6, [{"op": "bernoulli_float", "tensor": T(torch.float32, (3,)), "p": 1.5}])
random_case(6, [{"op": "uniform_", "tensor": T(torch.float32, (3,)), "from": 2.0, "to": 1.0}])
random_case(6, [{"op": "uniform_", "tensor": T(torch.int64, (3,)), "from": 0.0, "to": 1.0}])
random_case(6, [{"op": "uniform_", "tensor": T(torch.float16, (3,)), "from": -1e5, "to": 1.0}])
random_case(6, [{"op": "uniform_", "tensor": T(torch.float32, (3,)), "from": -3e38, "to": 3e38}])
random_case(6, [{"op": "normal_", "tensor": T(torch.float32, (3,)), "mean": 0.0, "std": -1.0}])
random_case(6, [{"op": "normal_", "tensor": T(torch.int32, (3,)), "mean": 0.0, "std": 1.0}])
for dt in DTYPES:
    for lo, hi in ((0, 2), (-5, 17), (3, 300), (0, 2**40), (-2**33, 2**34), (2**25 - 3, 2**25)):
        random_case(9, [{"op": "random_", "tensor": T(dt, (25,)), "from": lo, "to": hi}])
random_case(9, [{"op": "random_", "tensor": T(torch.int64, (4, 5), "transposed"), "from": 0, "to": 1000}])
random_case(9, [{"op": "random_", "tensor": T(torch.int64, (3,)), "from": 5, "to": 5}])

# ----------------------------------------------------------------------------- through the API
# The composite factories as users call them (the tests go through the dispatcher): fills,
# dtype inference, `_like` layouts, out= resizing, and the seeded random factories.
API = []


def like_src(spec):
    return make(spec)


def api(rec, f):
    API.append(run(rec, f))


for size in [(2, 3), (), (0, 4)]:
    for dt in [None] + DTYPES:
        kw = {} if dt is None else {"dtype": dt}
        d = None if dt is None else NAME[dt]
        api({"op": "zeros", "size": list(size), "dtype": d}, lambda: torch.zeros(size, **kw))
        api({"op": "ones", "size": list(size), "dtype": d}, lambda: torch.ones(size, **kw))
for v in (True, 3, -2.5, float("inf")):
    for dt in (None, torch.float16, torch.int32, torch.bool, torch.float64):
        kw = {} if dt is None else {"dtype": dt}
        api({"op": "full", "size": [2, 2], "fill": scalar(v), "dtype": None if dt is None else NAME[dt]},
            lambda: torch.full((2, 2), v, **kw))
api({"op": "full", "size": [2], "fill": scalar(300), "dtype": "int8"}, lambda: torch.full((2,), 300, dtype=torch.int8))
api({"op": "zeros", "size": [2, -1], "dtype": None}, lambda: torch.zeros(2, -1))
LIKE_SRC = [T(torch.float32, (3, 4)), T(torch.int16, (3, 4), "transposed"), T(torch.float64, (3, 4), "strided"),
            T(torch.bfloat16, (2, 3, 4), "permuted3"), T(torch.bool, (0, 3))]
for src in LIKE_SRC:
    for dt in (None, torch.float16, torch.int64):
        kw = {} if dt is None else {"dtype": dt}
        d = None if dt is None else NAME[dt]
        x = make(src)
        api({"op": "zeros_like", "self": src, "dtype": d}, lambda: torch.zeros_like(x, **kw))
        api({"op": "ones_like", "self": src, "dtype": d}, lambda: torch.ones_like(x, **kw))
        api({"op": "full_like", "self": src, "fill": scalar(7), "dtype": d}, lambda: torch.full_like(x, 7, **kw))
    for fmt in (None, "contiguous_format", "preserve_format"):
        kw = {} if fmt is None else {"memory_format": getattr(torch, fmt)}
        x = make(src)
        rec = {"op": "empty_like", "self": src, "memory_format": fmt}
        try:
            t = torch.empty_like(x, **kw)
            rec["result"] = {"dtype": NAME[t.dtype], "sizes": list(t.shape), "strides": list(t.stride())}
        except Exception as e:  # noqa: BLE001
            rec["error"] = error(e)
        API.append(rec)
cl = torch.zeros(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
rec = {"op": "empty_like", "self": {"dtype": "float32", "sizes": [2, 3, 4, 5], "view": "channels_last"},
       "memory_format": None}
rec["result"] = {"dtype": "float32", "sizes": [2, 3, 4, 5], "strides": list(torch.empty_like(cl).stride())}
API.append(rec)
for name, f in [("zeros_out", lambda o: torch.zeros((2, 3), out=o)), ("ones_out", lambda o: torch.ones((2, 3), out=o)),
                ("full_out", lambda o: torch.full((2, 3), 4, out=o))]:
    for out in [torch.zeros(2, 3), torch.zeros(0, dtype=torch.int32), torch.zeros(3, 2).t(), torch.zeros(7, dtype=torch.float16)]:
        spec = {"dtype": NAME[out.dtype], "sizes": list(out.shape), "strides": list(out.stride())}
        api({"op": name, "size": [2, 3], "fill": scalar(4), "out": spec}, lambda: f(out))
for end in (5, 2.5, -1):
    api({"op": "arange_end", "end": scalar(end), "dtype": None}, lambda: torch.arange(end))
api({"op": "eye_n", "n": 3, "dtype": None}, lambda: torch.eye(3))
api({"op": "linspace_default", "start": scalar(0), "end": scalar(1), "steps": 5, "dtype": None},
    lambda: torch.linspace(0, 1, 5))


def seeded(rec, f):
    def go():
        g = torch.Generator().manual_seed(rec["seed"])
        return f(g)
    api(rec, go)


for dt in (None,) + tuple(FLOATS) + (torch.int64,):
    d = None if dt is None else NAME[dt]
    kw = {} if dt is None else {"dtype": dt}
    for size in [(3, 5), (40,), (0,)]:
        seeded({"op": "rand", "seed": 3, "size": list(size), "dtype": d}, lambda g: torch.rand(size, generator=g, **kw))
        seeded({"op": "randn", "seed": 4, "size": list(size), "dtype": d}, lambda g: torch.randn(size, generator=g, **kw))
for src in LIKE_SRC[:4]:
    x = make(src)
    seeded({"op": "rand_like", "seed": 5, "self": src}, lambda g: torch.rand_like(x, generator=g))
    seeded({"op": "randn_like", "seed": 5, "self": src}, lambda g: torch.randn_like(x, generator=g))
    seeded({"op": "normal_functional", "seed": 6, "self": src, "mean": 1.0, "std": 2.0},
           lambda g: torch.ops.aten.normal_functional(x, 1.0, 2.0, generator=g))
for dt in (None, torch.int32, torch.uint8, torch.float32, torch.bool, torch.float16):
    d = None if dt is None else NAME[dt]
    kw = {} if dt is None else {"dtype": dt}
    for lo, hi in ((0, 2), (-5, 17), (3, 3)):
        seeded({"op": "randint", "seed": 7, "low": lo, "high": hi, "size": [4, 5], "dtype": d},
               lambda g: torch.randint(lo, hi, (4, 5), generator=g, **kw))
for dt in FLOATS:
    probs = torch.tensor([[0.1, 0.9, 0.5], [0.0, 1.0, 0.25]], dtype=dt)
    src = {"dtype": NAME[dt], "sizes": [2, 3], "values": [value(v) for v in probs.reshape(-1).tolist()]}
    seeded({"op": "bernoulli", "seed": 8, "p": src}, lambda g: torch.bernoulli(probs, generator=g))
    seeded({"op": "bernoulli_p", "seed": 8, "self": T(dt, (3, 4)), "p": 0.4},
           lambda g: torch.bernoulli(torch.zeros(3, 4, dtype=dt), 0.4, generator=g))
for name, f in [("rand_out", lambda o, g: torch.rand((2, 3), generator=g, out=o)),
                ("randn_out", lambda o, g: torch.randn((2, 3), generator=g, out=o)),
                ("randint_out", lambda o, g: torch.randint(0, 10, (2, 3), generator=g, out=o))]:
    for out in [torch.zeros(2, 3), torch.zeros(0, dtype=torch.float64), torch.zeros(3, 2).t()]:
        spec = {"dtype": NAME[out.dtype], "sizes": list(out.shape), "strides": list(out.stride())}
        seeded({"op": name, "seed": 9, "size": [2, 3], "out": spec}, lambda g: f(out, g))

print(json.dumps({"torch_version": torch.__version__, "deterministic": DETERMINISTIC, "full": FULL,
                  "random": RANDOM, "api": API}, separators=(",", ":")))
