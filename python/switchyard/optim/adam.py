"""``switchyard.optim.Adam`` and ``AdamW``: PyTorch's single-tensor Adam, with its ``lerp_``
and ``addcmul_`` steps written as the operators ``switchyard_nn::optim::Adam`` uses."""

import switchyard as _torch

from .optimizer import Optimizer

__all__ = ["Adam", "AdamW"]


def _lerp_(a, b, w):
    # PyTorch's lerp kernel: a + w (b - a) for w < 0.5, else b - (b - a)(1 - w).
    diff = b.sub(a)
    if w < 0.5:
        a.add_(diff, alpha=w)
    else:
        a.copy_(b.sub(diff, alpha=1 - w))


class Adam(Optimizer):
    """Adam (``decoupled weight decay`` in ``AdamW``), with ``amsgrad`` and ``maximize``."""

    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter with a gradient; returns ``closure()``'s loss."""
        loss = None
        if closure is not None:
            with _torch.enable_grad():
                loss = closure()
        with _torch.no_grad():
            for group in self.param_groups:
                beta1, beta2 = group["betas"]
                lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
                amsgrad, maximize = group["amsgrad"], group["maximize"]
                for param in group["params"]:
                    if param.grad is None:
                        continue
                    grad = param.grad if not maximize else -param.grad
                    state = self.state[param]
                    if len(state) == 0:
                        state["step"] = _torch.tensor(0.0)
                        state["exp_avg"] = _torch.zeros_like(param, memory_format=_torch.preserve_format)
                        state["exp_avg_sq"] = _torch.zeros_like(param, memory_format=_torch.preserve_format)
                        if amsgrad:
                            state["max_exp_avg_sq"] = _torch.zeros_like(param, memory_format=_torch.preserve_format)
                    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                    state["step"] += 1
                    if weight_decay != 0:
                        if self._decoupled:
                            param.mul_(1 - lr * weight_decay)
                        else:
                            grad = grad.add(param, alpha=weight_decay)
                    _lerp_(exp_avg, grad, 1 - beta1)
                    exp_avg_sq.mul_(beta2).add_(grad.mul(grad), alpha=1 - beta2)
                    step = state["step"].item()
                    bias_correction1 = 1 - beta1**step
                    bias_correction2 = 1 - beta2**step
                    step_size = lr / bias_correction1
                    bias_correction2_sqrt = bias_correction2**0.5
                    if amsgrad:
                        _torch.maximum(state["max_exp_avg_sq"], exp_avg_sq, out=state["max_exp_avg_sq"])
                        denom = (state["max_exp_avg_sq"].sqrt() / bias_correction2_sqrt).add_(eps)
                    else:
                        denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
                    param.add_(exp_avg.div(denom), alpha=-step_size)
        return loss


class AdamW(Adam):
    """Adam with decoupled weight decay (default 1e-2)."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused)
