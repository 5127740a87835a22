//! CPU kernels of the copy and view operators.
//!
//! * [`copy_cpu`]: the data movement of `copy_` on the CPU (PyTorch's `copy_stub`), registered
//!   as the CPU [`CopyKernel`]. `copy_`'s checks (overlap, broadcasting, no-op cases) happen in
//!   `switchyard_ops::native::copy_` before it is called. Same-dtype copies of dense tensors
//!   with equal strides are one `memcpy` (split across threads when large), a transposed
//!   matrix is copied in cache-sized tiles, everything else runs on the elementwise engine
//!   (vectorised inner loops, dtype conversion, broadcasting).
//! * `fill_`, `zero_`.
//! * `view`, `as_strided`, `unfold`, `resize_`: the geometry is device-independent, so these
//!   call the Meta kernels of `switchyard-ops`.

use crate::loops::{self, GRAIN_SIZE};
use crate::parallel;
use switchyard_core::element::convert;
use switchyard_core::tensor::Geometry;
use switchyard_core::{
    Access, DeviceType, Element, Error, MemoryFormat, Result, Scalar, ScalarType, Tensor,
    dispatch_dtype, with_tensors,
};
use switchyard_ops::native::{self as ops_native, CopyKernel, is_non_overlapping_and_dense};

#[linkme::distributed_slice(switchyard_ops::native::COPY_KERNELS)]
static CPU_COPY: CopyKernel = CopyKernel {
    device: DeviceType::Cpu,
    copy: copy_cpu,
};

/// Copies `src` into `dst` (both CPU tensors, already checked by `copy_`: `src` broadcasts to
/// `dst`, no harmful overlap, at least one element); converts dtypes like `static_cast`.
pub fn copy_cpu(dst: &Tensor, src: &Tensor, non_blocking: bool) -> Result<()> {
    // Host copies are synchronous.
    let _ = non_blocking;
    if dst.dtype() == src.dtype() {
        if copy_dense_bytes(dst, src)? {
            return Ok(());
        }
        if copy_transposed(dst, src)? {
            return Ok(());
        }
    } else if convert_dense(dst, src)? {
        return Ok(());
    }
    dispatch_dtype!(src.dtype(), S => dispatch_dtype!(dst.dtype(), D => {
        loops::map::<S, D, 1>(dst, [src], |[x]| cast::<S, D>(x))
    }))
}

/// Converts one element as PyTorch's CPU copy does on x86-64: `static_cast`, where a float
/// becomes an integer through a truncating 32-bit conversion (64-bit for `uint8`, as c10
/// specifies, and for `int64`) whose out-of-range and NaN result is the lowest value, then
/// wraps to the narrower type. So `-1.0` copies to `uint8` as 255 and `300.0` to `int8` as 44.
#[inline(always)]
fn cast<S: Element, D: Element>(x: S) -> D {
    if !(S::DTYPE.is_floating_point() && D::DTYPE.is_integral(false)) {
        return convert::<S, D>(x);
    }
    let v = x.to_f64();
    let wide = match (D::DTYPE, S::DTYPE) {
        (ScalarType::Byte | ScalarType::Long, _) => truncate_i64(v),
        // Exact for every narrower float; keeping it in f32 lets the loop vectorise.
        (_, ScalarType::Float | ScalarType::Half | ScalarType::BFloat16) => {
            i64::from(truncate_i32_f32(v as f32))
        }
        _ => i64::from(truncate_i32(v)),
    };
    D::from_i64_lossy(wide)
}

/// `cvttsd2si` to 32 bits: truncation, `i32::MIN` for NaN and out-of-range values.
#[inline(always)]
fn truncate_i32(v: f64) -> i32 {
    if v > -2_147_483_649.0 && v < 2_147_483_648.0 {
        v as i32
    } else {
        i32::MIN
    }
}

/// `cvttss2si` to 32 bits: [`truncate_i32`] for an `f32`.
#[inline(always)]
fn truncate_i32_f32(v: f32) -> i32 {
    if (-2_147_483_648.0..2_147_483_648.0).contains(&v) {
        // SAFETY: `v` is not NaN and lies in `[-2^31, 2^31)`, so it truncates to an `i32`.
        unsafe { v.to_int_unchecked::<i32>() }
    } else {
        i32::MIN
    }
}

/// `cvttsd2si` to 64 bits: truncation, `i64::MIN` for NaN and out-of-range values.
#[inline(always)]
fn truncate_i64(v: f64) -> i64 {
    if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&v) {
        v as i64
    } else {
        i64::MIN
    }
}

/// The byte range `[offset, offset + numel)` of a dense tensor, if `g` is dense.
fn dense_span(g: &Geometry, element_size: usize) -> Option<std::ops::Range<usize>> {
    if !is_non_overlapping_and_dense(g.sizes(), g.strides()) {
        return None;
    }
    let start = usize::try_from(g.storage_offset())
        .ok()?
        .checked_mul(element_size)?;
    let len = usize::try_from(g.numel()).ok()?.checked_mul(element_size)?;
    Some(start..start.checked_add(len)?)
}

/// Same dtype, same sizes and strides, both dense: one `memcpy` of the element span.
/// Returns whether it applied.
fn copy_dense_bytes(dst: &Tensor, src: &Tensor) -> Result<bool> {
    let es = dst.element_size();
    with_tensors(&[(dst, Access::Write), (src, Access::Read)], |data| {
        let (dg, sg) = (data.geometry(0), data.geometry(1));
        if dg.sizes() != sg.sizes() || dg.strides() != sg.strides() {
            return Ok(false);
        }
        let (Some(d), Some(s)) = (dense_span(dg, es), dense_span(sg, es)) else {
            return Ok(false);
        };
        if data.same_storage(0, 1) {
            // Disjoint ranges of one buffer (`copy_` rejected partial overlaps).
            let bytes = data.bytes_mut(0)?;
            if d.end > bytes.len() || s.end > bytes.len() {
                return Err(out_of_range());
            }
            bytes.copy_within(s, d.start);
            return Ok(true);
        }
        let (mut written, shared) = data.split_host_mut(&[0])?;
        let dst_bytes = written
            .first_mut()
            .and_then(|b| b.get_mut(d))
            .ok_or_else(out_of_range)?;
        let src_bytes = shared
            .get(1)
            .copied()
            .flatten()
            .and_then(|b| b.get(s))
            .ok_or_else(out_of_range)?;
        parallel_memcpy(dst_bytes, src_bytes, es);
        Ok(true)
    })
}

/// Different dtypes, same sizes and strides, both dense, separate storages: converts the
/// element spans slice to slice (half-precision conversions use the `half` crate's SIMD
/// routines). Returns whether it applied.
fn convert_dense(dst: &Tensor, src: &Tensor) -> Result<bool> {
    let (des, ses) = (dst.element_size(), src.element_size());
    let (ddt, sdt) = (dst.dtype(), src.dtype());
    with_tensors(&[(dst, Access::Write), (src, Access::Read)], |data| {
        let (dg, sg) = (data.geometry(0), data.geometry(1));
        if dg.sizes() != sg.sizes() || dg.strides() != sg.strides() || data.same_storage(0, 1) {
            return Ok(false);
        }
        let (Some(d), Some(s)) = (dense_span(dg, des), dense_span(sg, ses)) else {
            return Ok(false);
        };
        let (mut written, shared) = data.split_host_mut(&[0])?;
        let dst_bytes = written
            .first_mut()
            .and_then(|b| b.get_mut(d))
            .ok_or_else(out_of_range)?;
        let src_bytes = shared
            .get(1)
            .copied()
            .flatten()
            .and_then(|b| b.get(s))
            .ok_or_else(out_of_range)?;
        dispatch_dtype!(sdt, S => dispatch_dtype!(ddt, D => {
            convert_slices::<S, D>(dst_bytes, src_bytes)?
        }));
        Ok(true)
    })
}

/// Converts `src` (elements of `S`) into `dst` (elements of `D`), split across threads above
/// [`GRAIN_SIZE`] elements.
fn convert_slices<S: Element, D: Element>(dst: &mut [u8], src: &[u8]) -> Result<()> {
    let (des, ses) = (D::DTYPE.element_size(), S::DTYPE.element_size());
    let n = dst.len() / des;
    if src.len() / ses != n {
        return Err(out_of_range());
    }
    if n < GRAIN_SIZE || parallel::num_threads() < 2 {
        return convert_run::<S, D>(dst, src);
    }
    let chunk = (n / (parallel::num_threads() * 4)).max(GRAIN_SIZE / 4);
    parallel::for_each_chunk_mut(dst, chunk * des, &|i, d| {
        convert_run::<S, D>(d, parallel::chunk_of(src, chunk * ses, i))
    })
}

/// One run of [`convert_slices`] on element bytes: `half`'s slice conversions for the 16-bit
/// floats, else a plain loop the compiler vectorises.
fn convert_run<S: Element, D: Element>(d: &mut [u8], s: &[u8]) -> Result<()> {
    use ScalarType::{BFloat16, Double, Float, Half};
    use half::slice::HalfFloatSliceExt;
    use half::{bf16, f16};
    let done = match (S::DTYPE, D::DTYPE) {
        (Float, Half) => with_slices(d, s, |d: &mut [f16], s: &[f32]| d.convert_from_f32_slice(s)),
        (Half, Float) => with_slices(d, s, |d: &mut [f32], s: &[f16]| s.convert_to_f32_slice(d)),
        (Float, BFloat16) => with_slices(d, s, |d: &mut [bf16], s: &[f32]| {
            d.convert_from_f32_slice(s)
        }),
        (BFloat16, Float) => {
            with_slices(d, s, |d: &mut [f32], s: &[bf16]| s.convert_to_f32_slice(d))
        }
        (Half, Double) => with_slices(d, s, |d: &mut [f64], s: &[f16]| s.convert_to_f64_slice(d)),
        (BFloat16, Double) => {
            with_slices(d, s, |d: &mut [f64], s: &[bf16]| s.convert_to_f64_slice(d))
        }
        _ => false,
    };
    if !done {
        let d = loops::typed_mut::<D>(d)?;
        let s = loops::typed::<S>(s)?;
        for (o, i) in d.iter_mut().zip(s) {
            *o = D::to_repr(cast::<S, D>(S::from_repr(*i)));
        }
    }
    Ok(())
}

/// Runs `f` on `dst` and `src` reinterpreted as slices of `A` and `B`; false if they cannot be.
fn with_slices<A: bytemuck::Pod, B: bytemuck::Pod>(
    dst: &mut [u8],
    src: &[u8],
    f: impl FnOnce(&mut [A], &[B]),
) -> bool {
    match (
        bytemuck::try_cast_slice_mut(dst),
        bytemuck::try_cast_slice(src),
    ) {
        (Ok(d), Ok(s)) if <[A]>::len(d) == <[B]>::len(s) => {
            f(d, s);
            true
        }
        _ => false,
    }
}

/// `dst.copy_from_slice(src)`, split across threads above [`GRAIN_SIZE`] elements.
fn parallel_memcpy(dst: &mut [u8], src: &[u8], element_size: usize) {
    let threshold = GRAIN_SIZE * element_size * 8;
    let threads = parallel::num_threads();
    if dst.len() < threshold || threads < 2 {
        dst.copy_from_slice(src);
        return;
    }
    let chunk = (dst.len() / threads)
        .next_multiple_of(4096)
        .max(threshold / 4);
    // The body cannot fail.
    let _ = parallel::for_each_chunk_mut(dst, chunk, &|i, d| {
        d.copy_from_slice(parallel::chunk_of(src, chunk, i));
        Ok(())
    });
}

/// Tile edge of the transposed copy, in elements (PyTorch's `BLOCK_SZ`).
const TILE: usize = 64;

/// PyTorch's `copy_same_type_transpose_`: a contiguous matrix from a transposed one (same
/// dtype, at least 60×60 elements), through cache-sized tiles so neither side is walked
/// across cache lines. Returns whether it applied.
fn copy_transposed(dst: &Tensor, src: &Tensor) -> Result<bool> {
    let (dg, sg) = (dst.geometry(), src.geometry());
    let (sizes, st) = (sg.sizes(), sg.strides());
    let applies = dg.is_contiguous()
        && sizes.len() == 2
        && dg.sizes() == sizes
        && st[0] == 1
        && st[1] == sizes[0]
        && sg.numel() >= 60 * 60;
    if !applies {
        return Ok(false);
    }
    match dst.element_size() {
        1 => transpose_tiles::<u8>(dst, src)?,
        2 => transpose_tiles::<u16>(dst, src)?,
        4 => transpose_tiles::<u32>(dst, src)?,
        _ => transpose_tiles::<u64>(dst, src)?,
    }
    Ok(true)
}

/// The tiled transpose of [`copy_transposed`], moving elements as the unsigned integer `W`
/// of the element's width (a copy does not look at values).
fn transpose_tiles<W: bytemuck::Pod + Send + Sync>(dst: &Tensor, src: &Tensor) -> Result<()> {
    with_tensors(&[(dst, Access::Write), (src, Access::Read)], |data| {
        let (dg, sg) = (data.geometry(0).clone(), data.geometry(1).clone());
        let rows = usize::try_from(sg.sizes()[0]).map_err(|_| out_of_range())?;
        let cols = usize::try_from(sg.sizes()[1]).map_err(|_| out_of_range())?;
        let d0 = usize::try_from(dg.storage_offset()).map_err(|_| out_of_range())?;
        let s0 = usize::try_from(sg.storage_offset()).map_err(|_| out_of_range())?;
        let n = rows * cols;
        let same = data.same_storage(0, 1);
        let (mut written, shared) = data.split_host_mut(&[0])?;
        let out_bytes: &mut [u8] = written.first_mut().ok_or_else(out_of_range)?;
        let src_copy: Vec<W>;
        let input: &[W] = if same {
            // Disjoint ranges of one buffer: read through a copy of the source span.
            src_copy = words::<W>(out_bytes)?
                .get(s0..s0 + n)
                .ok_or_else(out_of_range)?
                .to_vec();
            &src_copy
        } else {
            let src_bytes = shared.get(1).copied().flatten().ok_or_else(out_of_range)?;
            words::<W>(src_bytes)?
                .get(s0..s0 + n)
                .ok_or_else(out_of_range)?
        };
        let out = words_mut::<W>(out_bytes)?
            .get_mut(d0..d0 + n)
            .ok_or_else(out_of_range)?;
        transpose_into(out, input, rows, cols);
        Ok(())
    })
}

/// Storage bytes as words of `W` (storages are 64-byte aligned).
fn words<W: bytemuck::Pod>(bytes: &[u8]) -> Result<&[W]> {
    let len = bytes.len() - bytes.len() % std::mem::size_of::<W>();
    bytemuck::try_cast_slice(&bytes[..len]).map_err(|_| out_of_range())
}

/// Mutable counterpart of [`words`].
fn words_mut<W: bytemuck::Pod>(bytes: &mut [u8]) -> Result<&mut [W]> {
    let len = bytes.len() - bytes.len() % std::mem::size_of::<W>();
    bytemuck::try_cast_slice_mut(&mut bytes[..len]).map_err(|_| out_of_range())
}

/// `out[r * cols + c] = input[c * rows + r]` (a column-major `rows × cols` matrix into a
/// row-major one), tile by tile, tile rows in parallel for large matrices.
fn transpose_into<E: Copy + Send + Sync>(out: &mut [E], input: &[E], rows: usize, cols: usize) {
    let band = |(tile_row, out_rows): (usize, &mut [E])| {
        let r0 = tile_row * TILE;
        let nr = out_rows.len() / cols;
        for c0 in (0..cols).step_by(TILE) {
            let nc = TILE.min(cols - c0);
            for r in 0..nr {
                let row = &mut out_rows[r * cols + c0..r * cols + c0 + nc];
                for (c, o) in row.iter_mut().enumerate() {
                    *o = input[(c0 + c) * rows + r0 + r];
                }
            }
        }
    };
    let band_len = TILE * cols;
    if rows * cols >= GRAIN_SIZE && parallel::num_threads() > 1 {
        // The body cannot fail.
        let _ = parallel::for_each_chunk_mut(out, band_len, &|i, rows| {
            band((i, rows));
            Ok(())
        });
    } else {
        out.chunks_mut(band_len).enumerate().for_each(band);
    }
}

fn out_of_range() -> Error {
    Error::runtime("internal error: copy outside the tensor's storage")
}

/// `fill_.Scalar`: every element of `self` becomes `value` (converted with PyTorch's overflow
/// check). Expanded tensors are fine: every write stores the same value.
#[allow(non_snake_case)] // the kernel name ops.yaml gives
pub fn fill__scalar(self_: &Tensor, value: Scalar) -> Result<Tensor> {
    ops_native::fill_value_check(value, self_.dtype())?;
    dispatch_dtype!(self_.dtype(), T => {
        let v: T = value.to::<T>()?;
        loops::map::<T, T, 0>(self_, [], move |_| v)?;
    });
    Ok(self_.clone())
}

/// `fill_.Tensor`: `fill_` with the value of a 0-dim tensor.
#[allow(non_snake_case)] // the kernel name ops.yaml gives
pub fn fill__tensor(self_: &Tensor, value: &Tensor) -> Result<Tensor> {
    ops_native::fill_tensor_by_copy(self_, value)
}

/// `zero_`: a `memset` of the element span for dense tensors, else `fill_(0)`.
pub fn zero_(self_: &Tensor) -> Result<Tensor> {
    let es = self_.element_size();
    let done = with_tensors(&[(self_, Access::Write)], |data| {
        let Some(span) = dense_span(data.geometry(0), es) else {
            return Ok(false);
        };
        let bytes = data.bytes_mut(0)?.get_mut(span).ok_or_else(out_of_range)?;
        if bytes.len() >= GRAIN_SIZE * es * 8 && parallel::num_threads() > 1 {
            parallel::for_each_chunk_mut(bytes, 1 << 16, &|_, c| {
                c.fill(0);
                Ok(())
            })?;
        } else {
            bytes.fill(0);
        }
        Ok(true)
    })?;
    if done {
        Ok(self_.clone())
    } else {
        fill__scalar(self_, Scalar::Int(0))
    }
}

/// `as_strided` (CPU): see `switchyard_ops::native::as_strided_tensorimpl_meta`.
pub fn as_strided_tensorimpl(
    self_: &Tensor,
    size: &[i64],
    stride: &[i64],
    storage_offset: Option<i64>,
) -> Result<Tensor> {
    ops_native::as_strided_tensorimpl_meta(self_, size, stride, storage_offset)
}

/// `view` (CPU): see `switchyard_ops::native::view`.
pub fn view(self_: &Tensor, size: &[i64]) -> Result<Tensor> {
    ops_native::view(self_, size)
}

/// `unfold` (CPU): see `switchyard_ops::native::unfold`.
pub fn unfold(self_: &Tensor, dimension: i64, size: i64, step: i64) -> Result<Tensor> {
    ops_native::unfold(self_, dimension, size, step)
}

/// `unfold_backward` (CPU): see `switchyard_ops::native::unfold_backward` (a `scatter_add`
/// of the windows into zeros).
pub fn unfold_backward(
    grad_in: &Tensor,
    input_sizes: &[i64],
    dim: i64,
    size: i64,
    step: i64,
) -> Result<Tensor> {
    ops_native::unfold_backward(grad_in, input_sizes, dim, size, step)
}

/// `resize_` (CPU): see `switchyard_ops::native::resize_`; new memory is zeroed.
pub fn resize_(
    self_: &Tensor,
    size: &[i64],
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    ops_native::resize_(self_, size, memory_format)
}

/// `set_.source_Tensor` (CPU): after PyTorch's checks, `self` takes `source`'s sizes, strides
/// and storage offset when the two already share storage (`x.set_(x)`, `x.set_(x.t())`).
///
/// A tensor never changes which storage it views in this runtime (the storage is fixed at
/// creation), so making `self` view another tensor's storage is refused with a
/// `NotImplementedError`. The Meta kernel and the functionalization layer (which swaps its
/// wrappers' functional storage instead) support it.
pub fn set_tensor_(self_: &Tensor, source: &Tensor) -> Result<Tensor> {
    switchyard_ops::meta::set_tensor_checks(self_, source)?;
    if self_.is_same(source) {
        return Ok(self_.clone());
    }
    if !self_.is_alias_of(source) {
        return Err(Error::not_implemented(
            "set_: making a CPU tensor view another tensor's storage is not supported (a tensor's storage is fixed when it is created); set_ works on Meta tensors, under functionalization, and between tensors that already share storage",
        ));
    }
    let g = source.geometry();
    self_.set_geometry(g.sizes(), g.strides(), g.storage_offset())?;
    Ok(self_.clone())
}

/// `narrow_copy` (CPU; PyTorch's `narrow_copy_dense_cpu`): a new contiguous tensor holding
/// `self.narrow(dim, start, length)`.
pub fn narrow_copy_dense_cpu(self_: &Tensor, dim: i64, start: i64, length: i64) -> Result<Tensor> {
    let out = Tensor::allocate(&[0], self_.dtype(), self_.device())?;
    narrow_copy_dense_cpu_out(self_, dim, start, length, &out)
}

/// `narrow_copy.out` (CPU; PyTorch's `narrow_copy_dense_cpu_out`): the checks shared with the
/// Meta kernel (`switchyard_ops::meta::narrow_copy_checks`), `out` resized as PyTorch's kernel
/// resizes it, then the narrowed elements copied in. (PyTorch copies blocks of bytes as if `out`
/// were contiguous, which scrambles an `out` of the right sizes and other strides; here the
/// elements land where `out`'s strides put them.)
pub fn narrow_copy_dense_cpu_out(
    self_: &Tensor,
    dim: i64,
    start: i64,
    length: i64,
    out: &Tensor,
) -> Result<Tensor> {
    let n = switchyard_ops::meta::narrow_copy_checks(self_, dim, start, length, out.dtype())?;
    switchyard_ops::meta::narrow_copy_resize_out(out, &n.sizes)?;
    if out.numel() == 0 {
        return Ok(out.clone());
    }
    let g = self_.geometry();
    let offset = n
        .start
        .checked_mul(g.strides()[n.dim])
        .and_then(|o| o.checked_add(g.storage_offset()))
        .ok_or_else(|| Error::runtime("narrow_copy: storage offset overflows int64"))?;
    let narrowed = self_.as_strided_view(&n.sizes, g.strides(), offset)?;
    ops_native::copy_(out, &narrowed, false)?;
    Ok(out.clone())
}
