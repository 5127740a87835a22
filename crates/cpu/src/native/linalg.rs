//! CPU kernels: matrix products (`mm`, `addmm`, `bmm`, `baddbmm`) and `dot`.
//!
//! Every product goes through [`product`], which sees 2-d operands as one-matrix batches:
//!
//! * `f32` / `f64` call the `gemm` crate directly on the operands' memory, with their strides
//!   (transposed and sliced views need no copy) and `out` as the destination; `beta * self`
//!   is copied into `out` first and folded into the call (`gemm` computes
//!   `dst = alpha·dst + beta·lhs·rhs`, the opposite naming of BLAS);
//! * `f16` / `bf16` are converted to `f32`, multiplied, and rounded once when stored;
//! * integer types use a blocked loop with wrapping arithmetic (exact modulo 2^bits, like
//!   PyTorch's);
//! * `bool` is refused, as PyTorch does.
//!
//! Batches of small matrices are spread over threads one matrix per task; large matrices let
//! `gemm` thread the product itself.

use crate::loops::{self, typed, typed_mut};
use crate::num::{Num, dispatch_compute};
use crate::parallel::{self, SendPtr};
use switchyard_core::element::{Element, convert};
use switchyard_core::tensor::Geometry;
use switchyard_core::{
    Access, Error, Result, Scalar, ScalarType, Tensor, dispatch_dtype, torch_check, with_tensors,
};
use switchyard_ops::structured::Meta;

/// Below this many multiply-adds per matrix, a batch is split across threads by matrix.
const SMALL_PRODUCT: usize = 64 * 64 * 64;

/// Below this many multiply-adds per matrix (and from [`SMALL_PRODUCT`] up), one matrix is
/// split into bands of output rows or columns, one single-threaded `gemm` call per thread.
/// `gemm`'s own threading synchronises inside the call and, for these mid-sized products (a
/// training step's layers), costs more than a second thread saves; above this size it wins.
const MEDIUM_PRODUCT: usize = 1 << 27;

/// A band of a split product is at least this many rows or columns wide.
const MIN_BAND: usize = 32;

/// `mm.out` (PyTorch's `mm_out_cpu`).
pub fn mm_out_cpu(meta: &Meta, self_: &Tensor, mat2: &Tensor, out: &Tensor) -> Result<()> {
    let _ = meta;
    product(&Product {
        out,
        add: None,
        a: self_,
        b: mat2,
        beta: Scalar::Int(0),
        alpha: Scalar::Int(1),
        name: "addmm_impl_cpu_",
    })
}

/// `addmm.out`: `out = beta * self + alpha * (mat1 @ mat2)`, `self` expanded to the product's
/// shape (PyTorch's `addmm_out_cpu`).
pub fn addmm_out_cpu(
    meta: &Meta,
    self_: &Tensor,
    mat1: &Tensor,
    mat2: &Tensor,
    beta: Scalar,
    alpha: Scalar,
    out: &Tensor,
) -> Result<()> {
    // `self`'s expansion to the result's shape is checked by the meta function.
    let _ = meta;
    product(&Product {
        out,
        add: Some(self_),
        a: mat1,
        b: mat2,
        beta,
        alpha,
        name: "addmm_impl_cpu_",
    })
}

/// `bmm.out` (PyTorch's `bmm_out_cpu`).
pub fn bmm_out_cpu(meta: &Meta, self_: &Tensor, mat2: &Tensor, out: &Tensor) -> Result<()> {
    let _ = meta;
    product(&Product {
        out,
        add: None,
        a: self_,
        b: mat2,
        beta: Scalar::Int(0),
        alpha: Scalar::Int(1),
        name: "bmm",
    })
}

/// `baddbmm.out`: `out = beta * self + alpha * bmm(batch1, batch2)` (PyTorch's
/// `baddbmm_out_cpu`); meta checked that `self` expands to the output.
pub fn baddbmm_out_cpu(
    meta: &Meta,
    self_: &Tensor,
    batch1: &Tensor,
    batch2: &Tensor,
    beta: Scalar,
    alpha: Scalar,
    out: &Tensor,
) -> Result<()> {
    let _ = meta;
    product(&Product {
        out,
        add: Some(self_),
        a: batch1,
        b: batch2,
        beta,
        alpha,
        name: "baddbmm",
    })
}

/// `dot(self, tensor)`: the inner product of two 1-d tensors of one dtype, a 0-dim tensor.
/// Floating-point sums accumulate in `f32` (`f64` for doubles), integer sums wrap.
pub fn dot(self_: &Tensor, tensor: &Tensor) -> Result<Tensor> {
    switchyard_ops::meta::check_dot(self_, tensor)?;
    let n = self_.numel();
    let dtype = self_.dtype();
    if dtype == ScalarType::Bool {
        return Err(not_implemented("dot", dtype));
    }
    dispatch_dtype!(dtype, S => {
        dispatch_compute!(dtype, C => {
            let value = with_tensors(&[(self_, Access::Read), (tensor, Access::Read)], |data| {
                let (ga, gb) = (data.geometry(0).clone(), data.geometry(1).clone());
                let a = typed::<S>(data.bytes(0)?)?;
                let b = typed::<S>(data.bytes(1)?)?;
                let va = Strided::new(&ga, a.len())?;
                let vb = Strided::new(&gb, b.len())?;
                Ok(dot_strided::<S, C>(a, va, b, vb, usize::try_from(n).unwrap_or(0)))
            })?;
            Tensor::from_vec(vec![convert::<C, S>(value)], &[])
        })
    })
}

/// `"<name>" not implemented for '<dtype>'`, PyTorch's error for a dtype a kernel lacks.
pub(crate) fn not_implemented(name: &str, dtype: ScalarType) -> Error {
    Error::not_implemented(format!("\"{name}\" not implemented for '{dtype}'"))
}

/// A 1-d strided run inside a slice: offset and stride, bounds checked at construction.
#[derive(Clone, Copy)]
struct Strided {
    offset: usize,
    stride: usize,
}

impl Strided {
    /// The run of a 1-d geometry with `len` elements available in its slice.
    fn new(g: &Geometry, available: usize) -> Result<Strided> {
        let n = g.sizes().first().copied().unwrap_or(1);
        let stride = g.strides().first().copied().unwrap_or(1);
        let offset = usize::try_from(g.storage_offset()).map_err(|_| out_of_bounds())?;
        let stride = usize::try_from(stride).map_err(|_| out_of_bounds())?;
        if n > 0 {
            let last = (n as usize - 1)
                .checked_mul(stride)
                .and_then(|x| x.checked_add(offset))
                .ok_or_else(out_of_bounds)?;
            if last >= available {
                return Err(out_of_bounds());
            }
        }
        Ok(Strided { offset, stride })
    }
}

/// `Σ a[i]·b[i]` with eight partial sums (vectorisable, and close to BLAS's summation order).
fn dot_strided<S: Element, C: Num>(
    a: &[S::Repr],
    va: Strided,
    b: &[S::Repr],
    vb: Strided,
    n: usize,
) -> C {
    let mut acc = [C::zero(); 8];
    let load = |x: &[S::Repr], v: Strided, i: usize| -> C {
        convert::<S, C>(S::from_repr(x[v.offset + i * v.stride]))
    };
    let full = n - n % 8;
    for base in (0..full).step_by(8) {
        for (lane, slot) in acc.iter_mut().enumerate() {
            let i = base + lane;
            *slot = slot.add(load(a, va, i).mul(load(b, vb, i)));
        }
    }
    for (lane, i) in (full..n).enumerate() {
        acc[lane] = acc[lane].add(load(a, va, i).mul(load(b, vb, i)));
    }
    let pairs = [
        acc[0].add(acc[4]),
        acc[1].add(acc[5]),
        acc[2].add(acc[6]),
        acc[3].add(acc[7]),
    ];
    pairs[0].add(pairs[2]).add(pairs[1].add(pairs[3]))
}

fn out_of_bounds() -> Error {
    Error::runtime("internal error: matrix product reaches outside a tensor's storage")
}

fn overlap_error() -> Error {
    Error::runtime(
        "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.",
    )
}

/// One (batched) product `out = beta * add + alpha * (a @ b)`; `a`, `b` and `out` are all 2-d
/// or all 3-d with checked shapes; `add` broadcasts to `out` (ignored when `beta` is zero).
struct Product<'a> {
    out: &'a Tensor,
    add: Option<&'a Tensor>,
    a: &'a Tensor,
    b: &'a Tensor,
    beta: Scalar,
    alpha: Scalar,
    /// The kernel name PyTorch's dtype errors show.
    name: &'static str,
}

impl Product<'_> {
    /// `add`, unless `beta` is zero (PyTorch then ignores `self`, NaNs included).
    fn addend(&self) -> Option<&Tensor> {
        self.add.filter(|_| self.beta.to_f64() != 0.0)
    }

    fn contraction(&self) -> i64 {
        self.a.sizes().last().copied().unwrap_or(0)
    }
}

fn product(p: &Product<'_>) -> Result<()> {
    let dtype = p.out.dtype();
    if dtype == ScalarType::Bool {
        return Err(not_implemented(p.name, dtype));
    }
    if p.out.numel() == 0 {
        return Ok(());
    }
    if is_definitely_overlapping(&p.out.geometry()) {
        return Err(overlap_error());
    }
    if p.contraction() == 0 {
        return scale_addend(p);
    }
    match dtype {
        ScalarType::Float => gemm_product::<f32>(p),
        ScalarType::Double => gemm_product::<f64>(p),
        ScalarType::Half | ScalarType::BFloat16 => via_f32(p),
        ScalarType::Byte => int_product::<u8>(p),
        ScalarType::Char => int_product::<i8>(p),
        ScalarType::Short => int_product::<i16>(p),
        ScalarType::Int => int_product::<i32>(p),
        ScalarType::Long => int_product::<i64>(p),
        ScalarType::Bool => Err(not_implemented(p.name, dtype)),
    }
}

/// An empty contraction: `out = beta * add`, or zeros.
fn scale_addend(p: &Product<'_>) -> Result<()> {
    let dtype = p.out.dtype();
    dispatch_compute!(dtype, C => {
        match p.addend() {
            None => loops::map::<C, C, 0>(p.out, [], |[]| C::zero()),
            Some(add) => {
                let beta = p.beta.to::<C>()?;
                let add = readable_copy(add, p.out)?;
                loops::map::<C, C, 1>(p.out, [&add], |[x]| x.mul(beta))
            }
        }
    })
}

/// `t` itself, or a contiguous copy when it shares `out`'s storage without being `out` (so
/// writing `out` cannot change what is read).
fn readable_copy(t: &Tensor, out: &Tensor) -> Result<Tensor> {
    if t.is_alias_of(out) && !same_view(t, out) {
        contiguous_copy(t, t.dtype())
    } else {
        Ok(t.clone())
    }
}

/// A contiguous copy of `t` converted to `dtype`.
fn contiguous_copy(t: &Tensor, dtype: ScalarType) -> Result<Tensor> {
    let copy = Tensor::allocate(&t.sizes(), dtype, t.device())?;
    dispatch_dtype!(dtype, T => loops::map::<T, T, 1>(&copy, [t], |[x]| x))?;
    Ok(copy)
}

fn same_view(a: &Tensor, b: &Tensor) -> bool {
    let (ga, gb) = (a.geometry(), b.geometry());
    a.is_alias_of(b)
        && ga.storage_offset() == gb.storage_offset()
        && ga.sizes() == gb.sizes()
        && ga.strides() == gb.strides()
}

/// A dimension of size > 1 with stride 0: several elements share one memory location.
fn is_definitely_overlapping(g: &Geometry) -> bool {
    g.sizes()
        .iter()
        .zip(g.strides())
        .any(|(&s, &st)| s > 1 && st == 0)
}

/// Whether distinct elements of the view certainly occupy distinct memory (each stride, in
/// increasing order, steps over everything the smaller ones span).
fn is_non_overlapping(g: &Geometry) -> bool {
    let mut dims: Vec<(i64, i64)> = g
        .sizes()
        .iter()
        .zip(g.strides())
        .filter(|(s, _)| **s > 1)
        .map(|(s, st)| (*st, *s))
        .collect();
    dims.sort_unstable();
    let mut span = 0i64;
    for (stride, size) in dims {
        if stride <= span {
            return false;
        }
        span += stride * (size - 1);
    }
    true
}

/// `f16` / `bf16`: compute in `f32` and round once into `out`.
fn via_f32(p: &Product<'_>) -> Result<()> {
    let a = contiguous_copy(p.a, ScalarType::Float)?;
    let b = contiguous_copy(p.b, ScalarType::Float)?;
    let add = p
        .addend()
        .map(|t| contiguous_copy(t, ScalarType::Float))
        .transpose()?;
    let tmp = Tensor::allocate(&p.out.sizes(), ScalarType::Float, p.out.device())?;
    gemm_product::<f32>(&Product {
        out: &tmp,
        add: add.as_ref(),
        a: &a,
        b: &b,
        beta: p.beta,
        alpha: p.alpha,
        name: p.name,
    })?;
    loops::map::<f32, f32, 1>(p.out, [&tmp], |[x]| x)
}

/// A matrix (or batch of matrices) inside a slice: `[batch, rows, cols]` sizes and strides in
/// elements, and the offset of element 0. 2-d views are one-matrix batches.
#[derive(Clone, Copy, Debug)]
struct Mats {
    sizes: [usize; 3],
    strides: [isize; 3],
    offset: usize,
}

impl Mats {
    /// The batch view of `g`, checked to lie inside a slice of `available` elements.
    fn new(g: &Geometry, available: usize) -> Result<Mats> {
        let (sizes, strides) = (g.sizes(), g.strides());
        let (sizes, strides) = match (sizes, strides) {
            ([r, c], [rs, cs]) => ([1, *r, *c], [0, *rs, *cs]),
            ([b, r, c], [bs, rs, cs]) => ([*b, *r, *c], [*bs, *rs, *cs]),
            _ => {
                return Err(Error::runtime(
                    "internal error: matrix product of non-matrices",
                ));
            }
        };
        let mut last = g.storage_offset();
        for (s, st) in sizes.iter().zip(strides) {
            torch_check!(
                st >= 0,
                "internal error: negative stride in a matrix product"
            );
            last += (s - 1).max(0) * st;
        }
        if usize::try_from(last).map_or(true, |l| l >= available) {
            return Err(out_of_bounds());
        }
        let to_usize = |v: i64| usize::try_from(v).map_err(|_| out_of_bounds());
        let to_isize = |v: i64| isize::try_from(v).map_err(|_| out_of_bounds());
        Ok(Mats {
            sizes: [
                to_usize(sizes[0])?,
                to_usize(sizes[1])?,
                to_usize(sizes[2])?,
            ],
            strides: [
                to_isize(strides[0])?,
                to_isize(strides[1])?,
                to_isize(strides[2])?,
            ],
            offset: to_usize(g.storage_offset())?,
        })
    }

    /// Elements one matrix spans (from its first to its last element, inclusive).
    fn extent(&self) -> usize {
        (self.sizes[1] - 1) * self.strides[1].unsigned_abs()
            + (self.sizes[2] - 1) * self.strides[2].unsigned_abs()
            + 1
    }

    /// Offset of matrix `i`.
    fn matrix(&self, i: usize) -> usize {
        self.offset + i * self.strides[0].unsigned_abs()
    }
}

/// The element types the `gemm` crate multiplies (stored as themselves).
trait GemmScalar: Num + Element<Repr = Self> {}
impl GemmScalar for f32 {}
impl GemmScalar for f64 {}

/// `f32` / `f64` products straight into `out` (see the module documentation).
fn gemm_product<T: GemmScalar>(p: &Product<'_>) -> Result<()> {
    if !is_non_overlapping(&p.out.geometry()) {
        // A layout whose disjointness we cannot prove: compute apart, then copy.
        let tmp = Tensor::allocate(&p.out.sizes(), p.out.dtype(), p.out.device())?;
        let add = p.addend().map(|t| readable_copy(t, p.out)).transpose()?;
        gemm_product::<T>(&Product {
            out: &tmp,
            add: add.as_ref(),
            ..*p
        })?;
        return loops::map::<T, T, 1>(p.out, [&tmp], |[x]| x);
    }
    // Operands sharing `out`'s storage are read from copies taken before `out` is written.
    let a = if p.a.is_alias_of(p.out) {
        contiguous_copy(p.a, p.a.dtype())?
    } else {
        p.a.clone()
    };
    let b = if p.b.is_alias_of(p.out) {
        contiguous_copy(p.b, p.b.dtype())?
    } else {
        p.b.clone()
    };
    let addend = p.addend();
    if let Some(add) = addend
        && !same_view(add, p.out)
    {
        let add = readable_copy(add, p.out)?;
        loops::map::<T, T, 1>(p.out, [&add], |[x]| x)?;
    }
    let scale_dst = match addend {
        Some(_) => p.beta.to::<T>()?,
        None => T::zero(),
    };
    let alpha = p.alpha.to::<T>()?;
    with_tensors(
        &[
            (p.out, Access::Write),
            (&a, Access::Read),
            (&b, Access::Read),
        ],
        |data| {
            let geoms = [
                data.geometry(0).clone(),
                data.geometry(1).clone(),
                data.geometry(2).clone(),
            ];
            let (mut written, shared) = data.split_host_mut(&[0])?;
            let dst = typed_mut::<T>(written.remove(0))?;
            let lhs = typed::<T>(shared.get(1).copied().flatten().ok_or_else(out_of_bounds)?)?;
            let rhs = typed::<T>(shared.get(2).copied().flatten().ok_or_else(out_of_bounds)?)?;
            let d = Mats::new(&geoms[0], dst.len())?;
            let l = Mats::new(&geoms[1], lhs.len())?;
            let r = Mats::new(&geoms[2], rhs.len())?;
            let job = GemmJob {
                d,
                l,
                r,
                lhs,
                rhs,
                read_dst: addend.is_some(),
                scale_dst,
                alpha,
            };
            job.run(dst)
        },
    )
}

/// The operands of a batched `gemm` call, bounds already checked by [`Mats::new`].
struct GemmJob<'a, T> {
    d: Mats,
    l: Mats,
    r: Mats,
    lhs: &'a [T],
    rhs: &'a [T],
    read_dst: bool,
    scale_dst: T,
    alpha: T,
}

impl<T: GemmScalar> GemmJob<'_, T> {
    fn run(&self, dst: &mut [T]) -> Result<()> {
        let [batch, m, n] = self.d.sizes;
        let k = self.l.sizes[2];
        let small = m.saturating_mul(n).saturating_mul(k) < SMALL_PRODUCT;
        let batch_stride = self.d.strides[0].unsigned_abs();
        if batch > 1 && small && batch_stride >= self.d.extent() && parallel::num_threads() > 1 {
            // Matrices occupy disjoint runs of `dst`: one task per matrix.
            let region = dst.get_mut(self.d.offset..).ok_or_else(out_of_bounds)?;
            return parallel::for_each_chunk_mut(region, batch_stride, &|i, chunk| {
                if i >= batch {
                    return Ok(());
                }
                self.one(chunk, 0, i, gemm::Parallelism::None, 1)
            });
        }
        let product = m.saturating_mul(n).saturating_mul(k);
        let parallelism = if small || product < MEDIUM_PRODUCT {
            gemm::Parallelism::None
        } else {
            gemm::Parallelism::Rayon(0)
        };
        let bands = if small || product >= MEDIUM_PRODUCT {
            1
        } else {
            parallel::num_threads().min(m.max(n) / MIN_BAND).max(1)
        };
        (0..batch).try_for_each(|i| self.one(dst, self.d.matrix(i), i, parallelism, bands))
    }

    /// Matrix `i` of the batch into `dst[offset..]`.
    fn one(
        &self,
        dst: &mut [T],
        offset: usize,
        i: usize,
        parallelism: gemm::Parallelism,
        bands: usize,
    ) -> Result<()> {
        let [_, m, n] = self.d.sizes;
        let (lo, ro) = (self.l.matrix(i), self.r.matrix(i));
        // Re-check the spans against the (possibly chunked) slices before handing out pointers.
        let fits = |off: usize, mats: &Mats, len: usize| {
            off.checked_add(mats.extent()).is_some_and(|e| e <= len)
        };
        if !(fits(offset, &self.d, dst.len())
            && fits(lo, &self.l, self.lhs.len())
            && fits(ro, &self.r, self.rhs.len()))
        {
            return Err(out_of_bounds());
        }
        let operands = Operands {
            dst: SendPtr(dst[offset..].as_mut_ptr()),
            lhs: SendPtr(self.lhs[lo..].as_ptr().cast_mut()),
            rhs: SendPtr(self.rhs[ro..].as_ptr().cast_mut()),
        };
        if bands <= 1 {
            // SAFETY: `fits` checked the spans of all three matrices; `dst` is borrowed
            // mutably for the whole call (see `gemm_band`).
            unsafe { self.gemm_band(&operands, 0..m, 0..n, parallelism) };
            return Ok(());
        }
        // Bands along the longer side of the output: disjoint sets of output elements.
        let (rows, long) = if m >= n { (true, m) } else { (false, n) };
        let width = long.div_ceil(bands);
        parallel::for_each_block(bands, &|b| {
            let band = (b * width).min(long)..((b + 1) * width).min(long);
            if band.is_empty() {
                return Ok(());
            }
            let (r, c) = if rows { (band, 0..n) } else { (0..m, band) };
            // SAFETY: as above; bands are pairwise disjoint ranges of rows (or columns), so
            // with `dst`'s elements pairwise distinct no two threads write one location, and
            // nothing else touches `dst` while it is mutably borrowed by this call.
            unsafe { self.gemm_band(&operands, r, c, gemm::Parallelism::None) };
            Ok(())
        })
    }

    /// `dst[rows, cols] = scale_dst * dst[rows, cols] + alpha * lhs[rows, :] @ rhs[:, cols]`.
    ///
    /// # Safety
    /// The operands' base pointers address matrices `m × n` (`dst`), `m × k` (`lhs`) and
    /// `k × n` (`rhs`) with this job's strides, every element of which lies inside a live
    /// allocation; `rows ⊆ 0..m`, `cols ⊆ 0..n`; no other thread reads or writes
    /// `dst[rows, cols]` during the call, and `lhs` / `rhs` are not written.
    unsafe fn gemm_band(
        &self,
        operands: &Operands<T>,
        rows: std::ops::Range<usize>,
        cols: std::ops::Range<usize>,
        parallelism: gemm::Parallelism,
    ) {
        let k = self.l.sizes[2];
        let [_, drs, dcs] = self.d.strides;
        let [_, lrs, lcs] = self.l.strides;
        let [_, rrs, rcs] = self.r.strides;
        let (i0, j0) = (rows.start as isize, cols.start as isize);
        // SAFETY: (for the offsets and the call) the caller's contract: the band's first
        // elements lie inside the matrices, so the offsets stay in their allocations; every
        // element gemm touches, `dst[i*drs + j*dcs]`, `lhs[i*lrs + l*lcs]` and
        // `rhs[l*rrs + j*rcs]` for `i` in `rows`, `j` in `cols`, `l < k`, lies inside them
        // (strides are non-negative); `dst`'s band is written by this call alone.
        unsafe {
            gemm::gemm(
                rows.len(),
                cols.len(),
                k,
                operands.dst.0.offset(i0 * drs + j0 * dcs),
                dcs,
                drs,
                self.read_dst,
                operands.lhs.0.offset(i0 * lrs),
                lcs,
                lrs,
                operands.rhs.0.offset(j0 * rcs),
                rcs,
                rrs,
                self.scale_dst,
                self.alpha,
                false,
                false,
                false,
                parallelism,
            );
        }
    }
}

/// The base pointers of one matrix product (`dst`, `lhs`, `rhs`).
struct Operands<T> {
    dst: SendPtr<T>,
    lhs: SendPtr<T>,
    rhs: SendPtr<T>,
}

/// Integer products: `acc = a @ b` in wrapping arithmetic into a contiguous buffer, then
/// `out = beta * add + alpha * acc`.
fn int_product<T: Num>(p: &Product<'_>) -> Result<()>
where
    T::Repr: Sync,
{
    let sizes = p.out.sizes();
    let acc = with_tensors(&[(p.a, Access::Read), (p.b, Access::Read)], |data| {
        let (ga, gb) = (data.geometry(0).clone(), data.geometry(1).clone());
        let a = typed::<T>(data.bytes(0)?)?;
        let b = typed::<T>(data.bytes(1)?)?;
        let l = Mats::new(&ga, a.len())?;
        let r = Mats::new(&gb, b.len())?;
        let [batch, m, k] = l.sizes;
        let n = r.sizes[2];
        let mut acc = switchyard_core::alloc::try_vec(batch * m * n, T::zero())?;
        let row_product = |(row, dst): (usize, &mut [T])| {
            let (bi, i) = (row / m, row % m);
            let (lo, ro) = (l.matrix(bi), r.matrix(bi));
            let (lrs, lcs) = (l.strides[1].unsigned_abs(), l.strides[2].unsigned_abs());
            let (rrs, rcs) = (r.strides[1].unsigned_abs(), r.strides[2].unsigned_abs());
            for kk in 0..k {
                let av = T::from_repr(a[lo + i * lrs + kk * lcs]);
                let base = ro + kk * rrs;
                for (j, d) in dst.iter_mut().enumerate() {
                    *d = d.add(av.mul(T::from_repr(b[base + j * rcs])));
                }
            }
        };
        if batch * m * n * k < SMALL_PRODUCT {
            acc.chunks_mut(n).enumerate().for_each(row_product);
        } else {
            parallel::for_each_chunk_mut(&mut acc, n, &|i, row| {
                row_product((i, row));
                Ok(())
            })?;
        }
        Ok(acc)
    })?;
    let acc = Tensor::from_vec(acc, &sizes)?;
    let alpha = p.alpha.to::<T>()?;
    match p.addend() {
        None => loops::map::<T, T, 1>(p.out, [&acc], |[x]| alpha.mul(x)),
        Some(add) => {
            let beta = p.beta.to::<T>()?;
            let add = readable_copy(add, p.out)?;
            loops::map::<T, T, 2>(p.out, [&add, &acc], |[s, x]| beta.mul(s).add(alpha.mul(x)))
        }
    }
}
