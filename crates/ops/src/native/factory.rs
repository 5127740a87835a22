//! Composite and Meta kernels: factory operators.
//!
//! The Meta kernels allocate meta tensors with the shapes and dtypes the CPU kernels would
//! produce, after the same argument checks (shared through
//! [`crate::meta::factory_support`]).

use crate::meta::factory_support::{
    arange_dtype, arange_resize_warning, arange_size, check_empty_strided, check_eye,
    check_linspace, check_normal_dtype, check_normal_std, check_options, check_uniform,
    default_dtype, empty_strides,
};
use switchyard_core::{Device, Layout, MemoryFormat, Result, Scalar, ScalarType, Tensor};

/// A new tensor on the meta device.
fn meta_tensor(size: &[i64], strides: &[i64], dtype: ScalarType) -> Result<Tensor> {
    Tensor::allocate_strided(size, strides, dtype, Device::META)
}

/// `resize_` for the out= factories: only a change of sizes restrides (contiguously).
fn resize_if_needed(out: &Tensor, size: &[i64]) -> Result<()> {
    if out.sizes().as_slice() != size {
        out.resize_contiguous(size)?;
    }
    Ok(())
}

/// `empty.memory_format` on the meta device.
pub fn empty_meta(
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    _device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    check_options(layout, pin_memory, Device::META)?;
    let strides = empty_strides(size, memory_format)?;
    meta_tensor(size, &strides, default_dtype(dtype))
}

/// `empty_strided` on the meta device.
pub fn empty_strided_meta(
    size: &[i64],
    stride: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    _device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    check_options(layout, pin_memory, Device::META)?;
    check_empty_strided(size, stride)?;
    meta_tensor(size, stride, default_dtype(dtype))
}

/// `arange.start_step` on the meta device: a 1-d tensor of the computed size.
pub fn arange_meta_start_step(
    start: Scalar,
    end: Scalar,
    step: Scalar,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    _device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    check_options(layout, pin_memory, Device::META)?;
    let dtype = arange_dtype(start, end, step, dtype);
    let size = arange_size(start, end, step, dtype)?;
    meta_tensor(&[size], &[1], dtype)
}

/// `arange.start` on the meta device.
pub fn arange_meta_start(
    start: Scalar,
    end: Scalar,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    arange_meta_start_step(
        start,
        end,
        Scalar::Int(1),
        dtype,
        layout,
        device,
        pin_memory,
    )
}

/// `arange` on the meta device.
pub fn arange_meta(
    end: Scalar,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    arange_meta_start_step(
        Scalar::Int(0),
        end,
        Scalar::Int(1),
        dtype,
        layout,
        device,
        pin_memory,
    )
}

/// `arange.start_out` on the meta device: checks and resizes `out`.
pub fn arange_out_start_out(
    start: Scalar,
    end: Scalar,
    step: Scalar,
    out: &Tensor,
) -> Result<Tensor> {
    let size = arange_size(start, end, step, out.dtype())?;
    if out.numel() != size {
        if out.numel() > 0 {
            switchyard_dispatch::warnings::warn(arange_resize_warning(
                &out.sizes(),
                out.numel(),
                size,
            ));
        }
        out.resize_contiguous(&[size])?;
    }
    Ok(out.clone())
}

/// `eye.out` on the meta device.
pub fn eye_out_cpu_out(n: i64, out: &Tensor) -> Result<Tensor> {
    eye_out_cpu_m_out(n, n, out)
}

/// `eye.m_out` on the meta device.
pub fn eye_out_cpu_m_out(n: i64, m: i64, out: &Tensor) -> Result<Tensor> {
    check_eye(n, m)?;
    resize_if_needed(out, &[n, m])?;
    Ok(out.clone())
}

/// `linspace.out` on the meta device.
pub fn linspace_out(_start: Scalar, _end: Scalar, steps: i64, out: &Tensor) -> Result<Tensor> {
    check_linspace(steps)?;
    if out.numel() != steps {
        out.resize_contiguous(&[steps])?;
    }
    Ok(out.clone())
}

/// `ones` on the meta device.
pub fn ones_meta(
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    empty_meta(size, dtype, layout, device, pin_memory, None)
}

/// `uniform_` on the meta device: the argument checks only.
pub fn uniform_meta_(
    self_: &Tensor,
    from: f64,
    to: f64,
    _generator: Option<&switchyard_core::Generator>,
) -> Result<Tensor> {
    check_uniform(self_.dtype(), from, to)?;
    Ok(self_.clone())
}

/// `normal_` on the meta device: the argument checks only.
pub fn normal_meta_(
    self_: &Tensor,
    _mean: f64,
    std: f64,
    _generator: Option<&switchyard_core::Generator>,
) -> Result<Tensor> {
    check_normal_std(std)?;
    if self_.numel() != 0 {
        check_normal_dtype(self_.dtype())?;
    }
    Ok(self_.clone())
}
