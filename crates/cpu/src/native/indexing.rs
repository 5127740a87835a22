//! CPU kernels: indexing operators (cat, index_select, gather, scatter, advanced indexing,
//! masked fill / select, flip, roll, tril / triu, sort, topk).
//!
//! Most kernels only move elements, so they dispatch on the element *width* (1, 2, 4 or 8
//! bytes) rather than the dtype and copy raw bit patterns; only reductions (`scatter_add`,
//! accumulating `index_put_`) and comparisons (sort, topk) dispatch on the dtype. Iteration
//! goes through [`Plan`]s built from explicit strides, so a gathered operand is simply an
//! operand whose stride along the indexed dimension is 0 and whose offset is corrected per
//! element by the index value. Operands that share storage with the written tensor are copied
//! first (the meta functions reject the overlaps PyTorch rejects; this covers the rest).

use crate::loops::{GRAIN_SIZE, Plan, map};
use crate::num::{Num, dispatch_compute};
use crate::parallel;
use bytemuck::Pod;
use smallvec::SmallVec;
use std::cmp::Ordering;
use switchyard_core::element::{Element, convert};
use switchyard_core::shape::{DimVec, contiguous_strides, fmt_dims, infer_size, wrap_dim};
use switchyard_core::{
    Access, Device, Error, Result, Scalar, ScalarType, Tensor, dispatch_dtype, torch_check,
    torch_check_index, torch_check_not_implemented, with_tensors,
};
use switchyard_ops::meta::index_support::{
    AdvancedIndex, assert_no_internal_overlap, assert_no_overlap, expand_view,
};
use switchyard_ops::meta::{
    CatInfo, ScatterInfo, ScatterReduce, check_index_put_count, check_index_put_values,
    check_masked_fill, check_masked_fill_value, check_roll, empty_like_preserve, flip_flags,
    index_select_checks,
};
use switchyard_ops::structured::{Meta, resize_output};

// ---------------------------------------------------------------------------------------------
// Iteration and data-movement helpers
// ---------------------------------------------------------------------------------------------

/// Calls `$body` with `$W` bound to an unsigned integer of `$width` bytes: the type raw
/// element copies move.
macro_rules! dispatch_width {
    ($width:expr, $W:ident => $body:expr) => {
        match $width {
            1 => {
                type $W = u8;
                $body
            }
            2 => {
                type $W = u16;
                $body
            }
            4 => {
                type $W = u32;
                $body
            }
            _ => {
                type $W = u64;
                $body
            }
        }
    };
}

/// Host bytes viewed as `W`s (storages are 64-byte aligned; offsets are whole elements).
fn words<W: Pod>(bytes: &[u8]) -> Result<&[W]> {
    let size = std::mem::size_of::<W>();
    bytemuck::try_cast_slice(&bytes[..bytes.len() - bytes.len() % size])
        .map_err(|e| Error::runtime(format!("internal error: misaligned tensor data ({e:?})")))
}

/// Mutable counterpart of [`words`].
fn words_mut<W: Pod>(bytes: &mut [u8]) -> Result<&mut [W]> {
    let size = std::mem::size_of::<W>();
    let len = bytes.len() - bytes.len() % size;
    bytemuck::try_cast_slice_mut(&mut bytes[..len])
        .map_err(|e| Error::runtime(format!("internal error: misaligned tensor data ({e:?})")))
}

fn out_of_range() -> Error {
    Error::runtime("internal error: indexing kernel addressed memory outside a tensor's storage")
}

/// Converts a computed element offset to a slice index.
#[inline]
fn at(offset: i64) -> Result<usize> {
    usize::try_from(offset).map_err(|_| out_of_range())
}

/// A [`Plan`] over `shape` for operands given by raw strides (possibly negative, possibly 0)
/// and offsets; dimensions of size 1 are dropped and dimensions every operand walks as one are
/// merged, keeping row-major order.
fn raw_plan(shape: &[i64], strides: &[&[i64]], offsets: &[i64]) -> Plan {
    let mut dims: Vec<usize> = (0..shape.len()).filter(|d| shape[*d] != 1).collect();
    let mut out_shape = DimVec::new();
    let mut out_strides: SmallVec<[DimVec; 4]> = strides.iter().map(|_| DimVec::new()).collect();
    while let Some(d) = dims.pop() {
        let mut size = shape[d];
        while let Some(&outer) = dims.last() {
            if !strides.iter().all(|s| s[outer] == s[d] * size) {
                break;
            }
            size *= shape[outer];
            dims.pop();
        }
        out_shape.insert(0, size);
        for (k, s) in strides.iter().enumerate() {
            out_strides[k].insert(0, s[d]);
        }
    }
    let numel = shape.iter().map(|s| (*s).max(0) as usize).product();
    Plan {
        shape: out_shape,
        strides: out_strides,
        offsets: offsets.iter().copied().collect(),
        numel,
    }
}

/// Runs `f(out_part, base, start, end)` over the linear index range of `plan`, in parallel
/// chunks when operand 0 (the output) is written linearly and the work is large. `out_part`
/// holds the output's elements from storage offset `base` on.
fn for_output_ranges<W: Pod + Send>(
    out: &mut [W],
    plan: &Plan,
    f: impl Fn(&mut [W], i64, usize, usize) -> Result<()> + Sync,
) -> Result<()> {
    let n = plan.numel;
    let threads = parallel::num_threads();
    if n >= GRAIN_SIZE && threads > 1 && plan.is_linear(0) {
        let start = at(plan.offsets[0])?;
        let region = out.get_mut(start..start + n).ok_or_else(out_of_range)?;
        let chunk = (n / (threads * 4)).max(GRAIN_SIZE / 4);
        return parallel::for_each_chunk_mut(region, chunk, &|i, part| {
            let first = i * chunk;
            let count = part.len();
            f(part, plan.offsets[0] + first as i64, first, first + count)
        });
    }
    f(out, 0, 0, n)
}

/// `plan.for_each_run` with an error channel.
fn try_runs(
    plan: &Plan,
    start: usize,
    end: usize,
    mut f: impl FnMut(&[i64], usize) -> Result<()>,
) -> Result<()> {
    let mut result = Ok(());
    plan.for_each_run(start, end, |offs, len| {
        if result.is_ok() {
            result = f(offs, len);
        }
    });
    result
}

/// Copies elements `dst[plan operand 0] = src[plan operand 1]` (raw bits).
fn copy_by_plan<W: Pod>(dst: &mut [W], src: &[W], plan: &Plan) -> Result<()> {
    let (ds, ss) = (plan.inner_stride(0), plan.inner_stride(1));
    try_runs(plan, 0, plan.numel, |offs, len| {
        if ds == 1 && ss == 1 {
            let (d, s) = (at(offs[0])?, at(offs[1])?);
            let src = src.get(s..s + len).ok_or_else(out_of_range)?;
            dst.get_mut(d..d + len)
                .ok_or_else(out_of_range)?
                .copy_from_slice(src);
        } else {
            for j in 0..len as i64 {
                let v = *src.get(at(offs[1] + j * ss)?).ok_or_else(out_of_range)?;
                *dst.get_mut(at(offs[0] + j * ds)?)
                    .ok_or_else(out_of_range)? = v;
            }
        }
        Ok(())
    })
}

/// `dst.copy_(src)` for tensors of the same shape (dtype conversion included), through the
/// elementwise engine (vectorised and threaded for contiguous runs).
fn copy_into(dst: &Tensor, src: &Tensor) -> Result<()> {
    dispatch_dtype!(dst.dtype(), T => map::<T, T, 1>(dst, [src], |[x]| x))
}

/// A contiguous copy of `t`.
fn contiguous_copy(t: &Tensor) -> Result<Tensor> {
    let c = Tensor::allocate(&t.sizes(), t.dtype(), t.device())?;
    copy_into(&c, t)?;
    Ok(c)
}

/// `t`, or a private copy of it when it shares storage with `written` (so that reading it
/// while writing `written` is well defined).
fn detach_from(t: &Tensor, written: &Tensor) -> Result<Tensor> {
    if t.is_alias_of(written) && !t.is_same(written) {
        contiguous_copy(t)
    } else {
        Ok(t.clone())
    }
}

/// Index tensor contents as `i64` slices, whatever their integer dtype.
trait IndexElem: Pod + Sync {
    fn get(self) -> i64;
}
impl IndexElem for i64 {
    #[inline(always)]
    fn get(self) -> i64 {
        self
    }
}
impl IndexElem for i32 {
    #[inline(always)]
    fn get(self) -> i64 {
        i64::from(self)
    }
}

/// Calls `$body` with `$I` bound to the element type of an index dtype (`Long` or `Int`).
macro_rules! dispatch_index {
    ($dtype:expr, $I:ident => $body:expr) => {
        match $dtype {
            ScalarType::Int => {
                type $I = i32;
                $body
            }
            _ => {
                type $I = i64;
                $body
            }
        }
    };
}

/// The error an out-of-range index value raises (kernels differ in wording and kind).
#[derive(Clone, Copy)]
enum BoundsError {
    /// gather / scatter: RuntimeError "index 5 is out of bounds for dimension 0 with size 4".
    Dim(usize),
    /// advanced indexing: IndexError with the position among indexed dimensions; negative
    /// values count from the end.
    Advanced(usize),
}

impl BoundsError {
    /// Checks (and wraps) `value` against `size`.
    #[inline]
    fn check(self, value: i64, size: i64) -> Result<i64> {
        match self {
            BoundsError::Dim(d) => {
                if value >= 0 && value < size {
                    Ok(value)
                } else {
                    Err(Error::runtime(format!(
                        "index {value} is out of bounds for dimension {d} with size {size}"
                    )))
                }
            }
            BoundsError::Advanced(k) => {
                if value >= -size && value < size {
                    Ok(if value < 0 { value + size } else { value })
                } else {
                    Err(Error::index(format!(
                        "index {value} is out of bounds for dimension {k} with size {size}"
                    )))
                }
            }
        }
    }
}

/// `max(dim, 1)` sizes / strides: scatter and gather treat a 0-dim tensor as 1-d.
fn nonempty_geometry(t: &Tensor) -> (DimVec, DimVec) {
    if t.dim() == 0 {
        (DimVec::from_slice(&[1]), DimVec::from_slice(&[1]))
    } else {
        (t.sizes(), t.strides())
    }
}

// ---------------------------------------------------------------------------------------------
// cat
// ---------------------------------------------------------------------------------------------

/// `cat.out` on CPU: each input is copied into its slice of the output.
pub fn cat_out_cpu(
    meta: &Meta<CatInfo>,
    tensors: &[Tensor],
    _dim: i64,
    out: &Tensor,
) -> Result<()> {
    let info = &meta.extra;
    if info.valid >= tensors.len() {
        return Ok(());
    }
    let d = info.dim;
    let (out_sizes, out_strides) = (out.sizes(), out.strides());
    let mut position = 0i64;
    for t in tensors {
        if t.dim() == 1 && t.numel() == 0 {
            continue;
        }
        let n = t.sizes().get(d).copied().unwrap_or(1);
        if n == 0 {
            continue;
        }
        let mut sizes = out_sizes.clone();
        sizes[d] = n;
        let offset = out.storage_offset() + position * out_strides[d];
        let slice = out.as_strided_view(&sizes, &out_strides, offset)?;
        let src = detach_from(t, out)?;
        copy_into(&slice, &src)?;
        position += n;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// index_select
// ---------------------------------------------------------------------------------------------

/// `index_select.out` on CPU.
pub fn index_select_out_cpu_(
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    out: &Tensor,
) -> Result<Tensor> {
    let (d, result_sizes) = index_select_checks(self_, dim, index, out)?;
    let numel = index.numel();
    resize_output(out, &result_sizes)?;
    let idx = read_indices(index)?;
    let (sizes, strides) = nonempty_geometry(self_);
    let bound = if self_.dim() > 1 {
        sizes[d]
    } else {
        self_.numel()
    };
    if self_.dim() > 1 && numel == 0 {
        return Ok(out.clone());
    }
    for v in &idx {
        torch_check_index!(*v >= 0 && *v < bound, "index out of range in self");
    }
    if out.numel() == 0 {
        return Ok(out.clone());
    }
    let self_ = detach_from(self_, out)?;
    let (out_sizes, out_strides) = nonempty_geometry(out);
    select_along(out, &out_sizes, &out_strides, &self_, &strides, d, &idx)?;
    Ok(out.clone())
}

/// `index_select` on CPU.
pub fn index_select_cpu_(self_: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    let out = Tensor::allocate(&[0], self_.dtype(), self_.device())?;
    index_select_out_cpu_(self_, dim, index, &out)
}

/// Reads a 0/1-d integer index tensor into `i64`s.
fn read_indices(index: &Tensor) -> Result<Vec<i64>> {
    match index.dtype() {
        ScalarType::Int => Ok(index.to_vec::<i32>()?.into_iter().map(i64::from).collect()),
        _ => index.to_vec::<i64>(),
    }
}

/// `out[.., i, ..] = self[.., idx[i], ..]` along dimension `d` (indices already checked).
/// Contiguous trailing blocks are copied as slices; otherwise element by element.
fn select_along(
    out: &Tensor,
    out_sizes: &[i64],
    out_strides: &[i64],
    self_: &Tensor,
    self_strides: &[i64],
    d: usize,
    idx: &[i64],
) -> Result<()> {
    let ndim = out_sizes.len();
    let inner: i64 = out_sizes[d + 1..].iter().product();
    let inner_contig = |strides: &[i64]| {
        contiguous_strides(&out_sizes[d + 1..])
            .iter()
            .zip(&strides[d + 1..])
            .zip(&out_sizes[d + 1..])
            .all(|((c, s), n)| *n == 1 || c == s)
    };
    let block = inner >= 16 && inner_contig(out_strides) && inner_contig(self_strides);
    let width = out.element_size();
    with_tensors(&[(out, Access::Write), (self_, Access::Read)], |data| {
        let (mut written, shared) = data.split_host_mut(&[0])?;
        let src_bytes = shared[1].ok_or_else(out_of_range)?;
        let out_bytes: &mut [u8] = written[0];
        let (out_off, self_off) = (out.storage_offset(), self_.storage_offset());
        dispatch_width!(width, W => {
            let dst = words_mut::<W>(out_bytes)?;
            let src = words::<W>(src_bytes)?;
            if block {
                // Iterate [outer.., i] and copy `inner` contiguous elements each time.
                let shape = &out_sizes[..=d];
                let mut self_st: DimVec = self_strides[..=d].iter().copied().collect();
                self_st[d] = 0;
                let idx_st: DimVec = (0..=d).map(|k| i64::from(k == d)).collect();
                let plan = raw_plan(shape, &[&out_strides[..=d], &self_st, &idx_st], &[out_off, self_off, 0]);
                let n = inner as usize;
                let (os, ss, is) = (plan.inner_stride(0), plan.inner_stride(1), plan.inner_stride(2));
                let step = self_strides[d];
                return try_runs(&plan, 0, plan.numel, |offs, len| {
                    for j in 0..len as i64 {
                        let i = *idx.get(at(offs[2] + j * is)?).ok_or_else(out_of_range)?;
                        let s = at(offs[1] + j * ss + i * step)?;
                        let o = at(offs[0] + j * os)?;
                        let from = src.get(s..s + n).ok_or_else(out_of_range)?;
                        dst.get_mut(o..o + n).ok_or_else(out_of_range)?.copy_from_slice(from);
                    }
                    Ok(())
                });
            }
            let mut self_st: DimVec = self_strides.iter().copied().collect();
            self_st[d] = 0;
            let idx_st: DimVec = (0..ndim).map(|k| i64::from(k == d)).collect();
            let plan = raw_plan(out_sizes, &[out_strides, &self_st, &idx_st], &[out_off, self_off, 0]);
            let step = self_strides[d];
            let (ss, is) = (plan.inner_stride(1), plan.inner_stride(2));
            for_output_ranges(dst, &plan, |part, base, start, end| {
                let os = plan.inner_stride(0);
                try_runs(&plan, start, end, |offs, len| {
                    for j in 0..len as i64 {
                        let i = *idx.get(at(offs[2] + j * is)?).ok_or_else(out_of_range)?;
                        let v = *src.get(at(offs[1] + j * ss + i * step)?).ok_or_else(out_of_range)?;
                        *part.get_mut(at(offs[0] - base + j * os)?).ok_or_else(out_of_range)? = v;
                    }
                    Ok(())
                })
            })
        })
    })
}

// ---------------------------------------------------------------------------------------------
// gather / scatter
// ---------------------------------------------------------------------------------------------

/// `gather.out` on CPU: `out[i][j] = self[index[i][j]][j]` (for dim 0).
pub fn gather_out(
    meta: &Meta<usize>,
    self_: &Tensor,
    _dim: i64,
    index: &Tensor,
    _sparse_grad: bool,
    out: &Tensor,
) -> Result<()> {
    let d = meta.extra;
    if index.numel() == 0 {
        return Ok(());
    }
    let self_ = detach_from(self_, out)?;
    let index = detach_from(index, out)?;
    let (self_sizes, self_strides) = nonempty_geometry(&self_);
    let (shape, index_strides) = nonempty_geometry(&index);
    let (_, out_strides) = nonempty_geometry(out);
    let mut self_st = self_strides.clone();
    self_st[d] = 0;
    let plan = raw_plan(
        &shape,
        &[&out_strides, &index_strides, &self_st],
        &[
            out.storage_offset(),
            index.storage_offset(),
            self_.storage_offset(),
        ],
    );
    let (bound, step) = (self_sizes[d], self_strides[d]);
    let check = BoundsError::Dim(d);
    with_tensors(
        &[
            (out, Access::Write),
            (&index, Access::Read),
            (&self_, Access::Read),
        ],
        |data| {
            let (mut written, shared) = data.split_host_mut(&[0])?;
            let (ib, sb) = (
                shared[1].ok_or_else(out_of_range)?,
                shared[2].ok_or_else(out_of_range)?,
            );
            let out_bytes: &mut [u8] = written[0];
            dispatch_index!(index.dtype(), I => dispatch_width!(out.element_size(), W => {
                let (dst, ix, src) = (words_mut::<W>(out_bytes)?, words::<I>(ib)?, words::<W>(sb)?);
                let (is, ss) = (plan.inner_stride(1), plan.inner_stride(2));
                for_output_ranges(dst, &plan, |part, base, start, end| {
                    let os = plan.inner_stride(0);
                    try_runs(&plan, start, end, |offs, len| {
                        for j in 0..len as i64 {
                            let raw = ix.get(at(offs[1] + j * is)?).ok_or_else(out_of_range)?.get();
                            let i = check.check(raw, bound)?;
                            let v = *src.get(at(offs[2] + j * ss + i * step)?).ok_or_else(out_of_range)?;
                            *part.get_mut(at(offs[0] - base + j * os)?).ok_or_else(out_of_range)? = v;
                        }
                        Ok(())
                    })
                })
            }))
        },
    )
}

/// What a scatter writes at each indexed position.
enum ScatterSource<'a> {
    /// Elements of a tensor at the index's coordinates.
    Tensor(&'a Tensor),
    /// One value.
    Value(Scalar),
}

/// The shared body of every scatter kernel: `out = self` (unless in place), then for each
/// element of `index`, `out[.., index, ..] (op)= src[..]`.
fn scatter_kernel(
    info: &ScatterInfo,
    self_: &Tensor,
    index: &Tensor,
    src: ScatterSource<'_>,
    out: &Tensor,
) -> Result<()> {
    if !self_.is_same(out) {
        copy_into(out, self_)?;
    }
    if index.numel() == 0 {
        return Ok(());
    }
    if info.reduce.is_some() && out.dtype().is_reduced_float() {
        // Half / BFloat16 reductions accumulate in an f32 buffer and round once at the end.
        let buffer = Tensor::allocate(&out.sizes(), ScalarType::Float, Device::CPU)?;
        copy_into(&buffer, out)?;
        match src {
            ScatterSource::Tensor(t) => {
                let f = Tensor::allocate(&t.sizes(), ScalarType::Float, Device::CPU)?;
                copy_into(&f, t)?;
                scatter_kernel(info, &buffer, index, ScatterSource::Tensor(&f), &buffer)?;
            }
            ScatterSource::Value(v) => {
                // The value is first rounded to the tensor's dtype, as PyTorch converts it.
                let v = dispatch_dtype!(out.dtype(), T => v.to::<T>()?.to_scalar());
                scatter_kernel(info, &buffer, index, ScatterSource::Value(v), &buffer)?;
            }
        }
        return copy_into(out, &buffer);
    }
    let d = info.dim;
    let index = detach_from(index, out)?;
    let src_tensor = match &src {
        ScatterSource::Tensor(t) => detach_from(t, out)?,
        ScatterSource::Value(s) => {
            dispatch_dtype!(out.dtype(), T => Tensor::from_vec(vec![s.to::<T>()?], &[])?)
        }
    };
    let (out_sizes, out_strides) = nonempty_geometry(out);
    let (shape, index_strides) = nonempty_geometry(&index);
    let src_strides: DimVec = match &src {
        ScatterSource::Tensor(_) => nonempty_geometry(&src_tensor).1,
        ScatterSource::Value(_) => DimVec::from_elem(0, shape.len()),
    };
    let mut out_st = out_strides.clone();
    out_st[d] = 0;
    let plan = raw_plan(
        &shape,
        &[&out_st, &index_strides, &src_strides],
        &[
            out.storage_offset(),
            index.storage_offset(),
            src_tensor.storage_offset(),
        ],
    );
    let (bound, step) = (out_sizes[d], out_strides[d]);
    let check = BoundsError::Dim(d);
    with_tensors(
        &[
            (out, Access::Write),
            (&index, Access::Read),
            (&src_tensor, Access::Read),
        ],
        |data| {
            let (mut written, shared) = data.split_host_mut(&[0])?;
            let (ib, sb) = (
                shared[1].ok_or_else(out_of_range)?,
                shared[2].ok_or_else(out_of_range)?,
            );
            let out_bytes: &mut [u8] = written[0];
            let (is, ss, os) = (
                plan.inner_stride(1),
                plan.inner_stride(2),
                plan.inner_stride(0),
            );
            dispatch_index!(index.dtype(), I => {
                let ix = words::<I>(ib)?;
                let visit = |mut f: Box<dyn FnMut(usize, usize) -> Result<()> + '_>| {
                    try_runs(&plan, 0, plan.numel, |offs, len| {
                        for j in 0..len as i64 {
                            let raw = ix.get(at(offs[1] + j * is)?).ok_or_else(out_of_range)?.get();
                            let i = check.check(raw, bound)?;
                            f(at(offs[0] + j * os + i * step)?, at(offs[2] + j * ss)?)?;
                        }
                        Ok(())
                    })
                };
                match info.reduce {
                    None => dispatch_width!(out.element_size(), W => {
                        let dst = words_mut::<W>(out_bytes)?;
                        let src = words::<W>(sb)?;
                        visit(Box::new(|o, s| {
                            let v = *src.get(s).ok_or_else(out_of_range)?;
                            *dst.get_mut(o).ok_or_else(out_of_range)? = v;
                            Ok(())
                        }))
                    }),
                    Some(reduce) => dispatch_dtype!(out.dtype(), T => dispatch_compute!(out.dtype(), C => {
                        let dst = crate::loops::typed_mut::<T>(out_bytes)?;
                        let src = crate::loops::typed::<T>(sb)?;
                        visit(Box::new(|o, s| {
                            let a: C = convert(T::from_repr(*dst.get(o).ok_or_else(out_of_range)?));
                            let b: C = convert(T::from_repr(*src.get(s).ok_or_else(out_of_range)?));
                            let r = match reduce {
                                ScatterReduce::Add => a.add(b),
                                ScatterReduce::Multiply => a.mul(b),
                            };
                            *dst.get_mut(o).ok_or_else(out_of_range)? = T::to_repr(convert::<C, T>(r));
                            Ok(())
                        }))
                    })),
                }
            })
        },
    )
}

/// `scatter.src_out` on CPU.
pub fn scatter_src_out(
    meta: &Meta<ScatterInfo>,
    self_: &Tensor,
    _dim: i64,
    index: &Tensor,
    src: &Tensor,
    out: &Tensor,
) -> Result<()> {
    scatter_kernel(&meta.extra, self_, index, ScatterSource::Tensor(src), out)
}

/// `scatter.value_out` on CPU.
pub fn scatter_value_out(
    meta: &Meta<ScatterInfo>,
    self_: &Tensor,
    _dim: i64,
    index: &Tensor,
    value: Scalar,
    out: &Tensor,
) -> Result<()> {
    scatter_kernel(&meta.extra, self_, index, ScatterSource::Value(value), out)
}

/// `scatter.reduce_out` on CPU (deprecated in PyTorch in favour of `scatter_reduce`).
pub fn scatter_reduce_out(
    meta: &Meta<ScatterInfo>,
    self_: &Tensor,
    _dim: i64,
    index: &Tensor,
    src: &Tensor,
    _reduce: &str,
    out: &Tensor,
) -> Result<()> {
    switchyard_dispatch::warnings::warn(
        "The reduce argument of torch.scatter with Tensor src is deprecated and will be removed in a future PyTorch release. Use torch.scatter_reduce instead for more reduction options."
            .to_string(),
    );
    scatter_kernel(&meta.extra, self_, index, ScatterSource::Tensor(src), out)
}

/// `scatter.value_reduce_out` on CPU.
pub fn scatter_value_reduce_out(
    meta: &Meta<ScatterInfo>,
    self_: &Tensor,
    _dim: i64,
    index: &Tensor,
    value: Scalar,
    _reduce: &str,
    out: &Tensor,
) -> Result<()> {
    scatter_kernel(&meta.extra, self_, index, ScatterSource::Value(value), out)
}

/// `scatter_add.out` on CPU.
pub fn scatter_add(
    meta: &Meta<ScatterInfo>,
    self_: &Tensor,
    _dim: i64,
    index: &Tensor,
    src: &Tensor,
    out: &Tensor,
) -> Result<()> {
    scatter_kernel(&meta.extra, self_, index, ScatterSource::Tensor(src), out)
}

// ---------------------------------------------------------------------------------------------
// Advanced indexing
// ---------------------------------------------------------------------------------------------

/// The index tensors of an [`AdvancedIndex`] as `Long` tensors (`Int` ones converted, as
/// PyTorch does), with their strides over the result shape.
fn long_indices(info: &AdvancedIndex) -> Result<(Vec<Tensor>, Vec<DimVec>)> {
    let mut tensors = Vec::with_capacity(info.indices.len());
    let mut strides = Vec::with_capacity(info.indices.len());
    for (k, t) in info.indices.iter().enumerate() {
        if t.dtype() == ScalarType::Long {
            tensors.push(t.clone());
            strides.push(info.index_result_strides(k)?);
        } else {
            let long = Tensor::allocate(&t.sizes(), ScalarType::Long, t.device())?;
            map::<i64, i64, 1>(&long, [t], |[x]| x)?;
            let st: DimVec = std::iter::repeat_n(0, info.dims_before)
                .chain(long.strides().iter().copied())
                .chain(std::iter::repeat_n(0, info.dims_after))
                .collect();
            tensors.push(long);
            strides.push(st);
        }
    }
    Ok((tensors, strides))
}

/// Computes the element offset in `self` of each result position: `base + Σ_k
/// wrap(idx_k) * indexed_stride_k`.
#[inline]
fn advanced_offset(
    base: i64,
    j: i64,
    offs: &[i64],
    idx_data: &[&[i64]],
    idx_inner: &[i64],
    info: &AdvancedIndex,
) -> Result<i64> {
    let mut off = base;
    for (k, data) in idx_data.iter().enumerate() {
        let raw = *data
            .get(at(offs[k] + j * idx_inner[k])?)
            .ok_or_else(out_of_range)?;
        let v = BoundsError::Advanced(k).check(raw, info.indexed_sizes[k])?;
        off += v * info.indexed_strides[k];
    }
    Ok(off)
}

/// `index.Tensor_out` on CPU: gathers the advanced-indexing result.
pub fn index_out(
    meta: &Meta<AdvancedIndex>,
    self_: &Tensor,
    _indices: &[Option<Tensor>],
    out: &Tensor,
) -> Result<()> {
    let info = &meta.extra;
    if out.numel() == 0 {
        return Ok(());
    }
    let self_ = detach_from(self_, out)?;
    let (idx_tensors, idx_strides) = long_indices(info)?;
    let self_st = info.self_result_strides();
    let out_strides = out.strides();
    let mut strides: Vec<&[i64]> = vec![&out_strides, &self_st];
    strides.extend(idx_strides.iter().map(|s| s.as_slice()));
    let mut offsets = vec![out.storage_offset(), self_.storage_offset()];
    offsets.extend(idx_tensors.iter().map(Tensor::storage_offset));
    let plan = raw_plan(&info.result_sizes, &strides, &offsets);
    let mut requests = vec![(out, Access::Write), (&self_, Access::Read)];
    requests.extend(idx_tensors.iter().map(|t| (t, Access::Read)));
    with_tensors(&requests, |data| {
        let (mut written, shared) = data.split_host_mut(&[0])?;
        let sb = shared[1].ok_or_else(out_of_range)?;
        let idx_data: Vec<&[i64]> = shared[2..]
            .iter()
            .map(|b| b.ok_or_else(out_of_range).and_then(words::<i64>))
            .collect::<Result<_>>()?;
        let out_bytes: &mut [u8] = written[0];
        let inner: Vec<i64> = (0..plan.offsets.len())
            .map(|k| plan.inner_stride(k))
            .collect();
        dispatch_width!(out.element_size(), W => {
            let (dst, src) = (words_mut::<W>(out_bytes)?, words::<W>(sb)?);
            for_output_ranges(dst, &plan, |part, base, start, end| {
                try_runs(&plan, start, end, |offs, len| {
                    for j in 0..len as i64 {
                        let s = advanced_offset(offs[1] + j * inner[1], j, &offs[2..], &idx_data, &inner[2..], info)?;
                        let v = *src.get(at(s)?).ok_or_else(out_of_range)?;
                        *part.get_mut(at(offs[0] - base + j * inner[0])?).ok_or_else(out_of_range)? = v;
                    }
                    Ok(())
                })
            })
        })
    })
}

/// The single boolean mask of `indices` when `index_put_` can be a `masked_fill_` instead
/// (PyTorch's `canDispatchToMaskedFill`), already reshaped to broadcast against `self`.
fn masked_fill_dispatch(
    self_: &Tensor,
    indices: &[Option<Tensor>],
    value: &Tensor,
) -> Result<Option<Tensor>> {
    if !(value.numel() == 1 && value.is_cpu()) {
        return Ok(None);
    }
    let mut dims_seen = 0usize;
    let mut mask: Option<&Tensor> = None;
    let self_sizes = self_.sizes();
    for index in indices {
        let Some(t) = index else {
            dims_seen += 1;
            continue;
        };
        if !matches!(t.dtype(), ScalarType::Bool | ScalarType::Byte)
            || t.device() != self_.device()
            || mask.is_some()
        {
            return Ok(None);
        }
        let sizes = t.sizes();
        for (j, m) in sizes.iter().enumerate() {
            let src = dims_seen + j;
            torch_check_index!(
                self_sizes.get(src) == Some(m),
                "The shape of the mask {} at index {j} does not match the shape of the indexed tensor {} at index {src}",
                fmt_dims(&sizes),
                fmt_dims(&self_sizes)
            );
        }
        dims_seen += sizes.len();
        mask = Some(t);
    }
    let Some(mask) = mask else { return Ok(None) };
    // Trailing size-1 dimensions so the mask lines up with self's leading dimensions.
    let extra = self_.dim().saturating_sub(dims_seen);
    let sizes: DimVec = mask
        .sizes()
        .iter()
        .copied()
        .chain(std::iter::repeat_n(1, extra))
        .collect();
    let strides: DimVec = mask
        .strides()
        .iter()
        .copied()
        .chain(std::iter::repeat_n(1, extra))
        .collect();
    let mask = mask.as_strided_view(&sizes, &strides, mask.storage_offset())?;
    Ok(Some(mask))
}

/// `_index_put_impl_` on CPU: `self[indices] = values` (or `+=` with `accumulate`).
pub fn _index_put_impl_(
    self_: &Tensor,
    indices: &[Option<Tensor>],
    values: &Tensor,
    accumulate: bool,
    _unsafe: bool,
) -> Result<Tensor> {
    check_index_put_count(self_, indices)?;
    if !accumulate && let Some(mask) = masked_fill_dispatch(self_, indices, values)? {
        let mask = if mask.dtype() == ScalarType::Byte {
            let b = Tensor::allocate(&mask.sizes(), ScalarType::Bool, Device::CPU)?;
            copy_into(&b, &mask)?;
            b
        } else {
            mask
        };
        masked_fill_impl(self_, &mask, values.item_scalar()?)?;
        return Ok(self_.clone());
    }
    assert_no_overlap(self_, values)?;
    for t in indices.iter().flatten() {
        assert_no_overlap(self_, t)?;
    }
    let info = AdvancedIndex::new(self_, indices)?;
    let value_strides = check_index_put_values(self_, &info, values)?;
    if info.result_sizes.contains(&0) {
        return Ok(self_.clone());
    }
    let values = detach_from(values, self_)?;
    let (idx_tensors, idx_strides) = long_indices(&info)?;
    let self_st = info.self_result_strides();
    let mut strides: Vec<&[i64]> = vec![&self_st, &value_strides];
    strides.extend(idx_strides.iter().map(|s| s.as_slice()));
    let mut offsets = vec![self_.storage_offset(), values.storage_offset()];
    offsets.extend(idx_tensors.iter().map(Tensor::storage_offset));
    let plan = raw_plan(&info.result_sizes, &strides, &offsets);
    let mut requests = vec![(self_, Access::Write), (&values, Access::Read)];
    requests.extend(idx_tensors.iter().map(|t| (t, Access::Read)));
    let dtype = self_.dtype();
    with_tensors(&requests, |data| {
        let (mut written, shared) = data.split_host_mut(&[0])?;
        let vb = shared[1].ok_or_else(out_of_range)?;
        let idx_data: Vec<&[i64]> = shared[2..]
            .iter()
            .map(|b| b.ok_or_else(out_of_range).and_then(words::<i64>))
            .collect::<Result<_>>()?;
        let self_bytes: &mut [u8] = written[0];
        let inner: Vec<i64> = (0..plan.offsets.len())
            .map(|k| plan.inner_stride(k))
            .collect();
        let visit = |mut f: Box<dyn FnMut(usize, usize) -> Result<()> + '_>| {
            try_runs(&plan, 0, plan.numel, |offs, len| {
                for j in 0..len as i64 {
                    let o = advanced_offset(
                        offs[0] + j * inner[0],
                        j,
                        &offs[2..],
                        &idx_data,
                        &inner[2..],
                        &info,
                    )?;
                    f(at(o)?, at(offs[1] + j * inner[1])?)?;
                }
                Ok(())
            })
        };
        if accumulate {
            dispatch_dtype!(dtype, T => dispatch_compute!(dtype, C => {
                let dst = crate::loops::typed_mut::<T>(self_bytes)?;
                let src = crate::loops::typed::<T>(vb)?;
                visit(Box::new(|o, s| {
                    let a: C = convert(T::from_repr(*dst.get(o).ok_or_else(out_of_range)?));
                    let b: C = convert(T::from_repr(*src.get(s).ok_or_else(out_of_range)?));
                    *dst.get_mut(o).ok_or_else(out_of_range)? = T::to_repr(convert::<C, T>(a.add(b)));
                    Ok(())
                }))
            }))
        } else {
            dispatch_width!(dtype.element_size(), W => {
                let dst = words_mut::<W>(self_bytes)?;
                let src = words::<W>(vb)?;
                visit(Box::new(|o, s| {
                    let v = *src.get(s).ok_or_else(out_of_range)?;
                    *dst.get_mut(o).ok_or_else(out_of_range)? = v;
                    Ok(())
                }))
            })
        }
    })?;
    Ok(self_.clone())
}

// ---------------------------------------------------------------------------------------------
// masked_fill / masked_select
// ---------------------------------------------------------------------------------------------

/// The body of `masked_fill_`: checks, then `self = mask ? value : self` through the
/// elementwise engine (the mask broadcasts to `self`).
fn masked_fill_impl(self_: &Tensor, mask: &Tensor, value: Scalar) -> Result<()> {
    check_masked_fill(self_, mask)?;
    dispatch_dtype!(self_.dtype(), T => {
        let v: T = value.to::<T>()?;
        let zero = T::from_i64_lossy(0);
        map::<T, T, 2>(self_, [self_, mask], move |[x, m]| if m != zero { v } else { x })
    })
}

/// `masked_fill_.Scalar` on CPU.
#[allow(non_snake_case)]
pub fn masked_fill__cpu_scalar(self_: &Tensor, mask: &Tensor, value: Scalar) -> Result<Tensor> {
    masked_fill_impl(self_, mask, value)?;
    Ok(self_.clone())
}

/// `masked_fill_.Tensor` on CPU (`value` must be 0-dim).
#[allow(non_snake_case)]
pub fn masked_fill__cpu_tensor(self_: &Tensor, mask: &Tensor, value: &Tensor) -> Result<Tensor> {
    check_masked_fill_value(value)?;
    masked_fill_impl(self_, mask, value.item_scalar()?)?;
    Ok(self_.clone())
}

/// `masked_select.out` on CPU: the elements of `self` where `mask` (both broadcast) is true,
/// in row-major order.
pub fn masked_select_out_cpu(self_: &Tensor, mask: &Tensor, out: &Tensor) -> Result<Tensor> {
    torch_check!(
        mask.dtype() == ScalarType::Bool,
        "masked_select: expected BoolTensor for mask"
    );
    torch_check!(
        self_.dtype() == out.dtype(),
        "masked_select(): self and result must have the same scalar type"
    );
    assert_no_internal_overlap(out)?;
    assert_no_overlap(out, self_)?;
    assert_no_overlap(out, mask)?;
    let self_ = detach_from(self_, out)?;
    let mask = detach_from(mask, out)?;
    let shape = infer_size(&mask.sizes(), &self_.sizes())?;
    let self_b = expand_view(&self_, &shape)?;
    let mask_b = expand_view(&mask, &shape)?;
    let plan = raw_plan(
        &shape,
        &[&self_b.strides(), &mask_b.strides()],
        &[self_b.storage_offset(), mask_b.storage_offset()],
    );
    // Pass 1 finds the selected elements (as offsets into self), pass 2 copies them out.
    let selected: Vec<i64> = with_tensors(&[(&mask_b, Access::Read)], |data| {
        let mb = words::<u8>(data.bytes(0)?)?;
        let mut offsets = Vec::new();
        let (ss, ms) = (plan.inner_stride(0), plan.inner_stride(1));
        try_runs(&plan, 0, plan.numel, |offs, len| {
            for j in 0..len as i64 {
                if *mb.get(at(offs[1] + j * ms)?).ok_or_else(out_of_range)? != 0 {
                    switchyard_core::alloc::try_push(&mut offsets, offs[0] + j * ss)?;
                }
            }
            Ok(())
        })?;
        Ok(offsets)
    })?;
    resize_output(out, &[selected.len() as i64])?;
    if selected.is_empty() {
        return Ok(out.clone());
    }
    let (o0, os) = (
        out.storage_offset(),
        out.strides().first().copied().unwrap_or(1),
    );
    with_tensors(&[(out, Access::Write), (&self_b, Access::Read)], |data| {
        let (mut written, shared) = data.split_host_mut(&[0])?;
        let sb = shared[1].ok_or_else(out_of_range)?;
        let out_bytes: &mut [u8] = written[0];
        dispatch_width!(out.element_size(), W => {
            let (dst, src) = (words_mut::<W>(out_bytes)?, words::<W>(sb)?);
            for (i, s) in selected.iter().enumerate() {
                let v = *src.get(at(*s)?).ok_or_else(out_of_range)?;
                *dst.get_mut(at(o0 + i as i64 * os)?).ok_or_else(out_of_range)? = v;
            }
            Ok(())
        })
    })?;
    Ok(out.clone())
}

/// `masked_select` on CPU.
pub fn masked_select_cpu(self_: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let out = Tensor::allocate(&[0], self_.dtype(), self_.device())?;
    masked_select_out_cpu(self_, mask, &out)
}

// ---------------------------------------------------------------------------------------------
// nonzero
// ---------------------------------------------------------------------------------------------

/// The row-major coordinates of the non-zero elements of `self_` (NaN counts as non-zero,
/// `-0.0` as zero), flattened: `ndim` values per element, and the number of such elements
/// (a 0-dim tensor has one element and no coordinates).
fn nonzero_coordinates(self_: &Tensor) -> Result<(Vec<i64>, i64)> {
    let sizes = self_.sizes();
    let mut coords = Vec::new();
    let mut count = 0i64;
    dispatch_dtype!(self_.dtype(), T => {
        let mut index = DimVec::from_elem(0, sizes.len());
        for v in self_.to_vec::<T>()? {
            // `v != 0` as C++ compares it (exact in f64 for every dtype's zero test): NaN
            // differs from zero, -0.0 does not.
            if v.to_f64() != 0.0 {
                count += 1;
                for c in &index {
                    switchyard_core::alloc::try_push(&mut coords, *c)?;
                }
            }
            for d in (0..sizes.len()).rev() {
                index[d] += 1;
                if index[d] < sizes[d] {
                    break;
                }
                index[d] = 0;
            }
        }
    });
    Ok((coords, count))
}

/// `nonzero.out` on CPU: the `[nnz, ndim]` `Long` coordinates of the non-zero elements in
/// row-major order. `out` is resized as `resize_output` does and, when resized, laid out
/// column-major (strides `[1, nnz]`, PyTorch's choice so that each column is contiguous).
pub fn nonzero_out_cpu(self_: &Tensor, out: &Tensor) -> Result<Tensor> {
    torch_check!(
        out.dtype() == ScalarType::Long,
        "nonzero: Expected out tensor to have scalar type Long but got scalar type{}",
        out.dtype()
    );
    assert_no_internal_overlap(out)?;
    assert_no_overlap(out, self_)?;
    let ndim = self_.dim() as i64;
    let (coords, nnz) = nonzero_coordinates(self_)?;
    if resize_output(out, &[nnz, ndim])? {
        out.set_geometry(&[nnz, ndim], &[1, nnz], out.storage_offset())?;
    }
    if coords.is_empty() {
        return Ok(out.clone());
    }
    let (strides, offset) = (out.strides(), out.storage_offset());
    with_tensors(&[(out, Access::Write)], |data| {
        let dst = words_mut::<i64>(data.bytes_mut(0)?)?;
        for (k, c) in coords.iter().enumerate() {
            let (i, d) = (k as i64 / ndim, k as i64 % ndim);
            *dst.get_mut(at(offset + i * strides[0] + d * strides[1])?)
                .ok_or_else(out_of_range)? = *c;
        }
        Ok(())
    })?;
    Ok(out.clone())
}

/// `nonzero` on CPU.
pub fn nonzero_cpu(self_: &Tensor) -> Result<Tensor> {
    let out = Tensor::allocate(&[0], ScalarType::Long, self_.device())?;
    nonzero_out_cpu(self_, &out)
}

// ---------------------------------------------------------------------------------------------
// flip / roll
// ---------------------------------------------------------------------------------------------

/// `flip` on CPU: a new tensor (laid out like `self`) with the elements of `dims` reversed.
pub fn flip(self_: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let ndim = self_.dim();
    let flipped = flip_flags(self_, dims)?;
    let out = empty_like_preserve(self_)?;
    if out.numel() == 0 {
        return Ok(out);
    }
    let (sizes, strides) = (self_.sizes(), self_.strides());
    let mut src_strides = strides.clone();
    let mut src_offset = self_.storage_offset();
    for d in 0..ndim {
        if flipped[d] {
            src_offset += (sizes[d] - 1) * strides[d];
            src_strides[d] = -strides[d];
        }
    }
    let plan = raw_plan(
        &sizes,
        &[&out.strides(), &src_strides],
        &[out.storage_offset(), src_offset],
    );
    copy_planned(&out, self_, &plan)?;
    Ok(out)
}

/// Locks `out` and `src` and copies raw elements along `plan` (operand 0 = out, 1 = src).
fn copy_planned(out: &Tensor, src: &Tensor, plan: &Plan) -> Result<()> {
    with_tensors(&[(out, Access::Write), (src, Access::Read)], |data| {
        let (mut written, shared) = data.split_host_mut(&[0])?;
        let sb = shared[1].ok_or_else(out_of_range)?;
        let out_bytes: &mut [u8] = written[0];
        dispatch_width!(out.element_size(), W => {
            copy_by_plan(words_mut::<W>(out_bytes)?, words::<W>(sb)?, plan)
        })
    })
}

/// `roll` on CPU: elements shifted along `dims` (cyclically); with no dims, along the
/// flattened tensor. The result is contiguous.
pub fn roll(self_: &Tensor, shifts: &[i64], dims: &[i64]) -> Result<Tensor> {
    check_roll(self_, shifts, dims)?;
    if dims.is_empty() {
        // One shift rolls the flattened tensor.
        let flat = Tensor::allocate(&[self_.numel()], self_.dtype(), self_.device())?;
        copy_into(
            &flat.as_strided_view(&self_.sizes(), &contiguous_strides(&self_.sizes()), 0)?,
            self_,
        )?;
        let rolled = roll(&flat, shifts, &[0])?;
        return rolled.as_strided_view(&self_.sizes(), &contiguous_strides(&self_.sizes()), 0);
    }
    let ndim = self_.dim();
    let sizes = self_.sizes();
    let mut total = vec![0i64; ndim];
    for (&shift, &d) in shifts.iter().zip(dims) {
        let w = wrap_dim(d, ndim)?;
        total[w] = total[w].wrapping_add(shift);
    }
    let out = Tensor::allocate(&sizes, self_.dtype(), self_.device())?;
    if out.numel() == 0 {
        return Ok(out);
    }
    let strides = self_.strides();
    let out_strides = out.strides();
    // Each rolled dimension splits into two segments; copy every combination of segments.
    let rolled: Vec<usize> = (0..ndim)
        .filter(|d| total[*d].rem_euclid(sizes[*d]) != 0)
        .collect();
    for combo in 0..(1u64 << rolled.len()) {
        let mut block = sizes.clone();
        let mut src_off = self_.storage_offset();
        let mut dst_off = out.storage_offset();
        let mut empty = false;
        for (bit, &d) in rolled.iter().enumerate() {
            let shift = total[d].rem_euclid(sizes[d]);
            // Output positions [0, shift) come from [size - shift, size); the rest from [0, size - shift).
            if combo >> bit & 1 == 0 {
                block[d] = shift;
                src_off += (sizes[d] - shift) * strides[d];
            } else {
                block[d] = sizes[d] - shift;
                dst_off += shift * out_strides[d];
            }
            empty |= block[d] == 0;
        }
        if empty {
            continue;
        }
        let plan = raw_plan(&block, &[&out_strides, &strides], &[dst_off, src_off]);
        copy_planned(&out, self_, &plan)?;
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// tril / triu
// ---------------------------------------------------------------------------------------------

/// `out[.., i, j] = keep(i, j) ? self[.., i, j] : 0`, with `keep` given as the kept column
/// range of row `i`.
fn triangle(self_: &Tensor, out: &Tensor, kept: impl Fn(i64) -> (i64, i64)) -> Result<()> {
    if self_.numel() == 0 {
        return Ok(());
    }
    let in_place = self_.is_same(out);
    let src = if in_place {
        self_.clone()
    } else {
        detach_from(self_, out)?
    };
    let ndim = out.dim();
    let (sizes, out_strides, src_strides) = (out.sizes(), out.strides(), src.strides());
    let (rows, cols) = (sizes[ndim - 2], sizes[ndim - 1]);
    let plan = raw_plan(
        &sizes[..ndim - 2],
        &[&out_strides[..ndim - 2], &src_strides[..ndim - 2]],
        &[out.storage_offset(), src.storage_offset()],
    );
    let (ors, ocs) = (out_strides[ndim - 2], out_strides[ndim - 1]);
    let (srs, scs) = (src_strides[ndim - 2], src_strides[ndim - 1]);
    let mut requests = vec![(out, Access::Write)];
    if !in_place {
        requests.push((&src, Access::Read));
    }
    with_tensors(&requests, |data| {
        let (mut written, shared) = data.split_host_mut(&[0])?;
        let src_bytes = shared.get(1).copied().flatten();
        let out_bytes: &mut [u8] = written[0];
        dispatch_width!(out.element_size(), W => {
            let dst = words_mut::<W>(out_bytes)?;
            let src = src_bytes.map(words::<W>).transpose()?;
            let (bs0, bs1) = (plan.inner_stride(0), plan.inner_stride(1));
            try_runs(&plan, 0, plan.numel, |offs, len| {
                for b in 0..len as i64 {
                    let (ob, sb) = (offs[0] + b * bs0, offs[1] + b * bs1);
                    for i in 0..rows {
                        let (lo, hi) = kept(i);
                        let (lo, hi) = (lo.clamp(0, cols), hi.clamp(0, cols).max(lo.clamp(0, cols)));
                        for j in 0..cols {
                            let o = at(ob + i * ors + j * ocs)?;
                            let keep = j >= lo && j < hi;
                            if keep {
                                if let Some(src) = src {
                                    let v = *src.get(at(sb + i * srs + j * scs)?).ok_or_else(out_of_range)?;
                                    *dst.get_mut(o).ok_or_else(out_of_range)? = v;
                                }
                            } else {
                                *dst.get_mut(o).ok_or_else(out_of_range)? = <W as bytemuck::Zeroable>::zeroed();
                            }
                        }
                    }
                }
                Ok(())
            })
        })
    })
}

/// `tril.out` on CPU: keeps elements on and below diagonal `diagonal`.
pub fn tril_cpu(_meta: &Meta<()>, self_: &Tensor, diagonal: i64, out: &Tensor) -> Result<()> {
    triangle(self_, out, |i| {
        (0, i.saturating_add(diagonal).saturating_add(1))
    })
}

/// `triu.out` on CPU: keeps elements on and above diagonal `diagonal`.
pub fn triu_cpu(_meta: &Meta<()>, self_: &Tensor, diagonal: i64, out: &Tensor) -> Result<()> {
    triangle(self_, out, |i| (i.saturating_add(diagonal), i64::MAX))
}

// ---------------------------------------------------------------------------------------------
// sort / topk
// ---------------------------------------------------------------------------------------------

/// Ascending order with NaN greater than everything and `-0.0 == 0.0` (PyTorch's sort order).
#[inline]
fn ascending<T: Element>(a: T, b: T) -> Ordering {
    if T::DTYPE.is_floating_point() {
        let (x, y) = (a.to_f64(), b.to_f64());
        match (x.is_nan(), y.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
        }
    } else {
        a.to_i64_lossy().cmp(&b.to_i64_lossy())
    }
}

/// Runs `f(row_values, row_indices)` for every slice along dimension `d` of `values` and
/// `indices`: `f` reads the row's current values and returns the new `(value, index)` pairs.
fn for_each_row<T: Element>(
    values: &Tensor,
    indices: &Tensor,
    input: &Tensor,
    d: usize,
    f: impl Fn(&mut Vec<(T, i64)>),
) -> Result<()> {
    let (sizes, in_strides) = nonempty_geometry(input);
    let (out_sizes, vs) = nonempty_geometry(values);
    let (_, is) = nonempty_geometry(indices);
    let outer: DimVec = sizes
        .iter()
        .enumerate()
        .map(|(k, s)| if k == d { 1 } else { *s })
        .collect();
    let plan = raw_plan(
        &outer,
        &[&in_strides, &vs, &is],
        &[
            input.storage_offset(),
            values.storage_offset(),
            indices.storage_offset(),
        ],
    );
    let (n, k) = (sizes[d], out_sizes[d]);
    let (in_step, v_step, i_step) = (in_strides[d], vs[d], is[d]);
    with_tensors(
        &[
            (values, Access::Write),
            (indices, Access::Write),
            (input, Access::Read),
        ],
        |data| {
            let (mut written, shared) = data.split_host_mut(&[0, 1])?;
            let input_bytes = shared[2].ok_or_else(out_of_range)?;
            let (vb, ib) = written.split_at_mut(1);
            let vals = crate::loops::typed_mut::<T>(vb[0])?;
            let idxs = words_mut::<i64>(ib[0])?;
            let src = crate::loops::typed::<T>(input_bytes)?;
            let mut row: Vec<(T, i64)> =
                switchyard_core::alloc::try_with_capacity(usize::try_from(n).unwrap_or(0))?;
            let strides: Vec<i64> = (0..3).map(|q| plan.inner_stride(q)).collect();
            try_runs(&plan, 0, plan.numel, |offs, len| {
                for r in 0..len as i64 {
                    row.clear();
                    let base = offs[0] + r * strides[0];
                    for j in 0..n {
                        let v = *src.get(at(base + j * in_step)?).ok_or_else(out_of_range)?;
                        row.push((T::from_repr(v), j));
                    }
                    f(&mut row);
                    let (vbase, ibase) = (offs[1] + r * strides[1], offs[2] + r * strides[2]);
                    for (j, (v, i)) in row.iter().take(k as usize).enumerate() {
                        let j = j as i64;
                        *vals
                            .get_mut(at(vbase + j * v_step)?)
                            .ok_or_else(out_of_range)? = v.to_repr();
                        *idxs
                            .get_mut(at(ibase + j * i_step)?)
                            .ok_or_else(out_of_range)? = *i;
                    }
                }
                Ok(())
            })
        },
    )
}

/// `sort.values_stable` on CPU: a stable sort along `dim` (NaN sorts as the largest value).
pub fn sort_stable_out(
    meta: &Meta<usize>,
    self_: &Tensor,
    _stable: Option<bool>,
    _dim: i64,
    descending: bool,
    values: &Tensor,
    indices: &Tensor,
) -> Result<()> {
    if self_.numel() == 0 {
        return Ok(());
    }
    let input = detach_from(&detach_from(self_, values)?, indices)?;
    dispatch_dtype!(self_.dtype(), T => {
        for_each_row::<T>(values, indices, &input, meta.extra, |row| {
            if descending {
                row.sort_by(|a, b| ascending(b.0, a.0));
            } else {
                row.sort_by(|a, b| ascending(a.0, b.0));
            }
        })
    })
}

/// `topk.values` on CPU: the `k` largest (or smallest) elements along `dim`, in order (NaN
/// counts as the largest value; ties keep the lower index first).
pub fn topk_out_cpu(
    meta: &Meta<usize>,
    self_: &Tensor,
    k: i64,
    _dim: i64,
    largest: bool,
    _sorted: bool,
    values: &Tensor,
    indices: &Tensor,
) -> Result<()> {
    torch_check_not_implemented!(
        self_.dtype() != ScalarType::Bool,
        "topk does not support bool dtypes on CPU"
    );
    if self_.dim() == 0 {
        copy_into(values, self_)?;
        return with_tensors(&[(indices, Access::Write)], |data| {
            let b = data.bytes_mut(0)?;
            switchyard_core::element::write_element(b, at(indices.storage_offset())?, 0i64);
            Ok(())
        });
    }
    if k == 0 || self_.numel() == 0 {
        return Ok(());
    }
    let input = detach_from(&detach_from(self_, values)?, indices)?;
    let k = k as usize;
    dispatch_dtype!(self_.dtype(), T => {
        for_each_row::<T>(values, indices, &input, meta.extra, |row| {
            let order = |a: &(T, i64), b: &(T, i64)| {
                let by_value = if largest { ascending(b.0, a.0) } else { ascending(a.0, b.0) };
                by_value.then(a.1.cmp(&b.1))
            };
            if k < row.len() {
                row.select_nth_unstable_by(k - 1, order);
                row.truncate(k);
            }
            row.sort_unstable_by(order);
        })
    })
}
