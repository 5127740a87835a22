//! Unary pointwise operators (math functions, rounding, activations, classification): the
//! composite kernels.
//!
//! `abs`, `logical_not` and `nan_to_num` allocate their result and call their out= operator
//! (their in-place forms pass `self` as the output), as PyTorch's `CompositeExplicitAutograd`
//! kernels do. `isinf` and `isfinite` are written with this family's operators only (PyTorch
//! uses `abs`, `==` and `*`, which belong to the binary family): `nan_to_num` maps exactly the
//! values to classify onto NaN, and `isnan` detects them.

use crate::iter_meta::{IterConfig, allocate_output, prepare_out};
use crate::op;
use crate::structured::{Outs, create_out};
use switchyard_core::{Result, ScalarType, Tensor};

/// An empty tensor for an out= kernel to resize: it then gets the layout TensorIterator gives
/// the outputs it allocates (`at::empty({0}, ..)` in PyTorch's composites). Allocated through
/// the dispatcher, so a backend without storage (the lazy device) makes its own tensor.
fn empty_output(t: &Tensor, dtype: ScalarType) -> Result<Tensor> {
    op::empty_memory_format::call(&[0], Some(dtype), None, Some(t.device()), None, None)
}

/// `abs`: a new tensor of `self`'s dtype filled by `abs.out`.
pub fn abs(self_: &Tensor) -> Result<Tensor> {
    let out = empty_output(self_, self_.dtype())?;
    op::abs_out::call(self_, &out)
}

/// `abs_`: `abs.out` into `self`.
pub fn abs_(self_: &Tensor) -> Result<Tensor> {
    op::abs_out::call(self_, self_)
}

/// `logical_not`: a new bool tensor filled by `logical_not.out`.
pub fn logical_not(self_: &Tensor) -> Result<Tensor> {
    let out = empty_output(self_, ScalarType::Bool)?;
    op::logical_not_out::call(self_, &out)
}

/// `logical_not_`: `logical_not.out` into `self` (0 or 1 in `self`'s dtype).
pub fn logical_not_(self_: &Tensor) -> Result<Tensor> {
    op::logical_not_out::call(self_, self_)
}

/// `nan_to_num`: a new tensor of `self`'s dtype filled by `nan_to_num.out`.
pub fn nan_to_num(
    self_: &Tensor,
    nan: Option<f64>,
    posinf: Option<f64>,
    neginf: Option<f64>,
) -> Result<Tensor> {
    // `at::empty_like(self)`: `self`'s layout when it is dense.
    let out = op::empty_like::call(self_, None, None, None, None, None)?;
    op::nan_to_num_out::call(self_, nan, posinf, neginf, &out)
}

/// `nan_to_num_`: `nan_to_num.out` into `self`.
pub fn nan_to_num_(
    self_: &Tensor,
    nan: Option<f64>,
    posinf: Option<f64>,
    neginf: Option<f64>,
) -> Result<Tensor> {
    op::nan_to_num_out::call(self_, nan, posinf, neginf, self_)
}

/// `isinf`: ±inf become NaN and NaN becomes 0, then `isnan`. Integer and bool tensors (which
/// `nan_to_num` copies) give all false, like PyTorch's `zeros_like(self, kBool)`.
pub fn isinf(self_: &Tensor) -> Result<Tensor> {
    let marked = op::nan_to_num::call(self_, Some(0.0), Some(f64::NAN), Some(f64::NAN))?;
    op::isnan::call(&marked)
}

/// `isfinite`: NaN and ±inf all become NaN, then `logical_not(isnan(..))`. Integer and bool
/// tensors give all true, like PyTorch's `ones_like(self, kBool)`.
pub fn isfinite(self_: &Tensor) -> Result<Tensor> {
    let marked = op::nan_to_num::call(self_, Some(f64::NAN), Some(f64::NAN), Some(f64::NAN))?;
    let nan = op::isnan::call(&marked)?;
    op::logical_not_::call(&nan)
}

/// `relu` on Meta: `self`'s shape, dtype and layout (as `clamp_min`'s TensorIterator lays out
/// the CPU kernel's result); bool is refused with the CPU kernel's error.
pub fn relu_meta(self_: &Tensor) -> Result<Tensor> {
    check_relu_dtype(self_)?;
    create_out(
        IterConfig::unary(self_, Outs::Functional)
            .build()?
            .output(0)?,
    )
}

/// `relu_` on Meta: the dtype check only.
pub fn relu_meta_(self_: &Tensor) -> Result<Tensor> {
    check_relu_dtype(self_)?;
    Ok(self_.clone())
}

fn check_relu_dtype(self_: &Tensor) -> Result<()> {
    if self_.dtype() == ScalarType::Bool {
        return Err(switchyard_core::Error::not_implemented(
            "Boolean inputs not supported for relu",
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Meta kernels of the unstructured unary operators: the CPU kernels' iterator checks and
// output layout, no values.
// ---------------------------------------------------------------------------------------------

/// `abs.out` on Meta: `out` must have `self`'s dtype; resized like TensorIterator's output.
pub fn abs_out_meta(self_: &Tensor, out: &Tensor) -> Result<Tensor> {
    prepare_out(IterConfig::unary(self_, Outs::Out(&[out])), out)?;
    Ok(out.clone())
}

/// `isnan` on Meta: a `Bool` result laid out like `self`.
pub fn isnan_meta(self_: &Tensor) -> Result<Tensor> {
    allocate_output(IterConfig::unary_force_boolean(self_, Outs::Functional))
}

/// `logical_not.out` on Meta: `out` of any dtype, resized to `self`'s shape.
pub fn logical_not_out_meta(self_: &Tensor, out: &Tensor) -> Result<Tensor> {
    prepare_out(
        IterConfig::unary_force_boolean(self_, Outs::Out(&[out])),
        out,
    )?;
    Ok(out.clone())
}

/// `nan_to_num.out` on Meta: `out` must have `self`'s dtype.
pub fn nan_to_num_out_meta(
    self_: &Tensor,
    _nan: Option<f64>,
    _posinf: Option<f64>,
    _neginf: Option<f64>,
    out: &Tensor,
) -> Result<Tensor> {
    crate::meta::check_nan_to_num_out(self_, out)?;
    prepare_out(IterConfig::unary(self_, Outs::Out(&[out])), out)?;
    Ok(out.clone())
}
