//! CPU kernels: reduce operators (sum, mean, prod, max / min and their index forms, amax /
//! amin, argmax / argmin, all / any, var / std / var_mean, linalg_vector_norm, cumsum /
//! cumprod, softmax / log_softmax).
//!
//! Every reduction runs on the engine in `reduce_loops`: the input is read as its own dtype
//! where that is the compute type, converted on the fly otherwise (`Half` / `BFloat16` inputs
//! are widened to `Float` first, as PyTorch's kernels compute them in `float`), and the
//! accumulators are finished and written to the output, converted to its dtype.

use crate::loops;
use crate::reduce_loops::{
    ArgBest, Elem, Extreme, Moments, Prod, RNum, SoftFloat, Sum, SumKind, Welford, contiguous_as,
    contiguous_with, reduce, scan, softmax, store,
};
use std::mem::MaybeUninit;
use switchyard_core::Element;
use switchyard_core::{
    Access, Error, Result, Scalar, ScalarType, Tensor, dispatch_dtype, torch_check, with_tensors,
};
use switchyard_ops::meta::index_support::{assert_no_internal_overlap, assert_no_partial_overlap};
use switchyard_ops::meta::{
    DimInfo, ReduceInfo, allocate_var_mean, check_nonempty_all_reduce, check_result_cast,
    check_unary_extreme_out, dtype_from_self, prepare_std_var_out,
};
use switchyard_ops::structured::{Meta, create_out, resize_output};

/// Binds `$S` to the element type of `$dtype` and `$C` to the compute type reductions of
/// that dtype keep values in (the type itself; `u8` for `Bool`). Half types must have been
/// widened.
macro_rules! dispatch_same {
    ($dtype:expr, $S:ident, $C:ident => $body:expr) => {
        match $dtype {
            ScalarType::Byte => {
                type $S = u8;
                type $C = u8;
                $body
            }
            ScalarType::Char => {
                type $S = i8;
                type $C = i8;
                $body
            }
            ScalarType::Short => {
                type $S = i16;
                type $C = i16;
                $body
            }
            ScalarType::Int => {
                type $S = i32;
                type $C = i32;
                $body
            }
            ScalarType::Long => {
                type $S = i64;
                type $C = i64;
                $body
            }
            ScalarType::Float => {
                type $S = f32;
                type $C = f32;
                $body
            }
            ScalarType::Double => {
                type $S = f64;
                type $C = f64;
                $body
            }
            ScalarType::Bool => {
                type $S = bool;
                type $C = u8;
                $body
            }
            ScalarType::Half | ScalarType::BFloat16 => Err(unwidened($dtype)),
        }
    };
}

/// Binds `$C` to the accumulation type of sums and products producing `$dtype`: `i64` for
/// integers, `f32` for `Float` and the half types, `f64` for `Double`.
macro_rules! dispatch_acc {
    ($dtype:expr, $C:ident => $body:expr) => {
        match $dtype {
            ScalarType::Double => {
                type $C = f64;
                $body
            }
            ScalarType::Float | ScalarType::Half | ScalarType::BFloat16 => {
                type $C = f32;
                $body
            }
            _ => {
                type $C = i64;
                $body
            }
        }
    };
}

/// The dtype of [`dispatch_acc!`]'s accumulation type.
fn acc_dtype(dtype: ScalarType) -> ScalarType {
    match dtype {
        ScalarType::Double => ScalarType::Double,
        ScalarType::Float | ScalarType::Half | ScalarType::BFloat16 => ScalarType::Float,
        _ => ScalarType::Long,
    }
}

fn unwidened(dtype: ScalarType) -> Error {
    Error::runtime(format!(
        "internal error: {dtype} input reached a reduction loop without widening"
    ))
}

/// `t`, with `Half` / `BFloat16` widened to `Float` (exact).
fn widen(t: &Tensor) -> Result<Tensor> {
    if t.dtype().is_reduced_float() {
        contiguous_as(t, ScalarType::Float)
    } else {
        Ok(t.clone())
    }
}

/// PyTorch's "\"name\" not implemented for 'Long'".
fn not_implemented(name: &str, dtype: ScalarType) -> Error {
    Error::not_implemented(format!("\"{name}\" not implemented for '{dtype}'"))
}

/// Every dimension of `t` as a mask.
fn all_dims(t: &Tensor) -> Result<u64> {
    switchyard_ops::meta::make_dim_mask(None, t.dim(), false)
}

/// Product of `sizes` over the dimensions in `mask`.
fn reduced_numel(sizes: &[i64], mask: u64) -> i64 {
    ReduceInfo { mask }.reduced_numel(sizes)
}

// ---------------------------------------------------------------------------------------------
// sum, mean, prod
// ---------------------------------------------------------------------------------------------

/// What a sum-like kernel computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SumLike {
    Sum,
    Mean,
    Prod,
}

/// `self.to(out_dtype)` (rounding through the output dtype as PyTorch does), held in the
/// accumulation type so the loop reads it in place.
fn prepare_for(self_: &Tensor, out_dtype: ScalarType) -> Result<Tensor> {
    let x = contiguous_with_dtype(self_, out_dtype)?;
    contiguous_with_dtype(&x, acc_dtype(out_dtype))
}

/// Sum, mean or product of `self_` over `mask` into `out` (of the result dtype).
fn sum_like(self_: &Tensor, mask: u64, out: &Tensor, kind: SumLike) -> Result<()> {
    let t = out.dtype();
    if t == ScalarType::Bool {
        // Bool arithmetic: a sum is "any", a product is "all".
        return all_any(self_, mask, out, kind == SumLike::Prod);
    }
    if kind == SumLike::Mean && !t.is_floating_point() {
        // PyTorch computes the sum into `out`, then fails dividing it in place.
        return check_result_cast(ScalarType::Float, t);
    }
    let x = prepare_for(self_, t)?;
    let n = reduced_numel(&self_.sizes(), mask);
    dispatch_acc!(t, C => {
        match kind {
            SumLike::Prod => {
                let accs = reduce::<C, C, _>(&x, mask, &Prod)?;
                store(out, &accs, |a| *a)
            }
            SumLike::Sum => {
                let accs = reduce::<C, C, _>(&x, mask, &Sum(SumKind::Plain))?;
                store(out, &accs, |a| *a)
            }
            SumLike::Mean => {
                let accs = reduce::<C, C, _>(&x, mask, &Sum(SumKind::Plain))?;
                let count = C::from_i64_lossy(n);
                store(out, &accs, |a| a.div(count))
            }
        }
    })
}

/// `sum.IntList_out`.
pub fn sum_out(
    meta: &Meta<ReduceInfo>,
    self_: &Tensor,
    _dim: Option<&[i64]>,
    _keepdim: bool,
    _dtype: Option<ScalarType>,
    out: &Tensor,
) -> Result<()> {
    sum_like(self_, meta.extra.mask, out, SumLike::Sum)
}

/// `mean.out`: the sum divided by the number of reduced elements (NaN for none).
pub fn mean_out(
    meta: &Meta<ReduceInfo>,
    self_: &Tensor,
    _dim: Option<&[i64]>,
    _keepdim: bool,
    _dtype: Option<ScalarType>,
    out: &Tensor,
) -> Result<()> {
    sum_like(self_, meta.extra.mask, out, SumLike::Mean)
}

/// `prod.int_out`.
pub fn prod_out(
    meta: &Meta<ReduceInfo>,
    self_: &Tensor,
    _dim: i64,
    _keepdim: bool,
    _dtype: Option<ScalarType>,
    out: &Tensor,
) -> Result<()> {
    sum_like(self_, meta.extra.mask, out, SumLike::Prod)
}

/// `prod`: the product of every element (integral and bool inputs give `Long`).
pub fn prod(self_: &Tensor, dtype: Option<ScalarType>) -> Result<Tensor> {
    let dtype = dtype_from_self(self_, dtype, true);
    let out = Tensor::allocate(&[], dtype, self_.device())?;
    sum_like(self_, all_dims(self_)?, &out, SumLike::Prod)?;
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// all, any
// ---------------------------------------------------------------------------------------------

/// `all` (`is_all`) or `any` of the truth values of `self_` over `mask`: the minimum or
/// maximum of bytes, reading `Bool` and `Byte` inputs in place and other inputs' `x != 0`.
fn all_any(self_: &Tensor, mask: u64, out: &Tensor, is_all: bool) -> Result<()> {
    let x = match self_.dtype() {
        ScalarType::Bool | ScalarType::Byte => self_.clone(),
        _ => contiguous_as(self_, ScalarType::Bool)?,
    };
    let op_all = Extreme::<false> {
        abs: false,
        init: 1.0,
    };
    let op_any = Extreme::<true> {
        abs: false,
        init: 0.0,
    };
    let accs = match (x.dtype(), is_all) {
        (ScalarType::Bool, true) => reduce::<bool, u8, _>(&x, mask, &op_all)?,
        (ScalarType::Bool, false) => reduce::<bool, u8, _>(&x, mask, &op_any)?,
        (_, true) => reduce::<u8, u8, _>(&x, mask, &op_all)?,
        (_, false) => reduce::<u8, u8, _>(&x, mask, &op_any)?,
    };
    store(out, &accs, |a| *a != 0)
}

macro_rules! all_any_kernels {
    ($is_all:expr, $dim_out:ident, $dims_out:ident, $all_out:ident, $name:literal) => {
        #[doc = concat!("`", $name, ".out` (one dimension).")]
        pub fn $dim_out(
            meta: &Meta<ReduceInfo>,
            self_: &Tensor,
            _dim: i64,
            _keepdim: bool,
            out: &Tensor,
        ) -> Result<()> {
            all_any(self_, meta.extra.mask, out, $is_all)
        }

        #[doc = concat!("`", $name, ".dims_out`.")]
        pub fn $dims_out(
            meta: &Meta<ReduceInfo>,
            self_: &Tensor,
            _dim: Option<&[i64]>,
            _keepdim: bool,
            out: &Tensor,
        ) -> Result<()> {
            all_any(self_, meta.extra.mask, out, $is_all)
        }

        #[doc = concat!("`", $name, ".all_out` (every element).")]
        pub fn $all_out(meta: &Meta<ReduceInfo>, self_: &Tensor, out: &Tensor) -> Result<()> {
            all_any(self_, meta.extra.mask, out, $is_all)
        }
    };
}
all_any_kernels!(true, all_out, all_dims_out, all_all_out, "all");
all_any_kernels!(false, any_out, any_dims_out, any_all_out, "any");

// ---------------------------------------------------------------------------------------------
// max, min, amax, amin, argmax, argmin
// ---------------------------------------------------------------------------------------------

/// NaN-propagating maximum (`MAX`) or minimum over `mask` into `out`.
fn extreme<const MAX: bool>(self_: &Tensor, mask: u64, out: &Tensor) -> Result<()> {
    let x = widen(self_)?;
    dispatch_same!(x.dtype(), S, C => {
        let accs = reduce::<S, C, _>(&x, mask, &Extreme::<MAX>::plain())?;
        store(out, &accs, |a| *a)
    })
}

/// `amax.out`.
pub fn amax_out(
    meta: &Meta<ReduceInfo>,
    self_: &Tensor,
    _dim: &[i64],
    _keepdim: bool,
    out: &Tensor,
) -> Result<()> {
    extreme::<true>(self_, meta.extra.mask, out)
}

/// `amin.out`.
pub fn amin_out(
    meta: &Meta<ReduceInfo>,
    self_: &Tensor,
    _dim: &[i64],
    _keepdim: bool,
    out: &Tensor,
) -> Result<()> {
    extreme::<false>(self_, meta.extra.mask, out)
}

/// `aminmax.out`: the NaN-propagating minimum and maximum over the meta function's
/// dimensions (one, or all of them).
pub fn aminmax_out(
    meta: &Meta<ReduceInfo>,
    self_: &Tensor,
    _dim: Option<i64>,
    _keepdim: bool,
    min: &Tensor,
    max: &Tensor,
) -> Result<()> {
    extreme::<false>(self_, meta.extra.mask, min)?;
    extreme::<true>(self_, meta.extra.mask, max)
}

/// Value and first index of the maximum (`MAX`) or minimum along one dimension (`mask` has
/// one bit, or every bit of a contiguous input); writes whichever outputs are given.
fn arg_extreme<const MAX: bool>(
    x: &Tensor,
    mask: u64,
    values: Option<&Tensor>,
    indices: &Tensor,
) -> Result<()> {
    let x = widen(x)?;
    dispatch_same!(x.dtype(), S, C => {
        let accs = reduce::<S, C, _>(&x, mask, &ArgBest::<MAX>)?;
        if let Some(v) = values {
            store(v, &accs, |a| a.0)?;
        }
        store(indices, &accs, |a| a.1.max(0))
    })
}

fn dim_mask(self_: &Tensor, dim: usize) -> u64 {
    if self_.dim() == 0 { 1 } else { 1u64 << dim }
}

/// `max.dim_max`: values and indices of the maxima along `dim` (first NaN, else first
/// maximum).
pub fn max_out(
    meta: &Meta<DimInfo>,
    self_: &Tensor,
    _dim: i64,
    _keepdim: bool,
    max: &Tensor,
    max_values: &Tensor,
) -> Result<()> {
    arg_extreme::<true>(
        self_,
        dim_mask(self_, meta.extra.dim),
        Some(max),
        max_values,
    )
}

/// `min.dim_min`.
pub fn min_out(
    meta: &Meta<DimInfo>,
    self_: &Tensor,
    _dim: i64,
    _keepdim: bool,
    min: &Tensor,
    min_indices: &Tensor,
) -> Result<()> {
    arg_extreme::<false>(
        self_,
        dim_mask(self_, meta.extra.dim),
        Some(min),
        min_indices,
    )
}

/// Shared by `argmax` / `argmin`: without a dimension the input is flattened (a contiguous
/// copy when it is not contiguous, as `reshape(-1)` does) so indices are row-major.
fn arg_out<const MAX: bool>(
    meta: &Meta<ReduceInfo>,
    self_: &Tensor,
    dim: Option<i64>,
    out: &Tensor,
) -> Result<()> {
    if dim.is_some() {
        return arg_extreme::<MAX>(self_, meta.extra.mask, None, out);
    }
    let x = contiguous_with(self_, self_.dtype())?;
    arg_extreme::<MAX>(&x, all_dims(&x)?, None, out)
}

/// `argmax.out`.
pub fn argmax_out(
    meta: &Meta<ReduceInfo>,
    self_: &Tensor,
    dim: Option<i64>,
    _keepdim: bool,
    out: &Tensor,
) -> Result<()> {
    arg_out::<true>(meta, self_, dim, out)
}

/// `argmin.out`.
pub fn argmin_out(
    meta: &Meta<ReduceInfo>,
    self_: &Tensor,
    dim: Option<i64>,
    _keepdim: bool,
    out: &Tensor,
) -> Result<()> {
    arg_out::<false>(meta, self_, dim, out)
}

/// Shared by `max.unary_out` / `min.unary_out`: any output dtype the input casts to; an empty
/// input gives the reduction's identity (`-inf` for `max` of floats).
fn unary_extreme_out<const MAX: bool>(self_: &Tensor, out: &Tensor) -> Result<Tensor> {
    check_unary_extreme_out(self_, out)?;
    resize_output(out, &[])?;
    extreme::<MAX>(self_, all_dims(self_)?, out)?;
    Ok(out.clone())
}

/// `max`: the largest element (NaN if any).
pub fn max(self_: &Tensor) -> Result<Tensor> {
    check_nonempty_all_reduce(self_, "max")?;
    let out = Tensor::allocate(&[], self_.dtype(), self_.device())?;
    extreme::<true>(self_, all_dims(self_)?, &out)?;
    Ok(out)
}

/// `min`: the smallest element (NaN if any).
pub fn min(self_: &Tensor) -> Result<Tensor> {
    check_nonempty_all_reduce(self_, "min")?;
    let out = Tensor::allocate(&[], self_.dtype(), self_.device())?;
    extreme::<false>(self_, all_dims(self_)?, &out)?;
    Ok(out)
}

/// `max.unary_out`.
pub fn max_unary_out(self_: &Tensor, out: &Tensor) -> Result<Tensor> {
    unary_extreme_out::<true>(self_, out)
}

/// `min.unary_out`.
pub fn min_unary_out(self_: &Tensor, out: &Tensor) -> Result<Tensor> {
    unary_extreme_out::<false>(self_, out)
}

// ---------------------------------------------------------------------------------------------
// linalg_vector_norm
// ---------------------------------------------------------------------------------------------

/// `linalg_vector_norm.out`: `(Σ |x|^ord)^(1/ord)`, with the 0-, 1-, 2- and ±∞-norms
/// special-cased, accumulated in `float` (`double` for `Double`). Reductions over size-1
/// dimensions only give `|x|` (or `x != 0` for ord 0) exactly, as PyTorch does.
pub fn linalg_vector_norm_out(
    meta: &Meta<ReduceInfo>,
    self_: &Tensor,
    ord: Scalar,
    _dim: Option<&[i64]>,
    _keepdim: bool,
    _dtype: Option<ScalarType>,
    out: &Tensor,
) -> Result<()> {
    let mask = meta.extra.mask;
    let p = ord.to_f64();
    let t = out.dtype();
    let x = prepare_for(self_, t)?;
    let single = self_
        .sizes()
        .iter()
        .enumerate()
        .all(|(d, s)| !meta.extra.is_reduced(d) || *s == 1);
    dispatch_acc!(t, C => {
        type S = C;
        if single {
            let kind = if p == 0.0 { SumKind::NonZero } else { SumKind::Abs };
            return norm_sum::<S, C>(&x, mask, out, kind, |a| a);
        }
        if p == 0.0 {
            norm_sum::<S, C>(&x, mask, out, SumKind::NonZero, |a| a)
        } else if p == 1.0 {
            norm_sum::<S, C>(&x, mask, out, SumKind::Abs, |a| a)
        } else if p == 2.0 {
            norm_sum::<S, C>(&x, mask, out, SumKind::Square, |a: C| C::from_f64_lossy(a.to_f64().sqrt()))
        } else if p == f64::INFINITY {
            let accs = reduce::<S, C, _>(&x, mask, &Extreme::<true> { abs: true, init: 0.0 })?;
            store(out, &accs, |a| *a)
        } else if p == f64::NEG_INFINITY {
            let accs = reduce::<S, C, _>(&x, mask, &Extreme::<false> { abs: true, init: f64::INFINITY })?;
            store(out, &accs, |a| *a)
        } else {
            norm_sum::<S, C>(&x, mask, out, SumKind::Pow(p), |a: C| C::from_f64_lossy(a.to_f64().powf(1.0 / p)))
        }
    })
}

/// `self_.to(dtype)` when the dtypes differ (keeps the input otherwise).
fn contiguous_with_dtype(self_: &Tensor, dtype: ScalarType) -> Result<Tensor> {
    if self_.dtype() == dtype {
        Ok(self_.clone())
    } else {
        contiguous_as(self_, dtype)
    }
}

fn norm_sum<S: Elem, C: RNum>(
    x: &Tensor,
    mask: u64,
    out: &Tensor,
    kind: SumKind,
    finish: impl Fn(C) -> C + Sync,
) -> Result<()> {
    let accs = reduce::<S, C, _>(x, mask, &Sum(kind))?;
    store(out, &accs, |a| finish(*a))
}

// ---------------------------------------------------------------------------------------------
// var, std, var_mean
// ---------------------------------------------------------------------------------------------

/// The moments of `self_` over `mask`, read as `dtype` (PyTorch converts the input to the
/// result dtype first), accumulated in `double`.
fn moments(self_: &Tensor, mask: u64, dtype: ScalarType) -> Result<Vec<Moments>> {
    let x = widen(&contiguous_with_dtype(self_, dtype)?)?;
    match x.dtype() {
        ScalarType::Double => reduce::<f64, f64, _>(&x, mask, &Welford),
        _ => reduce::<f32, f64, _>(&x, mask, &Welford),
    }
}

fn fill_nan(t: &Tensor) -> Result<()> {
    let n = usize::try_from(t.numel()).unwrap_or(0);
    store(t, &switchyard_core::alloc::try_vec(n, f64::NAN)?, |v| *v)
}

/// `var` / `std` into `result` (already of the result dtype).
fn std_var_into(
    fname: &str,
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
    result: &Tensor,
    take_sqrt: bool,
) -> Result<()> {
    let s = prepare_std_var_out(fname, self_, dim, correction, keepdim, result)?;
    if self_.numel() == 0 {
        return fill_nan(result);
    }
    let m = moments(self_, s.mask, result.dtype())?;
    let c = s.correction;
    if take_sqrt {
        store(result, &m, |m| m.var(c).sqrt())
    } else {
        store(result, &m, |m| m.var(c))
    }
}

fn std_var(
    fname: &str,
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
    take_sqrt: bool,
) -> Result<Tensor> {
    let result = Tensor::allocate(&[0], self_.dtype(), self_.device())?;
    std_var_into(fname, self_, dim, correction, keepdim, &result, take_sqrt)?;
    Ok(result)
}

/// `var.correction`: `Σ (x - mean)² / max(N - correction, 0)` (correction defaults to 1).
pub fn var(
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
) -> Result<Tensor> {
    std_var("var", self_, dim, correction, keepdim, false)
}

/// `var.correction_out`.
pub fn var_out(
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
    out: &Tensor,
) -> Result<Tensor> {
    std_var_into("var", self_, dim, correction, keepdim, out, false)?;
    Ok(out.clone())
}

/// `std.correction`: the square root of [`var`].
pub fn std(
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
) -> Result<Tensor> {
    std_var("std", self_, dim, correction, keepdim, true)
}

/// `std.correction_out`.
pub fn std_out(
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
    out: &Tensor,
) -> Result<Tensor> {
    std_var_into("std", self_, dim, correction, keepdim, out, true)?;
    Ok(out.clone())
}

/// `var_mean.correction`: variance and mean in one pass.
pub fn var_mean(
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
) -> Result<(Tensor, Tensor)> {
    let (s, var, mean) = allocate_var_mean(self_, dim, correction, keepdim)?;
    if self_.numel() == 0 {
        fill_nan(&var)?;
        fill_nan(&mean)?;
        return Ok((var, mean));
    }
    let m = moments(self_, s.mask, self_.dtype())?;
    let c = s.correction;
    store(&var, &m, |m| m.var(c))?;
    store(&mean, &m, |m| m.mean)?;
    Ok((var, mean))
}

// ---------------------------------------------------------------------------------------------
// Kernels along one dimension: cumsum, cumprod, softmax, log_softmax
// ---------------------------------------------------------------------------------------------

/// `(outer, size, inner)` of `sizes` around `dim` (a 0-dim tensor is `(1, 1, 1)`).
fn split_at_dim(sizes: &[i64], dim: usize) -> Result<(usize, usize, usize)> {
    let to = |v: i64| usize::try_from(v).map_err(|_| Error::runtime("negative size"));
    if sizes.is_empty() {
        return Ok((1, 1, 1));
    }
    let outer = sizes.get(..dim).map_or(1, |s| s.iter().product());
    let size = sizes.get(dim).copied().unwrap_or(1);
    let inner = sizes.get(dim + 1..).map_or(1, |s| s.iter().product());
    Ok((to(outer)?, to(size)?, to(inner)?))
}

/// Runs `f` on the element slices of contiguous `x` (read) and contiguous `y` (written), which
/// must not share storage and must both have dtype `T`.
fn with_slices<T: Elem, R>(
    x: &Tensor,
    y: &Tensor,
    f: impl FnOnce(&[T::Repr], &mut [T::Repr]) -> Result<R>,
) -> Result<R> {
    with_tensors(&[(y, Access::Write), (x, Access::Read)], |data| {
        let (xo, yo) = (
            data.geometry(1).storage_offset(),
            data.geometry(0).storage_offset(),
        );
        let n = usize::try_from(data.geometry(0).numel())
            .map_err(|_| Error::runtime("negative numel"))?;
        let (mut written, shared) = data.split_host_mut(&[0])?;
        let xb = shared
            .get(1)
            .copied()
            .flatten()
            .ok_or_else(|| Error::runtime("internal error: aliased operands"))?;
        let yb = written
            .pop()
            .ok_or_else(|| Error::runtime("internal error: missing output"))?;
        let xs = loops::typed::<T>(xb)?;
        let ys = loops::typed_mut::<T>(yb)?;
        let (xo, yo) = (
            usize::try_from(xo).unwrap_or(usize::MAX),
            usize::try_from(yo).unwrap_or(usize::MAX),
        );
        let range = |o: usize| o..o.saturating_add(n);
        match (xs.get(range(xo)), ys.get_mut(range(yo))) {
            (Some(xs), Some(ys)) => f(xs, ys),
            _ => Err(Error::runtime(
                "internal error: tensor data outside its storage",
            )),
        }
    })
}

/// Computes into `out` through `compute(input, dest)` where `dest` is `out` itself when it is
/// contiguous of dtype `dtype` and does not alias `input`, else a temporary copied into `out`.
fn into_contiguous_out(
    input: &Tensor,
    out: &Tensor,
    dtype: ScalarType,
    compute: impl FnOnce(&Tensor, &Tensor) -> Result<()>,
) -> Result<()> {
    if out.dtype() == dtype && out.is_contiguous() && !out.is_alias_of(input) {
        return compute(input, out);
    }
    let tmp = Tensor::allocate(&out.sizes(), dtype, out.device())?;
    compute(input, &tmp)?;
    copy_into(out, &tmp)
}

/// `out.copy_(src)` for same-shaped tensors (dtype conversion included).
fn copy_into(out: &Tensor, src: &Tensor) -> Result<()> {
    dispatch_dtype!(out.dtype(), E => loops::map::<E, E, 1>(out, [src], |[v]| v))
}

/// Shared by `cumsum` / `cumprod`: `self` converted to the output dtype and scanned along `dim`
/// in PyTorch's accumulation type (`double` for `float`).
fn cum_op(self_: &Tensor, dim: usize, out: &Tensor, prod: bool, name: &str) -> Result<()> {
    if self_.dim() == 0 {
        return copy_into(out, self_);
    }
    if self_.numel() == 0 {
        return Ok(());
    }
    let t = out.dtype();
    if t == ScalarType::Bool {
        return Err(not_implemented(name, t));
    }
    // The checks of PyTorch's kernel's TensorIterator (`cpu_cum_base_kernel`): `out` may not
    // have elements sharing memory, nor share part of its memory with `self` (read as `out`'s
    // dtype: a copy when it is another).
    assert_no_internal_overlap(out)?;
    if self_.dtype() == t {
        assert_no_partial_overlap(out, self_)?;
    }
    let x = contiguous_with(self_, t)?;
    let x = if x.is_alias_of(out) {
        contiguous_as(self_, t)?
    } else {
        x
    };
    let (outer, size, inner) = split_at_dim(&x.sizes(), dim)?;
    into_contiguous_out(&x, out, t, |x, dest| {
        macro_rules! run {
            ($T:ty, $A:ty) => {
                with_slices::<$T, ()>(x, dest, |xs, ys| {
                    scan::<$T, $A>(xs, ys, outer, size, inner, prod)
                })
            };
        }
        match t {
            ScalarType::Byte => run!(u8, i64),
            ScalarType::Char => run!(i8, i64),
            ScalarType::Short => run!(i16, i64),
            ScalarType::Int => run!(i32, i64),
            ScalarType::Long => run!(i64, i64),
            ScalarType::Half => run!(half::f16, f32),
            ScalarType::BFloat16 => run!(half::bf16, f32),
            ScalarType::Float => run!(f32, f64),
            ScalarType::Double => run!(f64, f64),
            ScalarType::Bool => Err(not_implemented(name, t)),
        }
    })
}

/// `cumsum.out`.
pub fn cumsum_out(
    meta: &Meta<DimInfo>,
    self_: &Tensor,
    _dim: i64,
    _dtype: Option<ScalarType>,
    out: &Tensor,
) -> Result<()> {
    cum_op(self_, meta.extra.dim, out, false, "cumsum_out_cpu")
}

/// `cumprod.out`.
pub fn cumprod_out(
    meta: &Meta<DimInfo>,
    self_: &Tensor,
    _dim: i64,
    _dtype: Option<ScalarType>,
    out: &Tensor,
) -> Result<()> {
    cum_op(self_, meta.extra.dim, out, true, "cumprod_out_cpu")
}

/// PyTorch's checks of softmax / log_softmax, in its order; returns the type the kernel computes
/// in (`float`, `double` for `Double`), or `None` when there is nothing to compute.
fn softmax_compute_type(
    input: &Tensor,
    dim: usize,
    half_to_float: bool,
    log: bool,
) -> Result<Option<ScalarType>> {
    // PyTorch words this check the same for both operators.
    torch_check!(
        !half_to_float,
        "softmax with half to float conversion is not supported on CPU"
    );
    if input.numel() == 0 {
        return Ok(None);
    }
    let dtype = input.dtype();
    if !dtype.is_floating_point() {
        let lastdim = input.dim() == 0 || dim + 1 == input.dim();
        let name = match (log, lastdim) {
            (false, true) => "softmax_lastdim_kernel_impl",
            (false, false) => "softmax_kernel_impl",
            (true, true) => "log_softmax_lastdim_kernel_impl",
            (true, false) => "log_softmax_kernel_impl",
        };
        return Err(not_implemented(name, dtype));
    }
    Ok(Some(if dtype == ScalarType::Double {
        ScalarType::Double
    } else {
        ScalarType::Float
    }))
}

/// Shared by `_softmax.out` / `_log_softmax.out`: a contiguous input, computed in `float`
/// (`double` for `Double`), max-subtracted for stability.
fn softmax_op(
    input: &Tensor,
    dim: usize,
    half_to_float: bool,
    out: &Tensor,
    log: bool,
) -> Result<()> {
    let Some(compute) = softmax_compute_type(input, dim, half_to_float, log)? else {
        return Ok(());
    };
    let (outer, size, inner) = split_at_dim(&input.sizes(), dim)?;
    let x = contiguous_with(input, compute)?;
    into_contiguous_out(&x, out, compute, |x, dest| {
        fn run<F: SoftFloat + Elem>(
            x: &Tensor,
            dest: &Tensor,
            dims: (usize, usize, usize),
            log: bool,
        ) -> Result<()> {
            with_slices::<F, ()>(x, dest, |xs, ys| {
                // SAFETY: `MaybeUninit<F>` has the layout of `F`, and `softmax` stores only
                // initialised values through the slots, so `ys` stays initialised.
                let slots = unsafe { &mut *(std::ptr::from_mut(ys) as *mut [MaybeUninit<F>]) };
                softmax::<F>(xs, slots, dims.0, dims.1, dims.2, log)
            })
        }
        if compute == ScalarType::Double {
            run::<f64>(x, dest, (outer, size, inner), log)
        } else {
            run::<f32>(x, dest, (outer, size, inner), log)
        }
    })
}

/// Shared by functional `_softmax` / `_log_softmax`: a non-empty `Float` / `Double` input gets
/// its output written straight into new memory that is never zero-filled (for [4096, 1024]
/// `f32`, zeroing the 16 MB first cost half as much as the kernel; PyTorch's functional
/// wrapper allocates with `empty`). Everything else (half types computed in `float`, errors,
/// empty inputs) takes the structured path: `create_out`, then [`softmax_op`].
fn softmax_functional(
    meta: &Meta<DimInfo>,
    input: &Tensor,
    half_to_float: bool,
    log: bool,
) -> Result<Tensor> {
    let spec = meta.output(0)?;
    let dim = meta.extra.dim;
    let dtype = input.dtype();
    let direct = !half_to_float
        && input.numel() > 0
        && matches!(dtype, ScalarType::Float | ScalarType::Double)
        && spec.dtype == dtype
        && spec.strides.is_none()
        && spec.device == input.device()
        && spec.sizes.as_slice() == input.sizes().as_slice();
    if !direct {
        let out = create_out(spec)?;
        softmax_op(input, dim, half_to_float, &out, log)?;
        return Ok(out);
    }
    let dims = split_at_dim(&input.sizes(), dim)?;
    let x = contiguous_with(input, dtype)?;
    fn run<F: SoftFloat + Elem>(
        x: &Tensor,
        sizes: &[i64],
        (outer, size, inner): (usize, usize, usize),
        log: bool,
    ) -> Result<Tensor> {
        let n = outer * size * inner;
        Tensor::new_with::<F>(sizes, |ys| {
            if ys.len() != n {
                return Err(Error::runtime("internal error: softmax output size"));
            }
            with_tensors(&[(x, Access::Read)], |data| {
                let xo = usize::try_from(data.geometry(0).storage_offset())
                    .map_err(|_| Error::runtime("internal error: softmax input offset"))?;
                let xs = loops::typed::<F>(data.bytes(0)?)?
                    .get(xo..xo.saturating_add(n))
                    .ok_or_else(|| Error::runtime("internal error: softmax input range"))?;
                softmax::<F>(xs, &mut *ys, outer, size, inner, log)
            })?;
            // SAFETY: `ys` has `n = outer * size * inner` elements (checked above) and
            // `softmax` returned Ok on an input of `n` elements, so it wrote every one of them.
            Ok(unsafe { ys.assume_init_mut() })
        })
    }
    if dtype == ScalarType::Double {
        run::<f64>(&x, &spec.sizes, dims, log)
    } else {
        run::<f32>(&x, &spec.sizes, dims, log)
    }
}

/// Functional `_softmax`: the structured impl [`softmax_cpu_out`] into an output it allocates
/// itself (see `softmax_functional`).
pub fn softmax_cpu(
    meta: &Meta<DimInfo>,
    self_: &Tensor,
    _dim: i64,
    half_to_float: bool,
) -> Result<Tensor> {
    softmax_functional(meta, self_, half_to_float, false)
}

/// Functional `_log_softmax`: the structured impl [`log_softmax_cpu_out`] into an output it
/// allocates itself (see `softmax_functional`).
pub fn log_softmax_cpu(
    meta: &Meta<DimInfo>,
    self_: &Tensor,
    _dim: i64,
    half_to_float: bool,
) -> Result<Tensor> {
    softmax_functional(meta, self_, half_to_float, true)
}

/// `_softmax.out`.
pub fn softmax_cpu_out(
    meta: &Meta<DimInfo>,
    self_: &Tensor,
    _dim: i64,
    half_to_float: bool,
    out: &Tensor,
) -> Result<()> {
    softmax_op(self_, meta.extra.dim, half_to_float, out, false)
}

/// `_log_softmax.out`.
pub fn log_softmax_cpu_out(
    meta: &Meta<DimInfo>,
    self_: &Tensor,
    _dim: i64,
    half_to_float: bool,
    out: &Tensor,
) -> Result<()> {
    softmax_op(self_, meta.extra.dim, half_to_float, out, true)
}
