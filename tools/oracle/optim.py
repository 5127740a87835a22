"""Record PyTorch's optimizer trajectories and a safetensors file, for switchyard-nn's tests.
Run with the reference PyTorch (see ../shared/bench/torch_reference.py for the set-up):

    /tmp/torchref/bin/python tools/oracle/optim.py crates/nn/tests/fixtures

Writes optim.json: for each optimizer configuration, the initial parameters, the gradient
fed at each step (PyTorch's gradient of a small loss at that step's parameters), and the
parameters after each step. The Rust test feeds the same gradients to its optimizer and
compares the parameters, so it checks the update rule alone. Also writes weights.safetensors
(safetensors.torch.save_file of a few named tensors) and weights.json (their values)."""
import json
import math
import os
import sys

import torch
from safetensors.torch import save_file

out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
torch.manual_seed(0)


def init_params():
    w = torch.tensor([[0.3, -0.2, 0.5], [0.1, 0.4, -0.6]], dtype=torch.float32)
    b = torch.tensor([0.05, -0.1], dtype=torch.float32)
    return [w.clone().requires_grad_(True), b.clone().requires_grad_(True)]


x = torch.tensor([[1.0, 2.0, -1.0], [0.5, -0.5, 2.0], [-1.5, 1.0, 0.25], [2.0, 0.0, -2.0]])
y = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.5, -0.5], [-1.0, 2.0]])


def loss_fn(params):
    w, b = params
    out = torch.tanh(x @ w.t() + b)
    return ((out - y) ** 2).mean() + 0.1 * (w ** 4).sum()


CONFIGS = [
    ("sgd", dict(lr=0.1)),
    ("sgd", dict(lr=0.05, momentum=0.9)),
    ("sgd", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ("sgd", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.02)),
    ("sgd", dict(lr=0.05, momentum=0.5, maximize=True)),
    ("adam", dict(lr=0.01)),
    ("adam", dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.05)),
    ("adam", dict(lr=0.02, amsgrad=True)),
    ("adamw", dict(lr=0.01)),
    ("adamw", dict(lr=0.03, betas=(0.85, 0.995), weight_decay=0.1, amsgrad=True)),
]

STEPS = 12
cases = []
for name, kw in CONFIGS:
    params = init_params()
    cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[name]
    opt = cls(params, foreach=False, **kw)
    case = {
        "optimizer": name,
        "options": {k: list(v) if isinstance(v, tuple) else v for k, v in kw.items()},
        "initial": [p.detach().flatten().tolist() for p in params],
        "shapes": [list(p.shape) for p in params],
        "grads": [],
        "params": [],
    }
    for _ in range(STEPS):
        opt.zero_grad()
        loss_fn(params).backward()
        case["grads"].append([p.grad.flatten().tolist() for p in params])
        opt.step()
        case["params"].append([p.detach().flatten().tolist() for p in params])
    cases.append(case)

# clip_grad_norm_: gradients before and after, and the returned norm, for several norms.
clip = []
for norm_type in (2.0, 1.0, math.inf):
    for max_norm in (0.5, 100.0):
        a = torch.tensor([3.0, -4.0], requires_grad=True)
        b = torch.tensor([[1.0, 2.0], [-2.0, 0.5]], requires_grad=True)
        a.grad = torch.tensor([0.3, -0.4])
        b.grad = torch.tensor([[1.0, -2.0], [0.5, 0.25]])
        total = torch.nn.utils.clip_grad_norm_([a, b], max_norm, norm_type=norm_type)
        clip.append({
            "norm_type": "inf" if norm_type == math.inf else norm_type,
            "max_norm": max_norm,
            "total": total.item(),
            "grads": [a.grad.flatten().tolist(), b.grad.flatten().tolist()],
        })

with open(os.path.join(out_dir, "optim.json"), "w") as f:
    json.dump({"steps": STEPS, "cases": cases, "clip": clip}, f, indent=1)

weights = {
    "0.weight": torch.arange(6, dtype=torch.float32).reshape(2, 3) / 7,
    "0.bias": torch.tensor([0.5, -0.25], dtype=torch.float32),
    "2.weight": torch.tensor([[1.0, -1.0]], dtype=torch.float64),
    "steps": torch.tensor([3, 1, 4], dtype=torch.int64),
    "mask": torch.tensor([True, False]),
}
save_file(weights, os.path.join(out_dir, "weights.safetensors"))
with open(os.path.join(out_dir, "weights.json"), "w") as f:
    json.dump({k: {"dtype": str(v.dtype).replace("torch.", ""), "shape": list(v.shape),
                   "values": v.flatten().tolist()} for k, v in weights.items()}, f, indent=1)
