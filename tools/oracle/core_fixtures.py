"""Record PyTorch's answers for the core crate's tests (promotion, result_type, scalar
conversion, broadcasting, printing). Run with a PyTorch install:

    python tools/oracle/core_fixtures.py > crates/core/tests/fixtures/torch_core.json

The JSON is committed; tests read it, so CI needs no PyTorch."""
import json, torch

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
          torch.float16, torch.bfloat16, torch.float32, torch.float64]
name = lambda d: str(d).replace("torch.", "")
out = {"torch_version": torch.__version__}

out["promote_types"] = [[name(a), name(b), name(torch.promote_types(a, b))] for a in DTYPES for b in DTYPES]

def make(kind, dt):
    if kind == "dim":
        return torch.ones(2, dtype=dt)
    if kind == "zerodim":
        return torch.ones((), dtype=dt)
    raise ValueError(kind)

cases = []
for a in DTYPES:
    for b in DTYPES:
        for ka in ("dim", "zerodim"):
            for kb in ("dim", "zerodim"):
                r = torch.result_type(make(ka, a), make(kb, b))
                cases.append({"args": [[ka, name(a)], [kb, name(b)]], "result": name(r)})
    for s, sk in ((True, "bool"), (2, "int"), (2.5, "float")):
        for ka in ("dim", "zerodim"):
            r = torch.result_type(make(ka, a), s)
            cases.append({"args": [[ka, name(a)], ["scalar", sk]], "result": name(r)})
out["result_type"] = cases

# scalar -> dtype conversion through fill_ (Scalar::to<T> with overflow check)
conv = []
for dt in DTYPES:
    for v in (True, 0, 1, 2, -1, 127, 128, 255, 256, -128, -129, -255, -256, 32767, 32768, 2**31 - 1, 2**31,
              2**63 - 1, 0.5, -0.5, 1e5, 65504.0, 65520.0, 3.4e38, 3.5e38, 1e300, float("inf"), float("nan")):
        try:
            t = torch.empty((), dtype=dt).fill_(v)
            val = t.item()
            if isinstance(val, float) and val != val:
                val = "nan"
            elif isinstance(val, float) and val in (float("inf"), float("-inf")):
                val = "inf" if val > 0 else "-inf"
            conv.append({"dtype": name(dt), "value": repr(v), "ok": val})
        except Exception as e:
            conv.append({"dtype": name(dt), "value": repr(v), "error": str(e).split("\n")[0]})
out["scalar_conversion"] = conv

bc = []
for a, b in [((3,), (4,)), ((2, 3), (2, 4)), ((1, 3), (4, 1)), ((5, 1, 3), (4, 3)), ((), (2, 3)),
             ((0,), (1,)), ((0,), (2,)), ((2, 1), (3, 4)), ((3, 1, 1), (1, 4, 5))]:
    try:
        bc.append({"a": list(a), "b": list(b), "ok": list(torch.broadcast_shapes(a, b))})
    except Exception as e:
        bc.append({"a": list(a), "b": list(b), "error": str(e)})
    try:
        (torch.ones(a) + torch.ones(b))
        bc[-1]["add_ok"] = True
    except Exception as e:
        bc[-1]["add_error"] = str(e)
out["broadcast"] = bc

torch.manual_seed(0)
prints = []
def P(expr):
    t = eval(expr)
    entry = {"expr": expr, "str": str(t), "dtype": name(t.dtype), "shape": list(t.shape),
             "device": t.device.type}
    if t.device.type != "meta":
        c = t.contiguous().reshape(-1).tolist()
        entry["values"] = [repr(v) if isinstance(v, float) else v for v in c]
        # a transposed input is rebuilt in the test as a view of its transpose
        entry["transposed"] = t.dim() == 2 and not t.is_contiguous()
    prints.append(entry)
for e in [
    'torch.tensor([[1., 2.], [3., 4.]])',
    'torch.tensor([1.5, 2.])',
    'torch.tensor([1e-5, 1e5])',
    'torch.tensor([1, 2], dtype=torch.int32)',
    'torch.arange(2000)',
    'torch.ones(0, 3)',
    'torch.ones(0)',
    'torch.ones(0, dtype=torch.int64)',
    'torch.tensor(3.5)',
    'torch.tensor(3)',
    'torch.tensor(True)',
    'torch.tensor([True, False])',
    "torch.tensor([1., float('nan'), float('inf'), -float('inf')])",
    'torch.tensor([1, 2], dtype=torch.float16)',
    'torch.tensor([1.25, 2], dtype=torch.bfloat16)',
    'torch.tensor([1.5, 2], dtype=torch.float64)',
    'torch.tensor([0., 0.])',
    'torch.tensor([-0.5, 100.25])',
    'torch.tensor([1e8, 1.])',
    'torch.tensor([1e9, 1.])',
    'torch.tensor([1e-4, 1.])',
    'torch.tensor([0.0001, 0.5])',
    'torch.tensor([123456789.])',
    'torch.tensor([1., 2000.])',
    'torch.tensor([1., 999.])',
    'torch.arange(24).reshape(2, 3, 4)',
    'torch.arange(24.).reshape(2, 3, 4) / 7',
    'torch.arange(3000.).reshape(30, 100)',
    'torch.arange(1100).reshape(1100, 1)',
    'torch.arange(40) * 1000003',
    'torch.arange(60.) / 3',
    'torch.tensor([-1, 2, -100], dtype=torch.int8)',
    'torch.tensor([[True, False], [False, True]])',
    'torch.tensor([255, 0], dtype=torch.uint8)',
    "torch.empty(2, 3, device='meta')",
    "torch.empty(0, device='meta')",
    "torch.empty(2, device='meta', dtype=torch.int64)",
    'torch.tensor([], dtype=torch.bool)',
    'torch.tensor([[[]]])',
    "torch.tensor(float('nan'))",
    'torch.tensor([1e-10, -1e10])',
    'torch.tensor([0.1, 0.25], dtype=torch.float64)',
    'torch.arange(10.).reshape(2,5).t()',
    'torch.tensor([2.5, 3.5, -2.5], dtype=torch.float32).round()',
    'torch.tensor([65504.], dtype=torch.float16)',
    'torch.tensor([-0., 1.])',
    'torch.tensor([1., 2.], requires_grad=True)',
    'torch.arange(12.).reshape(3, 4) - 5.5',
    'torch.tensor(-7)',
    'torch.tensor([[1e-5]])',
    '(torch.arange(1001) * 3).to(torch.int16)',
]:
    P(e)
out["print"] = prints
print(json.dumps(out, indent=1))
