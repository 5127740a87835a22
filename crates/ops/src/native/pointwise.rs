//! Binary pointwise operators (arithmetic, comparison, logical, bitwise), where and clamp.
//!
//! The composites here are PyTorch's `CompositeExplicitAutograd` / `CompositeImplicitAutograd`
//! kernels of the `Scalar` overloads: the scalar becomes a *wrapped number* (a 0-dim tensor with
//! the lowest promotion priority) and the `Tensor` overload does the work, so promotion,
//! broadcasting and in-place checks are exactly the tensor operator's.

#![allow(non_snake_case)] // kernel names are fixed by ops.yaml (`div__scalar`, `clamp_Tensor_out`)

use crate::iter_meta::{IterConfig, prepare_any_dtype_out, prepare_elementwise_out};
use crate::op;
use crate::structured::Outs;
use switchyard_core::promotion::ResultTypeState;
use switchyard_core::{Result, Scalar, ScalarType, Tensor};

/// A scalar as a wrapped-number tensor (PyTorch's `wrapped_scalar_tensor`).
fn wrap(s: Scalar) -> Result<Tensor> {
    Tensor::wrapped_scalar(s)
}

/// `add.Scalar`.
pub fn add(self_: &Tensor, other: Scalar, alpha: Scalar) -> Result<Tensor> {
    op::add_Tensor::call(self_, &wrap(other)?, alpha)
}

/// `add_.Scalar`.
pub fn add_(self_: &Tensor, other: Scalar, alpha: Scalar) -> Result<Tensor> {
    op::add__Tensor::call(self_, &wrap(other)?, alpha)
}

/// `sub.Scalar`.
pub fn sub(self_: &Tensor, other: Scalar, alpha: Scalar) -> Result<Tensor> {
    op::sub_Tensor::call(self_, &wrap(other)?, alpha)
}

/// `sub_.Scalar`.
pub fn sub_(self_: &Tensor, other: Scalar, alpha: Scalar) -> Result<Tensor> {
    op::sub__Tensor::call(self_, &wrap(other)?, alpha)
}

/// `mul.Scalar`.
pub fn mul(self_: &Tensor, other: Scalar) -> Result<Tensor> {
    op::mul_Tensor::call(self_, &wrap(other)?)
}

/// `mul_.Scalar`.
pub fn mul_(self_: &Tensor, other: Scalar) -> Result<Tensor> {
    op::mul__Tensor::call(self_, &wrap(other)?)
}

/// `div.Scalar`.
pub fn div_scalar(self_: &Tensor, other: Scalar) -> Result<Tensor> {
    op::div_Tensor::call(self_, &wrap(other)?)
}

/// `div_.Scalar`.
pub fn div__scalar(self_: &Tensor, other: Scalar) -> Result<Tensor> {
    op::div__Tensor::call(self_, &wrap(other)?)
}

/// `div.Scalar_mode`.
pub fn div_scalar_mode(
    self_: &Tensor,
    other: Scalar,
    rounding_mode: Option<&str>,
) -> Result<Tensor> {
    op::div_Tensor_mode::call(self_, &wrap(other)?, rounding_mode)
}

/// `div_.Scalar_mode`.
pub fn div__scalar_mode(
    self_: &Tensor,
    other: Scalar,
    rounding_mode: Option<&str>,
) -> Result<Tensor> {
    op::div__Tensor_mode::call(self_, &wrap(other)?, rounding_mode)
}

/// Defines the logical composites (PyTorch's `comparison_op` / `comparison_op_`): the
/// functional form allocates a `Bool` result on `self`'s device, the in-place form writes
/// into `self`; both run the out= kernel.
macro_rules! logical_composites {
    ($($name:ident, $inplace:ident, $out:ident;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`: a `Bool` result.")]
        pub fn $name(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
            // Through the dispatcher (`at::empty`), so a backend without storage makes its own.
            let result = op::empty_memory_format::call(
                &[0],
                Some(ScalarType::Bool),
                None,
                Some(self_.device()),
                None,
                None,
            )?;
            op::$out::call(self_, other, &result)
        }

        #[doc = concat!("`", stringify!($inplace), "`: the result is written into `self`.")]
        pub fn $inplace(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
            op::$out::call(self_, other, self_)
        }
    )*};
}
logical_composites! {
    logical_and, logical_and_, logical_and_out;
    logical_or, logical_or_, logical_or_out;
    logical_xor, logical_xor_, logical_xor_out;
}

/// Defines the `Scalar` overloads of an operator whose `Tensor` overloads do the work.
macro_rules! scalar_overloads {
    ($($functional:ident => $t:ident, $inplace:ident => $ti:ident, $out:ident => $to:ident;)*) => {$(
        #[doc = concat!("The `Scalar` overload of `", stringify!($t), "`.")]
        pub fn $functional(self_: &Tensor, other: Scalar) -> Result<Tensor> {
            op::$t::call(self_, &wrap(other)?)
        }

        #[doc = concat!("The `Scalar` overload of `", stringify!($ti), "`.")]
        pub fn $inplace(self_: &Tensor, other: Scalar) -> Result<Tensor> {
            op::$ti::call(self_, &wrap(other)?)
        }

        #[doc = concat!("The `Scalar` overload of `", stringify!($to), "`.")]
        pub fn $out(self_: &Tensor, other: Scalar, out: &Tensor) -> Result<Tensor> {
            op::$to::call(self_, &wrap(other)?, out)
        }
    )*};
}
scalar_overloads! {
    bitwise_and_scalar => bitwise_and_Tensor, bitwise_and_ => bitwise_and__Tensor, bitwise_and_out => bitwise_and_Tensor_out;
    bitwise_or_scalar => bitwise_or_Tensor, bitwise_or_ => bitwise_or__Tensor, bitwise_or_out => bitwise_or_Tensor_out;
    bitwise_xor_scalar => bitwise_xor_Tensor, bitwise_xor_ => bitwise_xor__Tensor, bitwise_xor_out => bitwise_xor_Tensor_out;
    fmod => fmod_Tensor, fmod_ => fmod__Tensor, fmod_out => fmod_Tensor_out;
    remainder => remainder_Tensor, remainder_ => remainder__Tensor, remainder_out => remainder_Tensor_out;
}

/// `bitwise_and.Scalar_Tensor`.
pub fn bitwise_and_scalar_tensor(self_: Scalar, other: &Tensor) -> Result<Tensor> {
    op::bitwise_and_Tensor::call(&wrap(self_)?, other)
}

/// `bitwise_or.Scalar_Tensor`.
pub fn bitwise_or_scalar_tensor(self_: Scalar, other: &Tensor) -> Result<Tensor> {
    op::bitwise_or_Tensor::call(&wrap(self_)?, other)
}

/// `bitwise_xor.Scalar_Tensor`.
pub fn bitwise_xor_scalar_tensor(self_: Scalar, other: &Tensor) -> Result<Tensor> {
    op::bitwise_xor_Tensor::call(&wrap(self_)?, other)
}

/// A 0-dim tensor of `dtype` on `device` holding `s` (PyTorch's `at::scalar_tensor`, which
/// fills with `fill_`: a value out of `dtype`'s range is "value cannot be converted to type
/// int8_t without overflow", never wrapped).
fn scalar_tensor(s: Scalar, dtype: ScalarType, device: switchyard_core::Device) -> Result<Tensor> {
    op::full::call(&[], s, Some(dtype), None, Some(device), None)
}

/// `t` converted to `dtype` (itself when it has it already).
fn to_dtype(t: &Tensor, dtype: ScalarType) -> Result<Tensor> {
    op::to_dtype::call(t, dtype, false, false, None)
}

/// `where.ScalarSelf` (PyTorch's composite): `self` becomes a 0-dim tensor of
/// `result_type(other, self)`, converted with the overflow check.
pub fn where_scalarself(condition: &Tensor, self_: Scalar, other: &Tensor) -> Result<Tensor> {
    let dtype = result_type_with_scalar(other, self_);
    let self_t = scalar_tensor(self_, dtype, other.device())?;
    op::where_self::call(condition, &self_t, &to_dtype(other, dtype)?)
}

/// `where.ScalarOther`: as `where.ScalarSelf`, for `other`.
pub fn where_scalarother(condition: &Tensor, self_: &Tensor, other: Scalar) -> Result<Tensor> {
    let dtype = result_type_with_scalar(self_, other);
    let other_t = scalar_tensor(other, dtype, self_.device())?;
    op::where_self::call(condition, &to_dtype(self_, dtype)?, &other_t)
}

/// `where.Scalar`: the two scalars promote among themselves (`where(c, 1, 2.5)` is float)
/// and become 0-dim tensors on the condition's device.
pub fn where_scalar(condition: &Tensor, self_: Scalar, other: Scalar) -> Result<Tensor> {
    let mut state = ResultTypeState::new();
    state.update_scalar(self_);
    state.update_scalar(other);
    let dtype = state.result().unwrap_or(ScalarType::Float);
    let other_t = scalar_tensor(other, dtype, condition.device())?;
    let self_t = scalar_tensor(self_, dtype, condition.device())?;
    op::where_self::call(condition, &self_t, &other_t)
}

/// `result_type(t, s)` of a tensor and a scalar.
fn result_type_with_scalar(t: &Tensor, s: Scalar) -> ScalarType {
    let mut state = ResultTypeState::new();
    state.update_tensor(t);
    state.update_scalar(s);
    state.result().unwrap_or(t.dtype())
}

// ---------------------------------------------------------------------------------------------
// Meta kernels of the unstructured binary operators.
// ---------------------------------------------------------------------------------------------

/// Defines the Meta kernels of `logical_and.out` and its siblings: `out` of any dtype,
/// resized to the broadcast shape.
macro_rules! logical_out_meta {
    ($($name:ident),*) => {$(
        #[doc = concat!("`", stringify!($name), "`: the logical out= kernel on Meta.")]
        pub fn $name(self_: &Tensor, other: &Tensor, out: &Tensor) -> Result<Tensor> {
            prepare_any_dtype_out(IterConfig::comparison(self_, other, Outs::Out(&[out])), out)?;
            Ok(out.clone())
        }
    )*};
}
logical_out_meta!(
    logical_and_out_meta,
    logical_or_out_meta,
    logical_xor_out_meta
);

/// `remainder.Scalar_Tensor` on Meta: `remainder.Tensor` with `self` a wrapped scalar.
pub fn remainder_scalar_tensor_meta(self_: Scalar, other: &Tensor) -> Result<Tensor> {
    op::remainder_Tensor::call(&Tensor::wrapped_scalar(self_)?, other)
}

/// `where.self` on Meta: the result dtype and device of the CPU kernel.
pub fn where_meta(condition: &Tensor, self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    let dtype = crate::meta::where_result_type(self_, other);
    let device = crate::meta::where_result_device(condition, self_, other);
    let out = Tensor::allocate(&[0], dtype, device)?;
    where_self_out_meta(condition, self_, other, &out)
}

/// `where.self_out` on Meta: the checks, then `out` resized like TensorIterator's output.
pub fn where_self_out_meta(
    condition: &Tensor,
    self_: &Tensor,
    other: &Tensor,
    out: &Tensor,
) -> Result<Tensor> {
    let shape = crate::meta::where_self_out_checks(condition, self_, other, out)?;
    prepare_elementwise_out(out, &[condition, self_, other], &shape)?;
    Ok(out.clone())
}
