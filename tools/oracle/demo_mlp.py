"""The MLP of `switchyard demo` in PyTorch: prints the loss the demo must print."""
import torch


def param(shape, scale):
    n = 1
    for s in shape:
        n *= s
    values = [((i * 37 % 101) / 101.0 - 0.5) * scale for i in range(n)]
    return torch.tensor(values, dtype=torch.float32).reshape(shape)


x, w1, b1 = param([8, 16], 2.0), param([32, 16], 0.5), param([32], 0.1)
w2, b2 = param([4, 32], 0.5), param([4], 0.1)
target = torch.arange(8) % 4
h = torch.nn.functional.linear(x, w1, b1).relu()
logits = torch.nn.functional.linear(h, w2, b2)
print(torch.nn.functional.nll_loss(logits.log_softmax(1), target))
