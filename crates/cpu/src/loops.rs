//! The elementwise engine (PyTorch's TensorIterator loops on CPU).
//!
//! [`map`] computes `out[i] = f([in_0[i], .., in_{N-1}[i]])` over the broadcast shape of `out`:
//!
//! 1. a [`Plan`] aligns every operand to `out`'s shape (broadcast dimensions get stride 0) and
//!    coalesces dimensions that are contiguous for every operand, so most calls become one long
//!    inner run;
//! 2. inner runs whose operands are all unit-stride, of the compute type and not aliasing the
//!    output go through a direct slice loop the compiler vectorises;
//! 3. every other run is processed in blocks: operands are gathered (converting dtypes) into
//!    stack buffers, `f` runs on the buffers, results are scattered into `out`. An input that
//!    shares storage with `out` (in-place operations) is read through `out`'s own bytes before
//!    each block is written, so aliasing is handled without unsafe code;
//! 4. above [`GRAIN_SIZE`] elements a contiguous output is split across threads (`parallel`, the caller included); smaller
//!    work stays on the calling thread.

use crate::parallel;
use crate::stream::{STREAM_BYTES, Streamer};
use smallvec::SmallVec;
use switchyard_core::element::{Element, convert};
use switchyard_core::linear::with_linear_operands;
use switchyard_core::shape::same_dims;
use switchyard_core::tensor::Geometry;
use switchyard_core::{
    Access, DimVec, Error, Result, ScalarType, Tensor, dispatch_dtype, with_tensors,
};

/// Work below this many elements stays on the calling thread (PyTorch's `GRAIN_SIZE`).
pub const GRAIN_SIZE: usize = 32_768;

/// Elements per block in the gather/compute/scatter path (fits comfortably in L1).
const BLOCK: usize = 256;

/// Maximum number of operands (1 output + inputs) the engine supports.
const MAX_OPERANDS: usize = 8;

/// An iteration over `shape` (row-major, last dimension innermost) with per-operand strides
/// and offsets, in elements.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub(crate) shape: DimVec,
    pub(crate) strides: SmallVec<[DimVec; 4]>,
    pub(crate) offsets: SmallVec<[i64; 4]>,
    pub(crate) numel: usize,
}

impl Plan {
    /// Aligns `operands` to `shape` (numpy broadcasting) and coalesces dimensions.
    pub(crate) fn new(shape: &[i64], operands: &[&Geometry]) -> Result<Plan> {
        if let Some(plan) = Self::linear(shape, operands) {
            return Ok(plan);
        }
        let ndim = shape.len();
        let mut strides: SmallVec<[DimVec; 4]> = SmallVec::new();
        for g in operands {
            let (sizes, st) = (g.sizes(), g.strides());
            if sizes.len() > ndim {
                return Err(broadcast_error(sizes, shape));
            }
            let mut aligned = DimVec::from_elem(0, ndim);
            for i in 0..sizes.len() {
                let d = ndim - sizes.len() + i;
                if sizes[i] == shape[d] {
                    aligned[d] = if shape[d] == 1 { 0 } else { st[i] };
                } else if sizes[i] == 1 {
                    aligned[d] = 0;
                } else {
                    return Err(broadcast_error(sizes, shape));
                }
            }
            strides.push(aligned);
        }
        let numel = shape
            .iter()
            .try_fold(1usize, |acc, s| acc.checked_mul(usize::try_from(*s).ok()?));
        let numel = numel.ok_or_else(|| {
            Error::runtime("elementwise operation on a shape with a negative or overflowing size")
        })?;
        // Coalesce: drop size-1 dimensions, then merge an outer dimension into the next inner
        // one when every operand steps through both as one. The dimensions are taken in
        // memory order (see `memory_order`), so permuted operands coalesce too.
        let mut dims: SmallVec<[usize; 8]> = memory_order(shape, &strides)
            .into_iter()
            .filter(|d| shape[*d] != 1)
            .collect();
        let mut out_shape: DimVec = DimVec::new();
        let mut out_strides: SmallVec<[DimVec; 4]> =
            strides.iter().map(|_| DimVec::new()).collect();
        while let Some(d) = dims.pop() {
            let mut size = shape[d];
            let mut st: SmallVec<[i64; 4]> = strides.iter().map(|s| s[d]).collect();
            while let Some(&outer) = dims.last() {
                let mergeable = strides
                    .iter()
                    .zip(&st)
                    .all(|(s, inner)| s[outer] == inner * size);
                if !mergeable {
                    break;
                }
                size *= shape[outer];
                dims.pop();
            }
            out_shape.insert(0, size);
            for (k, s) in st.drain(..).enumerate() {
                out_strides[k].insert(0, s);
            }
        }
        Ok(Plan {
            shape: out_shape,
            strides: out_strides,
            offsets: operands.iter().map(|g| g.storage_offset()).collect(),
            numel,
        })
    }

    /// The common case without the general alignment: every operand contiguous with exactly
    /// `shape`, which coalesces to one run (`[]` for a single element, else `[numel]`). Small
    /// calls are dominated by this bookkeeping, so it is worth the check.
    fn linear(shape: &[i64], operands: &[&Geometry]) -> Option<Plan> {
        if !Self::all_contiguous_as(shape, operands) {
            return None;
        }
        let numel = shape
            .iter()
            .try_fold(1usize, |acc, s| acc.checked_mul(usize::try_from(*s).ok()?))?;
        let (dims, unit): (DimVec, DimVec) = if numel == 1 {
            (DimVec::new(), DimVec::new())
        } else {
            (DimVec::from_elem(numel as i64, 1), DimVec::from_elem(1, 1))
        };
        Some(Plan {
            shape: dims,
            strides: operands.iter().map(|_| unit.clone()).collect(),
            offsets: operands.iter().map(|g| g.storage_offset()).collect(),
            numel,
        })
    }

    /// Whether every operand is contiguous with exactly `shape` (its elements are one run in
    /// storage order, starting at its offset).
    fn all_contiguous_as(shape: &[i64], operands: &[&Geometry]) -> bool {
        operands
            .iter()
            .all(|g| g.is_contiguous() && same_dims(g.sizes(), shape))
    }

    /// Calls `f(offsets, len)` for each inner run of the linear index range `[start, end)`;
    /// `offsets[k]` is operand `k`'s element offset at the run's start.
    pub(crate) fn for_each_run(&self, start: usize, end: usize, mut f: impl FnMut(&[i64], usize)) {
        if start >= end {
            return;
        }
        let nops = self.offsets.len();
        let ndim = self.shape.len();
        if ndim == 0 {
            f(&self.offsets, 1);
            return;
        }
        let inner = self.shape[ndim - 1] as usize;
        // Multi-index of `start`.
        let mut index = DimVec::from_elem(0, ndim);
        let mut rem = start;
        for d in (0..ndim).rev() {
            let s = self.shape[d] as usize;
            index[d] = (rem % s) as i64;
            rem /= s;
        }
        let mut offsets: SmallVec<[i64; MAX_OPERANDS]> = (0..nops)
            .map(|k| {
                self.offsets[k]
                    + (0..ndim)
                        .map(|d| index[d] * self.strides[k][d])
                        .sum::<i64>()
            })
            .collect();
        let mut pos = start;
        while pos < end {
            let within = index[ndim - 1] as usize;
            let len = (inner - within).min(end - pos);
            f(&offsets, len);
            pos += len;
            if pos >= end {
                break;
            }
            // Advance to the start of the next inner run.
            for (k, off) in offsets.iter_mut().enumerate() {
                *off += self.strides[k][ndim - 1] * len as i64;
            }
            index[ndim - 1] += len as i64;
            let mut d = ndim - 1;
            while index[d] == self.shape[d] && d > 0 {
                for (k, off) in offsets.iter_mut().enumerate() {
                    *off -= self.strides[k][d] * self.shape[d];
                    *off += self.strides[k][d - 1];
                }
                index[d] = 0;
                index[d - 1] += 1;
                d -= 1;
            }
        }
    }

    /// Inner-dimension stride of operand `k` (0 for a 0-dim iteration).
    pub(crate) fn inner_stride(&self, k: usize) -> i64 {
        self.strides[k].last().copied().unwrap_or(0)
    }

    /// Whether operand `k` is visited in linear storage order starting at its offset.
    pub(crate) fn is_linear(&self, k: usize) -> bool {
        let mut expected = 1i64;
        for d in (0..self.shape.len()).rev() {
            if self.strides[k][d] != expected {
                return false;
            }
            expected *= self.shape[d];
        }
        true
    }
}

/// The dimensions of `shape`, outermost first, in the order the operands' `strides` lay them out
/// in memory: TensorIterator's `reorder_dimensions` (an insertion sort from the innermost
/// dimension out, where the first operand, the output, decides, then the inputs; a zero stride
/// has no say; equal strides put the smaller size inside). Row-major unless the output's
/// elements are provably distinct (see `distinct_elements`): when several writes land on one
/// element, the last in row-major order must stay the last.
fn memory_order(shape: &[i64], strides: &[DimVec]) -> SmallVec<[usize; 8]> {
    let ndim = shape.len();
    // perm[0] is the innermost dimension.
    let mut perm: SmallVec<[usize; 8]> = (0..ndim).rev().collect();
    if strides
        .first()
        .is_some_and(|out| distinct_elements(shape, out))
    {
        let should_swap = |d0: usize, d1: usize| -> std::cmp::Ordering {
            use std::cmp::Ordering::*;
            for st in strides {
                let (s0, s1) = (st[d0], st[d1]);
                if s0 == 0 || s1 == 0 {
                    continue;
                }
                match s0.cmp(&s1) {
                    Equal if shape[d0] > shape[d1] => return Greater,
                    Equal => {}
                    other => return other,
                }
            }
            Equal
        };
        for i in 1..ndim {
            let mut d1 = i;
            for d0 in (0..i).rev() {
                match should_swap(perm[d0], perm[d1]) {
                    std::cmp::Ordering::Greater => {
                        perm.swap(d0, d1);
                        d1 = d0;
                    }
                    std::cmp::Ordering::Less => break,
                    std::cmp::Ordering::Equal => {}
                }
            }
        }
    }
    perm.reverse();
    perm
}

/// Whether every element of a view `(shape, strides)` has its own memory: sorted by stride,
/// each dimension's stride must step over everything the inner dimensions reach (sufficient,
/// and true of every dense or sliced layout). A zero stride over more than one element fails.
fn distinct_elements(shape: &[i64], strides: &[i64]) -> bool {
    let mut dims: SmallVec<[(i64, i64); 8]> = shape
        .iter()
        .zip(strides)
        .filter(|(size, _)| **size > 1)
        .map(|(size, stride)| (stride.unsigned_abs() as i64, *size))
        .collect();
    dims.sort_unstable();
    let mut reach = 0i64;
    for (stride, size) in dims {
        if stride <= reach {
            return false;
        }
        reach = reach.saturating_add(stride.saturating_mul(size - 1));
    }
    true
}

fn broadcast_error(sizes: &[i64], shape: &[i64]) -> Error {
    Error::runtime(format!(
        "operand of shape {} is not broadcastable to the output shape {}",
        switchyard_core::shape::fmt_dims(sizes),
        switchyard_core::shape::fmt_dims(shape)
    ))
}

/// Views host bytes as elements of `T` (storage buffers are 64-byte aligned and element
/// offsets are multiples of the element size, so this only fails on a corrupted storage).
pub(crate) fn typed<T: Element>(bytes: &[u8]) -> Result<&[T::Repr]> {
    let size = std::mem::size_of::<T::Repr>();
    bytemuck::try_cast_slice(&bytes[..bytes.len() - bytes.len() % size])
        .map_err(|e| Error::runtime(format!("internal error: misaligned tensor data ({e:?})")))
}

/// Mutable counterpart of [`typed`].
pub(crate) fn typed_mut<T: Element>(bytes: &mut [u8]) -> Result<&mut [T::Repr]> {
    let size = std::mem::size_of::<T::Repr>();
    let len = bytes.len() - bytes.len() % size;
    bytemuck::try_cast_slice_mut(&mut bytes[..len])
        .map_err(|e| Error::runtime(format!("internal error: misaligned tensor data ({e:?})")))
}

/// Reads `n` elements of dtype `dtype` from `bytes` at `offset` with `stride`, converting to
/// `C`. Out-of-range reads are an error (geometries were checked against storage sizes when
/// the data was locked, so this never happens for valid tensors).
fn gather<C: Element>(
    bytes: &[u8],
    dtype: ScalarType,
    offset: i64,
    stride: i64,
    dst: &mut [C],
) -> Result<()> {
    dispatch_dtype!(dtype, S => {
        let src = typed::<S>(bytes)?;
        let check = |i: i64| -> Result<usize> {
            usize::try_from(i).ok().filter(|i| *i < src.len()).ok_or_else(out_of_range)
        };
        if dst.is_empty() {
            return Ok(());
        }
        check(offset)?;
        check(offset + stride * (dst.len() as i64 - 1))?;
        if stride == 1 {
            let base = offset as usize;
            let n = dst.len();
            for (d, s) in dst.iter_mut().zip(&src[base..base + n]) {
                *d = convert::<S, C>(S::from_repr(*s));
            }
        } else {
            for (i, d) in dst.iter_mut().enumerate() {
                *d = convert::<S, C>(S::from_repr(src[(offset + stride * i as i64) as usize]));
            }
        }
        Ok(())
    })
}

/// Writes `src` (converted from `R`) to `bytes` of dtype `dtype` at `offset` with `stride`.
fn scatter<R: Element>(
    bytes: &mut [u8],
    dtype: ScalarType,
    offset: i64,
    stride: i64,
    src: &[R],
) -> Result<()> {
    dispatch_dtype!(dtype, D => {
        let dst = typed_mut::<D>(bytes)?;
        if src.is_empty() {
            return Ok(());
        }
        let last = offset + stride * (src.len() as i64 - 1);
        if offset < 0 || last < 0 || offset as usize >= dst.len() || last as usize >= dst.len() {
            return Err(out_of_range());
        }
        if stride == 1 {
            let base = offset as usize;
            for (d, s) in dst[base..base + src.len()].iter_mut().zip(src) {
                *d = D::to_repr(convert::<R, D>(*s));
            }
        } else {
            for (i, s) in src.iter().enumerate() {
                dst[(offset + stride * i as i64) as usize] = D::to_repr(convert::<R, D>(*s));
            }
        }
        Ok(())
    })
}

fn out_of_range() -> Error {
    Error::runtime("internal error: elementwise access outside the tensor's storage")
}

/// One operand of a computation: its dtype and, for inputs, its bytes (`None` when it shares
/// the output's storage and must be read through the output's bytes).
struct Operands<'a> {
    dtypes: &'a [ScalarType],
    inputs: &'a [Option<&'a [u8]>],
    /// Whether unit-stride runs write the output with streaming stores (a linear output of
    /// at least [`STREAM_BYTES`]: see `stream.rs`).
    stream: bool,
}

/// `out = f(inputs)` elementwise over `out`'s shape; inputs are converted to `C`, results from
/// `R` to `out`'s dtype. See the module documentation.
pub(crate) fn map<C: Element, R: Element, const N: usize>(
    out: &Tensor,
    inputs: [&Tensor; N],
    f: impl Fn([C; N]) -> R + Sync,
) -> Result<()> {
    if N + 1 > MAX_OPERANDS {
        return Err(Error::runtime(format!(
            "internal error: an elementwise kernel over {N} inputs (at most {} are supported)",
            MAX_OPERANDS - 1
        )));
    }
    if let Some(done) = map_small_linear::<C, R, N>(out, inputs, &f) {
        return done;
    }
    let mut requests: SmallVec<[(&Tensor, Access); MAX_OPERANDS]> = SmallVec::new();
    requests.push((out, Access::Write));
    requests.extend(inputs.iter().map(|t| (*t, Access::Read)));
    with_tensors(&requests, |data| {
        // A fixed array, not a collected small vector (moved out of `collect`, it stalled on
        // store forwarding); N + 1 <= MAX_OPERANDS was checked above.
        let mut all_dtypes = [ScalarType::Float; MAX_OPERANDS];
        for (i, d) in all_dtypes.iter_mut().enumerate().take(N + 1) {
            *d = data.dtype(i);
        }
        let dtypes = &all_dtypes[..N + 1];
        let plan = {
            let geoms: SmallVec<[&Geometry; MAX_OPERANDS]> =
                (0..=N).map(|i| data.geometry(i)).collect();
            Plan::new(geoms[0].sizes(), &geoms)?
        };
        if plan.numel == 0 {
            return Ok(());
        }
        let mut inputs = SmallVec::new();
        let out_bytes = data.split_first_host_mut(&mut inputs)?;
        let stream = plan.is_linear(0) && plan.numel * dtypes[0].element_size() >= STREAM_BYTES;
        let ops = Operands {
            dtypes,
            inputs: &inputs,
            stream,
        };
        let aliased = ops.inputs.iter().any(Option::is_none);
        let out_dtype = ops.dtypes[0];
        if plan.numel >= GRAIN_SIZE && !aliased && plan.is_linear(0) && parallel::num_threads() > 1
        {
            let size = out_dtype.element_size();
            let start = usize::try_from(plan.offsets[0]).map_err(|_| out_of_range())? * size;
            let region = out_bytes
                .get_mut(start..start + plan.numel * size)
                .ok_or_else(out_of_range)?;
            let chunk = (plan.numel / (parallel::num_threads() * 4)).max(GRAIN_SIZE / 4);
            return for_each_chunk_parallel(region, chunk * size, &|i, part| {
                let first = i * chunk;
                let count = part.len() / size;
                // Within the chunk, the output's offsets are relative to the chunk start.
                let shift = plan.offsets[0] + first as i64;
                run_range::<C, R, N>(&plan, first, first + count, part, shift, &ops, &f)
            });
        }
        run_range::<C, R, N>(&plan, 0, plan.numel, out_bytes, 0, &ops, &f)
    })
}

/// The small-call fast path of [`map`]: below [`GRAIN_SIZE`] elements, with every operand
/// contiguous with the output's shape and of the compute types, and each input either apart
/// from the output or the output itself (in-place calls), the elements are one run each and
/// go straight to the loop ([`switchyard_core::linear`] takes the data without the general
/// machinery). `None` when the call does not qualify.
#[inline]
fn map_small_linear<C: Element, R: Element, const N: usize>(
    out: &Tensor,
    inputs: [&Tensor; N],
    f: &impl Fn([C; N]) -> R,
) -> Option<Result<()>> {
    if out.dtype() != R::DTYPE || inputs.iter().any(|t| t.dtype() != C::DTYPE) {
        return None;
    }
    // An input that is the output itself is read through the output's bytes, which holds
    // values of the compute type only if the two types agree.
    if C::DTYPE != R::DTYPE && inputs.iter().any(|t| t.is_alias_of(out)) {
        return None;
    }
    with_linear_operands(out, inputs, GRAIN_SIZE - 1, |ops| {
        let dst = typed_mut::<R>(ops.out)?;
        let mut srcs: [Option<&[C::Repr]>; N] = [None; N];
        for (src, bytes) in srcs.iter_mut().zip(ops.inputs) {
            if let Some(bytes) = bytes {
                *src = Some(typed::<C>(bytes)?);
            }
        }
        // Every run holds `numel` elements; checked once here so that the loops below index
        // within bounds (and vectorise).
        let n = dst.len();
        if srcs.iter().flatten().any(|s| s.len() != n) {
            return Err(out_of_range());
        }
        if srcs.iter().all(Option::is_some) {
            let srcs: [&[C::Repr]; N] = std::array::from_fn(|k| srcs[k].unwrap_or_default());
            for (i, d) in dst.iter_mut().enumerate() {
                let args: [C; N] = std::array::from_fn(|k| C::from_repr(srcs[k][i]));
                *d = R::to_repr(f(args));
            }
        } else {
            for (i, d) in dst.iter_mut().enumerate() {
                // The output's type is the compute type here (checked above), so this
                // conversion is the identity.
                let current = convert::<R, C>(R::from_repr(*d));
                let args: [C; N] =
                    std::array::from_fn(|k| srcs[k].map_or(current, |s| C::from_repr(s[i])));
                *d = R::to_repr(f(args));
            }
        }
        Ok(())
    })
}

/// Runs `body(index, chunk)` over `chunk_bytes`-sized chunks of `region` in parallel.
/// Deliberately not generic: every elementwise kernel shares this one instantiation of the
/// parallel machinery instead of compiling its own (a large part of this crate's build time).
fn for_each_chunk_parallel(
    region: &mut [u8],
    chunk_bytes: usize,
    body: &(dyn Fn(usize, &mut [u8]) -> Result<()> + Sync),
) -> Result<()> {
    parallel::for_each_chunk_mut(region, chunk_bytes, body)
}

/// Runs linear indices `[start, end)`; `out_bytes` starts at element `out_base` of the output's
/// storage (0 for the whole storage).
#[allow(clippy::too_many_arguments)]
fn run_range<C: Element, R: Element, const N: usize>(
    plan: &Plan,
    start: usize,
    end: usize,
    out_bytes: &mut [u8],
    out_base: i64,
    ops: &Operands<'_>,
    f: &(impl Fn([C; N]) -> R + Sync),
) -> Result<()> {
    let mut result: Result<()> = Ok(());
    let out_dtype = ops.dtypes[0];
    let strides: SmallVec<[i64; MAX_OPERANDS]> = (0..=N).map(|k| plan.inner_stride(k)).collect();
    let direct = out_dtype == R::DTYPE
        && strides[0] == 1
        && (0..N).all(|k| {
            ops.dtypes[k + 1] == C::DTYPE && strides[k + 1] == 1 && ops.inputs[k].is_some()
        });
    plan.for_each_run(start, end, |offsets, len| {
        if result.is_err() {
            return;
        }
        let out_offset = offsets[0] - out_base;
        result = if direct {
            run_direct::<C, R, N>(out_bytes, out_offset, offsets, len, ops, f)
        } else {
            run_blocks::<C, R, N>(out_bytes, out_offset, offsets, &strides, len, ops, f)
        };
    });
    result
}

/// Unit-stride operands of the compute types: a plain slice loop.
fn run_direct<C: Element, R: Element, const N: usize>(
    out_bytes: &mut [u8],
    out_offset: i64,
    offsets: &[i64],
    len: usize,
    ops: &Operands<'_>,
    f: &impl Fn([C; N]) -> R,
) -> Result<()> {
    let mut srcs: [&[C::Repr]; N] = [&[]; N];
    for k in 0..N {
        let bytes = ops.inputs[k].ok_or_else(out_of_range)?;
        let all = typed::<C>(bytes)?;
        let o = usize::try_from(offsets[k + 1]).map_err(|_| out_of_range())?;
        srcs[k] = all.get(o..o + len).ok_or_else(out_of_range)?;
    }
    let o = usize::try_from(out_offset).map_err(|_| out_of_range())?;
    if ops.stream {
        return run_direct_streamed::<C, R, N>(out_bytes, o, len, &srcs, f);
    }
    let dst = typed_mut::<R>(out_bytes)?;
    let dst = dst.get_mut(o..o + len).ok_or_else(out_of_range)?;
    for (i, d) in dst.iter_mut().enumerate() {
        let args: [C; N] = std::array::from_fn(|k| C::from_repr(srcs[k][i]));
        *d = R::to_repr(f(args));
    }
    Ok(())
}

/// A block of bytes aligned to a cache line (the staging buffer of streamed runs).
#[repr(C, align(64))]
struct LineAligned([u8; STREAM_STAGE_BYTES]);

/// Bytes computed at a time before being streamed out: well inside L1.
const STREAM_STAGE_BYTES: usize = 4096;

/// [`run_direct`] for large outputs: each block of results is computed into a cache-resident
/// buffer and copied to the output with streaming stores, so the output's lines are not read
/// from memory before being overwritten. The `Streamer` fences when this returns, before the
/// task that ran it reports completion.
fn run_direct_streamed<C: Element, R: Element, const N: usize>(
    out_bytes: &mut [u8],
    out_start: usize,
    len: usize,
    srcs: &[&[C::Repr]; N],
    f: &impl Fn([C; N]) -> R,
) -> Result<()> {
    let size = std::mem::size_of::<R::Repr>();
    let per_block = STREAM_STAGE_BYTES / size;
    let dst = out_bytes
        .get_mut(out_start * size..(out_start + len) * size)
        .ok_or_else(out_of_range)?;
    let mut stage = LineAligned([0; STREAM_STAGE_BYTES]);
    let mut streamer = Streamer::new();
    let mut done = 0;
    while done < len {
        let n = per_block.min(len - done);
        let block = typed_mut::<R>(&mut stage.0[..n * size])?;
        let mut parts: [&[C::Repr]; N] = [&[]; N];
        for (part, src) in parts.iter_mut().zip(srcs) {
            *part = src.get(done..done + n).ok_or_else(out_of_range)?;
        }
        for (i, d) in block.iter_mut().enumerate() {
            let args: [C; N] = std::array::from_fn(|k| C::from_repr(parts[k][i]));
            *d = R::to_repr(f(args));
        }
        let target = &mut dst[done * size..(done + n) * size];
        if !streamer.copy(&stage.0[..n * size], target) {
            target.copy_from_slice(&stage.0[..n * size]);
        }
        done += n;
    }
    Ok(())
}

/// General operands: gather into buffers, compute, scatter.
#[allow(clippy::too_many_arguments)]
fn run_blocks<C: Element, R: Element, const N: usize>(
    out_bytes: &mut [u8],
    out_offset: i64,
    offsets: &[i64],
    strides: &[i64],
    len: usize,
    ops: &Operands<'_>,
    f: &impl Fn([C; N]) -> R,
) -> Result<()> {
    let zero_c = C::from_i64_lossy(0);
    let zero_r = R::from_i64_lossy(0);
    let mut bufs = [[zero_c; BLOCK]; N];
    let mut results = [zero_r; BLOCK];
    let mut done = 0usize;
    while done < len {
        let n = BLOCK.min(len - done);
        for k in 0..N {
            let off = offsets[k + 1] + strides[k + 1] * done as i64;
            // An input sharing the output's storage is read through the output's bytes, before
            // this block is written.
            let bytes: &[u8] = match ops.inputs[k] {
                Some(b) => b,
                None => &*out_bytes,
            };
            if strides[k + 1] == 0 {
                gather::<C>(bytes, ops.dtypes[k + 1], off, 0, &mut bufs[k][..1])?;
                let v = bufs[k][0];
                bufs[k][..n].fill(v);
            } else {
                gather::<C>(
                    bytes,
                    ops.dtypes[k + 1],
                    off,
                    strides[k + 1],
                    &mut bufs[k][..n],
                )?;
            }
        }
        for i in 0..n {
            results[i] = f(std::array::from_fn(|k| bufs[k][i]));
        }
        let off = out_offset + strides[0] * done as i64;
        scatter::<R>(out_bytes, ops.dtypes[0], off, strides[0], &results[..n])?;
        done += n;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_core::Device;

    #[test]
    fn plan_coalesces_contiguous_and_broadcasts() {
        let a = Tensor::allocate(&[2, 3, 4], ScalarType::Float, Device::CPU).unwrap();
        let b = Tensor::allocate(&[3, 1], ScalarType::Float, Device::CPU).unwrap();
        let p = Plan::new(&[2, 3, 4], &[&a.geometry(), &a.geometry()]).unwrap();
        assert_eq!(p.shape.as_slice(), &[24]);
        let p = Plan::new(&[2, 3, 4], &[&a.geometry(), &b.geometry()]).unwrap();
        assert_eq!(p.shape.as_slice(), &[2, 3, 4]);
        assert_eq!(p.strides[1].as_slice(), &[0, 1, 0]);
        assert!(Plan::new(&[2, 3], &[&a.geometry()]).is_err());
    }

    #[test]
    fn runs_cover_ranges_in_iteration_order() {
        // Two columns of each row of a [3, 4] tensor: rows cannot merge, each run is 2 long.
        let t = Tensor::allocate(&[3, 4], ScalarType::Float, Device::CPU).unwrap();
        let cols = t.as_strided_view(&[3, 2], &[4, 1], 1).unwrap();
        let p = Plan::new(&[3, 2], &[&cols.geometry()]).unwrap();
        let mut seen = Vec::new();
        p.for_each_run(1, 6, |offs, len| {
            for i in 0..len as i64 {
                seen.push(offs[0] + i * p.inner_stride(0));
            }
        });
        // Logical elements 1..6 of the view (its memory order is row-major).
        let expected: Vec<i64> = cols.geometry().offsets().skip(1).take(5).collect();
        assert_eq!(seen, expected);
    }

    #[test]
    fn permuted_operands_are_walked_in_memory_order() {
        // A transposed output and input: one run in storage order, as TensorIterator walks.
        let t = Tensor::allocate(&[4, 3], ScalarType::Float, Device::CPU).unwrap();
        let tt = t.as_strided_view(&[3, 4], &[1, 3], 0).unwrap();
        let p = Plan::new(&[3, 4], &[&tt.geometry(), &tt.geometry()]).unwrap();
        assert_eq!(p.shape.as_slice(), &[12]);
        assert!(p.is_linear(0));
        // The output decides: a contiguous output with a transposed input stays row-major.
        let c = Tensor::allocate(&[3, 4], ScalarType::Float, Device::CPU).unwrap();
        let p = Plan::new(&[3, 4], &[&c.geometry(), &tt.geometry()]).unwrap();
        assert_eq!(p.strides[0].as_slice(), &[4, 1]);
        assert_eq!(p.strides[1].as_slice(), &[1, 3]);
        // An output repeating elements keeps the row-major order: a zero stride, or strides
        // that step onto elements already reached.
        let e = c.as_strided_view(&[3, 4], &[0, 1], 0).unwrap();
        let p = Plan::new(&[3, 4], &[&e.geometry(), &tt.geometry()]).unwrap();
        assert_eq!(p.strides[0].as_slice(), &[0, 1]);
        let o = c.as_strided_view(&[3, 4], &[1, 2], 0).unwrap();
        let p = Plan::new(&[3, 4], &[&o.geometry(), &tt.geometry()]).unwrap();
        assert_eq!(p.strides[0].as_slice(), &[1, 2]);
        assert!(!distinct_elements(&[3, 4], &[1, 2]));
        assert!(distinct_elements(&[3, 4], &[1, 3]) && distinct_elements(&[3, 2], &[4, 1]));
    }

    #[test]
    fn map_handles_conversion_broadcast_and_aliasing() {
        let a = Tensor::from_vec(vec![1i32, 2, 3, 4, 5, 6], &[2, 3]).unwrap();
        let b = Tensor::from_vec(vec![0.5f64, 1.5, 2.5], &[3]).unwrap();
        let out = Tensor::allocate(&[2, 3], ScalarType::Float, Device::CPU).unwrap();
        map::<f64, f64, 2>(&out, [&a, &b], |[x, y]| x * 10.0 + y).unwrap();
        assert_eq!(
            out.to_vec::<f32>().unwrap(),
            vec![10.5, 21.5, 32.5, 40.5, 51.5, 62.5]
        );
        // In place through a transposed alias: out[i][j] = out[j][i] + 1 must read the old value.
        let sq = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
        let t = sq.as_strided_view(&[2, 2], &[1, 2], 0).unwrap();
        map::<f32, f32, 1>(&sq, [&sq], |[x]| x + 1.0).unwrap();
        assert_eq!(sq.to_vec::<f32>().unwrap(), vec![2.0, 3.0, 4.0, 5.0]);
        let out2 = Tensor::allocate(&[2, 2], ScalarType::Float, Device::CPU).unwrap();
        map::<f32, f32, 1>(&out2, [&t], |[x]| x).unwrap();
        assert_eq!(out2.to_vec::<f32>().unwrap(), vec![2.0, 4.0, 3.0, 5.0]);
    }

    #[test]
    fn small_contiguous_maps_honour_storage_offsets_and_shared_storage() {
        // Contiguous views at offsets into one storage: the small linear path must read and
        // write at each operand's own offset.
        let base = Tensor::from_vec((0..12).map(|i| i as f32).collect(), &[12]).unwrap();
        let x = base.as_strided_view(&[2, 2], &[2, 1], 2).unwrap(); // 2, 3, 4, 5
        let y = Tensor::from_vec(vec![0.0f32, 10.0, 20.0, 30.0, 40.0], &[5]).unwrap();
        let y = y.as_strided_view(&[2, 2], &[2, 1], 1).unwrap(); // 10, 20, 30, 40
        let out = Tensor::from_vec(vec![-1.0f32; 7], &[7]).unwrap();
        let out_view = out.as_strided_view(&[2, 2], &[2, 1], 3).unwrap();
        map::<f32, f32, 2>(&out_view, [&x, &y], |[a, b]| a + b).unwrap();
        assert_eq!(
            out.to_vec::<f32>().unwrap(),
            vec![-1.0, -1.0, -1.0, 12.0, 23.0, 34.0, 45.0]
        );
        // Output and input in one storage, overlapping with a shift: out[i] = in[i] * 10 where
        // out starts one element after in. The small path must not take this (it reads inputs
        // in place while writing); the general engine reads each block before writing it.
        let shared = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0], &[5]).unwrap();
        let src = shared.as_strided_view(&[4], &[1], 0).unwrap();
        let dst = shared.as_strided_view(&[4], &[1], 1).unwrap();
        map::<f32, f32, 1>(&dst, [&src], |[v]| v * 10.0).unwrap();
        assert_eq!(
            shared.to_vec::<f32>().unwrap(),
            vec![1.0, 10.0, 20.0, 30.0, 40.0]
        );
    }

    #[test]
    fn large_maps_split_across_threads_give_the_same_result() {
        let n = 3 * GRAIN_SIZE + 17;
        let a = Tensor::from_vec((0..n).map(|i| i as f32).collect(), &[n as i64]).unwrap();
        let out = Tensor::allocate(&[n as i64], ScalarType::Float, Device::CPU).unwrap();
        map::<f32, f32, 1>(&out, [&a], |[x]| 2.0 * x).unwrap();
        let v = out.to_vec::<f32>().unwrap();
        assert!(v.iter().enumerate().all(|(i, x)| *x == 2.0 * i as f32));
    }
}
