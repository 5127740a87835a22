//! Meta functions of structured nn operators: `mse_loss`, `nll_loss_forward`, `avg_pool2d`,
//! `max_pool2d_with_indices`. Checks, their order and messages follow PyTorch 2.15.

use crate::iter_meta::{IterConfig, IterInfo};
use crate::structured::{Meta, OutputSpec, Outs};
use switchyard_core::shape::{DimVec, channels_last_strides, fmt_dims};
use switchyard_core::{
    Error, Result, ScalarType, Tensor, torch_check, torch_check_index, torch_check_value,
};

/// `Reduction::None`.
const REDUCTION_NONE: i64 = 0;
/// `Reduction::Mean`.
const REDUCTION_MEAN: i64 = 1;
/// `Reduction::Sum`.
const REDUCTION_SUM: i64 = 2;

/// `mse_loss(self, target, reduction)`: elementwise `(self - target)²` for `reduction=0`
/// (a broadcasting binary op), else its mean (1) or sum (2) as a 0-dim tensor of the promoted
/// dtype. A given `out=` tensor keeps its dtype for the reductions (PyTorch only resizes it).
pub fn mse_loss(
    self_: &Tensor,
    target: &Tensor,
    reduction: i64,
    outs: Outs<'_>,
) -> Result<Meta<IterInfo>> {
    if reduction == REDUCTION_NONE {
        return IterConfig::binary(self_, target, outs).build();
    }
    torch_check!(
        reduction == REDUCTION_MEAN || reduction == REDUCTION_SUM,
        "mse_loss: invalid reduction {reduction}; expected 0 (none), 1 (mean) or 2 (sum)"
    );
    let iter = IterConfig::binary(self_, target, Outs::Functional).build()?;
    let dtype = outs.get(0).map_or(iter.extra.common_dtype, Tensor::dtype);
    Ok(Meta::new(
        [OutputSpec::contiguous(&[], dtype, self_.device())],
        iter.extra,
    ))
}

/// `nll_loss_forward(self, target, weight, reduction, ignore_index)`: outputs `(output,
/// total_weight)`; `output` is `[batch]` for `reduction=0` on 2-d input, else 0-dim.
pub fn nll_loss_forward(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    outs: Outs<'_>,
) -> Result<Meta> {
    let _ = (ignore_index, outs);
    torch_check!(
        self_.dim() > 0 && self_.dim() <= 2,
        "input tensor should be 1D or 2D"
    );
    torch_check!(
        target.dim() <= 1,
        "0D or 1D target tensor expected, multi-target not supported"
    );
    torch_check!(
        matches!(target.dtype(), ScalarType::Long | ScalarType::Byte),
        "expected target dtype to be Long or Byte, but got {}",
        target.dtype()
    );
    if self_.dim() == 1 && target.dim() == 1 {
        torch_check_value!(
            target.size(0)? == 1,
            "For 1D input, 1D target must have size 1, but got target size: {}",
            target.size(0)?
        );
    } else if !(self_.dim() == 1 && target.dim() == 0) {
        // c10's `size(0)` does not wrap a scalar's dimension (unlike `Tensor::size`): a 0-dim
        // target with a batched input is an IndexError, not a batch of one.
        torch_check_index!(
            target.dim() > 0,
            "Dimension specified as 0 but tensor has no dimensions"
        );
        torch_check!(
            self_.size(0)? == target.size(0)?,
            "size mismatch (got input: {}, target: {})",
            fmt_dims(&self_.sizes()),
            fmt_dims(&target.sizes())
        );
    }
    let n_classes = self_.size(-1)?;
    if let Some(w) = weight {
        torch_check!(
            w.dim() == 1 && w.numel() == n_classes,
            "weight tensor should be defined either for all {n_classes} classes or no classes but got weight tensor of shape: {}",
            fmt_dims(&w.sizes())
        );
        // The kernel reads the weight as the input's element type. PyTorch checks this inside
        // its floating-point dispatch (a non-floating input fails there first, in the kernel),
        // so only floating inputs are checked here, for every backend.
        torch_check!(
            !self_.dtype().is_floating_point() || w.dtype() == self_.dtype(),
            "expected scalar type {} but found {}",
            self_.dtype(),
            w.dtype()
        );
    }
    let output: &[i64] = if reduction == REDUCTION_NONE && self_.dim() == 2 {
        &[self_.size(0)?]
    } else {
        &[]
    };
    Ok(Meta::new(
        [
            OutputSpec::contiguous(output, self_.dtype(), self_.device()),
            OutputSpec::contiguous(&[], self_.dtype(), self_.device()),
        ],
        (),
    ))
}

/// The window geometry of a 2-d pooling, computed once by the meta function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pool2dParams {
    /// Kernel height and width.
    pub kernel: [i64; 2],
    /// Strides (the kernel size when not given).
    pub stride: [i64; 2],
    /// Implicit padding on both sides.
    pub padding: [i64; 2],
    /// Dilation (1 for average pooling).
    pub dilation: [i64; 2],
    /// Batch size (1 for 3-d input).
    pub batch: i64,
    /// Channels (planes).
    pub channels: i64,
    /// Input height and width.
    pub input: [i64; 2],
    /// Output height and width.
    pub output: [i64; 2],
    /// Whether the input is laid out channels-last (the output then is too).
    pub channels_last: bool,
}

/// PyTorch's `is_channels_last_strides_2d`: whether 4-d strides order the dimensions as
/// NHWC, with PyTorch's tie-breaking for size-1 dimensions (ambiguous cases are NCHW).
pub fn is_channels_last_strides_2d(sizes: &[i64], strides: &[i64]) -> bool {
    if sizes.len() != 4 || strides.len() != 4 || strides[1] == 0 {
        return false;
    }
    let mut min = 0i64;
    for d in [1usize, 3, 2, 0] {
        if sizes[d] == 0 || strides[d] < min {
            return false;
        }
        if d == 0 && min == strides[1] {
            return false;
        }
        min = strides[d];
        if sizes[d] > 1 {
            min = min.saturating_mul(sizes[d]);
        }
    }
    true
}

/// `Tensor::suggest_memory_format() == ChannelsLast` for a tensor.
fn suggests_channels_last(t: &Tensor) -> bool {
    is_channels_last_strides_2d(&t.sizes(), &t.strides())
}

/// The output size of one pooled dimension (PyTorch's `pooling_output_shape`).
fn pooling_output_shape(
    input: i64,
    kernel: i64,
    pad: i64,
    stride: i64,
    dilation: i64,
    ceil_mode: bool,
) -> Result<i64> {
    torch_check!(stride != 0, "stride should not be zero");
    torch_check!(pad >= 0, "pad must be non-negative, but got pad: {pad}");
    torch_check!(
        pad <= ((kernel - 1) * dilation + 1) / 2,
        "pad should be at most half of effective kernel size, but got pad={pad}, kernel_size={kernel} and dilation={dilation}"
    );
    let numerator =
        input + 2 * pad - dilation * (kernel - 1) - 1 + if ceil_mode { stride - 1 } else { 0 };
    let mut out = div_floor(numerator, stride) + 1;
    if ceil_mode && (out - 1) * stride >= input + pad {
        out -= 1;
    }
    Ok(out)
}

/// Division rounding toward negative infinity (PyTorch's `div_rtn`).
fn div_floor(a: i64, b: i64) -> i64 {
    let q = a / b;
    if a % b != 0 && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

/// PyTorch's `pool2d_shape_check`.
fn pool2d_shape_check(input: &Tensor, p: &Pool2dParams) -> Result<()> {
    let [kh, kw] = p.kernel;
    let [dh, dw] = p.stride;
    let [ph, pw] = p.padding;
    let [dil_h, dil_w] = p.dilation;
    torch_check!(
        kw > 0 && kh > 0,
        "kernel size should be greater than zero, but got kH: {kh} kW: {kw}"
    );
    torch_check!(
        dw > 0 && dh > 0,
        "stride should be greater than zero, but got dH: {dh} dW: {dw}"
    );
    torch_check!(
        dil_h > 0 && dil_w > 0,
        "dilation should be greater than zero, but got dilationH: {dil_h} dilationW: {dil_w}"
    );
    let sizes = input.sizes();
    let ndim = sizes.len();
    let valid_dims = input.size(1)? != 0 && input.size(2)? != 0;
    if p.channels_last {
        torch_check!(
            ndim == 4 && valid_dims && sizes[3] != 0,
            "Expected 4D (batch mode) tensor expected for input with channels_last layout with optional 0 dim batch size for input, but got: {}",
            fmt_dims(&sizes)
        );
    } else {
        torch_check!(
            (ndim == 3 && sizes[0] != 0 && valid_dims)
                || (ndim == 4 && valid_dims && sizes[3] != 0),
            "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:{}",
            fmt_dims(&sizes)
        );
    }
    let (eff_w, eff_h) = ((kw - 1) * dil_w + 1, (kh - 1) * dil_h + 1);
    torch_check!(
        eff_w / 2 >= pw && eff_h / 2 >= ph,
        "pad should be smaller than or equal to half of effective kernel size, but got padW = {pw}, padH = {ph}, effectiveKW = {eff_w}, effectiveKH = {eff_h}"
    );
    let [oh, ow] = p.output;
    let [ih, iw] = p.input;
    torch_check!(
        ow >= 1 && oh >= 1,
        "Given input size: ({}x{ih}x{iw}). Calculated output size: ({}x{oh}x{ow}). Output size is too small",
        p.channels,
        p.channels
    );
    Ok(())
}

/// Reads a `int[2]` pooling argument given as one or two ints (`default` when empty and
/// allowed), with the operator's message otherwise.
fn pair(values: &[i64], default: Option<[i64; 2]>, message: &str) -> Result<[i64; 2]> {
    match (values, default) {
        ([v], _) => Ok([*v, *v]),
        ([h, w], _) => Ok([*h, *w]),
        ([], Some(d)) => Ok(d),
        _ => Err(Error::runtime(message)),
    }
}

/// The pooling geometry shared by both 2-d poolings, after the argument-length checks.
fn pool2d_params(
    input: &Tensor,
    kernel: [i64; 2],
    stride: [i64; 2],
    padding: [i64; 2],
    dilation: [i64; 2],
    ceil_mode: bool,
    channels_last: bool,
) -> Result<Pool2dParams> {
    let batch = if input.dim() == 4 { input.size(-4)? } else { 1 };
    let channels = input.size(-3)?;
    let input_hw = [input.size(-2)?, input.size(-1)?];
    let oh = pooling_output_shape(
        input_hw[0],
        kernel[0],
        padding[0],
        stride[0],
        dilation[0],
        ceil_mode,
    )?;
    let ow = pooling_output_shape(
        input_hw[1],
        kernel[1],
        padding[1],
        stride[1],
        dilation[1],
        ceil_mode,
    )?;
    let p = Pool2dParams {
        kernel,
        stride,
        padding,
        dilation,
        batch,
        channels,
        input: input_hw,
        output: [oh, ow],
        channels_last,
    };
    pool2d_shape_check(input, &p)?;
    Ok(p)
}

/// The output spec of a pooling: `[C, OH, OW]` for 3-d input, `[N, C, OH, OW]` in the
/// input's memory format otherwise.
fn pool2d_output(input: &Tensor, p: &Pool2dParams, dtype: ScalarType) -> Result<OutputSpec> {
    let [oh, ow] = p.output;
    let sizes: DimVec = if input.dim() == 3 {
        DimVec::from_slice(&[p.channels, oh, ow])
    } else {
        DimVec::from_slice(&[p.batch, p.channels, oh, ow])
    };
    // Channels-last outputs need their layout; contiguous ones accept any out= layout (the
    // impl copies into it).
    let strides = if p.channels_last {
        Some(channels_last_strides(&sizes)?)
    } else {
        None
    };
    Ok(OutputSpec {
        sizes,
        strides: strides.map(|s| s.as_slice().into()),
        dtype,
        device: input.device(),
        compute_dtype: None,
    })
}

/// `avg_pool2d(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
/// divisor_override)`.
pub fn avg_pool2d(
    self_: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
    outs: Outs<'_>,
) -> Result<Meta<Pool2dParams>> {
    let _ = (count_include_pad, outs);
    let kernel = pair(
        kernel_size,
        None,
        "avg_pool2d: kernel_size must either be a single int, or a tuple of two ints",
    )?;
    let stride = pair(
        stride,
        Some(kernel),
        "avg_pool2d: stride must either be omitted, a single int, or a tuple of two ints",
    )?;
    let padding = pair(
        padding,
        None,
        "avg_pool2d: padding must either be a single int, or a tuple of two ints",
    )?;
    torch_check!(divisor_override != Some(0), "divisor must be not zero");
    let p = pool2d_params(
        self_,
        kernel,
        stride,
        padding,
        [1, 1],
        ceil_mode,
        suggests_channels_last(self_),
    )?;
    let spec = pool2d_output(self_, &p, self_.dtype())?;
    Ok(Meta::new([spec], p))
}

/// `max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)`: the
/// maxima and their flat `h * W + w` positions within each plane (`Long`).
pub fn max_pool2d_with_indices(
    self_: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
    outs: Outs<'_>,
) -> Result<Meta<Pool2dParams>> {
    let _ = outs;
    let kernel = pair(
        kernel_size,
        None,
        "max_pool2d: kernel_size must either be a single int, or a tuple of two ints",
    )?;
    let stride = pair(
        stride,
        Some(kernel),
        "max_pool2d: stride must either be omitted, a single int, or a tuple of two ints",
    )?;
    let padding = pair(
        padding,
        None,
        "max_pool2d: padding must either be a single int, or a tuple of two ints",
    )?;
    let dilation = pair(
        dilation,
        None,
        "max_pool2d: dilation must be either a single int, or a tuple of two ints",
    )?;
    let channels_last = suggests_channels_last(self_);
    if channels_last {
        torch_check!(
            self_.dim() == 4,
            "non-empty 4D (batch mode) tensor expected for input with channels_last layout"
        );
    } else {
        torch_check!(
            self_.dim() == 3 || self_.dim() == 4,
            "non-empty 3D or 4D (batch mode) tensor expected for input"
        );
    }
    let p = pool2d_params(
        self_,
        kernel,
        stride,
        padding,
        dilation,
        ceil_mode,
        channels_last,
    )?;
    let values = pool2d_output(self_, &p, self_.dtype())?;
    let indices = OutputSpec {
        dtype: ScalarType::Long,
        ..values.clone()
    };
    Ok(Meta::new([values, indices], p))
}

/// The dtype of `native_layer_norm`'s `mean` and `rstd` outputs, after PyTorch's CPU
/// mixed-dtype checks: `Float` when `bf16`/`f16` input comes with `Float` parameters, else the
/// input's dtype. (A parameter of another dtype that is not the first one given is caught by
/// the kernel: "expected scalar type Float but found Double".)
pub fn layer_norm_param_dtype(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
) -> Result<ScalarType> {
    let first = weight.or(bias).map(Tensor::dtype);
    match first {
        Some(p) if p != input.dtype() => {
            for t in [weight, bias].into_iter().flatten() {
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

/// The kernel's check that parameters of an input whose statistics keep its dtype have that
/// dtype too ("expected scalar type Half but found BFloat16"). PyTorch makes it inside its
/// floating-point dispatch, after the input's dtype coverage (a non-floating input fails there
/// first, in the kernel); here it is shared by the CPU and Meta kernels.
pub fn check_layer_norm_param_dtypes(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    param_dtype: ScalarType,
) -> Result<()> {
    let dtype = input.dtype();
    if !dtype.is_floating_point() || param_dtype != dtype {
        return Ok(());
    }
    for p in [weight, bias].into_iter().flatten() {
        torch_check!(
            p.dtype() == dtype,
            "expected scalar type {} but found {}",
            dtype,
            p.dtype()
        );
    }
    Ok(())
}

/// PyTorch's `_check_layer_norm_inputs`: returns `(M, N)`, the number of normalized rows
/// and their length.
pub fn check_layer_norm_inputs(
    input: &Tensor,
    normalized_shape: &[i64],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
) -> Result<(i64, i64)> {
    torch_check!(
        !normalized_shape.is_empty(),
        "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but got normalized_shape = {}",
        fmt_dims(normalized_shape)
    );
    for (t, name) in [(weight, "weight"), (bias, "bias")] {
        if let Some(t) = t {
            let sizes = t.sizes();
            torch_check!(
                sizes.as_slice() == normalized_shape,
                "Expected {name} to be of same shape as normalized_shape, but got {name} of shape {} and normalized_shape = {}",
                fmt_dims(&sizes),
                fmt_dims(normalized_shape)
            );
        }
    }
    let sizes = input.sizes();
    let k = normalized_shape.len();
    if sizes.len() < k || &sizes[sizes.len() - k..] != normalized_shape {
        let tail: String = normalized_shape.iter().map(|s| format!(", {s}")).collect();
        return Err(Error::runtime(format!(
            "Given normalized_shape={}, expected input with shape [*{tail}], but got input of size{}",
            fmt_dims(normalized_shape),
            fmt_dims(&sizes)
        )));
    }
    let axis = sizes.len() - k;
    let m = sizes[..axis].iter().product();
    let n = sizes[axis..].iter().product();
    Ok((m, n))
}

/// The shape of `native_layer_norm`'s `mean` and `rstd`: the input's leading dimensions, then
/// 1 for each normalized one.
pub fn layer_norm_stat_shape(input: &Tensor, normalized_shape: &[i64]) -> DimVec {
    let sizes = input.sizes();
    let axis = sizes.len().saturating_sub(normalized_shape.len());
    sizes
        .iter()
        .enumerate()
        .map(|(i, s)| if i < axis { *s } else { 1 })
        .collect()
}
