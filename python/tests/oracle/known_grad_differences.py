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
_LAYOUT = (
    "bug (layout): the gradient's values agree but its strides differ: PyTorch's formula keeps "
    "the input's memory layout (TensorIterator outputs follow a transposed input), "
    "switchyard's produces a contiguous tensor of the view's shape (or the reverse)")
_INPLACE_VIEW = (
    "bug (engine, in-place metadata ops): backward through an in-place view op (t_, "
    "transpose_, squeeze_, as_strided_) applied to a view of a non-leaf raises a shape "
    "error; PyTorch computes the gradient")
_SET = ("justified: a tensor's storage is fixed at creation (ARCHITECTURE.md invariants), so "
        "set_ cannot make a tensor view another's storage; switchyard refuses with "
        "NotImplementedError (as in the forward oracle)")
_UNSTABLE_SORT = (
    "justified: the forward oracle's sort/float32/large difference (an unstable sort orders "
    "equal values as its algorithm happens to): the gradient follows the indices")
_NO_GRAPH_2 = (
    "bug (create_graph): PyTorch's first-order gradient requires grad here (its formula "
    "involves an input that requires grad), switchyard's does not, so second-order "
    "gradients through it are missing")

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
    **{f"{o}/float32/slice/grad": (
        "bug (message): the engine's invalid-gradient error names the node \"CopySlices\" where "
        "PyTorch names it \"torch::autograd::CopySlices\" (same error otherwise)")
       for o in ("scatter_.src", "scatter_add_.default")},
    "set.source_Tensor/*": _SET,
    "set.source_Tensor_out/*": _SET,
    "set_.source_Tensor/*": _SET,
    "sort.default/float32/large/grad": _UNSTABLE_SORT,
    "sort.stable/float32/large/grad": _UNSTABLE_SORT,
    "atan2_.default/float32/mixed0d/grad": (
        "justified: the float64 0-dim `other` of an in-place atan2_ on float32 gets a gradient "
        "reduced in float32 (the broadcast sum) and cast to float64; the sums agree to float32's "
        "tolerance (1.2e-7 apart) but are compared with float64's"),
    "relu.default/*/grad2": _NO_GRAPH_2,
    "conv2d.default/*/contig/grad2": (
        "bug (create_graph): the bias gradient of convolution_backward does not require grad "
        "under create_graph=True; PyTorch's does (its weight gradient's layout differs too, "
        "see conv2d.default/*/contig/grad)"),
    "layer_norm.default/*/contig/grad2": (
        "bug (create_graph): the bias gradient of native_layer_norm_backward does not require "
        "grad under create_graph=True; PyTorch's does"),
    **{f"var.{o}/float32/zerodim/grad2": (
        "bug (create_graph): var of a 0-dim input (NaN, no degrees of freedom): PyTorch's "
        "first-order gradient does not require grad, switchyard's does (and so has "
        "second-order gradients)") for o in ("default", "dim", "correction")},
    **{f"mse_loss.default/float32/{kind}": (
        "justified (PyTorch's bug): with a target broadcast against self, PyTorch's gradient "
        "for the target is a multiple of the derivative (mse_loss_backward writes into an out "
        "of the target's shape that it resizes, with the warning 'An output with one or more "
        "elements was resized'): for x (2, 3), target (3,), mean reduction, PyTorch gives "
        "twice -2 Σ_rows (x - t) / 6, for a 0-dim target six times; switchyard's equals "
        "the derivative (checked by hand: x = [[1, 2, 3], [4, 5, 6]], t = 0.5 gives -6, "
        "PyTorch -36)") for kind in ("bcast/grad", "bcast/grad2", "mixed0d/grad")},
    "masked_select.default/float32/zerodim/grad": (
        "bug (formula): masked_select of a 0-dim input: backward raises IndexError \"too many "
        "indices for tensor of dimension 0 (got 1)\"; PyTorch returns the gradient"),
    **{f"{o}/float32/slice/grad": _INPLACE_VIEW for o in (
        "as_strided_.default", "squeeze_.default", "squeeze_.dim", "squeeze_.dims",
        "transpose_.default", "t_.default")},
    "t_.default/float32/t/grad": _INPLACE_VIEW,
    "t_.default/float32/expand/grad": (
        "bug (engine, in-place metadata ops): backward through t_ of an expanded view of a "
        "non-leaf raises \"unsupported operation: ...\" (an overlap check); PyTorch computes "
        "the gradient"),
    **{f"{o}/float32/t/grad": _LAYOUT for o in (
        "aminmax.default", "masked_select.default", "max.default", "max.other",
        "maximum.default", "min.default", "min.other", "minimum.default", "mse_loss.default",
        "pow.Tensor_Tensor")},
    **{f"{o}/float32/t/grad2": _LAYOUT for o in (
        "abs.default", "linalg_vector_norm.default", "log_softmax.int", "softmax.int",
        "maximum.default", "mse_loss.default", "pow.Tensor_Tensor")},
    "constant_pad_nd.default/*/contig/grad": (
        "bug (layout): constant_pad_nd's gradient is a narrowed view of the padded gradient "
        "(strides [5, 1]); PyTorch's is contiguous ([3, 1])"),
    **{f"{o}/*/contig/grad": (
        "bug (layout): the weight gradient of the convolution is non-contiguous (strides "
        "[4, 12, 2, 1]); PyTorch's is contiguous ([8, 4, 2, 1])")
       for o in ("conv2d.default", "convolution.default")},
}

_NUMBERING = (
    "bug (naming): the backward node's number differs: PyTorch numbers the nodes of one "
    "name by the order of its derivatives.yaml entries (ZeroBackward0, UniformBackward0, "
    "BernoulliBackward1, IndexPutImplBackward0); switchyard's entries give another number")
_QUALIFIED = (
    "bug (naming): PyTorch's hand-written nodes print with their C++ namespace "
    "(\"torch::autograd::CopyBackwards\", \"torch::autograd::NotImplemented\"); switchyard's "
    "without it")
_NOT_IMPLEMENTED_NODE = (
    "PyTorch's output has the autograd fallback's torch::autograd::NotImplemented node; "
    "switchyard's has its derivative's node (see KNOWN)")
_INPLACE_VIEW_NODE = (
    "bug (in-place metadata ops on a view): PyTorch records the op's own node (TBackward1, "
    "TransposeBackward1, SqueezeBackward3-5, UnsqueezeBackward1, AsStridedBackward1); "
    "switchyard records AsStridedBackward0 (its view replay), and its gradients fail for "
    "most of them (see KNOWN)")


def _each(overloads, suffixes):
    """``{overload/suffix}`` for every pair."""
    return [f"{o}/{k}" for o in overloads for k in suffixes]


_CONTIG = ["float32/contig/grad", "float64/contig/grad"]
_KINDS = _CONTIG + [f"float32/{k}/grad" for k in ("t", "slice", "expand", "zerodim", "empty")]
_BN = _CONTIG + ["float32/slice/grad", "float32/contig/eval/grad"]
_SCATTER = _CONTIG + ["float32/contig/dim=0/grad", "float32/contig/multiply/grad"]

KNOWN_GRAD_FN = {
    **{k: _NUMBERING for k in _each(["zero.default"], _KINDS)
       + _each(["uniform.default", "bernoulli.Tensor"], _CONTIG + ["float32/slice/grad"])
       + _each(["_index_put_impl.default"], _CONTIG + ["float32/slice/grad",
                                                       "float32/contig/accumulate/grad"])},
    **{k: _QUALIFIED for k in _each(["copy_.default"], _CONTIG + [
        f"float32/{k}/grad" for k in ("zerodim", "empty", "bcast", "mixed", "mixed0d")])
},
    **{k: "justified (for the lead to confirm): " + _NOT_IMPLEMENTED_NODE for k in
       _each(["copy.default"], _KINDS + [f"float32/{k}/grad" for k in (
           "bcast", "mixed", "mixed0d")])
       + _each(["remainder.Scalar_Tensor"], _KINDS + ["float32/special/grad",
                                                      "float32/large/grad"])
       + _each(["scatter.value_reduce"], _SCATTER + ["float32/slice/grad"])
       + _each(["scatter_.value_reduce"], _SCATTER)
       + _each(["bernoulli.p", "normal_functional.default"],
               _CONTIG + ["float32/slice/grad"])},
    **{k: ("bug (decomposition): batch_norm's output has NativeBatchNormBackward0 in PyTorch "
           "(it calls native_batch_norm); switchyard's decomposition calls "
           "_native_batch_norm_legit(_no_training) and shows that node (gradients agree)")
       for k in _each(["batch_norm.default", "_batch_norm_impl_index.default"], _BN)},
    **{k: ("bug (naming): native_batch_norm's output has NativeBatchNormBackward0 in PyTorch; "
           "switchyard's shows NativeBatchNormLegit(NoTraining)Backward0, the node of the "
           "operator it redispatches to (gradients agree)")
       for k in _each(["native_batch_norm.default"], _BN)},
    **{f"{o}/float32/{k}/grad": (
        "bug (naming): reshape of a non-contiguous tensor that can be viewed records "
        "ReshapeAliasBackward0 in PyTorch (its reshape calls _reshape_alias); switchyard "
        "records ViewBackward0 (gradients agree)") for o, k in (
        ("reshape.default", "slice"), ("flatten.using_ints", "slice"),
        ("reshape_as.default", "t"), ("reshape_as.default", "slice"),
        ("reshape_as.default", "expand"))},
    **{f"{o}/float32/slice/grad": _INPLACE_VIEW_NODE for o in (
        "as_strided_.default", "squeeze_.default", "squeeze_.dim", "squeeze_.dims",
        "transpose_.default", "t_.default", "unsqueeze_.default")},
    "t_.default/float32/t/grad": _INPLACE_VIEW_NODE,
    "t_.default/float32/expand/grad": _INPLACE_VIEW_NODE,
}
