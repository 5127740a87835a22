"""``switchyard.nn`` and ``switchyard.optim`` against PyTorch: module structure, initial weights
after ``manual_seed``, reprs, ``state_dict`` round trips, errors, and training steps of each
optimizer. ``CASES`` run under either library; PyTorch's outcomes are recorded in
``fixtures/nn_optim_torch.json`` by running this file under PyTorch's Python:
``/tmp/torchref/bin/python python/tests/test_nn_optim.py``."""

import json
import math
import pathlib

FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "nn_optim_torch.json"


def _values(t):
    return [str(t.dtype), list(t.shape), t.detach().reshape(-1).tolist()]


def _mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 3, bias=False), nn.GELU(approximate="tanh"))


def _init_weights(lib):
    lib.manual_seed(0)
    m = _mlp(lib)
    return {k: _values(v) for k, v in m.state_dict().items()}


def _init_layers(lib):
    lib.manual_seed(1)
    nn = lib.nn
    conv = nn.Conv2d(2, 3, 3, stride=2, padding=1)
    emb = nn.Embedding(5, 3, padding_idx=1)
    ln = nn.LayerNorm([3])
    return {
        "conv": {k: _values(v) for k, v in conv.state_dict().items()},
        "emb": _values(emb.weight),
        "ln": {k: _values(v) for k, v in ln.state_dict().items()},
    }


def _reprs(lib):
    nn = lib.nn
    return [
        repr(_mlp(lib)),
        repr(nn.Conv2d(2, 3, 3, stride=2, padding=1, bias=False)),
        repr(nn.LayerNorm(8)),
        repr(nn.Embedding(10, 4, padding_idx=0)),
        repr(nn.Dropout(0.25)),
        repr(nn.MSELoss()),
    ]


def _names(lib):
    m = _mlp(lib)
    return {
        "parameters": [n for n, _ in m.named_parameters()],
        "modules": [n for n, _ in m.named_modules()],
        "children": [type(c).__name__ for c in m.children()],
        "training": [m.training, m.eval().training, m[0].training],
        "len": len(m),
        "shapes": [list(p.shape) for p in m.parameters()],
    }


def _load_state_dict(lib):
    lib.manual_seed(0)
    a = _mlp(lib)
    lib.manual_seed(1)
    b = _mlp(lib)
    result = b.load_state_dict(a.state_dict())
    same = all(
        (pa.detach() == pb.detach()).all().item() for pa, pb in zip(a.parameters(), b.parameters())
    )
    return [repr(result), same]


def _load_missing(lib):
    m = _mlp(lib)
    sd = m.state_dict()
    del sd["0.bias"]
    sd["extra"] = lib.zeros(1)
    return m.load_state_dict(sd)


def _load_wrong_shape(lib):
    m = _mlp(lib)
    sd = m.state_dict()
    sd["0.bias"] = lib.zeros(7)
    return m.load_state_dict(sd)


def _train(lib, make_optimizer, steps=20):
    lib.manual_seed(0)
    nn = lib.nn
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2))
    x = lib.randn(32, 6)
    target = lib.randn(32, 2)
    opt = make_optimizer(lib, model.parameters())
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = lib.nn.functional.mse_loss(model(x), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def _bad_module_assignment(lib):
    m = lib.nn.Linear(2, 2)
    m.weight = lib.zeros(2, 2)


def _missing_forward(lib):
    class NoForward(lib.nn.Module):
        pass

    return NoForward()(lib.zeros(1))


def _cross_entropy(lib):
    lib.manual_seed(3)
    logits = lib.randn(4, 5, requires_grad=True)
    target = lib.tensor([0, 4, 2, 1])
    loss = lib.nn.functional.cross_entropy(logits, target)
    loss.backward()
    return [loss.item(), _values(logits.grad)]


CASES = {
    "init_weights": _init_weights,
    "init_layers": _init_layers,
    "reprs": _reprs,
    "names": _names,
    "load_state_dict": _load_state_dict,
    "load_missing": _load_missing,
    "load_wrong_shape": _load_wrong_shape,
    "bad_module_assignment": _bad_module_assignment,
    "missing_forward": _missing_forward,
    "cross_entropy": _cross_entropy,
    "sgd": lambda lib: _train(lib, lambda lib, p: lib.optim.SGD(p, lr=0.1)),
    "sgd_momentum_nesterov_wd": lambda lib: _train(
        lib, lambda lib, p: lib.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3)
    ),
    "adam": lambda lib: _train(lib, lambda lib, p: lib.optim.Adam(p, lr=0.01)),
    "adam_amsgrad_wd": lambda lib: _train(lib, lambda lib, p: lib.optim.Adam(p, lr=0.01, amsgrad=True, weight_decay=0.01)),
    "adamw": lambda lib: _train(lib, lambda lib, p: lib.optim.AdamW(p, lr=0.01)),
    "empty_params": lambda lib: lib.optim.SGD([], lr=0.1),
    "bad_lr": lambda lib: lib.optim.Adam(lib.nn.Linear(1, 1).parameters(), lr=-1.0),
    "bad_nesterov": lambda lib: lib.optim.SGD(lib.nn.Linear(1, 1).parameters(), lr=0.1, nesterov=True),
}


def outcome(lib, case):
    try:
        return ["value", CASES[case](lib)]
    except Exception as e:  # noqa: BLE001 - the outcome is the exception
        return ["raise", type(e).__name__, str(e)]


def _close(a, b):
    """Equal, with floats equal to float32 rounding (the same operations in the same order)."""
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-6) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    return a == b


def _parametrize(f):
    try:
        import pytest
    except ImportError:
        return f
    return pytest.mark.parametrize("case", sorted(CASES))(f)


def test_fixture_covers_every_case():
    recorded = json.loads(FIXTURE.read_text())["outcomes"]
    missing = sorted(set(CASES) - set(recorded))
    assert not missing, f"re-record the fixture (run this file under PyTorch): {missing}"


@_parametrize
def test_same_outcome_as_torch(case):
    import switchyard

    expected = json.loads(FIXTURE.read_text())["outcomes"][case]
    got = json.loads(json.dumps(outcome(switchyard, case)))
    assert _close(got, expected), f"{case}:\n ours:    {got}\n PyTorch: {expected}"


def test_training_reduces_the_loss():
    import switchyard

    for case in ["sgd", "adam", "adamw"]:
        losses = CASES[case](switchyard)
        assert losses[-1] < losses[0], case


if __name__ == "__main__":
    import torch

    outcomes = {case: outcome(torch, case) for case in CASES}
    FIXTURE.write_text(json.dumps({"torch_version": torch.__version__, "outcomes": outcomes}, indent=1) + "\n")
    print(f"wrote {len(outcomes)} outcomes to {FIXTURE}")
