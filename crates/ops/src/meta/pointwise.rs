//! Binary pointwise operators (arithmetic, comparison, logical, bitwise), where and clamp.
//!
//! Meta functions follow PyTorch's `TORCH_META_FUNC`s in `BinaryOps.cpp`,
//! `TensorCompare.cpp` and `Pow.cpp`: shape and dtype through [`IterConfig`], plus the
//! operator-specific argument checks, in PyTorch's order (the first failing check decides the
//! message).

use crate::iter_meta::{IterConfig, IterInfo};
use crate::structured::{Meta, OutputSpec, Outs};
use switchyard_core::promotion::ResultTypeState;
use switchyard_core::{
    Device, Result, Scalar, ScalarType, Tensor, can_cast, torch_check, torch_check_not_implemented,
};

/// PyTorch's `alpha_check`: `alpha` must be representable in the result dtype's kind.
pub fn alpha_check(dtype: ScalarType, alpha: Scalar) -> Result<()> {
    torch_check!(
        !alpha.is_boolean() || dtype == ScalarType::Bool,
        "Boolean alpha only supported for Boolean results."
    );
    torch_check!(
        dtype.is_floating_point() || !alpha.is_floating_point(),
        "For integral input tensors, argument alpha must not be a floating point number."
    );
    Ok(())
}

/// The kernel of `add` / `sub` reads `alpha` (`-alpha` for `sub`) as the computation type
/// (`float` for the 16-bit floats, PyTorch's `opmath_t`) with `Scalar::to<T>()`'s overflow
/// check: checked here, so that every backend refuses what the CPU kernel refuses.
fn check_alpha_fits(common: ScalarType, alpha: Scalar) -> Result<()> {
    let compute = match common {
        ScalarType::Half | ScalarType::BFloat16 => ScalarType::Float,
        other => other,
    };
    alpha.check_fits(compute)
}

/// PyTorch's `sub_check`: `-` is not defined on bool tensors.
fn sub_check(self_: &Tensor, other: &Tensor) -> Result<()> {
    let (a, b) = (
        self_.dtype() == ScalarType::Bool,
        other.dtype() == ScalarType::Bool,
    );
    torch_check_not_implemented!(
        !(a && b),
        "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead."
    );
    torch_check_not_implemented!(
        !(a || b),
        "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."
    );
    Ok(())
}

/// A binary op meta followed by `alpha_check` on the common dtype (the dtype the iterator
/// computes in).
fn binary_alpha(
    self_: &Tensor,
    other: &Tensor,
    alpha: Scalar,
    outs: Outs<'_>,
) -> Result<Meta<IterInfo>> {
    let meta = IterConfig::binary(self_, other, outs)
        .alpha(alpha)
        .build()?;
    check_alpha_fits(meta.extra.common_dtype, alpha)?;
    Ok(meta)
}

/// `add.Tensor`: `self + alpha * other`.
pub fn add_tensor(
    self_: &Tensor,
    other: &Tensor,
    alpha: Scalar,
    outs: Outs<'_>,
) -> Result<Meta<IterInfo>> {
    binary_alpha(self_, other, alpha, outs)
}

/// `sub.Tensor`: `self - alpha * other`; bool operands are rejected.
pub fn sub_tensor(
    self_: &Tensor,
    other: &Tensor,
    alpha: Scalar,
    outs: Outs<'_>,
) -> Result<Meta<IterInfo>> {
    sub_check(self_, other)?;
    let meta = IterConfig::binary(self_, other, outs)
        .alpha(alpha)
        .build()?;
    // The kernel adds `-alpha` (PyTorch: `add_stub(..., -alpha)`).
    check_alpha_fits(meta.extra.common_dtype, alpha.checked_neg()?)?;
    Ok(meta)
}

/// `mul.Tensor`.
pub fn mul_tensor(self_: &Tensor, other: &Tensor, outs: Outs<'_>) -> Result<Meta<IterInfo>> {
    IterConfig::binary(self_, other, outs).build()
}

/// `div.Tensor`: true division (integers compute in the default float dtype).
pub fn div_tensor(self_: &Tensor, other: &Tensor, outs: Outs<'_>) -> Result<Meta<IterInfo>> {
    IterConfig::binary_float(self_, other, outs).build()
}

/// The rounding modes of `div`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoundingMode {
    /// No rounding (true division).
    True,
    /// Round toward zero.
    Trunc,
    /// Round toward negative infinity.
    Floor,
}

/// Parses `div`'s `rounding_mode` argument with PyTorch's error for unknown modes.
pub fn rounding_mode(mode: Option<&str>) -> Result<RoundingMode> {
    match mode {
        None => Ok(RoundingMode::True),
        Some("trunc") => Ok(RoundingMode::Trunc),
        Some("floor") => Ok(RoundingMode::Floor),
        Some(other) => Err(switchyard_core::Error::runtime(format!(
            "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{other}'"
        ))),
    }
}

/// `div.Tensor_mode`: true division without a mode, otherwise in the common dtype.
pub fn div_tensor_mode(
    self_: &Tensor,
    other: &Tensor,
    rounding_mode: Option<&str>,
    outs: Outs<'_>,
) -> Result<Meta<IterInfo>> {
    match self::rounding_mode(rounding_mode)? {
        RoundingMode::True => IterConfig::binary_float(self_, other, outs).build(),
        RoundingMode::Trunc | RoundingMode::Floor => IterConfig::binary(self_, other, outs).build(),
    }
}

/// Defines comparison metas (`eq.Tensor` → `eq_tensor`, `eq.Scalar` → `eq_scalar`): a `Bool`
/// result (or the caller's output dtype) over the inputs' common dtype.
macro_rules! comparison_metas {
    ($($tensor:ident, $scalar:ident;)*) => {$(
        #[doc = concat!("`", stringify!($tensor), "`: elementwise comparison of two tensors.")]
        pub fn $tensor(self_: &Tensor, other: &Tensor, outs: Outs<'_>) -> Result<Meta<IterInfo>> {
            IterConfig::comparison(self_, other, outs).build()
        }

        #[doc = concat!("`", stringify!($scalar), "`: comparison with a wrapped scalar.")]
        pub fn $scalar(self_: &Tensor, other: Scalar, outs: Outs<'_>) -> Result<Meta<IterInfo>> {
            let other = Tensor::wrapped_scalar(other)?;
            IterConfig::comparison(self_, &other, outs).build()
        }
    )*};
}
comparison_metas! {
    eq_tensor, eq_scalar;
    ne_tensor, ne_scalar;
    lt_tensor, lt_scalar;
    le_tensor, le_scalar;
    gt_tensor, gt_scalar;
    ge_tensor, ge_scalar;
}

/// Defines metas of plain binary ops (`build_borrowing_binary_op`).
macro_rules! binary_metas {
    ($($name:ident),*) => {$(
        #[doc = concat!("`", stringify!($name), "`: inputs promoted to their common dtype.")]
        pub fn $name(self_: &Tensor, other: &Tensor, outs: Outs<'_>) -> Result<Meta<IterInfo>> {
            IterConfig::binary(self_, other, outs).build()
        }
    )*};
}
binary_metas!(
    bitwise_and_tensor,
    bitwise_or_tensor,
    bitwise_xor_tensor,
    remainder_tensor,
    fmod_tensor,
    pow_tensor_tensor,
    maximum,
    minimum,
    clamp_min_tensor,
    clamp_max_tensor
);

/// `atan2`: integers compute in the default float dtype.
pub fn atan2(self_: &Tensor, other: &Tensor, outs: Outs<'_>) -> Result<Meta<IterInfo>> {
    IterConfig::binary_float(self_, other, outs).build()
}

/// `pow.Tensor_Scalar`: integer bases reject negative integer exponents (NumPy's rule); the
/// base is promoted with the exponent as a wrapped number.
pub fn pow_tensor_scalar(
    self_: &Tensor,
    exponent: Scalar,
    outs: Outs<'_>,
) -> Result<Meta<IterInfo>> {
    torch_check!(
        !(self_.dtype().is_integral(true)
            && !exponent.is_floating_point()
            && exponent.to_i64_lossy() < 0),
        "Integers to negative integer powers are not allowed."
    );
    let exp = Tensor::wrapped_scalar(exponent)?;
    let mut state = ResultTypeState::new();
    state.update_tensor(self_);
    state.update_tensor(&exp);
    let dtype = state.result().unwrap_or(self_.dtype());
    // The kernel fills ones for an exponent of 0, copies for 1, and otherwise reads the
    // exponent as the element type with `Scalar::to<T>()`'s overflow check (bool tensors
    // have no such kernel: the CPU's dtype error).
    let trivial = exponent.is_boolean() || exponent.to_f64() == 0.0 || exponent.to_f64() == 1.0;
    if !trivial && dtype != ScalarType::Bool {
        exponent.check_fits(dtype)?;
    }
    // `build_output_borrowing_argument_owning_unary_op`: the result is cast to a given
    // output that can hold it.
    if let Some(out) = outs.get(0) {
        torch_check!(
            can_cast(dtype, out.dtype()),
            "result type {} can't be cast to the desired output type {}",
            dtype,
            out.dtype()
        );
    }
    let mut meta = unary_as(self_, dtype, Outs::Functional)?;
    if let Some(out) = outs.get(0) {
        check_inplace_shape(outs, &meta.output(0)?.sizes)?;
        crate::iter_meta::check_mem_overlaps(&[self_], outs)?;
        for o in &mut meta.outputs {
            o.dtype = out.dtype();
        }
    }
    Ok(meta)
}

/// In-place outputs must already have the broadcast shape.
fn check_inplace_shape(outs: Outs<'_>, shape: &[i64]) -> Result<()> {
    if let Outs::Inplace(out) = outs {
        torch_check!(
            out.sizes().as_slice() == shape,
            "output with shape {} doesn't match the broadcast shape {}",
            switchyard_core::shape::fmt_dims(&out.sizes()),
            switchyard_core::shape::fmt_dims(shape)
        );
    }
    Ok(())
}

/// `pow.Scalar`: the output has the exponent's shape and the caller's dtype if an output is
/// given, else `result_type(self, exponent)`.
pub fn pow_scalar(self_: Scalar, exponent: &Tensor, outs: Outs<'_>) -> Result<Meta<IterInfo>> {
    let base = Tensor::wrapped_scalar(self_)?;
    let mut state = ResultTypeState::new();
    state.update_tensor(&base);
    state.update_tensor(exponent);
    let common = state.result().unwrap_or(ScalarType::Float);
    let dtype = outs.get(0).map_or(common, Tensor::dtype);
    // The kernel fills a base of 1 with ones (any output dtype holds 1), anything else runs
    // `pow.Tensor_Tensor_out`, whose iterator refuses an output the result cannot be cast to.
    let base_is_one = !self_.is_boolean() && self_.to_f64() == 1.0;
    torch_check!(
        base_is_one || can_cast(common, dtype),
        "result type {common} can't be cast to the desired output type {dtype}"
    );
    Ok(Meta::new(
        [OutputSpec::contiguous(
            &exponent.sizes(),
            dtype,
            exponent.device(),
        )],
        IterInfo {
            common_dtype: common,
        },
    ))
}

/// `build_unary_op` on `self` converted to `dtype`.
fn unary_as(self_: &Tensor, dtype: ScalarType, outs: Outs<'_>) -> Result<Meta<IterInfo>> {
    if let Some(out) = outs.get(0) {
        torch_check!(
            out.dtype() == dtype,
            "Found dtype {} but expected {}",
            out.dtype(),
            dtype
        );
    }
    let mut meta = IterConfig::unary_float(self_, Outs::Functional).build()?;
    check_inplace_shape(outs, &meta.output(0)?.sizes)?;
    // The shape and dtype are computed as if functional; the given output is still checked
    // for overlap as PyTorch's TensorIterator checks it.
    crate::iter_meta::check_mem_overlaps(&[self_], outs)?;
    meta.extra.common_dtype = dtype;
    for o in &mut meta.outputs {
        o.dtype = dtype;
    }
    Ok(meta)
}

/// Clamp's manual promotion: a floating `self` keeps its dtype, otherwise the scalar bounds
/// take part (as wrapped numbers); in-place may not change `self`'s dtype.
fn clamp_scalar_meta(self_: &Tensor, bounds: &[Scalar], outs: Outs<'_>) -> Result<Meta<IterInfo>> {
    let mut dtype = self_.dtype();
    if !dtype.is_floating_point() {
        let mut state = ResultTypeState::new();
        state.update_tensor(self_);
        for b in bounds {
            state.update_scalar(*b);
        }
        dtype = state.result().unwrap_or(dtype);
        torch_check!(
            dtype == self_.dtype() || !outs.is_inplace(),
            "result type {} can't be cast to the desired output type {}",
            dtype,
            self_.dtype().type_meta_name()
        );
    }
    unary_as(self_, dtype, outs)
}

/// Checks the scalar bounds of a clamp against its computation dtype (see
/// [`clamp_bound_applies`]); PyTorch makes this check in the kernel, here the meta function
/// makes it for every backend.
fn check_clamp_bounds(
    meta: Meta<IterInfo>,
    min: Option<Scalar>,
    max: Option<Scalar>,
) -> Result<Meta<IterInfo>> {
    let dtype = meta.extra.common_dtype;
    if let Some(m) = min {
        clamp_bound_applies(m, dtype, true)?;
    }
    if let Some(m) = max {
        clamp_bound_applies(m, dtype, false)?;
    }
    Ok(meta)
}

/// Whether a scalar bound of `clamp` on an integral `dtype` applies (PyTorch's
/// `prepare_clamp_bound`): a bound beyond the dtype's range on its own side (a minimum below
/// the lowest value) clamps nothing and is dropped (`false`); one beyond the other side would
/// force every element out of range: "Clamp min value 1000 is outside the representable range
/// of Char". Floating dtypes keep every bound. Integer bounds compare exactly, float bounds as
/// doubles.
pub fn clamp_bound_applies(bound: Scalar, dtype: ScalarType, is_min: bool) -> Result<bool> {
    let (lowest, highest): (i64, i64) = match dtype {
        ScalarType::Byte => (0, u8::MAX.into()),
        ScalarType::Char => (i8::MIN.into(), i8::MAX.into()),
        ScalarType::Short => (i16::MIN.into(), i16::MAX.into()),
        ScalarType::Int => (i32::MIN.into(), i32::MAX.into()),
        ScalarType::Long => (i64::MIN, i64::MAX),
        _ => return Ok(true),
    };
    let (below, above) = match bound {
        Scalar::Float(v) => (v < lowest as f64, v > highest as f64),
        _ => {
            let v = bound.to_i64_lossy();
            (v < lowest, v > highest)
        }
    };
    if !below && !above {
        return Ok(true);
    }
    let is_noop = if is_min { below } else { above };
    torch_check!(
        is_noop,
        "Clamp {} value {} is outside the representable range of {}",
        if is_min { "min" } else { "max" },
        bound,
        dtype
    );
    Ok(false)
}

/// `clamp`: at least one bound.
pub fn clamp(
    self_: &Tensor,
    min: Option<Scalar>,
    max: Option<Scalar>,
    outs: Outs<'_>,
) -> Result<Meta<IterInfo>> {
    torch_check!(
        min.is_some() || max.is_some(),
        "torch.clamp: At least one of 'min' or 'max' must not be None"
    );
    let bounds: Vec<Scalar> = min.into_iter().chain(max).collect();
    check_clamp_bounds(clamp_scalar_meta(self_, &bounds, outs)?, min, max)
}

/// `clamp_min`.
pub fn clamp_min(self_: &Tensor, min: Scalar, outs: Outs<'_>) -> Result<Meta<IterInfo>> {
    check_clamp_bounds(clamp_scalar_meta(self_, &[min], outs)?, Some(min), None)
}

/// `clamp_max`.
pub fn clamp_max(self_: &Tensor, max: Scalar, outs: Outs<'_>) -> Result<Meta<IterInfo>> {
    check_clamp_bounds(clamp_scalar_meta(self_, &[max], outs)?, None, Some(max))
}

/// `clamp.Tensor`: `self` and the given bounds promoted together.
pub fn clamp_tensor(
    self_: &Tensor,
    min: Option<&Tensor>,
    max: Option<&Tensor>,
    outs: Outs<'_>,
) -> Result<Meta<IterInfo>> {
    torch_check!(
        min.is_some() || max.is_some(),
        "torch.clamp: At least one of 'min' or 'max' must not be None"
    );
    let inputs: Vec<&Tensor> = std::iter::once(self_).chain(min).chain(max).collect();
    IterConfig::nary_promoting(&inputs, outs).build()
}

/// `result_type(self, other)` of `where.self` (Float when neither decides).
pub fn where_result_type(self_: &Tensor, other: &Tensor) -> ScalarType {
    let mut state = ResultTypeState::new();
    state.update_tensor(self_);
    state.update_tensor(other);
    state.result().unwrap_or(ScalarType::Float)
}

/// The device `where.self` allocates its result on: the first operand that is not a 0-dim
/// CPU tensor (those broadcast from any device), else the condition's.
pub fn where_result_device(condition: &Tensor, self_: &Tensor, other: &Tensor) -> Device {
    [condition, self_, other]
        .into_iter()
        .find(|t| !(t.is_cpu() && t.dim() == 0))
        .map_or(condition.device(), Tensor::device)
}

/// The checks of `where.self_out` (PyTorch's `where_self_out`): `out` of the result dtype, a
/// `Bool` condition (`Byte` is deprecated, with PyTorch's warning), shapes that broadcast.
/// Returns the broadcast shape.
pub fn where_self_out_checks(
    condition: &Tensor,
    self_: &Tensor,
    other: &Tensor,
    out: &Tensor,
) -> Result<switchyard_core::shape::DimVec> {
    let dtype = where_result_type(self_, other);
    torch_check!(
        out.dtype() == dtype,
        "Expected out type to be {} but got {}",
        dtype,
        out.dtype()
    );
    if condition.dtype() == ScalarType::Byte {
        switchyard_dispatch::warnings::warn(String::from(
            "where received a uint8 condition tensor. This behavior is deprecated and will be removed in a future version of PyTorch. Use a boolean condition instead.",
        ));
    }
    torch_check!(
        matches!(condition.dtype(), ScalarType::Bool | ScalarType::Byte),
        "where expected condition to be a boolean tensor, but got a tensor with dtype {}",
        condition.dtype()
    );
    let shape = switchyard_core::shape::infer_size(&condition.sizes(), &self_.sizes())?;
    switchyard_core::shape::infer_size(&shape, &other.sizes())
}
