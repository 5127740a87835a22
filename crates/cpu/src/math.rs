//! Fast elementwise math for `f32` and `f64`, written so that LLVM vectorises it.
//!
//! Every function here is branch-free (selects instead of branches, bit tricks instead of
//! `frexp`/`ldexp` calls, polynomials instead of libm calls) and `#[inline(always)]`, so a slice
//! loop over it becomes SIMD code. [`map1`], [`map1_inplace`] and [`map2`] run such loops,
//! compiled three times (baseline x86-64, AVX2 and AVX-512) and picked at run time; the
//! arithmetic never lets the compiler fuse a multiply-add, so the three versions give
//! bit-identical results and a result never depends on the machine. The one explicit fused
//! multiply-add (`f32::mul_add`, correctly rounded on every target) is in softmax's
//! [`exp_nonpos_f32`]; see there for the trade-off.
//!
//! Accuracy (maximum error measured against correctly rounded results over dense sweeps, see
//! the tests at the end of this file; PyTorch's SLEEF-based CPU kernels are within 1 ulp, so
//! the f32 `expm1`, `log1p`, `sin`, `cos` and `tan` here are looser than PyTorch's; measured
//! worst cases 1.35, 2.31, 1.48, 1.50 and 3.16 ulp):
//!
//! | function | f32 | f64 |
//! |---|---|---|
//! | `exp` | ≤ 1 ulp | ≤ 1 ulp |
//! | `expm1` | ≤ 1.5 ulp | ≤ 1 ulp |
//! | `log`, `log2` | ≤ 2 ulp | ≤ 2 ulp |
//! | `log1p` | ≤ 2.5 ulp | ≤ 2 ulp |
//! | `sin`, `cos` | ≤ 2 ulp (|x| ≤ 2^20; larger arguments use libm via `f64`) | libm |
//! | `tan` | ≤ 3.5 ulp (same range rule) | libm |
//! | `tanh` | ≤ 3 ulp | ≤ 3 ulp |
//! | `erf` | ≤ 2 ulp | libm |
//! | `sigmoid`, `silu`, `gelu` | PyTorch's formulas over the functions above | same |
//!
//! `f16`/`bf16` tensors compute in `f32` and round once, so they are correctly rounded in
//! practice.

#![allow(clippy::excessive_precision, clippy::unreadable_literal)]

use std::sync::OnceLock;

// ---------------------------------------------------------------------------------------------
// Multiversioned slice loops
// ---------------------------------------------------------------------------------------------

/// The SIMD level the slice loops run at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    Baseline,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

fn level() -> Level {
    static LEVEL: OnceLock<Level> = OnceLock::new();
    *LEVEL.get_or_init(detect)
}

#[cfg(target_arch = "x86_64")]
fn detect() -> Level {
    let avx2 = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
    let avx512 = avx2
        && is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512dq")
        && is_x86_feature_detected!("avx512vl");
    if avx512 {
        Level::Avx512
    } else if avx2 {
        Level::Avx2
    } else {
        Level::Baseline
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn detect() -> Level {
    Level::Baseline
}

/// Whether the AVX2 + FMA copies of the hot loops can run (here and in `reduce_loops` /
/// `sum_simd`, which share this one detection).
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn has_avx2() -> bool {
    level() != Level::Baseline
}

/// Whether the AVX-512 copies can run (AVX-512 F/BW/DQ/VL on top of AVX2 + FMA).
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn has_avx512() -> bool {
    level() == Level::Avx512
}

/// Defines a slice loop `$name` from a body function, with AVX2 and AVX-512 clones picked at
/// run time.
macro_rules! multiversion {
    (
        $(#[$doc:meta])*
        fn $name:ident<$($g:ident),*>($($arg:ident: $ty:ty),*) where $($bounds:tt)*
    ) => {
        $(#[$doc])*
        pub(crate) fn $name<$($g),*>($($arg: $ty),*) where $($bounds)* {
            #[inline(always)]
            fn body<$($g),*>($($arg: $ty),*) where $($bounds)* {
                paste_body!($name, $($arg),*)
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma")]
            fn avx2<$($g),*>($($arg: $ty),*) where $($bounds)* {
                body($($arg),*)
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
            fn avx512<$($g),*>($($arg: $ty),*) where $($bounds)* {
                body($($arg),*)
            }
            match level() {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: `level` returns `Avx512` only after detecting every feature `avx512`
                // is compiled with.
                Level::Avx512 => unsafe { avx512($($arg),*) },
                #[cfg(target_arch = "x86_64")]
                // SAFETY: `level` returns `Avx2` only after detecting AVX2 and FMA.
                Level::Avx2 => unsafe { avx2($($arg),*) },
                Level::Baseline => body($($arg),*),
            }
        }
    };
}

/// The loop bodies of the multiversioned functions.
macro_rules! paste_body {
    (map1, $src:ident, $dst:ident, $f:ident) => {
        for (d, s) in $dst.iter_mut().zip($src) {
            *d = $f(*s);
        }
    };
    (map1_inplace, $buf:ident, $f:ident) => {
        for v in $buf.iter_mut() {
            *v = $f(*v);
        }
    };
    (map2, $a:ident, $b:ident, $dst:ident, $f:ident) => {
        for ((d, x), y) in $dst.iter_mut().zip($a).zip($b) {
            *d = $f(*x, *y);
        }
    };
    (map2_inplace, $buf:ident, $b:ident, $f:ident) => {
        for (d, y) in $buf.iter_mut().zip($b) {
            *d = $f(*d, *y);
        }
    };
}

multiversion! {
    /// `dst[i] = f(src[i])` over the common length.
    fn map1<T, U, F>(src: &[T], dst: &mut [U], f: &F) where T: Copy, F: Fn(T) -> U
}

multiversion! {
    /// `buf[i] = f(buf[i])`.
    fn map1_inplace<T, F>(buf: &mut [T], f: &F) where T: Copy, F: Fn(T) -> T
}

multiversion! {
    /// `dst[i] = f(a[i], b[i])` over the common length.
    #[allow(dead_code)] // for the binary operators
    fn map2<T, U, F>(a: &[T], b: &[T], dst: &mut [U], f: &F) where T: Copy, F: Fn(T, T) -> U
}

multiversion! {
    /// `buf[i] = f(buf[i], b[i])` over the common length.
    #[allow(dead_code)] // for the binary operators
    fn map2_inplace<T, F>(buf: &mut [T], b: &[T], f: &F) where T: Copy, F: Fn(T, T) -> T
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// `1.5 * 2^23`: adding it to an `f32` of magnitude below `2^22` rounds it to an integer
/// (ties to even), which then sits in the low mantissa bits.
const MAGIC_F32: f32 = 12_582_912.0;
/// `1.5 * 2^52`, the `f64` counterpart of [`MAGIC_F32`].
const MAGIC_F64: f64 = 6_755_399_441_055_744.0;

/// `x` rounded to the nearest integer, as a float and as an integer (`|x| < 2^22`).
#[inline(always)]
fn round_f32(x: f32) -> (f32, i32) {
    let t = x + MAGIC_F32;
    let n = t - MAGIC_F32;
    let i = (t.to_bits() as i32).wrapping_sub(MAGIC_F32.to_bits() as i32);
    (n, i)
}

/// `x` rounded to the nearest integer, as a float and as an integer (`|x| < 2^51`).
#[inline(always)]
fn round_f64(x: f64) -> (f64, i64) {
    let t = x + MAGIC_F64;
    let n = t - MAGIC_F64;
    let i = (t.to_bits() as i64).wrapping_sub(MAGIC_F64.to_bits() as i64);
    (n, i)
}

/// `2^n` for `n` in `[-126, 127]` (`+inf` for 128).
#[inline(always)]
fn pow2i_f32(n: i32) -> f32 {
    f32::from_bits((n.wrapping_add(127) as u32) << 23)
}

/// `2^n` for `n` in `[-1022, 1023]`.
#[inline(always)]
fn pow2i_f64(n: i64) -> f64 {
    f64::from_bits((n.wrapping_add(1023) as u64) << 52)
}

/// `y * 2^n` for `n` in `[-150, 128]` (f32) without leaving the normal range in between, so
/// a subnormal result is rounded once.
#[inline(always)]
fn scale_f32(y: f32, n: i32) -> f32 {
    let n1 = n >> 1;
    y * pow2i_f32(n1) * pow2i_f32(n.wrapping_sub(n1))
}

/// `y * 2^n` for `n` in `[-1076, 1024]`.
#[inline(always)]
fn scale_f64(y: f64, n: i64) -> f64 {
    let n1 = n >> 1;
    y * pow2i_f64(n1) * pow2i_f64(n.wrapping_sub(n1))
}

/// `lo <= x <= hi` by selects; NaN passes through unchanged.
#[inline(always)]
fn clamp_keep_nan_f32(x: f32, lo: f32, hi: f32) -> f32 {
    let x = if x > hi { hi } else { x };
    if x < lo { lo } else { x }
}

#[inline(always)]
fn clamp_keep_nan_f64(x: f64, lo: f64, hi: f64) -> f64 {
    let x = if x > hi { hi } else { x };
    if x < lo { lo } else { x }
}

// ---------------------------------------------------------------------------------------------
// exp / expm1
// ---------------------------------------------------------------------------------------------

const LOG2E_F32: f32 = std::f32::consts::LOG2_E;
/// `ln 2` split so that `n * LN2_HI_F32` is exact for `|n| < 2^15`.
const LN2_HI_F32: f32 = 0.693359375;
const LN2_LO_F32: f32 = -2.12194440e-4;
/// Largest `x` whose `exp` is finite.
const EXP_HI_F32: f32 = f32::from_bits(0x42b1_7217);
/// Below this `exp` rounds to 0.
const EXP_LO_F32: f32 = -104.0;

/// `expm1(r) - r` for `|r| <= ln2/2`: `r^2 P(r)` (weighted least-squares fit; `r + tail` is
/// within 0.81 ulp of `expm1(r)`).
#[inline(always)]
fn expm1_tail_f32(r: f32) -> f32 {
    let p = 1.990645978366956e-4_f32;
    let p = p * r + 1.3942114310339093e-3;
    let p = p * r + 8.333287201821804e-3;
    let p = p * r + 4.1666340082883835e-2;
    let p = p * r + 1.666666716337204e-1;
    let p = p * r + 0.5;
    (r * r) * p
}

/// `expm1(r)` for `|r| <= ln2/2`.
#[inline(always)]
fn expm1_poly_f32(r: f32) -> f32 {
    expm1_tail_f32(r) + r
}

/// Reduces `x` to `r` in `[-ln2/2, ln2/2]` with `x = n ln2 + r`.
#[inline(always)]
fn exp_reduce_f32(x: f32) -> (f32, i32) {
    let (n, ni) = round_f32(x * LOG2E_F32);
    ((x - n * LN2_HI_F32) - n * LN2_LO_F32, ni)
}

/// `e^x`.
#[inline(always)]
pub(crate) fn exp_f32(x: f32) -> f32 {
    let xc = clamp_keep_nan_f32(x, EXP_LO_F32, EXP_HI_F32);
    let (r, n) = exp_reduce_f32(xc);
    let res = scale_f32(1.0 + expm1_poly_f32(r), n);
    if x > EXP_HI_F32 { f32::INFINITY } else { res }
}

/// `e^x` for `x <= 0` or NaN (softmax's `x - max`, where softmax spends most of its time):
/// [`exp_f32`]'s reduction and polynomial evaluated with fused multiply-adds, no overflow
/// select and a cheaper final scaling; within 1 ulp like [`exp_f32`] (it differs from it in the
/// last bit for some arguments).
///
/// The fused multiply-adds (`f32::mul_add`, one rounding) make softmax's kernel about a third
/// faster on AVX2 / AVX-512 (it is compute-bound there). `mul_add` is correctly rounded on every
/// target, so the result is the same everywhere; the price is on x86-64 without FMA
/// (pre-2013 CPUs, and this crate's baseline copy of the loops), where it is a libm call and
/// the loop does not vectorise: there softmax is several times slower.
///
/// `2^(n + 64)` is normal for every `n` in `[-150, 0]` (`x >= -104`), so `y * 2^(n + 64)` is
/// exact and the multiplication by `2^-64` rounds once, like [`scale_f32`]'s two factors.
/// `-inf` (and anything below -104) is clamped to -104, whose `e^x` rounds to 0.
#[inline(always)]
pub(crate) fn exp_nonpos_f32(x: f32) -> f32 {
    // `x < lo` is false for NaN, which therefore passes through.
    let xc = if x < EXP_LO_F32 { EXP_LO_F32 } else { x };
    let (n, ni) = round_f32(xc * LOG2E_F32);
    // `n * LN2_HI_F32` is exact, so the first step equals `exp_reduce_f32`'s; the second
    // rounds once instead of twice.
    let r = (-n).mul_add(LN2_HI_F32, xc);
    let r = (-n).mul_add(LN2_LO_F32, r);
    let p = 1.990645978366956e-4_f32;
    let p = p.mul_add(r, 1.3942114310339093e-3);
    let p = p.mul_add(r, 8.333287201821804e-3);
    let p = p.mul_add(r, 4.1666340082883835e-2);
    let p = p.mul_add(r, 1.666666716337204e-1);
    let p = p.mul_add(r, 0.5);
    let y = (r * r).mul_add(p, r) + 1.0;
    y * pow2i_f32(ni.wrapping_add(64)) * pow2i_f32(-64)
}

/// `e^x - 1`, accurate near 0.
///
/// With `x = n ln2 + r` and `q = expm1(r) = r + t`, `expm1(x) = (2^n - 1) + 2^n r + 2^n t'`
/// where `t'` is `t` plus the rounding error of the reduction. `2^n - 1` (for `n <= 24`) and
/// `2^n r` are exact and their sum is computed with its rounding error (Fast2Sum: `|2^n - 1|`
/// is the larger), so the only cancellation happens exactly and the result is rounded about
/// once. Rounding `2^n q + (2^n - 1)` directly would lose up to 2 ulp for `n = ±1`.
#[inline(always)]
pub(crate) fn expm1_f32(x: f32) -> f32 {
    let xc = clamp_keep_nan_f32(x, -18.0, EXP_HI_F32);
    let (nf, n) = round_f32(xc * LOG2E_F32);
    let hi = xc - nf * LN2_HI_F32;
    let lo = nf * LN2_LO_F32;
    let r = hi - lo;
    let c = (hi - r) - lo;
    let t = expm1_tail_f32(r);
    let q = r + t;
    let corr = t + c * (1.0 + q);
    let s = pow2i_f32(if n > 24 { 24 } else { n });
    let a = s - 1.0;
    let b = s * r;
    let sum = a + b;
    let err = (a - sum) + b;
    let small = sum + (err + s * corr);
    let large = scale_f32(1.0 + q, n) - 1.0;
    let res = if n > 24 { large } else { small };
    // Keeps the sign of zero (expm1(-0) = -0).
    let res = if x == 0.0 { x } else { res };
    if x > EXP_HI_F32 { f32::INFINITY } else { res }
}

const LOG2E_F64: f64 = std::f64::consts::LOG2_E;
/// fdlibm's split of `ln 2` (`n * LN2_HI_F64` exact for `|n| < 2^20`).
const LN2_HI_F64: f64 = 6.93147180369123816490e-01;
const LN2_LO_F64: f64 = 1.90821492927058770002e-10;
const EXP_HI_F64: f64 = 709.782712893384;
const EXP_LO_F64: f64 = -746.0;

/// `expm1(r) - r` for `|r| <= ln2/2`: `r^2 P(r)` (least-squares fit).
#[inline(always)]
fn expm1_tail_f64(r: f64) -> f64 {
    let p = 2.092245108936371e-09_f64;
    let p = p * r + 2.5110283292392675e-08;
    let p = p * r + 2.7557249278999244e-07;
    let p = p * r + 2.7557240831402144e-06;
    let p = p * r + 2.480158735295105e-05;
    let p = p * r + 1.984126988926659e-04;
    let p = p * r + 1.3888888888870566e-03;
    let p = p * r + 8.333333333320482e-03;
    let p = p * r + 4.166666666666669e-02;
    let p = p * r + 1.6666666666666677e-01;
    let p = p * r + 0.5;
    (r * r) * p
}

/// `expm1(r)` for `|r| <= ln2/2`.
#[inline(always)]
fn expm1_poly_f64(r: f64) -> f64 {
    expm1_tail_f64(r) + r
}

#[inline(always)]
fn exp_reduce_f64(x: f64) -> (f64, i64) {
    let (n, ni) = round_f64(x * LOG2E_F64);
    ((x - n * LN2_HI_F64) - n * LN2_LO_F64, ni)
}

/// `e^x`.
#[inline(always)]
pub(crate) fn exp_f64(x: f64) -> f64 {
    let xc = clamp_keep_nan_f64(x, EXP_LO_F64, EXP_HI_F64);
    let (r, n) = exp_reduce_f64(xc);
    let res = scale_f64(1.0 + expm1_poly_f64(r), n);
    if x > EXP_HI_F64 { f64::INFINITY } else { res }
}

/// `e^x - 1`, accurate near 0 (the scheme of [`expm1_f32`]).
#[inline(always)]
pub(crate) fn expm1_f64(x: f64) -> f64 {
    let xc = clamp_keep_nan_f64(x, -40.0, EXP_HI_F64);
    let (nf, n) = round_f64(xc * LOG2E_F64);
    let hi = xc - nf * LN2_HI_F64;
    let lo = nf * LN2_LO_F64;
    let r = hi - lo;
    let c = (hi - r) - lo;
    let t = expm1_tail_f64(r);
    let q = r + t;
    let corr = t + c * (1.0 + q);
    let s = pow2i_f64(if n > 53 { 53 } else { n });
    let a = s - 1.0;
    let b = s * r;
    let sum = a + b;
    let err = (a - sum) + b;
    let small = sum + (err + s * corr);
    let large = scale_f64(1.0 + q, n) - 1.0;
    let res = if n > 53 { large } else { small };
    let res = if x == 0.0 { x } else { res };
    if x > EXP_HI_F64 { f64::INFINITY } else { res }
}

// ---------------------------------------------------------------------------------------------
// log / log2 / log1p
// ---------------------------------------------------------------------------------------------

/// `x = 2^e m` with `m` in `[sqrt(1/2), sqrt(2))`; returns `(e, log(m))` (fdlibm's scheme:
/// `log(1+f) = f - hfsq + s (hfsq + R(s^2))` with `s = f / (2 + f)`). Only meaningful for
/// positive finite `x`; callers patch the special cases.
#[inline(always)]
fn log_parts_f32(x: f32) -> (f32, f32) {
    let tiny = x < f32::MIN_POSITIVE;
    let xs = if tiny { x * 8_388_608.0 } else { x };
    let bias: i32 = if tiny { -23 } else { 0 };
    let bits = xs.to_bits() as i32;
    let k = bits.wrapping_sub(0x3f35_04f3) >> 23;
    let m = f32::from_bits(bits.wrapping_sub(k << 23) as u32);
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let r = z * (0.666_666_7 + z * (0.4 + z * (0.285_714_3 + z * 0.222_222_22)));
    let hfsq = 0.5 * f * f;
    ((k.wrapping_add(bias)) as f32, f - (hfsq - s * (hfsq + r)))
}

/// The special values of `log`: `-inf` at 0, NaN below 0 and for NaN, `+inf` at `+inf`.
#[inline(always)]
fn log_special_f32(x: f32, res: f32) -> f32 {
    let res = if x == f32::INFINITY {
        f32::INFINITY
    } else {
        res
    };
    let res = if x == 0.0 { f32::NEG_INFINITY } else { res };
    if x < 0.0 || x.is_nan() { f32::NAN } else { res }
}

/// Natural logarithm.
#[inline(always)]
pub(crate) fn log_f32(x: f32) -> f32 {
    let (e, lm) = log_parts_f32(x);
    log_special_f32(x, e * LN2_HI_F32 + (e * LN2_LO_F32 + lm))
}

/// Base-2 logarithm.
#[inline(always)]
pub(crate) fn log2_f32(x: f32) -> f32 {
    let (e, lm) = log_parts_f32(x);
    log_special_f32(x, e + lm * LOG2E_F32)
}

/// `log(1 + x)`, accurate near 0 (`log(u) * x / (u - 1)` with `u = 1 + x`).
#[inline(always)]
pub(crate) fn log1p_f32(x: f32) -> f32 {
    let u = 1.0 + x;
    let lu = log_f32(u);
    let res = if u == 1.0 { x } else { lu * (x / (u - 1.0)) };
    if x == f32::INFINITY {
        f32::INFINITY
    } else {
        res
    }
}

/// fdlibm's minimax coefficients of `R(z)` for `log`.
const LG: [f64; 7] = [
    6.666666666666735130e-01,
    3.999999999940941908e-01,
    2.857142874366239149e-01,
    2.222219843214978396e-01,
    1.818357216161805012e-01,
    1.531383769920937332e-01,
    1.479819860511658591e-01,
];

#[inline(always)]
fn log_parts_f64(x: f64) -> (f64, f64) {
    let tiny = x < f64::MIN_POSITIVE;
    let xs = if tiny {
        x * 18_014_398_509_481_984.0
    } else {
        x
    };
    let bias: i64 = if tiny { -54 } else { 0 };
    let bits = xs.to_bits() as i64;
    let k = bits.wrapping_sub(0x3fe6_a09e_667f_3bcd) >> 52;
    let m = f64::from_bits(bits.wrapping_sub(k << 52) as u64);
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let r = z
        * (LG[0] + z * (LG[1] + z * (LG[2] + z * (LG[3] + z * (LG[4] + z * (LG[5] + z * LG[6]))))));
    let hfsq = 0.5 * f * f;
    ((k.wrapping_add(bias)) as f64, f - (hfsq - s * (hfsq + r)))
}

#[inline(always)]
fn log_special_f64(x: f64, res: f64) -> f64 {
    let res = if x == f64::INFINITY {
        f64::INFINITY
    } else {
        res
    };
    let res = if x == 0.0 { f64::NEG_INFINITY } else { res };
    if x < 0.0 || x.is_nan() { f64::NAN } else { res }
}

/// Natural logarithm.
#[inline(always)]
pub(crate) fn log_f64(x: f64) -> f64 {
    let (e, lm) = log_parts_f64(x);
    log_special_f64(x, e * LN2_HI_F64 + (e * LN2_LO_F64 + lm))
}

/// Base-2 logarithm.
#[inline(always)]
pub(crate) fn log2_f64(x: f64) -> f64 {
    let (e, lm) = log_parts_f64(x);
    log_special_f64(x, e + lm * LOG2E_F64)
}

/// `log(1 + x)`, accurate near 0.
#[inline(always)]
pub(crate) fn log1p_f64(x: f64) -> f64 {
    let u = 1.0 + x;
    let lu = log_f64(u);
    let res = if u == 1.0 { x } else { lu * (x / (u - 1.0)) };
    if x == f64::INFINITY {
        f64::INFINITY
    } else {
        res
    }
}

// ---------------------------------------------------------------------------------------------
// tanh / sigmoid / silu
// ---------------------------------------------------------------------------------------------

/// `tanh(x) = e / (e + 2)` with `e = expm1(2x)`: no cancellation anywhere; beyond |x| = 9 the
/// result is ±1 in `f32`.
#[inline(always)]
pub(crate) fn tanh_f32(x: f32) -> f32 {
    let e = expm1_f32(2.0 * clamp_keep_nan_f32(x, -9.0, 9.0));
    e / (e + 2.0)
}

#[inline(always)]
pub(crate) fn tanh_f64(x: f64) -> f64 {
    let e = expm1_f64(2.0 * clamp_keep_nan_f64(x, -20.0, 20.0));
    e / (e + 2.0)
}

/// `1 / (1 + e^-x)`, PyTorch's formula.
#[inline(always)]
pub(crate) fn sigmoid_f32(x: f32) -> f32 {
    1.0 / (1.0 + exp_f32(-x))
}

#[inline(always)]
pub(crate) fn sigmoid_f64(x: f64) -> f64 {
    1.0 / (1.0 + exp_f64(-x))
}

/// `x / (1 + e^-x)`, PyTorch's formula.
#[inline(always)]
pub(crate) fn silu_f32(x: f32) -> f32 {
    x / (1.0 + exp_f32(-x))
}

#[inline(always)]
pub(crate) fn silu_f64(x: f64) -> f64 {
    x / (1.0 + exp_f64(-x))
}

// ---------------------------------------------------------------------------------------------
// erf / gelu
// ---------------------------------------------------------------------------------------------

/// Below this `|x|` erf uses the odd polynomial, above it `1 - exp(P(|x|))`.
const ERF_SPLIT_F32: f32 = 0.921875;

/// Error function (two weighted least-squares fits: `x + x P(x^2)` near 0 and
/// `1 - exp(Q(|x|))` with `Q ≈ log erfc` above 0.921875; erf is 1 in `f32` beyond 4).
#[inline(always)]
pub(crate) fn erf_f32(x: f32) -> f32 {
    let a = x.abs();
    let s = x * x;
    let p = -6.047158385626972e-4_f32;
    let p = p * s + 5.005626007914543e-3;
    let p = p * s + -2.6776403188705444e-2;
    let p = p * s + 1.1282140016555786e-1;
    let p = p * s + -3.761253356933594e-1;
    let p = p * s + 1.2837916612625122e-1;
    let small = x * p + x;
    let t = if a > 4.0 { 4.0 } else { a };
    let q = -2.1380550606409088e-05_f32;
    let q = q * t + 4.3764879228547215e-4;
    let q = q * t + -4.185959696769714e-3;
    let q = q * t + 2.5157270953059196e-2;
    let q = q * t + -1.0833653807640076e-1;
    let q = q * t + -6.332974433898926e-1;
    let q = q * t + -1.1295385360717773;
    let q = q * t + 1.7942315025720745e-4;
    let big = (1.0 - exp_f32(q)).copysign(x);
    if a <= ERF_SPLIT_F32 { small } else { big }
}

// SAFETY: `erf` from the C math library (which std already links) is a pure function of a
// `double`, with no preconditions.
unsafe extern "C" {
    #[link_name = "erf"]
    safe fn libm_erf(x: f64) -> f64;
}

/// Error function (libm: `f64` is not a performance target, and libm's `erf` is within 1 ulp).
#[inline(always)]
pub(crate) fn erf_f64(x: f64) -> f64 {
    libm_erf(x)
}

/// `x/2 (1 + erf(x / sqrt 2))`, PyTorch's formula for `approximate='none'`.
#[inline(always)]
pub(crate) fn gelu_f32(x: f32) -> f32 {
    x * 0.5 * (1.0 + erf_f32(x * std::f32::consts::FRAC_1_SQRT_2))
}

#[inline(always)]
pub(crate) fn gelu_f64(x: f64) -> f64 {
    x * 0.5 * (1.0 + erf_f64(x * std::f64::consts::FRAC_1_SQRT_2))
}

/// `sqrt(2/pi)`.
const GELU_BETA: f64 = 0.797_884_560_802_865_4;
const GELU_KAPPA: f64 = 0.044715;

/// `x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`, PyTorch's `approximate='tanh'`.
#[inline(always)]
pub(crate) fn gelu_tanh_f32(x: f32) -> f32 {
    let cube = x * x * x;
    let inner = GELU_BETA as f32 * (x + GELU_KAPPA as f32 * cube);
    0.5 * x * (1.0 + tanh_f32(inner))
}

#[inline(always)]
pub(crate) fn gelu_tanh_f64(x: f64) -> f64 {
    let cube = x * x * x;
    let inner = GELU_BETA * (x + GELU_KAPPA * cube);
    0.5 * x * (1.0 + tanh_f64(inner))
}

// ---------------------------------------------------------------------------------------------
// sin / cos / tan (f32)
// ---------------------------------------------------------------------------------------------

/// Beyond this `|x|` the `f32` trigonometric functions defer to libm in `f64`.
pub(crate) const TRIG_LIMIT_F32: f32 = 1_048_576.0;
/// `pi/2` in two parts (33 + 53 bits) for the reduction, done in `f64`.
const PIO2_HI: f64 = 1.5707963267341256;
const PIO2_LO: f64 = 6.077100506506192e-11;

/// `x = q pi/2 + r` with `|r| <= pi/4` (as `f32`) and `q mod 4`; exact enough for
/// `|x| <= TRIG_LIMIT_F32`.
#[inline(always)]
fn trig_reduce_f32(x: f32) -> (f32, u32) {
    let xd = f64::from(x);
    let t = xd * std::f64::consts::FRAC_2_PI + MAGIC_F64;
    let j = t - MAGIC_F64;
    let r = (xd - j * PIO2_HI) - j * PIO2_LO;
    (r as f32, (t.to_bits() as u32) & 3)
}

/// Taylor polynomials of sin and cos on `[-pi/4, pi/4]`.
#[inline(always)]
fn sin_cos_poly_f32(r: f32) -> (f32, f32) {
    let z = r * r;
    let s = -1.0 / 6.0 + z * (1.0 / 120.0 + z * (-1.0 / 5040.0 + z * (1.0 / 362_880.0)));
    let sin = r + r * z * s;
    let c = 1.0 / 24.0 + z * (-1.0 / 720.0 + z * (1.0 / 40_320.0 + z * (-1.0 / 3_628_800.0)));
    let cos = (1.0 - 0.5 * z) + z * z * c;
    (sin, cos)
}

#[inline(always)]
fn flip_sign_if(v: f32, neg: bool) -> f32 {
    f32::from_bits(v.to_bits() ^ (u32::from(neg) << 31))
}

/// `sin` for `|x| <= TRIG_LIMIT_F32` (NaN for infinities).
#[inline(always)]
pub(crate) fn sin_fast_f32(x: f32) -> f32 {
    let (r, q) = trig_reduce_f32(x);
    let (s, c) = sin_cos_poly_f32(r);
    let res = flip_sign_if(if q & 1 == 0 { s } else { c }, q & 2 != 0);
    // The polynomial turns -0 into +0; sin(-0) = -0.
    if x == 0.0 { x } else { res }
}

/// `cos` for `|x| <= TRIG_LIMIT_F32`.
#[inline(always)]
pub(crate) fn cos_fast_f32(x: f32) -> f32 {
    let (r, q) = trig_reduce_f32(x);
    let (s, c) = sin_cos_poly_f32(r);
    flip_sign_if(if q & 1 == 0 { c } else { s }, (q + 1) & 2 != 0)
}

/// `tan` for `|x| <= TRIG_LIMIT_F32`.
#[inline(always)]
pub(crate) fn tan_fast_f32(x: f32) -> f32 {
    let (r, q) = trig_reduce_f32(x);
    let (s, c) = sin_cos_poly_f32(r);
    let res = if q & 1 == 0 { s / c } else { -c / s };
    // tan(-0) = -0.
    if x == 0.0 { x } else { res }
}

/// Whether an `f32` trigonometric argument needs the libm path.
#[inline(always)]
pub(crate) fn trig_needs_slow_f32(x: f32) -> bool {
    x.abs() > TRIG_LIMIT_F32 && x.is_finite()
}

/// `sin` for any `f32`.
#[inline(always)]
pub(crate) fn sin_f32(x: f32) -> f32 {
    if trig_needs_slow_f32(x) {
        f64::from(x).sin() as f32
    } else {
        sin_fast_f32(x)
    }
}

/// `cos` for any `f32`.
#[inline(always)]
pub(crate) fn cos_f32(x: f32) -> f32 {
    if trig_needs_slow_f32(x) {
        f64::from(x).cos() as f32
    } else {
        cos_fast_f32(x)
    }
}

/// `tan` for any `f32`.
#[inline(always)]
pub(crate) fn tan_f32(x: f32) -> f32 {
    if trig_needs_slow_f32(x) {
        f64::from(x).tan() as f32
    } else {
        tan_fast_f32(x)
    }
}

// ---------------------------------------------------------------------------------------------
// Generic access
// ---------------------------------------------------------------------------------------------

/// Floating-point compute types (`f32`, `f64`) and their elementwise functions, for kernels
/// written once for both. Method names avoid std's inherent ones on purpose: in generic code
/// only these are visible, in concrete code call the free functions.
pub(crate) trait Float: crate::num::Num + Copy {
    /// `e^x`.
    fn exp_(self) -> Self;
    /// `e^x - 1`.
    fn expm1_(self) -> Self;
    /// `ln x`.
    fn log_(self) -> Self;
    /// `log2 x`.
    fn log2_(self) -> Self;
    /// `ln(1 + x)`.
    fn log1p_(self) -> Self;
    /// `sin x`.
    fn sin_(self) -> Self;
    /// `cos x`.
    fn cos_(self) -> Self;
    /// `tan x`.
    fn tan_(self) -> Self;
    /// `tanh x`.
    fn tanh_(self) -> Self;
    /// `1 / (1 + e^-x)`.
    fn sigmoid_(self) -> Self;
    /// `x sigmoid(x)`.
    fn silu_(self) -> Self;
    /// `erf x`.
    fn erf_(self) -> Self;
    /// Exact GELU.
    fn gelu_(self) -> Self;
    /// Tanh-approximated GELU.
    fn gelu_tanh_(self) -> Self;
    /// `sqrt x`.
    fn sqrt_(self) -> Self;
    /// `1 / sqrt x`.
    fn rsqrt_(self) -> Self;
    /// `1 / x`.
    fn recip_(self) -> Self;
    /// `atan2(self, o)`.
    #[allow(dead_code)] // for the binary operators
    fn atan2_(self, o: Self) -> Self;
    /// `self^o`.
    #[allow(dead_code)] // for the binary operators
    fn powf_(self, o: Self) -> Self;
    /// `fmod(self, o)`.
    #[allow(dead_code)] // for the binary operators
    fn fmod_(self, o: Self) -> Self;
    /// Round half to even.
    fn round_even_(self) -> Self;
    /// From an `f64` (rounding).
    fn from_f64_(v: f64) -> Self;
    /// Bit pattern with sign flipped when `neg`.
    #[allow(dead_code)] // for the binary operators
    fn copysign_(self, sign: Self) -> Self;
}

macro_rules! float_impl {
    ($t:ty, $exp:ident, $expm1:ident, $log:ident, $log2:ident, $log1p:ident, $sin:expr, $cos:expr, $tan:expr,
     $tanh:ident, $sigmoid:ident, $silu:ident, $erf:ident, $gelu:ident, $gelu_tanh:ident) => {
        impl Float for $t {
            #[inline(always)]
            fn exp_(self) -> Self {
                $exp(self)
            }
            #[inline(always)]
            fn expm1_(self) -> Self {
                $expm1(self)
            }
            #[inline(always)]
            fn log_(self) -> Self {
                $log(self)
            }
            #[inline(always)]
            fn log2_(self) -> Self {
                $log2(self)
            }
            #[inline(always)]
            fn log1p_(self) -> Self {
                $log1p(self)
            }
            #[inline(always)]
            fn sin_(self) -> Self {
                $sin(self)
            }
            #[inline(always)]
            fn cos_(self) -> Self {
                $cos(self)
            }
            #[inline(always)]
            fn tan_(self) -> Self {
                $tan(self)
            }
            #[inline(always)]
            fn tanh_(self) -> Self {
                $tanh(self)
            }
            #[inline(always)]
            fn sigmoid_(self) -> Self {
                $sigmoid(self)
            }
            #[inline(always)]
            fn silu_(self) -> Self {
                $silu(self)
            }
            #[inline(always)]
            fn erf_(self) -> Self {
                $erf(self)
            }
            #[inline(always)]
            fn gelu_(self) -> Self {
                $gelu(self)
            }
            #[inline(always)]
            fn gelu_tanh_(self) -> Self {
                $gelu_tanh(self)
            }
            #[inline(always)]
            fn sqrt_(self) -> Self {
                self.sqrt()
            }
            #[inline(always)]
            fn rsqrt_(self) -> Self {
                1.0 / self.sqrt()
            }
            #[inline(always)]
            fn recip_(self) -> Self {
                1.0 / self
            }
            #[inline(always)]
            fn atan2_(self, o: Self) -> Self {
                self.atan2(o)
            }
            #[inline(always)]
            fn powf_(self, o: Self) -> Self {
                self.powf(o)
            }
            #[inline(always)]
            fn fmod_(self, o: Self) -> Self {
                self % o
            }
            #[inline(always)]
            fn round_even_(self) -> Self {
                self.round_ties_even()
            }
            #[inline(always)]
            fn from_f64_(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn copysign_(self, sign: Self) -> Self {
                self.copysign(sign)
            }
        }
    };
}

float_impl!(
    f32,
    exp_f32,
    expm1_f32,
    log_f32,
    log2_f32,
    log1p_f32,
    sin_f32,
    cos_f32,
    tan_f32,
    tanh_f32,
    sigmoid_f32,
    silu_f32,
    erf_f32,
    gelu_f32,
    gelu_tanh_f32
);
float_impl!(
    f64,
    exp_f64,
    expm1_f64,
    log_f64,
    log2_f64,
    log1p_f64,
    f64::sin,
    f64::cos,
    f64::tan,
    tanh_f64,
    sigmoid_f64,
    silu_f64,
    erf_f64,
    gelu_f64,
    gelu_tanh_f64
);

#[cfg(test)]
mod tests {
    use super::*;

    /// Distance in units of the last place between `a` and the correctly rounded `f32` of
    /// `exact` (an `f64` reference).
    fn ulps_f32(a: f32, exact: f64) -> f64 {
        if a.is_nan() && exact.is_nan() {
            return 0.0;
        }
        if a.is_infinite() || exact.is_infinite() {
            return if f64::from(a) == exact || (exact as f32) == a {
                0.0
            } else {
                f64::INFINITY
            };
        }
        let r = exact as f32;
        let ulp = f64::from(f32::from_bits(r.abs().to_bits() + 1) - r.abs())
            .max(f64::from(f32::from_bits(1)));
        (f64::from(a) - exact).abs() / ulp
    }

    fn ulps_f64(a: f64, exact: f64) -> f64 {
        if a.is_nan() && exact.is_nan() {
            return 0.0;
        }
        if a == exact {
            return 0.0;
        }
        if a.is_infinite() || exact.is_infinite() {
            return f64::INFINITY;
        }
        let ulp = (f64::from_bits(exact.abs().to_bits() + 1) - exact.abs()).max(f64::from_bits(1));
        (a - exact).abs() / ulp
    }

    /// A dense deterministic sweep of `f32` values in `[lo, hi]` plus special values.
    fn sweep_f32(lo: f32, hi: f32, n: usize) -> Vec<f32> {
        let mut v: Vec<f32> = (0..=n)
            .map(|i| lo + (hi - lo) * (i as f32 / n as f32))
            .collect();
        v.extend([
            0.0,
            -0.0,
            1e-30,
            -1e-30,
            1e-8,
            -1e-8,
            1e-40,
            f32::MIN_POSITIVE,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
        ]);
        v
    }

    fn sweep_f64(lo: f64, hi: f64, n: usize) -> Vec<f64> {
        let mut v: Vec<f64> = (0..=n)
            .map(|i| lo + (hi - lo) * (i as f64 / n as f64))
            .collect();
        v.extend([
            0.0,
            -0.0,
            1e-300,
            -1e-300,
            1e-17,
            -1e-17,
            5e-320,
            f64::MIN_POSITIVE,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ]);
        v
    }

    thread_local! {
        /// The functions of the running test that exceeded their tolerance.
        static FAILURES: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
    }

    /// Panics listing every function that exceeded its tolerance.
    fn assert_no_failures() {
        let failures = FAILURES.with(|f| std::mem::take(&mut *f.borrow_mut()));
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    fn check_f32(
        name: &str,
        f: impl Fn(f32) -> f32,
        reference: impl Fn(f64) -> f64,
        xs: &[f32],
        max_ulps: f64,
    ) {
        let mut worst = (0.0, 0.0f32);
        for &x in xs {
            let e = ulps_f32(f(x), reference(f64::from(x)));
            if e > worst.0 || e.is_nan() {
                worst = (e, x);
            }
        }
        let report = format!(
            "{name}: {} ulps at x = {:e} (got {:e}, want {:e})",
            worst.0,
            worst.1,
            f(worst.1),
            reference(f64::from(worst.1))
        );
        println!("{report}");
        if worst.0.is_nan() || worst.0 > max_ulps {
            FAILURES.with(|f| f.borrow_mut().push(report));
        }
    }

    fn check_f64(
        name: &str,
        f: impl Fn(f64) -> f64,
        reference: impl Fn(f64) -> f64,
        xs: &[f64],
        max_ulps: f64,
    ) {
        let mut worst = (0.0, 0.0f64);
        for &x in xs {
            let e = ulps_f64(f(x), reference(x));
            if e > worst.0 || e.is_nan() {
                worst = (e, x);
            }
        }
        let report = format!(
            "{name}: {} ulps at x = {:e} (got {:e}, want {:e})",
            worst.0,
            worst.1,
            f(worst.1),
            reference(worst.1)
        );
        println!("{report}");
        if worst.0.is_nan() || worst.0 > max_ulps {
            FAILURES.with(|f| f.borrow_mut().push(report));
        }
    }

    /// [`exp_nonpos_f32`] in a loop compiled with FMA (vectorised `vfmadd`), for comparison
    /// with the baseline build's libm `fmaf` calls.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn exp_nonpos_fma_hw(xs: &[f32], out: &mut [f32]) {
        for (o, x) in out.iter_mut().zip(xs) {
            *o = exp_nonpos_f32(*x);
        }
    }

    #[test]
    fn exp_nonpos_is_accurate_and_machine_independent() {
        // Every 37th f32 in [-104, 0] (about 30 million values), then the edges: within 1 ulp
        // of the correctly rounded e^x, and the same bits from hardware FMA as from the
        // baseline build's `mul_add`.
        let lo = (-104.0f32).to_bits();
        let hi = (-0.0f32).to_bits();
        let xs: Vec<f32> = (hi..=lo)
            .step_by(37)
            .chain([hi, lo, lo - 1, hi + 1])
            .map(f32::from_bits)
            .chain([
                0.0, -0.0, -1e-30, -1e-45, -87.3, -87.4, -103.9, -103.97, -104.0,
            ])
            .collect();
        assert!(xs.len() > 20_000_000);
        check_f32("exp_nonpos dense", exp_nonpos_f32, f64::exp, &xs, 1.0);
        #[cfg(target_arch = "x86_64")]
        if has_avx2() {
            let mut hw = vec![0.0f32; xs.len()];
            // SAFETY: the CPU has AVX2 and FMA.
            unsafe { exp_nonpos_fma_hw(&xs, &mut hw) };
            for (x, h) in xs.iter().zip(&hw) {
                assert_eq!(exp_nonpos_f32(*x).to_bits(), h.to_bits(), "x = {x:e}");
            }
        }
        // Below -104 (and -inf) the result is 0, like e^x rounded; NaN stays NaN.
        for x in [-104.5, -1e30, f32::NEG_INFINITY] {
            assert_eq!(exp_nonpos_f32(x), 0.0, "x = {x:e}");
        }
        assert!(exp_nonpos_f32(f32::NAN).is_nan());
        // Denormal results are rounded once (the largest gap from libm is well under 1 ulp).
        check_f32(
            "exp_nonpos",
            exp_nonpos_f32,
            f64::exp,
            &sweep_f32(-104.0, 0.0, 400_000)
                .into_iter()
                .filter(|x| *x <= 0.0 || x.is_nan())
                .collect::<Vec<_>>(),
            1.0,
        );
        assert_no_failures();
    }

    #[test]
    fn f32_functions_are_accurate() {
        let wide = sweep_f32(-110.0, 90.0, 400_000);
        check_f32("exp", exp_f32, f64::exp, &wide, 1.0);
        check_f32("expm1", expm1_f32, f64::exp_m1, &wide, 1.5);
        check_f32(
            "expm1 small",
            expm1_f32,
            f64::exp_m1,
            &sweep_f32(-1e-3, 1e-3, 100_000),
            1.5,
        );
        let pos: Vec<f32> = sweep_f32(-1.0, 5.0, 200_000)
            .into_iter()
            .chain((0..2000).map(|i| 1.7f32.powi(i - 1000)))
            .collect();
        check_f32("log", log_f32, f64::ln, &pos, 2.0);
        check_f32("log2", log2_f32, f64::log2, &pos, 2.0);
        check_f32("log1p", log1p_f32, f64::ln_1p, &pos, 2.5);
        check_f32(
            "log1p small",
            log1p_f32,
            f64::ln_1p,
            &sweep_f32(-1e-3, 1e-3, 100_000),
            2.5,
        );
        let trig = sweep_f32(-100.0, 100.0, 400_000);
        check_f32("sin", sin_f32, f64::sin, &trig, 2.0);
        check_f32("cos", cos_f32, f64::cos, &trig, 2.0);
        check_f32("tan", tan_f32, f64::tan, &trig, 3.5);
        check_f32(
            "sin big",
            sin_f32,
            f64::sin,
            &[1e6, -3e5, 1e7, 1e30, 12345.678],
            1.5,
        );
        check_f32(
            "tanh",
            tanh_f32,
            f64::tanh,
            &sweep_f32(-12.0, 12.0, 400_000),
            3.0,
        );
        check_f32(
            "tanh small",
            tanh_f32,
            f64::tanh,
            &sweep_f32(-1e-2, 1e-2, 100_000),
            3.0,
        );
        check_f32(
            "erf",
            erf_f32,
            |x| libm_erf(x),
            &sweep_f32(-5.0, 5.0, 400_000),
            2.0,
        );
        check_f32(
            "erf small",
            erf_f32,
            |x| libm_erf(x),
            &sweep_f32(-1e-3, 1e-3, 100_000),
            2.0,
        );
        assert_no_failures();
    }

    #[test]
    fn f64_functions_are_accurate() {
        let wide = sweep_f64(-750.0, 712.0, 400_000);
        check_f64("exp", exp_f64, f64::exp, &wide, 1.0);
        check_f64("expm1", expm1_f64, f64::exp_m1, &wide, 1.0);
        check_f64(
            "expm1 small",
            expm1_f64,
            f64::exp_m1,
            &sweep_f64(-1e-3, 1e-3, 100_000),
            1.0,
        );
        let pos: Vec<f64> = sweep_f64(-1.0, 5.0, 200_000)
            .into_iter()
            .chain((0..2000).map(|i| 1.7f64.powi(i - 1000)))
            .collect();
        check_f64("log", log_f64, f64::ln, &pos, 2.0);
        check_f64("log2", log2_f64, f64::log2, &pos, 2.0);
        check_f64("log1p", log1p_f64, f64::ln_1p, &pos, 2.0);
        check_f64(
            "tanh",
            tanh_f64,
            f64::tanh,
            &sweep_f64(-25.0, 25.0, 400_000),
            3.0,
        );
        check_f64(
            "tanh small",
            tanh_f64,
            f64::tanh,
            &sweep_f64(-1e-2, 1e-2, 100_000),
            3.0,
        );
        assert_no_failures();
    }

    #[test]
    fn slice_loops_match_scalar_calls() {
        let xs: Vec<f32> = (0..1000).map(|i| (i as f32 - 500.0) * 0.173).collect();
        let mut out = vec![0.0f32; xs.len()];
        map1(&xs, &mut out, &|x| exp_f32(x));
        assert!(
            xs.iter()
                .zip(&out)
                .all(|(x, y)| exp_f32(*x).to_bits() == y.to_bits())
        );
        let mut buf = xs.clone();
        map1_inplace(&mut buf, &|x| tanh_f32(x));
        assert!(
            xs.iter()
                .zip(&buf)
                .all(|(x, y)| tanh_f32(*x).to_bits() == y.to_bits())
        );
        map2(&xs, &buf, &mut out, &|a, b| a * b);
        assert!(out.iter().enumerate().all(|(i, y)| *y == xs[i] * buf[i]));
        let mut acc = xs.clone();
        map2_inplace(&mut acc, &buf, &|a, b| a + b);
        assert!(acc.iter().enumerate().all(|(i, y)| *y == xs[i] + buf[i]));
    }
}
