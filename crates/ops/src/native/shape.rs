//! Composite kernels of the last operators of the shape family: `stack`, `repeat`,
//! `constant_pad_nd`, `embedding`, `one_hot`, `sort` (over `sort.stable`), `logsumexp`,
//! `cross_entropy_loss` and the binary `max` / `min` overloads.
//!
//! Each follows PyTorch's decomposition (`TensorShape.cpp`, `PadNd.cpp`, `Embedding.cpp`,
//! `Onehot.cpp`, `Sorting.cpp`, `ReduceOps.cpp`, `LossNLL.cpp`, `TensorCompare.cpp`) and
//! calls the other operators through the dispatcher, so the errors, dtypes and out= rules
//! of those operators apply unchanged and the composites run on every backend (`Meta`
//! included) that implements them.

use crate::op;
use switchyard_core::promotion::DEFAULT_DTYPE;
use switchyard_core::shape::{fmt_dims, wrap_dim};
use switchyard_core::{Device, Result, Scalar, ScalarType, Tensor, bail, torch_check};

/// A new tensor of `sizes` and `dtype` on `device`, its contents unspecified (through the
/// dispatcher, so every backend allocates its own).
fn empty_on(sizes: &[i64], dtype: ScalarType, device: Device) -> Result<Tensor> {
    op::empty_memory_format::call(sizes, Some(dtype), None, Some(device), None, None)
}

// ---------------------------------------------------------------------------------------------
// stack
// ---------------------------------------------------------------------------------------------

/// `get_stack_inputs`: checks the list (non-empty, equal sizes) and unsqueezes every tensor
/// at `dim`, wrapped against `dim() + 1` of the first tensor.
fn stack_inputs(tensors: &[Tensor], dim: i64) -> Result<(Vec<Tensor>, i64)> {
    let Some(first) = tensors.first() else {
        bail!(RuntimeError, "stack expects a non-empty TensorList");
    };
    let wrapped = wrap_dim(dim, first.dim() + 1)? as i64;
    let entry_shape = first.sizes();
    for (i, t) in tensors.iter().enumerate().skip(1) {
        let sizes = t.sizes();
        torch_check!(
            sizes == entry_shape,
            "stack expects each tensor to be equal size, but got {} at entry 0 and {} at entry {i}",
            fmt_dims(&entry_shape),
            fmt_dims(&sizes)
        );
    }
    let inputs = tensors
        .iter()
        .map(|t| op::unsqueeze::call(t, wrapped))
        .collect::<Result<Vec<_>>>()?;
    Ok((inputs, wrapped))
}

/// `stack`: the tensors unsqueezed at `dim` and concatenated along it (with `cat`'s type
/// promotion).
pub fn stack(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    let (inputs, dim) = stack_inputs(tensors, dim)?;
    op::cat::call(&inputs, dim)
}

/// `stack` on `Meta` tensors: the same decomposition, over `cat`'s meta function.
pub fn stack_meta(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    stack(tensors, dim)
}

/// `stack.out`: `cat.out` of the unsqueezed tensors (so `cat`'s out= checks apply).
pub fn stack_out(tensors: &[Tensor], dim: i64, out: &Tensor) -> Result<Tensor> {
    let (inputs, dim) = stack_inputs(tensors, dim)?;
    op::cat_out::call(&inputs, dim, out)
}

// ---------------------------------------------------------------------------------------------
// repeat
// ---------------------------------------------------------------------------------------------

/// `repeat`: the result `[r0 * s0, r1 * s1, ...]` is viewed as `[r0, s0, r1, s1, ...]` and
/// filled by one copy from `self` viewed as `[1, s0, 1, s1, ...]` and expanded (PyTorch
/// builds the same view with `unfold`).
pub fn repeat(self_: &Tensor, repeats: &[i64]) -> Result<Tensor> {
    let ndim = self_.dim();
    torch_check!(
        repeats.len() >= ndim,
        "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"
    );
    let new_dims = repeats.len() - ndim;
    let padded: Vec<i64> = std::iter::repeat_n(1, new_dims)
        .chain(self_.sizes().iter().copied())
        .collect();
    let target = padded
        .iter()
        .zip(repeats)
        .map(|(s, r)| s.checked_mul(*r))
        .collect::<Option<Vec<i64>>>();
    let Some(target) = target else {
        bail!(RuntimeError, "repeat: the result size overflows int64");
    };
    // Allocated before the zero check, as PyTorch does: negative repeats fail here.
    let result = empty_on(&target, self_.dtype(), self_.device())?;
    if repeats.contains(&0) {
        return Ok(result);
    }
    let interleaved: Vec<i64> = repeats
        .iter()
        .zip(&padded)
        .flat_map(|(r, s)| [*r, *s])
        .collect();
    let mut src = self_.clone();
    for _ in 0..new_dims {
        src = op::unsqueeze::call(&src, 0)?;
    }
    for i in 0..repeats.len() {
        src = op::unsqueeze::call(&src, 2 * i as i64)?;
    }
    let src = op::expand::call(&src, &interleaved, false)?;
    op::copy_::call(&op::view::call(&result, &interleaved)?, &src, false)?;
    Ok(result)
}

// ---------------------------------------------------------------------------------------------
// constant_pad_nd
// ---------------------------------------------------------------------------------------------

/// The `(before, after)` pads of dimension `i` of an `ndim`-dimensional input; `pad` lists
/// them last dimension first and covers the trailing `pad.len() / 2` dimensions.
fn pads_of(pad: &[i64], ndim: usize, i: usize) -> (i64, i64) {
    let idx = 2 * (ndim - i - 1);
    (
        pad.get(idx).copied().unwrap_or(0),
        pad.get(idx + 1).copied().unwrap_or(0),
    )
}

/// `constant_pad_nd`: negative pads crop the input (`narrow`), positive ones add `value`
/// around it; the result is a `value`-filled tensor whose interior is a copy of the
/// (cropped) input.
pub fn constant_pad_nd(self_: &Tensor, pad: &[i64], value: Scalar) -> Result<Tensor> {
    torch_check!(
        pad.len().is_multiple_of(2),
        "Length of pad must be even but instead it equals {}",
        pad.len()
    );
    let sizes = self_.sizes();
    let ndim = sizes.len();
    let l_pad = pad.len() / 2;
    torch_check!(
        ndim >= l_pad,
        "Length of pad should be no more than twice the number of dimensions of the input. Pad length is {}while the input has {}dimensions.",
        pad.len(),
        ndim
    );
    let l_diff = ndim - l_pad;
    let mut c_input = self_.clone();
    let mut all_pads_non_positive = true;
    for i in l_diff..ndim {
        let (before, after) = pads_of(pad, ndim, i);
        let d = i as i64;
        if before < 0 {
            let len = c_input.size(d)? + before;
            // i64::MIN has no negation; the length is negative then, which narrow refuses.
            c_input = op::narrow::call(&c_input, d, before.saturating_neg(), len)?;
        } else if before != 0 {
            all_pads_non_positive = false;
        }
        if after < 0 {
            let len = c_input.size(d)? + after;
            c_input = op::narrow::call(&c_input, d, 0, len)?;
        } else if after != 0 {
            all_pads_non_positive = false;
        }
    }
    if all_pads_non_positive {
        return op::clone::call(&c_input, None);
    }
    let mut new_shape: Vec<i64> = sizes.iter().take(l_diff).copied().collect();
    for i in l_diff..ndim {
        let (before, after) = pads_of(pad, ndim, i);
        let size = sizes.get(i).copied().unwrap_or(0);
        // A size past i64::MAX wraps negative in PyTorch's arithmetic, and gets this error.
        let new_dim = size
            .checked_add(before)
            .and_then(|s| s.checked_add(after))
            .unwrap_or(-1);
        torch_check!(
            new_dim >= 0,
            "The input size {size}, plus negative padding {before} and {after} resulted in a negative output size, which is invalid. Check dimension {i} of your input."
        );
        new_shape.push(new_dim);
    }
    let output = empty_on(&new_shape, self_.dtype(), self_.device())?;
    op::fill__Scalar::call(&output, value)?;
    let mut c_output = output.clone();
    for i in l_diff..ndim {
        let (before, after) = pads_of(pad, ndim, i);
        let d = i as i64;
        if before > 0 {
            let len = c_output.size(d)? - before;
            c_output = op::narrow::call(&c_output, d, before, len)?;
        }
        if after > 0 {
            let len = c_output.size(d)? - after;
            c_output = op::narrow::call(&c_output, d, 0, len)?;
        }
    }
    op::copy_::call(&c_output, &c_input, false)?;
    Ok(output)
}

// ---------------------------------------------------------------------------------------------
// embedding, one_hot
// ---------------------------------------------------------------------------------------------

/// PyTorch's legacy type string (`torch.FloatTensor`; `MetaFloatType` off the CPU), as
/// `checkScalarTypes` prints it.
fn legacy_type_string(t: &Tensor) -> String {
    if t.is_cpu() {
        format!("torch.{}Tensor", t.dtype().name())
    } else {
        format!("Meta{}Type", t.dtype().name())
    }
}

/// `embedding`: the rows of `weight` selected by `indices`, shaped `indices.shape + [D]`.
/// `padding_idx`, `scale_grad_by_freq` and `sparse` only change the backward pass.
pub fn embedding(
    weight: &Tensor,
    indices: &Tensor,
    padding_idx: i64,
    scale_grad_by_freq: bool,
    sparse: bool,
) -> Result<Tensor> {
    let _ = (padding_idx, scale_grad_by_freq, sparse);
    torch_check!(weight.dim() == 2, "'weight' must be 2-D");
    torch_check!(
        matches!(indices.dtype(), ScalarType::Long | ScalarType::Int),
        "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got {} instead (while checking arguments for embedding)",
        legacy_type_string(indices)
    );
    if indices.dim() == 1 {
        return op::index_select::call(weight, 0, indices);
    }
    let mut size: Vec<i64> = indices.sizes().to_vec();
    size.extend(weight.sizes().iter().skip(1));
    let rows = op::index_select::call(weight, 0, &op::reshape::call(indices, &[-1])?)?;
    op::view::call(&rows, &size)
}

/// `one_hot`: a `Long` tensor `self.shape + [num_classes]` with a 1 at each class index;
/// `num_classes == -1` infers `max + 1`.
pub fn one_hot(self_: &Tensor, num_classes: i64) -> Result<Tensor> {
    torch_check!(
        self_.dtype() == ScalarType::Long,
        "one_hot is only applicable to index tensor of type LongTensor."
    );
    let device = self_.device();
    if self_.is_meta() {
        // PyTorch's data-independent form (values cannot be checked without data).
        torch_check!(
            num_classes != -1,
            "Tensor.item() cannot be called on meta tensors"
        );
        let index = op::arange::call(
            Scalar::Int(num_classes),
            Some(ScalarType::Long),
            None,
            Some(device),
            None,
        )?;
        let hits = op::eq_Tensor::call(&op::unsqueeze::call(self_, -1)?, &index)?;
        return op::to_dtype::call(&hits, ScalarType::Long, false, false, None);
    }
    let mut shape: Vec<i64> = self_.sizes().to_vec();
    if self_.numel() == 0 {
        torch_check!(
            num_classes > 0,
            "Can not infer total number of classes from empty tensor."
        );
        shape.push(num_classes);
        return empty_on(&shape, ScalarType::Long, device);
    }
    let min = host_item(&op::min::call(self_)?)?;
    torch_check!(min >= 0, "Class values must be non-negative.");
    let max = host_item(&op::max::call(self_)?)?;
    let num_classes = if num_classes == -1 {
        max + 1
    } else {
        torch_check!(
            num_classes > max,
            "Class values must be smaller than num_classes."
        );
        num_classes
    };
    shape.push(num_classes);
    let ret = op::zeros::call(&shape, Some(ScalarType::Long), None, Some(device), None)?;
    op::scatter__value::call(&ret, -1, &op::unsqueeze::call(self_, -1)?, Scalar::Int(1))?;
    Ok(ret)
}

// ---------------------------------------------------------------------------------------------
// sort
// ---------------------------------------------------------------------------------------------

/// `sort`: `sort.stable` with `stable=False`.
pub fn sort(self_: &Tensor, dim: i64, descending: bool) -> Result<(Tensor, Tensor)> {
    op::sort_stable::call(self_, Some(false), dim, descending)
}

/// `sort.values`: `sort.values_stable` with `stable=False`.
pub fn sort_out(
    self_: &Tensor,
    dim: i64,
    descending: bool,
    values: &Tensor,
    indices: &Tensor,
) -> Result<(Tensor, Tensor)> {
    op::sort_values_stable::call(self_, Some(false), dim, descending, values, indices)
}

// ---------------------------------------------------------------------------------------------
// logsumexp
// ---------------------------------------------------------------------------------------------

/// Integer and bool inputs compute (and return) in the default floating dtype.
fn logsumexp_dtype(dtype: ScalarType) -> ScalarType {
    if dtype.is_floating_point() {
        dtype
    } else {
        DEFAULT_DTYPE
    }
}

/// `logsumexp`: into a new tensor of the input's floating dtype (the default one for
/// integer inputs).
pub fn logsumexp(self_: &Tensor, dim: &[i64], keepdim: bool) -> Result<Tensor> {
    let result = empty_on(&[0], logsumexp_dtype(self_.dtype()), self_.device())?;
    logsumexp_out(self_, dim, keepdim, &result)
}

/// `logsumexp.out`: `log(sum(exp(x - max))) + max` with infinite maxima replaced by 0 so
/// that all `-inf` slices give `-inf` and slices holding `+inf` give `+inf`, not NaN.
pub fn logsumexp_out(self_: &Tensor, dim: &[i64], keepdim: bool, out: &Tensor) -> Result<Tensor> {
    torch_check!(
        out.dtype().is_floating_point(),
        "logsumexp(): Expected floating point type for result tensor, but got: {}",
        out.dtype()
    );
    let input = if self_.dtype().is_floating_point() {
        self_.clone()
    } else {
        op::to_dtype::call(self_, DEFAULT_DTYPE, false, false, None)?
    };
    if input.numel() == 0 {
        // There is no maximum of an empty tensor.
        op::sum_IntList_out::call(&op::exp::call(&input)?, Some(dim), keepdim, None, out)?;
        op::log_::call(out)?;
        return Ok(out.clone());
    }
    let maxes = op::amax::call(&input, dim, true)?;
    // A view of `maxes` (or `maxes` itself), so the fill below masks both.
    let maxes_squeezed = if keepdim {
        maxes.clone()
    } else {
        op::squeeze_dims::call(&maxes, dim)?
    };
    // Meta tensors carry no values to fix up (and `masked_fill_` has no Meta kernel).
    if !input.is_meta() {
        let infinite = op::eq_Scalar::call(
            &op::abs::call(&maxes_squeezed)?,
            Scalar::Float(f64::INFINITY),
        )?;
        op::masked_fill__Scalar::call(&maxes_squeezed, &infinite, Scalar::Float(0.0))?;
    }
    let shifted = op::sub_Tensor::call(&input, &maxes, Scalar::Int(1))?;
    op::exp_::call(&shifted)?;
    op::sum_IntList_out::call(&shifted, Some(dim), keepdim, None, out)?;
    op::log_::call(out)?;
    op::add__Tensor::call(out, &maxes_squeezed, Scalar::Int(1))?;
    Ok(out.clone())
}

// ---------------------------------------------------------------------------------------------
// cross_entropy_loss
// ---------------------------------------------------------------------------------------------

/// `at::Reduction`: `none`, `mean`, `sum`.
const REDUCTION_NONE: i64 = 0;
const REDUCTION_MEAN: i64 = 1;
const REDUCTION_SUM: i64 = 2;

/// `weight` viewed as `[1, C, 1, ...]` to broadcast against an input of `ndim` dimensions
/// with classes along `class_dim`.
fn broadcast_weight(weight: &Tensor, ndim: usize, class_dim: usize) -> Result<Tensor> {
    let mut shape = vec![1i64; ndim];
    if let Some(s) = shape.get_mut(class_dim) {
        *s = weight.size(0)?;
    }
    op::view::call(weight, &shape)
}

fn invalid_reduction(reduction: i64) -> switchyard_core::Error {
    switchyard_core::Error::runtime(format!(
        "Invalid reduction type encountered in cross_entropy: {reduction}"
    ))
}

/// `cross_entropy_loss_prob_target`: the target holds class probabilities (same shape as
/// the input).
fn cross_entropy_prob_target(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    label_smoothing: f64,
) -> Result<Tensor> {
    let class_dim = usize::from(self_.dim() != 1);
    let n_classes = self_.size(class_dim as i64)?;
    if let Some(w) = weight {
        torch_check!(
            w.dim() == 1 && w.numel() == n_classes,
            "cross_entropy: weight tensor should be defined either for all {n_classes} classes or no classes but got weight tensor of shape: {}",
            fmt_dims(&w.sizes())
        );
    }
    let input = op::log_softmax_int::call(self_, class_dim as i64, Some(self_.dtype()))?;
    let target = if label_smoothing > 0.0 {
        torch_check!(
            label_smoothing <= 1.0,
            "label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}"
        );
        let kept = op::mul_Scalar::call(target, Scalar::Float(1.0 - label_smoothing))?;
        op::add_Scalar::call(
            &kept,
            Scalar::Float(label_smoothing / n_classes as f64),
            Scalar::Int(1),
        )?
    } else {
        target.clone()
    };
    let mut prod = op::mul_Tensor::call(&input, &target)?;
    if let Some(w) = weight {
        let w = broadcast_weight(w, input.dim(), class_dim)?;
        prod = op::mul_Tensor::call(&prod, &w)?;
    }
    match reduction {
        REDUCTION_MEAN => {
            let total = op::neg::call(&op::sum::call(&prod, None)?)?;
            if input.numel() == 0 {
                op::fill__Scalar::call(&total, Scalar::Float(f64::NAN))
            } else {
                op::div_Scalar::call(&total, Scalar::Int(input.numel() / n_classes))
            }
        }
        REDUCTION_SUM => op::neg::call(&op::sum::call(&prod, None)?),
        REDUCTION_NONE => op::neg::call(&op::sum_dim_IntList::call(
            &prod,
            Some(&[class_dim as i64]),
            false,
            None,
        )?),
        r => Err(invalid_reduction(r)),
    }
}

/// `cross_entropy_loss_label_smoothing`: class-index targets with the loss mixed with the
/// mean log-probability over all classes.
fn cross_entropy_label_smoothing(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    label_smoothing: f64,
) -> Result<Tensor> {
    let class_dim = usize::from(self_.dim() != 1);
    let input = op::log_softmax_int::call(self_, class_dim as i64, Some(self_.dtype()))?;
    let nllloss = op::nll_loss_nd::call(&input, target, weight, reduction, ignore_index)?;
    let n_classes = input.size(class_dim as i64)?;
    let ignore_mask = op::eq_Scalar::call(target, Scalar::Int(ignore_index))?;
    let class_sum = |t: &Tensor| {
        op::sum_dim_IntList::call(t, Some(&[class_dim as i64]), false, None)
            .and_then(|s| op::neg::call(&s))
    };
    let smooth_loss = match weight {
        Some(w) => {
            let w = broadcast_weight(w, input.dim(), class_dim)?;
            class_sum(&op::mul_Tensor::call(&input, &w)?)?
        }
        None => class_sum(&input)?,
    };
    op::masked_fill__Scalar::call(&smooth_loss, &ignore_mask, Scalar::Float(0.0))?;
    let ret = match reduction {
        REDUCTION_MEAN => {
            let total = op::sum::call(&smooth_loss, None)?;
            let kept = op::logical_not::call(&ignore_mask)?;
            let denominator = match weight {
                // Normalised by the weights of the kept targets, as `nll_loss_nd` is.
                Some(w) => {
                    let kept_targets = op::masked_select::call(target, &kept)?;
                    let picked = op::gather::call(
                        w,
                        0,
                        &op::flatten_using_ints::call(&kept_targets, 0, -1)?,
                        false,
                    )?;
                    op::sum::call(&picked, None)?
                }
                None => op::sum::call(&kept, None)?,
            };
            op::div_Tensor::call(&total, &denominator)?
        }
        REDUCTION_SUM => op::sum::call(&smooth_loss, None)?,
        REDUCTION_NONE => smooth_loss,
        r => return Err(invalid_reduction(r)),
    };
    let nll_part = op::mul_Scalar::call(&nllloss, Scalar::Float(1.0 - label_smoothing))?;
    let smooth_part =
        op::mul_Scalar::call(&ret, Scalar::Float(label_smoothing / n_classes as f64))?;
    op::add_Tensor::call(&nll_part, &smooth_part, Scalar::Int(1))
}

/// `cross_entropy_loss`: `nll_loss_nd(log_softmax(self, class_dim), target)` for class-index
/// targets, or the probability-target form when `target` has the input's shape; both with
/// optional label smoothing.
pub fn cross_entropy_loss(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    label_smoothing: f64,
) -> Result<Tensor> {
    if self_.sizes() == target.sizes() {
        torch_check!(
            target.dtype().is_floating_point(),
            "Expected floating point type for target with class probabilities, got {}",
            target.dtype()
        );
        torch_check!(
            ignore_index < 0,
            "ignore_index is not supported for floating point target"
        );
        return cross_entropy_prob_target(self_, target, weight, reduction, label_smoothing);
    }
    if label_smoothing > 0.0 {
        torch_check!(
            label_smoothing <= 1.0,
            "label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}"
        );
        return cross_entropy_label_smoothing(
            self_,
            target,
            weight,
            reduction,
            ignore_index,
            label_smoothing,
        );
    }
    let class_dim = i64::from(self_.dim() != 1);
    let input = op::log_softmax_int::call(self_, class_dim, Some(self_.dtype()))?;
    op::nll_loss_nd::call(&input, target, weight, reduction, ignore_index)
}

// ---------------------------------------------------------------------------------------------
// max.other / min.other
// ---------------------------------------------------------------------------------------------

/// `max.other`: `maximum`.
pub fn max(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    op::maximum::call(self_, other)
}

/// `max.out`: `maximum.out`.
pub fn max_out(self_: &Tensor, other: &Tensor, out: &Tensor) -> Result<Tensor> {
    op::maximum_out::call(self_, other, out)
}

/// `min.other`: `minimum`.
pub fn min(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    op::minimum::call(self_, other)
}

/// `min.out`: `minimum.out`.
pub fn min_out(self_: &Tensor, other: &Tensor, out: &Tensor) -> Result<Tensor> {
    op::minimum_out::call(self_, other, out)
}

/// `t.item()` for a tensor on any device (PyTorch's `_local_scalar_dense`): device tensors are
/// copied to the host first.
fn host_item(t: &Tensor) -> Result<i64> {
    if t.is_cpu() {
        return t.item::<i64>();
    }
    op::_to_copy::call(t, None, None, Some(Device::CPU), None, false, None)?.item::<i64>()
}

// ---------------------------------------------------------------------------------------------
// Gradient helpers shared by the autograd formulas and functionalization's view inverses
// ---------------------------------------------------------------------------------------------

/// Sums `t` down to `shape`, the inverse of broadcasting `shape` up to `t`'s (PyTorch's
/// `at::sum_to`): leading dimensions are summed away, and dimensions where `shape` has 1 are
/// summed keeping the dimension. Returns `t` itself when the sizes already match.
///
/// Not an operator (as in PyTorch): the autograd formulas of broadcasting operators and
/// functionalization's inverse of `expand` both call it.
pub fn sum_to(t: &Tensor, shape: &[i64]) -> Result<Tensor> {
    let sizes = t.sizes();
    if sizes[..] == shape[..] {
        return Ok(t.clone());
    }
    if shape.is_empty() {
        return op::sum::call(t, None);
    }
    let leading = sizes.len().saturating_sub(shape.len());
    let mut dims: Vec<i64> = (0..leading as i64).collect();
    for (i, &s) in shape.iter().enumerate() {
        if s == 1 && sizes[leading + i] != 1 {
            dims.push((leading + i) as i64);
        }
    }
    let mut r = t.clone();
    if !dims.is_empty() {
        r = op::sum_dim_IntList::call(&r, Some(&dims), true, None)?;
    }
    if leading > 0 {
        r = op::reshape::call(&r, shape)?;
    }
    Ok(r)
}

/// `unfold_backward` (CPU and Meta): a zero tensor of `input_sizes` (`grad_in`'s dtype and
/// device) into which every window of `grad_in` (the gradient of
/// `input.unfold(dim, size, step)`) is added back where it came from, so overlapping windows
/// (`size > step`) sum and elements no window covers stay 0.
///
/// As PyTorch's kernel: the dimension is wrapped against `input_sizes` (its `Dimension out of
/// range` error); windows that do not overlap (`step >= size`) are copied into
/// `zeros.unfold(dim, size, step)` (`copy_`'s broadcasting and its errors); overlapping ones
/// are checked as the kernel's TensorIterator checks them ([`unfold_backward_overlap_check`])
/// and then summed by one `scatter_add` along `dim`, driven by the windows' element indices
/// (`arange(extent).unfold(0, size, step)` for the `grad_in.size(dim)` windows `grad_in`
/// has), so the kernel runs on every backend that has those operators. On Meta tensors only
/// the checks and the result's geometry are computed. A 0-dim input takes the gradient's
/// single element.
pub fn unfold_backward(
    grad_in: &Tensor,
    input_sizes: &[i64],
    dim: i64,
    size: i64,
    step: i64,
) -> Result<Tensor> {
    let zeros = |sizes: &[i64]| {
        op::zeros::call(
            sizes,
            Some(grad_in.dtype()),
            None,
            Some(grad_in.device()),
            None,
        )
    };
    let d = wrap_dim(dim, input_sizes.len())?;
    if step >= size {
        let result = zeros(input_sizes)?;
        let windows = op::unfold::call(&result, d as i64, size, step)?;
        op::copy_::call(&windows, grad_in, false)?;
        return Ok(result);
    }
    unfold_backward_overlap_check(grad_in, input_sizes, d, size, step)?;
    if grad_in.is_meta() {
        return zeros(input_sizes);
    }
    if input_sizes.is_empty() {
        return op::clone::call(&op::reshape::call(grad_in, &[])?, None);
    }
    let n = input_sizes[d];
    // The windows `grad_in` holds along `dim`, and the extent they cover.
    let nw = grad_in.size(d as i64)?;
    let extent = (nw - 1).saturating_mul(step).saturating_add(size).max(0);
    let positions = op::arange_start::call(
        Scalar::Int(0),
        Scalar::Int(extent),
        Some(ScalarType::Long),
        None,
        Some(grad_in.device()),
        None,
    )?;
    let windows = op::unfold::call(&positions, 0, size, step)?;
    // Only the first `size` elements of each window are read; dimensions of size 1 broadcast.
    let mut g = grad_in.clone();
    if g.size(-1)? > size {
        g = op::narrow::call(&g, -1, 0, size)?;
    }
    let mut full: Vec<i64> = input_sizes.to_vec();
    full[d] = nw;
    full.push(size);
    let g = op::expand::call(&g, &full, false)?;
    // [.., windows, .., size] -> [.., windows * size, ..]: each window's elements in a row.
    let g = op::movedim_int::call(&g, -1, d as i64 + 1)?;
    let mut merged = input_sizes.to_vec();
    merged[d] = nw * size;
    let g = op::reshape::call(&g, &merged)?;
    let mut index_shape = vec![1i64; input_sizes.len()];
    index_shape[d] = nw * size;
    let index = op::reshape::call(&windows, &index_shape)?;
    let index = op::expand::call(&index, &merged, false)?;
    let mut buffer_sizes = input_sizes.to_vec();
    buffer_sizes[d] = n.max(extent);
    let summed = op::scatter_add::call(&zeros(&buffer_sizes)?, d as i64, &index, &g)?;
    if extent <= n {
        return Ok(summed);
    }
    // Windows reaching past the input: their elements beyond it are dropped.
    let kept = op::narrow::call(&summed, d as i64, 0, n)?;
    op::clone::call(&kept, Some(switchyard_core::MemoryFormat::Contiguous))
}

/// The shape checks of the TensorIterator PyTorch's `unfold_backward` kernel builds for
/// overlapping windows (`_make_unfold_backward_iter_over_grad_out`): the result
/// (`input_sizes`, of `iter = min(input_sizes[dim], (grad_in.size(dim) - 1) * step + size)`
/// along `dim`), `grad_in` without its last dimension and with `dim` of size 1, and the
/// `iter` indices along `dim` broadcast together in that order ("The size of tensor a (3) must match the size of
/// tensor b (2) at non-singleton dimension 1"), and the result is not broadcast ("output with
/// shape [..] doesn't match the broadcast shape [..]").
fn unfold_backward_overlap_check(
    grad_in: &Tensor,
    input_sizes: &[i64],
    d: usize,
    size: i64,
    step: i64,
) -> Result<()> {
    let nonempty = |sizes: &[i64]| {
        if sizes.is_empty() {
            vec![1]
        } else {
            sizes.to_vec()
        }
    };
    let mut out = nonempty(input_sizes);
    let mut grad = nonempty(&grad_in.sizes());
    let grad_dim_size = grad.get(d).copied().unwrap_or(1);
    if let Some(s) = grad.get_mut(d) {
        *s = 1;
    }
    grad.pop();
    let iter = out[d].min(
        (grad_dim_size - 1)
            .saturating_mul(step)
            .saturating_add(size),
    );
    // The result is iterated over its first `iter` elements along `dim`.
    out[d] = iter;
    let mut index = vec![1i64; out.len()];
    index[d] = iter;
    let shape = switchyard_core::shape::infer_size(&out, &grad)?;
    let shape = switchyard_core::shape::infer_size(&shape, &index)?;
    torch_check!(
        shape.as_slice() == out.as_slice(),
        "output with shape {} doesn't match the broadcast shape {}",
        fmt_dims(&out),
        fmt_dims(&shape)
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// block_diag
// ---------------------------------------------------------------------------------------------

/// `block_diag` (PyTorch's `TensorShape.cpp`): the inputs (at most 2-d; a 1-d input is one
/// row, a 0-d one a 1×1 block) on the diagonal of a zero matrix of their promoted dtype. No
/// input gives an empty `[1, 0]` matrix of the default dtype.
pub fn block_diag(tensors: &[Tensor]) -> Result<Tensor> {
    let Some(first) = tensors.first() else {
        return op::empty_memory_format::call(&[1, 0], None, None, None, None, None);
    };
    let device = first.device();
    for (i, t) in tensors.iter().enumerate() {
        torch_check!(
            t.device() == device,
            "torch.block_diag: input tensors must all be on the same device. Input 0 is on device {device} and input {i} is on device {}",
            t.device()
        );
    }
    let args: Vec<switchyard_core::promotion::PromotionArg<'_>> = tensors
        .iter()
        .map(switchyard_core::promotion::PromotionArg::Tensor)
        .collect();
    let dtype = switchyard_core::promotion::result_type(&args).unwrap_or(first.dtype());
    let mut blocks = Vec::with_capacity(tensors.len());
    let (mut rows, mut cols) = (0i64, 0i64);
    for (i, t) in tensors.iter().enumerate() {
        let ndim = t.dim();
        torch_check!(
            ndim <= 2,
            "torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has {ndim} dimensions"
        );
        // A 1-d input is a row: its length counts as columns.
        let block = match ndim {
            2 => t.clone(),
            1 => op::expand::call(t, &[1, t.size(0)?], false)?,
            _ => op::expand::call(t, &[1, 1], false)?,
        };
        let (r, c) = (block.size(0)?, block.size(1)?);
        rows = rows.checked_add(r).ok_or_else(overflow)?;
        cols = cols.checked_add(c).ok_or_else(overflow)?;
        blocks.push(block);
    }
    let result = op::zeros::call(&[rows, cols], Some(dtype), None, Some(device), None)?;
    let (mut r0, mut c0) = (0i64, 0i64);
    for block in &blocks {
        let (r, c) = (block.size(0)?, block.size(1)?);
        let window = op::slice_Tensor::call(&result, 0, Some(r0), Some(r0 + r), 1)?;
        let window = op::slice_Tensor::call(&window, 1, Some(c0), Some(c0 + c), 1)?;
        op::copy_::call(&window, block, false)?;
        r0 += r;
        c0 += c;
    }
    Ok(result)
}

fn overflow() -> switchyard_core::Error {
    switchyard_core::Error::runtime("torch.block_diag: the result's size overflows int64")
}
