//! Binary pointwise operators (arithmetic, comparison, logical, bitwise), where and clamp.
//!
//! Every kernel runs on the elementwise engine ([`map`]) in the compute type of the meta
//! function's common dtype (`f32` for `Half`/`BFloat16`, rounded once when stored). Dtype
//! coverage and error names follow PyTorch's `BinaryOpsKernel.cpp` (`"<name>_cpu" not
//! implemented for '<dtype>'`).

#![allow(non_snake_case)] // kernel names are fixed by ops.yaml (`div__scalar`, `clamp_Tensor_out`)

use crate::loops::map;
use crate::num::{Arith, Bits, Num, dispatch_compute, dispatch_subset};
use std::sync::atomic::{AtomicBool, Ordering};
use switchyard_core::element::convert;
use switchyard_core::{Element, Result, Scalar, ScalarType, Tensor, dispatch_dtype, torch_check};
use switchyard_ops::iter_meta::{
    IterConfig, IterInfo, prepare_any_dtype_out, prepare_elementwise_out,
};
use switchyard_ops::meta::{
    RoundingMode, rounding_mode, where_result_device, where_result_type, where_self_out_checks,
};
use switchyard_ops::structured::{Meta, Outs};

/// `out = f(a, b)` in compute type `C`.
#[inline]
fn binary<C: Element, R: Element>(
    out: &Tensor,
    a: &Tensor,
    b: &Tensor,
    f: impl Fn(C, C) -> R + Sync,
) -> Result<()> {
    map::<C, R, 2>(out, [a, b], move |[x, y]| f(x, y))
}

/// Integer division-like `f`, failing with PyTorch's `ZeroDivisionError` when any divisor is
/// zero (the flag is only written on that path, so the loop stays cheap).
fn int_divlike<C: Arith>(out: &Tensor, a: &Tensor, b: &Tensor, f: fn(C, C) -> C) -> Result<()> {
    let by_zero = AtomicBool::new(false);
    binary::<C, C>(out, a, b, |x, y| {
        if y == C::zero() {
            by_zero.store(true, Ordering::Relaxed);
        }
        f(x, y)
    })?;
    torch_check!(!by_zero.load(Ordering::Relaxed), "ZeroDivisionError");
    Ok(())
}

/// `out = a + alpha * b` in the compute type of `dtype` (PyTorch's `add_kernel`; `alpha`
/// converts with PyTorch's overflow check).
fn add_kernel(
    dtype: ScalarType,
    a: &Tensor,
    b: &Tensor,
    alpha: Scalar,
    out: &Tensor,
) -> Result<()> {
    dispatch_compute!(dtype, C => {
        let alpha = alpha.to::<C>()?;
        if alpha == C::one() {
            binary::<C, C>(out, a, b, |x, y| x.add(y))
        } else {
            binary::<C, C>(out, a, b, move |x, y| x.add(alpha.mul(y)))
        }
    })
}

/// `add.out` (structured impl).
pub fn add_out(
    meta: &Meta<IterInfo>,
    self_: &Tensor,
    other: &Tensor,
    alpha: Scalar,
    out: &Tensor,
) -> Result<()> {
    add_kernel(meta.extra.common_dtype, self_, other, alpha, out)
}

/// `sub.out` (structured impl): `add` with `-alpha`, as PyTorch computes it.
pub fn sub_out(
    meta: &Meta<IterInfo>,
    self_: &Tensor,
    other: &Tensor,
    alpha: Scalar,
    out: &Tensor,
) -> Result<()> {
    add_kernel(
        meta.extra.common_dtype,
        self_,
        other,
        alpha.checked_neg()?,
        out,
    )
}

/// `mul.out` (structured impl); logical and for `Bool`.
pub fn mul_out(meta: &Meta<IterInfo>, self_: &Tensor, other: &Tensor, out: &Tensor) -> Result<()> {
    dispatch_compute!(meta.extra.common_dtype, C => binary::<C, C>(out, self_, other, |x, y| x.mul(y)))
}

/// True division in a floating compute type (meta promoted integers to float).
fn div_true(dtype: ScalarType, a: &Tensor, b: &Tensor, out: &Tensor) -> Result<()> {
    dispatch_subset!(float, dtype, "div_true_cpu", C => binary::<C, C>(out, a, b, |x, y| x / y))
}

/// `div.out` (structured impl).
pub fn div_out(meta: &Meta<IterInfo>, self_: &Tensor, other: &Tensor, out: &Tensor) -> Result<()> {
    div_true(meta.extra.common_dtype, self_, other, out)
}

/// `div.out_mode` (structured impl): integers raise on division by zero, floats follow
/// PyTorch's `div_trunc` / `div_floor_floating` (signed zeros included).
pub fn div_out_mode(
    meta: &Meta<IterInfo>,
    self_: &Tensor,
    other: &Tensor,
    rounding_mode: Option<&str>,
    out: &Tensor,
) -> Result<()> {
    let dtype = meta.extra.common_dtype;
    let mode = self::rounding_mode(rounding_mode)?;
    let integral = dtype.is_integral(false);
    match mode {
        RoundingMode::True => div_true(dtype, self_, other, out),
        RoundingMode::Trunc if integral => {
            dispatch_subset!(int, dtype, "div_trunc_cpu", C => int_divlike::<C>(out, self_, other, <C as Arith>::div_trunc))
        }
        RoundingMode::Trunc => {
            dispatch_subset!(float, dtype, "div_trunc_cpu", C => binary::<C, C>(out, self_, other, <C as Arith>::div_trunc))
        }
        RoundingMode::Floor if integral => {
            dispatch_subset!(int, dtype, "div_floor_cpu", C => int_divlike::<C>(out, self_, other, <C as Arith>::div_floor))
        }
        RoundingMode::Floor => {
            dispatch_subset!(float, dtype, "div_floor_cpu", C => binary::<C, C>(out, self_, other, <C as Arith>::div_floor))
        }
    }
}

/// Defines the comparison impls (`eq.Tensor_out`, `eq.Scalar_out`, ...): a `bool` per element,
/// compared in the common dtype (IEEE semantics for NaN), converted to the output's dtype.
macro_rules! comparison_kernels {
    ($($tensor_out:ident, $scalar_out:ident, $op:tt;)*) => {$(
        #[doc = concat!("`", stringify!($tensor_out), "` (structured impl): `self ", stringify!($op), " other`.")]
        pub fn $tensor_out(meta: &Meta<IterInfo>, self_: &Tensor, other: &Tensor, out: &Tensor) -> Result<()> {
            dispatch_compute!(meta.extra.common_dtype, C => binary::<C, bool>(out, self_, other, |x, y| x $op y))
        }

        #[doc = concat!("`", stringify!($scalar_out), "` (structured impl): `self ", stringify!($op), " other`.")]
        pub fn $scalar_out(meta: &Meta<IterInfo>, self_: &Tensor, other: Scalar, out: &Tensor) -> Result<()> {
            $tensor_out(meta, self_, &Tensor::wrapped_scalar(other)?, out)
        }
    )*};
}
comparison_kernels! {
    eq_Tensor_out, eq_Scalar_out, ==;
    ne_Tensor_out, ne_Scalar_out, !=;
    lt_Tensor_out, lt_Scalar_out, <;
    le_Tensor_out, le_Scalar_out, <=;
    gt_Tensor_out, gt_Scalar_out, >;
    ge_Tensor_out, ge_Scalar_out, >=;
}

/// Defines the logical out= kernels (unstructured, like PyTorch's `comparison_op_out`): any
/// output dtype, resized to the broadcast shape; operands are truth values (`!= 0`).
macro_rules! logical_kernels {
    ($($name:ident, $f:expr;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`: elementwise logical operation into `out`.")]
        pub fn $name(self_: &Tensor, other: &Tensor, out: &Tensor) -> Result<Tensor> {
            let meta = prepare_any_dtype_out(IterConfig::comparison(self_, other, Outs::Out(&[out])), out)?;
            let f: fn(bool, bool) -> bool = $f;
            dispatch_compute!(meta.extra.common_dtype, C => {
                binary::<C, bool>(out, self_, other, |x, y| f(x.truthy(), y.truthy()))
            })?;
            Ok(out.clone())
        }
    )*};
}
logical_kernels! {
    logical_and_out, |x, y| x && y;
    logical_or_out, |x, y| x || y;
    logical_xor_out, |x, y| x != y;
}

/// Defines the bitwise impls: integers and `Bool` only (logical for `Bool`).
macro_rules! bitwise_kernels {
    ($($name:ident, $cpu:literal, $method:ident;)*) => {$(
        #[doc = concat!("`", stringify!($name), "` (structured impl).")]
        pub fn $name(meta: &Meta<IterInfo>, self_: &Tensor, other: &Tensor, out: &Tensor) -> Result<()> {
            dispatch_subset!(int_bool, meta.extra.common_dtype, $cpu, C => {
                binary::<C, C>(out, self_, other, |x, y| Bits::$method(x, y))
            })
        }
    )*};
}
bitwise_kernels! {
    bitwise_and_out, "bitwise_and_cpu", and;
    bitwise_or_out, "bitwise_or_cpu", or;
    bitwise_xor_out, "bitwise_xor_cpu", xor;
}

/// NaN-propagating maximum (logical or for `Bool`).
fn maximum_kernel(dtype: ScalarType, a: &Tensor, b: &Tensor, out: &Tensor) -> Result<()> {
    dispatch_compute!(dtype, C => binary::<C, C>(out, a, b, <C as Num>::maximum))
}

/// NaN-propagating minimum (logical and for `Bool`).
fn minimum_kernel(dtype: ScalarType, a: &Tensor, b: &Tensor, out: &Tensor) -> Result<()> {
    dispatch_compute!(dtype, C => binary::<C, C>(out, a, b, <C as Num>::minimum))
}

/// `maximum.out` (structured impl).
pub fn maximum_out(
    meta: &Meta<IterInfo>,
    self_: &Tensor,
    other: &Tensor,
    out: &Tensor,
) -> Result<()> {
    maximum_kernel(meta.extra.common_dtype, self_, other, out)
}

/// `minimum.out` (structured impl).
pub fn minimum_out(
    meta: &Meta<IterInfo>,
    self_: &Tensor,
    other: &Tensor,
    out: &Tensor,
) -> Result<()> {
    minimum_kernel(meta.extra.common_dtype, self_, other, out)
}

/// `clamp_min.Tensor_out` (structured impl): PyTorch runs `maximum`.
pub fn clamp_min_Tensor_out(
    meta: &Meta<IterInfo>,
    self_: &Tensor,
    min: &Tensor,
    out: &Tensor,
) -> Result<()> {
    maximum_kernel(meta.extra.common_dtype, self_, min, out)
}

/// `clamp_max.Tensor_out` (structured impl): PyTorch runs `minimum`.
pub fn clamp_max_Tensor_out(
    meta: &Meta<IterInfo>,
    self_: &Tensor,
    max: &Tensor,
    out: &Tensor,
) -> Result<()> {
    minimum_kernel(meta.extra.common_dtype, self_, max, out)
}

/// `remainder` (Python's `%`, sign of the divisor) or `fmod` (C's, sign of the dividend):
/// integers raise `ZeroDivisionError`, `Bool` is not supported.
fn remainder_kernel(
    floor: bool,
    dtype: ScalarType,
    a: &Tensor,
    b: &Tensor,
    out: &Tensor,
) -> Result<()> {
    let name = if floor { "remainder_cpu" } else { "fmod_cpu" };
    if dtype.is_integral(false) {
        dispatch_subset!(int, dtype, name, C => {
            int_divlike::<C>(out, a, b, if floor { <C as Arith>::rem_floor } else { <C as Arith>::rem_trunc })
        })
    } else {
        dispatch_subset!(float, dtype, name, C => {
            let f: fn(C, C) -> C = if floor { <C as Arith>::rem_floor } else { <C as Arith>::rem_trunc };
            binary::<C, C>(out, a, b, f)
        })
    }
}

/// `remainder.Tensor_out` (structured impl).
pub fn remainder_out(
    meta: &Meta<IterInfo>,
    self_: &Tensor,
    other: &Tensor,
    out: &Tensor,
) -> Result<()> {
    remainder_kernel(true, meta.extra.common_dtype, self_, other, out)
}

/// `fmod.Tensor_out` (structured impl).
pub fn fmod_out(meta: &Meta<IterInfo>, self_: &Tensor, other: &Tensor, out: &Tensor) -> Result<()> {
    remainder_kernel(false, meta.extra.common_dtype, self_, other, out)
}

/// `remainder.Scalar_Tensor`: `self % other` with `self` a wrapped scalar.
pub fn remainder(self_: Scalar, other: &Tensor) -> Result<Tensor> {
    switchyard_ops::op::remainder_Tensor::call(&Tensor::wrapped_scalar(self_)?, other)
}

/// The floating functions these kernels need beyond `num::Arith` (`math.rs` belongs to the
/// unary family).
trait FloatOps: Copy + std::ops::Div<Output = Self> + std::ops::Mul<Output = Self> {
    fn atan2_(self, o: Self) -> Self;
    fn powf_(self, e: Self) -> Self;
    fn sqrt_(self) -> Self;
}

macro_rules! float_ops {
    ($($t:ty),*) => {$(
        impl FloatOps for $t {
            #[inline(always)]
            fn atan2_(self, o: Self) -> Self { self.atan2(o) }
            #[inline(always)]
            fn powf_(self, e: Self) -> Self { self.powf(e) }
            #[inline(always)]
            fn sqrt_(self) -> Self { self.sqrt() }
        }
    )*};
}
float_ops!(f32, f64);

/// `atan2.out` (structured impl).
pub fn atan2_out(
    meta: &Meta<IterInfo>,
    self_: &Tensor,
    other: &Tensor,
    out: &Tensor,
) -> Result<()> {
    dispatch_subset!(float, meta.extra.common_dtype, "atan2_cpu", C => binary::<C, C>(out, self_, other, C::atan2_))
}

/// `pow.Tensor_Tensor_out` (structured impl): integers by squaring (negative exponents give
/// 0 or ±1), floats with `powf`; `Bool` is not supported.
pub fn pow_Tensor_Tensor_out(
    meta: &Meta<IterInfo>,
    self_: &Tensor,
    exponent: &Tensor,
    out: &Tensor,
) -> Result<()> {
    dispatch_subset!(numeric, meta.extra.common_dtype, "pow", C => {
        binary::<C, C>(out, self_, exponent, <C as Arith>::pow)
    })
}

/// `out = f(a)` in compute type `C`.
fn unary<C: Element>(out: &Tensor, a: &Tensor, f: impl Fn(C) -> C + Sync) -> Result<()> {
    map::<C, C, 1>(out, [a], move |[x]| f(x))
}

/// `pow.Tensor_Scalar_out` (structured impl), with PyTorch's shortcuts: exponent 0 fills ones,
/// 1 copies, and for `Float`/`Double`/`BFloat16` 0.5, -0.5 and -1 are `sqrt`, `rsqrt` and
/// the reciprocal; 2, 3 and -2 multiply.
pub fn pow_Tensor_Scalar_out(
    meta: &Meta<IterInfo>,
    self_: &Tensor,
    exponent: Scalar,
    out: &Tensor,
) -> Result<()> {
    let dtype = meta.extra.common_dtype;
    let is = |v: f64| !exponent.is_boolean() && exponent.to_f64() == v;
    if is(0.0) || exponent == Scalar::Bool(false) {
        return unary::<bool>(out, self_, |_| true);
    }
    if is(1.0) || exponent == Scalar::Bool(true) {
        return dispatch_compute!(dtype, C => unary::<C>(out, self_, |x| x));
    }
    if dtype.is_integral(true) {
        return dispatch_subset!(int, dtype, "pow", C => {
            let e = exponent.to::<C>()?;
            unary::<C>(out, self_, move |x| Arith::pow(x, e))
        });
    }
    let special = matches!(
        dtype,
        ScalarType::Float | ScalarType::Double | ScalarType::BFloat16
    );
    dispatch_subset!(float, dtype, "pow", C => {
        let e: C = scalar_as::<C>(exponent, dtype)?;
        let e64 = exponent.to_f64();
        if special && e64 == 0.5 {
            unary::<C>(out, self_, |x| x.sqrt_())
        } else if special && e64 == -0.5 {
            unary::<C>(out, self_, |x| C::one() / x.sqrt_())
        } else if special && e64 == -1.0 {
            unary::<C>(out, self_, |x| C::one() / x)
        } else if e64 == 2.0 {
            unary::<C>(out, self_, |x| x * x)
        } else if e64 == 3.0 {
            unary::<C>(out, self_, |x| x * x * x)
        } else if e64 == -2.0 {
            unary::<C>(out, self_, |x| C::one() / (x * x))
        } else {
            unary::<C>(out, self_, move |x| x.powf_(e))
        }
    })
}

/// A scalar argument as PyTorch's kernels read it: `Scalar::to<scalar_t>()` for the storage
/// type of `dtype` (with its overflow check), then widened to the compute type `C`.
fn scalar_as<C: Element>(s: Scalar, dtype: ScalarType) -> Result<C> {
    dispatch_dtype!(dtype, S => Ok(convert::<S, C>(s.to::<S>()?)))
}

/// `pow.Scalar_out` (structured impl): a base of 1 fills ones, anything else is
/// `pow.Tensor_Tensor_out` with the base as a wrapped number.
pub fn pow_Scalar_out(
    meta: &Meta<IterInfo>,
    self_: Scalar,
    exponent: &Tensor,
    out: &Tensor,
) -> Result<()> {
    let _ = meta;
    if !self_.is_boolean() && self_.to_f64() == 1.0 {
        return unary::<bool>(out, exponent, |_| true);
    }
    switchyard_ops::op::pow_Tensor_Tensor_out::call(
        &Tensor::wrapped_scalar(self_)?,
        exponent,
        out,
    )?;
    Ok(())
}

/// `clamp.out` (structured impl): `min(max(x, min), max)` with NaN propagating from `x` and
/// from the bounds (PyTorch's vectorised `clamp`); `min > max` gives `max`.
pub fn clamp_out(
    meta: &Meta<IterInfo>,
    self_: &Tensor,
    min: Option<Scalar>,
    max: Option<Scalar>,
    out: &Tensor,
) -> Result<()> {
    let dtype = meta.extra.common_dtype;
    let name = match (min, max) {
        (Some(_), Some(_)) => "clamp_scalar_cpu",
        (Some(_), None) => "clamp_min_scalar_cpu",
        _ => "clamp_max_scalar_cpu",
    };
    dispatch_subset!(numeric, dtype, name, C => {
        let lo = clamp_bound::<C>(min, dtype, true)?;
        let hi = clamp_bound::<C>(max, dtype, false)?;
        unary::<C>(out, self_, move |x| {
            let x = lo.map_or(x, |l| Num::maximum(x, l));
            hi.map_or(x, |h| Num::minimum(x, h))
        })
    })
}

/// A scalar bound of `clamp` in compute type `C`. Floating dtypes convert with the overflow
/// check; for integer dtypes a bound beyond the range on its own side clamps nothing
/// (`None`) and one beyond the other side is PyTorch's "outside the representable range"
/// error.
fn clamp_bound<C: Element>(
    bound: Option<Scalar>,
    dtype: ScalarType,
    is_min: bool,
) -> Result<Option<C>> {
    let Some(s) = bound else {
        return Ok(None);
    };
    if !dtype.is_integral(false) {
        return scalar_as::<C>(s, dtype).map(Some);
    }
    // The range check is the meta function's (shared with every backend); repeated here for
    // callers of the impl alone.
    if !switchyard_ops::meta::clamp_bound_applies(s, dtype, is_min)? {
        return Ok(None);
    }
    Ok(Some(C::from_i64_lossy(s.to_i64_lossy())))
}

/// `clamp_min.out` (structured impl).
pub fn clamp_min_out(
    meta: &Meta<IterInfo>,
    self_: &Tensor,
    min: Scalar,
    out: &Tensor,
) -> Result<()> {
    clamp_out(meta, self_, Some(min), None, out)
}

/// `clamp_max.out` (structured impl).
pub fn clamp_max_out(
    meta: &Meta<IterInfo>,
    self_: &Tensor,
    max: Scalar,
    out: &Tensor,
) -> Result<()> {
    clamp_out(meta, self_, None, Some(max), out)
}

/// `clamp.Tensor_out` (structured impl): both bounds run PyTorch's `clamp` kernel (no `Bool`),
/// one bound is `maximum` / `minimum`.
pub fn clamp_Tensor_out(
    meta: &Meta<IterInfo>,
    self_: &Tensor,
    min: Option<&Tensor>,
    max: Option<&Tensor>,
    out: &Tensor,
) -> Result<()> {
    let dtype = meta.extra.common_dtype;
    match (min, max) {
        (Some(lo), Some(hi)) => dispatch_subset!(numeric, dtype, "clamp_cpu", C => {
            map::<C, C, 3>(out, [self_, lo, hi], |[x, l, h]| Num::minimum(Num::maximum(x, l), h))
        }),
        (Some(lo), None) => maximum_kernel(dtype, self_, lo, out),
        (None, Some(hi)) => minimum_kernel(dtype, self_, hi, out),
        (None, None) => Err(switchyard_core::Error::runtime(
            "torch.clamp: At least one of 'min' or 'max' must not be None",
        )),
    }
}

/// `where.self`: the result dtype is `result_type(self, other)`, on the inputs' device.
pub fn r#where(condition: &Tensor, self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    let dtype = where_result_type(self_, other);
    let device = where_result_device(condition, self_, other);
    let out = Tensor::allocate(&[0], dtype, device)?;
    where_self_out(condition, self_, other, &out)
}

/// `where.self_out`: `condition ? self : other` broadcast over all three; the condition is
/// `Bool` (or, deprecated, `Byte`), `out` must have the result dtype.
pub fn where_self_out(
    condition: &Tensor,
    self_: &Tensor,
    other: &Tensor,
    out: &Tensor,
) -> Result<Tensor> {
    let shape = where_self_out_checks(condition, self_, other, out)?;
    let dtype = out.dtype();
    prepare_elementwise_out(out, &[condition, self_, other], &shape)?;
    dispatch_compute!(dtype, C => {
        map::<C, C, 3>(out, [condition, self_, other], |[c, x, y]| if c.truthy() { x } else { y })
    })?;
    Ok(out.clone())
}
