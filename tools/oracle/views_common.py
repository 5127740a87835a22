"""Helpers shared by tools/oracle/views.py and tools/oracle/copy_ops.py.

A tensor *spec* is a dict {dtype, device, storage, sizes, strides, offset}: a base storage of
`storage` elements holding `base_value(i)` (converted to dtype), viewed with as_strided. The
Rust tests rebuild exactly the same tensors from the same formula."""
import torch

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
          torch.float16, torch.bfloat16, torch.float32, torch.float64]


def dname(dt):
    return str(dt).replace("torch.", "")


def dtype_of(name):
    return getattr(torch, name)


def base_value(i, dt):
    """Element i of a spec's storage; exact in every dtype (Rust: `base_value`)."""
    if dt == torch.bool:
        return i % 3 != 0
    k = (i * 7) % 23
    if dt == torch.uint8:
        return k
    if dt.is_floating_point:
        return k - 11 + 0.25 * (i % 4)
    return k - 11


def spec(dtype="float32", sizes=(2, 3), strides=None, offset=0, storage=None, device="cpu"):
    sizes = list(sizes)
    if strides is None:
        strides, acc = [0] * len(sizes), 1
        for d in reversed(range(len(sizes))):
            strides[d] = acc
            acc *= max(sizes[d], 1)
    strides = list(strides)
    if storage is None:
        if 0 in sizes:
            storage = offset
        else:
            storage = offset + sum((n - 1) * s for n, s in zip(sizes, strides)) + 1
    return {"dtype": dtype, "device": device, "storage": storage, "sizes": sizes,
            "strides": strides, "offset": offset}


def on(device, s):
    return dict(s, device=device)


def make(s):
    dt = dtype_of(s["dtype"])
    if s["device"] == "meta":
        base = torch.empty(s["storage"], dtype=dt, device="meta")
    else:
        vals = [base_value(i, dt) for i in range(s["storage"])]
        base = torch.tensor(vals, dtype=torch.float64 if dt != torch.bool else torch.bool).to(dt)
    return base.as_strided(s["sizes"], s["strides"], s["offset"])


def value_repr(v):
    if isinstance(v, bool) or isinstance(v, int):
        return v
    return repr(float(v))


def values(t):
    if t.is_meta:
        return None
    flat = t.detach().reshape(-1)
    if t.dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        return [repr(x) for x in flat.double().tolist()]
    return flat.tolist()


def storage_id(t):
    return t.untyped_storage()._cdata


def describe(out, base=None, with_values=False):
    d = {"sizes": list(out.shape), "strides": list(out.stride()), "offset": out.storage_offset(),
         "dtype": dname(out.dtype), "device": str(out.device)}
    if base is not None:
        d["alias"] = storage_id(out) == storage_id(base)
        d["is_self"] = out is base
    if with_values:
        d["values"] = values(out)
        d["storage_nbytes"] = out.untyped_storage().nbytes()
    return d


def error(e):
    return {"error": {"kind": type(e).__name__, "msg": str(e).split("\n")[0]}}


def shares_version(out, base):
    """Whether an in-place write to `base` bumps `out`'s version (shared version counter)."""
    before = out._version
    with torch.no_grad():
        base.zero_()
    return out._version != before
