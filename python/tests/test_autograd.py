"""The autograd catalogue (`autograd_cases.py`) gives PyTorch's outcomes: live when torch is
importable, else those recorded in `fixtures/autograd_torch.json` (see `oracle.py`)."""

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import switchyard  # noqa: E402

import expressions as oracle  # noqa: E402
import autograd_cases as catalogue  # noqa: E402

FIXTURE = oracle.load("autograd")
CASES = [c if isinstance(c, tuple) else (c, ()) for c in catalogue.CASES]
KNOWN = getattr(catalogue, "KNOWN", {})


@pytest.mark.parametrize(("case", "watch"), CASES, ids=[c for c, _ in CASES])
def test_same_outcome_as_torch(case, watch):
    expected = oracle.expected(FIXTURE, case, watch)
    got = oracle.run(switchyard, case, watch)
    if case in KNOWN:
        assert not oracle.same(got, expected), f"fixed? remove it from KNOWN ({KNOWN[case]})"
    else:
        assert oracle.same(got, expected), f"\nswitchyard: {got}\ntorch:      {expected}"


# Checks computed by hand.

A = switchyard.ops.aten


def test_hook_exceptions_arrive_unchanged():
    a = switchyard.tensor([1.0, 2.0], requires_grad=True)
    raised = KeyError("mine")

    def hook(g):
        raise raised

    a.register_hook(hook)
    with pytest.raises(KeyError) as info:
        A.sum.default(a * 3).backward()
    assert info.value is raised
    # The pass after a failed one is not affected by the stashed exception.
    b = switchyard.tensor([1.0], requires_grad=True)
    A.sum.default(b * 2).backward()
    assert b.grad.tolist() == [2.0]


def test_backward_from_threads_with_python_hooks():
    import threading

    results = {}
    errors = []

    def work(k):
        try:
            a = switchyard.tensor([float(k), 1.0], requires_grad=True)
            seen = []
            a.register_hook(lambda g: seen.append(g.tolist()) or g * 2)
            y = a * a * k
            for _ in range(50):
                y = y + a
            A.sum.default(y).backward()
            results[k] = (a.grad.tolist(), seen)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    for k in range(1, 5):
        # d/da of sum(k a^2 + 50 a) = 2 k a + 50, doubled by the hook.
        g = [2 * k * k + 50.0, 2 * k + 50.0]
        assert results[k] == ([2 * v for v in g], [g])


def test_grad_mode_is_per_thread():
    import threading

    seen = []
    with switchyard.no_grad():
        t = threading.Thread(target=lambda: seen.append(switchyard.is_grad_enabled()))
        t.start()
        t.join()
        assert not switchyard.is_grad_enabled()
    assert seen == [True]
    assert switchyard.is_grad_enabled()


def test_hook_handles_are_context_managers():
    a = switchyard.tensor([1.0], requires_grad=True)
    with a.register_hook(lambda g: g * 100):
        pass
    A.sum.default(a * 2).backward()
    assert a.grad.tolist() == [2.0]


def test_reading_grad_of_a_non_leaf_warns():
    a = switchyard.tensor([1.0], requires_grad=True)
    b = a * 2
    with pytest.warns(UserWarning, match="not a leaf Tensor is being accessed"):
        assert b.grad is None
    b.retain_grad()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert b.grad is None and a.grad is None
