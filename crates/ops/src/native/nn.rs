//! Composite and Meta kernels: nn operators (`layer_norm`, `native_layer_norm`'s composite
//! kernel, `max_pool2d`, `nll_loss`, `nll_loss.out`, `nll_loss_nd`, `dropout`, `dropout_`),
//! decomposed as PyTorch's `Normalization.cpp`, `Pooling.cpp`, `LossNLL.cpp` and
//! `Dropout.cpp` do.

use crate::meta::{check_layer_norm_inputs, layer_norm_param_dtype, layer_norm_stat_shape};
use crate::op;
use switchyard_core::shape::fmt_dims;
use switchyard_core::{Device, Result, Tensor, torch_check, torch_check_value};

/// `layer_norm(...)`: the first output of `native_layer_norm` (`cudnn_enable` is ignored).
pub fn layer_norm(
    input: &Tensor,
    normalized_shape: &[i64],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
    cudnn_enable: bool,
) -> Result<Tensor> {
    let _ = cudnn_enable;
    op::native_layer_norm::call(input, normalized_shape, weight, bias, eps).map(|(y, _, _)| y)
}

/// `native_layer_norm` for backends without a kernel of their own: on `Meta` tensors the
/// checked output shapes and dtypes; elsewhere the CPU kernel on copies moved to the CPU,
/// with the results moved back to the input's device.
pub fn math_native_layer_norm(
    input: &Tensor,
    normalized_shape: &[i64],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    let device = input.device();
    if input.is_meta() {
        let param_dtype = layer_norm_param_dtype(input, weight, bias)?;
        check_layer_norm_inputs(input, normalized_shape, weight, bias)?;
        let stat_shape = layer_norm_stat_shape(input, normalized_shape);
        return Ok((
            Tensor::allocate(&input.sizes(), input.dtype(), device)?,
            Tensor::allocate(&stat_shape, param_dtype, device)?,
            Tensor::allocate(&stat_shape, param_dtype, device)?,
        ));
    }
    let move_to =
        |t: &Tensor, d: Device| op::_to_copy::call(t, None, None, Some(d), None, false, None);
    let cpu = |t: Option<&Tensor>| t.map(|t| move_to(t, Device::CPU)).transpose();
    let (x, w, b) = (move_to(input, Device::CPU)?, cpu(weight)?, cpu(bias)?);
    let (y, mean, rstd) =
        op::native_layer_norm::call(&x, normalized_shape, w.as_ref(), b.as_ref(), eps)?;
    Ok((
        move_to(&y, device)?,
        move_to(&mean, device)?,
        move_to(&rstd, device)?,
    ))
}

/// `max_pool2d(...)`: the maxima of `max_pool2d_with_indices`.
pub fn max_pool2d(
    self_: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> Result<Tensor> {
    op::max_pool2d_with_indices::call(self_, kernel_size, stride, padding, dilation, ceil_mode)
        .map(|(out, _)| out)
}

/// `nll_loss(...)`: the loss output of `nll_loss_forward`.
pub fn nll_loss(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
) -> Result<Tensor> {
    op::nll_loss_forward::call(self_, target, weight, reduction, ignore_index).map(|(out, _)| out)
}

/// `nll_loss.out`: `nll_loss_forward.output` with a scratch `total_weight`.
pub fn nll_loss_out(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    out: &Tensor,
) -> Result<Tensor> {
    let total_weight = Tensor::allocate(&[0], self_.dtype(), self_.device())?;
    op::nll_loss_forward_output::call(
        self_,
        target,
        weight,
        reduction,
        ignore_index,
        out,
        &total_weight,
    )
    .map(|(out, _)| out)
}

/// `nll_loss_nd(...)`: `nll_loss` for inputs `[C]`, `[N, C]` and `[N, C, d1, ...]` (the
/// spatial positions folded into the batch; PyTorch sends 4-d inputs to `nll_loss2d`, whose
/// sums it orders differently).
pub fn nll_loss_nd(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
) -> Result<Tensor> {
    let dim = self_.dim();
    torch_check_value!(dim >= 1, "Expected 1 or more dimensions (got {dim})");
    let sizes = self_.sizes();
    let target_sizes = target.sizes();
    if dim != 1 {
        let target_batch = target_sizes.first().copied().unwrap_or(1);
        torch_check_value!(
            sizes[0] == target_batch,
            "Expected input batch_size ({}) to match target batch_size ({target_batch}).",
            sizes[0]
        );
    }
    if dim <= 2 {
        return nll_loss(self_, target, weight, reduction, ignore_index);
    }
    let (n, c) = (sizes[0], sizes[1]);
    let mut out_size = vec![n];
    out_size.extend_from_slice(&sizes[2..]);
    torch_check!(
        target_sizes.get(1..) == Some(&sizes[2..]),
        "Expected target size {}, got {}",
        fmt_dims(&out_size),
        fmt_dims(&target_sizes)
    );
    let rows: i64 = out_size.iter().product();
    let classes_last = op::movedim_int::call(self_, 1, -1)?;
    let input = op::reshape::call(&classes_last, &[rows, c])?;
    let flat_target = op::reshape::call(target, &[rows])?;
    let loss = nll_loss(&input, &flat_target, weight, reduction, ignore_index)?;
    if reduction == 0 {
        op::view::call(&loss, &out_size)
    } else {
        Ok(loss)
    }
}

/// PyTorch's range check of a dropout probability.
fn check_dropout_p(p: f64) -> Result<()> {
    torch_check!(
        (0.0..=1.0).contains(&p),
        "dropout probability has to be between 0 and 1, but got {p}"
    );
    Ok(())
}

/// `dropout(input, p, train)`: `input` itself when not training (or `p == 0`, or empty),
/// else the output of `native_dropout`.
pub fn dropout(input: &Tensor, p: f64, train: bool) -> Result<Tensor> {
    check_dropout_p(p)?;
    if p == 0.0 || !train || input.numel() == 0 {
        return Ok(input.clone());
    }
    op::native_dropout::call(input, p, Some(true)).map(|(out, _)| out)
}

/// `dropout_(self, p, train)`: `dropout` written back into `self`.
pub fn dropout_(self_: &Tensor, p: f64, train: bool) -> Result<Tensor> {
    check_dropout_p(p)?;
    if p == 0.0 || !train || self_.numel() == 0 {
        return Ok(self_.clone());
    }
    let (out, _) = op::native_dropout::call(self_, p, Some(true))?;
    op::copy_::call(self_, &out, false)?;
    Ok(self_.clone())
}

/// A per-dimension convolution parameter given as one value or one per spatial dimension
/// (PyTorch's `expand_param_if_needed`).
fn expand_param(name: &str, values: &[i64], dim: usize) -> Result<Vec<i64>> {
    if let [single] = values {
        return Ok(vec![*single; dim]);
    }
    torch_check!(
        values.len() == dim,
        "expected {name} to be a single integer value or a list of {dim} values to match the convolution dimensions, but got {name}={}",
        fmt_dims(values)
    );
    Ok(values.to_vec())
}

/// PyTorch's `check_shape_forward` for a non-transposed convolution.
fn check_conv_shapes(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    params: &ConvParams,
    groups: i64,
) -> Result<()> {
    torch_check!(
        params.padding.iter().all(|&p| p >= 0),
        "negative padding is not supported"
    );
    torch_check!(
        params.output_padding.iter().all(|&p| p >= 0),
        "negative output_padding is not supported"
    );
    torch_check!(
        params.stride.iter().all(|&s| s > 0),
        "non-positive stride is not supported"
    );
    torch_check!(
        params.dilation.iter().all(|&d| d > 0),
        "dilation should be greater than zero, but got {}",
        fmt_dims(&params.dilation)
    );
    let (sizes, ws) = (input.sizes(), weight.sizes());
    let (k, weight_dim) = (sizes.len(), ws.len());
    torch_check!(
        weight_dim == k,
        "Expected {weight_dim}-dimensional input for {weight_dim}-dimensional weight {}, but got {k}-dimensional input of size {} instead",
        fmt_dims(&ws),
        fmt_dims(&sizes)
    );
    torch_check!(
        ws[0] >= groups,
        "Given groups={groups}, expected weight to be at least {groups} at dimension 0, but got weight of size {} instead",
        fmt_dims(&ws)
    );
    torch_check!(
        ws[0] % groups == 0,
        "Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but got weight of size [{}] instead",
        fmt_dims(&ws)
    );
    torch_check!(
        sizes[1] == ws[1] * groups,
        "Given groups={groups}, weight of size {}, expected input{} to have {} channels, but got {} channels instead",
        fmt_dims(&ws),
        fmt_dims(&sizes),
        ws[1] * groups,
        sizes[1]
    );
    if let Some(b) = bias {
        torch_check!(
            b.dim() == 1 && b.sizes()[0] == ws[0],
            "Given weight of size {}, expected bias to be 1-dimensional with {} elements, but got bias of size {} instead",
            fmt_dims(&ws),
            ws[0],
            fmt_dims(&b.sizes())
        );
    }
    let padded: Vec<i64> = (2..k)
        .map(|i| sizes[i] + 2 * params.padding[i - 2])
        .collect();
    let kernel: Vec<i64> = (2..k)
        .map(|i| params.dilation[i - 2] * (ws[i] - 1) + 1)
        .collect();
    if padded.iter().zip(&kernel).any(|(p, k)| p < k) {
        let join = |v: &[i64]| v.iter().map(i64::to_string).collect::<Vec<_>>().join(" x ");
        return Err(switchyard_core::Error::runtime(format!(
            "Calculated padded input size per channel: ({}). Kernel size: ({}). Kernel size can't be greater than actual input size",
            join(&padded),
            join(&kernel)
        )));
    }
    Ok(())
}

/// The expanded per-dimension parameters of a convolution.
struct ConvParams {
    stride: Vec<i64>,
    padding: Vec<i64>,
    dilation: Vec<i64>,
    output_padding: Vec<i64>,
}

/// `convolution(...)`: N-d convolution (1-d, 2-d, 3-d, ...) as one batched matrix product:
/// the zero-padded input is viewed as its sliding windows (`as_strided`, PyTorch's im2col),
/// copied once into `[N·groups, C/groups·∏kernel, ∏output]` columns, and multiplied by the
/// weight with `bmm`, or `baddbmm` when a bias is added. Transposed convolutions are not
/// implemented yet (a `NotImplementedError`; PyTorch computes them).
#[allow(clippy::too_many_arguments)]
pub fn convolution(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    transposed: bool,
    output_padding: &[i64],
    groups: i64,
) -> Result<Tensor> {
    let k = weight.dim();
    torch_check!(k >= 3, "weight should have at least three dimensions");
    torch_check!(groups > 0, "non-positive groups is not supported");
    let dim = k - 2;
    let params = ConvParams {
        stride: expand_param("stride", stride, dim)?,
        padding: expand_param("padding", padding, dim)?,
        dilation: expand_param("dilation", dilation, dim)?,
        output_padding: expand_param("output_padding", output_padding, dim)?,
    };
    check_conv_shapes(input, weight, bias, &params, groups)?;
    if transposed {
        return Err(switchyard_core::Error::not_implemented(
            "convolution: transposed convolution is not implemented",
        ));
    }
    torch_check!(
        weight.dtype() == input.dtype(),
        "expected scalar type {} but found {}",
        input.dtype(),
        weight.dtype()
    );
    let (sizes, ws) = (input.sizes(), weight.sizes());
    let (n, c, o) = (sizes[0], sizes[1], ws[0]);
    let (cg, og) = (ws[1], o / groups);
    let kernel = &ws[2..];
    let out_spatial: Vec<i64> = (0..dim)
        .map(|i| {
            (sizes[i + 2] + 2 * params.padding[i] - params.dilation[i] * (kernel[i] - 1) - 1)
                / params.stride[i]
                + 1
        })
        .collect();
    let mut out_shape = vec![n, o];
    out_shape.extend_from_slice(&out_spatial);
    let (device, dtype) = (input.device(), input.dtype());
    if out_shape.contains(&0) {
        return Tensor::allocate(&out_shape, dtype, device);
    }
    let l: i64 = out_spatial.iter().product();
    let kk: i64 = cg * kernel.iter().product::<i64>();
    // The input, contiguous and zero-padded.
    let x = if params.padding.iter().any(|&p| p != 0) {
        let mut padded_sizes = vec![n, c];
        padded_sizes.extend((0..dim).map(|i| sizes[i + 2] + 2 * params.padding[i]));
        let padded = Tensor::allocate(&padded_sizes, dtype, device)?;
        op::zero_::call(&padded)?;
        let mut interior = padded.clone();
        for (i, &p) in params.padding.iter().enumerate() {
            let d = i as i64 + 2;
            interior = op::slice_Tensor::call(&interior, d, Some(p), Some(p + sizes[i + 2]), 1)?;
        }
        op::copy_::call(&interior, input, false)?;
        padded
    } else {
        op::contiguous::call(input, switchyard_core::MemoryFormat::Contiguous)?
    };
    // Sliding windows: [N, groups, C/groups, kernel..., output...].
    let st = x.strides();
    let mut window_sizes = vec![n, groups, cg];
    window_sizes.extend_from_slice(kernel);
    window_sizes.extend_from_slice(&out_spatial);
    let mut window_strides = vec![st[0], st[1] * cg, st[1]];
    window_strides.extend((0..dim).map(|i| st[i + 2] * params.dilation[i]));
    window_strides.extend((0..dim).map(|i| st[i + 2] * params.stride[i]));
    let windows =
        op::as_strided::call(&x, &window_sizes, &window_strides, Some(x.storage_offset()))?;
    let columns = op::reshape::call(&windows, &[n * groups, kk, l])?;
    // Weight: [groups, O/groups, kk] for every sample.
    let w = op::reshape::call(weight, &[1, groups, og, kk])?;
    let w = op::expand::call(&w, &[n, groups, og, kk], false)?;
    let w = op::reshape::call(&w, &[n * groups, og, kk])?;
    let product = match bias {
        None => op::bmm::call(&w, &columns)?,
        Some(b) => {
            let b = op::_to_copy::call(b, Some(dtype), None, None, None, false, None)?;
            let b = op::reshape::call(&b, &[1, groups, og, 1])?;
            let b = op::expand::call(&b, &[n, groups, og, l], false)?;
            let b = op::reshape::call(&b, &[n * groups, og, l])?;
            op::baddbmm::call(
                &b,
                &w,
                &columns,
                switchyard_core::Scalar::Int(1),
                switchyard_core::Scalar::Int(1),
            )?
        }
    };
    op::view::call(&product, &out_shape)
}

/// `conv2d(...)`: `convolution` of a batched (4-d) or unbatched (3-d) input.
pub fn conv2d(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    if let Some(b) = bias {
        torch_check!(
            b.dtype() == input.dtype(),
            "Input type ({}) and bias type ({}) should be the same",
            input.dtype().type_meta_name(),
            b.dtype().type_meta_name()
        );
    }
    let dim = input.dim();
    torch_check!(
        dim == 3 || dim == 4,
        "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: {}",
        fmt_dims(&input.sizes())
    );
    let batched = dim == 4;
    let x = if batched {
        input.clone()
    } else {
        op::unsqueeze::call(input, 0)?
    };
    let out = op::convolution::call(
        &x,
        weight,
        bias,
        stride,
        padding,
        dilation,
        false,
        &[0],
        groups,
    )?;
    if batched {
        Ok(out)
    } else {
        op::squeeze_dim::call(&out, 0)
    }
}
