"""Trains a small network exactly as one would with PyTorch: this file is a PyTorch program
whose only change is its first import (``import torch`` runs it under PyTorch, with the same
losses step for step).

    PYTHONPATH=python .venv/bin/python python/examples/train_mlp.py
"""

import switchyard as torch

nn = torch.nn
F = torch.nn.functional
optim = torch.optim


class MLP(nn.Module):
    def __init__(self, inputs, hidden, outputs):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.GELU())
        self.head = nn.Linear(hidden, outputs)

    def forward(self, x):
        return self.head(self.body(x))


def train(steps=300, log_every=20, log=print):
    """Fits y = sin(x · w) + noise; returns the loss of every step."""
    torch.manual_seed(0)
    x = torch.randn(256, 8)
    w_true = torch.randn(8, 1)
    y = torch.sin(x @ w_true) + 0.1 * torch.randn(256, 1)
    model = MLP(8, 32, 1)
    optimizer = optim.SGD(model.parameters(), lr=0.03, momentum=0.9)
    losses = []
    for step in range(steps):
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if log and (step % log_every == 0 or step == steps - 1):
            log(f"step {step:4d}  loss {loss.item():.6f}")
    return losses


if __name__ == "__main__":
    train()
