//! Composite and Meta kernels of the copy operators: `copy_` and its functional forms,
//! `clone`, `contiguous`, `to` / `_to_copy`, `fill` / `fill_` / `zero_` on Meta, and the
//! `*_scatter` operators.
//!
//! `copy_` does the device-independent half of PyTorch's `copy_impl` here (no-op cases, Meta,
//! the memory-overlap and broadcast checks of TensorIterator) and hands the data movement to
//! the [`CopyKernel`] registered for the device (PyTorch's `copy_stub`): `switchyard-cpu`
//! registers the CPU one. Devices without a copy kernel go through `_copy_from`, which their
//! backend overrides.

use super::views::{self, strides_for_format};
use switchyard_core::shape::{self, DimVec, fmt_dims};
use switchyard_core::{
    Device, DeviceType, Error, Layout, MemoryFormat, Result, Scalar, ScalarType, Tensor,
    dispatch_dtype, torch_check, torch_check_not_implemented,
};

// ---------------------------------------------------------------------------------------------
// Geometry predicates (PyTorch's TensorImpl flags)
// ---------------------------------------------------------------------------------------------

/// PyTorch's `is_non_overlapping_and_dense`: the elements fill `[offset, offset + numel)` of
/// the storage exactly once, in some dimension order.
pub fn is_non_overlapping_and_dense(sizes: &[i64], strides: &[i64]) -> bool {
    if shape::is_contiguous(sizes, strides)
        || is_channels_last_contiguous(sizes, strides, MemoryFormat::ChannelsLast)
        || is_channels_last_contiguous(sizes, strides, MemoryFormat::ChannelsLast3d)
    {
        return true;
    }
    if sizes.len() == 1 {
        return sizes[0] < 2 || strides[0] == 1;
    }
    let mut perm: Vec<usize> = (0..sizes.len()).collect();
    // Size 0/1 dimensions go last (their stride does not matter); the rest by stride.
    perm.sort_by_key(|&d| (sizes[d] < 2, if sizes[d] < 2 { 0 } else { strides[d] }));
    let mut required: i64 = 1;
    for d in perm {
        if sizes[d] < 2 {
            return true;
        }
        if strides[d] != required {
            return false;
        }
        required = required.saturating_mul(sizes[d]);
    }
    true
}

/// PyTorch's `compute_channels_last_contiguous_{2d,3d}` for `format` (false for other ranks).
fn is_channels_last_contiguous(sizes: &[i64], strides: &[i64], format: MemoryFormat) -> bool {
    let order: &[usize] = match (format, sizes.len()) {
        (MemoryFormat::ChannelsLast, 4) => &[1, 3, 2, 0],
        (MemoryFormat::ChannelsLast3d, 5) => &[1, 4, 3, 2, 0],
        _ => return false,
    };
    let mut expected: i64 = 1;
    for &d in order {
        if sizes[d] != 1 {
            if strides[d] != expected {
                return false;
            }
            expected = expected.saturating_mul(sizes[d]);
        }
    }
    true
}

/// PyTorch's `is_channels_last_strides_{2d,3d}`: strides ordered like channels-last (the
/// heuristic behind `suggest_memory_format`).
fn is_channels_last_strides(sizes: &[i64], strides: &[i64], format: MemoryFormat) -> bool {
    let order: &[usize] = match (format, sizes.len()) {
        (MemoryFormat::ChannelsLast, 4) => &[1, 3, 2, 0],
        (MemoryFormat::ChannelsLast3d, 5) => &[1, 4, 3, 2, 0],
        _ => return false,
    };
    if strides[1] == 0 {
        return false;
    }
    let mut min: i64 = 0;
    for &d in order {
        if sizes[d] == 0 || strides[d] < min {
            return false;
        }
        // N111 tensors and sliced N11W tensors are ambiguous: they default to contiguous.
        if d == 0 && min == strides[1] {
            return false;
        }
        min = strides[d];
        if sizes[d] > 1 {
            min = min.saturating_mul(sizes[d]);
        }
    }
    true
}

/// `Tensor::suggest_memory_format()`.
fn suggest_memory_format(sizes: &[i64], strides: &[i64]) -> MemoryFormat {
    if is_channels_last_strides(sizes, strides, MemoryFormat::ChannelsLast) {
        MemoryFormat::ChannelsLast
    } else if is_channels_last_strides(sizes, strides, MemoryFormat::ChannelsLast3d) {
        MemoryFormat::ChannelsLast3d
    } else {
        MemoryFormat::Contiguous
    }
}

/// `Tensor::is_contiguous(memory_format)`.
fn is_contiguous_in(t: &Tensor, format: MemoryFormat) -> bool {
    let g = t.geometry();
    match format {
        MemoryFormat::Contiguous | MemoryFormat::Preserve => g.is_contiguous(),
        f => is_channels_last_contiguous(g.sizes(), g.strides(), f),
    }
}

/// PyTorch's `infer_dense_strides`: dense strides ordering the dimensions as `strides` does
/// (stable, ambiguous for stride-0 dimensions, as TensorIterator sorts them).
fn infer_dense_strides(sizes: &[i64], strides: &[i64]) -> DimVec {
    let ndim = sizes.len();
    if ndim <= 1 {
        return DimVec::from_elem(1, ndim);
    }
    // perm[0] is the innermost dimension.
    let mut perm: DimVec = (0..ndim as i64).rev().collect();
    let should_swap = |d0: usize, d1: usize| -> i32 {
        let (s0, s1) = (strides[d0], strides[d1]);
        if s0 == 0 || s1 == 0 {
            0
        } else if s0 < s1 {
            -1
        } else if s0 > s1 || sizes[d0] > sizes[d1] {
            1
        } else {
            0
        }
    };
    for i in 1..ndim {
        let mut dim1 = i;
        for j in 1..=i {
            let dim0 = i - j;
            match should_swap(perm[dim0] as usize, perm[dim1] as usize) {
                c if c > 0 => {
                    perm.swap(dim0, dim1);
                    dim1 = dim0;
                }
                c if c < 0 => break,
                _ => {}
            }
        }
    }
    let mut out = DimVec::from_elem(0, ndim);
    let mut acc: i64 = 1;
    for &d in &perm {
        let d = d as usize;
        out[d] = acc;
        if sizes[d] > 1 {
            acc = acc.saturating_mul(sizes[d]);
        }
    }
    out
}

/// Whether some element of `t` is written through two indices (PyTorch's
/// `has_internal_overlap` answering `Yes`: an expanded dimension).
fn has_internal_overlap(sizes: &[i64], strides: &[i64]) -> bool {
    !is_non_overlapping_and_dense(sizes, strides)
        && sizes.iter().zip(strides).any(|(n, s)| *s == 0 && *n > 1)
}

/// PyTorch's `get_overlap_status` answering `Partial`: `a` and `b` are dense, share a storage
/// and their byte ranges intersect without being the same elements.
fn partially_overlap(a: &Tensor, b: &Tensor) -> bool {
    let (ga, gb) = (a.geometry(), b.geometry());
    if ga.numel() == 0 || gb.numel() == 0 {
        return false;
    }
    if !is_non_overlapping_and_dense(ga.sizes(), ga.strides())
        || !is_non_overlapping_and_dense(gb.sizes(), gb.strides())
    {
        return false;
    }
    match (a.storage_ref(), b.storage_ref()) {
        (Some(sa), Some(sb)) if sa.is_alias_of(sb) => {}
        _ => return false,
    }
    let range = |g: &switchyard_core::tensor::Geometry, es: usize| {
        let begin = g.storage_offset() as i128 * es as i128;
        (begin, begin + g.numel() as i128 * es as i128)
    };
    let (a0, a1) = range(&ga, a.element_size());
    let (b0, b1) = range(&gb, b.element_size());
    if a0 == b0 && a1 == b1 {
        return ga.strides() != gb.strides();
    }
    a0 < b1 && b0 < a1
}

// ---------------------------------------------------------------------------------------------
// copy_ and the device copy kernels
// ---------------------------------------------------------------------------------------------

/// A backend's data-movement half of `copy_` (PyTorch's `copy_stub`), registered with
/// `#[linkme::distributed_slice(switchyard_ops::native::COPY_KERNELS)]`.
///
/// `copy_` calls it after its checks: `dst` and `src` have storage, are not the same data,
/// `src` broadcasts to `dst`'s shape, `dst` has no internal overlap and the two do not
/// partially overlap, and there is at least one element. The dtypes may differ (the kernel
/// converts). It is chosen by `src`'s device when that is not the CPU, else by `dst`'s, so a
/// device's kernel also moves data between the host and the device.
pub struct CopyKernel {
    /// The device type whose copies this kernel performs.
    pub device: DeviceType,
    /// Copies `src` into `dst`.
    pub copy: fn(dst: &Tensor, src: &Tensor, non_blocking: bool) -> Result<()>,
}

/// Every registered [`CopyKernel`].
#[linkme::distributed_slice]
pub static COPY_KERNELS: [CopyKernel];

fn copy_kernel(device: DeviceType) -> Option<&'static CopyKernel> {
    COPY_KERNELS.iter().find(|k| k.device == device)
}

/// Whether `copy_` moves data for this device itself (PyTorch's `is_supported_device`).
pub fn has_copy_kernel(device: Device) -> bool {
    copy_kernel(device.kind()).is_some()
}

/// `copy_`: copies `src` (broadcast, converted to `self`'s dtype, from any device with a copy
/// kernel) into `self`.
///
/// Errors as PyTorch's: "unsupported operation: more than one element of the written-to
/// tensor refers to a single memory location. ..." for an expanded `self`, "unsupported
/// operation: some elements of the input tensor and the written-to tensor refer to a single
/// memory location. ..." for a partial overlap, "output with shape \[3\] doesn't match the
/// broadcast shape \[2, 3\]", and "Cannot copy out of meta tensor; no data!".
pub fn copy_(self_: &Tensor, src: &Tensor, non_blocking: bool) -> Result<Tensor> {
    if self_.is_same(src) {
        return Ok(self_.clone());
    }
    if self_.is_meta() {
        check_copy_shape(self_, src)?;
        return Ok(self_.clone());
    }
    torch_check_not_implemented!(!src.is_meta(), "Cannot copy out of meta tensor; no data!");
    if !has_copy_kernel(src.device()) || !has_copy_kernel(self_.device()) {
        torch_check_not_implemented!(
            !(src.is_cpu() && self_.is_cpu()),
            "copy_: no copy kernel is registered for the CPU (switchyard-cpu is not linked)"
        );
        redispatch::copy_from(src, self_, non_blocking)?;
        return Ok(self_.clone());
    }
    if is_same_data(self_, src) {
        return Ok(self_.clone());
    }
    let g = self_.geometry();
    torch_check!(
        !has_internal_overlap(g.sizes(), g.strides()),
        "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation."
    );
    torch_check!(
        !partially_overlap(self_, src),
        "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation."
    );
    check_copy_shape(self_, src)?;
    if g.numel() == 0 {
        return Ok(self_.clone());
    }
    let device = if src.is_cpu() {
        self_.device()
    } else {
        src.device()
    };
    let kernel = copy_kernel(device.kind()).ok_or_else(|| {
        Error::not_implemented(format!("no copy kernel is registered for device {device}"))
    })?;
    (kernel.copy)(self_, src, non_blocking)?;
    Ok(self_.clone())
}

/// TensorIterator's shape rule for a non-resized output: `src` must broadcast to `self`.
fn check_copy_shape(self_: &Tensor, src: &Tensor) -> Result<()> {
    let sizes = self_.sizes();
    let shape = shape::infer_size(&sizes, &src.sizes())?;
    torch_check!(
        sizes == shape,
        "output with shape {} doesn't match the broadcast shape {}",
        fmt_dims(&sizes),
        fmt_dims(&shape)
    );
    Ok(())
}

/// `self` and `src` are views of the same elements with the same dtype.
fn is_same_data(self_: &Tensor, src: &Tensor) -> bool {
    let (a, b) = (self_.geometry(), src.geometry());
    self_.is_alias_of(src)
        && a.storage_offset() == b.storage_offset()
        && a.strides() == b.strides()
        && a.sizes() == b.sizes()
        && self_.dtype() == src.dtype()
}

/// `_copy_from`: copies `self` into `dst` and returns `dst`. Backends of devices without a
/// [`CopyKernel`] override it; this default only serves host and meta tensors.
pub fn _copy_from(self_: &Tensor, dst: &Tensor, non_blocking: bool) -> Result<Tensor> {
    check_copy_from_devices(self_, dst)?;
    redispatch::copy_(dst, self_, non_blocking)?;
    Ok(dst.clone())
}

/// `_copy_from_and_resize`: resizes `dst` to `self`'s sizes, copies `self` into it and
/// returns it.
pub fn _copy_from_and_resize(self_: &Tensor, dst: &Tensor) -> Result<Tensor> {
    // Both steps are operator calls: a backend's `resize_` and `_copy_from` serve its tensors.
    redispatch::resize_(dst, &self_.sizes())?;
    redispatch::copy_(dst, self_, false)?;
    Ok(dst.clone())
}

fn check_copy_from_devices(src: &Tensor, dst: &Tensor) -> Result<()> {
    let served = |t: &Tensor| t.is_meta() || has_copy_kernel(t.device());
    torch_check_not_implemented!(
        served(src) && served(dst),
        "Could not copy from device {} to device {}: the backend must implement `_copy_from` (or register a CopyKernel) for its device",
        src.device(),
        dst.device()
    );
    Ok(())
}

/// `copy` (CompositeExplicitAutogradNonFunctional): a copy of `self` (same strides and
/// offset) with `src` copied in.
pub fn copy(self_: &Tensor, src: &Tensor, non_blocking: bool) -> Result<Tensor> {
    let r = clone_preserve_strides(self_)?;
    redispatch::copy_(&r, src, non_blocking)?;
    Ok(r)
}

/// `copy` (Meta): as [`copy`].
pub fn copy_meta(self_: &Tensor, src: &Tensor, non_blocking: bool) -> Result<Tensor> {
    copy(self_, src, non_blocking)
}

// ---------------------------------------------------------------------------------------------
// clone, contiguous, _to_copy, to
// ---------------------------------------------------------------------------------------------

/// A new uninitialised tensor like `t` (`empty_like`) with `dtype` on `device`, laid out in
/// `format` (`Preserve`: `t`'s strides if dense, else dense strides in `t`'s dimension order).
fn empty_like_in(
    t: &Tensor,
    dtype: ScalarType,
    device: Device,
    format: MemoryFormat,
) -> Result<Tensor> {
    let g = t.geometry();
    let strides = match format {
        MemoryFormat::Preserve if is_non_overlapping_and_dense(g.sizes(), g.strides()) => {
            DimVec::from_slice(g.strides())
        }
        MemoryFormat::Preserve => infer_dense_strides(g.sizes(), g.strides()),
        f => strides_for_format(g.sizes(), f)?,
    };
    Tensor::allocate_strided(g.sizes(), &strides, dtype, device)
}

/// `clone`: a copy in `memory_format` (default: preserve `self`'s layout).
pub fn clone(self_: &Tensor, memory_format: Option<MemoryFormat>) -> Result<Tensor> {
    let format = memory_format.unwrap_or(MemoryFormat::Preserve);
    let out = empty_like_in(self_, self_.dtype(), self_.device(), format)?;
    redispatch::copy_(&out, self_, false)?;
    Ok(out)
}

/// PyTorch's `clone_preserve_strides`: a copy with `self`'s strides and storage offset (the
/// whole storage is copied), or a plain clone when `self` has internal overlap.
pub(crate) fn clone_preserve_strides(self_: &Tensor) -> Result<Tensor> {
    let g = self_.geometry();
    if has_internal_overlap(g.sizes(), g.strides()) {
        return redispatch::clone(self_, None);
    }
    let storage = self_
        .storage_ref()
        .ok_or_else(|| Error::runtime("clone_preserve_strides: the tensor has no storage"))?;
    let numel = (storage.nbytes() / self_.element_size()) as i64;
    let full = self_.as_strided_view(&[numel], &[1], 0)?;
    let copy = redispatch::clone(&full, None)?;
    copy.as_strided_view(g.sizes(), g.strides(), g.storage_offset())
}

/// `contiguous`: `self` if already contiguous in `memory_format`, else a clone in it.
pub fn contiguous(self_: &Tensor, memory_format: MemoryFormat) -> Result<Tensor> {
    if is_contiguous_in(self_, memory_format) {
        return Ok(self_.clone());
    }
    torch_check!(
        memory_format != MemoryFormat::Preserve,
        "preserve memory format is unsupported by the contiguous operator"
    );
    redispatch::clone(self_, Some(memory_format))
}

/// `ensure_has_index`: devices other than CPU and meta name their current index (0).
fn ensure_has_index(device: Device) -> Device {
    match device.kind() {
        DeviceType::Cpu | DeviceType::Meta => device,
        kind => Device::new(kind, Some(device.index().unwrap_or(0))),
    }
}

/// `_to_copy`: a copy with another dtype, device or memory format.
pub fn _to_copy(
    self_: &Tensor,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    non_blocking: bool,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    if let Some(l) = layout {
        torch_check!(
            l == self_.layout(),
            "to(options) doesn't support converting to a different layout, but got self.layout being {:?} and options.layout set as {:?}",
            self_.layout(),
            l
        );
    }
    // Pinned host memory makes no difference to these allocators.
    let _ = pin_memory;
    let dtype = dtype.unwrap_or_else(|| self_.dtype());
    let device = device.map_or_else(|| self_.device(), ensure_has_index);
    let format = memory_format.unwrap_or(MemoryFormat::Preserve);
    let out = empty_like_in(self_, dtype, device, format)?;
    redispatch::copy_(&out, self_, non_blocking)?;
    Ok(out)
}

/// The arguments of every `to` overload.
struct ToArgs {
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    non_blocking: bool,
    copy: bool,
    memory_format: Option<MemoryFormat>,
}

/// PyTorch's `to_impl`: `self` when nothing changes (and no copy is asked for), else
/// `_to_copy`.
fn to_impl(self_: &Tensor, a: ToArgs) -> Result<Tensor> {
    let format = a.memory_format.unwrap_or(MemoryFormat::Preserve);
    let same_device = |d: Device| ensure_has_index(d) == ensure_has_index(self_.device());
    let aliases = a.dtype.is_none_or(|d| d == self_.dtype())
        && a.layout.is_none_or(|l| l == self_.layout())
        && a.device.is_none_or(same_device)
        && !a.copy
        && (format == MemoryFormat::Preserve || {
            let g = self_.geometry();
            suggest_memory_format(g.sizes(), g.strides()) == format
        });
    if aliases {
        return Ok(self_.clone());
    }
    redispatch::to_copy(
        self_,
        a.dtype,
        a.layout,
        a.device.map(ensure_has_index),
        a.pin_memory,
        a.non_blocking,
        a.memory_format,
    )
}

/// `to.dtype_layout`.
pub fn to_dtype_layout(
    self_: &Tensor,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    non_blocking: bool,
    copy: bool,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    let args = ToArgs {
        dtype,
        layout,
        device,
        pin_memory,
        non_blocking,
        copy,
        memory_format,
    };
    to_impl(self_, args)
}

/// `to.device`.
pub fn to_device(
    self_: &Tensor,
    device: Device,
    dtype: ScalarType,
    non_blocking: bool,
    copy: bool,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    let args = ToArgs {
        dtype: Some(dtype),
        layout: None,
        device: Some(device),
        pin_memory: None,
        non_blocking,
        copy,
        memory_format,
    };
    to_impl(self_, args)
}

/// `to.dtype`.
pub fn to_dtype(
    self_: &Tensor,
    dtype: ScalarType,
    non_blocking: bool,
    copy: bool,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    let args = ToArgs {
        dtype: Some(dtype),
        layout: None,
        device: None,
        pin_memory: None,
        non_blocking,
        copy,
        memory_format,
    };
    to_impl(self_, args)
}

/// `to.other`: to `other`'s dtype, layout and device.
pub fn to_other(
    self_: &Tensor,
    other: &Tensor,
    non_blocking: bool,
    copy: bool,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    let args = ToArgs {
        dtype: Some(other.dtype()),
        layout: Some(other.layout()),
        device: Some(other.device()),
        pin_memory: Some(false),
        non_blocking,
        copy,
        memory_format,
    };
    to_impl(self_, args)
}

/// `_to_cpu`: each tensor on the CPU (`Tensor::cpu()`).
pub fn _to_cpu(tensors: &[Tensor]) -> Result<Vec<Tensor>> {
    tensors
        .iter()
        .map(|t| {
            redispatch::to(
                t,
                ToArgs {
                    dtype: Some(t.dtype()),
                    layout: Some(t.layout()),
                    device: Some(Device::CPU),
                    pin_memory: None,
                    non_blocking: false,
                    copy: false,
                    memory_format: None,
                },
            )
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// fill, zero
// ---------------------------------------------------------------------------------------------

/// `Scalar::to<T>()` for a fill value: PyTorch's overflow check and message ("value cannot be
/// converted to type int8_t without overflow"), shared by the CPU and Meta kernels.
pub fn fill_value_check(value: Scalar, dtype: ScalarType) -> Result<()> {
    value.check_fits(dtype)
}

/// `fill_.Tensor`'s check on the value.
pub fn fill_value_tensor_check(value: &Tensor) -> Result<()> {
    let n = value.dim();
    torch_check!(
        n == 0,
        "fill_ only supports 0-dimension value tensor but got tensor with {n} dimensions."
    );
    Ok(())
}

/// `fill_.Scalar` (Meta): nothing to write, but the value is checked as the CPU kernel checks
/// it (PyTorch's `fill_meta_` accepts any value; here both devices give the same answer).
#[allow(non_snake_case)] // the kernel name ops.yaml gives
pub fn fill_meta__scalar(self_: &Tensor, value: Scalar) -> Result<Tensor> {
    fill_value_check(value, self_.dtype())?;
    Ok(self_.clone())
}

/// `fill_.Tensor` (Meta): checks the value's rank.
#[allow(non_snake_case)] // the kernel name ops.yaml gives
pub fn fill_meta__tensor(self_: &Tensor, value: &Tensor) -> Result<Tensor> {
    fill_value_tensor_check(value)?;
    Ok(self_.clone())
}

/// `zero_` (Meta): nothing to write.
pub fn zero_meta_(self_: &Tensor) -> Result<Tensor> {
    Ok(self_.clone())
}

/// `fill.Scalar`: a new tensor like `self` filled with `value`.
pub fn fill_scalar(self_: &Tensor, value: Scalar) -> Result<Tensor> {
    let out = empty_like_in(self_, self_.dtype(), self_.device(), MemoryFormat::Preserve)?;
    redispatch::fill_scalar_(&out, value)?;
    Ok(out)
}

/// `fill.Tensor`: a new tensor like `self` filled with the 0-dim `value`.
pub fn fill_tensor(self_: &Tensor, value: &Tensor) -> Result<Tensor> {
    let out = empty_like_in(self_, self_.dtype(), self_.device(), MemoryFormat::Preserve)?;
    redispatch::fill_tensor_(&out, value)?;
    Ok(out)
}

/// `fill_.Tensor`'s body for devices with storage: the value is copied in (cloned first if
/// it is a view of `self`), or converted through a Scalar when it lives on another device.
pub fn fill_tensor_by_copy(self_: &Tensor, value: &Tensor) -> Result<Tensor> {
    fill_value_tensor_check(value)?;
    if self_.device() != value.device() {
        return redispatch::fill_scalar_(self_, value.item_scalar()?);
    }
    if self_.is_alias_of(value) {
        let v = redispatch::clone(value, None)?;
        redispatch::copy_(self_, &v, false)?;
    } else {
        redispatch::copy_(self_, value, false)?;
    }
    Ok(self_.clone())
}

/// A 0-dim CPU tensor of `dtype` holding `value` (converted as `Scalar::to<T>()` does).
fn scalar_tensor_of(value: Scalar, dtype: ScalarType) -> Result<Tensor> {
    fill_value_check(value, dtype)?;
    dispatch_dtype!(dtype, T => Tensor::from_vec(vec![value.to::<T>()?], &[]))
}

// ---------------------------------------------------------------------------------------------
// *_scatter
// ---------------------------------------------------------------------------------------------

/// The body of every `*_scatter`: a stride-preserving copy of `self` with `src` copied into
/// the view `make_view` selects of it.
fn scatter_into_view(
    self_: &Tensor,
    src: &Tensor,
    make_view: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    let out = clone_preserve_strides(self_)?;
    let slice = make_view(&out)?;
    let (want, got) = (slice.sizes(), src.sizes());
    torch_check!(
        want == got,
        "expected src to have a size equal to the slice of self. src size = {}, slice size = {}",
        fmt_dims(&got),
        fmt_dims(&want)
    );
    redispatch::copy_(&slice, src, false)?;
    Ok(out)
}

/// `slice_scatter`: `self` with `src` written into `self[start:end:step]` along `dim`.
pub fn slice_scatter(
    self_: &Tensor,
    src: &Tensor,
    dim: i64,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
) -> Result<Tensor> {
    scatter_into_view(self_, src, |t| views::slice(t, dim, start, end, step))
}

/// `select_scatter`: `self` with `src` written at `index` along `dim`.
pub fn select_scatter(self_: &Tensor, src: &Tensor, dim: i64, index: i64) -> Result<Tensor> {
    scatter_into_view(self_, src, |t| views::select(t, dim, index))
}

/// `diagonal_scatter`: `self` with `src` written on a diagonal.
pub fn diagonal_scatter(
    self_: &Tensor,
    src: &Tensor,
    offset: i64,
    dim1: i64,
    dim2: i64,
) -> Result<Tensor> {
    scatter_into_view(self_, src, |t| views::diagonal(t, offset, dim1, dim2))
}

/// `as_strided_scatter`: `self` with `src` written into an `as_strided` view of it.
pub fn as_strided_scatter(
    self_: &Tensor,
    src: &Tensor,
    size: &[i64],
    stride: &[i64],
    storage_offset: Option<i64>,
) -> Result<Tensor> {
    scatter_into_view(self_, src, |t| {
        views::as_strided_tensorimpl_meta(t, size, stride, storage_offset)
    })
}

// ---------------------------------------------------------------------------------------------
// Calls to other operators
// ---------------------------------------------------------------------------------------------

/// Calls to the operators these kernels decompose into, through the dispatcher, so that
/// autograd and backends (an external device's `_copy_from`, `resize_`, ...) see the
/// constituent operators.
mod redispatch {
    use super::ToArgs;
    use crate::op;
    use switchyard_core::{Device, Layout, MemoryFormat, Result, Scalar, ScalarType, Tensor};

    pub(super) fn copy_(dst: &Tensor, src: &Tensor, non_blocking: bool) -> Result<Tensor> {
        op::copy_::call(dst, src, non_blocking)
    }

    pub(super) fn copy_from(src: &Tensor, dst: &Tensor, non_blocking: bool) -> Result<Tensor> {
        op::_copy_from::call(src, dst, non_blocking)
    }

    pub(super) fn clone(t: &Tensor, format: Option<MemoryFormat>) -> Result<Tensor> {
        op::clone::call(t, format)
    }

    pub(super) fn resize_(t: &Tensor, size: &[i64]) -> Result<Tensor> {
        op::resize_::call(t, size, None)
    }

    pub(super) fn to(t: &Tensor, a: ToArgs) -> Result<Tensor> {
        op::to_dtype_layout::call(
            t,
            a.dtype,
            a.layout,
            a.device,
            a.pin_memory,
            a.non_blocking,
            a.copy,
            a.memory_format,
        )
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn to_copy(
        t: &Tensor,
        dtype: Option<ScalarType>,
        layout: Option<Layout>,
        device: Option<Device>,
        pin_memory: Option<bool>,
        non_blocking: bool,
        memory_format: Option<MemoryFormat>,
    ) -> Result<Tensor> {
        op::_to_copy::call(
            t,
            dtype,
            layout,
            device,
            pin_memory,
            non_blocking,
            memory_format,
        )
    }

    /// `fill_.Scalar`: a broadcast copy of the converted value (what the backends' fill
    /// kernels compute).
    pub(super) fn fill_scalar_(t: &Tensor, value: Scalar) -> Result<Tensor> {
        let v = super::scalar_tensor_of(value, t.dtype())?;
        super::copy_(t, &v, false)
    }

    pub(super) fn fill_tensor_(t: &Tensor, value: &Tensor) -> Result<Tensor> {
        super::fill_tensor_by_copy(t, value)
    }
}
