//! Batch and instance normalization composites and Meta kernels, and the fused
//! moving-average observer's composite and Meta kernel.
//!
//! The composites follow PyTorch's decompositions: `batch_norm` → `_batch_norm_impl_index` →
//! `native_batch_norm` (`Normalization.cpp`), `native_batch_norm` →
//! `_native_batch_norm_legit*` (the decomposition PyTorch's Python dispatcher registers for
//! it at CompositeImplicitAutograd and Autograd, `native_batch_norm_decomposition`), and
//! `instance_norm` as batch norm over `(1, N·C, ...)` with repeated running statistics
//! averaged back into the caller's through `alias(..).copy_(..)`. They call the other
//! operators through the dispatcher, so autograd and functionalization see what PyTorch's
//! see (A.11's F31 and F36 graphs).

use crate::meta::{
    BatchNormInfo, batch_norm_check_out, batch_norm_checks, fused_moving_avg_obs_fq_checks,
};
use crate::op;
use crate::runtime::not_differentiable_error;
use crate::structured::resize_output;
use switchyard_core::{
    Layout, MemoryFormat, Result, Scalar, ScalarType, Tensor, bail, torch_check,
};

/// `batch_norm`: the first result of `_batch_norm_impl_index`.
pub fn batch_norm(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
    cudnn_enabled: bool,
) -> Result<Tensor> {
    let r = op::_batch_norm_impl_index::call(
        input,
        weight,
        bias,
        running_mean,
        running_var,
        training,
        momentum,
        eps,
        cudnn_enabled,
    )?;
    Ok(r.0)
}

/// PyTorch's `toAccumulateType(dtype, /*is_cuda=*/false)`: the CPU accumulation type.
fn cpu_accumulate_type(dtype: ScalarType) -> ScalarType {
    match dtype {
        ScalarType::Half | ScalarType::BFloat16 => ScalarType::Float,
        ScalarType::Float | ScalarType::Double => ScalarType::Double,
        ScalarType::Bool => ScalarType::Bool,
        d if d.is_integral(false) => ScalarType::Long,
        d => d,
    }
}

/// `check_dims_match_num_input_features`.
fn check_features(name: &str, expected: i64, actual: i64) -> Result<()> {
    torch_check!(
        actual == expected,
        "{name} should contain {expected} elements not {actual}"
    );
    Ok(())
}

/// `_batch_norm_impl_index` on the native backend (index 0): an empty input gives its clone
/// (scaled and shifted by the first weight and bias) with unfilled statistics of the
/// accumulation type; otherwise the sizes of the parameters are checked and
/// `native_batch_norm` runs, after the (empty) cuDNN reserve tensor is made, as PyTorch makes
/// it: first (A.11's F31 graph starts with it).
pub fn _batch_norm_impl_index(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
    _cudnn_enabled: bool,
) -> Result<(Tensor, Tensor, Tensor, Tensor, i64)> {
    let num_features = input.size(1)?;
    let device = input.device();
    let reserve = || {
        op::empty_memory_format::call(
            &[0],
            Some(ScalarType::Byte),
            Some(Layout::Strided),
            Some(device),
            None,
            None,
        )
    };
    if input.numel() == 0 {
        let reserve = reserve()?;
        let acc = cpu_accumulate_type(input.dtype());
        let stat = || {
            op::empty_memory_format::call(
                &[num_features],
                Some(acc),
                Some(Layout::Strided),
                Some(device),
                None,
                None,
            )
        };
        let (save_mean, save_invstd) = (stat()?, stat()?);
        // Not a view of the input, not an empty tensor cut from the graph: a clone.
        let mut out = op::clone::call(input, None)?;
        if let Some(w) = weight {
            out = op::mul_Tensor::call(&out, &op::select_int::call(w, 0, 0)?)?;
        }
        if let Some(b) = bias {
            out = op::add_Tensor::call(&out, &op::select_int::call(b, 0, 0)?, Scalar::Int(1))?;
        }
        return Ok((out, save_mean, save_invstd, reserve, 0));
    }
    match running_mean {
        Some(t) => check_features("running_mean", num_features, t.numel())?,
        None => torch_check!(training, "running_mean must be defined in evaluation mode"),
    }
    match running_var {
        Some(t) => check_features("running_var", num_features, t.numel())?,
        None => torch_check!(training, "running_var must be defined in evaluation mode"),
    }
    if let Some(w) = weight {
        check_features("weight", num_features, w.numel())?;
    }
    if let Some(b) = bias {
        check_features("bias", num_features, b.numel())?;
    }
    let reserve = reserve()?;
    let (out, save_mean, save_invstd) = op::native_batch_norm::call(
        input,
        weight,
        bias,
        running_mean,
        running_var,
        training,
        momentum,
        eps,
    )?;
    Ok((out, save_mean, save_invstd, reserve, 0))
}

/// `native_batch_norm` as PyTorch's `native_batch_norm_decomposition`: no running
/// statistics → `_native_batch_norm_legit.no_stats`; training → `_native_batch_norm_legit`
/// (which declares that it writes them); evaluation → `_native_batch_norm_legit_no_training`.
/// Statistics given alone are refused with the eager kernel's words.
pub fn native_batch_norm(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    // PyTorch's native_batch_norm has an Autograd kernel, which refuses running statistics
    // that require grad (its derivatives.yaml entry gives them no formula) before anything
    // runs; this decomposition runs above autograd, so it refuses them itself, in that
    // kernel's words (batch_norm and instance_norm reach it too, as in PyTorch).
    if switchyard_core::local_dispatch::is_grad_enabled() {
        for (stat, name) in [(running_mean, "running_mean"), (running_var, "running_var")] {
            if stat.is_some_and(Tensor::requires_grad) {
                return Err(not_differentiable_error("native_batch_norm", name));
            }
        }
    }
    match (running_mean, running_var) {
        (None, None) => op::_native_batch_norm_legit_no_stats::call(
            input, weight, bias, training, momentum, eps,
        ),
        (Some(rm), Some(rv)) if training => {
            op::_native_batch_norm_legit::call(input, weight, bias, rm, rv, training, momentum, eps)
        }
        (Some(rm), Some(rv)) => op::_native_batch_norm_legit_no_training::call(
            input, weight, bias, rm, rv, momentum, eps,
        ),
        (None, Some(_)) if !training => {
            bail!(
                ValueError,
                "running_mean must be defined in evaluation mode"
            )
        }
        (Some(_), None) if !training => {
            bail!(ValueError, "running_var must be defined in evaluation mode")
        }
        _ => bail!(
            ValueError,
            "running_mean and running_var must either both be None or neither be None"
        ),
    }
}

/// `_native_batch_norm_legit_no_training`: `_native_batch_norm_legit` in evaluation mode
/// (which reads the running statistics and writes nothing).
pub fn _batch_norm_legit_no_training(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: &Tensor,
    running_var: &Tensor,
    momentum: f64,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    op::_native_batch_norm_legit::call(
        input,
        weight,
        bias,
        running_mean,
        running_var,
        false,
        momentum,
        eps,
    )
}

/// `repeat_if_defined`.
fn repeat_if_defined(t: Option<&Tensor>, times: i64) -> Result<Option<Tensor>> {
    t.map(|t| op::repeat::call(t, &[times])).transpose()
}

/// `instance_norm`: batch norm of the input viewed as one sample of `N·C` channels, with
/// weight, bias and running statistics repeated `N` times; the running statistics the batch
/// norm updated are averaged over the samples and written back into the caller's through
/// `alias(..).copy_(..)` (they are read-only arguments in the schema).
pub fn instance_norm(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    use_input_stats: bool,
    momentum: f64,
    eps: f64,
    cudnn_enabled: bool,
) -> Result<Tensor> {
    torch_check!(
        use_input_stats || (running_mean.is_some() && running_var.is_some()),
        "Expected running_mean and running_var to be defined when use_input_stats is false"
    );
    let sizes = input.sizes();
    let b = input.size(0)?;
    let c = input.size(1)?;
    let mut shape: Vec<i64> = sizes.to_vec();
    shape[1] = b
        .checked_mul(c)
        .ok_or_else(|| switchyard_core::Error::runtime("instance_norm: N * C overflows int64"))?;
    shape[0] = 1;
    let weight_ = repeat_if_defined(weight, b)?;
    let bias_ = repeat_if_defined(bias, b)?;
    let running_mean_ = repeat_if_defined(running_mean, b)?;
    let running_var_ = repeat_if_defined(running_var, b)?;
    let reshaped = op::view::call(
        &op::contiguous::call(input, MemoryFormat::Contiguous)?,
        &shape,
    )?;
    let out = op::batch_norm::call(
        &reshaped,
        weight_.as_ref(),
        bias_.as_ref(),
        running_mean_.as_ref(),
        running_var_.as_ref(),
        use_input_stats,
        momentum,
        eps,
        cudnn_enabled,
    )?;
    for (stat, repeated) in [(running_mean, &running_mean_), (running_var, &running_var_)] {
        if let (Some(stat), Some(repeated)) = (stat, repeated) {
            // `at::alias(stat).copy_(repeated.view({b, c}).mean(0))`: the alias is made
            // first (C++ evaluates the object of a call before its arguments), as A.11's F36
            // graph shows.
            let target = op::alias::call(stat)?;
            let mean =
                op::mean_dim::call(&op::view::call(repeated, &[b, c])?, Some(&[0]), false, None)?;
            op::copy_::call(&target, &mean, false)?;
        }
    }
    op::view::call(&out, &sizes)
}

// ---------------------------------------------------------------------------------------------
// Meta kernels of batch norm
// ---------------------------------------------------------------------------------------------

/// The sizes of `save_mean` / `save_invstd`: one value per channel in training, none in
/// evaluation.
pub fn batch_norm_stat_sizes(info: &BatchNormInfo, training: bool) -> [i64; 1] {
    [if training { info.channels } else { 0 }]
}

fn meta_outputs(
    input: &Tensor,
    info: &BatchNormInfo,
    training: bool,
) -> Result<(Tensor, Tensor, Tensor)> {
    let device = input.device();
    let stat = batch_norm_stat_sizes(info, training);
    Ok((
        Tensor::allocate(&input.sizes(), input.dtype(), device)?,
        Tensor::allocate(&stat, info.param_dtype, device)?,
        Tensor::allocate(&stat, info.param_dtype, device)?,
    ))
}

/// `batch_norm_cpu_out`'s handling of the caller's outputs, after the checks: `out` takes the
/// input's sizes; in training the statistics are resized to one value per channel, in
/// evaluation they are left as they are (PyTorch writes nothing to them then).
pub fn batch_norm_prepare_outs(
    input: &Tensor,
    info: &BatchNormInfo,
    training: bool,
    out: &Tensor,
    save_mean: &Tensor,
    save_invstd: &Tensor,
) -> Result<()> {
    resize_output(out, &input.sizes())?;
    if training {
        batch_norm_check_out(save_mean, info.param_dtype)?;
        batch_norm_check_out(save_invstd, info.param_dtype)?;
        resize_output(save_mean, &[info.channels])?;
        resize_output(save_invstd, &[info.channels])?;
    }
    batch_norm_check_out(out, input.dtype())
}

/// `_native_batch_norm_legit` on Meta: the CPU kernel's checks and output shapes.
pub fn _batch_norm_legit_meta(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: &Tensor,
    running_var: &Tensor,
    training: bool,
    _momentum: f64,
    _eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    let info = batch_norm_checks(
        input,
        weight,
        bias,
        Some(running_mean),
        Some(running_var),
        training,
    )?;
    meta_outputs(input, &info, training)
}

/// `_native_batch_norm_legit.no_stats` on Meta.
pub fn _batch_norm_legit_no_stats_meta(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    training: bool,
    _momentum: f64,
    _eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    let info = batch_norm_checks(input, weight, bias, None, None, training)?;
    meta_outputs(input, &info, training)
}

/// `native_batch_norm.out` on Meta.
pub fn batch_norm_meta_out(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    training: bool,
    _momentum: f64,
    _eps: f64,
    out: &Tensor,
    save_mean: &Tensor,
    save_invstd: &Tensor,
) -> Result<(Tensor, Tensor, Tensor)> {
    let info = batch_norm_checks(input, weight, bias, running_mean, running_var, training)?;
    batch_norm_prepare_outs(input, &info, training, out, save_mean, save_invstd)?;
    Ok((out.clone(), save_mean.clone(), save_invstd.clone()))
}

/// `_native_batch_norm_legit.out` on Meta.
pub fn _batch_norm_legit_meta_out(
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
    batch_norm_meta_out(
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

/// `_native_batch_norm_legit.no_stats_out` on Meta.
pub fn _batch_norm_legit_no_stats_meta_out(
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
    batch_norm_meta_out(
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
// The fused moving-average observer with fake quantization
// ---------------------------------------------------------------------------------------------

/// `_fused_moving_avg_obs_fq_helper` on Meta: the checks that need no data, an output like
/// the input and a `Bool` mask.
pub fn fused_moving_avg_obs_fake_quant_meta(
    self_: &Tensor,
    observer_on: &Tensor,
    fake_quant_on: &Tensor,
    _running_min: &Tensor,
    _running_max: &Tensor,
    _scale: &Tensor,
    _zero_point: &Tensor,
    _averaging_const: f64,
    _quant_min: i64,
    _quant_max: i64,
    ch_axis: i64,
    _per_row_fake_quant: bool,
    _symmetric_quant: bool,
) -> Result<(Tensor, Tensor)> {
    fused_moving_avg_obs_fq_checks(self_, observer_on, fake_quant_on, ch_axis)?;
    let (sizes, device) = (self_.sizes(), self_.device());
    Ok((
        Tensor::allocate(&sizes, self_.dtype(), device)?,
        Tensor::allocate(&sizes, ScalarType::Bool, device)?,
    ))
}

/// `fused_moving_avg_obs_fake_quant`: the helper's output (an empty input is cloned without
/// observing anything).
pub fn fused_moving_avg_obs_fake_quant(
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
) -> Result<Tensor> {
    if self_.numel() == 0 {
        return op::clone::call(self_, None);
    }
    let (output, _mask) = op::_fused_moving_avg_obs_fq_helper::call(
        self_,
        observer_on,
        fake_quant_on,
        running_min,
        running_max,
        scale,
        zero_point,
        averaging_const,
        quant_min,
        quant_max,
        ch_axis,
        per_row_fake_quant,
        symmetric_quant,
    )?;
    Ok(output)
}
