//! Runtime helpers of generated code.

use crate::op;
use std::sync::OnceLock;
use switchyard_core::{Error, MemoryFormat, Result, Tensor, torch_check};
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
/// an `out` of another dtype).
pub fn copy_to_out(out: &Tensor, result: &Tensor) -> Result<()> {
    crate::structured::resize_output(out, &result.sizes())?;
    torch_check!(
        out.dtype() == result.dtype(),
        "Expected out tensor to have dtype {}, but got {} instead",
        result.dtype().type_meta_name(),
        out.dtype().type_meta_name()
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

/// A copy of an argument a generated functional kernel mutates.
pub fn clone_arg(t: &Tensor) -> Result<Tensor> {
    op::clone::call(t, None)
}

/// A contiguous copy (the body of generated `*_copy` view-copy kernels).
pub fn clone_contiguous(t: &Tensor) -> Result<Tensor> {
    op::clone::call(t, Some(MemoryFormat::Contiguous))
}
