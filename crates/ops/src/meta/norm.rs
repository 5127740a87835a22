//! Checks shared by the CPU and Meta kernels of batch normalization
//! (`_native_batch_norm_legit*`, `native_batch_norm.out`) and of the fused moving-average
//! observer with fake quantization (`_fused_moving_avg_obs_fq_helper`), in PyTorch's order and
//! words (`Normalization.cpp`'s `batch_norm_cpu`, `mixed_data_type.h`,
//! `fused_obs_fake_quant.cpp`).

use switchyard_core::{
    Error, ErrorKind, Result, ScalarType, Tensor, torch_check, torch_check_value,
};

/// What a batch-norm kernel needs after the checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchNormInfo {
    /// `input.size(1)`.
    pub channels: i64,
    /// The dtype of `save_mean` / `save_invstd` and of the parameters: `Float` for a
    /// `bf16`/`f16` input with `Float` parameters (PyTorch's "mixed type"), else the input's.
    pub param_dtype: ScalarType,
}

/// The dtype of the first parameter given (PyTorch's `first_type`), if any.
fn first_type(params: &[Option<&Tensor>]) -> Option<ScalarType> {
    params.iter().flatten().map(|t| t.dtype()).next()
}

/// PyTorch's `is_mixed_type` and `check_mixed_data_type` over `(weight, bias, running_mean,
/// running_var)`: parameters of another dtype than the input must all be `Float`, and the
/// input then `BFloat16` or `Half`. Returns the parameters' dtype.
pub fn batch_norm_param_dtype(input: &Tensor, params: &[Option<&Tensor>]) -> Result<ScalarType> {
    match first_type(params) {
        Some(p) if p != input.dtype() => {
            for t in params.iter().flatten() {
                torch_check!(
                    t.dtype() == ScalarType::Float,
                    "mixed dtype (CPU): expect parameter to have scalar type of Float"
                );
            }
            torch_check!(
                matches!(input.dtype(), ScalarType::Half | ScalarType::BFloat16),
                "mixed dtype (CPU): all inputs must share same datatype."
            );
            Ok(ScalarType::Float)
        }
        _ => Ok(input.dtype()),
    }
}

/// `batch_norm_cpu`'s checks, in its order: running statistics present in evaluation mode and
/// given together, an input with a channel dimension, the parameters' dtypes (mixed or all
/// the input's, "expected scalar type Half but found Float"), a non-empty input in training
/// mode, one-dimensional running statistics. PyTorch reads (and writes) past the end of
/// parameters shorter than the channel count; here that is refused with
/// `_batch_norm_impl_index`'s words ("running_mean should contain 3 elements not 2").
///
/// The CPU kernel's floating-point dtype coverage (`"batch_norm" not implemented for 'Long'`)
/// comes right after the channel dimension, before the parameters' dtypes; the Meta kernels
/// make it too, so a call traced through shape inference (the lazy device) raises the CPU's
/// error rather than a later parameter check's.
pub fn batch_norm_checks(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    training: bool,
) -> Result<BatchNormInfo> {
    let channels = batch_norm_presence_checks(
        input,
        running_mean.is_some(),
        running_var.is_some(),
        training,
    )?;
    let dtype = input.dtype();
    if !dtype.is_floating_point() || dtype.is_complex() {
        return Err(Error::new(
            ErrorKind::NotImplementedError,
            format!("\"batch_norm\" not implemented for '{dtype}'"),
        ));
    }
    let params = [weight, bias, running_mean, running_var];
    let param_dtype = batch_norm_param_dtype(input, &params)?;
    if param_dtype == input.dtype() {
        // Without mixing, every parameter is read as the input's type.
        for t in [running_mean, running_var, weight, bias]
            .into_iter()
            .flatten()
        {
            torch_check!(
                t.dtype() == param_dtype,
                "expected scalar type {} but found {}",
                param_dtype,
                t.dtype()
            );
        }
    }
    if training {
        torch_check!(
            input.numel() != 0,
            "input tensor must have at least one element, but got input_sizes = {}",
            fmt_sizes(&input.sizes())
        );
    }
    for t in [running_mean, running_var].into_iter().flatten() {
        torch_check!(
            t.dim() == 1,
            "TensorAccessor expected 1 dims but tensor has {}",
            t.dim()
        );
    }
    for (t, name) in [
        (running_mean, "running_mean"),
        (running_var, "running_var"),
        (weight, "weight"),
        (bias, "bias"),
    ] {
        if let Some(t) = t
            && t.numel() < channels
        {
            torch_check!(
                false,
                "{name} should contain {channels} elements not {}",
                t.numel()
            );
        }
    }
    Ok(BatchNormInfo {
        channels,
        param_dtype,
    })
}

/// The first of [`batch_norm_checks`]: running statistics present in evaluation mode and
/// given together, and an input with a channel dimension, whose size it returns. The dtype
/// coverage comes right after these.
pub fn batch_norm_presence_checks(
    input: &Tensor,
    has_running_mean: bool,
    has_running_var: bool,
    training: bool,
) -> Result<i64> {
    if !training {
        torch_check_value!(
            has_running_mean,
            "running_mean must be defined in evaluation mode"
        );
        torch_check_value!(
            has_running_var,
            "running_var must be defined in evaluation mode"
        );
    }
    torch_check_value!(
        has_running_mean == has_running_var,
        "running_mean and running_var must either both be None or neither be None"
    );
    input.size(1)
}

/// `[0, 3]` as PyTorch prints sizes in messages.
fn fmt_sizes(sizes: &[i64]) -> String {
    let parts: Vec<String> = sizes.iter().map(i64::to_string).collect();
    format!("[{}]", parts.join(", "))
}

/// `batch_norm_cpu_out`'s check of a caller's output tensor: it must have the dtype the
/// kernel writes (`out`: the input's; `save_mean` / `save_invstd`: the parameters'), "expected
/// scalar type Float but found Double".
pub fn batch_norm_check_out(out: &Tensor, dtype: ScalarType) -> Result<()> {
    torch_check!(
        out.dtype() == dtype,
        "expected scalar type {} but found {}",
        dtype,
        out.dtype()
    );
    Ok(())
}

/// The checks of `_fused_moving_avg_obs_fq_helper` that need no data: `ch_axis` within the
/// input's dimensions, and one-element `observer_on` / `fake_quant_on` flags (PyTorch reads
/// them with `item()`). The rest (the dtypes the observer and the fake quantization read,
/// which depend on the flags' values) is checked by the CPU kernel.
pub fn fused_moving_avg_obs_fq_checks(
    self_: &Tensor,
    observer_on: &Tensor,
    fake_quant_on: &Tensor,
    ch_axis: i64,
) -> Result<()> {
    torch_check!(
        ch_axis < self_.dim() as i64,
        "Error in fused_moving_avg_obs_fake_quant_cpu: ch_axis must be < self.dim()"
    );
    for flag in [observer_on, fake_quant_on] {
        torch_check!(
            flag.numel() == 1,
            "a Tensor with {} elements cannot be converted to Scalar",
            flag.numel()
        );
    }
    Ok(())
}
