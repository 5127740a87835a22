//! CPU kernels: losses (`mse_loss`, `nll_loss_forward`), 2-d pooling (`avg_pool2d`,
//! `max_pool2d_with_indices`), `native_layer_norm` and `native_dropout`.
//!
//! Where PyTorch's result depends on the order and precision of its arithmetic (the cascade
//! sum of `nll_loss`, the window sums of `avg_pool2d`), the kernels follow the same order
//! and round to the element type where PyTorch does, so results match exactly; `f16`/`bf16`
//! compute in `f32`.

use super::linalg::not_implemented;
use crate::loops::{self, typed, typed_mut};
use crate::num::{Num, dispatch_compute};
use crate::parallel;
use crate::reduce_loops::{RowParams, SoftFloat, layer_norm_rows};
use crate::stream::STREAM_BYTES;
use std::mem::MaybeUninit;
use switchyard_core::element::{Element, convert};
use switchyard_core::half::{bf16, f16};
use switchyard_core::shape::DimVec;
use switchyard_core::{
    Access, Error, Result, ScalarType, Tensor, dispatch_dtype, torch_check, torch_check_index,
    with_tensors,
};
use switchyard_ops::iter_meta::IterInfo;
use switchyard_ops::meta::Pool2dParams;
use switchyard_ops::op;
use switchyard_ops::structured::Meta;

/// Work below this many elements stays on the calling thread.
const GRAIN: usize = 32_768;

/// Binds `$S` to the element type of a floating `$dtype`; other dtypes are PyTorch's
/// `"<name>" not implemented for '<dtype>'` error.
macro_rules! dispatch_float {
    ($dtype:expr, $name:expr, $S:ident => $body:expr) => {
        match $dtype {
            ScalarType::Half => {
                type $S = f16;
                $body
            }
            ScalarType::BFloat16 => {
                type $S = bf16;
                $body
            }
            ScalarType::Float => {
                type $S = f32;
                $body
            }
            ScalarType::Double => {
                type $S = f64;
                $body
            }
            other => Err(not_implemented($name, other)),
        }
    };
}

/// `x` rounded to `S` (computing in `f64` and rounding after each operation reproduces `S`'s
/// own arithmetic exactly: `f64` has more than twice the precision of every float type).
#[inline(always)]
fn round<S: Element>(x: f64) -> f64 {
    S::from_f64_lossy(x).to_f64()
}

/// Writes `data` (row-major, `out`'s shape) into `out`, whatever `out`'s layout and dtype.
fn store<T: Element>(out: &Tensor, data: Vec<T>) -> Result<()> {
    let tmp = Tensor::from_vec(data, &out.sizes())?;
    loops::map::<T, T, 1>(out, [&tmp], |[x]| x)
}

// ---------------------------------------------------------------------------------------
// mse_loss
// ---------------------------------------------------------------------------------------

/// `mse_loss.out`: `(self - target)²`, or its mean / sum (`reduction` 1 / 2), as PyTorch's
/// `mse_loss_out`: the squares are computed in the common dtype and then cast to `out`; a
/// reduction runs `mean.out` / `sum.IntList_out` over them into `out`, so a wider `out`
/// accumulates in its own dtype.
pub fn mse_loss_out(
    meta: &Meta<IterInfo>,
    self_: &Tensor,
    target: &Tensor,
    reduction: i64,
    out: &Tensor,
) -> Result<()> {
    let common = meta.extra.common_dtype;
    dispatch_float!(common, "mse_cpu", S => {
        // PyTorch computes `diff = a - b` and `diff * diff` in `S`, rounding after each.
        let square = |[a, b]: [f64; 2]| {
            let d = round::<S>(a - b);
            round::<S>(d * d)
        };
        if reduction == 0 {
            return loops::map::<f64, f64, 2>(out, [self_, target], square);
        }
        let shape = switchyard_core::shape::infer_size(&self_.sizes(), &target.sizes())?;
        let loss = Tensor::allocate(&shape, common, self_.device())?;
        loops::map::<f64, f64, 2>(&loss, [self_, target], square)?;
        if reduction == 1 {
            op::mean_out::call(&loss, None, false, None, out)?;
        } else {
            op::sum_IntList_out::call(&loss, None, false, None, out)?;
        }
        Ok(())
    })
}

// ---------------------------------------------------------------------------------------
// nll_loss
// ---------------------------------------------------------------------------------------

/// `nll_loss_forward.output`: `output` is `-input[i, target[i]] * weight[target[i]]` per
/// sample (`reduction=0` on 2-d input) or their sum / weighted mean; `total_weight` is the sum
/// of the weights of the samples not ignored.
pub fn nll_loss_forward_out_cpu(
    meta: &Meta,
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    output: &Tensor,
    total_weight: &Tensor,
) -> Result<()> {
    let _ = meta;
    let dtype = self_.dtype();
    // The weight's dtype is checked by the meta function (PyTorch checks it here, after the
    // dtype dispatch; the meta function checks floating inputs only, which keeps the order).
    dispatch_float!(dtype, "nll_loss_out_frame", S => {
        let input = self_.to_vec::<S>()?;
        let targets = target_values(target)?;
        let weights = weight.map(|w| w.to_vec::<S>()).transpose()?;
        let n_classes = self_.size(-1)?;
        let frame = NllFrame { input: &input, targets: &targets, weights: weights.as_deref(), n_classes, ignore_index };
        if reduction == 0 && self_.dim() == 2 {
            let losses = frame.per_sample::<S>()?;
            store(output, losses)?;
            return store(total_weight, vec![S::from_f64_lossy(0.0)]);
        }
        let (loss, weight_sum) = frame.reduced::<S>(reduction == 1)?;
        store(output, vec![loss])?;
        store(total_weight, vec![weight_sum])
    })
}

/// The class indices of a `Long` or `Byte` target, in row-major order.
fn target_values(target: &Tensor) -> Result<Vec<i64>> {
    match target.dtype() {
        ScalarType::Byte => Ok(target.to_vec::<u8>()?.into_iter().map(i64::from).collect()),
        ScalarType::Long => target.to_vec::<i64>(),
        other => Err(Error::runtime(format!(
            "expected target dtype to be Long or Byte, but got {other}"
        ))),
    }
}

/// One `nll_loss` problem: `input` is `[batch, n_classes]` row-major (batch 1 for 1-d input).
struct NllFrame<'a, S> {
    input: &'a [S],
    targets: &'a [i64],
    weights: Option<&'a [S]>,
    n_classes: i64,
    ignore_index: i64,
}

impl<S: Element> NllFrame<'_, S> {
    /// The class of sample `b`, or `None` when ignored; out-of-range classes are errors.
    fn class(&self, b: usize) -> Result<Option<usize>> {
        let t = self
            .targets
            .get(b)
            .copied()
            .ok_or_else(|| Error::runtime("internal error: nll_loss target index"))?;
        if t == self.ignore_index {
            return Ok(None);
        }
        torch_check_index!(t >= 0 && t < self.n_classes, "Target {t} is out of bounds.");
        Ok(Some(t as usize))
    }

    fn value(&self, b: usize, class: usize) -> f64 {
        let i = b * self.n_classes as usize + class;
        self.input.get(i).map_or(f64::NAN, |v| v.to_f64())
    }

    fn weight(&self, class: usize) -> Option<f64> {
        self.weights
            .map(|w| w.get(class).map_or(f64::NAN, |v| v.to_f64()))
    }

    /// `reduction=0`: one loss per sample (0 where ignored).
    fn per_sample<T: Element>(&self) -> Result<Vec<T>> {
        (0..self.targets.len())
            .map(|b| {
                Ok(match self.class(b)? {
                    None => T::from_f64_lossy(0.0),
                    Some(c) => {
                        let w = self.weight(c).unwrap_or(1.0);
                        T::from_f64_lossy(round::<S>(-self.value(b, c) * w))
                    }
                })
            })
            .collect()
    }

    /// The summed (or weight-averaged) loss and the total weight, accumulated with PyTorch's
    /// eight-level cascade so that rounding matches.
    fn reduced<T: Element>(&self, mean: bool) -> Result<(T, T)> {
        const LEVELS: usize = 8;
        let batch = self.targets.len();
        if batch == 0 {
            let loss = if mean { f64::NAN } else { 0.0 };
            return Ok((T::from_f64_lossy(loss), T::from_f64_lossy(0.0)));
        }
        let level_power = (ceil_log2(batch as u64) / LEVELS as u64).max(4);
        let level_mask = (1u64 << level_power) - 1;
        let mut weight_sums = [0.0f64; LEVELS];
        let mut loss_sums = [0.0f64; LEVELS];
        let mut ignored = 0usize;
        for b in 0..batch {
            let Some(c) = self.class(b)? else {
                ignored += 1;
                continue;
            };
            let data = self.value(b, c);
            match self.weight(c) {
                Some(w) => {
                    loss_sums[0] = round::<S>(loss_sums[0] - round::<S>(data * w));
                    weight_sums[0] = round::<S>(weight_sums[0] + w);
                }
                None => loss_sums[0] = round::<S>(loss_sums[0] - data),
            }
            for j in 0..LEVELS - 1 {
                if (b as u64) & (level_mask << (j as u64 * level_power)) != 0 {
                    break;
                }
                weight_sums[j + 1] = round::<S>(weight_sums[j + 1] + weight_sums[j]);
                loss_sums[j + 1] = round::<S>(loss_sums[j + 1] + loss_sums[j]);
                weight_sums[j] = 0.0;
                loss_sums[j] = 0.0;
            }
        }
        let total_weight = if self.weights.is_none() {
            round::<S>((batch - ignored) as f64)
        } else {
            weight_sums.iter().fold(0.0, |acc, w| round::<S>(acc + w))
        };
        let mut loss = loss_sums.iter().fold(0.0, |acc, l| round::<S>(acc + l));
        if mean {
            loss = round::<S>(loss / total_weight);
        }
        Ok((T::from_f64_lossy(loss), T::from_f64_lossy(total_weight)))
    }
}

/// `ceil(log2(x))` as PyTorch's `CeilLog2` (1 for `x <= 2`).
fn ceil_log2(x: u64) -> u64 {
    if x <= 2 {
        return 1;
    }
    u64::from(64 - (x - 1).leading_zeros())
}

// ---------------------------------------------------------------------------------------
// pooling
// ---------------------------------------------------------------------------------------

/// `avg_pool2d.out`: means over `kernel` windows (floating types and `Long`).
pub fn avg_pool2d_out_cpu(
    meta: &Meta<Pool2dParams>,
    self_: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
    out: &Tensor,
) -> Result<()> {
    let _ = (kernel_size, stride, padding, ceil_mode);
    let p = meta.extra;
    let dtype = self_.dtype();
    match dtype {
        ScalarType::Long => {
            avg_pool2d_frame::<i64>(self_, &p, count_include_pad, divisor_override, out)
        }
        _ => dispatch_float!(dtype, "avg_pool2d", S => {
            avg_pool2d_frame::<S>(self_, &p, count_include_pad, divisor_override, out)
        }),
    }
}

/// Sums in the accumulation type (`f32` for 16-bit floats, `f64` for doubles, `i64` for
/// longs) and divides, as PyTorch's CPU kernel does.
fn avg_pool2d_frame<S: Element>(
    input: &Tensor,
    p: &Pool2dParams,
    count_include_pad: bool,
    divisor_override: Option<i64>,
    out: &Tensor,
) -> Result<()> {
    let x = input.to_vec::<S>()?;
    let [ih, iw] = p.input;
    let [oh, ow] = p.output;
    let [kh, kw] = p.kernel;
    let plane_in = (ih * iw) as usize;
    let plane_out = (oh * ow) as usize;
    let planes = (p.batch * p.channels) as usize;
    let is_int = !S::DTYPE.is_floating_point();
    let is_double = S::DTYPE == ScalarType::Double;
    let mut y = switchyard_core::alloc::try_vec(planes * plane_out, S::from_f64_lossy(0.0))?;
    let frame = |(plane, dst): (usize, &mut [S])| {
        let src = &x[plane * plane_in..(plane + 1) * plane_in];
        for oy in 0..oh {
            for ox in 0..ow {
                let h0 = oy * p.stride[0] - p.padding[0];
                let w0 = ox * p.stride[1] - p.padding[1];
                let h1 = (h0 + kh).min(ih + p.padding[0]);
                let w1 = (w0 + kw).min(iw + p.padding[1]);
                let pool_size = (h1 - h0) * (w1 - w0);
                let (h0, w0, h1, w1) = (h0.max(0), w0.max(0), h1.min(ih), w1.min(iw));
                let slot = &mut dst[(oy * ow + ox) as usize];
                if h0 >= h1 || w0 >= w1 {
                    continue;
                }
                let divide = divisor_override.unwrap_or(if count_include_pad {
                    pool_size
                } else {
                    (h1 - h0) * (w1 - w0)
                });
                let values = (h0..h1).flat_map(|h| (w0..w1).map(move |w| (h * iw + w) as usize));
                *slot = if is_int {
                    let sum = values.fold(0i64, |acc, i| acc.wrapping_add(src[i].to_i64_lossy()));
                    S::from_i64_lossy(sum.checked_div(divide).unwrap_or(0))
                } else if is_double {
                    S::from_f64_lossy(
                        values.fold(0.0f64, |acc, i| acc + src[i].to_f64()) / divide as f64,
                    )
                } else {
                    let sum = values.fold(0.0f32, |acc, i| acc + src[i].to_f64() as f32);
                    S::from_f64_lossy(f64::from(sum / divide as f32))
                };
            }
        }
    };
    if planes * plane_out * (kh * kw) as usize >= GRAIN {
        parallel::for_each_chunk_mut(&mut y, plane_out.max(1), &|i, plane| {
            frame((i, plane));
            Ok(())
        })?;
    } else {
        y.chunks_mut(plane_out.max(1)).enumerate().for_each(frame);
    }
    store(out, y)
}

/// `max_pool2d_with_indices.out`: window maxima (NaN wins, the last NaN when several) and
/// their `h * W + w` positions in the input plane. Every dtype but `bool`.
pub fn max_pool2d_with_indices_out_cpu(
    meta: &Meta<Pool2dParams>,
    self_: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
    out: &Tensor,
    indices: &Tensor,
) -> Result<()> {
    let _ = (kernel_size, stride, padding, dilation, ceil_mode);
    let dtype = self_.dtype();
    if dtype == ScalarType::Bool {
        return Err(not_implemented("max_pool2d", dtype));
    }
    let p = meta.extra;
    dispatch_dtype!(dtype, S => {
        dispatch_compute!(dtype, C => max_pool2d_frame::<S, C>(self_, &p, out, indices))
    })
}

/// The identity of `max`: -inf for floats, the smallest value for integers.
fn lowest_value<C: Num>() -> C {
    match C::DTYPE {
        ScalarType::Byte | ScalarType::Bool => C::zero(),
        ScalarType::Char => C::from_i64_lossy(i64::from(i8::MIN)),
        ScalarType::Short => C::from_i64_lossy(i64::from(i16::MIN)),
        ScalarType::Int => C::from_i64_lossy(i64::from(i32::MIN)),
        ScalarType::Long => C::from_i64_lossy(i64::MIN),
        _ => C::from_f64_lossy(f64::NEG_INFINITY),
    }
}

fn max_pool2d_frame<S: Element, C: Num>(
    input: &Tensor,
    p: &Pool2dParams,
    out: &Tensor,
    indices: &Tensor,
) -> Result<()> {
    let x = input.to_vec::<S>()?;
    let [ih, iw] = p.input;
    let [oh, ow] = p.output;
    let [kh, kw] = p.kernel;
    let [dil_h, dil_w] = p.dilation;
    let plane_in = (ih * iw) as usize;
    let plane_out = (oh * ow) as usize;
    let planes = (p.batch * p.channels) as usize;
    let lowest = lowest_value::<C>();
    let mut y = switchyard_core::alloc::try_vec(planes * plane_out, S::from_f64_lossy(0.0))?;
    let mut idx = switchyard_core::alloc::try_vec(planes * plane_out, 0i64)?;
    let frame = |(plane, (dst, dst_idx)): (usize, (&mut [S], &mut [i64]))| {
        let src = &x[plane * plane_in..(plane + 1) * plane_in];
        for oy in 0..oh {
            for ox in 0..ow {
                let mut h0 = oy * p.stride[0] - p.padding[0];
                let mut w0 = ox * p.stride[1] - p.padding[1];
                let h1 = (h0 + (kh - 1) * dil_h + 1).min(ih);
                let w1 = (w0 + (kw - 1) * dil_w + 1).min(iw);
                while h0 < 0 {
                    h0 += dil_h;
                }
                while w0 < 0 {
                    w0 += dil_w;
                }
                let mut best_index = h0 * iw + w0;
                let mut best = lowest;
                let mut h = h0;
                while h < h1 {
                    let mut w = w0;
                    while w < w1 {
                        let i = h * iw + w;
                        let v = convert::<S, C>(src[i as usize]);
                        // `v != v` is the NaN test (false for integers).
                        #[allow(clippy::eq_op)]
                        if v > best || v != v {
                            best = v;
                            best_index = i;
                        }
                        w += dil_w;
                    }
                    h += dil_h;
                }
                let o = (oy * ow + ox) as usize;
                dst[o] = convert::<C, S>(best);
                dst_idx[o] = best_index;
            }
        }
    };
    let chunk = plane_out.max(1);
    if planes * plane_out * (kh * kw) as usize >= GRAIN {
        let items = y.chunks_mut(chunk).zip(idx.chunks_mut(chunk)).enumerate();
        parallel::for_each_item(items, &|item| {
            frame(item);
            Ok(())
        })?;
    } else {
        y.chunks_mut(chunk)
            .zip(idx.chunks_mut(chunk))
            .enumerate()
            .for_each(frame);
    }
    store(out, y)?;
    store(indices, idx)
}

// ---------------------------------------------------------------------------------------
// layer_norm
// ---------------------------------------------------------------------------------------

/// `native_layer_norm` on CPU (PyTorch's `layer_norm_cpu`): normalizes each row of the last
/// `normalized_shape.len()` dimensions; returns `(out, mean, rstd)`, the statistics shaped
/// like the input with the normalized dimensions set to 1. `f16`/`bf16` inputs may come with
/// `Float` parameters (statistics are then `Float`).
pub fn layer_norm_cpu(
    input: &Tensor,
    normalized_shape: &[i64],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    let param_dtype = switchyard_ops::meta::layer_norm_param_dtype(input, weight, bias)?;
    let (m, n) =
        switchyard_ops::meta::check_layer_norm_inputs(input, normalized_shape, weight, bias)?;
    let stat_shape = switchyard_ops::meta::layer_norm_stat_shape(input, normalized_shape);
    let dtype = input.dtype();
    let job = LayerNorm {
        input,
        weight,
        bias,
        eps,
        rows: m as usize,
        cols: n as usize,
        stat_shape,
    };
    let same = param_dtype == dtype
        && [weight, bias]
            .into_iter()
            .flatten()
            .all(|p| p.dtype() == dtype);
    match dtype {
        ScalarType::Float if same => return job.run_same::<f32>(),
        ScalarType::Double if same => return job.run_same::<f64>(),
        _ => {}
    }
    dispatch_float!(dtype, "LayerNormKernelImpl", S => {
        if param_dtype != dtype {
            return job.run::<S, f32, f32>();
        }
        switchyard_ops::meta::check_layer_norm_param_dtypes(input, weight, bias, param_dtype)?;
        if dtype == ScalarType::Double {
            job.run::<S, S, f64>()
        } else {
            job.run::<S, S, f32>()
        }
    })
}

/// Floating compute types of the layer-norm rows.
trait Real:
    Num
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
{
    fn sqrt(self) -> Self;
}

impl Real for f32 {
    #[inline(always)]
    fn sqrt(self) -> Self {
        f32::sqrt(self)
    }
}

impl Real for f64 {
    #[inline(always)]
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
}

/// Independent partial sums per row pass (lets the compiler vectorise the reductions).
const LANES: usize = 16;

struct LayerNorm<'a> {
    input: &'a Tensor,
    weight: Option<&'a Tensor>,
    bias: Option<&'a Tensor>,
    eps: f64,
    rows: usize,
    cols: usize,
    stat_shape: DimVec,
}

/// Weight and bias values, when given.
type Params<A> = (Option<Vec<A>>, Option<Vec<A>>);

impl LayerNorm<'_> {
    /// The input as a contiguous tensor of its dtype `S` (itself when it already is one).
    fn contiguous_input<S: Element>(&self) -> Result<Tensor> {
        if self.input.is_contiguous() {
            return Ok(self.input.clone());
        }
        let c = Tensor::allocate(&self.input.sizes(), S::DTYPE, self.input.device())?;
        loops::map::<S, S, 1>(&c, [self.input], |[v]| v)?;
        Ok(c)
    }

    /// New `mean` / `rstd` tensors of dtype `P`.
    fn stat_tensors<P: Element>(&self) -> Result<(Tensor, Tensor)> {
        let device = self.input.device();
        Ok((
            Tensor::allocate(&self.stat_shape, P::DTYPE, device)?,
            Tensor::allocate(&self.stat_shape, P::DTYPE, device)?,
        ))
    }

    /// Weight and bias as vectors of `A` (converted from their dtype `P`), each checked to
    /// hold one value per column (the row kernels rely on it to write every output).
    fn params<P: Element, A: Copy>(&self, conv: impl Fn(P) -> A) -> Result<Params<A>> {
        let get = |t: Option<&Tensor>| -> Result<Option<Vec<A>>> {
            let Some(t) = t else { return Ok(None) };
            let v: Vec<A> =
                switchyard_core::alloc::try_collect(t.to_vec::<P>()?.into_iter().map(&conv))?;
            if v.len() != self.cols {
                return Err(Error::runtime("internal error: layer_norm parameter size"));
            }
            Ok(Some(v))
        };
        Ok((get(self.weight)?, get(self.bias)?))
    }

    /// Runs `f(x rows, means, rstds)` on the data of contiguous `x` (stored as `S`) and of
    /// `mean` / `rstd` (stored as `P`), with exactly `rows * cols`, `rows` and `rows` elements;
    /// for empty rows (`cols == 0`) it does not call `f` and sets mean 0 and rstd NaN (variance
    /// 0/0) as PyTorch does.
    fn with_stats<S: Element, P: Element>(
        &self,
        x: &Tensor,
        mean: &Tensor,
        rstd: &Tensor,
        f: impl FnOnce(&[S::Repr], &mut [P::Repr], &mut [P::Repr]) -> Result<()>,
    ) -> Result<()> {
        let (rows, cols) = (self.rows, self.cols);
        let start = usize::try_from(x.storage_offset())
            .map_err(|_| Error::runtime("internal error: layer_norm offset"))?;
        with_tensors(
            &[
                (mean, Access::Write),
                (rstd, Access::Write),
                (x, Access::Read),
            ],
            |data| {
                let (mut written, shared) = data.split_host_mut(&[0, 1])?;
                let rstd_bytes = written.pop().ok_or_else(layer_norm_storage)?;
                let mean_bytes = written.pop().ok_or_else(layer_norm_storage)?;
                let means = typed_mut::<P>(mean_bytes)?
                    .get_mut(..rows)
                    .ok_or_else(layer_norm_storage)?;
                let rstds = typed_mut::<P>(rstd_bytes)?
                    .get_mut(..rows)
                    .ok_or_else(layer_norm_storage)?;
                if cols == 0 {
                    // Nothing of `x` is read: an empty input may be a view whose offset lies
                    // past the end of its storage (or one without bytes).
                    for (m_, r_) in means.iter_mut().zip(rstds.iter_mut()) {
                        *m_ = P::to_repr(P::from_f64_lossy(0.0));
                        *r_ = P::to_repr(P::from_f64_lossy(f64::NAN));
                    }
                    return Ok(());
                }
                if rows == 0 {
                    return Ok(());
                }
                let xs = typed::<S>(
                    shared
                        .get(2)
                        .copied()
                        .flatten()
                        .ok_or_else(layer_norm_storage)?,
                )?
                .get(start..start + rows * cols)
                .ok_or_else(layer_norm_storage)?;
                f(xs, means, rstds)
            },
        )
    }

    /// `Float` / `Double` input with parameters of the same dtype: whole rows go to the
    /// multiversioned [`layer_norm_rows`] (AVX-512 / AVX2 copies), in parallel above [`GRAIN`]
    /// elements. The output is written straight into new memory that is never zero-filled
    /// (for [4096, 1024] `f32`, zeroing the 16 MB first cost about as much as the kernel).
    fn run_same<F: SoftFloat + Send + Sync>(&self) -> Result<(Tensor, Tensor, Tensor)> {
        let x = self.contiguous_input::<F>()?;
        let (mean, rstd) = self.stat_tensors::<F>()?;
        let (gamma, beta) = self.params::<F, F>(|v| v)?;
        let (rows, cols) = (self.rows, self.cols);
        let params = RowParams::new(gamma, beta, cols)?
            .ok_or_else(|| Error::runtime("internal error: layer_norm parameter size"))?;
        let eps = F::from_f64_lossy(self.eps);
        let y = Tensor::new_with::<F>(&self.input.sizes(), |ys| {
            if ys.len() != rows * cols {
                return Err(layer_norm_storage());
            }
            self.with_stats::<F, F>(&x, &mean, &rstd, |xs, means, rstds| {
                let threads = parallel::num_threads();
                // Outputs far beyond the caches are written with streaming stores.
                let stream = rows * cols * std::mem::size_of::<F>() >= STREAM_BYTES;
                if rows * cols >= GRAIN && threads > 1 {
                    // Tasks of whole rows, four per thread for balance.
                    let per = rows.div_ceil(4 * threads).max(GRAIN / 4 / cols).max(1);
                    let items = ys
                        .chunks_mut(per * cols)
                        .zip(xs.chunks(per * cols))
                        .zip(means.chunks_mut(per))
                        .zip(rstds.chunks_mut(per));
                    parallel::for_each_item(items, &|(((y, x), m), r)| {
                        layer_norm_rows(x, y, m, r, &params, eps, stream);
                        Ok(())
                    })?;
                } else {
                    layer_norm_rows(xs, &mut *ys, means, rstds, &params, eps, stream);
                }
                Ok(())
            })?;
            // SAFETY: `ys` has `rows * cols` elements (checked above). `with_stats` returned
            // Ok, so either `cols == 0` and there is nothing to write, or the closure ran
            // `layer_norm_rows` on `xs` / `ys` of `rows * cols` elements and `rows` statistics
            // (whole rows per task: the zipped chunks cover all of them), with `RowParams` of
            // `cols` values, which writes every element of its output.
            Ok(unsafe { ys.assume_init_mut() })
        })?;
        Ok((y, mean, rstd))
    }

    /// Input stored as `S`, parameters and statistics as `P`, arithmetic in `A` (the `f16` /
    /// `bf16` cases, and mixed parameter dtypes). The output is written into new memory that is
    /// never zero-filled, like [`LayerNorm::run_same`].
    // The per-row closure takes zipped ((input row, output row), (mean, rstd)) items.
    #[allow(clippy::type_complexity)]
    fn run<S: Element, P: Element, A: Real>(&self) -> Result<(Tensor, Tensor, Tensor)>
    where
        S::Repr: Send + Sync,
        P::Repr: Send + Sync,
    {
        let x = self.contiguous_input::<S>()?;
        let (mean, rstd) = self.stat_tensors::<P>()?;
        let (gamma, beta) = self.params::<P, A>(convert::<P, A>)?;
        let eps = A::from_f64_lossy(self.eps);
        let (rows, cols) = (self.rows, self.cols);
        let y = Tensor::new_with::<S>(&self.input.sizes(), |ys| {
            if ys.len() != rows * cols {
                return Err(layer_norm_storage());
            }
            self.with_stats::<S, P>(&x, &mean, &rstd, |xs, means, rstds| {
                let row = |((x_row, y_row), (mean, rstd)): (
                    (&[S::Repr], &mut [MaybeUninit<S::Repr>]),
                    (&mut P::Repr, &mut P::Repr),
                )| {
                    let (mu, r) =
                        normalize_row::<S, A>(x_row, y_row, gamma.as_deref(), beta.as_deref(), eps);
                    *mean = P::to_repr(convert::<A, P>(mu));
                    *rstd = P::to_repr(convert::<A, P>(r));
                };
                if rows * cols >= GRAIN && parallel::num_threads() > 1 {
                    let per = (GRAIN / 4 / cols).max(1);
                    let items = xs
                        .chunks(per * cols)
                        .zip(ys.chunks_mut(per * cols))
                        .zip(means.chunks_mut(per).zip(rstds.chunks_mut(per)));
                    parallel::for_each_item(items, &|((x, y), (m, r))| {
                        x.chunks(cols)
                            .zip(y.chunks_mut(cols))
                            .zip(m.iter_mut().zip(r.iter_mut()))
                            .for_each(row);
                        Ok(())
                    })?;
                } else {
                    xs.chunks(cols)
                        .zip(ys.chunks_mut(cols))
                        .zip(means.iter_mut().zip(rstds.iter_mut()))
                        .for_each(row);
                }
                Ok(())
            })?;
            // SAFETY: `ys` has `rows * cols` elements (checked above). `with_stats` returned
            // Ok, so either `cols == 0` and there is nothing to write, or the closure ran
            // `normalize_row` on every row: `xs` and `ys` both split into `rows` rows of `cols`
            // elements, zipped with the `rows` statistics; `normalize_row` writes every element
            // of its output row (its parameters have `cols` values, checked by `params`).
            Ok(unsafe { ys.assume_init_mut() })
        })?;
        Ok((y, mean, rstd))
    }
}

fn layer_norm_storage() -> Error {
    Error::runtime("internal error: layer_norm storage smaller than its tensors")
}

/// Normalizes one row into `y`: `(x * rstd - rstd * mean) * gamma + beta` as PyTorch computes
/// it; returns `(mean, rstd)`. The statistics use two passes over the row (exact mean, then the
/// biased variance around it). Every element of `y` is written when `x`, `y` and the parameters
/// have the same length.
#[inline(always)]
fn normalize_row<S: Element, A: Real>(
    x: &[S::Repr],
    y: &mut [MaybeUninit<S::Repr>],
    gamma: Option<&[A]>,
    beta: Option<&[A]>,
    eps: A,
) -> (A, A) {
    let load = |v: &S::Repr| convert::<S, A>(S::from_repr(*v));
    let n = A::from_f64_lossy(x.len() as f64);
    let mut acc = [A::zero(); LANES];
    let chunks = x.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for (a, v) in acc.iter_mut().zip(c) {
            *a = *a + load(v);
        }
    }
    let mean = (lane_sum(acc) + tail.iter().fold(A::zero(), |s, v| s + load(v))) / n;
    let mut acc = [A::zero(); LANES];
    let chunks = x.chunks_exact(LANES);
    for c in chunks {
        for (a, v) in acc.iter_mut().zip(c) {
            let d = load(v) - mean;
            *a = *a + d * d;
        }
    }
    let var = (lane_sum(acc)
        + tail.iter().fold(A::zero(), |s, v| {
            let d = load(v) - mean;
            s + d * d
        }))
        / n;
    let rstd = A::one() / (var + eps).sqrt();
    let shift = A::zero() - rstd * mean;
    let store = |v: A| MaybeUninit::new(S::to_repr(convert::<A, S>(v)));
    match (gamma, beta) {
        (Some(g), Some(b)) => {
            for (((o, v), g), b) in y.iter_mut().zip(x).zip(g).zip(b) {
                *o = store((load(v) * rstd + shift) * *g + *b);
            }
        }
        (Some(g), None) => {
            for ((o, v), g) in y.iter_mut().zip(x).zip(g) {
                *o = store((load(v) * rstd + shift) * *g);
            }
        }
        (None, Some(b)) => {
            for ((o, v), b) in y.iter_mut().zip(x).zip(b) {
                *o = store(load(v) * rstd + shift + *b);
            }
        }
        (None, None) => {
            for (o, v) in y.iter_mut().zip(x) {
                *o = store(load(v) * rstd + shift);
            }
        }
    }
    (mean, rstd)
}

/// Pairwise sum of the lanes.
#[inline(always)]
fn lane_sum<A: Real>(mut acc: [A; LANES]) -> A {
    let mut width = LANES;
    while width > 1 {
        width /= 2;
        for i in 0..width {
            acc[i] = acc[i] + acc[i + width];
        }
    }
    acc[0]
}

// ---------------------------------------------------------------------------------------
// dropout
// ---------------------------------------------------------------------------------------

/// `native_dropout(input, p, train)` on CPU (PyTorch's `native_dropout_cpu`): when training
/// (`train` true or absent), a `Bool` mask kept with probability `1 - p` drawn from the
/// default CPU generator and `input * mask / (1 - p)`; otherwise a copy and an all-true mask.
/// An empty input is returned as is, with an uninitialised mask of its dtype.
pub fn native_dropout_cpu(input: &Tensor, p: f64, train: Option<bool>) -> Result<(Tensor, Tensor)> {
    let (sizes, dtype, device) = (input.sizes(), input.dtype(), input.device());
    if input.numel() == 0 {
        return Ok((input.clone(), Tensor::allocate(&sizes, dtype, device)?));
    }
    if !train.unwrap_or(true) {
        let mask = Tensor::allocate(&sizes, ScalarType::Bool, device)?;
        loops::map::<bool, bool, 0>(&mask, [], |[]| true)?;
        let out = Tensor::allocate(&sizes, dtype, device)?;
        dispatch_dtype!(dtype, T => loops::map::<T, T, 1>(&out, [input], |[x]| x))?;
        return Ok((out, mask));
    }
    let keep = 1.0 - p;
    switchyard_ops::meta::factory_support::check_bernoulli_p(keep)?;
    let mask = bernoulli_mask(input.numel(), keep, &sizes)?;
    torch_check!(
        dtype.is_floating_point(),
        "result type Float can't be cast to the desired output type {dtype}"
    );
    // PyTorch: `input.mul(mask).mul_(scale)`, scale 0 when every element is dropped.
    let scale = if keep == 0.0 { 0.0 } else { 1.0 / keep };
    let out = Tensor::allocate(&sizes, dtype, device)?;
    if dtype == ScalarType::Double {
        loops::map::<f64, f64, 2>(&out, [input, &mask], |[x, m]| x * m * scale)?;
    } else {
        let scale = scale as f32;
        // f16/bf16: PyTorch rounds `x * m` (exact: m is 0 or 1) and the scaled product once.
        loops::map::<f32, f32, 2>(&out, [input, &mask], |[x, m]| x * m * scale)?;
    }
    Ok((out, mask))
}

/// A `Bool` tensor of `sizes` whose elements are true with probability `keep`, drawn from the
/// default CPU generator (53-bit uniform doubles).
fn bernoulli_mask(numel: i64, keep: f64, sizes: &[i64]) -> Result<Tensor> {
    let numel =
        usize::try_from(numel).map_err(|_| Error::runtime("internal error: negative numel"))?;
    let generator = switchyard_core::generator::default_generator(switchyard_core::Device::CPU)?;
    let values: Vec<bool> = {
        let mut state = generator.lock();
        switchyard_core::alloc::try_collect(
            (0..numel)
                .map(|_| ((state.random64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)) < keep),
        )?
    };
    Tensor::from_vec(values, sizes)
}
