//! Meta functions of structured reduce operators.
//!
//! They follow PyTorch's `ReduceOps.cpp` / `SoftMax.cpp` / `LinearAlgebra.cpp` meta functions:
//! dimension lists are wrapped and checked for duplicates (`make_dim_mask`), an empty or absent
//! list reduces every dimension (except for `all.dims` / `any.dims`, where an empty list
//! reduces none), and the output dtype comes from the `dtype` argument, the caller's `out=`
//! tensor or the input (integral and bool inputs of `sum` / `prod` / `cumsum` / `cumprod`
//! promote to `Long`).
//!
//! The impls receive a [`ReduceInfo`] (the reduced dimensions as a bit mask over the input's
//! dimensions) or a [`DimInfo`] (one wrapped dimension).

use crate::structured::{Meta, OutputSpec, Outs};
use switchyard_core::shape::{DimVec, wrap_dim};
use switchyard_core::{
    Result, Scalar, ScalarType, Tensor, bail, can_cast, promote_types, torch_check,
};
use switchyard_core::{torch_check_index, torch_check_not_implemented};

/// The most dimensions a reduction supports (PyTorch's `dim_bitset_size`).
pub const MAX_REDUCE_DIMS: usize = 64;

/// What a reduction impl needs from its meta function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReduceInfo {
    /// Bit `d` is set when input dimension `d` is reduced (bit 0 for a 0-dim input reduced
    /// over dim 0 / -1, which reduces nothing).
    pub mask: u64,
}

impl ReduceInfo {
    /// Whether input dimension `d` is reduced.
    pub fn is_reduced(&self, d: usize) -> bool {
        d < MAX_REDUCE_DIMS && (self.mask >> d) & 1 == 1
    }

    /// The number of input elements folded into each output element.
    pub fn reduced_numel(&self, sizes: &[i64]) -> i64 {
        sizes
            .iter()
            .enumerate()
            .filter(|(d, _)| self.is_reduced(*d))
            .map(|(_, s)| *s)
            .product()
    }
}

/// A wrapped dimension, for operators working along one dimension (`max.dim`, `cumsum`,
/// `_softmax`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DimInfo {
    /// The dimension, wrapped into `0..max(ndim, 1)`.
    pub dim: usize,
}

/// `dim_list_to_bitset`: wraps every dimension and rejects duplicates ("dim 0 appears
/// multiple times in the list of dims").
pub fn dim_list_to_mask(dims: &[i64], ndim: usize) -> Result<u64> {
    torch_check!(
        ndim <= MAX_REDUCE_DIMS,
        "only tensors with up to {MAX_REDUCE_DIMS} dims are supported"
    );
    let mut mask = 0u64;
    for &d in dims {
        let w = wrap_dim(d, ndim)?;
        torch_check!(
            (mask >> w) & 1 == 0,
            "dim {w} appears multiple times in the list of dims"
        );
        mask |= 1 << w;
    }
    Ok(mask)
}

/// `make_dim_mask`: an absent or empty list means every dimension unless `allow_empty_dims`.
pub fn make_dim_mask(dims: Option<&[i64]>, ndim: usize, allow_empty_dims: bool) -> Result<u64> {
    match dims {
        Some(d) if !d.is_empty() || allow_empty_dims => dim_list_to_mask(d, ndim),
        _ => {
            torch_check!(
                ndim <= MAX_REDUCE_DIMS,
                "only tensors with up to {MAX_REDUCE_DIMS} dims are supported"
            );
            Ok(if ndim == 0 {
                1
            } else {
                u64::MAX >> (MAX_REDUCE_DIMS - ndim)
            })
        }
    }
}

/// `shape_from_dim_mask`: reduced dimensions become 1 (`keepdim`) or disappear.
pub fn reduction_shape(sizes: &[i64], mask: u64, keepdim: bool) -> DimVec {
    let info = ReduceInfo { mask };
    let mut shape = DimVec::new();
    for (d, &s) in sizes.iter().enumerate() {
        if !info.is_reduced(d) {
            shape.push(s);
        } else if keepdim {
            shape.push(1);
        }
    }
    shape
}

/// `get_dtype_from_self`: the explicit dtype, else the input's, with integral and bool inputs
/// promoted to `Long` when `promote_integers`.
pub fn dtype_from_self(
    self_: &Tensor,
    dtype: Option<ScalarType>,
    promote_integers: bool,
) -> ScalarType {
    match dtype {
        Some(d) => d,
        None if promote_integers && self_.dtype().is_integral(true) => ScalarType::Long,
        None => self_.dtype(),
    }
}

/// `infer_dtype_from_optional`: the explicit dtype, else the caller's output dtype, else the
/// input's (integers promoted to `Long`).
fn infer_dtype_from_optional(
    self_: &Tensor,
    dtype: Option<ScalarType>,
    outs: Outs<'_>,
) -> ScalarType {
    match (dtype, outs.get(0)) {
        (Some(d), _) => d,
        (None, Some(out)) => out.dtype(),
        (None, None) => dtype_from_self(self_, None, true),
    }
}

/// `resize_reduction`: one output of the reduced shape.
fn reduction_meta(
    self_: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    dtype: ScalarType,
    allow_empty_dims: bool,
) -> Result<Meta<ReduceInfo>> {
    let sizes = self_.sizes();
    let mask = make_dim_mask(dims, sizes.len(), allow_empty_dims)?;
    let shape = reduction_shape(&sizes, mask, keepdim);
    Ok(Meta::new(
        [OutputSpec::contiguous(&shape, dtype, self_.device())],
        ReduceInfo { mask },
    ))
}

/// `zero_numel_check_dims` for one dimension: the reduced dimension of an empty input must
/// not be empty ("max(): Expected reduction dim 0 to have non-zero size.").
fn zero_numel_check_dim(self_: &Tensor, dim: i64, fn_name: &str) -> Result<()> {
    if self_.dim() == 0 {
        torch_check_index!(
            dim == 0 || dim == -1,
            "{fn_name}: Expected reduction dim -1 or 0 for scalar but got {dim}"
        );
    } else {
        torch_check_index!(
            self_.size(dim)? != 0,
            "{fn_name}: Expected reduction dim {dim} to have non-zero size."
        );
    }
    Ok(())
}

/// `zero_numel_check_dims` for a list (an empty list is an error for an empty input: a
/// `RuntimeError`, where a dimension of size zero is an `IndexError`).
fn zero_numel_check_dims(self_: &Tensor, dims: &[i64], fn_name: &str) -> Result<()> {
    if dims.is_empty() {
        torch_check!(
            self_.numel() != 0,
            "{fn_name}: Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument."
        );
    }
    dims.iter()
        .try_for_each(|d| zero_numel_check_dim(self_, *d, fn_name))
}

/// `sum.dim_IntList`.
pub fn sum_dim_intlist(
    self_: &Tensor,
    dim: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<ScalarType>,
    outs: Outs<'_>,
) -> Result<Meta<ReduceInfo>> {
    let out_dtype = infer_dtype_from_optional(self_, dtype, outs);
    reduction_meta(self_, dim, keepdim, out_dtype, false)
}

/// `prod.dim_int`.
pub fn prod_dim_int(
    self_: &Tensor,
    dim: i64,
    keepdim: bool,
    dtype: Option<ScalarType>,
    outs: Outs<'_>,
) -> Result<Meta<ReduceInfo>> {
    let out_dtype = infer_dtype_from_optional(self_, dtype, outs);
    reduction_meta(self_, Some(&[dim]), keepdim, out_dtype, false)
}

/// `mean.dim`: the computation dtype must be floating ("mean(): could not infer output dtype.
/// Input dtype must be either a floating point or complex dtype. Got: Long").
pub fn mean_dim(
    self_: &Tensor,
    dim: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<ScalarType>,
    outs: Outs<'_>,
) -> Result<Meta<ReduceInfo>> {
    let in_dtype = dtype_from_self(self_, dtype, true);
    if !in_dtype.is_floating_point() && !in_dtype.is_complex() {
        let (what, got) = match dtype {
            Some(d) => ("Optional", d),
            None => ("Input", self_.dtype()),
        };
        bail!(
            NotImplementedError,
            "mean(): could not infer output dtype. {what} dtype must be either a floating point or complex dtype. Got: {got}"
        );
    }
    let out_dtype = infer_dtype_from_optional(self_, dtype, outs);
    if dtype.is_none() && outs.get(0).is_some() {
        // PyTorch sums into `out`, then divides it in place by the count (a wrapped integer):
        // a bool or integer `out` cannot hold the Float quotient.
        check_result_cast(ScalarType::Float, out_dtype)?;
    }
    reduction_meta(self_, dim, keepdim, out_dtype, false)
}

/// Checks shared by `amax` and `amin`.
fn amax_amin(
    self_: &Tensor,
    dim: &[i64],
    keepdim: bool,
    outs: Outs<'_>,
    name: &str,
) -> Result<Meta<ReduceInfo>> {
    if let Some(out) = outs.get(0) {
        torch_check!(
            self_.dtype() == out.dtype(),
            "Expected the dtype for input and out to match, but got {} for input's dtype and {} for out's dtype.",
            self_.dtype(),
            out.dtype()
        );
    }
    if self_.numel() == 0 {
        zero_numel_check_dims(self_, dim, &format!("{name}()"))?;
    }
    let dtype = outs.get(0).map_or(self_.dtype(), Tensor::dtype);
    reduction_meta(self_, Some(dim), keepdim, dtype, false)
}

/// `amax`.
pub fn amax(
    self_: &Tensor,
    dim: &[i64],
    keepdim: bool,
    outs: Outs<'_>,
) -> Result<Meta<ReduceInfo>> {
    amax_amin(self_, dim, keepdim, outs, "amax")
}

/// `amin`.
pub fn amin(
    self_: &Tensor,
    dim: &[i64],
    keepdim: bool,
    outs: Outs<'_>,
) -> Result<Meta<ReduceInfo>> {
    amax_amin(self_, dim, keepdim, outs, "amin")
}

/// `aminmax`: two outputs of the input's dtype, reduced over `dim` or over everything (a
/// full reduction keeps every dimension as 1 with `keepdim`). A full reduction of an empty
/// input has no identity; a dimension is checked like `max.dim`'s ("aminmax: Expected
/// reduction dim 0 to have non-zero size.").
pub fn aminmax(
    self_: &Tensor,
    dim: Option<i64>,
    keepdim: bool,
    _outs: Outs<'_>,
) -> Result<Meta<ReduceInfo>> {
    let sizes = self_.sizes();
    let (shape, mask) = match dim {
        Some(d) => {
            let w = wrap_dim(d, sizes.len())?;
            if self_.numel() == 0 {
                zero_numel_check_dim(self_, w as i64, "aminmax")?;
            }
            let mask = if sizes.is_empty() { 1 } else { 1u64 << w };
            (reduction_shape(&sizes, mask, keepdim), mask)
        }
        None => {
            torch_check!(
                self_.numel() > 0,
                "aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity."
            );
            let mask = make_dim_mask(None, sizes.len(), false)?;
            let shape: DimVec = if keepdim {
                sizes.iter().map(|_| 1).collect()
            } else {
                DimVec::new()
            };
            (shape, mask)
        }
    };
    let spec = OutputSpec::contiguous(&shape, self_.dtype(), self_.device());
    Ok(Meta::new([spec.clone(), spec], ReduceInfo { mask }))
}

/// Shared by `max.dim` and `min.dim`: values of the input's dtype and `Long` indices.
fn minmax_dim(self_: &Tensor, dim: i64, keepdim: bool, name: &str) -> Result<Meta<DimInfo>> {
    let sizes = self_.sizes();
    let d = wrap_dim(dim, sizes.len())?;
    zero_numel_check_dim(self_, d as i64, name)?;
    let mask = if sizes.is_empty() { 1 } else { 1u64 << d };
    let shape = reduction_shape(&sizes, mask, keepdim);
    Ok(Meta::new(
        [
            OutputSpec::contiguous(&shape, self_.dtype(), self_.device()),
            OutputSpec::contiguous(&shape, ScalarType::Long, self_.device()),
        ],
        DimInfo { dim: d },
    ))
}

/// `max.dim`.
pub fn max_dim(self_: &Tensor, dim: i64, keepdim: bool, _outs: Outs<'_>) -> Result<Meta<DimInfo>> {
    minmax_dim(self_, dim, keepdim, "max()")
}

/// `min.dim`.
pub fn min_dim(self_: &Tensor, dim: i64, keepdim: bool, _outs: Outs<'_>) -> Result<Meta<DimInfo>> {
    minmax_dim(self_, dim, keepdim, "min()")
}

/// Shared by `argmax` and `argmin`.
fn arg_minmax(
    self_: &Tensor,
    dim: Option<i64>,
    keepdim: bool,
    name: &str,
) -> Result<Meta<ReduceInfo>> {
    torch_check_not_implemented!(
        self_.dtype() != ScalarType::Bool,
        "{name}(): does not support bool input"
    );
    match dim {
        Some(d) => {
            let w = wrap_dim(d, self_.dim())?;
            zero_numel_check_dim(self_, w as i64, &format!("{name}()"))?;
        }
        None => torch_check_index!(
            self_.numel() != 0,
            "{name}(): Expected reduction dim to be specified for input.numel() == 0."
        ),
    }
    let dims: Option<&[i64]> = dim.as_ref().map(std::slice::from_ref);
    reduction_meta(self_, dims, keepdim, ScalarType::Long, false)
}

/// `argmax`.
pub fn argmax(
    self_: &Tensor,
    dim: Option<i64>,
    keepdim: bool,
    _outs: Outs<'_>,
) -> Result<Meta<ReduceInfo>> {
    arg_minmax(self_, dim, keepdim, "argmax")
}

/// `argmin`.
pub fn argmin(
    self_: &Tensor,
    dim: Option<i64>,
    keepdim: bool,
    _outs: Outs<'_>,
) -> Result<Meta<ReduceInfo>> {
    arg_minmax(self_, dim, keepdim, "argmin")
}

/// The result dtype of `all` / `any`: the caller's (`Bool` or `Byte` only), else `Byte` for a
/// `Byte` input (PyTorch's uint8 compatibility) and `Bool` otherwise.
fn all_any_dtype(self_: &Tensor, outs: Outs<'_>, name: &str) -> Result<ScalarType> {
    match outs.get(0) {
        Some(out) => {
            torch_check!(
                matches!(out.dtype(), ScalarType::Bool | ScalarType::Byte),
                "{name} only supports bool tensor for result, got: {}",
                out.dtype()
            );
            Ok(out.dtype())
        }
        None if self_.dtype() == ScalarType::Byte => Ok(ScalarType::Byte),
        None => Ok(ScalarType::Bool),
    }
}

macro_rules! all_any_meta {
    ($name:literal, $dim:ident, $dims:ident, $all:ident) => {
        #[doc = concat!("`", $name, ".dim`.")]
        pub fn $dim(
            self_: &Tensor,
            dim: i64,
            keepdim: bool,
            outs: Outs<'_>,
        ) -> Result<Meta<ReduceInfo>> {
            let dtype = all_any_dtype(self_, outs, $name)?;
            reduction_meta(self_, Some(&[dim]), keepdim, dtype, false)
        }

        #[doc = concat!("`", $name, ".dims`: an empty list reduces no dimension.")]
        pub fn $dims(
            self_: &Tensor,
            dim: Option<&[i64]>,
            keepdim: bool,
            outs: Outs<'_>,
        ) -> Result<Meta<ReduceInfo>> {
            let dtype = all_any_dtype(self_, outs, $name)?;
            reduction_meta(self_, dim, keepdim, dtype, true)
        }

        #[doc = concat!("`", $name, "` over every element.")]
        pub fn $all(self_: &Tensor, outs: Outs<'_>) -> Result<Meta<ReduceInfo>> {
            let dtype = all_any_dtype(self_, outs, $name)?;
            reduction_meta(self_, None, false, dtype, false)
        }
    };
}
all_any_meta!("all", all_dim, all_dims, all);
all_any_meta!("any", any_dim, any_dims, any);

/// Shared by `cumsum` and `cumprod`: same shape; integral and bool inputs promote to `Long`
/// unless a dtype or an output is given.
fn cum_op(
    self_: &Tensor,
    dim: i64,
    dtype: Option<ScalarType>,
    outs: Outs<'_>,
) -> Result<Meta<DimInfo>> {
    let d = wrap_dim(dim, self_.dim())?;
    let out_dtype = match (dtype, outs.get(0)) {
        (Some(t), _) => t,
        (None, Some(out)) => out.dtype(),
        (None, None) => dtype_from_self(self_, None, true),
    };
    Ok(Meta::new(
        [OutputSpec::contiguous(
            &self_.sizes(),
            out_dtype,
            self_.device(),
        )],
        DimInfo { dim: d },
    ))
}

/// `cumsum`.
pub fn cumsum(
    self_: &Tensor,
    dim: i64,
    dtype: Option<ScalarType>,
    outs: Outs<'_>,
) -> Result<Meta<DimInfo>> {
    cum_op(self_, dim, dtype, outs)
}

/// `cumprod`.
pub fn cumprod(
    self_: &Tensor,
    dim: i64,
    dtype: Option<ScalarType>,
    outs: Outs<'_>,
) -> Result<Meta<DimInfo>> {
    cum_op(self_, dim, dtype, outs)
}

/// Shared by `_softmax` and `_log_softmax`: same shape, `Float` when `half_to_float`.
fn softmax_meta(input: &Tensor, dim: i64, half_to_float: bool) -> Result<Meta<DimInfo>> {
    let d = wrap_dim(dim, input.dim())?;
    let dtype = if half_to_float {
        ScalarType::Float
    } else {
        input.dtype()
    };
    Ok(Meta::new(
        [OutputSpec::contiguous(
            &input.sizes(),
            dtype,
            input.device(),
        )],
        DimInfo { dim: d },
    ))
}

/// `_softmax`.
pub fn _softmax(
    self_: &Tensor,
    dim: i64,
    half_to_float: bool,
    _outs: Outs<'_>,
) -> Result<Meta<DimInfo>> {
    softmax_meta(self_, dim, half_to_float)
}

/// `_log_softmax`.
pub fn _log_softmax(
    self_: &Tensor,
    dim: i64,
    half_to_float: bool,
    _outs: Outs<'_>,
) -> Result<Meta<DimInfo>> {
    softmax_meta(self_, dim, half_to_float)
}

/// Formats a number as C++'s `operator<<` does (`%g`: six significant digits), which is how
/// PyTorch prints a `Scalar` in messages (`-1`, `2.5`, `inf`, `-1.23457e+08`).
pub fn cpp_scalar_string(s: Scalar) -> String {
    match s {
        Scalar::Bool(b) => if b { "true" } else { "false" }.to_owned(),
        Scalar::Int(i) => i.to_string(),
        Scalar::Float(v) => cpp_g(v),
    }
}

fn cpp_g(v: f64) -> String {
    if v.is_nan() {
        return "nan".to_owned();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    // Round to six significant digits first: the exponent of the rounded value decides the
    // notation.
    let sci = format!("{v:.5e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let strip = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            s.to_owned()
        }
    };
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", strip(mantissa), exp.abs())
    } else {
        let decimals = usize::try_from(5 - exp).unwrap_or(0);
        strip(&format!("{v:.decimals$}"))
    }
}

/// `linalg_vector_norm`: floating input, an optional floating dtype the input converts to
/// without narrowing, and no `inf` / negative norm over an empty reduction.
pub fn linalg_vector_norm(
    self_: &Tensor,
    ord: Scalar,
    dim: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<ScalarType>,
    _outs: Outs<'_>,
) -> Result<Meta<ReduceInfo>> {
    let self_dtype = self_.dtype();
    torch_check_not_implemented!(
        self_dtype.is_floating_point() || self_dtype.is_complex(),
        "linalg.vector_norm: Expected a floating point or complex tensor as input. Got {self_dtype}"
    );
    let p = ord.to_f64();
    if self_.numel() == 0 && (p < 0.0 || p == f64::INFINITY) {
        let dims = dim.unwrap_or(&[]);
        torch_check!(
            !dims.is_empty(),
            "linalg.vector_norm cannot compute the {} norm on an empty tensor because the operation does not have an identity",
            cpp_scalar_string(ord)
        );
        for &d in dims {
            torch_check!(
                self_.size(d)? != 0,
                "linalg.vector_norm cannot compute the {} norm on the dimension {d}because this dimension is empty and the operation does not have an identity",
                cpp_scalar_string(ord)
            );
        }
    }
    if let Some(d) = dtype {
        torch_check!(
            d.is_floating_point() || d.is_complex(),
            "linalg.vector_norm: dtype should be floating point or complex, but got {d}"
        );
        torch_check!(
            self_dtype.is_complex() == d.is_complex(),
            "linalg.vector_norm: dtype should be {} for {} inputs, but got {d}",
            if self_dtype.is_complex() {
                "complex"
            } else {
                "real"
            },
            if self_dtype.is_complex() {
                "complex"
            } else {
                "real"
            }
        );
        torch_check!(
            promote_types(self_dtype, d) == d,
            "linalg.vector_norm: the dtype of the input ({self_dtype}) should be convertible without narrowing to the specified dtype ({d})"
        );
    }
    reduction_meta(self_, dim, keepdim, dtype.unwrap_or(self_dtype), false)
}

/// PyTorch's check in the full reductions `max()` / `min()`: an empty input has no extreme.
pub fn check_nonempty_all_reduce(self_: &Tensor, name: &str) -> Result<()> {
    torch_check!(
        self_.numel() > 0,
        "{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument."
    );
    Ok(())
}

/// The checks of `max.unary_out` / `min.unary_out`: `out` on `self`'s device, of a dtype
/// `self` casts to. (`out` is then resized to 0-dim.)
pub fn check_unary_extreme_out(self_: &Tensor, out: &Tensor) -> Result<()> {
    torch_check!(
        self_.device() == out.device(),
        "Expected self.device() == out.device() to be true, but got false.  (Could this error message be improved?  If so, please report an enhancement request to PyTorch.)"
    );
    torch_check!(
        can_cast(self_.dtype(), out.dtype()),
        "Expected canCast( typeMetaToScalarType(self.dtype()), typeMetaToScalarType(out.dtype())) to be true, but got false.  (Could this error message be improved?  If so, please report an enhancement request to PyTorch.)"
    );
    Ok(())
}

/// The checks and output shape shared by `var`, `std` and `var_mean` (`.correction`).
#[derive(Clone, Debug)]
pub struct StdVarSetup {
    /// The reduced dimensions.
    pub mask: u64,
    /// The result's shape.
    pub shape: DimVec,
    /// `correction` as a number (1 when absent).
    pub correction: f64,
}

/// PyTorch's `std_var_all_cpu` / `std_var_out` checks: floating inputs only, a valid dimension
/// list. `fname` is the operator (`"var"`, `"std"` or `"var_mean"`).
fn std_var_setup(
    fname: &str,
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
) -> Result<StdVarSetup> {
    let msg_name = if fname == "var_mean" || fname == "std_mean" {
        fname
    } else {
        "std and var"
    };
    if !self_.dtype().is_floating_point() {
        bail!(
            NotImplementedError,
            "{msg_name} only support floating point and complex dtypes"
        );
    }
    let correction = correction.map_or(1.0, Scalar::to_f64);
    let sizes = self_.sizes();
    let mask = make_dim_mask(dim, sizes.len(), false)?;
    Ok(StdVarSetup {
        mask,
        shape: reduction_shape(&sizes, mask, keepdim),
        correction,
    })
}

/// `var` / `std` into `result` up to the computation, for the CPU and Meta kernels alike: the
/// checks, `result` resized to the reduced shape and checked to hold the result's dtype, and
/// the degrees-of-freedom warning.
pub fn prepare_std_var_out(
    fname: &str,
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
    result: &Tensor,
) -> Result<StdVarSetup> {
    let s = std_var_setup(fname, self_, dim, correction, keepdim)?;
    crate::structured::resize_output(result, &s.shape)?;
    check_result_cast(self_.dtype(), result.dtype())?;
    warn_degrees_of_freedom(fname, self_, result.numel(), s.correction);
    Ok(s)
}

/// `var_mean`'s checks and its two (contiguous) outputs, with the degrees-of-freedom warning.
pub fn allocate_var_mean(
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
) -> Result<(StdVarSetup, Tensor, Tensor)> {
    let s = std_var_setup("var_mean", self_, dim, correction, keepdim)?;
    let var = Tensor::allocate(&s.shape, self_.dtype(), self_.device())?;
    let mean = Tensor::allocate(&s.shape, self_.dtype(), self_.device())?;
    warn_degrees_of_freedom("var_mean", self_, var.numel(), s.correction);
    Ok((s, var, mean))
}

/// PyTorch's warning when `correction` leaves no degrees of freedom (it depends on shapes
/// only, so Meta tensors warn too).
fn warn_degrees_of_freedom(fname: &str, self_: &Tensor, out_numel: i64, correction: f64) {
    let per_output = if out_numel == 0 {
        0
    } else {
        self_.numel() / out_numel
    };
    if per_output as f64 - correction <= 0.0 {
        switchyard_dispatch::warnings::warn(format!(
            "{fname}(): degrees of freedom is <= 0. Correction should be strictly less than the reduction factor (input numel divided by output numel)."
        ));
    }
}

/// `canCast` with PyTorch's "result type Float can't be cast to the desired output type Long".
pub fn check_result_cast(from: ScalarType, to: ScalarType) -> Result<()> {
    torch_check!(
        can_cast(from, to),
        "result type {from} can't be cast to the desired output type {to}"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpp_formatting_matches_ostream() {
        assert_eq!(cpp_scalar_string(Scalar::Float(-1.0)), "-1");
        assert_eq!(cpp_scalar_string(Scalar::Float(-2.5)), "-2.5");
        assert_eq!(cpp_scalar_string(Scalar::Float(-1e-7)), "-1e-07");
        assert_eq!(cpp_scalar_string(Scalar::Float(-1e20)), "-1e+20");
        assert_eq!(
            cpp_scalar_string(Scalar::Float(-123_456_789.0)),
            "-1.23457e+08"
        );
        assert_eq!(cpp_scalar_string(Scalar::Float(f64::INFINITY)), "inf");
        assert_eq!(cpp_scalar_string(Scalar::Float(0.0001)), "0.0001");
        assert_eq!(cpp_scalar_string(Scalar::Float(123_456.0)), "123456");
        assert_eq!(cpp_scalar_string(Scalar::Int(-3)), "-3");
    }

    #[test]
    fn masks_and_shapes() {
        assert_eq!(make_dim_mask(None, 3, false).unwrap(), 0b111);
        assert_eq!(make_dim_mask(Some(&[]), 3, false).unwrap(), 0b111);
        assert_eq!(make_dim_mask(Some(&[]), 3, true).unwrap(), 0);
        assert_eq!(make_dim_mask(Some(&[-1, 0]), 3, false).unwrap(), 0b101);
        assert_eq!(make_dim_mask(None, 0, false).unwrap(), 1);
        assert_eq!(
            make_dim_mask(Some(&[0, -3]), 3, false)
                .unwrap_err()
                .message(),
            "dim 0 appears multiple times in the list of dims"
        );
        assert_eq!(reduction_shape(&[2, 3, 4], 0b101, false).as_slice(), &[3]);
        assert_eq!(
            reduction_shape(&[2, 3, 4], 0b101, true).as_slice(),
            &[1, 3, 1]
        );
        assert_eq!(reduction_shape(&[], 1, true).as_slice(), &[] as &[i64]);
    }
}
