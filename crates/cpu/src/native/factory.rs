//! CPU kernels: factory operators (`empty`, `empty_strided`, `arange`, `linspace`, `eye`) and
//! the random fills (`uniform_`, `normal_`, `bernoulli_`), which draw from a seedable
//! [`Generator`] (the default CPU generator when none is passed) as PyTorch's CPU kernels do;
//! see [`crate::random`].

use crate::loops::map;
use crate::parallel;
use crate::random;
use switchyard_core::element::Element;
use switchyard_core::generator::default_generator;
use switchyard_core::half::{bf16, f16};
use switchyard_core::shape::DimVec;
use switchyard_core::{
    Access, Device, Error, Generator, Layout, MemoryFormat, Result, Scalar, ScalarType, Tensor,
    dispatch_dtype, with_tensors,
};
use switchyard_ops::meta::factory_support::{
    arange_acc_dtype, arange_resize_warning, arange_size, check_bernoulli_p, check_empty_strided,
    check_eye, check_linspace, check_normal_dtype, check_normal_std, check_options, check_uniform,
    default_dtype, empty_tensor, not_implemented_for,
};
use switchyard_ops::meta::index_support::{assert_no_internal_overlap, broadcast_strides};

/// Work below this many elements stays on one thread (PyTorch's `GRAIN_SIZE`).
const GRAIN_SIZE: usize = 32_768;

/// The generator to draw from: the given one, or the default CPU generator.
fn generator_or_default(generator: Option<&Generator>) -> Result<Generator> {
    match generator {
        Some(g) => Ok(g.clone()),
        None => default_generator(Device::CPU),
    }
}

/// `empty.memory_format` on CPU.
pub fn empty_cpu(
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    _device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    check_options(layout, pin_memory, Device::CPU)?;
    empty_tensor(size, default_dtype(dtype), Device::CPU, memory_format)
}

/// `empty_strided` on CPU.
pub fn empty_strided_cpu(
    size: &[i64],
    stride: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    _device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    check_options(layout, pin_memory, Device::CPU)?;
    check_empty_strided(size, stride)?;
    Tensor::allocate_strided(size, stride, default_dtype(dtype), Device::CPU)
}

// ---------------------------------------------------------------------------------------------
// arange / linspace / eye
// ---------------------------------------------------------------------------------------------

/// Runs `fill` on a contiguous version of `out` (`out` itself when contiguous), copying back.
fn fill_contiguous(out: &Tensor, fill: impl FnOnce(&Tensor) -> Result<()>) -> Result<()> {
    if out.is_contiguous() {
        return fill(out);
    }
    let tmp = Tensor::allocate(&out.sizes(), out.dtype(), out.device())?;
    fill(&tmp)?;
    dispatch_dtype!(out.dtype(), T => map::<T, T, 1>(out, [&tmp], |[x]| x))
}

/// Fills a contiguous tensor's elements with `value(i)`, split across threads in the chunks
/// PyTorch's `parallel_for` uses (which some kernels' results depend on).
fn fill_indexed<T: Element>(
    t: &Tensor,
    chunk_fill: impl Fn(&mut [T::Repr], usize) + Sync,
) -> Result<()> {
    let n = t.numel() as usize;
    let offset = t.storage_offset() as usize;
    let size = std::mem::size_of::<T::Repr>();
    with_tensors(&[(t, Access::Write)], |data| {
        let bytes = data.bytes_mut(0)?;
        let run = bytes
            .get_mut(offset * size..(offset + n) * size)
            .ok_or_else(|| Error::runtime("internal error: factory output outside its storage"))?;
        let tasks = parallel::num_threads().min(n.div_ceil(GRAIN_SIZE)).max(1);
        let chunk = n.div_ceil(tasks).max(1);
        if tasks > 1 {
            parallel::for_each_chunk_mut(run, chunk * size, &|i, part| {
                chunk_fill(crate::loops::typed_mut::<T>(part)?, i * chunk);
                Ok(())
            })
        } else {
            chunk_fill(crate::loops::typed_mut::<T>(run)?, 0);
            Ok(())
        }
    })
}

/// How `arange` computes its values in a dtype (PyTorch's vectorised `arange_kernel` with
/// 256-bit vectors): blocks of two vectors whose base is rounded to the dtype and whose lanes
/// add `k * step` to it; the remainder element by element; all with fused multiply-adds.
trait ArangeElem: Element {
    /// Lanes of a 256-bit vector of this type.
    const LANES: usize;
    /// `start + step * idx` in the accumulation type, converted.
    fn scalar(start: Scalar, step: Scalar, idx: i64) -> Self;
    /// Lane `k` of a vector whose first element is element `idx`.
    fn lane(start: Scalar, step: Scalar, idx: i64, k: i64) -> Self;
}

macro_rules! arange_int {
    ($($t:ty),*) => {$(
        impl ArangeElem for $t {
            const LANES: usize = 32 / std::mem::size_of::<$t>();
            fn scalar(start: Scalar, step: Scalar, idx: i64) -> Self {
                Self::from_i64_lossy(start.to_i64_lossy().wrapping_add(step.to_i64_lossy().wrapping_mul(idx)))
            }
            fn lane(start: Scalar, step: Scalar, idx: i64, k: i64) -> Self {
                Self::scalar(start, step, idx.wrapping_add(k))
            }
        }
    )*};
}
arange_int!(u8, i8, i16, i32, i64);

impl ArangeElem for f64 {
    const LANES: usize = 4;
    fn scalar(start: Scalar, step: Scalar, idx: i64) -> Self {
        step.to_f64().mul_add(idx as f64, start.to_f64())
    }
    fn lane(start: Scalar, step: Scalar, idx: i64, k: i64) -> Self {
        (k as f64).mul_add(step.to_f64(), Self::scalar(start, step, idx))
    }
}

impl ArangeElem for f32 {
    const LANES: usize = 8;
    fn scalar(start: Scalar, step: Scalar, idx: i64) -> Self {
        f64::scalar(start, step, idx) as f32
    }
    fn lane(start: Scalar, step: Scalar, idx: i64, k: i64) -> Self {
        let base = f64::from(Self::scalar(start, step, idx));
        (k as f64).mul_add(step.to_f64(), base) as f32
    }
}

macro_rules! arange_half {
    ($($t:ty),*) => {$(
        impl ArangeElem for $t {
            const LANES: usize = 16;
            fn scalar(start: Scalar, step: Scalar, idx: i64) -> Self {
                <$t>::from_f32((step.to_f64() as f32).mul_add(idx as f32, start.to_f64() as f32))
            }
            fn lane(start: Scalar, step: Scalar, idx: i64, k: i64) -> Self {
                let base = Self::scalar(start, step, idx).to_f32();
                <$t>::from_f32((k as f32).mul_add(step.to_f64() as f32, base))
            }
        }
    )*};
}
arange_half!(f16, bf16);

fn arange_fill<T: ArangeElem>(t: &Tensor, start: Scalar, step: Scalar) -> Result<()> {
    fill_indexed::<T>(t, |part, first| {
        let n = part.len();
        let block = 2 * T::LANES;
        let mut i = 0;
        while i + block <= n {
            for k in 0..block {
                let lane_base = (first + i + (k / T::LANES) * T::LANES) as i64;
                let v = T::lane(start, step, lane_base, (k % T::LANES) as i64);
                part[i + k] = v.to_repr();
            }
            i += block;
        }
        for (j, d) in part.iter_mut().enumerate().skip(i) {
            *d = T::scalar(start, step, (first + j) as i64).to_repr();
        }
    })
}

/// `arange.start_out` on CPU: `start, start + step, ...` below `end`, resizing `out`.
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
    let acc = arange_acc_dtype(out.dtype());
    for s in [start, step] {
        s.check_fits(acc)?;
    }
    fill_contiguous(out, |t| match t.dtype() {
        ScalarType::Byte => arange_fill::<u8>(t, start, step),
        ScalarType::Char => arange_fill::<i8>(t, start, step),
        ScalarType::Short => arange_fill::<i16>(t, start, step),
        ScalarType::Int => arange_fill::<i32>(t, start, step),
        ScalarType::Long => arange_fill::<i64>(t, start, step),
        ScalarType::Half => arange_fill::<f16>(t, start, step),
        ScalarType::BFloat16 => arange_fill::<bf16>(t, start, step),
        ScalarType::Float => arange_fill::<f32>(t, start, step),
        ScalarType::Double => arange_fill::<f64>(t, start, step),
        ScalarType::Bool => Err(not_implemented_for("arange_cpu", ScalarType::Bool)),
    })?;
    Ok(out.clone())
}

/// How `linspace` computes element `i` of `steps` in a dtype (PyTorch's scalar
/// `linspace_kernel`): the first half counts up from `start`, the second half down from `end`,
/// with a step computed in the dtype (`f64` for integers).
trait LinspaceElem: Element {
    fn value(start: Self, end: Self, steps: i64, i: i64) -> Self;
}

macro_rules! linspace_int {
    ($($t:ty),*) => {$(
        impl LinspaceElem for $t {
            fn value(start: Self, end: Self, steps: i64, i: i64) -> Self {
                let (s, e) = (start.to_f64(), end.to_f64());
                let step = (e - s) / (steps - 1) as f64;
                if i < steps / 2 {
                    Self::from_f64_lossy(step.mul_add(i as f64, s))
                } else {
                    Self::from_f64_lossy((-step).mul_add((steps - i - 1) as f64, e))
                }
            }
        }
    )*};
}
linspace_int!(u8, i8, i16, i32, i64);

macro_rules! linspace_float {
    ($($t:ty),*) => {$(
        impl LinspaceElem for $t {
            fn value(start: Self, end: Self, steps: i64, i: i64) -> Self {
                let step = (end - start) / (steps - 1) as $t;
                if i < steps / 2 {
                    step.mul_add(i as $t, start)
                } else {
                    (-step).mul_add((steps - i - 1) as $t, end)
                }
            }
        }
    )*};
}
linspace_float!(f32, f64);

macro_rules! linspace_half {
    ($($t:ty => $fused:expr),*) => {$(
        impl LinspaceElem for $t {
            // The 16-bit floats compute in f32 (step unrounded) and round once. PyTorch's
            // build fuses the multiply-add for BFloat16 but not for Half (measured against
            // PyTorch 2.15: `linspace(10, -10, 7)` differs in the sign of its middle zero).
            fn value(start: Self, end: Self, steps: i64, i: i64) -> Self {
                let (s, e) = (start.to_f32(), end.to_f32());
                let step = (e - s) / (steps - 1) as f32;
                let v = if i < steps / 2 {
                    if $fused { step.mul_add(i as f32, s) } else { s + step * i as f32 }
                } else {
                    let k = (steps - i - 1) as f32;
                    if $fused { (-step).mul_add(k, e) } else { e - step * k }
                };
                <$t>::from_f32(v)
            }
        }
    )*};
}
linspace_half!(f16 => false, bf16 => true);

fn linspace_fill<T: LinspaceElem>(
    t: &Tensor,
    start: Scalar,
    end: Scalar,
    steps: i64,
) -> Result<()> {
    let (s, e): (T, T) = (start.to::<T>()?, end.to::<T>()?);
    fill_indexed::<T>(t, |part, first| {
        for (j, d) in part.iter_mut().enumerate() {
            *d = T::value(s, e, steps, (first + j) as i64).to_repr();
        }
    })
}

/// `linspace.out` on CPU: `steps` evenly spaced values from `start` to `end`.
pub fn linspace_out(start: Scalar, end: Scalar, steps: i64, out: &Tensor) -> Result<Tensor> {
    check_linspace(steps)?;
    if out.numel() != steps {
        out.resize_contiguous(&[steps])?;
    }
    if steps == 0 {
        return Ok(out.clone());
    }
    if steps == 1 {
        // `fill_(start)`: any dtype, bool included.
        dispatch_dtype!(out.dtype(), T => {
            let v: T = start.to::<T>()?;
            let offset = out.storage_offset() as usize;
            with_tensors(&[(out, Access::Write)], |data| {
                let ok = switchyard_core::element::write_element(data.bytes_mut(0)?, offset, v);
                if ok { Ok(()) } else { Err(Error::runtime("internal error: linspace output outside its storage")) }
            })?;
        });
        return Ok(out.clone());
    }
    fill_contiguous(out, |t| match t.dtype() {
        ScalarType::Byte => linspace_fill::<u8>(t, start, end, steps),
        ScalarType::Char => linspace_fill::<i8>(t, start, end, steps),
        ScalarType::Short => linspace_fill::<i16>(t, start, end, steps),
        ScalarType::Int => linspace_fill::<i32>(t, start, end, steps),
        ScalarType::Long => linspace_fill::<i64>(t, start, end, steps),
        ScalarType::Half => linspace_fill::<f16>(t, start, end, steps),
        ScalarType::BFloat16 => linspace_fill::<bf16>(t, start, end, steps),
        ScalarType::Float => linspace_fill::<f32>(t, start, end, steps),
        ScalarType::Double => linspace_fill::<f64>(t, start, end, steps),
        ScalarType::Bool => Err(not_implemented_for("linspace_cpu", ScalarType::Bool)),
    })?;
    Ok(out.clone())
}

/// `eye.out` on CPU.
pub fn eye_out_cpu_out(n: i64, out: &Tensor) -> Result<Tensor> {
    eye_out_cpu_m_out(n, n, out)
}

/// `eye.m_out` on CPU: an `n × m` matrix with ones on the diagonal.
pub fn eye_out_cpu_m_out(n: i64, m: i64, out: &Tensor) -> Result<Tensor> {
    check_eye(n, m)?;
    if out.sizes().as_slice() != [n, m] {
        out.resize_contiguous(&[n, m])?;
    }
    let (strides, offset) = (out.strides(), out.storage_offset());
    let offsets: Vec<i64> = switchyard_core::alloc::try_collect(out.geometry().offsets())?;
    let diagonal = (0..n.min(m)).map(|i| offset + i * (strides[0] + strides[1]));
    let diagonal: Vec<i64> = switchyard_core::alloc::try_collect(diagonal)?;
    dispatch_dtype!(out.dtype(), T => {
        let (zero, one) = (T::from_i64_lossy(0), T::from_i64_lossy(1));
        with_tensors(&[(out, Access::Write)], |data| {
            let dst = crate::loops::typed_mut::<T>(data.bytes_mut(0)?)?;
            let bad = || Error::runtime("internal error: eye addressed memory outside its storage");
            for o in offsets.iter().map(|o| *o as usize) {
                *dst.get_mut(o).ok_or_else(bad)? = zero.to_repr();
            }
            for o in diagonal.iter().map(|o| *o as usize) {
                *dst.get_mut(o).ok_or_else(bad)? = one.to_repr();
            }
            Ok(())
        })
    })?;
    Ok(out.clone())
}

// ---------------------------------------------------------------------------------------------
// Random fills
// ---------------------------------------------------------------------------------------------

/// `uniform_` on CPU: samples from `[from, to)`.
pub fn uniform_(
    self_: &Tensor,
    from: f64,
    to: f64,
    generator: Option<&Generator>,
) -> Result<Tensor> {
    let (from, to) = check_uniform(self_.dtype(), from, to)?;
    if self_.numel() == 0 {
        return Ok(self_.clone());
    }
    // PyTorch fills through a nullary TensorIterator, which checks this.
    assert_no_internal_overlap(self_)?;
    let g = generator_or_default(generator)?;
    let mut state = g.lock();
    dispatch_dtype!(self_.dtype(), T => random::uniform::<T>(self_, &mut state, from, to))?;
    Ok(self_.clone())
}

/// `normal_` on CPU: samples from N(`mean`, `std`²).
pub fn normal_(
    self_: &Tensor,
    mean: f64,
    std: f64,
    generator: Option<&Generator>,
) -> Result<Tensor> {
    check_normal_std(std)?;
    if self_.numel() == 0 {
        return Ok(self_.clone());
    }
    check_normal_dtype(self_.dtype())?;
    // PyTorch fills a non-contiguous `self` through a nullary TensorIterator, which checks
    // this (a contiguous one has no elements sharing memory).
    assert_no_internal_overlap(self_)?;
    let g = generator_or_default(generator)?;
    let mut state = g.lock();
    dispatch_dtype!(self_.dtype(), T => random::normal::<T>(self_, &mut state, mean, std))?;
    Ok(self_.clone())
}

/// `bernoulli_.float` on CPU: each element is 1 with probability `p`.
#[allow(non_snake_case)]
pub fn bernoulli__float(self_: &Tensor, p: f64, generator: Option<&Generator>) -> Result<Tensor> {
    check_bernoulli_p(p)?;
    assert_no_internal_overlap(self_)?;
    let g = generator_or_default(generator)?;
    let mut state = g.lock();
    dispatch_dtype!(self_.dtype(), T => random::bernoulli_scalar::<T>(self_, &mut state, p))?;
    Ok(self_.clone())
}

/// `bernoulli_.Tensor` on CPU: element `i` is 1 with probability `p[i]` (`p` broadcasts to
/// `self`).
#[allow(non_snake_case)]
pub fn bernoulli__tensor(
    self_: &Tensor,
    p: &Tensor,
    generator: Option<&Generator>,
) -> Result<Tensor> {
    assert_no_internal_overlap(self_)?;
    if !p.dtype().is_floating_point() {
        return Err(not_implemented_for("bernoulli_tensor_cpu_p_", p.dtype()));
    }
    let p = if p.is_alias_of(self_) {
        let c = Tensor::allocate(&p.sizes(), p.dtype(), Device::CPU)?;
        dispatch_dtype!(p.dtype(), T => map::<T, T, 1>(&c, [p], |[x]| x))?;
        c
    } else {
        p.clone()
    };
    let p_strides: DimVec = broadcast_strides(&p.sizes(), &p.strides(), &self_.sizes())?;
    let g = generator_or_default(generator)?;
    let mut state = g.lock();
    dispatch_dtype!(self_.dtype(), T => dispatch_dtype!(p.dtype(), P => {
        random::bernoulli_tensor::<T, P>(self_, &p, &p_strides, &mut state)
    }))?;
    Ok(self_.clone())
}

/// `bernoulli.out` on CPU: `out` resized to `self`'s shape, element `i` drawn with
/// probability `self[i]`.
pub fn bernoulli_out(
    self_: &Tensor,
    generator: Option<&Generator>,
    out: &Tensor,
) -> Result<Tensor> {
    if out.sizes() != self_.sizes() {
        out.resize_contiguous(&self_.sizes())?;
    }
    bernoulli__tensor(out, self_, generator)
}
