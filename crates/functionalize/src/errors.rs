//! The errors of functionalization (A.10 of the reference note, plan §6), one constructor each,
//! worded as PyTorch words them (checked against PyTorch 2.15: its sources
//! `aten/src/ATen/FunctionalStorageImpl.cpp`, `FunctionalTensorWrapper.cpp`,
//! `FunctionalInverses.cpp`, `FunctionalizeFallbackKernel.cpp`, the generated
//! `RegisterFunctionalization_*.cpp`, `torch/_functorch/eager_transforms.py`, and the errors it
//! raises). All are `RuntimeError`s. `tests/functionalize/errors.rs` raises each one through
//! the public API.
//!
//! Where PyTorch raises an internal assert, the message is the assert's text without its
//! `INTERNAL ASSERT FAILED at "<file>":<line>` prefix.

use switchyard_core::Error;
use switchyard_dispatch::OperatorHandle;

/// A mutation of a member of a frozen alias group (`FunctionalStorageImpl::add_update`;
/// `torch._freeze_functional_tensor`).
pub(crate) fn frozen_storage() -> Error {
    Error::runtime("cannot mutate tensors with frozen storage")
}

/// A mutation through a view chain of `len` records whose record `index` (not the first) is an
/// `as_strided` (`FunctionalStorageImpl::add_update`, PyTorch issue #104505). "today,so" (no
/// space) is PyTorch's text.
pub(crate) fn as_strided_in_view_chain(len: usize, index: usize) -> Error {
    Error::runtime(format!(
        "During torch.compile, encountered a mutation on a view chain of length {len}, where view {index} was an as_strided() call. as_strided() is non-compositional, and therefore is not possible to functionalize properly today,so this behavior is banned in compile. As a workaround, you can either remove the mutation from the model code, or you can insert a graph break right before the mutation with torch._dynamo.graph_break(). If you would like this behavior to work properly, please comment on https://github.com/pytorch/pytorch/issues/104505."
    ))
}

/// `resize_` growing a view, or a tensor another tensor aliases
/// (`FunctionalTensorWrapper::maybe_replace_storage`).
pub(crate) fn resize_view_larger() -> Error {
    Error::runtime(
        "Attempted to resize a view tensor to a larger size. This is not allowed in the functionalization pass",
    )
}

/// A mutated `unfold` view whose windows overlap, when views are reapplied
/// (`FunctionalInverses::unfold_inverse`).
pub(crate) fn unfold_overlap() -> Error {
    Error::runtime(
        "While executing unfold, functionalization encountered a tensor being mutated that has internal overlap. When using torch.compile (or running functionalization directly), this is banned as the behavior is not well defined. Consider cloning the tensor before mutating it, or removing the mutation from your model.",
    )
}

/// A plain tensor mutated with a functional argument (the generated kernels' internal assert).
pub(crate) fn mixed_mutation() -> Error {
    Error::runtime(
        "mutating a non-functional tensor with a functional tensor is not allowed. Please ensure that all of your inputs are wrapped inside of a functionalize() call.",
    )
}

/// `set_` of a plain tensor to a functional one (`set__functionalize`).
pub(crate) fn set_plain_to_functional() -> Error {
    Error::runtime(
        "set__functionalize: Tried to mutate a non-functional tensor with a functional tensor, which is not allowed",
    )
}

/// `set_` of a functional tensor to a plain one (`set__functionalize`).
pub(crate) fn set_functional_to_plain() -> Error {
    Error::runtime(
        "set__functionalize: We do not currently support x.set_(y) where y is not a FunctionalTensor. Please file an issue",
    )
}

/// An operator with alias annotations (a view or a mutation) that has no kernel at
/// `Functionalize` and reaches the boxed fallback (`functionalizeFallback`). The operator is
/// named by its full schema, as PyTorch 2.15 prints it (older versions named it
/// `ns::name.overload` in a shorter text, the one A.10 quotes).
pub(crate) fn alias_annotated_operator(op: &OperatorHandle) -> Error {
    let name = op
        .schema()
        .map_or_else(|| op.name().to_owned(), |s| s.to_string());
    Error::runtime(format!(
        "Found a custom (non-ATen) operator whose output has alias annotations: {name}. We only support functionalizing operators whose outputs do not have alias annotations (e.g. 'Tensor(a)' is a Tensor with an alias annotation whereas 'Tensor' is a Tensor without. The '(a)' is the alias annotation). The alias annotation specifies that the output Tensor shares storage with an input that has the same annotation. Please check if (1) the output needs to be an output (if not, don't return it), (2) if the output doesn't share storage with any inputs, then delete the alias annotation. (3) if the output indeed shares storage with an input, then add a .clone() before returning it to prevent storage sharing and then delete the alias annotation. Otherwise, please file an issue on GitHub."
    ))
}

/// `functionalize(f, remove=...)` with anything but the two modes
/// (`torch/_functorch/eager_transforms.py`; `{view}` is literal in PyTorch's text).
pub(crate) fn invalid_remove(remove: &str) -> Error {
    Error::runtime(format!(
        "functionalize(f, remove='mutations'): received invalid argument for remove={remove}. Valid options are:\n     remove='mutations': all inplace and out= operators will be removed from the program, and replaced with their out-of-place equivalents.\n     remove='mutations_and_views': In addition to the above, all aliasing operators {{view}} will be replaced with their non-aliasing counterparts, {{view}}_copy.\n"
    ))
}

/// A `functionalize` call inside a functionalized region (ours: functorch would push another
/// level; this layer has one).
pub(crate) fn nested_functionalize() -> Error {
    Error::runtime("nested functionalize() is not supported")
}

/// An in-place change of an input that is a leaf requiring grad, while grad mode is on:
/// autograd's `check_inplace`, which eager raises before the operator runs.
pub(crate) fn leaf_inplace() -> Error {
    Error::runtime("a leaf Variable that requires grad is being used in an in-place operation.")
}

/// An in-place change of a view of a leaf requiring grad (or of an input that is such a
/// view), while grad mode is on: autograd's `check_inplace`.
pub(crate) fn view_of_leaf_inplace() -> Error {
    Error::runtime(
        "a view of a leaf Variable that requires grad is being used in an in-place operation.",
    )
}
