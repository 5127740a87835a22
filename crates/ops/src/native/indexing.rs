//! Composite and Meta kernels: indexing operators.

use crate::meta;
use crate::meta::index_support::{AdvancedIndex, assert_no_overlap};
use crate::structured::resize_output;
use switchyard_core::{MemoryFormat, Result, Scalar, ScalarType, Tensor};

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

// ---------------------------------------------------------------------------------------------
// Meta kernels of the unstructured indexing operators: the CPU kernels' checks and result
// layouts, no values (index bounds, which need the index values, are not checked).
// ---------------------------------------------------------------------------------------------

/// `index_select.out` on Meta: `out` resized to `self`'s sizes with the indexed dimension
/// replaced by the number of indices.
pub fn index_select_out_meta(
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    out: &Tensor,
) -> Result<Tensor> {
    let (_, sizes) = meta::index_select_checks(self_, dim, index, out)?;
    resize_output(out, &sizes)?;
    Ok(out.clone())
}

/// `index_select` on Meta: a contiguous result.
pub fn index_select_meta(self_: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    let out = Tensor::allocate(&[0], self_.dtype(), self_.device())?;
    index_select_out_meta(self_, dim, index, &out)
}

/// `_index_put_impl_` on Meta: the index count, overlap, dtype and (for integer indices)
/// broadcast checks. Boolean masks select a data-dependent number of elements, so with a mask
/// the values' shape is not checked.
pub fn _index_put_impl_meta_(
    self_: &Tensor,
    indices: &[Option<Tensor>],
    values: &Tensor,
    _accumulate: bool,
    _unsafe: bool,
) -> Result<Tensor> {
    meta::check_index_put_count(self_, indices)?;
    assert_no_overlap(self_, values)?;
    for t in indices.iter().flatten() {
        assert_no_overlap(self_, t)?;
    }
    let has_mask = indices
        .iter()
        .flatten()
        .any(|t| matches!(t.dtype(), ScalarType::Bool | ScalarType::Byte));
    if has_mask {
        meta::check_index_put_dtype(self_, values)?;
    } else {
        let info = AdvancedIndex::new(self_, indices)?;
        meta::check_index_put_values(self_, &info, values)?;
    }
    Ok(self_.clone())
}

/// `masked_fill_.Scalar` on Meta.
pub fn masked_fill_scalar_meta_(self_: &Tensor, mask: &Tensor, value: Scalar) -> Result<Tensor> {
    meta::check_masked_fill(self_, mask)?;
    // The CPU kernel converts the value with `Scalar::to<T>()` and its overflow check.
    value.check_fits(self_.dtype())?;
    Ok(self_.clone())
}

/// `masked_fill_.Tensor` on Meta.
pub fn masked_fill_tensor_meta_(self_: &Tensor, mask: &Tensor, value: &Tensor) -> Result<Tensor> {
    meta::check_masked_fill_value(value)?;
    meta::check_masked_fill(self_, mask)?;
    Ok(self_.clone())
}

/// `flip` on Meta: a result laid out like `self` (`empty_like` preserving its format).
pub fn flip_meta(self_: &Tensor, dims: &[i64]) -> Result<Tensor> {
    meta::flip_flags(self_, dims)?;
    meta::empty_like_preserve(self_)
}

/// `roll` on Meta: a contiguous result.
pub fn roll_meta(self_: &Tensor, shifts: &[i64], dims: &[i64]) -> Result<Tensor> {
    meta::check_roll(self_, shifts, dims)?;
    Tensor::allocate(&self_.sizes(), self_.dtype(), self_.device())
}

/// `nonzero_numpy` (PyTorch's composite): the columns of `nonzero`, one `Long` tensor per
/// dimension; a 0-dim `self` counts as 1-d, as NumPy's `nonzero` does.
pub fn nonzero_numpy(self_: &Tensor) -> Result<Vec<Tensor>> {
    let indices = if self_.dim() == 0 {
        crate::op::nonzero::call(&crate::op::unsqueeze::call(self_, 0)?)?
    } else {
        crate::op::nonzero::call(self_)?
    };
    crate::op::unbind_int::call(&indices, 1)
}

/// `where(condition)` (PyTorch's composite): `condition.nonzero_numpy()`, the coordinates of
/// the non-zero elements as one `Long` tensor per dimension (`torch.nonzero(as_tuple=True)`).
pub fn r#where(condition: &Tensor) -> Result<Vec<Tensor>> {
    crate::op::nonzero_numpy::call(condition)
}
