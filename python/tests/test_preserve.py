"""One Python object per tensor where a stored tensor comes back (PyTorch's PyObject
preservation): each expectation is PyTorch 2.15's, checked live with the same statements under
``import torch`` (e.g. ``x = torch.ones(2, requires_grad=True); (x * 2).sum().backward();
x.grad is x.grad`` is ``True``)."""

import gc
import weakref

import switchyard as torch
from switchyard import _C


def _leaf():
    return torch.ones(2, requires_grad=True)


def test_grad_is_one_object_and_keeps_its_attributes():
    x = _leaf()
    (x * 2).sum().backward()
    assert x.grad is x.grad
    x.grad.foo = 5
    assert x.grad.foo == 5
    # Accumulating in place keeps the object.
    g = x.grad
    (x * 2).sum().backward()
    assert x.grad is g and x.grad.tolist() == [4.0, 4.0]


def test_assigned_grad_comes_back():
    p = _leaf()
    g = torch.zeros(2)
    p.grad = g
    assert p.grad is g


def test_retained_grad_of_a_non_leaf():
    x = _leaf()
    y = x * 3
    y.retain_grad()
    y.sum().backward()
    assert y.grad is y.grad


def test_hooks_of_one_tensor_receive_one_object():
    x = _leaf()
    y = x * 3
    seen = []
    y.register_hook(seen.append)
    y.register_hook(seen.append)
    y.sum().backward()
    assert len(seen) == 2 and seen[0] is seen[1]


def test_accumulate_grad_variable_is_the_leaf():
    x = _leaf()
    z = x * 2
    assert z.grad_fn.next_functions[0][0].variable is x
    w = torch.ones(2)
    w.requires_grad_()
    assert (w * 2).grad_fn.next_functions[0][0].variable is w
    v = torch.ones(2)
    v.requires_grad = True
    assert (v * 2).grad_fn.next_functions[0][0].variable is v


def test_base_of_views():
    b = torch.ones(3)
    v = b[0:2]
    assert v._base is b
    assert v._base is v._base
    assert v[0:1]._base is b
    assert b.view(3)._base is b
    assert b.t()._base is b
    assert b[1]._base is b
    assert torch.ones(2)._base is None
    assert v._is_view() and not b._is_view()


def test_subclass_objects_are_preserved_as_themselves():
    p = torch.nn.Parameter(torch.ones(2))
    v = p[0:1]
    assert v._base is p
    (p * 2).sum().backward()
    assert type(p.grad) is torch.Tensor and p.grad is p.grad


def test_objects_are_released_once_the_tensor_is_unreachable():
    x = _leaf()
    (x * 2).sum().backward()
    g = x.grad
    ref = weakref.ref(g)
    del g
    gc.collect()
    # Still reachable through x: kept (and so are its attributes).
    _C._preserved_sweep()
    assert ref() is not None
    x.grad = None
    _C._preserved_sweep()
    assert ref() is None
    ref_x = weakref.ref(x)
    del x
    _C._preserved_sweep()
    assert ref_x() is None


def test_fresh_results_are_not_registered():
    before = _C._preserved_sweep()
    a = torch.ones(3)
    for _ in range(100):
        a = a + 1
    assert _C._preserved_sweep() == before
