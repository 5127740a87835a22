"""``switchyard.optim``: optimizers with PyTorch's names, hyper-parameters and update rules."""

from .adam import Adam, AdamW
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW"]
