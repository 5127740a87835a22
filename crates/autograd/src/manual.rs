//! Hand-written backward helpers that `derivatives.yaml` formulas call (PyTorch's
//! `FunctionsManual.cpp`): anything longer than an expression lives here, once.
//!
//! Every helper takes and returns what the formulas have at hand: `&Tensor` gradients and
//! saved values, and returns `Result<Tensor>` (or a tuple of optional gradients for formulas
//! that give several inputs at once, computing only those `grad_input_mask` asks for).

use switchyard_core::shape::wrap_dim;
use switchyard_core::{Device, DimVec, Error, Result, Scalar, ScalarType, Tensor};
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
}

/// A tensor's shape, dtype and device (saved by `zeros_like(x)` in a formula).
pub type TypeAndSize = TensorGeometry;

/// The error of a formula that is not implemented (PyTorch's `not_implemented`).
pub fn not_implemented(name: &str) -> Result<Tensor> {
    Err(Error::not_implemented(format!(
        "the derivative for '{name}' is not implemented."
    )))
}

/// Sums `t` down to `shape`, the inverse of broadcasting `shape` up to `t`'s (PyTorch's
/// `at::sum_to`): leading dimensions are summed away, and dimensions where `shape` has 1 are
/// summed keeping the dimension.
pub fn sum_to(t: &Tensor, shape: &[i64]) -> Result<Tensor> {
    let sizes = t.sizes();
    if sizes[..] == shape[..] {
        return Ok(t.clone());
    }
    if shape.is_empty() {
        return op::sum::call(t, None);
    }
    let leading = sizes.len().saturating_sub(shape.len());
    let mut dims: Vec<i64> = (0..leading as i64).collect();
    for (i, &s) in shape.iter().enumerate() {
        if s == 1 && sizes[leading + i] != 1 {
            dims.push((leading + i) as i64);
        }
    }
    let mut r = t.clone();
    if !dims.is_empty() {
        r = op::sum_dim_IntList::call(&r, Some(&dims), true, None)?;
    }
    if leading > 0 {
        r = op::reshape::call(&r, shape)?;
    }
    Ok(r)
}

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
