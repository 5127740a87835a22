//! Composite kernels of the reduce operators: the whole-tensor forms of `sum` / `mean`, the
//! `unbiased` overloads of `std` / `var` / `var_mean`, and `softmax.int` / `log_softmax.int`
//! with their out= forms. Each follows PyTorch's composite in `ReduceOps.cpp` /
//! `SoftMax.cpp` and calls the structured or CPU operators through the dispatcher, so it
//! works on every backend that implements those.

use crate::op;
use crate::structured::resize_output;
use switchyard_core::shape::contiguous_strides;
use switchyard_core::{Result, Scalar, ScalarType, Tensor, can_cast, torch_check};

/// `sum`: every element (`sum.dim_IntList` with an empty list).
pub fn sum(self_: &Tensor, dtype: Option<ScalarType>) -> Result<Tensor> {
    op::sum_dim_IntList::call(self_, Some(&[]), false, dtype)
}

/// `mean`: every element (`mean.dim` with an empty list).
pub fn mean(self_: &Tensor, dtype: Option<ScalarType>) -> Result<Tensor> {
    op::mean_dim::call(self_, Some(&[]), false, dtype)
}

/// `mean.dtype_out`.
pub fn mean_dtype_out(self_: &Tensor, dtype: Option<ScalarType>, out: &Tensor) -> Result<Tensor> {
    check_mean_dtype_out(self_, out)?;
    op::mean_out::call(self_, Some(&[]), false, dtype, out)?;
    Ok(out.clone())
}

/// `mean.dtype_out`'s own check, before `mean.out`'s: the input's dtype castable to `out`'s
/// (also made by functionalization's kernel, which computes through the functional `mean`).
pub fn check_mean_dtype_out(self_: &Tensor, out: &Tensor) -> Result<()> {
    torch_check!(
        can_cast(self_.dtype(), out.dtype()),
        "mean.dtype_out(): input types can't be cast to the desired output type {}",
        out.dtype()
    );
    Ok(())
}

/// PyTorch's `unbiased` flag as a correction (`1` for Bessel's correction, `0` otherwise).
fn correction(unbiased: bool) -> Option<Scalar> {
    Some(Scalar::Int(i64::from(unbiased)))
}

/// The `unbiased` overloads of `std`, `var` (functional, `.dim`, `.out`) over their
/// `.correction` forms.
macro_rules! unbiased_overloads {
    ($name:literal, $plain:ident, $dim:ident, $out:ident, $op:ident, $op_out:ident) => {
        #[doc = concat!("`", $name, "`: over every element.")]
        pub fn $plain(self_: &Tensor, unbiased: bool) -> Result<Tensor> {
            op::$op::call(self_, None, correction(unbiased), false)
        }

        #[doc = concat!("`", $name, ".dim`.")]
        pub fn $dim(
            self_: &Tensor,
            dim: Option<&[i64]>,
            unbiased: bool,
            keepdim: bool,
        ) -> Result<Tensor> {
            op::$op::call(self_, dim, correction(unbiased), keepdim)
        }

        #[doc = concat!("`", $name, ".out`.")]
        pub fn $out(
            self_: &Tensor,
            dim: Option<&[i64]>,
            unbiased: bool,
            keepdim: bool,
            out: &Tensor,
        ) -> Result<Tensor> {
            op::$op_out::call(self_, dim, correction(unbiased), keepdim, out)
        }
    };
}
unbiased_overloads!(
    "std",
    std,
    std_dim,
    std_out,
    std_correction,
    std_correction_out
);
unbiased_overloads!(
    "var",
    var,
    var_dim,
    var_out,
    var_correction,
    var_correction_out
);

/// `var_mean`: over every element.
pub fn var_mean(self_: &Tensor, unbiased: bool) -> Result<(Tensor, Tensor)> {
    op::var_mean_correction::call(self_, None, correction(unbiased), false)
}

/// `var_mean.dim`.
pub fn var_mean_dim(
    self_: &Tensor,
    dim: Option<&[i64]>,
    unbiased: bool,
    keepdim: bool,
) -> Result<(Tensor, Tensor)> {
    op::var_mean_correction::call(self_, dim, correction(unbiased), keepdim)
}

/// The input of `softmax` / `log_softmax`: converted to `dtype` first when one is given.
fn softmax_input(self_: &Tensor, dtype: Option<ScalarType>) -> Result<Tensor> {
    match dtype {
        Some(d) => op::to_dtype::call(self_, d, false, false, None),
        None => Ok(self_.clone()),
    }
}

/// Shared by `softmax.int_out` / `log_softmax.int_out`: computes into `out` directly when it
/// is contiguous, else into a contiguous temporary of `out`'s dtype that is copied back (as
/// PyTorch's `softmax_out` does).
fn softmax_into(
    self_: &Tensor,
    dim: i64,
    dtype: Option<ScalarType>,
    out: &Tensor,
    log: bool,
) -> Result<Tensor> {
    let x = softmax_input(self_, dtype)?;
    let run = |dest: &Tensor| {
        if log {
            op::_log_softmax_out::call(&x, dim, false, dest)
        } else {
            op::_softmax_out::call(&x, dim, false, dest)
        }
    };
    if out.is_contiguous() {
        run(out)?;
    } else {
        let sizes = out.sizes();
        let tmp = op::empty_strided::call(
            &sizes,
            &contiguous_strides(&sizes),
            Some(out.dtype()),
            None,
            Some(out.device()),
            None,
        )?;
        run(&tmp)?;
        op::resize_::call(out, &tmp.sizes(), None)?;
        op::copy_::call(out, &tmp, false)?;
    }
    Ok(out.clone())
}

/// `softmax.int`: `_softmax` of the input converted to `dtype`.
pub fn softmax(self_: &Tensor, dim: i64, dtype: Option<ScalarType>) -> Result<Tensor> {
    op::_softmax::call(&softmax_input(self_, dtype)?, dim, false)
}

/// `softmax.int_out`.
pub fn softmax_out(
    self_: &Tensor,
    dim: i64,
    dtype: Option<ScalarType>,
    out: &Tensor,
) -> Result<Tensor> {
    softmax_into(self_, dim, dtype, out, false)
}

/// `log_softmax.int`: `_log_softmax` of the input converted to `dtype`.
pub fn log_softmax(self_: &Tensor, dim: i64, dtype: Option<ScalarType>) -> Result<Tensor> {
    op::_log_softmax::call(&softmax_input(self_, dtype)?, dim, false)
}

/// `log_softmax.int_out`.
pub fn log_softmax_out(
    self_: &Tensor,
    dim: i64,
    dtype: Option<ScalarType>,
    out: &Tensor,
) -> Result<Tensor> {
    softmax_into(self_, dim, dtype, out, true)
}

// ---------------------------------------------------------------------------------------------
// Meta kernels of the CPU-only reductions (PyTorch's Python meta registrations give them on
// its Meta device): the CPU kernels' checks and result shapes, no values.
// ---------------------------------------------------------------------------------------------

/// `prod` on Meta: a 0-dim result of `dtype` (integral and bool inputs give `Long`).
pub fn prod_meta(self_: &Tensor, dtype: Option<ScalarType>) -> Result<Tensor> {
    let dtype = crate::meta::dtype_from_self(self_, dtype, true);
    Tensor::allocate(&[], dtype, self_.device())
}

/// `max` on Meta: a 0-dim result of `self`'s dtype (an empty input is an error).
pub fn max_meta(self_: &Tensor) -> Result<Tensor> {
    crate::meta::check_nonempty_all_reduce(self_, "max")?;
    Tensor::allocate(&[], self_.dtype(), self_.device())
}

/// `min` on Meta.
pub fn min_meta(self_: &Tensor) -> Result<Tensor> {
    crate::meta::check_nonempty_all_reduce(self_, "min")?;
    Tensor::allocate(&[], self_.dtype(), self_.device())
}

/// `max.unary_out` on Meta: `out` checked and resized to 0-dim.
pub fn max_unary_out_meta(self_: &Tensor, out: &Tensor) -> Result<Tensor> {
    crate::meta::check_unary_extreme_out(self_, out)?;
    resize_output(out, &[])?;
    Ok(out.clone())
}

/// `min.unary_out` on Meta.
pub fn min_unary_out_meta(self_: &Tensor, out: &Tensor) -> Result<Tensor> {
    max_unary_out_meta(self_, out)
}

/// `var.correction` on Meta.
pub fn var_meta(
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
) -> Result<Tensor> {
    let result = Tensor::allocate(&[0], self_.dtype(), self_.device())?;
    crate::meta::prepare_std_var_out("var", self_, dim, correction, keepdim, &result)?;
    Ok(result)
}

/// `var.correction_out` on Meta.
pub fn var_out_meta(
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
    out: &Tensor,
) -> Result<Tensor> {
    crate::meta::prepare_std_var_out("var", self_, dim, correction, keepdim, out)?;
    Ok(out.clone())
}

/// `std.correction` on Meta.
pub fn std_meta(
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
) -> Result<Tensor> {
    let result = Tensor::allocate(&[0], self_.dtype(), self_.device())?;
    crate::meta::prepare_std_var_out("std", self_, dim, correction, keepdim, &result)?;
    Ok(result)
}

/// `std.correction_out` on Meta.
pub fn std_out_meta(
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
    out: &Tensor,
) -> Result<Tensor> {
    crate::meta::prepare_std_var_out("std", self_, dim, correction, keepdim, out)?;
    Ok(out.clone())
}

/// `var_mean.correction` on Meta: two contiguous results of the reduced shape.
pub fn var_mean_meta(
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
) -> Result<(Tensor, Tensor)> {
    let (_, var, mean) = crate::meta::allocate_var_mean(self_, dim, correction, keepdim)?;
    Ok((var, mean))
}
