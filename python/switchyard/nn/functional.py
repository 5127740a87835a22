"""``switchyard.nn.functional``: the functional forms of the layers, over the operators as
``torch.nn.functional`` writes them."""

import warnings

import switchyard as _torch

from .. import _C

__all__ = [
    "linear",
    "relu",
    "gelu",
    "sigmoid",
    "tanh",
    "silu",
    "dropout",
    "layer_norm",
    "embedding",
    "softmax",
    "log_softmax",
    "mse_loss",
    "cross_entropy",
    "nll_loss",
    "conv2d",
]


class _Reduction:
    @staticmethod
    def get_enum(reduction):
        if reduction == "none":
            return 0
        if reduction == "mean":
            return 1
        if reduction == "elementwise_mean":
            warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.")
            return 1
        if reduction == "sum":
            return 2
        raise ValueError(f"{reduction} is not a valid value for reduction")


def linear(input, weight, bias=None):
    """``input @ weight.T + bias``."""
    return _C._nn.linear(input, weight, bias)


def relu(input, inplace=False):
    """max(input, 0)."""
    return _torch.relu_(input) if inplace else _torch.relu(input)


def gelu(input, approximate="none"):
    """The Gaussian error linear unit (``approximate='tanh'`` for its tanh form)."""
    return _C._nn.gelu(input, approximate=approximate)


def sigmoid(input):
    return _torch.sigmoid(input)


def tanh(input):
    return _torch.tanh(input)


def silu(input, inplace=False):
    return _C._nn.silu_(input) if inplace else _C._nn.silu(input)


def dropout(input, p=0.5, training=True, inplace=False):
    """Zeroes elements with probability ``p`` and scales the rest by ``1 / (1 - p)``."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    return _torch.dropout_(input, p, training) if inplace else _torch.dropout(input, p, training)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalises over the last ``len(normalized_shape)`` dimensions."""
    return _torch.layer_norm(input, normalized_shape, weight, bias, eps, False)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` picked by ``input``."""
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < weight.size(0), "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -weight.size(0), "Padding_idx must be within num_embeddings"
            padding_idx = weight.size(0) + padding_idx
    else:
        padding_idx = -1
    if max_norm is not None:
        raise NotImplementedError("embedding(max_norm=...) is not supported yet")
    return _torch.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        raise TypeError("softmax() missing the dim argument (implicit dim is deprecated in PyTorch)")
    return input.softmax(dim) if dtype is None else input.softmax(dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        raise TypeError("log_softmax() missing the dim argument (implicit dim is deprecated in PyTorch)")
    return input.log_softmax(dim) if dtype is None else input.log_softmax(dim, dtype=dtype)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error."""
    if target.size() != input.size():
        warnings.warn(
            f"Using a target size ({target.size()}) that is different to the input size ({input.size()}). "
            "This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.",
            stacklevel=2,
        )
    expanded_input, expanded_target = _torch.broadcast_tensors(input, target)
    return _C._nn.mse_loss(expanded_input, expanded_target, _Reduction.get_enum(reduction))


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean", label_smoothing=0.0):
    """Cross entropy of logits ``input`` against class indices or probabilities ``target``."""
    return _C._nn.cross_entropy_loss(input, target, weight, _Reduction.get_enum(reduction), ignore_index, label_smoothing)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log likelihood of log-probabilities ``input``."""
    return _C._nn.nll_loss_nd(input, target, weight, _Reduction.get_enum(reduction), ignore_index)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d convolution."""
    return _torch.conv2d(input, weight, bias, stride, padding, dilation, groups)
