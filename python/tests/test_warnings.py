"""Kernel warnings (PyTorch's ``TORCH_WARN``) reach Python as ``UserWarning``s through the
``warnings`` module, as PyTorch's ``PyWarningHandler`` issues them when a call returns. The
texts are PyTorch 2.15's (live: ``torch.add(torch.ones(3), torch.ones(3),
out=torch.ones(2))`` under ``warnings.catch_warnings(record=True)``), without the
``(Triggered internally at ...)`` suffix naming PyTorch's C++ source."""

import threading
import warnings

import pytest

import switchyard as torch

RESIZED = (
    "An output with one or more elements was resized since it had shape [2], which does not "
    "match the required output shape [3]. This behavior is deprecated, and in a future PyTorch "
    "release outputs will not be resized unless they have zero elements. You can explicitly "
    "reuse an out tensor t by resizing it, inplace, to zero elements with t.resize_(0)."
)


def test_resized_output_warns_with_pytorchs_text():
    a = torch.ones(3)
    out = torch.ones(2)
    with pytest.warns(UserWarning) as record:
        r = torch.add(a, a, out=out)
    assert r is out and out.tolist() == [2.0, 2.0, 2.0]
    assert [str(w.message) for w in record] == [RESIZED]
    # Attributed to the caller's line, as PyTorch's are (stack level 1 from C).
    assert record[0].filename == __file__


def test_warning_through_ops_aten_and_methods():
    a = torch.ones(3)
    with pytest.warns(UserWarning, match="was resized since it had shape \\[2\\]"):
        torch.ops.aten.add.out(a, a, out=torch.ones(2))
    with pytest.warns(UserWarning, match="was resized since it had shape \\[2\\]"):
        torch.mul(a, a, out=torch.ones(2))


def test_warnings_as_errors_raise_after_the_call():
    a = torch.ones(3)
    out = torch.ones(2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning) as e:
            torch.add(a, a, out=out)
    assert str(e.value) == RESIZED
    # As in PyTorch, the call itself completed.
    assert out.tolist() == [2.0, 2.0, 2.0]


def test_warnings_of_calls_on_other_threads_go_to_their_callers():
    a = torch.ones(3)
    caught = []

    def work():
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            torch.add(a, a, out=torch.ones(2))
            caught.append([str(x.message) for x in w])

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert caught == [[RESIZED]]
    # Nothing left over for this thread.
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        torch.add(a, a)
    assert w == []


def test_warning_of_a_call_that_released_the_gil():
    # 40000 elements: the binding releases the GIL around the kernel (gil.rs); the warning is
    # queued there and issued once the GIL is back.
    a = torch.ones(40000)
    with pytest.warns(UserWarning) as record:
        torch.add(a, a, out=torch.ones(2))
    assert str(record[0].message).startswith(
        "An output with one or more elements was resized since it had shape [2], which does not "
        "match the required output shape [40000]."
    )
