"""Generator objects, the default generator and ``generator=`` against PyTorch 2.15.

The expected values were read from the reference install, e.g.
``/tmp/torchref/bin/python -c "import torch; g = torch.Generator().manual_seed(1);
print(torch.randn(2, 3, generator=g).tolist())"``; each test names the torch calls that gave
its values. State bytes are compared by SHA-256 of ``bytes(g.get_state().tolist())``."""

import hashlib
import pickle

import pytest

import switchyard as torch
from switchyard import random as sy_random


def _sha(state):
    return hashlib.sha256(bytes(state.tolist())).hexdigest()


def test_generator_object_basics():
    g = torch.Generator()
    assert type(g).__name__ == "Generator"
    assert repr(g).startswith("<switchyard._C.Generator object at 0x")
    assert str(g.device) == "cpu"
    assert torch.Generator("cpu").device == torch.device("cpu")
    assert torch.Generator(device=torch.device("cpu")).device.type == "cpu"
    # torch.Generator().initial_seed(): PyTorch's default seed.
    assert g.initial_seed() == 67280421310721
    assert g.manual_seed(3) is g
    assert g.initial_seed() == 3
    s = g.seed()
    assert isinstance(s, int) and g.initial_seed() == s


@pytest.mark.parametrize(
    "seed, expected",
    [
        # torch.Generator().manual_seed(v).initial_seed()
        (-1, 18446744073709551615),
        (-(2**63), 9223372036854775808),
        (2**64 - 1, 18446744073709551615),
        (0, 0),
    ],
)
def test_manual_seed_range(seed, expected):
    assert torch.Generator().manual_seed(seed).initial_seed() == expected


@pytest.mark.parametrize(
    "seed, kind, message",
    [
        ("x", RuntimeError, "manual_seed expected a long, but got str"),
        (1.5, RuntimeError, "manual_seed expected a long, but got float"),
        (True, RuntimeError, "manual_seed expected a long, but got bool"),
        (2**64, ValueError, "Overflow when unpacking long long"),
        (-(2**63) - 1, ValueError, "Overflow when unpacking long long"),
    ],
)
def test_manual_seed_errors(seed, kind, message):
    with pytest.raises(kind) as e:
        torch.Generator().manual_seed(seed)
    assert str(e.value) == message


def test_generator_devices_refused_as_pytorch_does():
    # torch.Generator("meta") / ("lazy"): no accelerator of that type.
    for name, kind in (("meta", "META"), ("lazy", "LAZY")):
        with pytest.raises(RuntimeError) as e:
            torch.Generator(name)
        assert str(e.value) == f"{kind} device type not an accelerator."


def test_state_bytes_equal_pytorchs():
    g = torch.Generator().manual_seed(3)
    st = g.get_state()
    assert st.dtype == torch.uint8 and tuple(st.shape) == (5056,)
    # g = torch.Generator().manual_seed(3); sha(g.get_state())
    assert _sha(st) == "76fe321e2dc1dfdec62a274bcedbeea2727be2e2972f97e728e07e0345c21ede"
    # then torch.rand(3, generator=g, dtype=torch.float64)
    assert torch.rand(3, generator=g, dtype=torch.float64).tolist() == [
        0.03410819565052048, 0.28674022672130695, 0.7729149443285843,
    ]
    assert _sha(g.get_state()) == "05c5236aadce7258448644d7055589ecc31734f0c039e32f9f979796d81d4250"
    # then torch.randn(1, generator=g, dtype=torch.float64): the cached second normal sample
    # is part of the state.
    assert torch.randn(1, generator=g, dtype=torch.float64).tolist() == [0.7625263899704082]
    assert _sha(g.get_state()) == "11e00b734140735c5a530ce72ca28379f9605d924e4f4aa88b8bd160071ea82e"


def test_state_round_trips_and_restores_the_stream():
    g = torch.Generator().manual_seed(7)
    torch.rand(5, generator=g)
    state = g.get_state()
    a = torch.randn(10, generator=g).tolist()
    assert g.set_state(state) is g
    assert torch.randn(10, generator=g).tolist() == a
    h = torch.Generator()
    h.set_state(state)
    assert h.initial_seed() == 7
    assert torch.randn(10, generator=h).tolist() == a
    c = g.set_state(state).clone_state()
    assert torch.randn(10, generator=c).tolist() == a
    p = pickle.loads(pickle.dumps(g.set_state(state)))
    assert torch.randn(10, generator=p).tolist() == a


@pytest.mark.parametrize(
    "value, kind, message",
    [
        # g.set_state(torch.zeros(3, dtype=torch.uint8)) and the others, under torch.
        (lambda: torch.zeros(3, dtype=torch.uint8), RuntimeError,
         "Expected a CPUGeneratorImplState of size 5056 but found the input RNG state size to be 3"),
        (lambda: torch.zeros(5056), TypeError, "RNG state must be a torch.ByteTensor"),
        (lambda: "x", TypeError, "expected a torch.ByteTensor, but got str"),
        (lambda: torch.zeros(5056, dtype=torch.uint8), RuntimeError, "Invalid mt19937 state"),
        (lambda: torch.zeros(10112, dtype=torch.uint8)[::2], RuntimeError,
         "RNG state must be contiguous"),
    ],
)
def test_set_state_errors(value, kind, message):
    with pytest.raises(kind) as e:
        torch.Generator().set_state(value())
    assert str(e.value) == message


def test_generator_argument_of_random_operators():
    # g = torch.Generator().manual_seed(1), then each call in turn on the same g (every
    # operator of ops.yaml with a Python binding that takes `generator=`).
    g = torch.Generator().manual_seed(1)
    assert torch.randn(2, 3, generator=g).tolist() == [
        [0.6613521575927734, 0.266924113035202, 0.06167725846171379],
        [0.6213173270225525, -0.4519059658050537, -0.16613022983074188],
    ]
    assert torch.randint(0, 100, (5,), generator=g).tolist() == [16, 43, 13, 40, 2]
    e = torch.empty(3, dtype=torch.float64)
    assert torch.rand_like(e, generator=g).tolist() == [
        0.9840209669192943, 0.24476071319318726, 0.584154932603598,
    ]
    assert torch.randn_like(e, generator=g).tolist() == [
        -0.10054072241933616, 0.644288086301772, 0.5244006720854903,
    ]
    x = torch.empty(4, dtype=torch.float64)
    assert x.uniform_(generator=g) is x
    assert x.tolist() == [
        0.7942220770381948, 0.35544946608058325, 0.07067162532183502, 0.3337241163737694,
    ]
    assert torch.bernoulli(torch.full((6,), 0.5), generator=g).tolist() == [
        1.0, 0.0, 1.0, 0.0, 0.0, 1.0,
    ]
    x = torch.empty(5)
    x.bernoulli_(0.3, generator=g)
    assert x.tolist() == [1.0, 1.0, 0.0, 1.0, 1.0]
    x = torch.empty(3, dtype=torch.float64)
    x.normal_(2.0, 3.0, generator=g)
    assert x.tolist() == [5.047083438015715, 2.7271934373349787, 4.584881872403077]


def test_generators_are_independent_of_each_other_and_of_the_default():
    torch.manual_seed(5)
    d0 = torch.get_rng_state()
    g1 = torch.Generator().manual_seed(11)
    g2 = torch.Generator().manual_seed(11)
    a = torch.rand(8, generator=g1).tolist()
    # Drawing from g1 advanced neither g2 nor the default generator.
    assert torch.rand(8, generator=g2).tolist() == a
    assert _sha(torch.get_rng_state()) == _sha(d0)
    assert torch.rand(8, generator=g1).tolist() != a


def test_generator_through_ops_aten():
    g = torch.Generator().manual_seed(1)
    x = torch.ops.aten.randn.generator([2, 3], generator=g)
    # torch.randn(2, 3, generator=torch.Generator().manual_seed(1)), as above.
    assert x.tolist()[0] == [0.6613521575927734, 0.266924113035202, 0.06167725846171379]


def test_generator_of_the_wrong_type_is_a_parser_error():
    # torch.rand(2, generator=1)
    with pytest.raises(TypeError) as e:
        torch.rand(2, generator=1)
    assert str(e.value).startswith(
        "rand() received an invalid combination of arguments - got (int, generator=int), but expected one of:\n"
        " * (tuple of ints size, *, torch.Generator generator, Tensor out = None"
    )


def test_default_generator_and_module_functions():
    assert torch.default_generator is torch.default_generator
    assert torch.manual_seed(3) is torch.default_generator
    assert torch.initial_seed() == 3
    # torch.manual_seed(-1); torch.initial_seed()
    torch.manual_seed(-1)
    assert torch.initial_seed() == 18446744073709551615
    torch.manual_seed(1)
    # torch.manual_seed(1); torch.randn(3): the module functions draw from the default.
    assert torch.randn(3).tolist() == [0.6613521575927734, 0.266924113035202, 0.06167725846171379]
    state = torch.get_rng_state()
    assert _sha(torch.default_generator.get_state()) == _sha(state)
    a = torch.rand(4).tolist()
    torch.set_rng_state(state)
    assert torch.rand(4).tolist() == a
    with sy_random.fork_rng():
        torch.rand(100)
    assert torch.rand(4).tolist() != a  # the stream moved on from `a`, not by the fork
    torch.set_rng_state(state)
    with sy_random.fork_rng():
        torch.rand(100)
    assert torch.rand(4).tolist() == a
    s = torch.seed()
    assert torch.initial_seed() == s
    assert sy_random.__all__ == [
        "set_rng_state", "get_rng_state", "manual_seed", "seed", "initial_seed", "fork_rng",
    ]
