//! Random number distributions of the CPU kernels.
//!
//! Every sampler here draws from a [`Generator`]'s mt19937 stream exactly as PyTorch's CPU
//! kernels do (`DistributionsHelper.h`, `cpu/DistributionTemplates.h`), and fills elements in
//! the order PyTorch's TensorIterator visits them, so that after the same `manual_seed` a
//! switchyard program gets PyTorch's numbers:
//!
//! * uniform reals take the low 24 (`f32` math) or 53 (`f64` math, from two 32-bit draws) bits
//!   of a draw, scale them to `[0, 1)` and map them with one fused multiply-add;
//! * `normal_` on a contiguous tensor of 16 or more elements fills it with uniforms first and
//!   then applies the Box–Muller transform to blocks of 16 (the last block recomputed from
//!   fresh draws when the size is not a multiple of 16); in `f32` math this is PyTorch's AVX2
//!   kernel, whose `log` / `sincos` approximations (`avx_mathfun.h`) are reproduced operation
//!   by operation, including the multiply-adds the compiler fused;
//! * every other normal sample uses `f64` Box–Muller with the second value of each pair cached
//!   in the generator;
//! * integers are `draw % range + base`.

use crate::loops::Plan;
use smallvec::SmallVec;
use switchyard_core::element::Element;
use switchyard_core::generator::GeneratorState;
use switchyard_core::shape::DimVec;
use switchyard_core::{Access, Error, Result, Tensor, with_tensors};
use switchyard_ops::meta::index_support::stride_order;

// ---------------------------------------------------------------------------------------------
// Scalar samplers
// ---------------------------------------------------------------------------------------------

/// A uniform `f32` in `[0, 1)` from the low 24 bits of one draw.
#[inline]
pub(crate) fn u01_f32(s: &mut GeneratorState) -> f32 {
    (s.random() & 0x00ff_ffff) as f32 * (1.0 / 16_777_216.0)
}

/// A uniform `f64` in `[0, 1)` from the low 53 bits of a 64-bit draw.
#[inline]
pub(crate) fn u01_f64(s: &mut GeneratorState) -> f64 {
    (s.random64() & ((1u64 << 53) - 1)) as f64 * (1.0 / 9_007_199_254_740_992.0)
}

/// One `f64` normal sample (Box–Muller), caching the pair's second value in the generator.
pub(crate) fn normal_f64(s: &mut GeneratorState, mean: f64, std: f64) -> f64 {
    if let Some(v) = s.next_double_normal_sample.take() {
        return v.mul_add(std, mean);
    }
    let u1 = u01_f64(s);
    let u2 = u01_f64(s);
    let r = (-2.0 * (-u2).ln_1p()).sqrt();
    let theta = 2.0 * std::f64::consts::PI * u1;
    s.next_double_normal_sample = Some(r * theta.sin());
    (r * theta.cos()).mul_add(std, mean)
}

// ---------------------------------------------------------------------------------------------
// Box–Muller on blocks of 16 (PyTorch's NormalFill16)
// ---------------------------------------------------------------------------------------------

/// The `f32` constants of `avx_mathfun.h`, rounded from the same double literals.
// The literals are kept digit for digit as in the C source (which is what rounds to these
// exact `f32`s), hence the allowances.
#[allow(clippy::excessive_precision, clippy::approx_constant)]
mod cephes {
    pub(super) const SQRTHF: f32 = 0.707_106_781_186_547_524_f64 as f32;
    pub(super) const LOG_P: [f32; 9] = [
        7.037_683_629_2E-2_f64 as f32,
        -1.151_461_031_0E-1_f64 as f32,
        1.167_699_874_0E-1_f64 as f32,
        -1.242_014_084_6E-1_f64 as f32,
        1.424_932_278_7E-1_f64 as f32,
        -1.666_805_766_5E-1_f64 as f32,
        2.000_071_476_5E-1_f64 as f32,
        -2.499_999_399_3E-1_f64 as f32,
        3.333_333_117_4E-1_f64 as f32,
    ];
    pub(super) const LOG_Q1: f32 = -2.121_944_40e-4_f64 as f32;
    pub(super) const LOG_Q2: f32 = 0.693_359_375_f64 as f32;
    pub(super) const DP1: f32 = -0.785_156_25_f64 as f32;
    pub(super) const DP2: f32 = -2.418_756_484_985_351_562_5e-4_f64 as f32;
    pub(super) const DP3: f32 = -3.774_894_977_445_941_08e-8_f64 as f32;
    pub(super) const SIN_P: [f32; 3] = [
        -1.951_529_589_1E-4_f64 as f32,
        8.332_160_873_6E-3_f64 as f32,
        -1.666_665_461_1E-1_f64 as f32,
    ];
    pub(super) const COS_P: [f32; 3] = [
        2.443_315_711_809_948E-005_f64 as f32,
        -1.388_731_625_493_765E-003_f64 as f32,
        4.166_664_568_298_827E-002_f64 as f32,
    ];
    pub(super) const FOPI: f32 = 1.273_239_544_735_16_f64 as f32;
}

/// `log256_ps` for one lane (valid for the `(0, 1]` inputs Box–Muller feeds it).
fn log_ps(x: f32) -> f32 {
    use cephes::*;
    let invalid = x <= 0.0;
    let x = if x.is_nan() {
        x
    } else {
        x.max(f32::from_bits(0x0080_0000))
    };
    let e = ((x.to_bits() >> 23) as i32 - 0x7f) as f32 + 1.0;
    let x = f32::from_bits((x.to_bits() & !0x7f80_0000) | 0.5f32.to_bits());
    let below = x < SQRTHF;
    let tmp = if below { x } else { 0.0 };
    let x = x - 1.0;
    let e = e - if below { 1.0 } else { 0.0 };
    let x = x + tmp;
    let z = x * x;
    let mut y = LOG_P[0];
    for p in &LOG_P[1..] {
        y = y.mul_add(x, *p);
    }
    let y = y * x;
    let y = y.mul_add(z, e * LOG_Q1);
    let y = z.mul_add(-0.5, y);
    let x = e.mul_add(LOG_Q2, x + y);
    if invalid { f32::NAN } else { x }
}

/// `sincos256_ps` for one lane: `(sin x, cos x)`.
fn sincos_ps(x: f32) -> (f32, f32) {
    use cephes::*;
    let mut sign_sin = x.to_bits() & 0x8000_0000;
    let x = f32::from_bits(x.to_bits() & 0x7fff_ffff);
    let j = ((x * FOPI) as i32).wrapping_add(1) & !1;
    let y = j as f32;
    let swap_sign_sin = ((j & 4) as u32) << 29;
    let poly = (j & 2) == 0;
    let x = y.mul_add(DP1, x);
    let x = y.mul_add(DP2, x);
    let x = y.mul_add(DP3, x);
    let sign_cos = ((!(j.wrapping_sub(2)) & 4) as u32) << 29;
    sign_sin ^= swap_sign_sin;
    let z = x * x;
    let yc = COS_P[0].mul_add(z, COS_P[1]).mul_add(z, COS_P[2]) * z;
    let yc = yc.mul_add(z, -(z * 0.5)) + 1.0;
    let ys = SIN_P[0].mul_add(z, SIN_P[1]).mul_add(z, SIN_P[2]) * z;
    let ys = ys.mul_add(x, x);
    // Select with masks as the vector code does (`+ 0.0` and `- self` included).
    let (ysin1, ysin2) = if poly { (0.0, ys) } else { (yc, 0.0) };
    let s = ysin1 + ysin2;
    let c = (yc - ysin1) + (ys - ysin2);
    (
        f32::from_bits(s.to_bits() ^ sign_sin),
        f32::from_bits(c.to_bits() ^ sign_cos),
    )
}

/// PyTorch's AVX2 `NormalFill16<float>`: 8 pairs of uniforms in `d[..8]` / `d[8..16]`
/// become 16 normal samples.
fn normal_fill16_f32(d: &mut [f32], mean: f32, std: f32) {
    let two_pi = (2.0 * std::f64::consts::PI) as f32;
    for j in 0..8 {
        let u1 = 1.0 - d[j];
        let u2 = d[j + 8];
        let radius = (-2.0 * log_ps(u1)).sqrt();
        let (s, c) = sincos_ps(two_pi * u2);
        d[j] = (radius * c).mul_add(std, mean);
        d[j + 8] = (radius * s).mul_add(std, mean);
    }
}

/// PyTorch's scalar `NormalFill16<double>`.
fn normal_fill16_f64(d: &mut [f64], mean: f64, std: f64) {
    for j in 0..8 {
        let u1 = 1.0 - d[j];
        let u2 = d[j + 8];
        let radius = (-2.0 * u1.ln()).sqrt();
        let theta = 2.0 * std::f64::consts::PI * u2;
        d[j] = (radius * theta.cos()).mul_add(std, mean);
        d[j + 8] = (radius * theta.sin()).mul_add(std, mean);
    }
}

/// Fills a contiguous run of `T`s with normal samples the way PyTorch's `normal_fill` does
/// (math in `f32`, or `f64` for `f64` tensors).
fn normal_fill_contiguous<T: Element>(
    data: &mut [T::Repr],
    s: &mut GeneratorState,
    mean: f64,
    std: f64,
) -> Result<()> {
    let n = data.len();
    if T::DTYPE == switchyard_core::ScalarType::Double {
        let mut buf = [0f64; 16];
        let mut block = |data: &mut [T::Repr], at: usize, s: &mut GeneratorState, fresh: bool| {
            for (j, b) in buf.iter_mut().enumerate() {
                *b = if fresh {
                    u01_f64(s)
                } else {
                    T::from_repr(data[at + j]).to_f64()
                };
            }
            normal_fill16_f64(&mut buf, mean, std);
            for (j, b) in buf.iter().enumerate() {
                data[at + j] = T::from_f64_lossy(*b).to_repr();
            }
        };
        // Uniforms go into the output first; blocks then transform them in place.
        for d in data.iter_mut() {
            *d = T::from_f64_lossy(u01_f64(s)).to_repr();
        }
        let mut i = 0;
        while i + 16 <= n {
            block(data, i, s, false);
            i += 16;
        }
        if n % 16 != 0 {
            block(data, n - 16, s, true);
        }
        return Ok(());
    }
    let (mean, std) = (mean as f32, std as f32);
    let mut buf = [0f32; 16];
    let mut block = |data: &mut [T::Repr], at: usize, s: &mut GeneratorState| {
        for b in buf.iter_mut() {
            *b = u01_f32(s);
        }
        normal_fill16_f32(&mut buf, mean, std);
        for (j, b) in buf.iter().enumerate() {
            data[at + j] = T::from_f64_lossy(f64::from(*b)).to_repr();
        }
    };
    if T::DTYPE == switchyard_core::ScalarType::Float {
        // f32 draws every uniform up front (into the output), then transforms.
        let mut uniforms: Vec<f32> =
            switchyard_core::alloc::try_collect((0..n).map(|_| u01_f32(s)))?;
        let mut i = 0;
        while i + 16 <= n {
            normal_fill16_f32(&mut uniforms[i..i + 16], mean, std);
            i += 16;
        }
        for (d, u) in data.iter_mut().zip(&uniforms) {
            *d = T::from_f64_lossy(f64::from(*u)).to_repr();
        }
        if n % 16 != 0 {
            block(data, n - 16, s);
        }
        return Ok(());
    }
    // 16-bit floats draw and transform block by block in an f32 buffer.
    let mut i = 0;
    while i + 16 <= n {
        block(data, i, s);
        i += 16;
    }
    if n % 16 != 0 {
        block(data, n - 16, s);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Filling tensors in TensorIterator order
// ---------------------------------------------------------------------------------------------

/// A plan visiting `sizes` in the order TensorIterator would for operands with the given
/// strides (output first): dimensions sorted by stride, fastest innermost.
fn iteration_plan(sizes: &[i64], strides: &[&[i64]], offsets: &[i64]) -> Plan {
    let order = stride_order(sizes, strides);
    let shape: DimVec = order.iter().rev().map(|d| sizes[*d]).collect();
    let permuted: SmallVec<[DimVec; 4]> = strides
        .iter()
        .map(|st| order.iter().rev().map(|d| st[*d]).collect())
        .collect();
    Plan {
        numel: sizes.iter().map(|s| (*s).max(0) as usize).product(),
        shape,
        strides: permuted,
        offsets: offsets.iter().copied().collect(),
    }
}

fn out_of_range() -> Error {
    Error::runtime("internal error: random fill addressed memory outside the tensor's storage")
}

/// Writes `next()` to every element of `t` in TensorIterator order.
pub(crate) fn fill_in_order<T: Element>(
    t: &Tensor,
    mut next: impl FnMut() -> Result<T>,
) -> Result<()> {
    if t.numel() == 0 {
        return Ok(());
    }
    let plan = iteration_plan(&t.sizes(), &[&t.strides()], &[t.storage_offset()]);
    with_tensors(&[(t, Access::Write)], |data| {
        let dst = crate::loops::typed_mut::<T>(data.bytes_mut(0)?)?;
        let stride = plan.inner_stride(0);
        let mut result = Ok(());
        plan.for_each_run(0, plan.numel, |offs, len| {
            for j in 0..len as i64 {
                if result.is_err() {
                    return;
                }
                let slot = usize::try_from(offs[0] + j * stride)
                    .ok()
                    .and_then(|o| dst.get_mut(o));
                result = match (slot, next()) {
                    (Some(d), Ok(v)) => {
                        *d = v.to_repr();
                        Ok(())
                    }
                    (None, _) => Err(out_of_range()),
                    (_, Err(e)) => Err(e),
                };
            }
        });
        result
    })
}

/// Writes `f(p[i])` to every element `i` of `t`, visiting `t` and `p` (broadcast to `t`'s
/// shape, given as `p_strides`) in TensorIterator order.
pub(crate) fn fill_from<T: Element, P: Element>(
    t: &Tensor,
    p: &Tensor,
    p_strides: &[i64],
    mut f: impl FnMut(P) -> Result<T>,
) -> Result<()> {
    if t.numel() == 0 {
        return Ok(());
    }
    let plan = iteration_plan(
        &t.sizes(),
        &[&t.strides(), p_strides],
        &[t.storage_offset(), p.storage_offset()],
    );
    with_tensors(&[(t, Access::Write), (p, Access::Read)], |data| {
        let (mut written, shared) = data.split_host_mut(&[0])?;
        let src = crate::loops::typed::<P>(shared[1].ok_or_else(out_of_range)?)?;
        let dst = crate::loops::typed_mut::<T>(written[0])?;
        let (ts, ps) = (plan.inner_stride(0), plan.inner_stride(1));
        let mut result = Ok(());
        plan.for_each_run(0, plan.numel, |offs, len| {
            for j in 0..len as i64 {
                if result.is_err() {
                    return;
                }
                let pv = usize::try_from(offs[1] + j * ps)
                    .ok()
                    .and_then(|o| src.get(o))
                    .copied();
                let slot = usize::try_from(offs[0] + j * ts)
                    .ok()
                    .and_then(|o| dst.get_mut(o));
                result = match (slot, pv) {
                    (Some(d), Some(pv)) => f(P::from_repr(pv)).map(|v| *d = v.to_repr()),
                    _ => Err(out_of_range()),
                };
            }
        });
        result
    })
}

/// Fills `t` (a floating dtype) with uniform samples from `[from, to)`; a sample that rounds
/// up to `to` in `t`'s dtype becomes `from`, as in PyTorch.
pub(crate) fn uniform<T: Element>(
    t: &Tensor,
    s: &mut GeneratorState,
    from: f64,
    to: f64,
) -> Result<()> {
    let (from_t, to_t) = (
        T::from_f64_lossy(from as f32 as f64),
        T::from_f64_lossy(to as f32 as f64),
    );
    if T::DTYPE == switchyard_core::ScalarType::Double {
        let (from_t, to_t) = (T::from_f64_lossy(from), T::from_f64_lossy(to));
        return fill_in_order(t, || {
            let v = T::from_f64_lossy(u01_f64(s).mul_add(to - from, from));
            Ok(if v == to_t { from_t } else { v })
        });
    }
    let (from32, to32) = (from as f32, to as f32);
    fill_in_order(t, || {
        let v = T::from_f64_lossy(f64::from(u01_f32(s).mul_add(to32 - from32, from32)));
        Ok(if v == to_t { from_t } else { v })
    })
}

/// Fills `t` (a floating dtype) with normal samples.
pub(crate) fn normal<T: Element>(
    t: &Tensor,
    s: &mut GeneratorState,
    mean: f64,
    std: f64,
) -> Result<()> {
    let n = t.numel();
    if n >= 16 && t.is_contiguous() {
        let offset = usize::try_from(t.storage_offset()).map_err(|_| out_of_range())?;
        let n = usize::try_from(n).map_err(|_| out_of_range())?;
        return with_tensors(&[(t, Access::Write)], |data| {
            let dst = crate::loops::typed_mut::<T>(data.bytes_mut(0)?)?;
            let run = dst.get_mut(offset..offset + n).ok_or_else(out_of_range)?;
            normal_fill_contiguous::<T>(run, s, mean, std)
        });
    }
    fill_in_order(t, || Ok(T::from_f64_lossy(normal_f64(s, mean, std))))
}

/// Fills `t` with Bernoulli(`p`) samples (0 or 1 in `t`'s dtype).
pub(crate) fn bernoulli_scalar<T: Element>(
    t: &Tensor,
    s: &mut GeneratorState,
    p: f64,
) -> Result<()> {
    let (one, zero) = (T::from_i64_lossy(1), T::from_i64_lossy(0));
    fill_in_order(t, || Ok(if u01_f64(s) < p { one } else { zero }))
}

/// The error of a probability outside `[0, 1]` in `bernoulli_(p_tensor)`.
pub(crate) fn bad_probability() -> Error {
    Error::runtime(
        "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message be improved?  If so, please report an enhancement request to PyTorch.)",
    )
}

/// Fills `t` with Bernoulli(`p[i]`) samples; `f64` probabilities draw 53-bit uniforms, the
/// other float dtypes 24-bit ones.
pub(crate) fn bernoulli_tensor<T: Element, P: Element>(
    t: &Tensor,
    p: &Tensor,
    p_strides: &[i64],
    s: &mut GeneratorState,
) -> Result<()> {
    let (one, zero) = (T::from_i64_lossy(1), T::from_i64_lossy(0));
    let double = P::DTYPE == switchyard_core::ScalarType::Double;
    fill_from(t, p, p_strides, |pv: P| {
        let pv = pv.to_f64();
        let hit = if double {
            if !(0.0..=1.0).contains(&pv) {
                return Err(bad_probability());
            }
            u01_f64(s) < pv
        } else {
            let pf = pv as f32;
            if !(0.0..=1.0).contains(&pf) {
                return Err(bad_probability());
            }
            u01_f32(s) < pf
        };
        Ok(if hit { one } else { zero })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_and_sincos_approximate_libm() {
        for i in 1..1000 {
            let x = i as f32 / 1000.0;
            assert!((log_ps(x) - x.ln()).abs() < 1e-6, "log {x}");
            let t = x * std::f32::consts::TAU;
            let (s, c) = sincos_ps(t);
            assert!(
                (s - t.sin()).abs() < 1e-6 && (c - t.cos()).abs() < 1e-6,
                "sincos {t}"
            );
        }
    }
}
