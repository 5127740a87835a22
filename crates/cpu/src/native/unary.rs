//! Unary pointwise operators (math functions, rounding, activations, classification).
//!
//! Every kernel is one elementwise function applied by [`apply`]: contiguous operands of the
//! compute type (the common case, and the one benchmarks measure) run through the
//! multiversioned slice loops of `crate::math` (AVX2 / AVX-512 clones picked at run time,
//! split across threads above `loops::GRAIN_SIZE`); everything else (strided or broadcast
//! views, `f16`/`bf16` storage, dtype conversion to the output, partially overlapping
//! in-place views) goes through the general engine `loops::map`.
//!
//! Dtype support and error messages follow PyTorch's CPU kernels (`"floor_vml_cpu" not
//! implemented for 'Bool'`, ...).

use crate::loops::{self, GRAIN_SIZE, typed, typed_mut};
use crate::math::{self, Float};
use crate::num::{Arith, Bits, Num, dispatch_compute, dispatch_subset};
use crate::parallel;
use switchyard_core::{
    Access, Element, Error, Result, ScalarType, Tensor, dispatch_dtype, with_tensors,
};
use switchyard_ops::iter_meta::{
    IterConfig, IterInfo, allocate_output as elementwise_output, prepare_out,
};
use switchyard_ops::meta::{GeluApproximation, gelu_approximation};
use switchyard_ops::structured::{Meta, Outs};

// ---------------------------------------------------------------------------------------------
// The loop
// ---------------------------------------------------------------------------------------------

/// `out = f(input)` elementwise, computing in `T` (see the module documentation).
fn apply<T: Element>(out: &Tensor, input: &Tensor, f: impl Fn(T) -> T + Sync) -> Result<()>
where
    T::Repr: Send + Sync,
{
    if out.dtype() == T::DTYPE && input.dtype() == T::DTYPE && contiguous(out, input, &f)? {
        return Ok(());
    }
    loops::map::<T, T, 1>(out, [input], |[x]| f(x))
}

/// The slice fast path of [`apply`]: both operands contiguous with the same sizes, and either
/// disjoint or exactly the same elements (in place). Returns `false`, having done nothing,
/// when the operands do not qualify.
fn contiguous<T: Element>(
    out: &Tensor,
    input: &Tensor,
    f: &(impl Fn(T) -> T + Sync),
) -> Result<bool>
where
    T::Repr: Send + Sync,
{
    with_tensors(&[(out, Access::Write), (input, Access::Read)], |data| {
        let (go, gi) = (data.geometry(0).clone(), data.geometry(1).clone());
        if !go.is_contiguous() || !gi.is_contiguous() || go.sizes() != gi.sizes() {
            return Ok(false);
        }
        let n = usize::try_from(go.sizes().iter().product::<i64>()).map_err(|_| bad_geometry())?;
        // Nothing to do; an empty view's offset may lie past its storage (`x[1::2]` of one row).
        if n == 0 {
            return Ok(true);
        }
        let oo = usize::try_from(go.storage_offset()).map_err(|_| bad_geometry())?;
        let io = usize::try_from(gi.storage_offset()).map_err(|_| bad_geometry())?;
        let (mut written, shared) = data.split_host_mut(&[0])?;
        let out_bytes: &mut [u8] = written.remove(0);
        let dst = typed_mut::<T>(out_bytes)?
            .get_mut(oo..oo + n)
            .ok_or_else(bad_geometry)?;
        let g = |r: T::Repr| f(T::from_repr(r)).to_repr();
        let chunk = (n / (parallel::num_threads() * 4)).max(GRAIN_SIZE / 4);
        let split = n >= GRAIN_SIZE && parallel::num_threads() > 1;
        match shared.get(1).copied().flatten() {
            Some(bytes) => {
                let src = typed::<T>(bytes)?
                    .get(io..io + n)
                    .ok_or_else(bad_geometry)?;
                if split {
                    parallel::for_each_chunk_mut(dst, chunk, &|i, d| {
                        math::map1(parallel::chunk_of(src, chunk, i), d, &g);
                        Ok(())
                    })?;
                } else {
                    math::map1(src, dst, &g);
                }
            }
            // The input shares the output's storage: only the exact same elements qualify.
            None if io == oo => {
                if split {
                    parallel::for_each_chunk_mut(dst, chunk, &|_, d| {
                        math::map1_inplace(d, &g);
                        Ok(())
                    })?;
                } else {
                    math::map1_inplace(dst, &g);
                }
            }
            None => return Ok(false),
        }
        Ok(true)
    })
}

fn bad_geometry() -> Error {
    Error::runtime("internal error: tensor geometry outside its storage")
}

// ---------------------------------------------------------------------------------------------
// Floating-point functions (`build_borrowing_unary_float_op`)
// ---------------------------------------------------------------------------------------------

/// Structured impls computing `Float::$method` in the common (floating) dtype.
macro_rules! float_kernels {
    ($($kernel:ident => $method:ident, $name:literal;)*) => {$(
        #[doc = concat!("`", $name, "` on CPU (structured impl; `f16`/`bf16` compute in `f32`).")]
        pub fn $kernel(meta: &Meta<IterInfo>, self_: &Tensor, out: &Tensor) -> Result<()> {
            dispatch_subset!(float, meta.extra.common_dtype, $name, C => {
                apply::<C>(out, self_, |x| x.$method())
            })
        }
    )*};
}

float_kernels! {
    exp_out => exp_, "exp_vml_cpu";
    log_out => log_, "log_vml_cpu";
    log2_out => log2_, "log2_vml_cpu";
    log1p_out => log1p_, "log1p_vml_cpu";
    expm1_out => expm1_, "expm1_vml_cpu";
    sqrt_out => sqrt_, "sqrt_vml_cpu";
    rsqrt_out => rsqrt_, "rsqrt_cpu";
    sin_out => sin_, "sin_vml_cpu";
    cos_out => cos_, "cos_vml_cpu";
    tan_out => tan_, "tan_vml_cpu";
    tanh_out => tanh_, "tanh_vml_cpu";
    sigmoid_out => sigmoid_, "sigmoid_cpu";
    erf_out => erf_, "erf_vml_cpu";
    reciprocal_out => recip_, "reciprocal_cpu";
    silu_out => silu_, "silu_cpu";
}

/// `gelu.out` on CPU: exact (`approximate='none'`) or tanh-approximated GELU; floating
/// dtypes only (PyTorch's `GeluKernelImpl`).
pub fn gelu_out_cpu(
    meta: &Meta<IterInfo>,
    self_: &Tensor,
    approximate: &str,
    out: &Tensor,
) -> Result<()> {
    let approximation = gelu_approximation(approximate)?;
    dispatch_subset!(float, meta.extra.common_dtype, "GeluKernelImpl", C => {
        match approximation {
            GeluApproximation::None => apply::<C>(out, self_, |x| x.gelu_()),
            GeluApproximation::Tanh => apply::<C>(out, self_, |x| x.gelu_tanh_()),
        }
    })
}

// ---------------------------------------------------------------------------------------------
// Same-dtype arithmetic (`build_borrowing_unary_op`)
// ---------------------------------------------------------------------------------------------

/// `neg.out` on CPU (bool inputs were rejected by meta).
pub fn neg_out(meta: &Meta<IterInfo>, self_: &Tensor, out: &Tensor) -> Result<()> {
    dispatch_subset!(numeric, meta.extra.common_dtype, "neg_cpu", C => {
        apply::<C>(out, self_, Arith::neg)
    })
}

/// Rounding kernels: identity for integers (PyTorch copies), an error for bool.
macro_rules! rounding_kernels {
    ($($kernel:ident => $method:ident, $name:literal;)*) => {$(
        #[doc = concat!("`", $name, "` on CPU: integers are returned unchanged, bool is rejected.")]
        pub fn $kernel(meta: &Meta<IterInfo>, self_: &Tensor, out: &Tensor) -> Result<()> {
            dispatch_subset!(numeric, meta.extra.common_dtype, $name, C => {
                apply::<C>(out, self_, Arith::$method)
            })
        }
    )*};
}

rounding_kernels! {
    floor_out => floor, "floor_vml_cpu";
    ceil_out => ceil, "ceil_vml_cpu";
    round_out => round, "round_vml_cpu";
    trunc_out => trunc, "trunc_vml_cpu";
}

/// `round.decimals_out` on CPU: floating dtypes only. PyTorch rounds `x * 10^d` half to even
/// and divides back (for negative `d`: `x / 10^-d`, rounded, times `10^-d`), in the compute
/// type; `decimals = 0` is plain `round` (whose kernel also rejects integers).
pub fn round_decimals_out(
    meta: &Meta<IterInfo>,
    self_: &Tensor,
    decimals: i64,
    out: &Tensor,
) -> Result<()> {
    let dtype = meta.extra.common_dtype;
    if decimals == 0 {
        return dispatch_subset!(float, dtype, "round_vml_cpu", C => {
            apply::<C>(out, self_, |x| x.round_even_())
        });
    }
    let negative = decimals < 0;
    // `std::pow(10, decimals)` in double, then converted to the compute type.
    let exponent = i32::try_from(decimals.unsigned_abs()).unwrap_or(i32::MAX);
    let ten_pow = 10f64.powi(exponent);
    dispatch_subset!(float, dtype, "round_cpu", C => {
        let p = C::from_f64_(ten_pow);
        if negative {
            apply::<C>(out, self_, move |x| (x / p).round_even_() * p)
        } else {
            apply::<C>(out, self_, move |x| (x * p).round_even_() / p)
        }
    })
}

/// `sign.out` on CPU: `(0 < x) - (x < 0)`, so NaN and `-0.0` give `+0.0`; bool is unchanged.
pub fn sign_out(meta: &Meta<IterInfo>, self_: &Tensor, out: &Tensor) -> Result<()> {
    let dtype = meta.extra.common_dtype;
    if dtype == ScalarType::Bool {
        return apply::<bool>(out, self_, |x| x);
    }
    dispatch_subset!(numeric, dtype, "sign_cpu", C => {
        apply::<C>(out, self_, |x: C| {
            let zero = C::zero();
            if zero < x {
                C::one()
            } else if x < zero {
                C::one().neg()
            } else {
                zero
            }
        })
    })
}

/// `bitwise_not.out` on CPU: integers and bool (logical not).
pub fn bitwise_not_out(meta: &Meta<IterInfo>, self_: &Tensor, out: &Tensor) -> Result<()> {
    dispatch_subset!(int_bool, meta.extra.common_dtype, "bitwise_not_cpu", C => {
        apply::<C>(out, self_, Bits::not)
    })
}

/// `abs.out` on CPU (unstructured in PyTorch): `out` must have `self`'s dtype and is resized;
/// bool is rejected (`"abs_cpu" not implemented for 'Bool'`).
pub fn abs_out(self_: &Tensor, out: &Tensor) -> Result<Tensor> {
    let meta = prepare_out(IterConfig::unary(self_, Outs::Out(&[out])), out)?;
    dispatch_subset!(numeric, meta.extra.common_dtype, "abs_cpu", C => {
        apply::<C>(out, self_, Arith::abs)
    })?;
    Ok(out.clone())
}

// ---------------------------------------------------------------------------------------------
// relu
// ---------------------------------------------------------------------------------------------

/// PyTorch's check in `relu` / `relu_`.
fn check_relu(self_: &Tensor) -> Result<()> {
    if self_.dtype() == ScalarType::Bool {
        return Err(Error::not_implemented(
            "Boolean inputs not supported for relu",
        ));
    }
    Ok(())
}

/// `max(x, 0)` as PyTorch's `clamp_min(x, 0)` computes it: NaN and `-0.0` pass through.
fn relu_into(self_: &Tensor, out: &Tensor) -> Result<()> {
    dispatch_subset!(numeric, self_.dtype(), "clamp_min_cpu", C => {
        apply::<C>(out, self_, crate::fused::relu::<C>)
    })
}

/// `relu` on CPU: `clamp_min(self, 0)` in `self`'s dtype; bool is rejected.
pub fn relu(self_: &Tensor) -> Result<Tensor> {
    check_relu(self_)?;
    let out = elementwise_output(IterConfig::unary(self_, Outs::Functional))?;
    relu_into(self_, &out)?;
    Ok(out)
}

/// `relu_` on CPU: PyTorch's `clamp_min_(self, 0)`, whose TensorIterator refuses a `self`
/// with elements sharing memory.
pub fn relu_(self_: &Tensor) -> Result<Tensor> {
    check_relu(self_)?;
    switchyard_ops::iter_meta::check_mem_overlaps(&[self_], Outs::Inplace(self_))?;
    relu_into(self_, self_)?;
    Ok(self_.clone())
}

// ---------------------------------------------------------------------------------------------
// Classification and logical not (bool results)
// ---------------------------------------------------------------------------------------------

/// `isnan` on CPU: a bool tensor, all false for integer and bool inputs.
pub fn isnan(self_: &Tensor) -> Result<Tensor> {
    let out = elementwise_output(IterConfig::unary_force_boolean(self_, Outs::Functional))?;
    dispatch_compute!(self_.dtype(), C => {
        loops::map::<C, bool, 1>(&out, [self_], |[x]| x.is_nan_())
    })?;
    Ok(out)
}

/// `logical_not.out` on CPU: `x == 0` for every input dtype, written to an `out` of any dtype
/// (resized to `self`'s shape).
pub fn logical_not_out(self_: &Tensor, out: &Tensor) -> Result<Tensor> {
    prepare_out(
        IterConfig::unary_force_boolean(self_, Outs::Out(&[out])),
        out,
    )?;
    dispatch_compute!(self_.dtype(), C => {
        loops::map::<C, bool, 1>(out, [self_], |[x]| !x.truthy())
    })?;
    Ok(out.clone())
}

// ---------------------------------------------------------------------------------------------
// nan_to_num
// ---------------------------------------------------------------------------------------------

/// The largest finite value of a floating dtype.
fn dtype_max(dtype: ScalarType) -> f64 {
    match dtype {
        ScalarType::Half => 65504.0,
        ScalarType::BFloat16 => 3.389_531_389_251_535_5e38,
        ScalarType::Float => f64::from(f32::MAX),
        _ => f64::MAX,
    }
}

/// `v` as PyTorch's `static_cast<scalar_t>(v)` gives it for storage dtype `dtype`.
fn cast_to(v: f64, dtype: ScalarType) -> f64 {
    dispatch_dtype!(dtype, S => S::from_f64_lossy(v).to_f64())
}

/// `nan_to_num.out` on CPU: NaN → `nan` (default 0), +inf → `posinf` (default the dtype's
/// largest value), -inf → `neginf` (default its lowest); `out` must have `self`'s dtype.
/// Integer and bool tensors are copied unchanged.
pub fn nan_to_num_out(
    self_: &Tensor,
    nan: Option<f64>,
    posinf: Option<f64>,
    neginf: Option<f64>,
    out: &Tensor,
) -> Result<Tensor> {
    let dtype = self_.dtype();
    switchyard_ops::meta::check_nan_to_num_out(self_, out)?;
    prepare_out(IterConfig::unary(self_, Outs::Out(&[out])), out)?;
    if !dtype.is_floating_point() {
        if !out.is_same(self_) {
            dispatch_compute!(dtype, C => apply::<C>(out, self_, |x| x))?;
        }
        return Ok(out.clone());
    }
    let max = dtype_max(dtype);
    let nan_v = cast_to(nan.unwrap_or(0.0), dtype);
    let pos_v = cast_to(posinf.unwrap_or(max), dtype);
    let neg_v = cast_to(neginf.unwrap_or(-max), dtype);
    dispatch_subset!(float, dtype, "nan_to_num", C => {
        let (nan_c, pos_c, neg_c) = (C::from_f64_(nan_v), C::from_f64_(pos_v), C::from_f64_(neg_v));
        let inf = C::from_f64_(f64::INFINITY);
        apply::<C>(out, self_, move |x: C| {
            if x.is_nan_() {
                nan_c
            } else if x == inf {
                pos_c
            } else if x == -inf {
                neg_c
            } else {
                x
            }
        })
    })?;
    Ok(out.clone())
}
