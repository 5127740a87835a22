//! The kernels the sidecar implements itself: the [`SidecarNativeFunctions`] trait generated
//! from `backend.yaml`, one associated function per listed operator with the dispatcher's
//! typed signature. A kernel that meets inputs it does not handle defers to the CPU fallback
//! with [`call_fallback`], naming the operator by type.
//!
//! The compute kernels (add, mul, relu, mm) handle contiguous `float32` tensors of equal
//! shapes on the sidecar, which is what a simple accelerator would offer; everything else
//! they hand to the fallback. `relu` is listed under `autograd:` in `backend.yaml`: its kernel
//! is an autograd kernel (see [`crate::autograd`]), which gets the call's key set.

use std::sync::atomic::Ordering;

use switchyard_backend::{
    Access, Device, DeviceType, DispatchKeySet, Error, Layout, MemoryFormat, Result, Scalar,
    ScalarType, StorageData, Tensor, call_fallback, with_tensors,
};
use switchyard_ops::meta::index_support::{infer_dense_strides, is_non_overlapping_and_dense};
use switchyard_ops::op;

use crate::generated::SidecarNativeFunctions;
use crate::memory::{COUNTERS, SidecarMemory};

fn memory(data: &StorageData) -> Result<&SidecarMemory> {
    data.device_memory()
        .and_then(|m| m.as_any().downcast_ref::<SidecarMemory>())
        .ok_or_else(|| Error::runtime("sidecar: the tensor's memory is not sidecar memory"))
}

fn memory_mut(data: &mut StorageData) -> Result<&mut SidecarMemory> {
    data.device_memory_mut()
        .and_then(|m| m.as_any_mut().downcast_mut::<SidecarMemory>())
        .ok_or_else(|| Error::runtime("sidecar: the tensor's memory is not sidecar memory"))
}

fn out_of_bounds() -> Error {
    Error::runtime("sidecar: element outside the tensor's storage")
}

/// The elements of a sidecar tensor in row-major order, as bytes of its dtype (a copy inside
/// device memory; not a transfer).
fn gather(t: &Tensor) -> Result<Vec<u8>> {
    let size = t.element_size();
    with_tensors(&[(t, Access::Read)], |data| {
        let mem = memory(data.data(0)?)?;
        let g = data.geometry(0);
        let mut out = Vec::with_capacity(usize::try_from(g.numel()).unwrap_or(0) * size);
        for offset in g.offsets() {
            let start = usize::try_from(offset).map_err(|_| out_of_bounds())? * size;
            out.extend_from_slice(
                mem.bytes
                    .get(start..start + size)
                    .ok_or_else(out_of_bounds)?,
            );
        }
        Ok(out)
    })
}

/// Writes row-major element bytes into a sidecar tensor's strided positions.
fn scatter(t: &Tensor, bytes: &[u8]) -> Result<()> {
    let size = t.element_size();
    with_tensors(&[(t, Access::Write)], |data| {
        let g = data.geometry(0).clone();
        let mem = memory_mut(data.data_mut(0)?)?;
        for (offset, element) in g.offsets().zip(bytes.chunks_exact(size)) {
            let start = usize::try_from(offset).map_err(|_| out_of_bounds())? * size;
            mem.bytes
                .get_mut(start..start + size)
                .ok_or_else(out_of_bounds)?
                .copy_from_slice(element);
        }
        Ok(())
    })
}

/// Copies a sidecar tensor to a new contiguous CPU tensor: one device-to-host transfer.
pub(crate) fn download(t: &Tensor) -> Result<Tensor> {
    let bytes = gather(t)?;
    COUNTERS.device_to_host.fetch_add(1, Ordering::Relaxed);
    COUNTERS
        .device_to_host_bytes
        .fetch_add(bytes.len() as u64, Ordering::Relaxed);
    let host = Tensor::allocate(&t.sizes(), t.dtype(), Device::CPU)?;
    with_tensors(&[(&host, Access::Write)], |data| {
        data.bytes_mut(0)?
            .get_mut(..bytes.len())
            .ok_or_else(out_of_bounds)?
            .copy_from_slice(&bytes);
        Ok(())
    })?;
    Ok(host)
}

/// Copies a CPU tensor (broadcast to `dst`'s shape, converted to its dtype) into the sidecar
/// tensor `dst`: one host-to-device transfer.
fn upload(src: &Tensor, dst: &Tensor) -> Result<()> {
    let staged = op::expand::call(src, &dst.sizes(), false)?;
    let staged = op::_to_copy::call(
        &staged,
        Some(dst.dtype()),
        None,
        None,
        None,
        false,
        Some(MemoryFormat::Contiguous),
    )?;
    let bytes = with_tensors(&[(&staged, Access::Read)], |data| {
        let start = usize::try_from(data.geometry(0).storage_offset())
            .map_err(|_| out_of_bounds())?
            * staged.element_size();
        let len =
            usize::try_from(staged.numel()).map_err(|_| out_of_bounds())? * staged.element_size();
        Ok(data
            .bytes(0)?
            .get(start..start + len)
            .ok_or_else(out_of_bounds)?
            .to_vec())
    })?;
    COUNTERS.host_to_device.fetch_add(1, Ordering::Relaxed);
    COUNTERS
        .host_to_device_bytes
        .fetch_add(bytes.len() as u64, Ordering::Relaxed);
    scatter(dst, &bytes)
}

/// Copies a sidecar tensor to a new CPU tensor laid out as `Tensor::cpu()` lays it out
/// (PyTorch's `_to_copy` with the memory format preserved): a non-overlapping and dense tensor
/// keeps its strides, any other gets dense strides in its own stride order. One
/// device-to-host transfer, then a copy on the host when the layout is not contiguous.
///
/// The CPU fallback runs CPU kernels on these copies, and a kernel's output layout follows its
/// inputs' (an elementwise operator on a transposed tensor gives a transposed result, a
/// `clone` keeps the stride order): with contiguous copies the sidecar's results would have
/// other strides than the CPU's and than the Meta kernels predict, which `as_strided` and
/// `view` observe.
fn download_preserving_layout(t: &Tensor) -> Result<Tensor> {
    let host = download(t)?;
    let g = t.geometry();
    let strides: Vec<i64> = if is_non_overlapping_and_dense(g.sizes(), g.strides()) {
        g.strides().to_vec()
    } else {
        infer_dense_strides(g.sizes(), g.strides()).to_vec()
    };
    if strides.as_slice() == host.strides().as_slice() {
        return Ok(host);
    }
    let laid_out = Tensor::allocate_strided(g.sizes(), &strides, t.dtype(), Device::CPU)?;
    op::copy_::call(&laid_out, &host, false)?;
    Ok(laid_out)
}

fn is_sidecar(t: &Tensor) -> bool {
    t.device().kind() == DeviceType::PrivateUse1
}

/// Whether the sidecar's own compute kernels take these operands: `float32`, contiguous, on
/// the sidecar, all of one shape.
pub(crate) fn native_f32(tensors: &[&Tensor]) -> bool {
    let Some(first) = tensors.first() else {
        return false;
    };
    tensors.iter().all(|t| {
        is_sidecar(t)
            && t.dtype() == ScalarType::Float
            && t.is_contiguous()
            && t.sizes() == first.sizes()
    })
}

fn read_f32(t: &Tensor) -> Result<Vec<f32>> {
    Ok(gather(t)?
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

fn new_f32(sizes: &[i64], values: &[f32]) -> Result<Tensor> {
    let out = Tensor::allocate(sizes, ScalarType::Float, crate::device())?;
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    scatter(&out, &bytes)?;
    Ok(out)
}

fn elementwise(a: &Tensor, b: &Tensor, f: impl Fn(f32, f32) -> f32) -> Result<Tensor> {
    let (x, y) = (read_f32(a)?, read_f32(b)?);
    let values: Vec<f32> = x.iter().zip(&y).map(|(p, q)| f(*p, *q)).collect();
    new_f32(&a.sizes(), &values)
}

/// `relu` of a tensor [`native_f32`] takes, on the device (NaN stays NaN, as PyTorch's).
pub(crate) fn relu_f32(t: &Tensor) -> Result<Tensor> {
    let values: Vec<f32> = read_f32(t)?
        .into_iter()
        .map(|x| if x > 0.0 || x.is_nan() { x } else { 0.0 })
        .collect();
    new_f32(&t.sizes(), &values)
}

/// `relu`'s gradient from its output, on the device: `grad` where `result > 0`, else 0
/// (PyTorch's `threshold_backward(grad, result, 0)`), for operands [`native_f32`] takes.
pub(crate) fn threshold_backward_f32(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    elementwise(grad, result, |g, r| if r > 0.0 { g } else { 0.0 })
}

/// The sidecar's kernels.
pub(crate) struct Sidecar;

impl SidecarNativeFunctions for Sidecar {
    /// Contiguous `float32` operands of one shape on the sidecar; anything else goes to the
    /// CPU fallback.
    fn add_Tensor(self_: &Tensor, other: &Tensor, alpha: Scalar) -> Result<Tensor> {
        if native_f32(&[self_, other])
            && let Ok(a) = alpha.to::<f32>()
        {
            return elementwise(self_, other, |x, y| x + a * y);
        }
        call_fallback::<op::add_Tensor>(crate::fallback, (self_, other, alpha))
    }

    /// As `add_Tensor`.
    fn mul_Tensor(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
        if native_f32(&[self_, other]) {
            return elementwise(self_, other, |x, y| x * y);
        }
        call_fallback::<op::mul_Tensor>(crate::fallback, (self_, other))
    }

    /// The sidecar's autograd kernel (registered at `AutogradPrivateUse1`): records a
    /// [`SidecarReluBackward`](crate::autograd::SidecarReluBackward) node, computes `float32`
    /// on the device and redispatches anything else below the autograd keys with `ks`.
    fn relu(ks: DispatchKeySet, self_: &Tensor) -> Result<Tensor> {
        crate::autograd::relu(ks, self_)
    }

    /// Contiguous `float32` matrices on the sidecar; anything else (and every error message)
    /// comes from the fallback.
    fn mm(self_: &Tensor, mat2: &Tensor) -> Result<Tensor> {
        let shapes_ok = self_.dim() == 2 && mat2.dim() == 2 && self_.sizes()[1] == mat2.sizes()[0];
        let native = [self_, mat2]
            .iter()
            .all(|t| is_sidecar(t) && t.dtype() == ScalarType::Float && t.is_contiguous());
        if !(shapes_ok && native) {
            return call_fallback::<op::mm>(crate::fallback, (self_, mat2));
        }
        let to_usize = |v: i64| usize::try_from(v).map_err(|_| out_of_bounds());
        let n = to_usize(self_.sizes()[0])?;
        let k = to_usize(self_.sizes()[1])?;
        let m = to_usize(mat2.sizes()[1])?;
        let (a, b) = (read_f32(self_)?, read_f32(mat2)?);
        let mut c = vec![0.0f32; n * m];
        for i in 0..n {
            for p in 0..k {
                let x = a[i * k + p];
                for j in 0..m {
                    c[i * m + j] += x * b[p * m + j];
                }
            }
        }
        new_f32(&[self_.sizes()[0], mat2.sizes()[1]], &c)
    }

    /// The batched transfer the CPU fallback uses: one call is one batch, however many
    /// tensors it carries. CPU tensors pass through; sidecar tensors keep their layout as
    /// `Tensor::cpu()` keeps it.
    fn _to_cpu(tensors: &[Tensor]) -> Result<Vec<Tensor>> {
        COUNTERS.to_cpu_batches.fetch_add(1, Ordering::Relaxed);
        tensors
            .iter()
            .map(|t| {
                if is_sidecar(t) {
                    download_preserving_layout(t)
                } else {
                    Ok(t.clone())
                }
            })
            .collect()
    }

    /// `copy_` between the sidecar and the host (either way) or within the sidecar.
    fn _copy_from(self_: &Tensor, dst: &Tensor, _non_blocking: bool) -> Result<Tensor> {
        let src = self_;
        match (is_sidecar(src), is_sidecar(dst)) {
            (true, true) if src.dtype() == dst.dtype() && src.sizes() == dst.sizes() => {
                scatter(dst, &gather(src)?)?;
            }
            (true, true) => upload(&download(src)?, dst)?,
            (false, true) => upload(src, dst)?,
            (true, false) => {
                op::copy_::call(dst, &download(src)?, false)?;
            }
            (false, false) => {
                return Err(Error::runtime(format!(
                    "sidecar: _copy_from called for {} -> {}",
                    src.device(),
                    dst.device()
                )));
            }
        }
        Ok(dst.clone())
    }

    /// A new sidecar tensor (contiguous whatever memory format is asked for).
    fn empty_memory_format(
        size: &[i64],
        dtype: Option<ScalarType>,
        _layout: Option<Layout>,
        device: Option<Device>,
        _pin_memory: Option<bool>,
        _memory_format: Option<MemoryFormat>,
    ) -> Result<Tensor> {
        Tensor::allocate(
            size,
            dtype.unwrap_or(ScalarType::Float),
            device.unwrap_or_else(crate::device),
        )
    }

    /// A new sidecar tensor with the given strides.
    fn empty_strided(
        size: &[i64],
        stride: &[i64],
        dtype: Option<ScalarType>,
        _layout: Option<Layout>,
        device: Option<Device>,
        _pin_memory: Option<bool>,
    ) -> Result<Tensor> {
        Tensor::allocate_strided(
            size,
            stride,
            dtype.unwrap_or(ScalarType::Float),
            device.unwrap_or_else(crate::device),
        )
    }

    /// Sidecar tensors are strided, so the generic view kernel serves them.
    fn view(self_: &Tensor, size: &[i64]) -> Result<Tensor> {
        switchyard_ops::native::view(self_, size)
    }

    /// The generic strided kernel.
    fn as_strided(
        self_: &Tensor,
        size: &[i64],
        stride: &[i64],
        storage_offset: Option<i64>,
    ) -> Result<Tensor> {
        switchyard_ops::native::as_strided_tensorimpl_meta(self_, size, stride, storage_offset)
    }

    /// The generic kernel; storage grows through the sidecar allocator.
    fn resize_(
        self_: &Tensor,
        size: &[i64],
        memory_format: Option<MemoryFormat>,
    ) -> Result<Tensor> {
        switchyard_ops::native::resize_(self_, size, memory_format)
    }
}
