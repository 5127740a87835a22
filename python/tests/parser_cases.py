"""Calls that exercise the argument parser of the generated bindings (``switchyard.add``,
``x.view(2, 3)``, ...), evaluated with ``torch`` bound to PyTorch or to switchyard; their
outcomes (value ``repr`` or exception type and message) are compared by ``test_parser.py``,
live when torch is importable, else against ``fixtures/parser_torch.json``
(``record_parser.py`` writes it from ``/tmp/torchref/bin/python``).

``CASES`` are hand-written: overload resolution, keywords, defaults, ``out=``, factories, and
every kind of error. ``SWEEP`` calls every generated function and method with arguments of the
wrong type, so every signature list and its message is compared with PyTorch's.

``KNOWN`` maps a case to the reason its outcome differs from PyTorch's today; the test checks
that it still differs, so an entry goes once fixed.
"""

import pathlib
import re

CASES = [
    # add: Tensor / number (wrapped scalar) / alpha / out= / keywords / NumPy names
    "torch.add(torch.tensor([1., 2.]), torch.tensor([3., 4.]))",
    "torch.add(torch.tensor([1, 2]), 3)",
    "torch.add(torch.tensor([1, 2]), 2.5)",
    "torch.add(torch.tensor([1., 2.]), torch.tensor([3., 4.]), alpha=2)",
    "torch.add(input=torch.tensor([1., 2.]), other=torch.tensor([3., 4.]))",
    "torch.add(x1=torch.tensor([1., 2.]), x2=torch.tensor([3., 4.]))",
    "torch.add(torch.tensor([1., 2.]), 1, 2)",
    "(lambda o: (torch.add(torch.ones(2), torch.ones(2), out=o) is o, o))(torch.zeros(2))",
    "(lambda x: (x.add_(1) is x, x))(torch.ones(2))",
    "(lambda x: (x.add_(torch.ones(2), alpha=3) is x, x))(torch.ones(2))",
    "torch.tensor([1., 2.]).add(1)",
    "torch.tensor([1., 2.]).add(torch.tensor(2.))",
    "torch.tensor([1, 2]).add(torch.tensor(2.5))",
    "torch.add(torch.tensor([1, 2]), True)",
    "torch.mul(torch.tensor([1, 2]), 2.0)",
    "torch.sub(torch.tensor([1., 2.]), 1, alpha=2)",
    "torch.div(torch.tensor([1, 3]), 2)",
    "torch.div(torch.tensor([1, 3]), 2, rounding_mode='floor')",
    "torch.tensor([1., 2.]).add(torch.tensor([1., 2.]), alpha=torch.tensor(2))",
    # sum: dim list / int / None, dtype, keepdim, axis / keepdims
    "torch.sum(torch.ones(2, 3))",
    "torch.sum(torch.ones(2, 3), 0)",
    "torch.sum(torch.ones(2, 3), (0, 1))",
    "torch.sum(torch.ones(2, 3), [1], True)",
    "torch.sum(torch.ones(2, 3), dim=1, keepdim=True)",
    "torch.sum(torch.ones(2, 3), None)",
    "torch.sum(torch.ones(2, 3), dtype=torch.float64)",
    "torch.sum(torch.ones(2, 3, dtype=torch.int32))",
    "torch.sum(torch.ones(2, 3), 1, dtype=torch.int64)",
    "torch.sum(torch.ones(2, 3), axis=0, keepdims=True)",
    "torch.sum(a=torch.ones(2, 3), axis=1)",
    "torch.ones(2, 3).sum(1)",
    "torch.ones(2, 3).sum(dim=(0, 1))",
    "torch.ones(2, 3).sum(-1, True)",
    "torch.mean(torch.ones(2, 3), 0)",
    "torch.amax(torch.tensor([[1., 5.], [3., 2.]]), 1)",
    "torch.amax(torch.tensor([[1., 5.], [3., 2.]]), (0, 1))",
    # max / min / sort / topk: named tuples
    "torch.max(torch.tensor([[1., 5.], [3., 2.]]))",
    "torch.max(torch.tensor([[1., 5.], [3., 2.]]), 1)",
    "torch.max(torch.tensor([[1., 5.], [3., 2.]]), 1, True)",
    "torch.max(torch.tensor([[1., 5.], [3., 2.]]), dim=0)",
    "torch.max(torch.tensor([1., 5.]), torch.tensor([3., 2.]))",
    "torch.max(torch.tensor([[1., 5.], [3., 2.]]), 1).values",
    "torch.max(torch.tensor([[1., 5.], [3., 2.]]), 1).indices",
    "torch.max(torch.tensor([[1., 5.], [3., 2.]]), 1)[0]",
    "type(torch.max(torch.tensor([[1., 5.], [3., 2.]]), 1)).__name__",
    "tuple(torch.max(torch.tensor([[1., 5.], [3., 2.]]), 1))",
    "(lambda v, i: [r is o for r, o in zip(torch.max(torch.tensor([[1., 5.], [3., 2.]]), 1, out=(v, i)), (v, i))])(torch.zeros(2), torch.zeros(2, dtype=torch.long))",
    "type(torch.max(torch.tensor([[1., 5.], [3., 2.]]), 1, out=(torch.zeros(2), torch.zeros(2, dtype=torch.long)))).__name__",
    "torch.tensor([[1., 5.], [3., 2.]]).max(1)",
    "torch.tensor([[1., 5.], [3., 2.]]).min(dim=1, keepdim=True)",
    "torch.min(torch.tensor([[1., 5.], [3., 2.]]), 0)",
    "torch.sort(torch.tensor([3., 1., 2.]))",
    "torch.sort(torch.tensor([3., 1., 2.]), descending=True)",
    "torch.tensor([3., 1., 2.]).sort(0, True)",
    "torch.topk(torch.tensor([3., 1., 2.]), 2)",
    "torch.aminmax(torch.tensor([3., 1., 2.]))",
    "torch.var_mean(torch.tensor([3., 1., 2.]))",
    # pow overloads
    "torch.pow(torch.tensor([1., 2.]), 2)",
    "torch.pow(torch.tensor([1., 2.]), torch.tensor([2., 3.]))",
    "torch.pow(2, torch.tensor([1., 2.]))",
    "torch.pow(2.5, torch.tensor([1, 2]))",
    "torch.pow(torch.tensor([1, 2]), 0.5)",
    "torch.tensor([1., 2.]).pow(3)",
    "(lambda x: (x.pow_(2) is x, x))(torch.tensor([1., 3.]))",
    # views: varargs int lists
    "torch.arange(6).view(2, 3)",
    "torch.arange(6).view((3, 2))",
    "torch.arange(6).view([3, -1])",
    "torch.arange(6).view(-1)",
    "torch.arange(6).view(torch.float64)",
    "torch.arange(6).view(size=(2, 3))",
    "torch.arange(6).reshape(3, 2)",
    "torch.reshape(torch.arange(6), (2, -1))",
    "torch.arange(6).view(2, 3).permute(1, 0)",
    "torch.arange(6).view(2, 3).permute((1, 0))",
    "torch.permute(torch.arange(6).view(2, 3), (1, 0))",
    "torch.arange(6).view(2, 3).transpose(0, 1)",
    "torch.transpose(torch.arange(6).view(2, 3), 1, 0)",
    "torch.arange(6).view(2, 3).t()",
    "torch.arange(6).view(2, 3).expand(2, 2, 3).shape",
    "torch.arange(6).view(2, 3).flatten()",
    "torch.arange(6).view(1, 6).squeeze(0)",
    "torch.arange(6).unsqueeze(1).shape",
    "torch.arange(6).view(2, 3).transpose(0, torch.tensor(1))",
    "torch.arange(6).view(2, 3).stride()",
    # clamp, where, cat, stack, split
    "torch.clamp(torch.tensor([1., 5.]), 2, 4)",
    "torch.clamp(torch.tensor([1., 5.]), min=2)",
    "torch.clamp(torch.tensor([1., 5.]), max=torch.tensor([3., 3.]))",
    "torch.clamp(torch.tensor([1, 5]), 2.5)",
    "torch.tensor([1., 5.]).clamp(min=2, max=4)",
    "(lambda x: (x.clamp_(0, 2) is x, x))(torch.tensor([-1., 5.]))",
    "torch.where(torch.tensor([True, False]), torch.tensor([1., 2.]), torch.tensor([3., 4.]))",
    "torch.where(torch.tensor([True, False]), torch.tensor([1., 2.]), 0.)",
    "torch.where(torch.tensor([True, False]), 1., 0.)",
    "torch.where(torch.tensor([True, False, True]))",
    "torch.cat([torch.tensor([1., 2.]), torch.tensor([3.])])",
    "torch.cat((torch.ones(1, 2), torch.zeros(1, 2)), 1)",
    "torch.cat((torch.ones(1, 2), torch.zeros(1, 2)), dim=0)",
    "torch.cat([])",
    "torch.stack([torch.ones(2), torch.zeros(2)], 1)",
    "torch.split(torch.arange(5), 2)",
    "torch.split(torch.arange(5), [2, 3])",
    "torch.arange(5).split(2)",
    "torch.arange(5).split([1, 4])",
    "torch.arange(5).chunk(2)",
    "torch.unbind(torch.arange(4).view(2, 2))",
    # factories with dtype / device / requires_grad
    "torch.zeros(2, 3)",
    "torch.zeros((2, 3))",
    "torch.zeros([2])",
    "torch.zeros(())",
    "torch.zeros(2, dtype=torch.int64)",
    "torch.zeros(2, dtype=int)",
    "torch.zeros(2, dtype=float)",
    "torch.zeros(2, dtype=bool)",
    "torch.zeros(2, device='cpu')",
    "torch.zeros(2, device=torch.device('cpu'))",
    "torch.zeros(2, device='meta')",
    "torch.zeros(2, requires_grad=True)",
    "torch.zeros(2, requires_grad=True).requires_grad",
    "torch.zeros(2, dtype=torch.int64, requires_grad=True)",
    "torch.zeros(size=(2,))",
    "torch.zeros(2, layout=torch.strided)",
    "torch.strided",
    "torch.contiguous_format",
    "torch.channels_last",
    "torch.ones(2, 2).is_contiguous()",
    "torch.ones(2, 2).clone(memory_format=torch.contiguous_format).stride()",
    "torch.ones(1, 2, 3, 4).clone(memory_format=torch.channels_last).stride()",
    "torch.empty(1, 2, 3, 4, memory_format=torch.channels_last).stride()",
    "torch.zeros(2, layout='x')",
    "torch.ones(2).clone(memory_format=torch.strided)",
    "torch.ones(2).add(2, torch.ones(2))",
    "torch.addmm(torch.zeros(2, 2), torch.ones(2, 1), torch.ones(1, 2), beta=2, alpha=3)",
    "torch.ones(2, 2, dtype=torch.float16)",
    "torch.full((2, 2), 7)",
    "torch.full((2,), 1.5)",
    "torch.full((2,), True)",
    "torch.full((2,), 7, dtype=torch.float32)",
    "torch.full([2], 3, requires_grad=True)",
    "torch.arange(5)",
    "torch.arange(1, 4)",
    "torch.arange(0, 1, 0.25)",
    "torch.arange(5.)",
    "torch.arange(5, dtype=torch.float32)",
    "torch.arange(start=1, end=3)",
    "torch.arange(end=3)",
    "torch.empty(2, 3).shape",
    "torch.empty(0)",
    "torch.eye(2)",
    "torch.eye(2, 3)",
    "torch.eye(2, dtype=torch.int64)",
    "torch.linspace(0, 1, 5)",
    "torch.linspace(0, 1, steps=3, dtype=torch.float64)",
    "torch.zeros_like(torch.ones(2, dtype=torch.int32))",
    "torch.ones_like(torch.ones(2), dtype=torch.float64)",
    "torch.full_like(torch.ones(2), 5)",
    "torch.empty_like(torch.ones(2, 3)).shape",
    "torch.rand(2, 3).shape",
    "torch.randn(2, dtype=torch.float64).dtype",
    "torch.randint(0, 10, (3,)).dtype",
    "torch.randint(10, (2, 2)).shape",
    "torch.rand_like(torch.ones(2)).shape",
    "torch.randn(2, requires_grad=True).requires_grad",
    "(lambda o: torch.zeros(2, out=o) is o)(torch.ones(3))",
    "(lambda o: (torch.arange(3, out=o) is o, o))(torch.zeros(1, dtype=torch.int64))",
    # nn / linalg namespaces
    "torch._C._nn.gelu(torch.tensor([0., 1.]))",
    "torch._C._nn.gelu(torch.tensor([0., 1.]), approximate='tanh')",
    "torch._C._nn.linear(torch.ones(1, 2), torch.ones(3, 2)).shape",
    "torch._C._nn.mse_loss(torch.ones(2), torch.zeros(2))",
    "torch._C._linalg.linalg_vector_norm(torch.tensor([3., 4.]))",
    "torch._C._linalg.linalg_vector_norm(torch.tensor([3., 4.]), ord=1)",
    # hand-written methods
    "torch.ones(2).to(torch.float64)",
    "(lambda x: x.to(torch.float32) is x)(torch.ones(2))",
    "(lambda x: x.to('cpu') is x)(torch.ones(2))",
    "(lambda x: x.to(x) is x)(torch.ones(2))",
    "(lambda x: x.to(torch.float32, copy=True) is x)(torch.ones(2))",
    "torch.ones(2).to(torch.zeros(1, dtype=torch.int32))",
    "torch.ones(2).to('cpu', torch.int64)",
    "torch.ones(2).to(device='cpu', dtype=torch.float16)",
    "torch.ones(2).to(dtype=torch.int8)",
    "(lambda x: (x.copy_(torch.tensor([3, 4])) is x, x))(torch.zeros(2))",
    "(lambda x: (x.copy_(7), x))(torch.zeros(2))",
    "(lambda x: (x.copy_(torch.tensor(1.5), non_blocking=True), x))(torch.zeros(2, dtype=torch.int64))",
    "torch.zeros(2).copy_('x')",
    "torch.zeros(2).copy_(torch.ones(3))",
    "torch.tensor([0, 1, 0, 2]).nonzero()",
    "torch.tensor([[0, 1], [2, 0]]).nonzero()",
    "torch.tensor([[0, 1], [2, 0]]).nonzero(as_tuple=True)",
    "torch.tensor(3).nonzero(as_tuple=True)",
    "torch.ones(2, 3).size(1)",
    "torch.ones(2, 3).size(-1)",
    "torch.ones(2, 3).stride(0)",
    "torch.ones(2, 3).dim()",
    "torch.ones(2, 3).numel()",
    "torch.ones(2, 3).is_contiguous()",
    "torch.ones(2, 3).t().is_contiguous()",
    "torch.tensor([1.5]).item()",
    "torch.tensor([[1, 2]]).tolist()",
    "(lambda x: (x.requires_grad_() is x, x.requires_grad))(torch.ones(2))",
    "(lambda x: [x._version, x.add_(1)._version, x.zero_()._version])(torch.tensor([1., 2.]))",
    "torch.ones(2)._version",
    "(lambda x: x.data_ptr() == x.view(2, 2).data_ptr())(torch.ones(4))",
    "(lambda x: x.narrow(0, 1, 3).data_ptr() - x.data_ptr())(torch.ones(4))",
    "(lambda x: x.narrow(0, 1, 3).data_ptr() - x.data_ptr())(torch.ones(4, dtype=torch.float64))",
    # errors: wrong type
    "torch.add(torch.ones(2), 'x')",
    "torch.add(torch.ones(2), None)",
    "torch.add(torch.ones(2), torch.float32)",
    "torch.add(torch.ones(2), torch.device('cpu'))",
    "torch.add(torch.ones(2), torch.Size([1]))",
    "torch.sum(torch.ones(2), torch.float32, 1)",
    "torch.cat([torch.ones(2), torch.Size([1])])",
    "torch.sum(torch.ones(2), [0], True, dtype='x')",
    "torch.abs(None)",
    "torch.abs(torch.ones(2), out=1)",
    "torch.add(torch.ones(2), torch.ones(2), alpha=torch.ones(2))",
    "torch.ones(2).add(None)",
    "torch.transpose(torch.ones(2, 2), 0, 1.0)",
    "torch.sum(torch.ones(2), 0, 0)",
    "torch.cat(torch.ones(2))",
    "torch.cat([torch.ones(2), 1])",
    "torch.zeros(2.0)",
    "torch.zeros((2.5,))",
    "torch.zeros(True)",
    "torch.zeros(2, 'x')",
    "torch.zeros(2, 3.0)",
    "torch.ones((2, 'x'))",
    "torch.ones(2).view(2, 'x')",
    "torch.ones(2).permute(0, 'x')",
    "torch.sum(torch.ones(2), (0, 'x'))",
    "torch.sub(torch.ones(2), (1, 2))",
    "torch.amax(torch.ones(2), object())",
    "torch.full(object())",
    "torch.arange(object())",
    "torch.zeros(2, dtype='x')",
    "torch.zeros(2, device=1.5)",
    "torch.ones(2).to('x')",
    "torch.ones(2).to(1.5)",
    "torch.ones(2).nonzero(as_tuple=1)",
    # errors: too many positional, unknown keyword, multiple values, missing
    "torch.abs(torch.ones(2), torch.ones(2))",
    "torch.cat((torch.ones(2),), 0, 0)",
    "torch.sum(torch.ones(2), [0], False, 1, 2)",
    "torch.max(torch.ones(2), 0, True, None)",
    "torch.add(torch.ones(2), torch.ones(2), b=1)",
    "torch.sum(torch.ones(2), dim=0, foo=1)",
    "torch.sum(torch.ones(2), axis=0, foo=1)",
    "torch.add(torch.ones(2), other=torch.ones(2), input=torch.ones(2))",
    "torch.transpose(torch.ones(2), 0)",
    "torch.abs()",
    "torch.empty()",
    "torch.ones(2).permute()",
    "torch.ones(2).reshape()",
    "torch.zeros(size=2.5)",
    # errors: invalid combination (several signatures, or none plausible)
    "torch.add(torch.ones(2), torch.ones(2), torch.ones(2), torch.ones(2), torch.ones(2))",
    "torch.add()",
    "torch.ones(2).add(torch.ones(2), torch.ones(2), torch.ones(2))",
    "torch.sum(torch.ones(2), 'x')",
    "torch.sum(torch.ones(2), True)",
    "torch.sum(torch.ones(2), dim='x')",
    "torch.max(torch.ones(2), 'x')",
    "torch.max(torch.ones(2), dim=object())",
    "torch.max(torch.ones(2), 0, foo=1)",
    "torch.max(torch.ones(2), dim=0, foo=1)",
    "torch.pow('x', 'y')",
    "torch.ones(2).view('x')",
    "torch.ones(2).view(object(), object())",
    "torch.ones(2).view(True)",
    "torch.tensor(1).view()",
    "torch.clamp(torch.ones(2), min='x')",
    "torch.clamp(torch.ones(2), object())",
    "torch.std(torch.ones(2), object())",
    "torch.randint(5)",
    "torch.randint(5, (2,), dtype='x')",
    "torch.where(torch.ones(2), 'x', 'y')",
    "torch.split(torch.ones(2), 'x')",
    "torch.full((2,), object())",
    "torch.arange(0, 10, 0)",
    # errors from the operator, after parsing
    "torch.add(torch.ones(2), torch.ones(3))",
    "torch.add(torch.ones(2), torch.ones(2), out=torch.zeros(2, dtype=torch.int64))",
    "torch.ones(2).view(3)",
    "torch.zeros(-1)",
]

_SIGNATURES = (
    pathlib.Path(__file__).resolve().parents[2]
    / "crates"
    / "python"
    / "src"
    / "generated"
    / "signatures.rs"
)


def _table_names():
    """The (module, name) pairs of the generated tables (``""`` for a Tensor method)."""
    text = _SIGNATURES.read_text()
    return re.findall(r'PyName \{ name: "([^"]+)", module: "([^"]*)"', text)


# Backend plumbing and functions PyTorch binds elsewhere than this module.
_SKIP = {"_to_cpu", "_copy_from", "_copy_from_and_resize"}


def _sweep():
    cases = []
    for name, module in _table_names():
        if name in _SKIP:
            continue
        if module == "":
            cases.append(f"torch.ones(2).{name}(object())")
            continue
        prefix = {
            "switchyard": "torch.",
            "switchyard._C._nn": "torch._C._nn.",
            "switchyard._C._linalg": "torch._C._linalg.",
        }[module]
        cases.append(f"{prefix}{name}(object())")
        cases.append(f"{prefix}{name}(torch.ones(2), object())")
    return cases


SWEEP = _sweep()

# Calls whose list of signatures differs because ops.yaml has fewer overloads of the operator
# than PyTorch (or PyTorch writes the function in Python).
_FEWER_OVERLOADS = {
    "no addmm.dtype (out_dtype) overload in ops.yaml": [
        "torch.addmm(object())",
        "torch.addmm(torch.ones(2), object())",
    ],
    "no baddbmm.dtype (out_dtype) overload in ops.yaml": [
        "torch.baddbmm(object())",
        "torch.baddbmm(torch.ones(2), object())",
    ],
    "no bmm.dtype / mm.dtype (out_dtype) overloads in ops.yaml": [
        "torch.bmm(object())",
        "torch.mm(object())",
    ],
    "no conv2d.padding (str padding) overload in ops.yaml": [
        "torch.conv2d(object())",
        "torch.conv2d(torch.ones(2), object())",
    ],
    "no linspace.Tensor_Tensor / Tensor_Scalar / Scalar_Tensor overloads in ops.yaml": [
        "torch.linspace(object())",
        "torch.linspace(torch.ones(2), object())",
    ],
    "no narrow.Tensor (Tensor start) overload in ops.yaml": [
        "torch.narrow(object())",
        "torch.narrow(torch.ones(2), object())",
        "torch.ones(2).narrow(object())",
    ],
    "torch.block_diag is Python in PyTorch (torch/functional.py, *tensors)": [
        "torch.block_diag(object())",
        "torch.block_diag(torch.ones(2), object())",
    ],
}

KNOWN = {case: reason for reason, cases in _FEWER_OVERLOADS.items() for case in cases}
KNOWN.update(
    {
        "torch.cat([])": "the dispatcher's no-tensor-arguments error comes before cat's own "
        "ValueError (no CompositeExplicitAutograd path for an empty list)",
        "torch.ones(2)._version": "ones fills its result through fill_ above ADInplaceOrView, "
        "which bumps the version once (PyTorch's factory does not)",
        "torch.ones(2).to('x')": "Device::parse words an unknown device type differently",
    }
)
