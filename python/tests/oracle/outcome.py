"""Running a case under a library, and comparing two outcomes.

An outcome is JSON data: ``{"result": value, "mutated": {input index: values}}`` or
``{"raises": type name, "message": str(exception)}``. A tensor value records dtype, shape,
strides, storage offset, values (NaN and infinities as strings; None when the values are
undefined), the inputs whose storage it shares after the call (``alias``) and the input it
is (``is``).
Values compare with torch.testing's default tolerances per dtype, everything else exactly.
"""

import math
import warnings

from .argspec import build

# torch.testing.assert_close's defaults (rtol, atol) per dtype.
TOLERANCES = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
}


def _encode_values(values):
    if isinstance(values, list):
        return [_encode_values(v) for v in values]
    if isinstance(values, float) and not math.isfinite(values):
        return str(values)  # "nan", "inf", "-inf"
    return values


def _dtype_name(t):
    return str(t.dtype).rpartition(".")[2]


def storage_address(lib, t):
    """The address of the storage's first byte (None for an empty tensor)."""
    if t.numel() == 0:
        return None
    if lib.__name__ == "torch":
        return t.untyped_storage().data_ptr()
    if t.dtype == lib.bfloat16:
        t = lib.ops.aten.view.dtype(t, lib.int16)
    array = t.numpy()
    return array.__array_interface__["data"][0] - t.storage_offset() * t.element_size()


def _encode(lib, value, inputs, addresses, with_values):
    if isinstance(value, lib.Tensor):
        address = storage_address(lib, value)
        return {
            "dtype": _dtype_name(value),
            "shape": list(value.shape),
            "stride": list(value.stride()),
            "offset": value.storage_offset(),
            "values": _encode_values(value.tolist()) if with_values else None,
            "alias": [i for i, a in enumerate(addresses) if a is not None and a == address],
            "is": next((i for i, t in enumerate(inputs) if t is value), None),
        }
    if isinstance(value, (tuple, list)):
        return {type(value).__name__: [_encode(lib, v, inputs, addresses, with_values)
                                       for v in value]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"py": type(value).__name__, "value": _encode_values(value)}
    if isinstance(value, lib.dtype):
        return {"py": "dtype", "value": str(value)}
    return {"py": type(value).__name__, "value": repr(value)}


def run(lib, case):
    """The outcome of ``case`` under ``lib`` (``torch`` or ``switchyard``)."""
    inputs = []
    args = build(lib, case["args"], inputs)
    kwargs = {k: build(lib, v, inputs) for k, v in case["kwargs"].items()}
    before = [_encode_values(t.tolist()) for t in inputs]
    try:
        op = getattr(getattr(lib.ops.aten, case["op"]), case["overload"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = op(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - every exception is an outcome
        return {"raises": type(e).__name__, "message": str(e)}
    # Storage addresses are read after the call: switchyard reads them through ``numpy()``,
    # which marks a storage as exported (never to grow again), so reading them before the
    # call would make out= resizes fail. A resized out= storage is its new one.
    addresses = [storage_address(lib, t) for t in inputs]
    out = {"result": _encode(lib, result, inputs, addresses, case["values"])}
    mutated = {}
    for i, t in enumerate(inputs if case["values"] else []):
        after = _encode_values(t.tolist())
        if after != before[i]:
            mutated[str(i)] = {"dtype": _dtype_name(t), "values": after}
    if mutated:
        out["mutated"] = mutated
    return out


def _close(a, b, dtype):
    if a is None or b is None:
        return a is b
    if isinstance(a, list) or isinstance(b, list):
        if not (isinstance(a, list) and isinstance(b, list)) or len(a) != len(b):
            return False
        return all(_close(x, y, dtype) for x, y in zip(a, b))
    if dtype not in TOLERANCES or isinstance(a, str) or isinstance(b, str):
        return a == b and type(a) is type(b)
    rtol, atol = TOLERANCES[dtype]
    return abs(a - b) <= atol + rtol * abs(b)


def _diff_value(exp, got, path, diffs):
    if set(exp) != set(got):
        diffs.append(f"{path}: {exp} != {got}")
        return
    if "py" in exp:
        if exp != got:
            diffs.append(f"{path}: {exp} != {got}")
        return
    for seq in ("tuple", "list"):
        if seq in exp:
            if len(exp[seq]) != len(got[seq]):
                diffs.append(f"{path}: {len(exp[seq])} {seq} items != {len(got[seq])}")
                return
            for i, (e, g) in enumerate(zip(exp[seq], got[seq])):
                _diff_value(e, g, f"{path}[{i}]", diffs)
            return
    for key in ("dtype", "shape", "stride", "offset", "alias", "is"):
        if exp[key] != got[key]:
            diffs.append(f"{path}.{key}: torch {exp[key]} != ours {got[key]}")
    if exp["dtype"] == got["dtype"] and exp["shape"] == got["shape"]:
        if not _close(got["values"], exp["values"], exp["dtype"]):
            diffs.append(f"{path}.values: torch {exp['values']} != ours {got['values']}")


def differences(expected, got):
    """The differences between PyTorch's outcome and ours (empty when they agree)."""
    if "raises" in expected or "raises" in got:
        if expected != got:
            return [f"torch {_short(expected)} != ours {_short(got)}"]
        return []
    diffs = []
    _diff_value(expected["result"], got["result"], "result", diffs)
    em, gm = expected.get("mutated", {}), got.get("mutated", {})
    if set(em) != set(gm):
        diffs.append(f"mutated inputs: torch {sorted(em)} != ours {sorted(gm)}")
    for i in sorted(set(em) & set(gm)):
        e, g = em[i], gm[i]
        if e["dtype"] != g["dtype"] or not _close(g["values"], e["values"], e["dtype"]):
            diffs.append(f"input {i} after the call: torch {e} != ours {g}")
    return diffs


def _short(o):
    if "raises" in o:
        return f"{o['raises']}: {o['message']}"
    return f"result {o['result']}"
