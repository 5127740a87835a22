//! Hand-written backward helpers that `derivatives.yaml` formulas call (PyTorch's
//! `FunctionsManual.cpp`): anything longer than an expression lives here, once.
//!
//! Every helper takes and returns what the formulas have at hand: `&Tensor` gradients and
//! saved values, and returns `Result<Tensor>` (or a tuple of optional gradients for formulas
//! that give several inputs at once, computing only those `grad_input_mask` asks for).

use switchyard_core::local_dispatch::is_grad_enabled;
use switchyard_core::shape::wrap_dim;
use switchyard_core::{Device, DimVec, Error, MemoryFormat, Result, Scalar, ScalarType, Tensor};

use crate::graph::Grad;
use crate::joined::{JoinedGrad, join};
use switchyard_ops::op;

/// A tensor's shape and layout without its data (PyTorch's `TensorGeometry`), saved where
/// a formula needs only that.
#[derive(Clone, Debug)]
pub struct TensorGeometry {
    /// Sizes.
    pub sizes: DimVec,
    /// Strides.
    pub strides: DimVec,
    /// Storage offset.
    pub storage_offset: i64,
    /// Element type.
    pub dtype: ScalarType,
    /// Device.
    pub device: Device,
}

impl TensorGeometry {
    /// The geometry of `t`.
    pub fn of(t: &Tensor) -> TensorGeometry {
        let g = t.geometry();
        TensorGeometry {
            sizes: g.sizes().iter().copied().collect(),
            strides: g.strides().iter().copied().collect(),
            storage_offset: g.storage_offset(),
            dtype: t.dtype(),
            device: t.device(),
        }
    }

    /// Zeros of this shape, dtype and device (PyTorch's `zeros_like(self)` in a formula,
    /// which saves only this).
    pub fn zeros(&self) -> Result<Tensor> {
        op::zeros::call(&self.sizes, Some(self.dtype), None, Some(self.device), None)
    }

    /// Zeros of this shape with `like`'s dtype and device (a gradient's buffer).
    pub fn zeros_as(&self, like: &Tensor) -> Result<Tensor> {
        zeros_sized(&self.sizes, like)
    }
}

/// A tensor's shape, dtype and device (saved by `zeros_like(x)` in a formula).
pub type TypeAndSize = TensorGeometry;

/// The error of a formula that is not implemented (PyTorch's `not_implemented`).
pub fn not_implemented(name: &str) -> Result<Tensor> {
    Err(Error::not_implemented(format!(
        "the derivative for '{name}' is not implemented."
    )))
}

/// `sum_to` lives in `switchyard_ops::native` (functionalization's inverse of `expand` uses it
/// too); formulas name it from here.
pub use switchyard_ops::native::sum_to;

/// `grad * s`, skipping the multiplication when `s` is 1 (PyTorch's `maybe_multiply`).
pub fn maybe_multiply(t: &Tensor, s: Scalar) -> Result<Tensor> {
    let is_one = match s {
        Scalar::Int(1) | Scalar::Bool(true) => true,
        Scalar::Float(f) => f == 1.0,
        _ => false,
    };
    if is_one {
        Ok(t.clone())
    } else {
        op::mul_Scalar::call(t, s)
    }
}

/// Wraps a possibly negative dimension.
pub fn wrap(dim: i64, ndim: usize) -> Result<i64> {
    Ok(wrap_dim(dim, ndim)? as i64)
}

/// The storage indices `[min, max]` that a geometry touches, or `None` when it is empty.
fn storage_extent(sizes: &[i64], strides: &[i64], offset: i64) -> Option<(i64, i64)> {
    if sizes.contains(&0) {
        return None;
    }
    let (mut lo, mut hi) = (offset, offset);
    for (&n, &s) in sizes.iter().zip(strides) {
        let span = (n - 1) * s;
        if span < 0 {
            lo += span;
        } else {
            hi += span;
        }
    }
    Some((lo, hi))
}

/// Whether two elements of a geometry may share a storage position (PyTorch's
/// `_maybe_overlapping_memory`): after sorting by stride, some stride does not clear the
/// extent of the smaller ones.
fn maybe_overlapping(sizes: &[i64], strides: &[i64]) -> bool {
    let mut dims: Vec<(i64, i64)> = sizes
        .iter()
        .zip(strides)
        .filter(|(n, _)| **n > 1)
        .map(|(&n, &s)| (s.abs(), n))
        .collect();
    dims.sort_unstable();
    let mut extent = 0i64;
    for (stride, n) in dims {
        if stride <= extent {
            return true;
        }
        extent += (n - 1) * stride;
    }
    false
}

/// The storage index of every element of a geometry, as an int64 tensor of its shape on
/// `device`.
fn storage_indices(
    sizes: &[i64],
    strides: &[i64],
    offset: i64,
    len: i64,
    device: Device,
) -> Result<Tensor> {
    let all = op::arange_start::call(
        Scalar::Int(0),
        Scalar::Int(len),
        Some(ScalarType::Long),
        None,
        Some(device),
        None,
    )?;
    op::as_strided::call(&all, sizes, strides, Some(offset))
}

/// The gradient of `as_strided` (PyTorch's `as_strided_backward`): the gradient is scattered
/// (summed where the view repeats storage) into the storage both geometries cover, and read
/// back with the input's geometry, divided by how often the input repeats each position.
pub fn as_strided_backward(
    grad: &Tensor,
    input: &TensorGeometry,
    size: &[i64],
    stride: &[i64],
    storage_offset: Option<i64>,
) -> Result<Tensor> {
    let out_offset = storage_offset.unwrap_or(input.storage_offset);
    let Some((in_lo, in_hi)) = storage_extent(&input.sizes, &input.strides, input.storage_offset)
    else {
        return op::zeros::call(
            &input.sizes,
            Some(grad.dtype()),
            None,
            Some(grad.device()),
            None,
        );
    };
    let out_extent = storage_extent(size, stride, out_offset);
    let (lo, hi) = match out_extent {
        Some((a, b)) => (in_lo.min(a), in_hi.max(b)),
        None => (in_lo, in_hi),
    };
    let len = hi - lo + 1;
    let device = grad.device();
    let mut storage = op::zeros::call(&[len], Some(grad.dtype()), None, Some(device), None)?;
    if out_extent.is_some() {
        let idx = storage_indices(size, stride, out_offset - lo, len, device)?;
        let idx = op::reshape::call(&idx, &[-1])?;
        let src = op::reshape::call(grad, &[-1])?;
        storage = op::scatter_add::call(&storage, 0, &idx, &src)?;
    }
    if maybe_overlapping(&input.sizes, &input.strides) {
        let idx = storage_indices(
            &input.sizes,
            &input.strides,
            input.storage_offset - lo,
            len,
            device,
        )?;
        let idx = op::reshape::call(&idx, &[-1])?;
        let ones = op::ones_like::call(&idx, Some(grad.dtype()), None, None, None, None)?;
        let zeros = op::zeros::call(&[len], Some(grad.dtype()), None, Some(device), None)?;
        let count = op::scatter_add::call(&zeros, 0, &idx, &ones)?;
        storage = op::div_Tensor::call(&storage, &count)?;
    }
    op::as_strided::call(
        &storage,
        &input.sizes,
        &input.strides,
        Some(input.storage_offset - lo),
    )
}

// ---------------------------------------------------------------------------------------------
// Small building blocks

/// Zeros of `sizes` with `like`'s dtype and device (PyTorch's `grad.new_zeros(sizes)`).
pub fn zeros_sized(sizes: &[i64], like: &Tensor) -> Result<Tensor> {
    op::zeros::call(sizes, Some(like.dtype()), None, Some(like.device()), None)
}

/// `zeros_like(t)`.
pub fn zeros_like(t: &Tensor) -> Result<Tensor> {
    op::zeros_like::call(t, None, None, None, None, None)
}

/// `t.contiguous()`.
pub fn contiguous(t: &Tensor) -> Result<Tensor> {
    op::contiguous::call(t, MemoryFormat::Contiguous)
}

fn scalar_f(v: f64) -> Scalar {
    Scalar::Float(v)
}

fn mul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    op::mul_Tensor::call(a, b)
}

fn div(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    op::div_Tensor::call(a, b)
}

fn add(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    op::add_Tensor::call(a, b, Scalar::Int(1))
}

fn sub(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    op::sub_Tensor::call(a, b, Scalar::Int(1))
}

fn mul_s(a: &Tensor, s: f64) -> Result<Tensor> {
    op::mul_Scalar::call(a, scalar_f(s))
}

fn add_s(a: &Tensor, s: f64) -> Result<Tensor> {
    op::add_Scalar::call(a, scalar_f(s), Scalar::Int(1))
}

/// `v - a`.
fn rsub_s(a: &Tensor, v: f64) -> Result<Tensor> {
    add_s(&op::neg::call(a)?, v)
}

/// `where(mask, t, 0)`.
fn keep_where(mask: &Tensor, t: &Tensor) -> Result<Tensor> {
    op::where_ScalarOther::call(mask, t, Scalar::Int(0))
}

/// `Σ` over `dims` keeping them.
fn sum_keep(t: &Tensor, dims: &[i64]) -> Result<Tensor> {
    op::sum_dim_IntList::call(t, Some(dims), true, None)
}

fn arange(n: i64, device: Device) -> Result<Tensor> {
    op::arange_start::call(
        Scalar::Int(0),
        Scalar::Int(n),
        Some(ScalarType::Long),
        None,
        Some(device),
        None,
    )
}

fn long_tensor(v: Vec<i64>, device: Device) -> Result<Tensor> {
    let n = v.len() as i64;
    let t = Tensor::from_vec(v, &[n])?;
    if t.device() == device {
        Ok(t)
    } else {
        op::_to_copy::call(&t, None, None, Some(device), None, false, None)
    }
}

fn wrap_dims(dims: &[i64], ndim: usize) -> Result<Vec<i64>> {
    dims.iter().map(|&d| wrap(d, ndim)).collect()
}

/// Unsqueezes `t` at every dim of `dims` (wrapped against `ndim`, the rank after), in
/// increasing order (PyTorch's `unsqueeze_multiple`).
pub fn unsqueeze_multiple(t: &Tensor, dims: &[i64], ndim: usize) -> Result<Tensor> {
    let mut dims = wrap_dims(dims, ndim)?;
    dims.sort_unstable();
    dims.dedup();
    let mut r = t.clone();
    for d in dims {
        r = op::unsqueeze::call(&r, d)?;
    }
    Ok(r)
}

/// The reduced dims of a reduction over `dim` (`None` or empty: all of them).
fn reduced_dims(dim: Option<&[i64]>, ndim: usize) -> Result<Vec<i64>> {
    match dim {
        Some(d) if !d.is_empty() => wrap_dims(d, ndim),
        _ => Ok((0..ndim as i64).collect()),
    }
}

/// Restores the dims a reduction removed, so the result broadcasts against its input.
fn restore_reduced_dims(
    t: &Tensor,
    dim: Option<&[i64]>,
    keepdim: bool,
    ndim: usize,
) -> Result<Tensor> {
    if keepdim || ndim == 0 {
        return Ok(t.clone());
    }
    unsqueeze_multiple(t, &reduced_dims(dim, ndim)?, ndim)
}

// ---------------------------------------------------------------------------------------------
// Linear algebra

/// Whether a matrix is stored column-major (the layout of `w.t()`): the gradient is then
/// produced in that layout too, so that the transpose back to the parameter is free and
/// accumulating it needs no copy.
fn is_column_major(m: &Tensor) -> bool {
    let (sizes, strides) = (m.sizes(), m.strides());
    sizes.len() == 2 && strides[0] == 1 && strides[1] == sizes[0]
}

/// The gradient of `mat1` in `alpha * mat1 @ mat2` (PyTorch's `mm_mat1_backward`), in
/// `mat1`'s layout when that is column-major.
pub fn mm_mat1_backward(
    grad: &Tensor,
    mat1: &Tensor,
    mat2: &Tensor,
    alpha: Scalar,
) -> Result<Tensor> {
    if is_column_major(mat1) {
        // (grad @ mat2ᵀ)ᵀ = mat2 @ gradᵀ, computed row-major and viewed back.
        let product = op::mm::call(mat2, &op::t::call(grad)?)?;
        return maybe_multiply(&op::t::call(&product)?, alpha);
    }
    maybe_multiply(&op::mm::call(grad, &op::t::call(mat2)?)?, alpha)
}

/// The gradient of `mat2` in `alpha * mat1 @ mat2` (PyTorch's `mm_mat2_backward`), in
/// `mat2`'s layout when that is column-major (a `Linear` weight seen through `t()`).
pub fn mm_mat2_backward(
    grad: &Tensor,
    mat1: &Tensor,
    mat2: &Tensor,
    alpha: Scalar,
) -> Result<Tensor> {
    if is_column_major(mat2) {
        // (mat1ᵀ @ grad)ᵀ = gradᵀ @ mat1, computed row-major and viewed back.
        let product = op::mm::call(&op::t::call(grad)?, mat1)?;
        return maybe_multiply(&op::t::call(&product)?, alpha);
    }
    maybe_multiply(&op::mm::call(&op::t::call(mat1)?, grad)?, alpha)
}

// ---------------------------------------------------------------------------------------------
// Pointwise

/// `atan2`'s gradients (PyTorch's `atan2_backward`).
pub fn atan2_backward(
    grad: &Tensor,
    self_: &Tensor,
    other: &Tensor,
    mask: [bool; 2],
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let recip = op::reciprocal::call(&add(&mul(self_, self_)?, &mul(other, other)?)?)?;
    let g = mul(grad, &recip)?;
    let gs = if mask[0] { Some(mul(&g, other)?) } else { None };
    let go = if mask[1] {
        Some(mul(&g, &op::neg::call(self_)?)?)
    } else {
        None
    };
    Ok((gs, go))
}

/// `erf`'s gradient: `2/√π · exp(-x²) · grad`.
pub fn erf_backward(grad: &Tensor, self_: &Tensor) -> Result<Tensor> {
    let e = op::exp::call(&op::neg::call(&mul(self_, self_)?)?)?;
    mul_s(&mul(&e, grad)?, std::f64::consts::FRAC_2_SQRT_PI)
}

/// `sigmoid`'s gradient from its output (PyTorch's `sigmoid_backward`).
pub fn sigmoid_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    let one_minus = rsub_s(result, 1.0)?;
    mul(grad, &mul(result, &one_minus)?)
}

/// `tanh`'s gradient from its output (PyTorch's `tanh_backward`).
pub fn tanh_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    mul(grad, &rsub_s(&mul(result, result)?, 1.0)?)
}

/// `relu`'s gradient: zero where the output is at most `threshold`, `grad` elsewhere, so a
/// NaN output passes the gradient (PyTorch's `threshold_backward`).
///
/// PyTorch's `threshold_backward` is an operator whose derivative for `self` is
/// `zeros_like(grad)`: under create_graph its result requires grad through `self` too.
pub fn threshold_backward(grad: &Tensor, result: &Tensor, threshold: f64) -> Result<Tensor> {
    let r = op::where_ScalarSelf::call(
        &op::le_Scalar::call(result, scalar_f(threshold))?,
        Scalar::Int(0),
        grad,
    )?;
    join(
        r,
        &[Some(result)],
        JoinedGrad::ZerosLikeGrad,
        "ThresholdBackwardBackward0",
    )
}

/// `self.sgn()` of a real tensor, as PyTorch's formulas use it (`abs`, vector norms): the
/// sign, whose gradient (PyTorch's `sgn_backward` of a real input) is a fresh zero tensor of
/// `self`'s shape, contiguous.
pub fn sgn(self_: &Tensor) -> Result<Tensor> {
    let s = {
        let _no_grad = crate::mode::no_grad();
        op::sign::call(self_)?
    };
    join(s, &[Some(self_)], JoinedGrad::Zeros, "SgnBackward0")
}

/// `silu`'s gradient: `grad · σ(x) · (1 + x · (1 - σ(x)))` (PyTorch's
/// `infinitely_differentiable_silu_backward`).
pub fn silu_backward(grad: &Tensor, self_: &Tensor) -> Result<Tensor> {
    let s = op::sigmoid::call(self_)?;
    let inner = add_s(&mul(self_, &rsub_s(&s, 1.0)?)?, 1.0)?;
    mul(grad, &mul(&s, &inner)?)
}

/// `gelu`'s gradient, exact or with the tanh approximation (PyTorch's `gelu_backward`).
pub fn gelu_backward(grad: &Tensor, self_: &Tensor, approximate: &str) -> Result<Tensor> {
    match approximate {
        "tanh" => {
            let beta = std::f64::consts::SQRT_2 * std::f64::consts::FRAC_2_SQRT_PI * 0.5;
            let kappa = 0.044715;
            let x_sq = mul(self_, self_)?;
            let x_cube = mul(&x_sq, self_)?;
            let inner = mul_s(&add(self_, &mul_s(&x_cube, kappa)?)?, beta)?;
            let t = op::tanh::call(&inner)?;
            let left = mul_s(self_, 0.5)?;
            let right = add_s(&t, 1.0)?;
            let left_derivative = mul_s(&right, 0.5)?;
            let tanh_derivative = rsub_s(&mul(&t, &t)?, 1.0)?;
            let inner_derivative = mul_s(&add_s(&mul_s(&x_sq, 3.0 * kappa)?, 1.0)?, beta)?;
            let right_derivative = mul(&left, &mul(&tanh_derivative, &inner_derivative)?)?;
            mul(grad, &add(&left_derivative, &right_derivative)?)
        }
        "none" => {
            let cdf = mul_s(
                &add_s(
                    &op::erf::call(&mul_s(self_, std::f64::consts::FRAC_1_SQRT_2)?)?,
                    1.0,
                )?,
                0.5,
            )?;
            let pdf = mul_s(
                &op::exp::call(&mul_s(&mul(self_, self_)?, -0.5)?)?,
                0.5 * std::f64::consts::FRAC_2_SQRT_PI * std::f64::consts::FRAC_1_SQRT_2,
            )?;
            mul(grad, &add(&cdf, &mul(self_, &pdf)?)?)
        }
        other => Err(Error::value(format!(
            "approximate argument must be either none or tanh, got {other}"
        ))),
    }
}

/// `self / other`'s gradient for `self` (PyTorch's `div_tensor_self_backward`): none
/// (zeros) with a rounding mode.
pub fn div_tensor_self_backward(
    grad: &Tensor,
    other: &Tensor,
    rounding_mode: Option<&str>,
) -> Result<Tensor> {
    if rounding_mode.is_some() {
        return zeros_like(grad);
    }
    div(grad, other)
}

/// `self / other`'s gradient for a scalar `other`.
pub fn div_scalar_self_backward(
    grad: &Tensor,
    other: Scalar,
    rounding_mode: Option<&str>,
) -> Result<Tensor> {
    if rounding_mode.is_some() {
        return zeros_like(grad);
    }
    op::div_Scalar::call(grad, other)
}

/// `self / other`'s gradient for `other`: `-grad · self / other²` (PyTorch's
/// `div_tensor_other_backward`).
pub fn div_tensor_other_backward(
    grad: &Tensor,
    self_: &Tensor,
    other: &Tensor,
    rounding_mode: Option<&str>,
) -> Result<Tensor> {
    if rounding_mode.is_some() {
        return zeros_like(grad);
    }
    let q = div(&div(self_, other)?, other)?;
    mul(&op::neg::call(grad)?, &q)
}

/// `fmod`/`remainder`'s gradient for `other`: `-grad · div(self, other, rounding_mode)`.
pub fn rounded_quotient_backward(
    grad: &Tensor,
    self_: &Tensor,
    other: &Tensor,
    rounding_mode: &str,
) -> Result<Tensor> {
    let q = op::div_Tensor_mode::call(self_, other, Some(rounding_mode))?;
    mul(&op::neg::call(grad)?, &q)
}

/// `remainder(Scalar self, Tensor other)`'s gradient for `other`: `-grad · floor(self / other)`.
pub fn remainder_scalar_tensor_backward(
    grad: &Tensor,
    self_: Scalar,
    other: &Tensor,
) -> Result<Tensor> {
    let num = op::full_like::call(other, self_, None, None, None, None, None)?;
    rounded_quotient_backward(grad, &num, other, "floor")
}

/// The gradient of one operand of `maximum`/`minimum` (and `clamp_min`/`clamp_max` with
/// tensors): all of it where the operand was selected, half of it on ties, none where it was
/// not (zero where `self > other` if `zero_where_greater`, else where `self < other`).
pub fn split_ties_masked(
    grad: &Tensor,
    self_: &Tensor,
    other: &Tensor,
    zero_where_greater: bool,
) -> Result<Tensor> {
    let ties = op::eq_Tensor::call(self_, other)?;
    let split = op::where_self::call(&ties, &mul_s(grad, 0.5)?, grad)?;
    let mask = if zero_where_greater {
        op::gt_Tensor::call(self_, other)?
    } else {
        op::lt_Tensor::call(self_, other)?
    };
    // In place, as PyTorch's `masked_fill_inplace_if_safe`: the result keeps the layout
    // `where` gave it (the operands'), where the out-of-place masked_fill would make it
    // contiguous. `split` is fresh, so nothing else sees the write.
    op::masked_fill__Scalar::call(&split, &mask, Scalar::Int(0))
}

/// `clamp`'s gradient with scalar bounds (PyTorch's `clamp_backward`): the gradient where the
/// input is strictly inside the bounds.
pub fn clamp_backward(
    grad: &Tensor,
    self_: &Tensor,
    min: Option<Scalar>,
    max: Option<Scalar>,
) -> Result<Tensor> {
    let mask = match (min, max) {
        (Some(lo), Some(hi)) => op::logical_and::call(
            &op::gt_Scalar::call(self_, lo)?,
            &op::lt_Scalar::call(self_, hi)?,
        )?,
        (Some(lo), None) => op::gt_Scalar::call(self_, lo)?,
        (None, Some(hi)) => op::lt_Scalar::call(self_, hi)?,
        (None, None) => return Ok(grad.clone()),
    };
    keep_where(&mask, grad)
}

/// The gradient reaching `maximum(self, min)` inside `clamp`, from `minimum(·, max)`.
fn clamp_inner_grad(
    grad: &Tensor,
    self_: &Tensor,
    min: Option<&Tensor>,
    max: &Tensor,
) -> Result<Tensor> {
    let m = match min {
        Some(lo) => op::maximum::call(self_, lo)?,
        None => self_.clone(),
    };
    split_ties_masked(grad, &m, max, true)
}

/// `clamp`'s gradient for `self` with tensor bounds: `clamp` is `minimum(maximum(self, min),
/// max)`, each with its ties split in half.
pub fn clamp_backward_tensor(
    grad: &Tensor,
    self_: &Tensor,
    min: Option<&Tensor>,
    max: Option<&Tensor>,
) -> Result<Tensor> {
    let g = match max {
        Some(hi) => clamp_inner_grad(grad, self_, min, hi)?,
        None => grad.clone(),
    };
    match min {
        Some(lo) => split_ties_masked(&g, self_, lo, false),
        None => Ok(g),
    }
}

/// `clamp`'s gradients for tensor bounds (PyTorch's `clamp_backward_min_max`).
pub fn clamp_backward_min_max(
    grad: &Tensor,
    self_: &Tensor,
    min: Option<&Tensor>,
    max: Option<&Tensor>,
    mask: [bool; 2],
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let mut out = (None, None);
    if mask[0]
        && let Some(lo) = min
    {
        let g = match max {
            Some(hi) => clamp_inner_grad(grad, self_, min, hi)?,
            None => grad.clone(),
        };
        out.0 = Some(split_ties_masked(&g, self_, lo, true)?);
    }
    if mask[1]
        && let Some(hi) = max
    {
        let m = match min {
            Some(lo) => op::maximum::call(self_, lo)?,
            None => self_.clone(),
        };
        out.1 = Some(split_ties_masked(grad, &m, hi, false)?);
    }
    Ok(out)
}

/// `pow(self, exponent)`'s gradient for a scalar exponent (PyTorch's `pow_backward`).
pub fn pow_backward(grad: &Tensor, self_: &Tensor, exponent: Scalar) -> Result<Tensor> {
    if exponent.to_f64() == 0.0 {
        return zeros_like(self_);
    }
    let e1 = match exponent {
        Scalar::Int(i) => Scalar::Int(i - 1),
        other => Scalar::Float(other.to_f64() - 1.0),
    };
    let d = op::mul_Scalar::call(&op::pow_Tensor_Scalar::call(self_, e1)?, exponent)?;
    mul(grad, &d)
}

/// `pow(self, exponent)`'s gradient for `self` with a tensor exponent (PyTorch's
/// `pow_backward_self`): zero where the exponent is zero.
pub fn pow_backward_self(grad: &Tensor, self_: &Tensor, exponent: &Tensor) -> Result<Tensor> {
    let e1 = op::sub_Scalar::call(exponent, Scalar::Int(1), Scalar::Int(1))?;
    let d = mul(
        grad,
        &mul(exponent, &op::pow_Tensor_Tensor::call(self_, &e1)?)?,
    )?;
    // PyTorch's `where(exponent == 0, 0, grad * exponent * self^(exponent - 1))`: the
    // result is laid out like the condition (the exponent's layout).
    op::where_ScalarSelf::call(
        &op::eq_Scalar::call(exponent, Scalar::Int(0))?,
        Scalar::Int(0),
        &d,
    )
}

/// `pow(self, exponent)`'s gradient for the exponent (PyTorch's `pow_backward_exponent`):
/// `grad · result · log(self)`, zero where `self == 0` and `exponent >= 0`.
pub fn pow_backward_exponent(
    grad: &Tensor,
    self_: &Tensor,
    exponent: &Tensor,
    result: &Tensor,
) -> Result<Tensor> {
    let cond = op::logical_and::call(
        &op::eq_Scalar::call(self_, Scalar::Int(0))?,
        &op::ge_Scalar::call(exponent, Scalar::Int(0))?,
    )?;
    let d = mul(result, &op::log::call(self_)?)?;
    mul(
        grad,
        &op::where_ScalarSelf::call(&cond, Scalar::Int(0), &d)?,
    )
}

/// `pow(Scalar self, exponent)`'s gradient for the exponent.
pub fn pow_backward_exponent_scalar_base(
    grad: &Tensor,
    base: Scalar,
    result: &Tensor,
) -> Result<Tensor> {
    let b = base.to_f64();
    if b == 0.0 {
        // log(0) = -inf, but d/de 0^e = 0 for e >= 0.
        let cond = op::ge_Scalar::call(result, Scalar::Int(0))?;
        let d = mul_s(result, f64::NEG_INFINITY)?;
        return mul(
            grad,
            &op::where_ScalarSelf::call(&cond, Scalar::Int(0), &d)?,
        );
    }
    mul(grad, &mul_s(result, b.ln())?)
}

/// `native_dropout`'s scale: `1 / (1 - p)` in training, 1 otherwise.
pub fn dropout_scale(p: f64, train: Option<bool>) -> f64 {
    if train != Some(true) {
        1.0
    } else if p == 1.0 {
        0.0
    } else {
        1.0 / (1.0 - p)
    }
}

/// `native_dropout`'s gradient: `grad · mask · scale` (PyTorch's
/// `infinitely_differentiable_native_dropout_backward`).
pub fn native_dropout_backward(grad: &Tensor, mask: &Tensor, scale: f64) -> Result<Tensor> {
    mul_s(&mul(grad, mask)?, scale)
}

/// A conversion's gradient: back to the input's dtype and device (PyTorch's
/// `_to_copy_backward`).
pub fn _to_copy_backward(grad: &Tensor, dtype: ScalarType, device: Device) -> Result<Tensor> {
    if grad.dtype() == dtype && grad.device() == device {
        return Ok(grad.clone());
    }
    op::_to_copy::call(grad, Some(dtype), None, Some(device), None, false, None)
}

// ---------------------------------------------------------------------------------------------
// Reductions

/// `sum.dim_IntList`'s gradient (PyTorch's `sum_backward`).
pub fn sum_backward(
    grad: &Tensor,
    sizes: &[i64],
    dim: Option<&[i64]>,
    keepdim: bool,
) -> Result<Tensor> {
    let g = restore_reduced_dims(grad, dim, keepdim, sizes.len())?;
    op::expand::call(&g, sizes, false)
}

/// `mean.dim`'s gradient (PyTorch's `mean_backward`).
pub fn mean_backward(
    grad: &Tensor,
    sizes: &[i64],
    dim: Option<&[i64]>,
    numel: i64,
    keepdim: bool,
) -> Result<Tensor> {
    let n = match dim {
        Some(d) if !d.is_empty() => {
            let mut n = 1i64;
            for x in wrap_dims(d, sizes.len())? {
                if let Some(&s) = sizes.get(x as usize) {
                    n *= s;
                }
            }
            n
        }
        _ => numel,
    };
    op::div_Scalar::call(&sum_backward(grad, sizes, dim, keepdim)?, Scalar::Int(n))
}

fn dof(sizes: &[i64], dim: Option<&[i64]>, correction: Option<Scalar>) -> Result<f64> {
    let n: i64 = reduced_dims(dim, sizes.len())?
        .iter()
        .filter_map(|&d| sizes.get(d as usize))
        .product();
    let c = correction.map_or(1.0, Scalar::to_f64);
    Ok(n as f64 - c)
}

/// `var`'s gradient: `2 (x - mean) grad / (N - correction)` (PyTorch's `var_backward`).
pub fn var_backward(
    grad: &Tensor,
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
) -> Result<Tensor> {
    let ndim = self_.dim();
    let n = dof(&self_.sizes(), dim, correction)?;
    if (ndim == 0 || dim.is_none()) && n <= 0.0 {
        // No degrees of freedom: PyTorch's `grad * where(self == mean, NaN, inf)` (inf times
        // zero, as 2 / 0 · (x - mean) would give), which does not differentiate through
        // `self`, so under create_graph the gradient requires grad only if `grad` does.
        let mean = op::mean::call(self_, None)?;
        let at_mean = op::eq_Tensor::call(self_, &mean)?;
        let factor = op::where_Scalar::call(&at_mean, scalar_f(f64::NAN), scalar_f(f64::INFINITY))?;
        return mul(grad, &factor);
    }
    let g = restore_reduced_dims(grad, dim, keepdim, ndim)?;
    let dims = reduced_dims(dim, ndim)?;
    let mean = op::mean_dim::call(self_, Some(&dims), true, None)?;
    mul_s(&mul(&g, &sub(self_, &mean)?)?, 2.0 / n)
}

/// `std`'s gradient, through the variance's (PyTorch's `std_backward`).
pub fn std_backward(
    result: &Tensor,
    grad: &Tensor,
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
) -> Result<Tensor> {
    let g = div(grad, &mul_s(result, 2.0)?)?;
    let g = op::masked_fill_Scalar::call(
        &g,
        &op::eq_Scalar::call(result, Scalar::Int(0))?,
        Scalar::Int(0),
    )?;
    var_backward(&g, self_, dim, correction, keepdim)
}

/// `var_mean`'s gradient from both outputs' gradients (PyTorch's `var_mean_backward`).
pub fn var_mean_backward(
    gvar: Option<&Tensor>,
    gmean: Option<&Tensor>,
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
) -> Result<Option<Tensor>> {
    let mut out: Option<Tensor> = None;
    if let Some(g) = gvar {
        out = Some(var_backward(g, self_, dim, correction, keepdim)?);
    }
    if let Some(g) = gmean {
        let m = mean_backward(g, &self_.sizes(), dim, self_.numel(), keepdim)?;
        out = Some(match out {
            Some(o) => add(&o, &m)?,
            None => m,
        });
    }
    Ok(out)
}

/// `prod`'s gradient (PyTorch's `prod_backward`), safe where the input has zeros.
pub fn prod_backward(grad: &Tensor, input: &Tensor, result: &Tensor) -> Result<Tensor> {
    if input.dim() == 0 {
        return Ok(grad.clone());
    }
    let zeros = op::sum::call(&op::eq_Scalar::call(input, Scalar::Int(0))?, None)?.item::<i64>()?;
    if zeros == 0 {
        return mul(grad, &div(result, input)?);
    }
    if zeros > 1 && !is_grad_enabled() {
        // Every product of all-but-one element has a zero factor (PyTorch returns zeros
        // without computing them, whatever NaN or infinity the other elements hold).
        return zeros_like(input);
    }
    let flat = op::reshape::call(&contiguous(input)?, &[-1])?;
    let g = prod_safe_zeros_backward(grad, &flat, 0)?;
    op::reshape::call(&g, &input.sizes())
}

/// `prod.dim_int`'s gradient (PyTorch's `prod_backward` with a dim).
pub fn prod_dim_backward(
    grad: &Tensor,
    input: &Tensor,
    result: &Tensor,
    dim: i64,
    keepdim: bool,
) -> Result<Tensor> {
    if input.dim() == 0 {
        return Ok(grad.clone());
    }
    let dim = wrap(dim, input.dim())?;
    let (grad, result) = if keepdim {
        (grad.clone(), result.clone())
    } else {
        (
            op::unsqueeze::call(grad, dim)?,
            op::unsqueeze::call(result, dim)?,
        )
    };
    if no_zeros(input)? {
        return mul(&grad, &div(&result, input)?);
    }
    prod_safe_zeros_backward(&grad, input, dim)
}

fn no_zeros(t: &Tensor) -> Result<bool> {
    op::all::call(&op::ne_Scalar::call(t, Scalar::Int(0))?)?.item::<bool>()
}

/// The product of all other elements along `dim`, by exclusive cumulative products from
/// both ends (PyTorch's `prod_safe_zeros_backward`).
fn prod_safe_zeros_backward(grad: &Tensor, inp: &Tensor, dim: i64) -> Result<Tensor> {
    let sizes = inp.sizes();
    let n = sizes[dim as usize];
    if n == 1 {
        return op::expand::call(grad, &sizes, false);
    }
    let mut ones_size = sizes.clone();
    ones_size[dim as usize] = 1;
    let ones = op::ones::call(
        &ones_size,
        Some(inp.dtype()),
        None,
        Some(inp.device()),
        None,
    )?;
    let front = op::cat::call(&[ones.clone(), op::narrow::call(inp, dim, 0, n - 1)?], dim)?;
    let exclusive_normal = op::cumprod::call(&front, dim, None)?;
    let back = op::flip::call(&op::narrow::call(inp, dim, 1, n - 1)?, &[dim])?;
    let exclusive_reverse = op::flip::call(
        &op::cumprod::call(&op::cat::call(&[ones, back], dim)?, dim, None)?,
        &[dim],
    )?;
    mul(grad, &mul(&exclusive_normal, &exclusive_reverse)?)
}

/// `cumsum`'s gradient: a reversed cumulative sum (PyTorch's `cumsum_backward`).
pub fn cumsum_backward(grad: &Tensor, dim: i64) -> Result<Tensor> {
    if grad.dim() == 0 || grad.numel() == 0 {
        return Ok(grad.clone());
    }
    let d = wrap(dim, grad.dim())?;
    op::flip::call(
        &op::cumsum::call(&op::flip::call(grad, &[d])?, d, None)?,
        &[d],
    )
}

/// `cumprod`'s gradient (PyTorch's `cumprod_backward`): `Σ_{j≥k} grad_j · out_j / x_k`
/// without zeros; with zeros, each position's gradient is computed from the cumulative
/// product with that element replaced by one.
pub fn cumprod_backward(
    grad: &Tensor,
    input: &Tensor,
    dim: i64,
    output: &Tensor,
) -> Result<Tensor> {
    if input.dim() == 0 || input.numel() <= 1 {
        return Ok(grad.clone());
    }
    let d = wrap(dim, input.dim())?;
    let n = input.sizes()[d as usize];
    if n == 1 {
        return Ok(grad.clone());
    }
    if no_zeros(input)? {
        let w = cumsum_backward(&mul(grad, output)?, d)?;
        return div(&w, input);
    }
    let positions = arange(n, input.device())?;
    let mut shape = vec![1i64; input.dim()];
    shape[d as usize] = n;
    let positions = op::reshape::call(&positions, &shape)?;
    if !is_grad_enabled() {
        return cumprod_backward_zeros(grad, input, d, output, &positions);
    }
    let mut parts = Vec::with_capacity(n as usize);
    for k in 0..n {
        let at_k = op::eq_Scalar::call(&positions, Scalar::Int(k))?;
        let replaced = op::where_ScalarSelf::call(&at_k, Scalar::Int(1), input)?;
        let cp = op::cumprod::call(&replaced, d, None)?;
        let after = op::ge_Scalar::call(&positions, Scalar::Int(k))?;
        parts.push(sum_keep(&keep_where(&after, &mul(grad, &cp)?)?, &[d])?);
    }
    op::cat::call(&parts, d)
}

/// `cumprod_backward` with zeros in the input and grad mode off, by PyTorch's masks: before
/// the first zero of a slice, the reversed cumulative sum of `grad · output` over the input;
/// at the first zero, the product of the elements before it times
/// `Σ_{z1 ≤ k < z2} grad_k Π_{z1 < j ≤ k} x_j`; zero after it. (The masks give NaN at an
/// infinite element before a zero where the exact derivative is finite, as PyTorch's does.)
fn cumprod_backward_zeros(
    grad: &Tensor,
    input: &Tensor,
    d: i64,
    output: &Tensor,
    positions: &Tensor,
) -> Result<Tensor> {
    let w = mul(output, grad)?;
    let cumsum = op::cumsum::call(
        &op::eq_Scalar::call(input, Scalar::Int(0))?,
        d,
        Some(ScalarType::Long),
    )?;
    // [0, z1)
    let before = op::eq_Scalar::call(&cumsum, Scalar::Int(0))?;
    let not_before = op::logical_not::call(&before)?;
    let first = div(
        &cumsum_backward(
            &op::masked_fill_Scalar::call(&w, &not_before, Scalar::Int(0))?,
            d,
        )?,
        &op::masked_fill_Scalar::call(input, &not_before, Scalar::Int(1))?,
    )?;
    // [z1, z2): the first zero's index (0 where a slice has none; masked below)
    let from_first = op::eq_Scalar::call(&cumsum, Scalar::Int(1))?;
    let first_zero_index = op::argmax::call(
        &op::_to_copy::call(
            &from_first,
            Some(ScalarType::Long),
            None,
            None,
            None,
            false,
            None,
        )?,
        Some(d),
        true,
    )?;
    let first_zero_mask = op::logical_and::call(
        &op::eq_Tensor::call(positions, &first_zero_index)?,
        &from_first,
    )?;
    // (z1, z2)
    let between = op::logical_and::call(&from_first, &op::logical_not::call(&first_zero_mask)?)?;
    let inner = sum_keep(
        &mul(
            &op::cumprod::call(
                &op::masked_fill_Scalar::call(
                    input,
                    &op::logical_not::call(&between)?,
                    Scalar::Int(1),
                )?,
                d,
                None,
            )?,
            &op::masked_fill_Scalar::call(
                grad,
                &op::logical_not::call(&from_first)?,
                Scalar::Int(0),
            )?,
        )?,
        &[d],
    )?;
    let prefix = op::masked_fill_Scalar::call(
        &op::gather::call(
            output,
            d,
            &op::relu::call(&op::sub_Scalar::call(
                &first_zero_index,
                Scalar::Int(1),
                Scalar::Int(1),
            )?)?,
            false,
        )?,
        &op::eq_Scalar::call(&first_zero_index, Scalar::Int(0))?,
        Scalar::Int(1),
    )?;
    let at_zero = mul(&inner, &prefix)?;
    op::where_self::call(
        &before,
        &first,
        &keep_where(&first_zero_mask, &op::expand_as::call(&at_zero, input)?)?,
    )
}

/// `logsumexp`'s gradient: `grad · exp(self - result)` (PyTorch's `logsumexp_backward`).
pub fn logsumexp_backward(
    grad: &Tensor,
    self_: &Tensor,
    result: &Tensor,
    dim: &[i64],
    keepdim: bool,
) -> Result<Tensor> {
    let ndim = self_.dim();
    let g = restore_reduced_dims(grad, Some(dim), keepdim, ndim)?;
    let r = restore_reduced_dims(result, Some(dim), keepdim, ndim)?;
    mul(&g, &op::exp::call(&sub(self_, &r)?)?)
}

/// `max()`/`min()`'s gradient, split evenly among the elements equal to the result (PyTorch's
/// `evenly_distribute_backward`).
pub fn evenly_distribute_backward(grad: &Tensor, input: &Tensor, value: &Tensor) -> Result<Tensor> {
    let value_is_nan = op::isnan::call(value)?.item::<bool>()?;
    let mask = if value_is_nan {
        op::isnan::call(input)?
    } else {
        op::eq_Tensor::call(input, value)?
    };
    let count = op::sum::call(&mask, None)?;
    // PyTorch's CPU formula fills fresh (contiguous) zeros of the input's shape:
    // `grad.new_zeros(input.sizes()).masked_fill_(mask, grad / mask.sum())`.
    let zeros = zeros_sized(&input.sizes(), grad)?;
    op::masked_fill_Tensor::call(&zeros, &mask, &div(grad, &count)?)
}

/// `amax`/`amin`'s gradient, split evenly among the elements equal to the result (PyTorch's
/// `scale_grad_by_count(restore_reduced_dims(grad), restore_reduced_dims(result) == self)`).
pub fn amax_amin_backward(
    grad: &Tensor,
    self_: &Tensor,
    result: &Tensor,
    dim: &[i64],
    keepdim: bool,
) -> Result<Tensor> {
    let ndim = self_.dim();
    let g = restore_reduced_dims(grad, Some(dim), keepdim, ndim)?;
    let r = restore_reduced_dims(result, Some(dim), keepdim, ndim)?;
    let mask = op::eq_Tensor::call(&r, self_)?;
    let dims = reduced_dims(Some(dim), ndim)?;
    let count = sum_keep(&mask, &dims)?;
    mul(&div(&g, &count)?, &mask)
}

/// The gradient of a reduction that picks values by index (`max.dim`, `sort`, `topk`): the
/// gradient scattered back to the indices (PyTorch's `value_selecting_reduction_backward`).
pub fn value_selecting_reduction_backward(
    grad: &Tensor,
    dim: i64,
    indices: &Tensor,
    input: &TensorGeometry,
    keepdim: bool,
) -> Result<Tensor> {
    let ndim = input.sizes.len();
    if ndim == 0 {
        return op::reshape::call(grad, &[]);
    }
    let d = wrap(dim, ndim)?;
    let (g, idx) = if keepdim {
        (grad.clone(), indices.clone())
    } else {
        (
            op::unsqueeze::call(grad, d)?,
            op::unsqueeze::call(indices, d)?,
        )
    };
    op::scatter_src::call(&input.zeros_as(grad)?, d, &idx, &g)
}

/// `linalg_vector_norm`'s gradient (PyTorch's `linalg_vector_norm_backward`).
pub fn linalg_vector_norm_backward(
    grad: &Tensor,
    self_: &Tensor,
    ord: Scalar,
    norm: &Tensor,
    dim: Option<&[i64]>,
    keepdim: bool,
) -> Result<Tensor> {
    let ndim = self_.dim();
    let p = ord.to_f64();
    let g = restore_reduced_dims(grad, dim, keepdim, ndim)?;
    let n = restore_reduced_dims(norm, dim, keepdim, ndim)?;
    let norm_is_zero = op::eq_Scalar::call(&n, Scalar::Int(0))?;
    if p == 0.0 {
        zeros_like(self_)
    } else if p == 1.0 {
        mul(&sgn(self_)?, &g)
    } else if p == 2.0 {
        // PyTorch's `grad * (self / norm).masked_fill_(norm == 0, 0)`: the order of the
        // operands and the in-place fill decide the layouts of second-order gradients.
        let scaled = div(self_, &n)?;
        let scaled = op::masked_fill__Scalar::call(&scaled, &norm_is_zero, Scalar::Int(0))?;
        mul(&g, &scaled)
    } else if p.is_infinite() {
        let mask = op::eq_Tensor::call(&op::abs::call(self_)?, &n)?;
        let dims = reduced_dims(dim, ndim)?;
        let count = sum_keep(&mask, &dims)?;
        mul(&sgn(self_)?, &mul(&div(&g, &count)?, &mask)?)
    } else {
        let abs = op::abs::call(self_)?;
        let self_scaled = mul(
            self_,
            &op::pow_Tensor_Scalar::call(&abs, scalar_f(p - 2.0))?,
        )?;
        let scale = div(&g, &op::pow_Tensor_Scalar::call(&n, scalar_f(p - 1.0))?)?;
        let scale = op::masked_fill_Scalar::call(&scale, &norm_is_zero, Scalar::Int(0))?;
        mul(&self_scaled, &scale)
    }
}

/// `softmax`'s gradient from its output (PyTorch's `_softmax_backward_data`), contiguous as
/// PyTorch's kernel allocates it whatever the operands' layouts.
pub fn softmax_backward_data(
    grad: &Tensor,
    output: &Tensor,
    dim: i64,
    input_dtype: ScalarType,
) -> Result<Tensor> {
    let d = wrap(dim, output.dim())?;
    let go = mul(grad, output)?;
    let r = sub(&go, &mul(output, &sum_keep(&go, &[d])?)?)?;
    contiguous(&_to_copy_backward(&r, input_dtype, r.device())?)
}

/// `log_softmax`'s gradient from its output (PyTorch's `_log_softmax_backward_data`),
/// contiguous as PyTorch's kernel allocates it.
pub fn log_softmax_backward_data(
    grad: &Tensor,
    output: &Tensor,
    dim: i64,
    input_dtype: ScalarType,
) -> Result<Tensor> {
    let d = wrap(dim, output.dim())?;
    let r = sub(grad, &mul(&op::exp::call(output)?, &sum_keep(grad, &[d])?)?)?;
    contiguous(&_to_copy_backward(&r, input_dtype, r.device())?)
}

// ---------------------------------------------------------------------------------------------
// Shapes and views

/// `diagonal`'s gradient: the gradient on the diagonal of zeros (PyTorch's
/// `diagonal_backward`).
pub fn diagonal_backward(
    grad: &Tensor,
    sizes: &[i64],
    offset: i64,
    dim1: i64,
    dim2: i64,
) -> Result<Tensor> {
    op::diagonal_scatter::call(&zeros_sized(sizes, grad)?, grad, offset, dim1, dim2)
}

/// `select`'s gradient (PyTorch's `select_backward`).
pub fn select_backward(
    grad: &Tensor,
    input: &TensorGeometry,
    dim: i64,
    index: i64,
) -> Result<Tensor> {
    op::select_scatter::call(&input.zeros_as(grad)?, grad, dim, index)
}

/// `slice`'s gradient (PyTorch's `slice_backward_wrapper`).
pub fn slice_backward(
    grad: &Tensor,
    input: &TensorGeometry,
    dim: i64,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
) -> Result<Tensor> {
    op::slice_scatter::call(&input.zeros_as(grad)?, grad, dim, start, end, step)
}

/// `narrow_copy`'s gradient: PyTorch's `slice_backward_wrapper(grad, self.sizes(), dim, start,
/// start + length, 1)`, with `start` wrapped first as the forward wraps it. (PyTorch passes a
/// negative `start` as it is, so that `narrow_copy(x, 0, -2, 2)` on a dimension of 3 slices
/// `[-2:0]`, nothing, and its backward fails; here it gets the gradient the forward implies.)
pub fn narrow_copy_backward(
    grad: &Tensor,
    sizes: &[i64],
    dim: i64,
    start: i64,
    length: i64,
) -> Result<Tensor> {
    let d = wrap_dim(dim, sizes.len())?;
    let start = if start < 0 { start + sizes[d] } else { start };
    let end = start
        .checked_add(length)
        .ok_or_else(|| Error::runtime("narrow_copy: start + length overflows int64"))?;
    op::slice_scatter::call(
        &zeros_sized(sizes, grad)?,
        grad,
        dim,
        Some(start),
        Some(end),
        1,
    )
}

/// `as_strided_scatter`'s gradient for `self`: the gradient with the scattered region
/// zeroed (PyTorch's `as_strided_scatter_backward`).
pub fn as_strided_scatter_backward(
    grad: &Tensor,
    size: &[i64],
    stride: &[i64],
    storage_offset: Option<i64>,
) -> Result<Tensor> {
    let g = contiguous(grad)?;
    op::as_strided_scatter::call(&g, &zeros_sized(size, grad)?, size, stride, storage_offset)
}

/// `permute`'s gradient: the inverse permutation (PyTorch's `permute_backwards`).
pub fn permute_backwards(grad: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let n = dims.len();
    let mut inverse = vec![0i64; n];
    for (i, &d) in dims.iter().enumerate() {
        inverse[wrap(d, n)? as usize] = i as i64;
    }
    op::permute::call(grad, &inverse)
}

/// `squeeze()`'s gradient: unsqueezed where the input had size 1 (PyTorch's `unsqueeze_to`).
pub fn unsqueeze_to(grad: &Tensor, sizes: &[i64]) -> Result<Tensor> {
    let mut r = grad.clone();
    for (i, &s) in sizes.iter().enumerate() {
        if s == 1 {
            r = op::unsqueeze::call(&r, i as i64)?;
        }
    }
    Ok(r)
}

/// `squeeze(dims)`'s gradient: unsqueezed at the dims that had size 1 (PyTorch's
/// `unsqueeze_to` with dims).
pub fn unsqueeze_to_dims(grad: &Tensor, dims: &[i64], sizes: &[i64]) -> Result<Tensor> {
    let ndim = sizes.len();
    let mut dims: Vec<i64> = if ndim == 0 {
        Vec::new()
    } else {
        wrap_dims(dims, ndim)?
    };
    dims.sort_unstable();
    dims.dedup();
    let mut r = grad.clone();
    for d in dims {
        if sizes[d as usize] == 1 {
            r = op::unsqueeze::call(&r, d)?;
        }
    }
    Ok(r)
}

/// `roll`'s gradient: rolled back (PyTorch's formula `grad.roll(-shifts, dims)`).
pub fn roll_backward(grad: &Tensor, shifts: &[i64], dims: &[i64]) -> Result<Tensor> {
    let neg: Vec<i64> = shifts.iter().rev().map(|s| -s).collect();
    let rdims: Vec<i64> = dims.iter().rev().copied().collect();
    op::roll::call(grad, &neg, &rdims)
}

/// `repeat`'s gradient: the copies summed (PyTorch's `repeat_backward`).
pub fn repeat_backward(grad: &Tensor, repeats: &[i64], input_shape: &[i64]) -> Result<Tensor> {
    let Some(lead) = repeats.len().checked_sub(input_shape.len()) else {
        return Err(Error::runtime(format!(
            "repeat_backward: {} repeats for a {}-d input",
            repeats.len(),
            input_shape.len()
        )));
    };
    if repeats.contains(&0) {
        return zeros_sized(input_shape, grad);
    }
    let mut split = Vec::with_capacity(2 * repeats.len());
    let mut sum_dims = Vec::new();
    for (i, &r) in repeats.iter().enumerate() {
        let s = if i < lead { 1 } else { input_shape[i - lead] };
        sum_dims.push(split.len() as i64);
        split.push(r);
        split.push(s);
    }
    let g = op::reshape::call(grad, &split)?;
    let g = op::sum_dim_IntList::call(&g, Some(&sum_dims), false, None)?;
    op::reshape::call(&g, input_shape)
}

/// `constant_pad_nd`'s gradient: the padded gradient padded back by the negated pads, which
/// crops what was added and zero-pads what was cropped (PyTorch's
/// `constant_pad_nd_backward`); like any result of `constant_pad_nd` it is a fresh tensor.
pub fn constant_pad_nd_backward(grad: &Tensor, pad: &[i64]) -> Result<Tensor> {
    let negated: Vec<i64> = pad.iter().map(|p| p.saturating_neg()).collect();
    op::constant_pad_nd::call(grad, &negated, Scalar::Int(0))
}

/// The legacy rule of `cat`'s dim: 1-d empty tensors do not count.
fn cat_wrap_dim(dim: i64, sizes: &[DimVec]) -> Result<i64> {
    for s in sizes {
        if !(s.len() == 1 && s[0] == 0) {
            return wrap(dim, s.len());
        }
    }
    Ok(dim)
}

/// `cat`'s gradient: the slices of the gradient (PyTorch's `cat_tensors_backward`).
pub fn cat_tensors_backward(
    grad: &Tensor,
    sizes: &[DimVec],
    dtypes: &[ScalarType],
    dim: i64,
) -> Result<Vec<Grad>> {
    let d = cat_wrap_dim(dim, sizes)?;
    let mut out = Vec::with_capacity(sizes.len());
    let mut offset = 0;
    for (s, &dtype) in sizes.iter().zip(dtypes) {
        if s.len() == 1 && s[0] == 0 {
            out.push(None);
            continue;
        }
        let len = s[d as usize];
        let g = op::narrow::call(grad, d, offset, len)?;
        offset += len;
        out.push(Some(_to_copy_backward(&g, dtype, g.device())?));
    }
    Ok(out)
}

/// `stack`'s gradient: the gradient unbound (PyTorch's `stack_tensors_backward`).
pub fn stack_tensors_backward(grad: &Tensor, dim: i64) -> Result<Vec<Tensor>> {
    let d = wrap(dim, grad.dim())?;
    op::unbind_int::call(grad, d)
}

/// `unbind`'s gradient: the gradients stacked, zeros for outputs without one (PyTorch's
/// `unbind_backward`).
pub fn unbind_backward(grads: &[Grad], dim: i64) -> Result<Tensor> {
    let Some(like) = grads.iter().flatten().next() else {
        return Err(Error::runtime("unbind_backward: no gradient is defined"));
    };
    let parts: Vec<Tensor> = grads
        .iter()
        .map(|g| match g {
            Some(g) => Ok(g.clone()),
            None => zeros_like(like),
        })
        .collect::<Result<_>>()?;
    let d = wrap(dim, like.dim() + 1)?;
    op::stack::call(&parts, d)
}

/// `split_with_sizes`'s gradient: the gradients concatenated, zeros for outputs without
/// one (PyTorch's `split_with_sizes_backward`).
pub fn split_with_sizes_backward(
    grads: &[Grad],
    split_sizes: &[i64],
    dim: i64,
    input: &TensorGeometry,
) -> Result<Tensor> {
    let d = wrap(dim, input.sizes.len())?;
    let parts: Vec<Tensor> = grads
        .iter()
        .zip(split_sizes)
        .map(|(g, &len)| match g {
            Some(g) => Ok(g.clone()),
            None => {
                let mut s = input.sizes.clone();
                s[d as usize] = len;
                op::zeros::call(&s, Some(input.dtype), None, Some(input.device), None)
            }
        })
        .collect::<Result<_>>()?;
    op::cat::call(&parts, d)
}

/// `split`'s gradient (PyTorch's `split_backward`).
pub fn split_backward(
    grads: &[Grad],
    split_size: i64,
    dim: i64,
    input: &TensorGeometry,
) -> Result<Tensor> {
    let d = wrap(dim, input.sizes.len())?;
    let n = input.sizes[d as usize];
    let mut sizes = Vec::with_capacity(grads.len());
    let mut left = n;
    for _ in 0..grads.len() {
        let s = split_size.min(left).max(0);
        sizes.push(s);
        left -= s;
    }
    split_with_sizes_backward(grads, &sizes, d, input)
}

// ---------------------------------------------------------------------------------------------
// Indexing

/// `gather`'s gradient: scatter-added back (PyTorch's `gather_backward`, dense).
pub fn gather_backward(
    grad: &Tensor,
    input: &TensorGeometry,
    dim: i64,
    index: &Tensor,
) -> Result<Tensor> {
    op::scatter_add::call(&input.zeros_as(grad)?, dim, index, grad)
}

/// `index_select`'s gradient: added back at the selected positions (PyTorch's
/// `index_select_backward`).
pub fn index_select_backward(
    grad: &Tensor,
    input: &TensorGeometry,
    dim: i64,
    index: &Tensor,
) -> Result<Tensor> {
    let ndim = input.sizes.len();
    if ndim == 0 {
        return op::reshape::call(grad, &[]);
    }
    let d = wrap(dim, ndim)?;
    let mut shape = vec![1i64; ndim];
    shape[d as usize] = index.numel();
    let idx = op::reshape::call(index, &shape)?;
    let idx = op::expand::call(&idx, &grad.sizes(), false)?;
    op::scatter_add::call(&input.zeros_as(grad)?, d, &idx, grad)
}

/// `index`'s gradient: accumulated into zeros at the indexed positions (PyTorch's
/// `index_backward`).
pub fn index_backward(
    input: &TensorGeometry,
    indices: &[Option<Tensor>],
    grad: &Tensor,
) -> Result<Tensor> {
    op::index_put::call(&input.zeros_as(grad)?, indices, grad, true)
}

/// `index_put`'s gradient for `self`: all of it when accumulating, else zero where values
/// were written.
pub fn index_put_self_backward(
    grad: &Tensor,
    indices: &[Option<Tensor>],
    values: &Tensor,
    accumulate: bool,
) -> Result<Tensor> {
    if accumulate {
        return Ok(grad.clone());
    }
    let zeros = op::zeros_like::call(values, Some(grad.dtype()), None, None, None, None)?;
    op::index_put::call(grad, indices, &zeros, false)
}

/// `masked_fill`'s gradient for a tensor value: the gradient where the mask is set, summed
/// (PyTorch's `masked_fill_backward`).
pub fn masked_fill_backward(grad: &Tensor, mask: &Tensor) -> Result<Tensor> {
    op::sum::call(&keep_where(mask, grad)?, None)
}

/// `masked_select`'s gradient: the gradient scattered, in order, into zeros laid out like the
/// (broadcast) input where the mask is set (PyTorch's `masked_select_backward`,
/// `zeros_like(self.expand(..)).masked_scatter_(mask, grad)`). The engine sums a broadcast
/// result down to the input's shape.
pub fn masked_select_backward(grad: &Tensor, self_: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let shape = switchyard_core::shape::infer_size(&self_.sizes(), &mask.sizes())?;
    // Zeros in the input's memory layout (PyTorch's zeros_like with the preserved format).
    let zeros = op::zeros_like::call(
        &op::expand::call(self_, &shape, false)?,
        Some(grad.dtype()),
        None,
        Some(grad.device()),
        None,
        None,
    )?;
    let mask = op::expand::call(mask, &shape, false)?;
    if shape.is_empty() {
        // A 0-dim boolean index is no index for index_put: scatter into the one-element
        // view instead (what masked_scatter_ does on a 0-dim tensor).
        let r = op::index_put::call(
            &op::reshape::call(&zeros, &[1])?,
            &[Some(op::reshape::call(&mask, &[1])?)],
            grad,
            true,
        )?;
        return op::reshape::call(&r, &[]);
    }
    op::index_put::call(&zeros, &[Some(mask)], grad, true)
}

/// `scatter(..., reduce=)`'s gradient for `self`.
pub fn scatter_reduce_self_backward(grad: &Tensor, reduce: &str) -> Result<Tensor> {
    match reduce {
        "add" => Ok(grad.clone()),
        _ => not_implemented(&format!("scatter with reduce='{reduce}'")),
    }
}

/// `embedding`'s gradient: rows added back per index, none for `padding_idx`, optionally
/// scaled by the inverse frequency (PyTorch's `embedding_dense_backward`).
pub fn embedding_backward(
    grad: &Tensor,
    indices: &Tensor,
    weight: &TensorGeometry,
    padding_idx: i64,
    scale_grad_by_freq: bool,
) -> Result<Tensor> {
    let num_weights = weight.sizes.first().copied().unwrap_or(0);
    let d = weight.sizes.get(1).copied().unwrap_or(1);
    let idx = op::reshape::call(indices, &[-1])?;
    let n = idx.numel();
    let mut g = op::reshape::call(grad, &[n, d])?;
    let keep = op::unsqueeze::call(&op::ne_Scalar::call(&idx, Scalar::Int(padding_idx))?, 1)?;
    g = keep_where(&keep, &g)?;
    if scale_grad_by_freq {
        let ones = op::ones::call(&[n], Some(grad.dtype()), None, Some(grad.device()), None)?;
        let counts = op::scatter_add::call(&zeros_sized(&[num_weights], grad)?, 0, &idx, &ones)?;
        let per = op::unsqueeze::call(&op::index_select::call(&counts, 0, &idx)?, 1)?;
        g = div(&g, &per)?;
    }
    let idx2 = op::expand::call(&op::unsqueeze::call(&idx, 1)?, &[n, d], false)?;
    op::scatter_add::call(&weight.zeros_as(grad)?, 0, &idx2, &g)
}

// ---------------------------------------------------------------------------------------------
// Neural-network operators

/// `mse_loss`'s gradient for `self`: `2 (self - target) grad`, over N for the mean. Always
/// contiguous: PyTorch's kernel writes it into `zeros_like(input, contiguous)` whatever the
/// operands' layouts.
pub fn mse_loss_backward(
    grad: &Tensor,
    self_: &Tensor,
    target: &Tensor,
    reduction: i64,
) -> Result<Tensor> {
    let diff = sub(self_, target)?;
    let norm = if reduction == 1 {
        2.0 / diff.numel().max(1) as f64
    } else {
        2.0
    };
    contiguous(&mul_s(&mul(&diff, grad)?, norm)?)
}

/// `nll_loss`'s gradient: `-weight[target] · grad` at each target class, zero at
/// `ignore_index`, over the total weight for the mean (PyTorch's `nll_loss_backward`).
pub fn nll_loss_backward(
    grad: &Tensor,
    input: &TensorGeometry,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    total_weight: &Tensor,
) -> Result<Tensor> {
    let cdim = if input.sizes.len() == 1 { 0 } else { 1 };
    let valid = op::ne_Scalar::call(target, Scalar::Int(ignore_index))?;
    let safe = op::where_ScalarOther::call(&valid, target, Scalar::Int(0))?;
    let w = match weight {
        Some(w) => {
            let flat = op::reshape::call(&safe, &[-1])?;
            let wt = op::index_select::call(w, 0, &flat)?;
            let wt = op::reshape::call(&wt, &target.sizes())?;
            keep_where(&valid, &wt)?
        }
        None => op::_to_copy::call(&valid, Some(grad.dtype()), None, None, None, false, None)?,
    };
    let g = match reduction {
        0 => grad.clone(),
        1 => div(grad, total_weight)?,
        _ => grad.clone(),
    };
    let src = op::neg::call(&mul(&w, &g)?)?;
    let src = op::unsqueeze::call(&src, cdim)?;
    let idx = op::unsqueeze::call(&safe, cdim)?;
    op::scatter_src::call(&input.zeros_as(grad)?, cdim, &idx, &src)
}

/// `native_layer_norm`'s gradients (PyTorch's `native_layer_norm_backward`). When grad mode
/// is on (a differentiable backward), mean and rstd are recomputed from `input` so that the
/// result differentiates through them; otherwise the saved ones are used.
#[allow(clippy::too_many_arguments)]
pub fn native_layer_norm_backward(
    grad: &Tensor,
    input: &Tensor,
    normalized_shape: &[i64],
    mean: &Tensor,
    rstd: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
    mask: [bool; 3],
) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
    let ndim = input.dim();
    let k = normalized_shape.len();
    let Some(axis) = ndim.checked_sub(k) else {
        return Err(Error::runtime(format!(
            "native_layer_norm_backward: normalized_shape {normalized_shape:?} has more dims than the {ndim}-d input"
        )));
    };
    let norm_dims: Vec<i64> = (axis as i64..ndim as i64).collect();
    let batch_dims: Vec<i64> = (0..axis as i64).collect();
    let mut stat_shape: Vec<i64> = input.sizes()[..axis].to_vec();
    stat_shape.extend(std::iter::repeat_n(1, k));
    let (mean, rstd) = if is_grad_enabled() {
        let m = op::mean_dim::call(input, Some(&norm_dims), true, None)?;
        let c = sub(input, &m)?;
        let var = op::mean_dim::call(&mul(&c, &c)?, Some(&norm_dims), true, None)?;
        (m, op::rsqrt::call(&add_s(&var, eps)?)?)
    } else {
        (
            op::reshape::call(mean, &stat_shape)?,
            op::reshape::call(rstd, &stat_shape)?,
        )
    };
    let x_hat = mul(&sub(input, &mean)?, &rstd)?;
    let n: i64 = normalized_shape.iter().product();
    let mut out = (None, None, None);
    if mask[0] {
        let g = match weight {
            Some(w) => mul(grad, w)?,
            None => grad.clone(),
        };
        let a = sum_keep(&g, &norm_dims)?;
        let b = sum_keep(&mul(&g, &x_hat)?, &norm_dims)?;
        let inner = sub(&mul_s(&g, n as f64)?, &add(&a, &mul(&x_hat, &b)?)?)?;
        out.0 = Some(mul_s(&mul(&rstd, &inner)?, 1.0 / n.max(1) as f64)?);
    }
    let sum_batch = |t: Tensor| -> Result<Tensor> {
        if batch_dims.is_empty() {
            Ok(t)
        } else {
            op::sum_dim_IntList::call(&t, Some(&batch_dims), false, None)
        }
    };
    if mask[1] && weight.is_some() {
        out.1 = Some(sum_batch(mul(grad, &x_hat)?)?);
    }
    if mask[2] {
        out.2 = Some(sum_batch(grad.clone())?);
    }
    // PyTorch's native_layer_norm_backward is one operator: under create_graph each of its
    // gradients requires grad when any of its inputs does.
    let inputs = [Some(grad), Some(input), weight, bias];
    let joined = |g: Option<Tensor>| -> Result<Option<Tensor>> {
        g.map(|g| {
            join(
                g,
                &inputs,
                JoinedGrad::Undefined,
                "NativeLayerNormBackwardBackward0",
            )
        })
        .transpose()
    };
    Ok((joined(out.0)?, joined(out.1)?, joined(out.2)?))
}

/// `convolution`'s gradients (PyTorch's `convolution_backward`), from convolutions: the
/// input's by the transposed convolution (or the direct one, for a transposed forward),
/// the weight's by convolving input and gradient with stride and dilation swapped, one group
/// at a time; the bias's by summing all but the channel dim.
#[allow(clippy::too_many_arguments)]
pub fn convolution_backward(
    grad: &Tensor,
    input: &Tensor,
    weight: &Tensor,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    transposed: bool,
    groups: i64,
    mask: [bool; 3],
) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
    let spatial = weight.dim().saturating_sub(2);
    if weight.dim() < 3 || input.dim() != weight.dim() || grad.dim() != weight.dim() {
        return Err(Error::runtime(format!(
            "convolution_backward: expected input, weight and grad of the same rank (at least 3), got {}, {} and {}",
            input.dim(),
            weight.dim(),
            grad.dim()
        )));
    }
    let at = |v: &[i64], i: usize, default: i64| -> i64 {
        match v.len() {
            0 => default,
            1 => v[0],
            _ => v.get(i).copied().unwrap_or(default),
        }
    };
    let st: Vec<i64> = (0..spatial).map(|i| at(stride, i, 1)).collect();
    let pd: Vec<i64> = (0..spatial).map(|i| at(padding, i, 0)).collect();
    let dl: Vec<i64> = (0..spatial).map(|i| at(dilation, i, 1)).collect();
    let ksize: Vec<i64> = weight.sizes()[2..].to_vec();
    let in_sizes = input.sizes();
    let go_sizes = grad.sizes();
    let mut out = (None, None, None);
    if mask[0] {
        let gi = if transposed {
            op::convolution::call(
                grad,
                weight,
                None,
                &st,
                &pd,
                &dl,
                false,
                &vec![0; spatial],
                groups,
            )?
        } else {
            let out_pad: Vec<i64> = (0..spatial)
                .map(|i| {
                    in_sizes[i + 2]
                        - ((go_sizes[i + 2] - 1) * st[i] - 2 * pd[i] + dl[i] * (ksize[i] - 1) + 1)
                })
                .collect();
            op::convolution::call(grad, weight, None, &st, &pd, &dl, true, &out_pad, groups)?
        };
        out.0 = Some(gi);
    }
    if mask[1] {
        let cin = in_sizes[1] / groups;
        let cout = go_sizes[1] / groups;
        let mut parts = Vec::with_capacity(groups as usize);
        for g in 0..groups {
            let x = op::transpose_int::call(&op::narrow::call(input, 1, g * cin, cin)?, 0, 1)?;
            let dy = op::transpose_int::call(&op::narrow::call(grad, 1, g * cout, cout)?, 0, 1)?;
            let zero_pad = vec![0; spatial];
            let mut w = if transposed {
                op::convolution::call(&dy, &x, None, &dl, &pd, &st, false, &zero_pad, 1)?
            } else {
                op::convolution::call(&x, &dy, None, &dl, &pd, &st, false, &zero_pad, 1)?
            };
            for (i, &k) in ksize.iter().enumerate() {
                w = op::narrow::call(&w, i as i64 + 2, 0, k)?;
            }
            parts.push(op::transpose_int::call(&w, 0, 1)?);
        }
        // PyTorch's kernels write the weight's gradient into a fresh contiguous tensor; a
        // single group's part is a transposed (and narrowed) view of the convolution's
        // output, several groups' are concatenated into a fresh one already.
        out.1 = Some(if parts.len() == 1 {
            contiguous(&parts.remove(0))?
        } else {
            op::cat::call(&parts, 0)?
        });
    }
    if mask[2] {
        let dims: Vec<i64> = (0..grad.dim() as i64).filter(|&d| d != 1).collect();
        out.2 = Some(op::sum_dim_IntList::call(grad, Some(&dims), false, None)?);
    }
    // PyTorch's convolution_backward is one operator: under create_graph each of its
    // gradients requires grad when any of grad, input and weight does.
    let inputs = [Some(grad), Some(input), Some(weight)];
    let joined = |g: Option<Tensor>| -> Result<Option<Tensor>> {
        g.map(|g| {
            join(
                g,
                &inputs,
                JoinedGrad::Undefined,
                "ConvolutionBackwardBackward0",
            )
        })
        .transpose()
    };
    Ok((joined(out.0)?, joined(out.1)?, joined(out.2)?))
}

fn pair(v: &[i64], default: [i64; 2]) -> [i64; 2] {
    match v {
        [] => default,
        [a] => [*a, *a],
        [a, b, ..] => [*a, *b],
    }
}

/// `avg_pool2d`'s gradient (PyTorch's `avg_pool2d_backward`): each output's gradient, over
/// its window's divisor, added to the window's inputs.
#[allow(clippy::too_many_arguments)]
pub fn avg_pool2d_backward(
    grad: &Tensor,
    input: &TensorGeometry,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> Result<Tensor> {
    let nd = input.sizes.len();
    if nd < 3 {
        return Err(Error::runtime(
            "avg_pool2d_backward: expected a 3-d or 4-d input",
        ));
    }
    let (h, w) = (input.sizes[nd - 2], input.sizes[nd - 1]);
    let gs = grad.sizes();
    let (oh, ow) = (gs[nd - 2], gs[nd - 1]);
    let [kh, kw] = pair(kernel_size, [1, 1]);
    let [sh, sw] = pair(stride, [kh, kw]);
    let [ph, pw] = pair(padding, [0, 0]);
    let (mut idx_in, mut idx_out, mut scale) = (Vec::new(), Vec::new(), Vec::new());
    for y in 0..oh {
        for x in 0..ow {
            let (mut h0, mut w0) = (y * sh - ph, x * sw - pw);
            let (mut h1, mut w1) = ((h0 + kh).min(h + ph), (w0 + kw).min(w + pw));
            let pool = (h1 - h0) * (w1 - w0);
            h0 = h0.max(0);
            w0 = w0.max(0);
            h1 = h1.min(h);
            w1 = w1.min(w);
            if h0 >= h1 || w0 >= w1 {
                continue;
            }
            let divisor = match divisor_override {
                Some(d) => d,
                None if count_include_pad => pool,
                None => (h1 - h0) * (w1 - w0),
            };
            for iy in h0..h1 {
                for ix in w0..w1 {
                    idx_in.push(iy * w + ix);
                    idx_out.push(y * ow + x);
                    scale.push(1.0 / divisor as f64);
                }
            }
        }
    }
    let planes: i64 = input.sizes[..nd - 2].iter().product();
    let l = idx_in.len() as i64;
    let g = op::reshape::call(grad, &[planes, oh * ow])?;
    let idx_out = long_tensor(idx_out, grad.device())?;
    let idx_in = long_tensor(idx_in, grad.device())?;
    let scale = Tensor::from_vec(scale, &[l])?;
    let scale = op::_to_copy::call(
        &scale,
        Some(grad.dtype()),
        None,
        Some(grad.device()),
        None,
        false,
        None,
    )?;
    let picked = mul(&op::index_select::call(&g, 1, &idx_out)?, &scale)?;
    let idx = op::expand::call(&op::unsqueeze::call(&idx_in, 0)?, &[planes, l], false)?;
    let r = op::scatter_add::call(&zeros_sized(&[planes, h * w], grad)?, 1, &idx, &picked)?;
    op::reshape::call(&r, &input.sizes)
}

/// `max_pool2d_with_indices`'s gradient: each output's gradient added at its argmax
/// (PyTorch's `max_pool2d_with_indices_backward`).
pub fn max_pool2d_with_indices_backward(
    grad: &Tensor,
    input: &TensorGeometry,
    indices: &Tensor,
) -> Result<Tensor> {
    let nd = input.sizes.len();
    if nd < 3 {
        return Err(Error::runtime(
            "max_pool2d_with_indices_backward: expected a 3-d or 4-d input",
        ));
    }
    let planes: i64 = input.sizes[..nd - 2].iter().product();
    let hw = input.sizes[nd - 2] * input.sizes[nd - 1];
    let g = op::reshape::call(grad, &[planes, -1])?;
    let idx = op::reshape::call(indices, &[planes, -1])?;
    let r = op::scatter_add::call(&zeros_sized(&[planes, hw], grad)?, 1, &idx, &g)?;
    op::reshape::call(&r, &input.sizes)
}

// ---------------------------------------------------------------------------------------------
// aminmax, block_diag, batch norm, fake quantization

/// `aminmax`'s gradient (PyTorch's `aminmax_backward`): each defined output gradient split
/// evenly among the input elements equal to that output (`amax`'s rule), summed.
pub fn aminmax_backward(
    self_: &Tensor,
    dim: Option<i64>,
    keepdim: bool,
    grad_min: Option<&Tensor>,
    grad_max: Option<&Tensor>,
    min: &Tensor,
    max: &Tensor,
) -> Result<Tensor> {
    // An empty list reduces every dimension, as `aminmax` without `dim` does.
    let dims: Vec<i64> = dim.into_iter().collect();
    // Each term is laid out like `self` (its mask is); starting from the first term rather
    // than from contiguous zeros keeps that layout, as PyTorch's sum of the terms does.
    let mut out: Option<Tensor> = None;
    for (g, value) in [(grad_min, min), (grad_max, max)] {
        if let Some(g) = g {
            let term = amax_amin_backward(g, self_, value, &dims, keepdim)?;
            out = Some(match out {
                Some(o) => add(&o, &term)?,
                None => term,
            });
        }
    }
    match out {
        Some(o) => Ok(o),
        None => zeros_sized(&self_.sizes(), self_),
    }
}

/// `block_diag`'s gradient (PyTorch's `block_diag_backward`): each input's block of the
/// gradient, in its shape and dtype. (PyTorch skips the row an empty 1-d input adds to the
/// result, shifting the blocks after it; here every input's rows are counted.)
pub fn block_diag_backward(
    grad: &Tensor,
    sizes: &[DimVec],
    dtypes: &[ScalarType],
) -> Result<Vec<Grad>> {
    let mut out = Vec::with_capacity(sizes.len());
    let (mut row, mut col) = (0i64, 0i64);
    for (s, &dtype) in sizes.iter().zip(dtypes) {
        let (rows, cols) = match s.len() {
            2 => (s[0], s[1]),
            1 => (1, s[0]),
            _ => (1, 1),
        };
        let block = op::slice_Tensor::call(grad, 0, Some(row), Some(row + rows), 1)?;
        let block = op::slice_Tensor::call(&block, 1, Some(col), Some(col + cols), 1)?;
        let block = if s.len() == 2 {
            block
        } else {
            op::reshape::call(&block, s)?
        };
        out.push(Some(_to_copy_backward(&block, dtype, block.device())?));
        row += rows;
        col += cols;
    }
    Ok(out)
}

/// `t` cast to `dtype` unless it has it.
fn cast_to(t: Tensor, dtype: ScalarType) -> Result<Tensor> {
    if t.dtype() == dtype {
        Ok(t)
    } else {
        op::_to_copy::call(&t, Some(dtype), None, None, None, false, None)
    }
}

/// Batch norm's gradients (PyTorch's `native_batch_norm_backward`), as a composite of
/// differentiable operators so that it differentiates again. In training the input was
/// normalized by its own statistics: `grad_input = (g - mean(g) - x̂·mean(g·x̂)) · invstd`
/// with `g = grad · weight` and `x̂ = (x - mean) · invstd` (the statistics are recomputed from
/// `input` when grad mode is on, so that the result differentiates through them; otherwise
/// the saved ones are used); in evaluation by the running statistics, constants:
/// `grad_input = grad · weight · invstd`. `grad_weight = Σ grad·x̂`, `grad_bias = Σ grad`
/// over every dimension but the channels.
#[allow(clippy::too_many_arguments)]
pub fn native_batch_norm_backward(
    grad: &Tensor,
    input: &Tensor,
    weight: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    save_mean: &Tensor,
    save_invstd: &Tensor,
    train: bool,
    eps: f64,
    mask: [bool; 3],
) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
    let ndim = input.dim();
    if ndim < 2 {
        return Err(Error::runtime(format!(
            "native_batch_norm_backward: expected an input with a channel dimension, got {ndim}-d"
        )));
    }
    let channels = input.size(1)?;
    let dims: Vec<i64> = std::iter::once(0).chain(2..ndim as i64).collect();
    let mut stat_shape = vec![1i64; ndim];
    stat_shape[1] = channels;
    let per_channel = |t: &Tensor| op::reshape::call(t, &stat_shape);
    let (mean, invstd) = if train {
        if is_grad_enabled() {
            let m = op::mean_dim::call(input, Some(&dims), true, None)?;
            let c = sub(input, &m)?;
            let var = op::mean_dim::call(&mul(&c, &c)?, Some(&dims), true, None)?;
            (m, op::rsqrt::call(&add_s(&var, eps)?)?)
        } else {
            (per_channel(save_mean)?, per_channel(save_invstd)?)
        }
    } else {
        let (Some(rm), Some(rv)) = (running_mean, running_var) else {
            return Err(Error::runtime(
                "native_batch_norm_backward: evaluation needs the running statistics",
            ));
        };
        (
            per_channel(rm)?,
            per_channel(&op::rsqrt::call(&add_s(rv, eps)?)?)?,
        )
    };
    let w = weight.map(per_channel).transpose()?;
    let x_hat = mul(&sub(input, &mean)?, &invstd)?;
    let mut out = (None, None, None);
    if mask[0] {
        let g = match &w {
            Some(w) => mul(grad, w)?,
            None => grad.clone(),
        };
        let gi = if train {
            let mean_g = op::mean_dim::call(&g, Some(&dims), true, None)?;
            let proj = op::mean_dim::call(&mul(&g, &x_hat)?, Some(&dims), true, None)?;
            mul(&sub(&sub(&g, &mean_g)?, &mul(&x_hat, &proj)?)?, &invstd)?
        } else {
            mul(&g, &invstd)?
        };
        out.0 = Some(cast_to(gi, input.dtype())?);
    }
    let param_dtype = weight.map_or(save_mean.dtype(), Tensor::dtype);
    if mask[1] && weight.is_some() {
        let gw = op::sum_dim_IntList::call(&mul(grad, &x_hat)?, Some(&dims), false, None)?;
        out.1 = Some(cast_to(gw, param_dtype)?);
    }
    if mask[2] {
        let gb = op::sum_dim_IntList::call(grad, Some(&dims), false, None)?;
        out.2 = Some(cast_to(gb, param_dtype)?);
    }
    Ok(out)
}

/// The gradient through a fake quantization (PyTorch's
/// `fake_quantize_per_tensor_affine_cachemask_backward`): `grad` where the mask is set,
/// zero elsewhere.
pub fn fake_quantize_per_tensor_affine_cachemask_backward(
    grad: &Tensor,
    mask: &Tensor,
) -> Result<Tensor> {
    if mask.dtype() != ScalarType::Bool {
        return Err(Error::runtime(
            "Expected mask.scalar_type() == ScalarType::Bool to be true, but got false.",
        ));
    }
    if mask.numel() != grad.numel() {
        return Err(Error::runtime(format!(
            "`mask` and `dY` are not the same size: `mask` is size {} and `dY` is size {}",
            mask.numel(),
            grad.numel()
        )));
    }
    if grad.numel() <= 0 {
        return Ok(grad.clone());
    }
    mul(grad, mask)
}
