"""The default generator's module functions, as ``torch.random`` (``torch/random.py``): seeding,
the state as a ``uint8`` tensor, and ``fork_rng``. switchyard has one device with a generator,
the CPU, so these act on ``switchyard.default_generator`` alone."""

import contextlib

from ._C import Generator, default_generator

__all__ = [
    "set_rng_state",
    "get_rng_state",
    "manual_seed",
    "seed",
    "initial_seed",
    "fork_rng",
]


def set_rng_state(new_state):
    """Sets the default generator's state from ``get_rng_state()``'s tensor."""
    default_generator.set_state(new_state)


def get_rng_state():
    """The default generator's state as a ``uint8`` tensor (PyTorch's bytes)."""
    return default_generator.get_state()


def manual_seed(seed):
    """Seeds the default generator and returns it. ``seed`` is an int in
    ``[-0x8000_0000_0000_0000, 0xffff_ffff_ffff_ffff]``; a negative one is taken as its two's
    complement, as PyTorch's binding does."""
    seed = int(seed)
    return default_generator.manual_seed(seed)


def seed():
    """Seeds the default generator from the operating system's randomness; returns the seed."""
    return default_generator.seed()


def initial_seed():
    """The seed the default generator was last seeded with."""
    return default_generator.initial_seed()


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type=None):
    """Restores the default generator's state on exit (``torch.random.fork_rng``; only the CPU
    generator exists here, so ``devices`` and ``device_type`` select nothing more)."""
    if device_type == "meta" or not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
