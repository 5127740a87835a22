//! Composite and Meta kernels: indexing operators.

use switchyard_core::{MemoryFormat, Result, Scalar, Tensor};

/// `index_put_`: `_index_put_impl_` with bounds checks (`unsafe=False`).
pub fn index_put_(
    self_: &Tensor,
    indices: &[Option<Tensor>],
    values: &Tensor,
    accumulate: bool,
) -> Result<Tensor> {
    crate::op::_index_put_impl_::call(self_, indices, values, accumulate, false)
}

/// `index_put`: a copy of `self` (same layout) with `index_put_` applied.
pub fn index_put(
    self_: &Tensor,
    indices: &[Option<Tensor>],
    values: &Tensor,
    accumulate: bool,
) -> Result<Tensor> {
    let result = crate::op::clone::call(self_, Some(MemoryFormat::Preserve))?;
    crate::op::_index_put_impl_::call(&result, indices, values, accumulate, false)
}

/// `self` broadcast with `mask` and copied contiguously: the functional `masked_fill`'s
/// output before it is filled (PyTorch's `expand_outplace` + `clone`).
fn masked_fill_base(self_: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let shape = switchyard_core::shape::infer_size(&self_.sizes(), &mask.sizes())?;
    let expanded = crate::op::expand::call(self_, &shape, false)?;
    crate::op::clone::call(&expanded, Some(MemoryFormat::Contiguous))
}

/// `masked_fill.Scalar`.
pub fn masked_fill_scalar(self_: &Tensor, mask: &Tensor, value: Scalar) -> Result<Tensor> {
    let result = masked_fill_base(self_, mask)?;
    crate::op::masked_fill__Scalar::call(&result, mask, value)
}

/// `masked_fill.Tensor`.
pub fn masked_fill_tensor(self_: &Tensor, mask: &Tensor, value: &Tensor) -> Result<Tensor> {
    let result = masked_fill_base(self_, mask)?;
    crate::op::masked_fill__Tensor::call(&result, mask, value)
}
