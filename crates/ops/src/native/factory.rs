//! Composite and Meta kernels: factory operators.
//!
//! The Meta kernels allocate meta tensors with the shapes and dtypes the CPU kernels would
//! produce, after the same argument checks (shared through
//! [`crate::meta::factory_support`]).

use crate::meta::factory_support::{
    arange_dtype, arange_resize_warning, arange_size, check_empty_strided, check_eye,
    check_linspace, check_normal_dtype, check_normal_std, check_options, check_uniform,
    default_dtype, empty_tensor, full_dtype, random_fill, random_from_to,
};
use crate::meta::index_support::{infer_dense_strides, is_non_overlapping_and_dense};
use switchyard_core::{
    Device, Generator, Layout, MemoryFormat, Result, Scalar, ScalarType, Tensor,
};

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
    empty_tensor(size, default_dtype(dtype), Device::META, memory_format)
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

// ---------------------------------------------------------------------------------------------
// Composite factories (CompositeExplicitAutograd / CompositeImplicitAutograd): they allocate
// through `empty` / `empty_strided`, whose BackendSelect kernel picks the backend from the
// tensor options, and fill through the dispatcher, so they work on every backend.
// ---------------------------------------------------------------------------------------------

/// `empty.out`: resizes `out` (no warning, as PyTorch's `resize_`).
pub fn empty_out(
    size: &[i64],
    memory_format: Option<MemoryFormat>,
    out: &Tensor,
) -> Result<Tensor> {
    switchyard_core::torch_check!(
        memory_format.is_none(),
        "'memory_format' argument is incompatible with 'out' tensor argument"
    );
    switchyard_core::shape::check_nonnegative(size)?;
    crate::op::resize_::call(out, size, None)?;
    Ok(out.clone())
}

/// `empty_like`: a tensor of `self`'s shape with `self`'s options unless overridden; with
/// `preserve_format` (the default) it keeps `self`'s strides when they are dense and
/// non-overlapping, else a dense layout with the same dimension order.
pub fn empty_like(
    self_: &Tensor,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    let dtype = Some(dtype.unwrap_or(self_.dtype()));
    let device = Some(device.unwrap_or(self_.device()));
    let (sizes, strides) = (self_.sizes(), self_.strides());
    match memory_format.unwrap_or(MemoryFormat::Preserve) {
        MemoryFormat::Preserve => {
            let strides = if is_non_overlapping_and_dense(&sizes, &strides) {
                strides
            } else {
                infer_dense_strides(&sizes, &strides)
            };
            crate::op::empty_strided::call(&sizes, &strides, dtype, layout, device, pin_memory)
        }
        format => crate::op::empty_memory_format::call(
            &sizes,
            dtype,
            layout,
            device,
            pin_memory,
            Some(format),
        ),
    }
}

/// `new_empty_strided`: an uninitialised tensor of `size` and `stride` with `self`'s dtype and
/// device unless given. Dispatched on `self`, unlike `empty_strided`, so a layer above the
/// backend (functionalization) makes the result its own kind of tensor.
pub fn new_empty_strided(
    self_: &Tensor,
    size: &[i64],
    stride: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    crate::op::empty_strided::call(
        size,
        stride,
        Some(dtype.unwrap_or(self_.dtype())),
        layout,
        Some(device.unwrap_or(self_.device())),
        pin_memory,
    )
}

/// `empty_like(self, options)` filled with `value`.
fn filled_like(
    self_: &Tensor,
    value: Scalar,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    let result =
        crate::op::empty_like::call(self_, dtype, layout, device, pin_memory, memory_format)?;
    crate::op::fill__Scalar::call(&result, value)
}

/// `full`: a new tensor of `size` filled with `fill_value`, whose dtype (when not given) is
/// inferred from the value: bool, long or the default float dtype.
pub fn full(
    size: &[i64],
    fill_value: Scalar,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let dtype = full_dtype(fill_value, dtype);
    let result =
        crate::op::empty_memory_format::call(size, Some(dtype), layout, device, pin_memory, None)?;
    crate::op::fill__Scalar::call(&result, fill_value)
}

/// `full.out`: resizes `out` (warning as `resize_output` does) and fills it.
pub fn full_out(size: &[i64], fill_value: Scalar, out: &Tensor) -> Result<Tensor> {
    crate::structured::resize_output(out, size)?;
    crate::op::fill__Scalar::call(out, fill_value)
}

/// `full_like`.
pub fn full_like(
    self_: &Tensor,
    fill_value: Scalar,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    filled_like(
        self_,
        fill_value,
        dtype,
        layout,
        device,
        pin_memory,
        memory_format,
    )
}

/// `zeros`.
pub fn zeros(
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    switchyard_core::torch_check!(
        size.iter().all(|d| *d >= 0),
        "zeros: Dimension size must be non-negative."
    );
    let dtype = Some(default_dtype(dtype));
    let result =
        crate::op::empty_memory_format::call(size, dtype, layout, device, pin_memory, None)?;
    crate::op::zero_::call(&result)
}

/// `zeros.out`: resizes `out` without a warning (PyTorch uses `resize_` here) and zeroes it.
pub fn zeros_out(size: &[i64], out: &Tensor) -> Result<Tensor> {
    crate::op::resize_::call(out, size, None)?;
    crate::op::zero_::call(out)
}

/// `zeros_like`.
pub fn zeros_like(
    self_: &Tensor,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    let result =
        crate::op::empty_like::call(self_, dtype, layout, device, pin_memory, memory_format)?;
    crate::op::zero_::call(&result)
}

/// `ones` (`full(size, 1.)` with the default float dtype unless given).
pub fn ones(
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    full(size, Scalar::Float(1.0), dtype, layout, device, pin_memory)
}

/// `ones.out` (`full.out(size, 1.)`).
pub fn ones_out(size: &[i64], out: &Tensor) -> Result<Tensor> {
    full_out(size, Scalar::Float(1.0), out)
}

/// `ones_like`.
pub fn ones_like(
    self_: &Tensor,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    filled_like(
        self_,
        Scalar::Float(1.0),
        dtype,
        layout,
        device,
        pin_memory,
        memory_format,
    )
}

/// `arange.start_step`: `Long` when every bound is integral and no dtype is given.
pub fn arange_start_step(
    start: Scalar,
    end: Scalar,
    step: Scalar,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let dtype = arange_dtype(start, end, step, dtype);
    let result =
        crate::op::empty_memory_format::call(&[0], Some(dtype), layout, device, pin_memory, None)?;
    crate::op::arange_start_out::call(start, end, step, &result)
}

/// `arange.start`.
pub fn arange_start(
    start: Scalar,
    end: Scalar,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    arange_start_step(
        start,
        end,
        Scalar::Int(1),
        dtype,
        layout,
        device,
        pin_memory,
    )
}

/// `arange`.
pub fn arange(
    end: Scalar,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    arange_start_step(
        Scalar::Int(0),
        end,
        Scalar::Int(1),
        dtype,
        layout,
        device,
        pin_memory,
    )
}

/// `arange.out`.
pub fn arange_out_out(end: Scalar, out: &Tensor) -> Result<Tensor> {
    crate::op::arange_start_out::call(Scalar::Int(0), end, Scalar::Int(1), out)
}

/// `linspace`.
pub fn linspace(
    start: Scalar,
    end: Scalar,
    steps: i64,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    check_linspace(steps)?;
    let dtype = Some(default_dtype(dtype));
    let result =
        crate::op::empty_memory_format::call(&[steps], dtype, layout, device, pin_memory, None)?;
    crate::op::linspace_out::call(start, end, steps, &result)
}

/// `eye.m`.
pub fn eye_m(
    n: i64,
    m: i64,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let dtype = Some(default_dtype(dtype));
    let result =
        crate::op::empty_memory_format::call(&[0], dtype, layout, device, pin_memory, None)?;
    crate::op::eye_m_out::call(n, m, &result)
}

/// `eye`.
pub fn eye(
    n: i64,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    eye_m(n, n, dtype, layout, device, pin_memory)
}

// ---------------------------------------------------------------------------------------------
// Random factories: allocate, then fill with a seeded in-place sampler (`uniform_`,
// `normal_`, `bernoulli_`, or PyTorch's `random_` for `randint`).
// ---------------------------------------------------------------------------------------------

/// `rand.generator`: uniform samples from `[0, 1)`.
pub fn rand_generator(
    size: &[i64],
    generator: Option<&Generator>,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let dtype = Some(default_dtype(dtype));
    let result =
        crate::op::empty_memory_format::call(size, dtype, layout, device, pin_memory, None)?;
    crate::op::uniform_::call(&result, 0.0, 1.0, generator)
}

/// `rand`.
pub fn rand(
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    rand_generator(size, None, dtype, layout, device, pin_memory)
}

/// `rand.out` (named `rand_out_out` by the generator, which disambiguates it from
/// `rand.generator_out`).
pub fn rand_out_out(size: &[i64], out: &Tensor) -> Result<Tensor> {
    rand_out_generator_out(size, None, out)
}

/// `rand.generator_out`: `resize_` (no warning), then `uniform_`.
pub fn rand_out_generator_out(
    size: &[i64],
    generator: Option<&Generator>,
    out: &Tensor,
) -> Result<Tensor> {
    crate::op::resize_::call(out, size, None)?;
    crate::op::uniform_::call(out, 0.0, 1.0, generator)
}

/// `rand_like.generator`.
pub fn rand_like_generator(
    self_: &Tensor,
    generator: Option<&Generator>,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    let result =
        crate::op::empty_like::call(self_, dtype, layout, device, pin_memory, memory_format)?;
    crate::op::uniform_::call(&result, 0.0, 1.0, generator)
}

/// `rand_like`.
pub fn rand_like(
    self_: &Tensor,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    rand_like_generator(
        self_,
        None,
        dtype,
        layout,
        device,
        pin_memory,
        memory_format,
    )
}

/// `randn.generator`: standard normal samples.
pub fn randn_generator(
    size: &[i64],
    generator: Option<&Generator>,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let dtype = Some(default_dtype(dtype));
    let result =
        crate::op::empty_memory_format::call(size, dtype, layout, device, pin_memory, None)?;
    crate::op::normal_::call(&result, 0.0, 1.0, generator)
}

/// `randn`.
pub fn randn(
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    randn_generator(size, None, dtype, layout, device, pin_memory)
}

/// `randn.generator_out`: `resize_` (no warning), then `normal_`.
pub fn randn_out_generator_out(
    size: &[i64],
    generator: Option<&Generator>,
    out: &Tensor,
) -> Result<Tensor> {
    crate::op::resize_::call(out, size, None)?;
    crate::op::normal_::call(out, 0.0, 1.0, generator)
}

/// `randn.out` (named `randn_out_out` by the generator).
pub fn randn_out_out(size: &[i64], out: &Tensor) -> Result<Tensor> {
    randn_out_generator_out(size, None, out)
}

/// `randn_like.generator`.
pub fn randn_like_generator(
    self_: &Tensor,
    generator: Option<&Generator>,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    let result =
        crate::op::empty_like::call(self_, dtype, layout, device, pin_memory, memory_format)?;
    crate::op::normal_::call(&result, 0.0, 1.0, generator)
}

/// `randn_like`.
pub fn randn_like(
    self_: &Tensor,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    randn_like_generator(
        self_,
        None,
        dtype,
        layout,
        device,
        pin_memory,
        memory_format,
    )
}

/// PyTorch's `random_(from, to, generator)` (not in the operator set): the checks on every
/// device, the draws on CPU (meta tensors have no data to fill).
fn random_from_to_(
    t: &Tensor,
    low: i64,
    high: i64,
    generator: Option<&Generator>,
) -> Result<Tensor> {
    if t.is_meta() {
        random_from_to(t.dtype(), low, high)?;
        return Ok(t.clone());
    }
    let generator = match generator {
        Some(g) => g.clone(),
        None => switchyard_core::generator::default_generator(Device::CPU)?,
    };
    if !t.is_cpu() {
        // Another device (an external backend): draw on the host with the CPU generator, then
        // copy over; `random_` is not an operator here, so a backend cannot serve the draws.
        let host = Tensor::allocate(&t.sizes(), t.dtype(), Device::CPU)?;
        random_fill(&host, low, high, &generator)?;
        crate::op::copy_::call(t, &host, false)?;
        return Ok(t.clone());
    }
    random_fill(t, low, high, &generator)?;
    Ok(t.clone())
}

/// `randint.low_generator`: integers drawn uniformly from `[low, high)`.
pub fn randint_low_generator(
    low: i64,
    high: i64,
    size: &[i64],
    generator: Option<&Generator>,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let dtype = Some(dtype.unwrap_or(ScalarType::Long));
    let result =
        crate::op::empty_memory_format::call(size, dtype, layout, device, pin_memory, None)?;
    random_from_to_(&result, low, high, generator)
}

/// `randint.low`.
pub fn randint_low(
    low: i64,
    high: i64,
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    randint_low_generator(low, high, size, None, dtype, layout, device, pin_memory)
}

/// `randint.generator`.
pub fn randint_generator(
    high: i64,
    size: &[i64],
    generator: Option<&Generator>,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    randint_low_generator(0, high, size, generator, dtype, layout, device, pin_memory)
}

/// `randint`.
pub fn randint(
    high: i64,
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    randint_low_generator(0, high, size, None, dtype, layout, device, pin_memory)
}

/// `randint.low_generator_out`: `resize_` (no warning), then `random_(low, high)`.
pub fn randint_out_low_generator_out(
    low: i64,
    high: i64,
    size: &[i64],
    generator: Option<&Generator>,
    out: &Tensor,
) -> Result<Tensor> {
    crate::op::resize_::call(out, size, None)?;
    random_from_to_(out, low, high, generator)
}

/// `randint.low_out`.
pub fn randint_out_low_out(low: i64, high: i64, size: &[i64], out: &Tensor) -> Result<Tensor> {
    randint_out_low_generator_out(low, high, size, None, out)
}

/// `randint.generator_out`.
pub fn randint_out_generator_out(
    high: i64,
    size: &[i64],
    generator: Option<&Generator>,
    out: &Tensor,
) -> Result<Tensor> {
    randint_out_low_generator_out(0, high, size, generator, out)
}

/// `randint.out`.
pub fn randint_out_out(high: i64, size: &[i64], out: &Tensor) -> Result<Tensor> {
    randint_out_low_generator_out(0, high, size, None, out)
}

/// `normal_functional`: a copy of `self` filled with normal samples.
pub fn normal_functional(
    self_: &Tensor,
    mean: f64,
    std: f64,
    generator: Option<&Generator>,
) -> Result<Tensor> {
    let result = crate::op::clone::call(self_, None)?;
    crate::op::normal_::call(&result, mean, std, generator)
}

/// `bernoulli`: element `i` is 1 with probability `self[i]`, in `self`'s dtype.
pub fn bernoulli(self_: &Tensor, generator: Option<&Generator>) -> Result<Tensor> {
    let result = crate::op::empty_like::call(
        self_,
        None,
        None,
        None,
        None,
        Some(MemoryFormat::Contiguous),
    )?;
    crate::op::bernoulli__Tensor::call(&result, self_, generator)
}

/// `bernoulli.p`: each element is 1 with probability `p`, in `self`'s dtype and shape.
pub fn bernoulli_p(self_: &Tensor, p: f64, generator: Option<&Generator>) -> Result<Tensor> {
    let result = crate::op::empty_like::call(
        self_,
        None,
        None,
        None,
        None,
        Some(MemoryFormat::Contiguous),
    )?;
    crate::op::bernoulli__float::call(&result, p, generator)
}

/// `bernoulli_.float` on Meta: `p` in `[0, 1]`, `self` without internal overlap.
pub fn bernoulli_float_meta_(
    self_: &Tensor,
    p: f64,
    _generator: Option<&Generator>,
) -> Result<Tensor> {
    crate::meta::factory_support::check_bernoulli_p(p)?;
    crate::meta::index_support::assert_no_internal_overlap(self_)?;
    Ok(self_.clone())
}

/// `bernoulli_.Tensor` on Meta: `self` without internal overlap, `p` broadcasting to it.
pub fn bernoulli_tensor_meta_(
    self_: &Tensor,
    p: &Tensor,
    _generator: Option<&Generator>,
) -> Result<Tensor> {
    crate::meta::index_support::assert_no_internal_overlap(self_)?;
    crate::meta::index_support::broadcast_strides(&p.sizes(), &p.strides(), &self_.sizes())?;
    Ok(self_.clone())
}

/// `bernoulli.out` on Meta: `out` resized (contiguous) to `self`'s shape.
pub fn bernoulli_out_meta(
    self_: &Tensor,
    generator: Option<&Generator>,
    out: &Tensor,
) -> Result<Tensor> {
    if out.sizes() != self_.sizes() {
        out.resize_contiguous(&self_.sizes())?;
    }
    bernoulli_tensor_meta_(out, self_, generator)
}
