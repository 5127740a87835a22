//! Composite and Meta kernels: nn operators (`layer_norm`, `native_layer_norm`'s composite
//! kernel, `max_pool2d`, `nll_loss`, `nll_loss.out`, `nll_loss_nd`, `dropout`, `dropout_`,
//! `convolution` in both directions, `conv2d`), decomposed as PyTorch's `Normalization.cpp`,
//! `Pooling.cpp`, `LossNLL.cpp`, `Dropout.cpp` and `Convolution.cpp` do.

use crate::meta::index_support::suggest_memory_format;
use crate::meta::{check_layer_norm_inputs, layer_norm_param_dtype, layer_norm_stat_shape};
use crate::op;
use switchyard_core::shape::fmt_dims;
use switchyard_core::{
    Device, Error, MemoryFormat, Result, Scalar, ScalarType, Tensor, torch_check, torch_check_value,
};

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
        crate::meta::check_layer_norm_param_dtypes(input, weight, bias, param_dtype)?;
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
    // Through the dispatcher, as PyTorch's `at::empty({0}, self.options())`: a backend
    // without an allocator (the lazy device) makes its own tensor.
    let total_weight = op::empty_memory_format::call(
        &[0],
        Some(self_.dtype()),
        None,
        Some(self_.device()),
        None,
        None,
    )?;
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
        // PyTorch reads `target.sym_sizes()[0]`; for a 0-dim target that is the first slot
        // of c10's `SizesAndStrides`, which holds 0: "Expected input batch_size (1) to match
        // target batch_size (0)." (a 0-dim target never matches a batch).
        let target_batch = target_sizes.first().copied().unwrap_or(0);
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

/// PyTorch's `check_shape_forward`: the checks shared by both directions, then those of a
/// plain convolution (input channels, bias, kernel within the padded input) or of a
/// transposed one (input channels against the weight's first dimension, bias).
fn check_conv_shapes(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    params: &ConvParams,
    groups: i64,
    transposed: bool,
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
    if transposed {
        torch_check!(
            sizes[1] == ws[0],
            "Given transposed=1, weight of size {}, expected input{} to have {} channels, but got {} channels instead",
            fmt_dims(&ws),
            fmt_dims(&sizes),
            ws[0],
            sizes[1]
        );
        if let Some(b) = bias {
            torch_check!(
                b.dim() == 1 && b.sizes()[0] == ws[1] * groups,
                "Given transposed=1, weight of size {}, expected bias to be 1-dimensional with {} elements, but got bias of size {} instead",
                fmt_dims(&ws),
                ws[1] * groups,
                fmt_dims(&b.sizes())
            );
        }
        return Ok(());
    }
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
/// weight with `bmm`, or `baddbmm` when a bias is added. A transposed convolution multiplies
/// the other way and scatters the columns back (col2im, see [`conv_transpose`]).
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
    check_conv_shapes(input, weight, bias, &params, groups, transposed)?;
    torch_check!(
        weight.dtype() == input.dtype(),
        "expected scalar type {} but found {}",
        input.dtype(),
        weight.dtype()
    );
    if input.numel() != 0 {
        check_conv_backend_dtype(input.dtype(), &params, transposed, dim)?;
    }
    let output = if transposed {
        conv_transpose(input, weight, bias, &params, groups)?
    } else {
        conv_forward(input, weight, bias, &params, groups)?
    };
    // PyTorch's CPU convolutions give a channels-last result for a 4-d input or weight laid
    // out channels-last, whatever the dtype.
    let channels_last = |t: &Tensor| {
        t.dim() == 4
            && suggest_memory_format(&t.sizes(), &t.strides()) == MemoryFormat::ChannelsLast
    };
    if channels_last(input) || channels_last(weight) {
        return op::contiguous::call(&output, MemoryFormat::ChannelsLast);
    }
    Ok(output)
}

/// The dtype coverage of the CPU kernel PyTorch's `_convolution` picks for a non-empty input
/// (`select_conv_backend`), and its refusal naming that kernel: transposed convolutions
/// (`slow_conv_transpose2d`, 1-d ones through it, and `slow_conv_transpose3d`) and dilated
/// ones (`slow_conv_dilated2d` / `3d`) take floating types and `Long`; the others
/// (`slow_conv2d`, 1-d ones through it, and `slow_conv3d`) every type but `Bool`. An empty
/// input takes no backend and is refused nothing.
fn check_conv_backend_dtype(
    dtype: ScalarType,
    params: &ConvParams,
    transposed: bool,
    dim: usize,
) -> Result<()> {
    let dilated = params.dilation.iter().any(|&d| d != 1);
    let (kernel, supported) = if transposed {
        let kernel = if dim == 3 {
            "slow_conv_transpose3d_out_cpu"
        } else {
            "slow_conv_transpose2d_out_cpu"
        };
        (
            kernel,
            dtype.is_floating_point() || dtype == ScalarType::Long,
        )
    } else if dilated {
        (
            "slow_conv_dilated<>",
            dtype.is_floating_point() || dtype == ScalarType::Long,
        )
    } else if dim == 3 {
        ("compute_columns3d", dtype != ScalarType::Bool)
    } else {
        ("slow_conv2d_cpu", dtype != ScalarType::Bool)
    };
    if supported {
        return Ok(());
    }
    Err(Error::not_implemented(format!(
        "\"{kernel}\" not implemented for '{}'",
        dtype.name()
    )))
}

/// A new tensor through the dispatcher (`at::empty`): a backend without storage (the lazy
/// device) makes its own.
fn empty_on(sizes: &[i64], dtype: ScalarType, device: Device) -> Result<Tensor> {
    op::empty_memory_format::call(sizes, Some(dtype), None, Some(device), None, None)
}

/// The plain convolution (see [`convolution`]).
fn conv_forward(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    params: &ConvParams,
    groups: i64,
) -> Result<Tensor> {
    let dim = weight.dim() - 2;
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
        return empty_on(&out_shape, dtype, device);
    }
    let l: i64 = out_spatial.iter().product();
    let kk: i64 = cg * kernel.iter().product::<i64>();
    // The input, contiguous and zero-padded.
    let x = if params.padding.iter().any(|&p| p != 0) {
        let mut padded_sizes = vec![n, c];
        padded_sizes.extend((0..dim).map(|i| sizes[i + 2] + 2 * params.padding[i]));
        let padded = empty_on(&padded_sizes, dtype, device)?;
        op::zero_::call(&padded)?;
        let mut interior = padded.clone();
        for (i, &p) in params.padding.iter().enumerate() {
            let d = i as i64 + 2;
            interior = op::slice_Tensor::call(&interior, d, Some(p), Some(p + sizes[i + 2]), 1)?;
        }
        op::copy_::call(&interior, input, false)?;
        padded
    } else {
        op::contiguous::call(input, MemoryFormat::Contiguous)?
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

/// The transposed convolution (the gradient of a convolution with respect to its input): each
/// input position spreads `weight`'s kernel, scaled, over the output, `stride` apart.
///
/// For input `[N, C_in, in...]` and weight `[C_in, C_out/groups, k...]`, the output has
/// `(in - 1)·stride - 2·padding + dilation·(k - 1) + output_padding + 1` positions per spatial
/// dimension. Computed as PyTorch's slow path does: one batched product
/// `columns = weightᵀ · input` (`[N·groups, C_out/groups·∏k, ∏in]`), then col2im: for each
/// kernel offset, the columns of that offset are added into the output positions they reach
/// (a strided view of a zero-initialised buffer that extends `padding` past each edge), and
/// the padding is cut off.
fn conv_transpose(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    params: &ConvParams,
    groups: i64,
) -> Result<Tensor> {
    let dim = weight.dim() - 2;
    let (sizes, ws) = (input.sizes(), weight.sizes());
    let (n, c_in) = (sizes[0], sizes[1]);
    let (cg_out, kernel) = (ws[1], &ws[2..]);
    let c_out = cg_out * groups;
    let input_spatial = &sizes[2..];
    check_output_padding(params, dim)?;
    let out_spatial: Vec<i64> = (0..dim)
        .map(|i| {
            (input_spatial[i] - 1) * params.stride[i] - 2 * params.padding[i]
                + params.dilation[i] * (kernel[i] - 1)
                + params.output_padding[i]
                + 1
        })
        .collect();
    if out_spatial.iter().any(|&o| o < 1) {
        // Reported as the 2-d path sees it (a 1-d convolution runs as 2-d with height 1).
        let (ins, outs): (Vec<i64>, Vec<i64>) = if dim == 1 {
            (vec![1, input_spatial[0]], vec![1, out_spatial[0]])
        } else {
            (input_spatial.to_vec(), out_spatial.clone())
        };
        let join = |v: &[i64]| v.iter().map(i64::to_string).collect::<Vec<_>>().join(" x ");
        return Err(switchyard_core::Error::runtime(format!(
            "Given input size per channel: ({}). Calculated output size per channel: ({}). Output size is too small",
            join(&ins),
            join(&outs)
        )));
    }
    let mut out_shape = vec![n, c_out];
    out_shape.extend_from_slice(&out_spatial);
    let (device, dtype) = (input.device(), input.dtype());
    // The output before its padding is cut off: `padding` more on both sides.
    let mut full_shape = vec![n, c_out];
    full_shape.extend((0..dim).map(|i| out_spatial[i] + 2 * params.padding[i]));
    let full = empty_on(&full_shape, dtype, device)?;
    op::zero_::call(&full)?;
    let l_in: i64 = input_spatial.iter().product();
    let k_count: i64 = kernel.iter().product();
    if n > 0 && c_out > 0 && l_in > 0 && k_count > 0 && c_in > 0 {
        let cg_in = c_in / groups;
        // columns[n·g] = weight[g]ᵀ · input[n, g]: [N·groups, C_out/groups·∏k, ∏in].
        let x = op::reshape::call(input, &[n * groups, cg_in, l_in])?;
        let w = op::reshape::call(weight, &[1, groups, cg_in, cg_out * k_count])?;
        let w = op::expand::call(&w, &[n, groups, cg_in, cg_out * k_count], false)?;
        let w = op::reshape::call(&w, &[n * groups, cg_in, cg_out * k_count])?;
        let columns = op::bmm::call(&op::transpose_int::call(&w, 1, 2)?, &x)?;
        // [N, C_out, k..., in...]: groups and channels-per-group flatten to C_out.
        let mut col_shape = vec![n, c_out];
        col_shape.extend_from_slice(kernel);
        col_shape.extend_from_slice(input_spatial);
        let columns = op::view::call(&columns, &col_shape)?;
        // col2im: each kernel offset adds its columns to the output positions it reaches.
        let fs = full.strides();
        let mut view_strides = vec![fs[0], fs[1]];
        view_strides.extend((0..dim).map(|i| fs[i + 2] * params.stride[i]));
        let mut view_sizes = vec![n, c_out];
        view_sizes.extend_from_slice(input_spatial);
        let mut offset = vec![0i64; dim];
        loop {
            let mut cols = columns.clone();
            for k in &offset {
                // Dimension 2 each time: every select removes the dimension before it.
                cols = op::select_int::call(&cols, 2, *k)?;
            }
            let start: i64 = (0..dim)
                .map(|i| offset[i] * params.dilation[i] * fs[i + 2])
                .sum();
            let target = op::as_strided::call(
                &full,
                &view_sizes,
                &view_strides,
                Some(full.storage_offset() + start),
            )?;
            op::add__Tensor::call(&target, &cols, Scalar::Int(1))?;
            // Next offset, last dimension fastest.
            let mut d = dim;
            loop {
                if d == 0 {
                    break;
                }
                d -= 1;
                offset[d] += 1;
                if offset[d] < kernel[d] {
                    break;
                }
                offset[d] = 0;
            }
            if offset.iter().all(|&k| k == 0) {
                break;
            }
        }
    }
    let mut output = full;
    for (i, &p) in params.padding.iter().enumerate() {
        if p != 0 {
            let d = i as i64 + 2;
            output = op::slice_Tensor::call(&output, d, Some(p), Some(p + out_spatial[i]), 1)?;
        }
    }
    let output = op::contiguous::call(&output, MemoryFormat::Contiguous)?;
    if let Some(b) = bias {
        let mut b_shape = vec![1, c_out];
        b_shape.extend(std::iter::repeat_n(1, dim));
        let b = op::_to_copy::call(b, Some(dtype), None, None, None, false, None)?;
        op::add__Tensor::call(&output, &op::view::call(&b, &b_shape)?, Scalar::Int(1))?;
    }
    Ok(output)
}

/// The check of PyTorch's transposed-convolution kernels that each dimension's output
/// padding stays below its stride or its dilation, worded as the 2-d kernel words it (a 1-d
/// convolution runs as 2-d with height 1) or the 3-d one.
fn check_output_padding(params: &ConvParams, dim: usize) -> Result<()> {
    let ok = (0..dim).all(|i| {
        params.output_padding[i] < params.stride[i] || params.output_padding[i] < params.dilation[i]
    });
    if ok {
        return Ok(());
    }
    let (op, st, dl) = (&params.output_padding, &params.stride, &params.dilation);
    let (names, op, st, dl): (&[&str], Vec<i64>, Vec<i64>, Vec<i64>) = match dim {
        1 => (
            &["height", "width"],
            vec![0, op[0]],
            vec![1, st[0]],
            vec![1, dl[0]],
        ),
        3 => (
            &["depth", "height", "width"],
            op.clone(),
            st.clone(),
            dl.clone(),
        ),
        _ => (&["height", "width"], op.clone(), st.clone(), dl.clone()),
    };
    let part = |label: &str, values: &[i64]| {
        names
            .iter()
            .zip(values)
            .map(|(n, v)| format!("{label}_{n}: {v}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    Err(switchyard_core::Error::runtime(format!(
        "output padding must be smaller than either stride or dilation, but got {} {} {}",
        part("output_padding", &op),
        part("stride", &st),
        part("dilation", &dl)
    )))
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

/// `native_dropout` on Meta: the CPU kernel's results without drawing a mask (an empty input
/// is returned with a mask of its dtype; otherwise a contiguous output and `Bool` mask).
pub fn native_dropout_meta(
    input: &Tensor,
    p: f64,
    train: Option<bool>,
) -> Result<(Tensor, Tensor)> {
    let (sizes, dtype, device) = (input.sizes(), input.dtype(), input.device());
    if input.numel() == 0 {
        return Ok((input.clone(), Tensor::allocate(&sizes, dtype, device)?));
    }
    if train.unwrap_or(true) {
        crate::meta::factory_support::check_bernoulli_p(1.0 - p)?;
        torch_check!(
            dtype.is_floating_point(),
            "result type Float can't be cast to the desired output type {dtype}"
        );
    }
    Ok((
        Tensor::allocate(&sizes, dtype, device)?,
        Tensor::allocate(&sizes, switchyard_core::ScalarType::Bool, device)?,
    ))
}
