"""Gradient cases (``gradients.py``) whose outcome differs from PyTorch's today, each with its
reason (reviewed like code).

``KNOWN`` is for the gradients (and exceptions, requires_grad flags), ``KNOWN_GRAD_FN`` for
the outputs' ``grad_fn.name()``, compared apart so that a node's name does not hide its
gradients. Keys are gradient case ids (``<forward case id>/grad``, ``/grad2``,
``/grad_buffers``) or ``fnmatch`` patterns over them. ``test_oracle_grad.py`` checks that every
case listed here still differs (so a fix removes its entry) and that every pattern matches a
case. Reasons starting with ``bug`` are for the lead (autograd formulas, the autograd codegen,
the engine, node names); the others are justified.
"""

_TORCH_OUT_BUG = (
    "justified (PyTorch's bug): this out= overload has no autograd kernel in PyTorch; through "
    "its autograd fallback the resized outs keep the input's metadata and backward fails with "
    "\"Function MulBackward0 returned an invalid gradient...\"; switchyard refuses the call "
    "(out= with an input requiring grad)")
_EXTRA_FORMULA = (
    "justified (for the lead to confirm): PyTorch has no derivative for this overload (its "
    "backward raises \"derivative for aten::X is not implemented\"); switchyard's "
    "derivatives.yaml has one and returns a gradient, which agrees with central finite "
    "differences on the float64 case (checked when this entry was added). No program that "
    "runs under PyTorch changes; parity would mean removing a working formula")
_SET = ("justified: a tensor's storage is fixed at creation (ARCHITECTURE.md invariants), so "
        "set_ cannot make a tensor view another's storage; switchyard refuses with "
        "NotImplementedError (as in the forward oracle)")
_UNSTABLE_SORT = (
    "justified: the forward oracle's sort/float32/large difference (an unstable sort orders "
    "equal values as its algorithm happens to): the gradient follows the indices")

KNOWN = {
    "_native_batch_norm_legit.out/*": _TORCH_OUT_BUG,
    "_native_batch_norm_legit_no_training.out/*": _TORCH_OUT_BUG,
    "native_layer_norm.out/*": _TORCH_OUT_BUG,
    "as_strided_scatter.out/float32/slice/grad": (
        "justified (PyTorch's bug): PyTorch fails an INTERNAL ASSERT (as_strided_scatter "
        "supports only contiguous inputs that require grad); switchyard refuses the out= call"),
    "as_strided_scatter.default/float32/slice/grad": (
        "justified (PyTorch's bug): PyTorch fails an INTERNAL ASSERT (as_strided_scatter "
        "supports only contiguous inputs that require grad); switchyard computes a gradient"),
    "as_strided_scatter.default/float*/contig/grad": (
        "justified (PyTorch's bug): PyTorch's gradient of `self` is wrong: with size (2, 2), "
        "stride (1, 2), offset 1 the scatter overwrites storage elements 1-4, so d out / d self "
        "is 1 at elements 0 and 5 only; PyTorch passes the gradient at 1-4 and zeroes 0 and 5 "
        "(x = arange(6).view(2, 3), w = arange(1, 7): PyTorch [[0, 2, 3], [4, 5, 0]], the "
        "derivative [[1, 0, 0], [0, 0, 6]]); switchyard's is the derivative"),
    "bernoulli.p/*": _EXTRA_FORMULA,
    "normal_functional.default/*": _EXTRA_FORMULA,
    "copy.default/*": _EXTRA_FORMULA,
    "remainder.Scalar_Tensor/*": _EXTRA_FORMULA,
    "scatter.value_reduce/*": _EXTRA_FORMULA,
    "scatter_.value_reduce/*": _EXTRA_FORMULA,
    "set.source_Tensor/*": _SET,
    "set.source_Tensor_out/*": _SET,
    "set_.source_Tensor/*": _SET,
    "sort.default/float32/large/grad": _UNSTABLE_SORT,
    "sort.stable/float32/large/grad": _UNSTABLE_SORT,
    "atan2_.default/float32/mixed0d/grad": (
        "justified: the float64 0-dim `other` of an in-place atan2_ on float32 gets a gradient "
        "reduced in float32 (the broadcast sum) and cast to float64; the sums agree to float32's "
        "tolerance (1.2e-7 apart) but are compared with float64's"),
    "conv2d.default/*/contig/grad2": (
        "bug (layout): the second-order gradient of the weight is contiguous (switchyard's "
        "double backward runs convolution's formula again, whose weight gradient is fresh "
        "and contiguous as PyTorch's convolution_backward kernel's); PyTorch's "
        "_convolution_double_backward returns a transposed view (strides [4, 12, 2, 1])"),
    **{f"mse_loss.default/float32/{kind}": (
        "justified (PyTorch's bug): with a target broadcast against self, PyTorch's gradient "
        "for the target is a multiple of the derivative (mse_loss_backward writes into an out "
        "of the target's shape that it resizes, with the warning 'An output with one or more "
        "elements was resized'): for x (2, 3), target (3,), mean reduction, PyTorch gives "
        "twice -2 Σ_rows (x - t) / 6, for a 0-dim target six times; switchyard's equals "
        "the derivative (checked by hand: x = [[1, 2, 3], [4, 5, 6]], t = 0.5 gives -6, "
        "PyTorch -36)") for kind in ("bcast/grad", "bcast/grad2", "mixed0d/grad")},
}

_NOT_IMPLEMENTED_NODE = (
    "PyTorch's output has the autograd fallback's torch::autograd::NotImplemented node; "
    "switchyard's has its derivative's node (see KNOWN)")


def _each(overloads, suffixes):
    """``{overload/suffix}`` for every pair."""
    return [f"{o}/{k}" for o in overloads for k in suffixes]


_CONTIG = ["float32/contig/grad", "float64/contig/grad"]
_KINDS = _CONTIG + [f"float32/{k}/grad" for k in ("t", "slice", "expand", "zerodim", "empty")]
_SCATTER = _CONTIG + ["float32/contig/dim=0/grad", "float32/contig/multiply/grad"]

KNOWN_GRAD_FN = {
    **{k: "justified (for the lead to confirm): " + _NOT_IMPLEMENTED_NODE for k in
       _each(["copy.default"], _KINDS + [f"float32/{k}/grad" for k in (
           "bcast", "mixed", "mixed0d")])
       + _each(["remainder.Scalar_Tensor"], _KINDS + ["float32/special/grad",
                                                      "float32/large/grad"])
       + _each(["scatter.value_reduce"], _SCATTER + ["float32/slice/grad"])
       + _each(["scatter_.value_reduce"], _SCATTER)
       + _each(["bernoulli.p", "normal_functional.default"],
               _CONTIG + ["float32/slice/grad"])},
    **{f"{o}/float32/{k}/grad": (
        "bug (naming): reshape of a non-contiguous tensor that can be viewed records "
        "ReshapeAliasBackward0 in PyTorch (its reshape calls _reshape_alias); switchyard "
        "records ViewBackward0 (gradients agree)") for o, k in (
        ("reshape.default", "slice"), ("flatten.using_ints", "slice"),
        ("reshape_as.default", "t"), ("reshape_as.default", "slice"),
        ("reshape_as.default", "expand"))},
}
