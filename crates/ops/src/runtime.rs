//! Runtime helpers of generated code.

use crate::op;
use std::sync::OnceLock;
use switchyard_core::shape::{fmt_dims, same_dims};
use switchyard_core::{Error, MemoryFormat, Result, Tensor, can_cast, torch_check};
use switchyard_dispatch::{Dispatcher, OpSignature, TypedOperatorHandle};

/// The typed handle of operator `name`, looked up in the process-wide dispatcher once and
/// cached in `cell` (one atomic load per call afterwards).
#[inline]
pub fn cached_handle<S: OpSignature>(
    cell: &OnceLock<TypedOperatorHandle<S>>,
    name: &str,
) -> Result<TypedOperatorHandle<S>> {
    if let Some(h) = cell.get() {
        return Ok(*h);
    }
    lookup(cell, name)
}

#[cold]
fn lookup<S: OpSignature>(
    cell: &OnceLock<TypedOperatorHandle<S>>,
    name: &str,
) -> Result<TypedOperatorHandle<S>> {
    let handle = Dispatcher::singleton()
        .find_schema_or_error(name)?
        .typed::<S>()?;
    Ok(*cell.get_or_init(|| handle))
}

/// Resizes `out` like `result` and copies `result` into it (the body of generated out=
/// kernels: PyTorch's `resize_out_helper` + `copy_arg`, which resizes first and then refuses
/// an `out` of another dtype or on another device).
pub fn copy_to_out(out: &Tensor, result: &Tensor) -> Result<()> {
    crate::structured::resize_output(out, &result.sizes())?;
    torch_check!(
        out.dtype() == result.dtype(),
        "Expected out tensor to have dtype {}, but got {} instead",
        result.dtype().type_meta_name(),
        out.dtype().type_meta_name()
    );
    torch_check!(
        out.device() == result.device(),
        "Expected out tensor to have device {}, but got {} instead",
        result.device(),
        out.device()
    );
    op::copy_::call(out, result, false).map(|_| ())
}

/// [`copy_to_out`] element-wise for tensor-list outputs.
pub fn copy_list_to_out(outs: &[Tensor], results: &[Tensor]) -> Result<()> {
    if outs.len() != results.len() {
        return Err(Error::runtime(format!(
            "Expected {} output tensors but got {}",
            results.len(),
            outs.len()
        )));
    }
    outs.iter()
        .zip(results)
        .try_for_each(|(o, r)| copy_to_out(o, r))
}

/// Checks an out= argument of a generated external-backend wrapper against the functional
/// kernel's result, as the CPU's out= kernels check theirs before touching them: the result's
/// dtype can be cast to `out`'s (PyTorch's `canCast`: "result type Float can't be cast to the
/// desired output type Long"; a safe cast, `float32` into `float64`, is fine) and `out` is on
/// the result's device.
pub fn check_backend_out(out: &Tensor, result: &Tensor) -> Result<()> {
    torch_check!(
        can_cast(result.dtype(), out.dtype()),
        "result type {} can't be cast to the desired output type {}",
        result.dtype(),
        out.dtype()
    );
    torch_check!(
        out.device() == result.device(),
        "Expected out tensor to have device {}, but got {} instead",
        result.device(),
        out.device()
    );
    Ok(())
}

/// The out= copy of generated external-backend wrappers: [`check_backend_out`] first, so that
/// a refused call leaves `out` untouched, then `out` resized as `resize_output` resizes (with
/// its warning for a non-empty `out`) and the result copied in, converted to `out`'s dtype.
pub fn copy_to_backend_out(out: &Tensor, result: &Tensor) -> Result<()> {
    check_backend_out(out, result)?;
    crate::structured::resize_output(out, &result.sizes())?;
    op::copy_::call(out, result, false).map(|_| ())
}

/// [`copy_to_backend_out`] for a `pointwise` operator: after [`check_backend_out`], `out` is
/// checked against `inputs` for memory overlap ([`check_backend_overlaps`]), then resized and
/// written.
pub fn copy_to_backend_out_checked(
    out: &Tensor,
    result: &Tensor,
    inputs: &[Option<&Tensor>],
) -> Result<()> {
    check_backend_out(out, result)?;
    check_backend_overlaps(out, inputs)?;
    crate::structured::resize_output(out, &result.sizes())?;
    op::copy_::call(out, result, false).map(|_| ())
}

/// The memory-overlap checks of TensorIterator (`compute_mem_overlaps`) for the tensor
/// `written` by a `pointwise` operator reading `inputs`, made by the generated in-place and
/// out= wrappers of external backends as the CPU's kernels make them: `written` may not have
/// elements sharing memory ("unsupported operation: more than one element of the written-to
/// tensor refers to a single memory location. ...", an expanded view) nor share only part of
/// its memory with an input ("unsupported operation: some elements of the input tensor and the
/// written-to tensor refer to a single memory location. ..."). The backend's functional kernel
/// and its copy into `written` check neither (the copy goes to the backend's `_copy_from`), and
/// would otherwise give values no eager kernel gives.
pub fn check_backend_overlaps(written: &Tensor, inputs: &[Option<&Tensor>]) -> Result<()> {
    use crate::meta::index_support::{assert_no_internal_overlap, assert_no_partial_overlap};
    assert_no_internal_overlap(written)?;
    inputs
        .iter()
        .flatten()
        .try_for_each(|input| assert_no_partial_overlap(written, input))
}

/// [`copy_to_backend_out`] for tensor-list outputs: every pair is checked before any `out` is
/// changed.
pub fn copy_list_to_backend_out(outs: &[Tensor], results: &[Tensor]) -> Result<()> {
    if outs.len() != results.len() {
        return Err(Error::runtime(format!(
            "Expected {} output tensors but got {}",
            results.len(),
            outs.len()
        )));
    }
    for (o, r) in outs.iter().zip(results) {
        check_backend_out(o, r)?;
    }
    outs.iter()
        .zip(results)
        .try_for_each(|(o, r)| copy_to_backend_out(o, r))
}

/// PyTorch's error for an out= call whose arguments require grad (`name` is the operator's
/// base name: `relu` for `relu.out`).
pub fn out_requires_grad_error(name: &str) -> Error {
    Error::runtime(format!(
        "{name}(): functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad."
    ))
}

/// PyTorch's error (`check_no_requires_grad`, VariableTypeUtils.h) for a tensor argument that
/// requires grad where the operator's derivatives.yaml entry gives it no formula: `function`
/// is the operator's C++ name (`native_batch_norm`), `argument` the schema's argument name.
pub fn not_differentiable_error(function: &str, argument: &str) -> Error {
    Error::runtime(format!(
        "The function '{function}' is not differentiable with respect to argument '{argument}'. This input cannot have requires_grad True."
    ))
}

/// The check of an out= wrapper generated at an external backend's `Autograd<backend>` key
/// (for a group whose functional kernel the backend lists under `autograd:`): with grad mode
/// on, arguments that require grad (`requires_grad`, computed by the wrapper over every
/// tensor argument, `out` included) are refused, as the generated Autograd out= kernels
/// refuse them, before anything runs.
pub fn check_backend_autograd_out(name: &str, requires_grad: bool) -> Result<()> {
    if requires_grad && switchyard_core::local_dispatch::is_grad_enabled() {
        return Err(out_requires_grad_error(name));
    }
    Ok(())
}

/// Checks the `self` of a generated external-backend in-place wrapper against the functional
/// kernel's result, as the CPU's in-place kernels check theirs: an in-place output is never
/// resized ("output with shape [3] doesn't match the broadcast shape [2, 3]") and the result
/// must be castable to its dtype ("result type Float can't be cast to the desired output type
/// Long").
pub fn check_backend_self(self_: &Tensor, result: &Tensor) -> Result<()> {
    let (sizes, wanted) = (self_.sizes(), result.sizes());
    torch_check!(
        same_dims(&sizes, &wanted),
        "output with shape {} doesn't match the broadcast shape {}",
        fmt_dims(&sizes),
        fmt_dims(&wanted)
    );
    torch_check!(
        can_cast(result.dtype(), self_.dtype()),
        "result type {} can't be cast to the desired output type {}",
        result.dtype(),
        self_.dtype()
    );
    Ok(())
}

/// The in-place copy of generated external-backend wrappers: [`check_backend_self`], then
/// the result copied into `self_`.
pub fn copy_to_backend_self(self_: &Tensor, result: &Tensor) -> Result<()> {
    check_backend_self(self_, result)?;
    op::copy_::call(self_, result, false).map(|_| ())
}

/// [`copy_to_backend_self`] for a `pointwise` operator: after [`check_backend_self`], `self_`
/// is checked against `inputs` for memory overlap ([`check_backend_overlaps`]), then written.
pub fn copy_to_backend_self_checked(
    self_: &Tensor,
    result: &Tensor,
    inputs: &[Option<&Tensor>],
) -> Result<()> {
    check_backend_self(self_, result)?;
    check_backend_overlaps(self_, inputs)?;
    op::copy_::call(self_, result, false).map(|_| ())
}

/// A copy of an argument a generated functional kernel mutates.
pub fn clone_arg(t: &Tensor) -> Result<Tensor> {
    op::clone::call(t, None)
}

/// A contiguous copy (the body of generated `*_copy` view-copy kernels).
pub fn clone_contiguous(t: &Tensor) -> Result<Tensor> {
    op::clone::call(t, Some(MemoryFormat::Contiguous))
}
