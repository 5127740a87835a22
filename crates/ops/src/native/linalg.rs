//! Composite and Meta kernels: linalg operators (`dot.out`, `linear`, `linear.out`, `matmul`,
//! `matmul.out`), decomposed into `dot`, `mm`, `addmm` and `bmm` as PyTorch's
//! `LinearAlgebra.cpp` / `Linear.cpp` do.
//!
//! PyTorch adds `linear`'s bias with `add_` when the fused `addmm` path does not apply; the
//! pointwise operators are not part of this family, so every biased `linear` goes through
//! `addmm` on the input flattened to a matrix (same values, one rounding fewer).

use crate::op;
use crate::structured::resize_output;
use switchyard_core::shape::infer_size;
use switchyard_core::{Result, Scalar, Tensor, torch_check};

/// `dot.out`: the 0-dim inner product written into `out` (PyTorch's `dot_out`).
pub fn dot_out(self_: &Tensor, tensor: &Tensor, out: &Tensor) -> Result<Tensor> {
    torch_check!(
        out.device() == self_.device() && self_.device() == tensor.device(),
        "Expected all tensors to be on the same device, but found at least two devices, {}, {}!",
        out.device(),
        self_.device()
    );
    resize_output(out, &[])?;
    torch_check!(
        out.dtype() == self_.dtype(),
        "result dtype {} does not match input dtype {}",
        out.dtype(),
        self_.dtype()
    );
    let value = op::dot::call(self_, tensor)?;
    op::copy_::call(out, &value, false)?;
    Ok(out.clone())
}

/// `linear(input, weight, bias)`: `input @ weight.T + bias`.
pub fn linear(input: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    let (input_dim, weight_dim) = (input.dim(), weight.dim());
    torch_check!(
        input_dim != 0 && weight_dim != 0,
        "both arguments to linear need to be at least 1D, but they are {input_dim}D and {weight_dim}D"
    );
    let Some(bias) = bias else {
        return matmul(input, &op::t::call(weight)?);
    };
    if input_dim == 2 {
        // The fused multiply-add.
        return op::addmm::call(
            bias,
            input,
            &op::t::call(weight)?,
            Scalar::Int(1),
            Scalar::Int(1),
        );
    }
    // PyTorch fuses a bias that is a vector (after squeezing) into `addmm` over the flattened
    // input when the input is contiguous; otherwise it multiplies with `matmul` and adds the
    // bias after (so shape errors come from `addmm`, `mm` or `bmm` as in PyTorch).
    let vector_bias = bias.dim() == 1 || bias.sizes().iter().filter(|s| **s != 1).count() == 1;
    if vector_bias && bias.is_contiguous() && input.is_contiguous() {
        return flatten_nd_linear(input, weight, bias);
    }
    let output = matmul(input, &op::t::call(weight)?)?;
    op::add__Tensor::call(&output, bias, Scalar::Int(1))
}

/// PyTorch's `_flatten_nd_linear`: `addmm` over the contiguous input viewed as a matrix of
/// its last dimension, viewed back with the last dimension replaced by the result's.
fn flatten_nd_linear(input: &Tensor, weight: &Tensor, bias: &Tensor) -> Result<Tensor> {
    let mut sizes = input.sizes();
    let (lead, last) = sizes.split_at(sizes.len() - 1);
    let rows: i64 = lead.iter().product();
    let flat = op::view::call(input, &[rows, last[0]])?;
    let result = op::addmm::call(
        bias,
        &flat,
        &op::t::call(weight)?,
        Scalar::Int(1),
        Scalar::Int(1),
    )?;
    if let Some(cols) = sizes.last_mut() {
        *cols = result.size(1)?;
    }
    op::view::call(&result, &sizes)
}

/// `linear.out`: `addmm.out` for a 2-d input with bias, else `matmul.out` then the bias added
/// in place (PyTorch's `linear_out`).
pub fn linear_out(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    out: &Tensor,
) -> Result<Tensor> {
    if let Some(bias) = bias
        && input.dim() == 2
    {
        return op::addmm_out::call(
            bias,
            input,
            &op::t::call(weight)?,
            Scalar::Int(1),
            Scalar::Int(1),
            out,
        );
    }
    let output = matmul_out(input, &op::t::call(weight)?, out)?;
    match bias {
        Some(bias) => op::add__Tensor::call(&output, bias, Scalar::Int(1)),
        None => Ok(output),
    }
}

/// Writes a computed result into an out= tensor of the same dtype (the check PyTorch's
/// out= kernels make), resizing it as `resize_output` does.
fn write_out(out: &Tensor, result: &Tensor) -> Result<Tensor> {
    torch_check!(
        out.dtype() == result.dtype(),
        "Expected out tensor to have dtype {}, but got {} instead",
        result.dtype().type_meta_name(),
        out.dtype().type_meta_name()
    );
    crate::structured::resize_output(out, &result.sizes())?;
    op::copy_::call(out, result, false)?;
    Ok(out.clone())
}

/// `matmul(self, other)`: every rank case of PyTorch's `_matmul_impl`.
pub fn matmul(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    matmul_impl(self_, other, None)
}

/// `matmul.out`.
pub fn matmul_out(self_: &Tensor, other: &Tensor, out: &Tensor) -> Result<Tensor> {
    matmul_impl(self_, other, Some(out))
}

/// `mat @ vec` as `mv` computes it (PyTorch's message for a size mismatch).
fn mv(mat: &Tensor, vec: &Tensor) -> Result<Tensor> {
    let (ms, vs) = (mat.sizes(), vec.sizes());
    torch_check!(
        ms[1] == vs[0],
        "size mismatch, got input ({}), mat ({}x{}), vec ({})",
        ms[0],
        ms[0],
        ms[1],
        vs[0]
    );
    let column = op::mm::call(mat, &op::unsqueeze::call(vec, 1)?)?;
    op::squeeze_dim::call(&column, 1)
}

/// Whether the larger operand can be folded into a matrix without a copy (PyTorch's
/// `should_fold`, without the autograd clause).
fn should_fold(t1: &Tensor, t2: &Tensor) -> Result<bool> {
    let t1_larger = t1.dim() >= t2.dim();
    let (big, small_dim) = if t1_larger {
        (t1.clone(), t2.dim())
    } else {
        (op::transpose_int::call(t2, -2, -1)?, t1.dim())
    };
    if !(big.dim() >= 3 && small_dim <= 2) || t1.dim() == 2 {
        return Ok(false);
    }
    if big.numel() == 0 {
        return Ok(true);
    }
    let (sizes, strides) = (big.sizes(), big.strides());
    Ok((0..big.dim() - 2).all(|i| strides[i] == strides[i + 1] * sizes[i + 1]))
}

fn matmul_impl(t1: &Tensor, t2: &Tensor, out: Option<&Tensor>) -> Result<Tensor> {
    let (d1, d2) = (t1.dim(), t2.dim());
    torch_check!(
        d1 != 0 && d2 != 0,
        "both arguments to matmul need to be at least 1D, but they are {d1}D and {d2}D"
    );
    // PyTorch's `_matmul_impl` checks this itself (its composite logic relies on it), so the
    // refusal names matmul rather than the out= operator it decomposes into.
    if let Some(o) = out {
        torch_check!(
            !switchyard_core::local_dispatch::is_grad_enabled()
                || !(t1.requires_grad() || t2.requires_grad() || o.requires_grad()),
            "matmul(): functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad."
        );
    }
    let finish = |result: Tensor| match out {
        Some(o) => write_out(o, &result),
        None => Ok(result),
    };
    match (d1, d2) {
        (1, 1) => match out {
            Some(o) => dot_out(t1, t2, o),
            None => op::dot::call(t1, t2),
        },
        (2, 1) => finish(mv(t1, t2)?),
        (1, 2) => {
            let product = op::mm::call(&op::unsqueeze::call(t1, 0)?, t2)?;
            finish(op::squeeze_dim::call(&product, 0)?)
        }
        (2, 2) => match out {
            Some(o) => op::mm_out::call(t1, t2, o),
            None => op::mm::call(t1, t2),
        },
        _ if should_fold(t1, t2)? => finish(folded(t1, t2)?),
        _ => finish(batched(t1, t2)?),
    }
}

/// The larger operand (≥ 3-d) folded into a matrix and multiplied with `mm` / `mv`.
fn folded(tensor1: &Tensor, tensor2: &Tensor) -> Result<Tensor> {
    let transpose = tensor2.dim() > tensor1.dim();
    let t1 = if transpose {
        op::transpose_int::call(tensor2, -2, -1)?
    } else {
        tensor1.clone()
    };
    let t2 = if !transpose {
        tensor2.clone()
    } else if tensor1.dim() == 2 {
        op::t::call(tensor1)?
    } else {
        tensor1.clone()
    };
    let sizes = t1.sizes();
    let (lead, last) = sizes.split_at(sizes.len() - 1);
    let mut output_shape = lead.to_vec();
    let folded_dim: i64 = lead.iter().product();
    let t2_is_matrix = t2.dim() == 2;
    if t2_is_matrix {
        output_shape.push(t2.size(1)?);
    }
    let t1_folded = op::reshape::call(&t1, &[folded_dim, last[0]])?;
    if t2_is_matrix {
        let output = op::_unsafe_view::call(&op::mm::call(&t1_folded, &t2)?, &output_shape)?;
        if transpose {
            let swapped = op::transpose_int::call(&output, -2, -1)?;
            return op::contiguous::call(&swapped, switchyard_core::MemoryFormat::Contiguous);
        }
        return Ok(output);
    }
    op::_unsafe_view::call(&mv(&t1_folded, &t2)?, &output_shape)
}

/// Broadcast batch dimensions, expand both operands and multiply with `bmm`.
fn batched(tensor1: &Tensor, tensor2: &Tensor) -> Result<Tensor> {
    let (d1, d2) = (tensor1.dim(), tensor2.dim());
    let (s1, s2) = (tensor1.sizes(), tensor2.sizes());
    let n = if d1 > 1 { s1[d1 - 2] } else { 1 };
    let m1 = s1[d1 - 1];
    let batch1 = &s1[..d1.saturating_sub(2)];
    let m2 = if d2 > 1 { s2[d2 - 2] } else { s2[0] };
    let p = if d2 > 1 { s2[d2 - 1] } else { 1 };
    let batch2 = &s2[..d2.saturating_sub(2)];
    let batch = infer_size(batch1, batch2)?;
    let batch_product: i64 = batch.iter().product();
    let mut output_shape = batch.to_vec();
    if d1 > 1 {
        output_shape.push(n);
    }
    if d2 > 1 {
        output_shape.push(p);
    }
    let expand = |t: &Tensor, rows: i64, cols: i64| -> Result<Tensor> {
        let mut size = batch.to_vec();
        size.extend([rows, cols]);
        let expanded = op::expand::call(t, &size, false)?;
        op::reshape::call(&expanded, &[batch_product, rows, cols])
    };
    let a = expand(tensor1, n, m1)?;
    let column;
    let b_src = if d2 == 1 {
        column = op::unsqueeze::call(tensor2, 1)?;
        &column
    } else {
        tensor2
    };
    let b = expand(b_src, m2, p)?;
    op::_unsafe_view::call(&op::bmm::call(&a, &b)?, &output_shape)
}

/// `dot` on Meta: a 0-dim result of the operands' dtype.
pub fn dot_meta(self_: &Tensor, tensor: &Tensor) -> Result<Tensor> {
    crate::meta::check_dot(self_, tensor)?;
    Tensor::allocate(&[], self_.dtype(), self_.device())
}
