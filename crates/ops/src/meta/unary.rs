//! Unary pointwise operators (math functions, rounding, activations, classification): the
//! structured meta functions.
//!
//! They follow PyTorch's `TORCH_META_FUNC`s: the floating-point functions (`exp`, `log`,
//! `sigmoid`, ...) are `build_borrowing_unary_float_op` (integer and bool inputs compute in the
//! default float dtype, the result is cast to a provided output that can hold it); the others
//! (`neg`, rounding, `sign`, `bitwise_not`, `gelu`, `silu`) are `build_borrowing_unary_op`
//! (the output has the input's dtype). Which dtypes a kernel accepts is the CPU kernel's
//! business, as in PyTorch; the checks here are the ones PyTorch makes in meta.

use crate::iter_meta::{IterConfig, IterInfo};
use crate::structured::{Meta, Outs};
use switchyard_core::{Error, Result, ScalarType, Tensor};

/// Defines `build_borrowing_unary_float_op` meta functions.
macro_rules! unary_float_meta {
    ($($name:ident),* $(,)?) => {$(
        #[doc = concat!("Meta of `", stringify!($name), "`: integer and bool inputs compute in the default float dtype.")]
        pub fn $name(self_: &Tensor, outs: Outs<'_>) -> Result<Meta<IterInfo>> {
            IterConfig::unary_float(self_, outs).build()
        }
    )*};
}

unary_float_meta!(
    exp, log, log2, log1p, expm1, sqrt, rsqrt, sin, cos, tan, tanh, sigmoid, erf, reciprocal,
);

/// Defines `build_borrowing_unary_op` meta functions (output dtype = input dtype).
macro_rules! unary_same_meta {
    ($($name:ident),* $(,)?) => {$(
        #[doc = concat!("Meta of `", stringify!($name), "`: the output has the input's dtype.")]
        pub fn $name(self_: &Tensor, outs: Outs<'_>) -> Result<Meta<IterInfo>> {
            IterConfig::unary(self_, outs).build()
        }
    )*};
}

unary_same_meta!(floor, ceil, round, trunc, sign, bitwise_not, silu);

/// PyTorch's message for negating a bool tensor.
const NEG_BOOL: &str = "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.";

/// Meta of `neg`: bool tensors are rejected (PyTorch points to `logical_not`).
pub fn neg(self_: &Tensor, outs: Outs<'_>) -> Result<Meta<IterInfo>> {
    if self_.dtype() == ScalarType::Bool {
        return Err(Error::not_implemented(NEG_BOOL));
    }
    IterConfig::unary(self_, outs).build()
}

/// Meta of `round.decimals`; the CPU kernel rejects integer inputs.
pub fn round_decimals(self_: &Tensor, _decimals: i64, outs: Outs<'_>) -> Result<Meta<IterInfo>> {
    IterConfig::unary(self_, outs).build()
}

/// GELU's `approximate` argument (PyTorch's `GeluType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GeluApproximation {
    /// `'none'`: `x Φ(x)` with the exact normal CDF.
    None,
    /// `'tanh'`: the tanh approximation of Hendrycks & Gimpel.
    Tanh,
}

/// Parses GELU's `approximate` argument with PyTorch's error.
pub fn gelu_approximation(approximate: &str) -> Result<GeluApproximation> {
    match approximate {
        "none" => Ok(GeluApproximation::None),
        "tanh" => Ok(GeluApproximation::Tanh),
        _ => Err(Error::runtime(
            "approximate argument must be either none or tanh.",
        )),
    }
}

/// Meta of `gelu`: the output has the input's dtype. `approximate` is checked here, so that
/// every backend (Meta included) refuses what the CPU kernel refuses; PyTorch checks it in
/// the kernel only, after the iterator's checks (the order kept here).
pub fn gelu(self_: &Tensor, approximate: &str, outs: Outs<'_>) -> Result<Meta<IterInfo>> {
    let meta = IterConfig::unary(self_, outs).build()?;
    gelu_approximation(approximate)?;
    Ok(meta)
}

/// `nan_to_num.out`'s dtype check: `out` has `self`'s dtype.
pub fn check_nan_to_num_out(self_: &Tensor, out: &Tensor) -> Result<()> {
    if self_.dtype() != out.dtype() {
        return Err(Error::runtime(format!(
            "nan_to_num: dtype of out: {} should be same as input: {}",
            out.dtype(),
            self_.dtype()
        )));
    }
    Ok(())
}
