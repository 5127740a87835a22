"""Helpers shared by the linalg and nn oracle scripts: deterministic tensors described by a
JSON spec (storage, sizes, strides, offset), exact value encoding, and case recording.

A tensor spec is {"dtype", "sizes", "strides", "offset", "storage"}: the test rebuilds the
storage as a 1-d tensor and views it with `as_strided_view`, so transposed, sliced and
expanded (stride-0) inputs are reproduced exactly. Floats are written with `repr` ("nan",
"inf" spelled out); bf16/f16 values are exact in that form."""
import math
import random

import torch

DTYPES = {
    "bool": torch.bool, "uint8": torch.uint8, "int8": torch.int8, "int16": torch.int16,
    "int32": torch.int32, "int64": torch.int64, "float16": torch.float16,
    "bfloat16": torch.bfloat16, "float32": torch.float32, "float64": torch.float64,
}
ALL = list(DTYPES)
FLOATS = ["float16", "bfloat16", "float32", "float64"]
NAMES = {v: k for k, v in DTYPES.items()}

rng = random.Random(1234)


def enc(v):
    """A Python number as JSON: floats as repr strings (nan/inf spelled out)."""
    if isinstance(v, bool):
        return v
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    return v


def random_values(dtype, n, low=-3, high=3):
    if dtype == "bool":
        return [rng.random() < 0.5 for _ in range(n)]
    if dtype == "uint8":
        return [rng.randint(0, 2 * high) for _ in range(n)]
    if dtype in ("int8", "int16", "int32", "int64"):
        return [rng.randint(low, high) for _ in range(n)]
    return [round(rng.uniform(low, high), 3) for _ in range(n)]


GEN = [7, 3, 23, 11, 4]


def generated(n):
    """Values the tests regenerate instead of reading them from the fixture:
    `((i * 7 + 3) % 23 - 11) / 4`, exact in every float type and small."""
    a, b, m, c, d = GEN
    return [((i * a + b) % m - c) / d for i in range(n)]


def make(dtype, sizes, strides=None, offset=0, values=None, low=-3, high=3, gen=False):
    """A tensor of `sizes` viewing a fresh storage with `strides` (contiguous by default);
    `gen=True` uses `generated` values, recorded as a formula rather than a list."""
    if strides is None:
        strides, acc = [], 1
        for s in reversed(sizes):
            strides.insert(0, acc)
            acc *= max(s, 1)
    needed = offset + 1 + sum((s - 1) * st for s, st in zip(sizes, strides)) if all(s > 0 for s in sizes) else offset
    if gen:
        values = generated(needed)
        if dtype not in ("float16", "bfloat16", "float32", "float64"):
            values = [int(v * 4) for v in values]
    if values is None:
        values = random_values(dtype, needed, low, high)
    assert len(values) >= needed, (len(values), needed)
    base = torch.tensor(values, dtype=DTYPES[dtype]) if values else torch.empty(0, dtype=DTYPES[dtype])
    t = base.as_strided(sizes, strides, offset)
    spec = {"dtype": dtype, "sizes": list(sizes), "strides": list(strides), "offset": offset,
            "storage": [enc(v) for v in base.tolist()]}
    if gen:
        spec["storage"] = {"gen": GEN, "len": needed}
    return t, spec


def transposed(dtype, sizes, **kw):
    """A 2-d (or batched) tensor whose last two dimensions are transposed in memory."""
    *batch, r, c = sizes
    t, spec = make(dtype, [*batch, c, r], **kw)
    t = t.transpose(-1, -2)
    spec = dict(spec, sizes=list(t.shape), strides=list(t.stride()))
    return t, spec


def spec_of(t):
    """The spec of an existing tensor view (its whole storage is recorded)."""
    storage = torch.empty(0, dtype=t.dtype).set_(t.untyped_storage(), 0, (t.untyped_storage().nbytes() // t.element_size(),), (1,))
    return {"dtype": NAMES[t.dtype], "sizes": list(t.shape), "strides": list(t.stride()),
            "offset": t.storage_offset(), "storage": [enc(v) for v in storage.tolist()]}


def result_spec(t):
    """A result: dtype, sizes, strides and row-major values."""
    return {"dtype": NAMES[t.dtype], "sizes": list(t.shape), "strides": list(t.stride()),
            "values": [enc(v) for v in t.detach().contiguous().reshape(-1).tolist()]}


def scalar(v):
    if isinstance(v, bool):
        return {"bool": v}
    if isinstance(v, int):
        return {"int": v}
    return {"float": enc(float(v))}


def error_spec(e):
    return {"kind": type(e).__name__, "message": str(e).split("\n")[0]}


def record(cases, name, fn, **entry):
    """Runs `fn` (returning a tensor or a tuple of tensors) and appends a case with its
    result or error."""
    try:
        r = fn()
        rs = list(r) if isinstance(r, (tuple, list)) else [r]
        entry["expect"] = {"results": [result_spec(x) for x in rs]}
    except Exception as e:  # noqa: BLE001 - errors are the point
        entry["expect"] = {"error": error_spec(e)}
    entry["name"] = name
    cases.append(entry)
