//! CPU kernels of batch normalization (`_native_batch_norm_legit*`, `native_batch_norm.out`)
//! and of the fused moving-average observer with fake quantization
//! (`_fused_moving_avg_obs_fq_helper`).
//!
//! Both are small per-channel computations. The kernels read their tensors as `f64`, compute
//! in `f64` and round to the type PyTorch computes or stores in after each step (`f64` holds
//! every product and quotient of two `f32` exactly enough for one rounding to give the `f32`
//! result), so they follow PyTorch's arithmetic: batch norm's statistics accumulate in
//! `double` for `float` inputs and are stored in the parameters' type, the normalization of
//! a contiguous input is `x * alpha + beta` with per-channel `alpha`, `beta` (PyTorch's
//! `batch_norm_cpu_contiguous_impl`), of another layout `((x - mean) * invstd) * w + b`.
//! Results are written through `copy_`, so any layout and dtype of the destination works.

use switchyard_core::element::Element;
use switchyard_core::half::{bf16, f16};
use switchyard_core::{
    Error, ErrorKind, MemoryFormat, Result, Scalar, ScalarType, Tensor, torch_check,
};
use switchyard_ops::meta::{BatchNormInfo, batch_norm_checks, fused_moving_avg_obs_fq_checks};
use switchyard_ops::native::{batch_norm_prepare_outs, batch_norm_stat_sizes};
use switchyard_ops::op;

/// `x` rounded to `dtype` (a float type; others pass through).
fn rnd(dtype: ScalarType, x: f64) -> f64 {
    match dtype {
        ScalarType::Float => x as f32 as f64,
        ScalarType::Half => f16::from_f64_lossy(x).to_f64(),
        ScalarType::BFloat16 => bf16::from_f64_lossy(x).to_f64(),
        _ => x,
    }
}

/// PyTorch's `opmath_type`: reduced floats compute in `float`.
fn opmath(dtype: ScalarType) -> ScalarType {
    match dtype {
        ScalarType::Half | ScalarType::BFloat16 => ScalarType::Float,
        d => d,
    }
}

/// A contiguous `f64` tensor of `values` converted to `dtype` (the values are already
/// rounded to it, so the conversion is exact).
fn tensor_of(values: Vec<f64>, sizes: &[i64], dtype: ScalarType) -> Result<Tensor> {
    let t = Tensor::from_vec(values, sizes)?;
    if dtype == ScalarType::Double {
        return Ok(t);
    }
    op::_to_copy::call(&t, Some(dtype), None, None, None, false, None)
}

/// Writes `values` (row-major, `dst`'s shape) into `dst`.
fn write_into(dst: &Tensor, values: Vec<f64>) -> Result<()> {
    let src = Tensor::from_vec(values, &dst.sizes())?;
    op::copy_::call(dst, &src, false).map(drop)
}

/// The first `n` values of `t` in row-major order.
fn first_values(t: &Tensor, n: usize) -> Result<Vec<f64>> {
    let mut v = t.to_f64_vec()?;
    v.truncate(n);
    Ok(v)
}

fn not_implemented(name: &str, dtype: ScalarType) -> Error {
    Error::new(
        ErrorKind::NotImplementedError,
        format!("\"{name}\" not implemented for '{dtype}'"),
    )
}

/// The results of one batch-norm evaluation, before they are written anywhere.
struct BatchNormResult {
    /// The normalized input, row-major, rounded to the input's dtype.
    output: Vec<f64>,
    /// Per-channel mean and inverse standard deviation (training), in the parameters' dtype.
    save_mean: Vec<f64>,
    save_invstd: Vec<f64>,
    /// The updated running statistics (training with statistics).
    running: Option<(Vec<f64>, Vec<f64>)>,
}

/// `batch_norm_cpu_out`'s computation: statistics (training) or the running statistics
/// (evaluation), the new running statistics, the normalized input.
#[allow(clippy::too_many_arguments)]
fn batch_norm_compute(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
    info: &BatchNormInfo,
) -> Result<BatchNormResult> {
    let dtype = input.dtype();
    let param = info.param_dtype;
    let op_t = opmath(dtype);
    let c = usize::try_from(info.channels).map_err(|_| Error::runtime("negative channels"))?;
    let sizes = input.sizes();
    let numel = usize::try_from(input.numel()).map_err(|_| Error::runtime("negative numel"))?;
    // Row-major input as [outer, c, inner].
    let inner: usize = sizes[2..].iter().map(|&s| s as usize).product();
    let outer = sizes[0] as usize;
    let x = input.to_f64_vec()?;
    let at = |o: usize, ch: usize, i: usize| x[(o * c + ch) * inner + i];
    let contiguous = input.is_contiguous();
    let per_channel = outer * inner;
    let n = per_channel as f64;
    let w = weight.map(|t| first_values(t, c)).transpose()?;
    let b = bias.map(|t| first_values(t, c)).transpose()?;
    let rm = running_mean.map(|t| first_values(t, c)).transpose()?;
    let rv = running_var.map(|t| first_values(t, c)).transpose()?;

    let mut save_mean = Vec::new();
    let mut save_invstd = Vec::new();
    let mut running = None;
    // Per-channel mean and inverse standard deviation used to normalize.
    let (mean_c, invstd_c): (Vec<f64>, Vec<f64>) = if training {
        let mut new_rm = Vec::with_capacity(c);
        let mut new_rv = Vec::with_capacity(c);
        for ch in 0..c {
            // The sum accumulates in `double` (PyTorch's CPU `acc_type` of float and double).
            let mut sum = 0.0f64;
            for o in 0..outer {
                for i in 0..inner {
                    sum += at(o, ch, i);
                }
            }
            let mean = rnd(param, sum / n);
            // Contiguous: `(x - mean)²` in the input's arithmetic, summed in `double` and
            // stored in the parameters' type; otherwise all in `double`.
            let mut var_sum = 0.0f64;
            for o in 0..outer {
                for i in 0..inner {
                    let v = at(o, ch, i);
                    var_sum += if contiguous {
                        let d = rnd(op_t, v - mean);
                        rnd(op_t, d * d)
                    } else {
                        (v - mean) * (v - mean)
                    };
                }
            }
            let (var, var_sum) = if contiguous {
                let vs = rnd(param, var_sum);
                (rnd(op_t, vs / n), vs)
            } else {
                (var_sum / n, var_sum)
            };
            let invstd = if var != 0.0 || eps != 0.0 {
                rnd(param, 1.0 / (var + eps).sqrt())
            } else {
                0.0
            };
            save_mean.push(mean);
            save_invstd.push(invstd);
            if let (Some(rm), Some(rv)) = (&rm, &rv) {
                let unbiased = if contiguous {
                    rnd(op_t, var_sum / (n - 1.0))
                } else {
                    var_sum / (n - 1.0)
                };
                if contiguous && op_t == ScalarType::Float {
                    let m = rnd(op_t, momentum);
                    let one_m = rnd(op_t, 1.0 - m);
                    new_rm.push(rnd(
                        param,
                        rnd(op_t, rnd(op_t, m * mean) + rnd(op_t, one_m * rm[ch])),
                    ));
                    // `momentum_ * unbiased_var` is a float times a double.
                    new_rv.push(rnd(param, m * unbiased + rnd(op_t, one_m * rv[ch])));
                } else {
                    new_rm.push(rnd(param, momentum * mean + (1.0 - momentum) * rm[ch]));
                    new_rv.push(rnd(param, momentum * unbiased + (1.0 - momentum) * rv[ch]));
                }
            }
        }
        if rm.is_some() {
            running = Some((new_rm, new_rv));
        }
        (save_mean.clone(), save_invstd.clone())
    } else {
        // Evaluation: the running statistics, checked present by `batch_norm_checks`.
        let (Some(rm), Some(rv)) = (&rm, &rv) else {
            return Err(Error::runtime(
                "internal error: evaluation without running statistics",
            ));
        };
        let invstd = rv
            .iter()
            .map(|&v| {
                if contiguous {
                    let s = rnd(op_t, rnd(op_t, v + rnd(op_t, eps)).sqrt());
                    rnd(op_t, 1.0 / s)
                } else {
                    // `1 / at::sqrt(running_var + eps)` as tensor operations in the
                    // parameters' dtype.
                    let s = rnd(param, rnd(param, v + eps).sqrt());
                    rnd(param, 1.0 / s)
                }
            })
            .collect();
        (rm.clone(), invstd)
    };

    let mut output = Vec::with_capacity(numel);
    if contiguous {
        // `alpha = invstd * w`, `beta = b - mean * alpha`, then `x * alpha + beta`.
        let (alpha, beta): (Vec<f64>, Vec<f64>) = (0..c)
            .map(|ch| {
                let wv = w.as_ref().map_or(1.0, |w| w[ch]);
                let bv = b.as_ref().map_or(0.0, |b| b[ch]);
                let a = rnd(op_t, invstd_c[ch] * wv);
                (a, rnd(op_t, bv - rnd(op_t, mean_c[ch] * a)))
            })
            .unzip();
        for o in 0..outer {
            for ch in 0..c {
                for i in 0..inner {
                    let y = rnd(op_t, rnd(op_t, at(o, ch, i) * alpha[ch]) + beta[ch]);
                    output.push(rnd(dtype, y));
                }
            }
        }
    } else {
        for o in 0..outer {
            for ch in 0..c {
                let wv = w.as_ref().map_or(1.0, |w| w[ch]);
                let bv = b.as_ref().map_or(0.0, |b| b[ch]);
                for i in 0..inner {
                    let centered = rnd(op_t, at(o, ch, i) - mean_c[ch]);
                    let scaled = rnd(op_t, centered * invstd_c[ch]);
                    let y = rnd(op_t, rnd(op_t, scaled * wv) + bv);
                    output.push(rnd(dtype, y));
                }
            }
        }
    }
    Ok(BatchNormResult {
        output,
        save_mean,
        save_invstd,
        running,
    })
}

/// Runs batch norm and updates the running statistics in place.
#[allow(clippy::too_many_arguments)]
fn run_batch_norm(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<(BatchNormInfo, BatchNormResult)> {
    // The shared checks, the dtype coverage in PyTorch's place among them.
    let info = batch_norm_checks(input, weight, bias, running_mean, running_var, training)?;
    let r = batch_norm_compute(
        input,
        weight,
        bias,
        running_mean,
        running_var,
        training,
        momentum,
        eps,
        &info,
    )?;
    if let (Some((new_rm, new_rv)), Some(rm), Some(rv)) = (&r.running, running_mean, running_var) {
        write_first(rm, new_rm)?;
        write_first(rv, new_rv)?;
    }
    Ok((info, r))
}

/// Writes `values` into the first elements (row-major) of `dst`, leaving the rest.
fn write_first(dst: &Tensor, values: &[f64]) -> Result<()> {
    let mut all = dst.to_f64_vec()?;
    all[..values.len()].copy_from_slice(values);
    write_into(dst, all)
}

/// The functional results: a contiguous output of the input's dtype and the statistics
/// (empty in evaluation) of the parameters' dtype.
fn functional_outputs(
    input: &Tensor,
    info: &BatchNormInfo,
    training: bool,
    r: BatchNormResult,
) -> Result<(Tensor, Tensor, Tensor)> {
    let stat = batch_norm_stat_sizes(info, training);
    Ok((
        tensor_of(r.output, &input.sizes(), input.dtype())?,
        tensor_of(r.save_mean, &stat, info.param_dtype)?,
        tensor_of(r.save_invstd, &stat, info.param_dtype)?,
    ))
}

/// `_native_batch_norm_legit` (PyTorch's `_batch_norm_legit_cpu`, i.e. `batch_norm_cpu`).
pub fn _batch_norm_legit_cpu(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: &Tensor,
    running_var: &Tensor,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    let (info, r) = run_batch_norm(
        input,
        weight,
        bias,
        Some(running_mean),
        Some(running_var),
        training,
        momentum,
        eps,
    )?;
    functional_outputs(input, &info, training, r)
}

/// `_native_batch_norm_legit.no_stats`.
pub fn _batch_norm_legit_no_stats_cpu(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    let (info, r) = run_batch_norm(input, weight, bias, None, None, training, momentum, eps)?;
    functional_outputs(input, &info, training, r)
}

/// `native_batch_norm.out` (PyTorch's `batch_norm_cpu_out`): `out` is resized to the input's
/// sizes, the statistics to one value per channel in training (in evaluation they are left
/// as they are).
pub fn batch_norm_cpu_out(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
    out: &Tensor,
    save_mean: &Tensor,
    save_invstd: &Tensor,
) -> Result<(Tensor, Tensor, Tensor)> {
    // The shared checks, the dtype coverage in PyTorch's place among them.
    let info = batch_norm_checks(input, weight, bias, running_mean, running_var, training)?;
    batch_norm_prepare_outs(input, &info, training, out, save_mean, save_invstd)?;
    let (_, r) = run_batch_norm(
        input,
        weight,
        bias,
        running_mean,
        running_var,
        training,
        momentum,
        eps,
    )?;
    if training {
        write_into(save_mean, r.save_mean)?;
        write_into(save_invstd, r.save_invstd)?;
    }
    write_into(out, r.output)?;
    Ok((out.clone(), save_mean.clone(), save_invstd.clone()))
}

/// `_native_batch_norm_legit.out`.
pub fn _batch_norm_legit_cpu_out(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: &Tensor,
    running_var: &Tensor,
    training: bool,
    momentum: f64,
    eps: f64,
    out: &Tensor,
    save_mean: &Tensor,
    save_invstd: &Tensor,
) -> Result<(Tensor, Tensor, Tensor)> {
    batch_norm_cpu_out(
        input,
        weight,
        bias,
        Some(running_mean),
        Some(running_var),
        training,
        momentum,
        eps,
        out,
        save_mean,
        save_invstd,
    )
}

/// `_native_batch_norm_legit.no_stats_out`.
pub fn _batch_norm_legit_no_stats_cpu_out(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
    out: &Tensor,
    save_mean: &Tensor,
    save_invstd: &Tensor,
) -> Result<(Tensor, Tensor, Tensor)> {
    batch_norm_cpu_out(
        input,
        weight,
        bias,
        None,
        None,
        training,
        momentum,
        eps,
        out,
        save_mean,
        save_invstd,
    )
}

// ---------------------------------------------------------------------------------------------
// _fused_moving_avg_obs_fq_helper
// ---------------------------------------------------------------------------------------------

/// fbgemm's `ChooseQuantizationParams` (what PyTorch's CPU observer calls when built with
/// fbgemm): the `[min, max]` range widened to contain 0 (made symmetric first for
/// `preserve_sparsity`), a `float` scale of at least `6.1e-5` (0.1 when it would be 0 or its
/// reciprocal infinite), and the integer zero point nearest to the one derived from whichever
/// end of the range has the smaller error, clamped to `[qmin, qmax]`.
pub fn choose_quantization_params(
    min: f32,
    max: f32,
    qmin: i32,
    qmax: i32,
    preserve_sparsity: bool,
) -> (f32, i32) {
    const SMALL_SCALE_THRESHOLD: f32 = 6.1e-5;
    let (mut min, mut max) = (min, max);
    if min < 0.0 && max > 0.0 && preserve_sparsity {
        let symmetric_qmin = -(qmax.wrapping_sub(qmin) / 2 + 1);
        let symmetric_qmax = qmax.wrapping_sub(qmin) / 2;
        let max_scale = f64::from(
            (min / symmetric_qmin as f32)
                .abs()
                .max((max / symmetric_qmax as f32).abs()),
        );
        min = (max_scale * f64::from(symmetric_qmin)) as f32;
        max = (max_scale * f64::from(symmetric_qmax)) as f32;
    }
    min = min.min(0.0);
    max = max.max(0.0);
    let range = f64::from(qmax.wrapping_sub(qmin));
    let mut scale = ((f64::from(max) - f64::from(min)) / range) as f32;
    if scale == 0.0 || (1.0f32 / scale).is_infinite() {
        scale = 0.1;
    }
    if scale < SMALL_SCALE_THRESHOLD {
        let org_scale = scale;
        scale = SMALL_SCALE_THRESHOLD;
        let span = qmax.wrapping_sub(qmin) as f32;
        if min == 0.0 {
            max = SMALL_SCALE_THRESHOLD * span;
        } else if max == 0.0 {
            min = -SMALL_SCALE_THRESHOLD * span;
        } else {
            let amplifier = SMALL_SCALE_THRESHOLD / org_scale;
            min *= amplifier;
            max *= amplifier;
        }
    }
    let s = f64::from(scale);
    let from_min = f64::from(qmin) - f64::from(min) / s;
    let from_max = f64::from(qmax) - f64::from(max) / s;
    let from_min_error = f64::from(qmin).abs() + (f64::from(min) / s).abs();
    let from_max_error = f64::from(qmax).abs() + (f64::from(max) / s).abs();
    let mut initial = if from_min_error < from_max_error {
        from_min
    } else {
        from_max
    };
    if min < 0.0 && max > 0.0 && preserve_sparsity {
        initial = f64::from(qmin.wrapping_add(qmax)) / 2.0;
    }
    let zero_point = if initial < f64::from(qmin) {
        qmin
    } else if initial > f64::from(qmax) {
        qmax
    } else {
        // `nearbyint` to an `int32_t`: round half to even.
        initial.round_ties_even() as i32
    };
    (scale, zero_point)
}

/// PyTorch's `data_ptr<float>()` check on a tensor the observer reads or writes as `float`.
fn check_float(t: &Tensor) -> Result<()> {
    torch_check!(
        t.dtype() == ScalarType::Float,
        "expected scalar type Float but found {}",
        t.dtype()
    );
    Ok(())
}

/// The element count `t` must have for the observer to index it (PyTorch reads and writes
/// past the end of a shorter tensor).
fn check_len(t: &Tensor, name: &str, n: i64) -> Result<()> {
    torch_check!(
        t.numel() >= n,
        "fused_moving_avg_obs_fake_quant: {name} has {} elements but the observer needs {n}",
        t.numel()
    );
    Ok(())
}

/// `item()` of a one-element flag as PyTorch's `toInt()`: nonzero means on.
fn flag_on(t: &Tensor) -> Result<bool> {
    Ok(match t.item_scalar()? {
        Scalar::Bool(b) => b,
        Scalar::Int(i) => i != 0,
        // `toInt()` truncates toward zero.
        Scalar::Float(f) => f.trunc() != 0.0,
    })
}

/// C++'s `static_cast<int64_t>` of a floating value as x86 computes it: NaN and values out
/// of range give the "integer indefinite" `INT64_MIN` (Rust's `as` would saturate).
fn to_i64(x: f64) -> i64 {
    // 2^63: the first value past `i64::MAX` (every `i64` below it is representable).
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if x.is_nan() || !(-LIMIT..LIMIT).contains(&x) {
        i64::MIN
    } else {
        x as i64
    }
}

/// One fake-quantized element and its mask bit (PyTorch's `_fake_quantize_tensor_helper` and
/// the integer-zero-point case of its per-channel kernel): `q = zp + nearbyint(x / scale)`
/// (multiplied by the `float` reciprocal; a `float` for `float` and reduced inputs, a
/// `double` for `double` ones), clamped to `[qmin, qmax]`, back to `(q - zp) * scale`; the mask
/// says whether `q` was in range.
#[allow(clippy::too_many_arguments)]
fn fake_quant_int_zp(
    x: f64,
    double: bool,
    per_channel: bool,
    inv_scale: f32,
    scale: f32,
    zp: i64,
    qmin: i64,
    qmax: i64,
) -> (f64, bool) {
    let q = if double {
        zp as f64 + (x * f64::from(inv_scale)).round_ties_even()
    } else {
        f64::from(zp as f32 + (x as f32 * inv_scale).round_ties_even())
    };
    let qval = to_i64(q.max(qmin as f64).min(qmax as f64));
    // Per tensor `(qval - zp) * scale` is an integer times a `float`: a `float`, whatever the
    // input; per channel the clamp is a `double` and so is the product for `double` inputs.
    let out = if double && per_channel {
        qval.wrapping_sub(zp) as f64 * f64::from(scale)
    } else {
        f64::from(qval.wrapping_sub(zp) as f32 * scale)
    };
    let mask = if double {
        qmin as f64 <= q && q <= qmax as f64
    } else {
        qmin as f32 <= q as f32 && q as f32 <= qmax as f32
    };
    (out, mask)
}

/// The same with a floating zero point (per channel only): `lrintf(zp + x / scale)` in
/// `float`, as the affine quantizer rounds.
fn fake_quant_float_zp(
    x: f64,
    double: bool,
    inv_scale: f32,
    scale: f32,
    zp: f32,
    qmin: i64,
    qmax: i64,
) -> (f64, bool) {
    let q = to_i64(f64::from((zp + x as f32 * inv_scale).round_ties_even()));
    let clamped = (q as f64).max(qmin as f64).min(qmax as f64);
    let out = if double {
        (clamped - f64::from(zp)) * f64::from(scale)
    } else {
        f64::from((clamped as f32 - zp) * scale)
    };
    (out, qmin <= q && q <= qmax)
}

/// The fake-quantized input and its mask, per tensor (`scale`, `zero_point` one value) or per
/// channel along `axis`.
fn fake_quantize(
    x: &Tensor,
    scales: &[f64],
    zero_points: &[f64],
    zp_is_float: bool,
    axis: Option<usize>,
    qmin: i64,
    qmax: i64,
) -> Result<(Tensor, Tensor)> {
    let dtype = x.dtype();
    let sizes = x.sizes();
    let values = x.to_f64_vec()?;
    let inner: usize = match axis {
        Some(a) => sizes[a + 1..].iter().map(|&s| s as usize).product(),
        None => 1,
    };
    let channels = axis.map_or(1, |a| sizes[a] as usize);
    let mut out = Vec::with_capacity(values.len());
    let mut mask = Vec::with_capacity(values.len());
    for (i, &v) in values.iter().enumerate() {
        let ch = if axis.is_some() {
            (i / inner) % channels
        } else {
            0
        };
        let scale = scales[ch] as f32;
        let inv_scale = 1.0f32 / scale;
        let double = dtype == ScalarType::Double;
        let (o, m) = if zp_is_float {
            fake_quant_float_zp(
                v,
                double,
                inv_scale,
                scale,
                zero_points[ch] as f32,
                qmin,
                qmax,
            )
        } else {
            fake_quant_int_zp(
                v,
                double,
                axis.is_some(),
                inv_scale,
                scale,
                zero_points[ch] as i64,
                qmin,
                qmax,
            )
        };
        out.push(rnd(dtype, o));
        mask.push(m);
    }
    // `empty_like(self, MemoryFormat::Preserve)`: a dense input's strides are kept.
    let like = |dtype| {
        op::empty_like::call(
            x,
            Some(dtype),
            None,
            None,
            None,
            Some(MemoryFormat::Preserve),
        )
    };
    let (output, mask_t) = (like(dtype)?, like(ScalarType::Bool)?);
    write_into(&output, out)?;
    let mask_src = Tensor::from_vec(mask, &sizes)?;
    op::copy_::call(&mask_t, &mask_src, false)?;
    Ok((output, mask_t))
}

/// `_fused_moving_avg_obs_fq_helper` (PyTorch's `fused_moving_avg_obs_fake_quant_cpu`): when
/// `observer_on`, the running minimum and maximum move towards the input's (per tensor, or per
/// row of the input with `ch_axis` moved first when `per_row_fake_quant`; an infinite running
/// value is replaced outright); when `fake_quant_on`, scale and zero point are chosen from
/// them (written into `scale` / `zero_point`) and the input is fake-quantized, else it is
/// returned as is with an all-true mask. The arguments are read and written in PyTorch's
/// order, so tensors passed several times (A.11's F6) give PyTorch's eager results.
pub fn fused_moving_avg_obs_fake_quant_cpu(
    self_: &Tensor,
    observer_on: &Tensor,
    fake_quant_on: &Tensor,
    running_min: &Tensor,
    running_max: &Tensor,
    scale: &Tensor,
    zero_point: &Tensor,
    averaging_const: f64,
    quant_min: i64,
    quant_max: i64,
    ch_axis: i64,
    per_row_fake_quant: bool,
    symmetric_quant: bool,
) -> Result<(Tensor, Tensor)> {
    fused_moving_avg_obs_fq_checks(self_, observer_on, fake_quant_on, ch_axis)?;
    let observe = flag_on(observer_on)?;
    // The observed tensor: per row, the input with `ch_axis` first, flattened to 2-d.
    let y = if per_row_fake_quant {
        let ndim = self_.dim();
        let axis = usize::try_from(ch_axis).map_err(|_| {
            Error::new(
                ErrorKind::IndexError,
                format!(
                    "Dimension out of range (expected to be in range of [-{ndim}, {}], but got {ch_axis})",
                    ndim.saturating_sub(1)
                ),
            )
        })?;
        let y = if ndim != 2 {
            let mut perm: Vec<i64> = (0..ndim as i64).collect();
            perm.swap(0, axis);
            op::flatten_using_ints::call(&op::permute::call(self_, &perm)?, 1, -1)?
        } else {
            self_.clone()
        };
        let size = self_.size(ch_axis)?;
        if running_min.numel() == 0 {
            op::fill__Scalar::call(
                &op::resize_::call(running_min, &[size], None)?,
                Scalar::Float(f64::INFINITY),
            )?;
            op::fill__Scalar::call(
                &op::resize_::call(running_max, &[size], None)?,
                Scalar::Float(f64::NEG_INFINITY),
            )?;
            op::resize_::call(scale, &[size], None)?;
            op::resize_::call(zero_point, &[size], None)?;
        }
        y
    } else {
        self_.clone()
    };
    if observe {
        let (x_min, x_max) = if per_row_fake_quant {
            torch_check!(
                ch_axis == 0,
                "Per-channel FakeQuant in fused_moving_avg_obs_fake_quant is only supported on axis == 0"
            );
            op::aminmax::call(&y, Some(1), false)?
        } else {
            op::aminmax::call(&y, None, false)?
        };
        check_float(&x_min)?;
        check_float(running_min)?;
        check_float(running_max)?;
        let n = x_min.numel();
        check_len(running_min, "running_min", n)?;
        check_len(running_max, "running_max", n)?;
        let (mins, maxs) = (x_min.to_f64_vec()?, x_max.to_f64_vec()?);
        let ac = averaging_const as f32;
        let moved = |running: f32, current: f32| {
            if running.is_infinite() {
                current
            } else {
                running + ac * (current - running)
            }
        };
        // Element by element, minimum then maximum, as PyTorch's loop (the two may be the
        // same tensor).
        for i in 0..n as usize {
            let i64_i = i as i64;
            let rmin = element(running_min, i64_i)? as f32;
            set_element(running_min, i64_i, f64::from(moved(rmin, mins[i] as f32)))?;
            let rmax = element(running_max, i64_i)? as f32;
            set_element(running_max, i64_i, f64::from(moved(rmax, maxs[i] as f32)))?;
        }
    }
    if !flag_on(fake_quant_on)? {
        let mask = op::ones_like::call(self_, Some(ScalarType::Bool), None, None, None, None)?;
        return Ok((op::clone::call(self_, None)?, mask));
    }
    // PyTorch passes the quantization range to `ChooseQuantizationParams` as `int`s.
    let (qmin, qmax) = (quant_min as i32, quant_max as i32);
    if per_row_fake_quant {
        check_float(running_min)?;
        check_float(running_max)?;
        let n = running_min.numel();
        for i in 0..n {
            let (lo, hi) = (
                element(running_min, i)? as f32,
                element(running_max, i)? as f32,
            );
            let (s, z) = choose_quantization_params(lo, hi, qmin, qmax, symmetric_quant);
            index_put(scale, i, f64::from(s))?;
            index_put(zero_point, i, f64::from(z))?;
        }
        per_channel_checks(self_, scale, zero_point, ch_axis, quant_min, quant_max)?;
        let axis = ch_axis as usize;
        let scales = scale.to_f64_vec()?;
        let zps = zero_point.to_f64_vec()?;
        fake_quantize(
            self_,
            &scales,
            &zps,
            zero_point.dtype().is_floating_point(),
            Some(axis),
            quant_min,
            quant_max,
        )
    } else {
        let lo = running_min.item_scalar()?.to_f64() as f32;
        let hi = running_max.item_scalar()?.to_f64() as f32;
        let (s, z) = choose_quantization_params(lo, hi, qmin, qmax, symmetric_quant);
        index_put(scale, 0, f64::from(s))?;
        index_put(zero_point, 0, f64::from(z))?;
        torch_check!(
            quant_min <= quant_max,
            "`quant_min` should be less than or         equal to `quant_max`."
        );
        if !matches!(
            self_.dtype(),
            ScalarType::Half | ScalarType::BFloat16 | ScalarType::Float | ScalarType::Double
        ) {
            return Err(not_implemented(
                "fake_quantize_tensor_cachemask_kernel_type_handling",
                self_.dtype(),
            ));
        }
        // `scale.item().toFloat()`, `zero_point.item().toInt()`.
        let sc = scale.item_scalar()?.to_f64() as f32;
        let zp = match zero_point.item_scalar()? {
            Scalar::Float(f) => f.trunc(),
            other => other.to_f64(),
        };
        fake_quantize(
            self_,
            &[f64::from(sc)],
            &[zp],
            false,
            None,
            quant_min,
            quant_max,
        )
    }
}

/// `fake_quantize_per_channel_affine_cachemask`'s checks.
fn per_channel_checks(
    self_: &Tensor,
    scale: &Tensor,
    zero_point: &Tensor,
    axis: i64,
    quant_min: i64,
    quant_max: i64,
) -> Result<()> {
    torch_check!(
        matches!(scale.dtype(), ScalarType::Float | ScalarType::BFloat16),
        "Scale must be Float or BFloat16, found {}",
        scale.dtype()
    );
    torch_check!(
        matches!(
            zero_point.dtype(),
            ScalarType::Int | ScalarType::Float | ScalarType::Half
        ),
        "Zero-point must be Int32, Float or Half, found {}",
        zero_point.dtype()
    );
    torch_check!(scale.dim() == 1, "scale should be a 1-D tensor");
    torch_check!(zero_point.dim() == 1, "zero point should be a 1-D tensor");
    torch_check!(
        scale.numel() == zero_point.numel(),
        "scale and zero-point need to have the same dimensions"
    );
    torch_check!(
        scale.numel() == self_.size(axis)?,
        "dimensions of scale and zero-point are not consistent with input tensor"
    );
    torch_check!(
        quant_min <= quant_max,
        "`quant_min` should be less than or         equal to `quant_max`."
    );
    if !zero_point.dtype().is_floating_point() {
        let zps = zero_point.to_f64_vec()?;
        let lo = zps.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = zps.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        torch_check!(
            lo >= quant_min as f64 && hi <= quant_max as f64,
            "`zero_point` must be between `quant_min` and `quant_max`."
        );
    }
    torch_check!(
        axis >= 0 && axis <= self_.dim() as i64,
        "`axis` must be between 0 and number of dimensions of input"
    );
    if !self_.dtype().is_floating_point() {
        return Err(not_implemented(
            "fake_quantize_channel_cachemask_cpu_type_handling",
            self_.dtype(),
        ));
    }
    Ok(())
}

/// The one-element view of `t`'s memory `i` elements past its first, as PyTorch's
/// `data_ptr<float>()[i]` reaches it (the tensor's strides play no part).
fn raw_element(t: &Tensor, i: i64) -> Result<Tensor> {
    op::as_strided::call(t, &[], &[], Some(t.storage_offset() + i))
}

/// Element `i` of `t`'s memory (see [`raw_element`]) as `f64`.
fn element(t: &Tensor, i: i64) -> Result<f64> {
    Ok(raw_element(t, i)?.item_scalar()?.to_f64())
}

/// Writes element `i` of `t`'s memory (see [`raw_element`]).
fn set_element(t: &Tensor, i: i64, v: f64) -> Result<()> {
    op::fill__Scalar::call(&raw_element(t, i)?, Scalar::Float(v)).map(drop)
}

/// PyTorch's `t[i] = v` on a 1-d-indexable tensor (`index 1 is out of bounds for dimension 0
/// with size 1` past its end).
fn index_put(t: &Tensor, i: i64, v: f64) -> Result<()> {
    let target = op::select_int::call(t, 0, i)?;
    let value = if t.dtype().is_floating_point() {
        Scalar::Float(v)
    } else {
        Scalar::Int(v as i64)
    };
    op::fill__Scalar::call(&target, value).map(drop)
}
