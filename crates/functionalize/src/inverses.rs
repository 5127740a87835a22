//! View inverses (A.6 of the reference note; PyTorch's `FunctionalInverses.cpp`): for each view
//! operator without a `<view>_scatter` operator, a function computing what the base becomes
//! when the view is replaced by a mutated value.
//!
//! Every function here is named `<unambiguous operator name>_inverse` and takes
//! `(base, mutated_view, mode, [out_index,] <the view's non-self arguments>)`:
//!
//! * `base` is the tensor the view was taken from, before the mutation;
//! * `mutated_view` is the new value of the view (same geometry as the view's output);
//! * `mode` says whether the result may be a view ([`InverseMode`]): in
//!   [`InverseMode::NeverView`] only non-aliasing operators are used (`*_copy`, scatters,
//!   arithmetic), in the other modes the inverse view itself where one exists;
//! * `out_index` (multi-output views only) is which output of the view was mutated;
//! * the view's own arguments follow, in schema order (some are unused: the base's geometry is
//!   what the inverse needs).
//!
//! The generated view kernels of the layer call these from their reverse closures. The views
//! whose inverse is a scatter operator (`slice.Tensor` → `slice_scatter`, `select.int` →
//! `select_scatter`, `diagonal` → `diagonal_scatter`, `as_strided` → `as_strided_scatter`)
//! call that operator directly and have no function here. The inverses are not true inverses
//! in every case: `expand`'s assumes the broadcast copies of an element were written one value
//! (see [`expand_inverse`]).
//!
//! All functions take and return tensors below the layer and run their operators with the
//! layer and autograd excluded ([`crate::below`]). [`InverseMode::AlwaysView`] follows PyTorch
//! (an `as_strided` of `mutated_view` with `base`'s geometry where no view inverse exists,
//! which assumes `mutated_view` still shares `base`'s storage); this layer never uses it.
//!
//! Not here: the views that are CompositeImplicitAutograd (`narrow`, `chunk`, `split.sizes`,
//! `reshape`, `expand_as`, `view_as`, `flatten`, `movedim`, ...), which decompose before
//! reaching the layer.

// The names follow the operators' unambiguous names (`split_Tensor_inverse`, ...), which the
// generator derives from the schema.
#![allow(non_snake_case)]

use crate::below;
use crate::view_meta::InverseMode;
use switchyard_core::shape::wrap_dim;
use switchyard_core::{Error, Result, Scalar, ScalarType, Tensor};
use switchyard_ops::op;

/// Whether the mode lets an inverse return a view.
fn views_allowed(mode: InverseMode) -> bool {
    mode != InverseMode::NeverView
}

/// `mutated_view` with `base`'s sizes, strides and offset (PyTorch's `AlwaysView` fallback for
/// views without a view inverse; assumes `mutated_view` shares `base`'s storage).
fn as_strided_like_base(base: &Tensor, mutated_view: &Tensor) -> Result<Tensor> {
    op::as_strided::call(
        mutated_view,
        &base.sizes(),
        &base.strides(),
        Some(base.storage_offset()),
    )
}

/// The error for an `out_index` a multi-output view does not have.
fn bad_out_index(view: &str, out_index: usize, outputs: usize) -> Error {
    Error::index(format!(
        "{view}_inverse: output index {out_index} out of range for a view with {outputs} outputs"
    ))
}

/// `base`'s size along `dim` (already wrapped).
fn size_at(base: &Tensor, dim: usize) -> i64 {
    base.sizes().get(dim).copied().unwrap_or(1)
}

/// Inverse of `view(size)`: `mutated_view` reshaped to `base`'s sizes (`view_copy` in
/// [`InverseMode::NeverView`], `view` otherwise).
///
/// Where views are allowed but `mutated_view`'s layout cannot be viewed with `base`'s sizes,
/// `view_copy` (which reshapes, as PyTorch's does): the mutated value of a view is whatever its
/// operator returned (`add.out` of a contiguous operand into a transposed view gives a
/// contiguous value, whose transpose back cannot be viewed), while eager wrote into memory
/// that needed no reshaping. PyTorch's inverse calls `view` and fails there.
pub fn view_inverse(
    base: &Tensor,
    mutated_view: &Tensor,
    mode: InverseMode,
    size: &[i64],
) -> Result<Tensor> {
    let _ = size;
    let _below = below();
    let sizes = base.sizes();
    if views_allowed(mode)
        && let Ok(v) = op::view::call(mutated_view, &sizes)
    {
        return Ok(v);
    }
    op::view_copy::call(mutated_view, &sizes)
}

/// Inverse of `view.dtype(dtype)`: `mutated_view` reinterpreted as `base`'s dtype
/// (`view_copy.dtype` in [`InverseMode::NeverView`], `view.dtype` otherwise).
pub fn view_dtype_inverse(
    base: &Tensor,
    mutated_view: &Tensor,
    mode: InverseMode,
    dtype: ScalarType,
) -> Result<Tensor> {
    let _ = dtype;
    let _below = below();
    if views_allowed(mode) {
        op::view_dtype::call(mutated_view, base.dtype())
    } else {
        op::view_copy_dtype::call(mutated_view, base.dtype())
    }
}

/// Inverse of `permute(dims)`: `mutated_view` permuted by the inverse permutation
/// (`inverse[dims[i]] = i`; `permute_copy` in [`InverseMode::NeverView`], `permute`
/// otherwise). Errors if `dims` is not a permutation of `mutated_view`'s dimensions.
pub fn permute_inverse(
    base: &Tensor,
    mutated_view: &Tensor,
    mode: InverseMode,
    dims: &[i64],
) -> Result<Tensor> {
    let _ = base;
    let ndim = dims.len();
    if mutated_view.dim() != ndim {
        return Err(Error::runtime(format!(
            "permute_inverse: number of dims don't match in permute (the view has {} dims, dims has {ndim})",
            mutated_view.dim()
        )));
    }
    let mut inverse = vec![-1i64; ndim];
    for (i, &d) in dims.iter().enumerate() {
        let w = wrap_dim(d, ndim)?;
        if inverse[w] != -1 {
            return Err(Error::runtime(
                "permute_inverse: repeated dim in permute".to_string(),
            ));
        }
        inverse[w] = i as i64;
    }
    let _below = below();
    if views_allowed(mode) {
        op::permute::call(mutated_view, &inverse)
    } else {
        op::permute_copy::call(mutated_view, &inverse)
    }
}

/// Inverse of `t()`: `t` of `mutated_view` again (`t_copy` in [`InverseMode::NeverView`]).
pub fn t_inverse(base: &Tensor, mutated_view: &Tensor, mode: InverseMode) -> Result<Tensor> {
    let _ = base;
    let _below = below();
    if views_allowed(mode) {
        op::t::call(mutated_view)
    } else {
        op::t_copy::call(mutated_view)
    }
}

/// Inverse of `transpose.int(dim0, dim1)`: the same transposition of `mutated_view`
/// (`transpose_copy.int` in [`InverseMode::NeverView`]).
pub fn transpose_int_inverse(
    base: &Tensor,
    mutated_view: &Tensor,
    mode: InverseMode,
    dim0: i64,
    dim1: i64,
) -> Result<Tensor> {
    let _ = base;
    let _below = below();
    if views_allowed(mode) {
        op::transpose_int::call(mutated_view, dim0, dim1)
    } else {
        op::transpose_copy_int::call(mutated_view, dim0, dim1)
    }
}

/// Inverse of `unsqueeze(dim)`: `mutated_view` squeezed at `dim` (`squeeze_copy.dim` in
/// [`InverseMode::NeverView`], `squeeze.dim` otherwise).
pub fn unsqueeze_inverse(
    base: &Tensor,
    mutated_view: &Tensor,
    mode: InverseMode,
    dim: i64,
) -> Result<Tensor> {
    let _ = base;
    let _below = below();
    if views_allowed(mode) {
        op::squeeze_dim::call(mutated_view, dim)
    } else {
        op::squeeze_copy_dim::call(mutated_view, dim)
    }
}

/// Unsqueezes `t` at every dimension `d` (in increasing order) where `which(d)` holds and
/// `sizes[d] == 1`: the inverse of a squeeze of a tensor of sizes `sizes`. In
/// [`InverseMode::AlwaysView`], an `alias` when nothing is unsqueezed, so the result is a view.
fn unsqueeze_to(
    t: &Tensor,
    sizes: &[i64],
    which: impl Fn(usize) -> bool,
    mode: InverseMode,
) -> Result<Tensor> {
    let _below = below();
    let mut result = t.clone();
    let mut unsqueezed = false;
    for (d, &s) in sizes.iter().enumerate() {
        if s == 1 && which(d) {
            unsqueezed = true;
            result = if views_allowed(mode) {
                op::unsqueeze::call(&result, d as i64)?
            } else {
                op::unsqueeze_copy::call(&result, d as i64)?
            };
        }
    }
    if mode == InverseMode::AlwaysView && !unsqueezed {
        result = op::alias::call(&result)?;
    }
    Ok(result)
}

/// The dimensions of `dims`, wrapped for a tensor of `ndim` dimensions, as a mask; errors on a
/// dimension out of range or repeated.
fn dim_mask(dims: &[i64], ndim: usize) -> Result<Vec<bool>> {
    let mut mask = vec![false; ndim];
    for &d in dims {
        let w = wrap_dim(d, ndim)?;
        if mask[w] {
            return Err(Error::runtime(format!(
                "dim {w} appears multiple times in the list of dims"
            )));
        }
        mask[w] = true;
    }
    Ok(mask)
}

/// Inverse of `squeeze()`: `mutated_view` unsqueezed at every dimension where `base` has size 1
/// (`unsqueeze_copy` in [`InverseMode::NeverView`], `unsqueeze` otherwise).
pub fn squeeze_inverse(base: &Tensor, mutated_view: &Tensor, mode: InverseMode) -> Result<Tensor> {
    unsqueeze_to(mutated_view, &base.sizes(), |_| true, mode)
}

/// Inverse of `squeeze.dim(dim)`: `mutated_view` unsqueezed at `dim` if `base` has size 1
/// there (a 0-dim `base` gives `mutated_view` back).
pub fn squeeze_dim_inverse(
    base: &Tensor,
    mutated_view: &Tensor,
    mode: InverseMode,
    dim: i64,
) -> Result<Tensor> {
    squeeze_dims_inverse(base, mutated_view, mode, &[dim])
}

/// Inverse of `squeeze.dims(dim)`: `mutated_view` unsqueezed at each listed dimension where
/// `base` has size 1 (a 0-dim `base` gives `mutated_view` back).
pub fn squeeze_dims_inverse(
    base: &Tensor,
    mutated_view: &Tensor,
    mode: InverseMode,
    dim: &[i64],
) -> Result<Tensor> {
    let sizes = base.sizes();
    if sizes.is_empty() {
        // Squeezing a 0-dim tensor is a no-op (NumPy allows any of dims 0 / -1 there).
        for &d in dim {
            wrap_dim(d, 0)?;
        }
        return unsqueeze_to(mutated_view, &sizes, |_| false, mode);
    }
    let mask = dim_mask(dim, sizes.len())?;
    unsqueeze_to(mutated_view, &sizes, |d| mask[d], mode)
}

/// Inverse of `expand(size, implicit)`: each element of `base` takes the value written into
/// its broadcast copies in `mutated_view`, or keeps its own where no copy changed.
///
/// Eager's copies of an element are one memory location, so a write through the expanded view
/// (or through a view of it) writes the element. The writes eager allows there give all the
/// copies they write one value: pointwise in-place and out= operators refuse an expanded output
/// (internal overlap) before the inverse runs, and those that do not check (`fill_`, `zero_`,
/// `masked_fill_`, `index_fill_`) write a single value, into every copy or into some (`x.expand(4,
/// 3)[1:3].fill_(v)`, `x.expand(4, 3)[0].add_(y)`). So the copies of an element hold at most two
/// values, the element's own and the new one, and with `hi` / `lo` the largest / smallest copy,
/// the new value is `where(hi != base, hi, lo)`: `amax`, `amin`, `ne`, `where` over the expanded
/// dimensions, then `view` (`view_copy` in [`InverseMode::NeverView`]) to drop the dimensions
/// `expand` added; `mutated_view` itself when nothing was expanded. (A device's `copy_` into an
/// expanded view, handed to its `_copy_from`, is the exception: its copies get different values
/// and which one lands last is the backend's loop order.)
///
/// PyTorch's rule, `base + sum_to(mutated_view - base)`, adds up the changes of all copies
/// (`x.expand(2, 2).fill_(v)` would leave `x + 4 * (v - x)`), which eager never computes. In
/// [`InverseMode::AlwaysView`], `mutated_view` with `base`'s geometry.
///
/// Errors if `base`'s sizes do not broadcast to `mutated_view`'s.
pub fn expand_inverse(
    base: &Tensor,
    mutated_view: &Tensor,
    mode: InverseMode,
    size: &[i64],
    implicit: bool,
) -> Result<Tensor> {
    let _ = (size, implicit);
    let _below = below();
    if mode == InverseMode::AlwaysView {
        return as_strided_like_base(base, mutated_view);
    }
    let (shape, sizes) = (base.sizes(), mutated_view.sizes());
    let lead = sizes.len().saturating_sub(shape.len());
    let broadcastable = sizes.len() >= shape.len()
        && shape
            .iter()
            .zip(&sizes[lead..])
            .all(|(&s, &t)| s == t || s == 1);
    if !broadcastable {
        return Err(Error::runtime(format!(
            "expand_inverse: the base's sizes {:?} do not broadcast to the view's sizes {:?}",
            &shape[..],
            &sizes[..]
        )));
    }
    // The dimensions `expand` added, and those it broadcast from size 1.
    let dims: Vec<i64> = (0..lead)
        .chain(
            shape
                .iter()
                .zip(&sizes[lead..])
                .enumerate()
                .filter(|(_, (s, t))| **s == 1 && **t != 1)
                .map(|(d, _)| lead + d),
        )
        .map(|d| d as i64)
        .collect();
    if dims.is_empty() {
        return Ok(mutated_view.clone());
    }
    let hi = op::amax::call(mutated_view, &dims, true)?;
    let lo = op::amin::call(mutated_view, &dims, true)?;
    let changed = op::ne_Tensor::call(&hi, base)?;
    let picked = op::where_self::call(&changed, &hi, &lo)?;
    if lead == 0 {
        Ok(picked)
    } else if views_allowed(mode) {
        op::view::call(&picked, &shape)
    } else {
        op::view_copy::call(&picked, &shape)
    }
}

/// Inverse of output `out_index` of `split.Tensor(split_size, dim)`: `slice_scatter` of
/// `mutated_view` into `base` at `[split_size * out_index, min(that + split_size, size))`
/// along `dim`. Errors on a bad `split_size` (negative, or 0 along a non-empty dimension) or an
/// `out_index` past the last chunk.
pub fn split_Tensor_inverse(
    base: &Tensor,
    mutated_view: &Tensor,
    mode: InverseMode,
    out_index: usize,
    split_size: i64,
    dim: i64,
) -> Result<Tensor> {
    let d = wrap_dim(dim, base.dim())?;
    let dim_size = size_at(base, d);
    if split_size < 0 || (split_size == 0 && dim_size != 0) {
        return Err(Error::runtime(format!(
            "split_Tensor_inverse: split_size can only be 0 if the dimension size is 0, and \
             must be non-negative; got split_size {split_size} for a dimension of size {dim_size}"
        )));
    }
    let outputs = if dim_size == 0 {
        1
    } else {
        (dim_size + split_size - 1) / split_size
    };
    if out_index as i64 >= outputs {
        return Err(bad_out_index("split_Tensor", out_index, outputs as usize));
    }
    let start = split_size * out_index as i64;
    let end = (start + split_size).min(dim_size);
    slice_back(base, mutated_view, mode, d, start, end)
}

/// Inverse of output `out_index` of `split_with_sizes(split_sizes, dim)`: `slice_scatter` of
/// `mutated_view` into `base` at `[sum(split_sizes[..out_index]), min(that +
/// split_sizes[out_index], size))` along `dim`.
pub fn split_with_sizes_inverse(
    base: &Tensor,
    mutated_view: &Tensor,
    mode: InverseMode,
    out_index: usize,
    split_sizes: &[i64],
    dim: i64,
) -> Result<Tensor> {
    let d = wrap_dim(dim, base.dim())?;
    let dim_size = size_at(base, d);
    let Some(&len) = split_sizes.get(out_index) else {
        return Err(bad_out_index(
            "split_with_sizes",
            out_index,
            split_sizes.len(),
        ));
    };
    let start: i64 = split_sizes[..out_index].iter().sum();
    let end = (start + len).min(dim_size);
    slice_back(base, mutated_view, mode, d, start, end)
}

/// `slice_scatter(base, mutated_view, dim, start, end, 1)`, or in [`InverseMode::AlwaysView`]
/// `mutated_view` with `base`'s geometry (PyTorch's `slice_inverse`).
fn slice_back(
    base: &Tensor,
    mutated_view: &Tensor,
    mode: InverseMode,
    dim: usize,
    start: i64,
    end: i64,
) -> Result<Tensor> {
    let _below = below();
    if mode == InverseMode::AlwaysView {
        return as_strided_like_base(base, mutated_view);
    }
    op::slice_scatter::call(base, mutated_view, dim as i64, Some(start), Some(end), 1)
}

/// Inverse of output `out_index` of `unbind.int(dim)`: `select_scatter` of `mutated_view` into
/// `base` at index `out_index` along `dim`.
pub fn unbind_int_inverse(
    base: &Tensor,
    mutated_view: &Tensor,
    mode: InverseMode,
    out_index: usize,
    dim: i64,
) -> Result<Tensor> {
    if base.dim() == 0 {
        return Err(Error::index(
            "unbind_int_inverse: dimension specified as 0 but tensor has no dimensions",
        ));
    }
    let d = wrap_dim(dim, base.dim())?;
    let outputs = size_at(base, d);
    if out_index as i64 >= outputs {
        return Err(bad_out_index("unbind_int", out_index, outputs as usize));
    }
    let _below = below();
    if mode == InverseMode::AlwaysView {
        return as_strided_like_base(base, mutated_view);
    }
    op::select_scatter::call(base, mutated_view, d as i64, out_index as i64)
}

/// Inverse of `alias()`: `alias` of `mutated_view` (`alias_copy` in
/// [`InverseMode::NeverView`]).
pub fn alias_inverse(base: &Tensor, mutated_view: &Tensor, mode: InverseMode) -> Result<Tensor> {
    let _ = base;
    let _below = below();
    if views_allowed(mode) {
        op::alias::call(mutated_view)
    } else {
        op::alias_copy::call(mutated_view)
    }
}

/// Inverse of `detach()`: `mutated_view` itself (the layer keeps no autograd metadata, so
/// `detach` is the identity here), in every mode.
pub fn detach_inverse(base: &Tensor, mutated_view: &Tensor, mode: InverseMode) -> Result<Tensor> {
    let _ = (base, mode);
    Ok(mutated_view.clone())
}

/// Inverse of `unfold(dimension, size, step)`: the windows of `mutated_view` folded back into
/// `base` with `unfold_backward`, which sums the windows into a tensor of `base`'s sizes.
///
/// Elements of `base` no window covers (the gaps when `step > size`, the tail past the last
/// full window) keep their value: the result is `where(covered, unfold_backward(mutated_view),
/// base)`, where `covered` is where `unfold_backward` of ones is non-zero. (PyTorch returns
/// `unfold_backward(mutated_view)` alone, which zeroes those elements.) Windows that overlap
/// (`size > step`) are PyTorch's error in [`InverseMode::ViewOrScatterInverse`] (a mutation of
/// memory that aliases itself); in [`InverseMode::NeverView`] their values are summed, as
/// PyTorch does (so an element two windows share gets the sum of its two new values, not
/// what an eager in-place op on the overlapping view leaves). In [`InverseMode::AlwaysView`], `mutated_view` with `base`'s geometry.
pub fn unfold_inverse(
    base: &Tensor,
    mutated_view: &Tensor,
    mode: InverseMode,
    dimension: i64,
    size: i64,
    step: i64,
) -> Result<Tensor> {
    let _below = below();
    match mode {
        InverseMode::AlwaysView => as_strided_like_base(base, mutated_view),
        InverseMode::ViewOrScatterInverse if size > step => Err(crate::errors::unfold_overlap()),
        InverseMode::ViewOrScatterInverse | InverseMode::NeverView => {
            let sizes = base.sizes();
            let folded = op::unfold_backward::call(mutated_view, &sizes, dimension, size, step)?;
            let ones = op::ones_like::call(mutated_view, None, None, None, None, None)?;
            let count = op::unfold_backward::call(&ones, &sizes, dimension, size, step)?;
            let covered = op::ne_Scalar::call(&count, Scalar::Int(0))?;
            op::where_self::call(&covered, &folded, base)
        }
    }
}
