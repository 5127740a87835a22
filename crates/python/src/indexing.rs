//! `tensor[index]` and `tensor[index] = value` (docs/python-plan.md §4.3), as PyTorch's
//! `python_variable_indexing.cpp` and `at::indexing` (`TensorIndexing.h`) compute them.
//!
//! A Python index becomes a list of [`TensorIndex`] (a tuple is taken item by item; a list is
//! taken as a tuple only when NumPy's old heuristic says so, `treatSequenceAsTuple`, else it is
//! one index tensor). Basic indices are applied one dimension at a time with view operators
//! (`select` for integers, `slice`, `unsqueeze` for `None` and booleans), so the result of
//! basic indexing is a view sharing storage; tensor indices (integer or boolean tensors,
//! lists) are collected by dimension and applied at the end by one `index.Tensor` call, or
//! `index_put_` for an assignment. Basic assignment copies into the view (`copy_`, `fill_` for
//! a 0-dim value, broadcasting as `at::indexing::copy_to` does).
//!
//! The logic over [`TensorIndex`] is plain Rust over the operator API, so it could move to
//! `switchyard-ops` for Rust users; it lives here for now because changing that crate
//! rebuilds every kernel crate.

use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyEllipsis, PyInt, PyList, PySequence, PySlice, PyTuple};
use switchyard_call::data::tensor_from_data;
use switchyard_core::{Error, Result, Scalar, ScalarType, Tensor};
use switchyard_ops::op;

use crate::convert::{data_to_lit, type_name};
use crate::errors::OrRaise;
use crate::tensor::PyTensor;

/// One index of a multi-dimensional index (`at::indexing::TensorIndex`).
#[derive(Clone)]
pub enum TensorIndex {
    /// `None`: a new dimension of size 1.
    None,
    /// `...`: as many full slices as the other indices leave dimensions.
    Ellipsis,
    /// `True` / `False`: a new dimension, indexed by a one- or zero-element index.
    Bool(bool),
    /// An integer: `select`.
    Int(i64),
    /// A slice with Python's defaults filled in (`start`, `stop`, `step`).
    Slice(i64, i64, i64),
    /// An index tensor (integer or boolean).
    Tensor(Tensor),
}

/// How many dimensions of the indexed tensor the indices name (`count_specified_dimensions`).
fn count_specified(indices: &[TensorIndex]) -> i64 {
    indices
        .iter()
        .map(|i| match i {
            TensorIndex::Tensor(t) if matches!(t.dtype(), ScalarType::Byte | ScalarType::Bool) => {
                t.dim() as i64
            }
            TensorIndex::Tensor(_) | TensorIndex::Int(_) | TensorIndex::Slice(..) => 1,
            TensorIndex::None | TensorIndex::Ellipsis | TensorIndex::Bool(_) => 0,
        })
        .sum()
}

/// `self.select(dim, index)` with `applySelect`'s checks and messages (`real_dim` is the
/// index's position, which the message names).
fn apply_select(t: &Tensor, dim: i64, index: i64, real_dim: i64) -> Result<Tensor> {
    let sizes = t.sizes();
    if index == 0 && dim == 0 && sizes.is_empty() {
        return Err(Error::index(
            "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to convert a 0-dim tensor to a number",
        ));
    }
    let size = usize::try_from(dim)
        .ok()
        .and_then(|d| sizes.get(d).copied())
        .unwrap_or(0);
    // `size > -1 - index` rather than `size >= -index`, which overflows for i64::MIN.
    if !(size > -1 - index && size > index) {
        return Err(Error::index(format!(
            "index {index} is out of bounds for dimension {real_dim} with size {size}"
        )));
    }
    op::select_int::call(t, dim, index)
}

/// `self.slice(dim, start, stop, step)` (`applySlice`): a step must be positive, and a slice
/// covering the whole dimension returns `self` unless `always_slice`.
fn apply_slice(
    t: &Tensor,
    dim: i64,
    (start, stop, step): (i64, i64, i64),
    always_slice: bool,
) -> Result<Tensor> {
    if step <= 0 {
        return Err(Error::value("step must be greater than zero"));
    }
    if !always_slice
        && start == 0
        && step == 1
        && usize::try_from(dim)
            .ok()
            .and_then(|d| t.sizes().get(d).copied())
            == Some(stop)
    {
        return Ok(t.clone());
    }
    op::slice_Tensor::call(t, dim, Some(start), Some(stop), step)
}

/// The index tensor of a boolean index: `[0]` for `True`, empty for `False`.
fn bool_index(b: bool) -> Result<Tensor> {
    Tensor::from_vec(if b { vec![0i64] } else { Vec::new() }, &[i64::from(b)])
}

/// Records an index tensor (`recordTensorIndex`): the first goes to position `dim` (the
/// dimensions before it unindexed), later ones follow the entries recorded since (one
/// unindexed entry per slice or `None`, as many as an ellipsis spans). A mask covers as many
/// dimensions as it has.
fn record_tensor_index(index: Tensor, out: &mut Vec<Option<Tensor>>, dim: &mut i64) {
    let covers = if matches!(index.dtype(), ScalarType::Byte | ScalarType::Bool) {
        index.dim() as i64
    } else {
        1
    };
    if out.is_empty() {
        let at = usize::try_from(*dim).unwrap_or(0);
        out.resize(at, None);
    }
    out.push(Some(index));
    *dim += covers;
}

/// After the first index tensor, `n` unindexed dimensions follow in the recorded list.
fn skip_dims(out: &mut Vec<Option<Tensor>>, n: i64) {
    if !out.is_empty() {
        out.resize(out.len() + usize::try_from(n).unwrap_or(0), None);
    }
}

/// Applies the basic indices to `t` and collects the tensor indices into `out`
/// (`applySlicing`).
fn apply_slicing(
    t: &Tensor,
    indices: &[TensorIndex],
    out: &mut Vec<Option<Tensor>>,
) -> Result<Tensor> {
    let specified = count_specified(indices);
    let ndim = t.dim() as i64;
    if specified > ndim {
        return Err(Error::index(format!(
            "too many indices for tensor of dimension {ndim}"
        )));
    }
    let mut result = t.clone();
    let mut dim = 0i64;
    for (i, index) in indices.iter().enumerate() {
        let real_dim = i as i64;
        match index {
            TensorIndex::Int(v) => result = apply_select(&result, dim, *v, real_dim)?,
            TensorIndex::Slice(a, b, s) => {
                result = apply_slice(&result, dim, (*a, *b, *s), false)?;
                dim += 1;
                skip_dims(out, 1);
            }
            TensorIndex::Ellipsis => {
                dim += ndim - specified;
                skip_dims(out, ndim - specified);
            }
            TensorIndex::None => {
                result = op::unsqueeze::call(&result, dim)?;
                dim += 1;
                skip_dims(out, 1);
            }
            TensorIndex::Bool(b) => {
                result = op::unsqueeze::call(&result, dim)?;
                record_tensor_index(bool_index(*b)?, out, &mut dim);
            }
            TensorIndex::Tensor(index) => {
                let ty = index.dtype();
                if index.dim() == 0 && ty.is_integral(true) {
                    if matches!(ty, ScalarType::Byte | ScalarType::Bool) {
                        // A 0-dim mask: a new dimension kept or emptied.
                        let keep = match index.item_scalar()? {
                            Scalar::Bool(b) => b,
                            Scalar::Int(v) => v != 0,
                            Scalar::Float(f) => f != 0.0,
                        };
                        result = op::unsqueeze::call(&result, dim)?;
                        record_tensor_index(bool_index(keep)?, out, &mut dim);
                    } else {
                        let v = match index.item_scalar()? {
                            Scalar::Int(v) => v,
                            Scalar::Bool(b) => i64::from(b),
                            Scalar::Float(f) => f as i64,
                        };
                        result = apply_select(&result, dim, v, real_dim)?;
                    }
                } else {
                    record_tensor_index(index.clone(), out, &mut dim);
                }
            }
        }
    }
    Ok(result)
}

/// `t[indices]` (`at::indexing::get_item`). `single`: the index was one object that is not
/// wrapped into a tuple (an `int`, a slice, `None`, `...`, a `bool`), which PyTorch handles
/// without the tuple path's checks.
pub fn get_item(t: &Tensor, indices: &[TensorIndex], single: bool) -> Result<Tensor> {
    if let (true, [index]) = (single, indices) {
        match index {
            TensorIndex::Int(v) => return apply_select(t, 0, *v, 0),
            TensorIndex::Slice(a, b, s) => return apply_slice(t, 0, (*a, *b, *s), true),
            TensorIndex::None => return op::unsqueeze::call(t, 0),
            TensorIndex::Ellipsis => return op::alias::call(t),
            TensorIndex::Bool(b) => {
                let result = op::unsqueeze::call(t, 0)?;
                return op::index_Tensor::call(&result, &[Some(bool_index(*b)?)]);
            }
            TensorIndex::Tensor(_) => {}
        }
    }
    let mut out = Vec::new();
    let sliced = apply_slicing(t, indices, &mut out)?;
    if out.is_empty() {
        // `x[...]`, `x[()]`: a new view, never the tensor itself.
        if sliced.is_same(t) {
            return op::alias::call(&sliced);
        }
        return Ok(sliced);
    }
    op::index_Tensor::call(&sliced, &out)
}

/// `sizes` without its leading ones (`slicePrefix1sSize`).
fn strip_leading_ones(sizes: &[i64]) -> &[i64] {
    let first = sizes.iter().position(|&s| s != 1).unwrap_or(sizes.len());
    &sizes[first..]
}

/// Writes `src` into `dst` (`at::indexing::copy_to`): `copy_` when the shapes agree, `fill_`
/// from a 0-dim CPU value, else `src` without its leading ones broadcast to `dst`.
fn copy_to(dst: &Tensor, src: &Tensor) -> Result<()> {
    let (ds, ss) = (dst.sizes(), src.sizes());
    if ds == ss {
        op::copy_::call(dst, src, false)?;
        return Ok(());
    }
    if src.dim() == 0 && src.device() == switchyard_core::Device::CPU {
        op::fill__Tensor::call(dst, src)?;
        return Ok(());
    }
    let view = op::view::call(src, strip_leading_ones(&ss))?;
    let expanded = op::expand::call(&view, &ds, false)?;
    op::copy_::call(dst, &expanded, false)?;
    Ok(())
}

/// `t[indices] = value` (`at::indexing::set_item`); `single` as for [`get_item`].
pub fn set_item(t: &Tensor, indices: &[TensorIndex], value: &Tensor, single: bool) -> Result<()> {
    if let (true, [index]) = (single, indices) {
        match index {
            TensorIndex::Bool(false) => return Ok(()),
            TensorIndex::Ellipsis => return copy_to(t, value),
            TensorIndex::None | TensorIndex::Bool(true) => {
                return copy_to(&op::unsqueeze::call(t, 0)?, value);
            }
            TensorIndex::Int(v) => return copy_to(&apply_select(t, 0, *v, 0)?, value),
            TensorIndex::Slice(a, b, s) => {
                return copy_to(&apply_slice(t, 0, (*a, *b, *s), true)?, value);
            }
            TensorIndex::Tensor(_) => {}
        }
    }
    let mut out = Vec::new();
    let sliced = apply_slicing(t, indices, &mut out)?;
    if out.is_empty() {
        return copy_to(&sliced, value);
    }
    let vs = value.sizes();
    let stripped = strip_leading_ones(&vs);
    let values = if stripped.len() == vs.len() {
        value.clone()
    } else {
        op::view::call(value, stripped)?
    };
    op::index_put_::call(&sliced, &out, &values, false)?;
    Ok(())
}

// ---- Python objects to indices ----

fn invalid_index(obj: &Bound<'_, PyAny>) -> PyErr {
    PyIndexError::new_err(format!(
        "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices (got {})",
        type_name(obj)
    ))
}

/// A Python `int` (not `bool`) as an i64, with PyTorch's overflow error.
fn unpack_long(obj: &Bound<'_, PyAny>) -> PyResult<i64> {
    obj.extract::<i64>()
        .map_err(|_| PyValueError::new_err("Overflow when unpacking long long"))
}

/// A slice bound: `None` gives the default, an integer (or an object with `__index__`) is
/// clamped to the int64 range as CPython clamps slice indices.
fn slice_bound(obj: &Bound<'_, PyAny>, default: i64) -> PyResult<i64> {
    if obj.is_none() {
        return Ok(default);
    }
    let int = if obj.is_instance_of::<PyInt>() {
        obj.clone()
    } else if obj.hasattr("__index__")? {
        obj.call_method0("__index__")?
    } else {
        return Err(PyTypeError::new_err(
            "slice indices must be integers or None or have an __index__ method",
        ));
    };
    match int.extract::<i64>() {
        Ok(v) => Ok(v),
        // Beyond int64: the nearest end.
        Err(_) => Ok(if int.gt(0)? { i64::MAX } else { i64::MIN }),
    }
}

/// A Python slice as `(start, stop, step)` with PyTorch's defaults (`__PySlice_Unpack`).
fn unpack_slice(s: &Bound<'_, PySlice>) -> PyResult<(i64, i64, i64)> {
    let step = slice_bound(&s.getattr("step")?, 1)?;
    if step == 0 {
        return Err(PyValueError::new_err("slice step cannot be zero"));
    }
    let start = slice_bound(&s.getattr("start")?, if step < 0 { i64::MAX } else { 0 })?;
    let stop = slice_bound(
        &s.getattr("stop")?,
        if step < 0 { i64::MIN } else { i64::MAX },
    )?;
    Ok((start, stop, step))
}

/// Whether `obj` passes CPython's `PySequence_Check` as far as indexing cares (tuples, lists,
/// strings, and other registered sequences; never a tensor).
fn is_py_sequence(obj: &Bound<'_, PyAny>) -> bool {
    !obj.is_instance_of::<PyTensor>() && obj.cast::<PySequence>().is_ok()
}

/// Whether a non-tuple sequence index is taken as a tuple of indices
/// (`treatSequenceAsTuple`, NumPy's old heuristic, with PyTorch's deprecation warning).
fn treat_sequence_as_tuple(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    if obj.is_instance_of::<PyTuple>() {
        return Ok(true);
    }
    if !is_py_sequence(obj) {
        return Ok(false);
    }
    let Ok(n) = obj.len() else {
        return Ok(false);
    };
    if n >= 32 {
        return Ok(false);
    }
    for i in 0..n {
        let Ok(item) = obj.get_item(i) else {
            return Ok(false);
        };
        if item.is_instance_of::<PyTensor>()
            || is_py_sequence(&item)
            || item.is_instance_of::<PySlice>()
            || item.is_instance_of::<PyEllipsis>()
            || item.is_none()
        {
            crate::tensor_ops::warn(
                obj.py(),
                "Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be interpreted as tensor index, x[torch.tensor(seq)], which will result either in an error or a different result",
            )?;
            return Ok(true);
        }
    }
    Ok(false)
}

/// A list (or other sequence) index as an index tensor: int64, unless its values are bools
/// (`indexing_tensor_from_data`).
fn sequence_to_tensor(obj: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let py = obj.py();
    let lit = data_to_lit(obj)?;
    let inferred = tensor_from_data(&lit, None, switchyard_core::Device::CPU).or_raise(py)?;
    if matches!(inferred.dtype(), ScalarType::Bool | ScalarType::Byte) {
        return Ok(inferred);
    }
    tensor_from_data(&lit, Some(ScalarType::Long), switchyard_core::Device::CPU).or_raise(py)
}

/// One item of a tuple index.
fn index_of(obj: &Bound<'_, PyAny>) -> PyResult<TensorIndex> {
    if obj.is_instance_of::<PyInt>() && !obj.is_instance_of::<PyBool>() {
        return Ok(TensorIndex::Int(unpack_long(obj)?));
    }
    if let Ok(s) = obj.cast::<PySlice>() {
        let (a, b, c) = unpack_slice(s)?;
        return Ok(TensorIndex::Slice(a, b, c));
    }
    if obj.is_instance_of::<PyEllipsis>() {
        return Ok(TensorIndex::Ellipsis);
    }
    if obj.is_none() {
        return Ok(TensorIndex::None);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(TensorIndex::Bool(b.is_true()));
    }
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(TensorIndex::Tensor(t.get().t.clone()));
    }
    if is_py_sequence(obj) {
        return Ok(TensorIndex::Tensor(sequence_to_tensor(obj)?));
    }
    if obj.hasattr("__index__")? {
        let i = obj
            .call_method0("__index__")
            .map_err(|_| invalid_index(obj))?;
        return Ok(TensorIndex::Int(unpack_long(&i)?));
    }
    Err(invalid_index(obj))
}

/// A Python index (of `t[index]`) as the list of indices `at::indexing` takes, and whether
/// it is one of the single objects PyTorch handles before wrapping into a tuple.
pub fn indices_of(index: &Bound<'_, PyAny>) -> PyResult<(Vec<TensorIndex>, bool)> {
    let single = if index.is_none() {
        Some(TensorIndex::None)
    } else if index.is_instance_of::<PyEllipsis>() {
        Some(TensorIndex::Ellipsis)
    } else if let Ok(b) = index.cast::<PyBool>() {
        Some(TensorIndex::Bool(b.is_true()))
    } else if index.is_instance_of::<PyInt>() {
        Some(TensorIndex::Int(unpack_long(index)?))
    } else if let Ok(s) = index.cast::<PySlice>() {
        let (a, b, c) = unpack_slice(s)?;
        Some(TensorIndex::Slice(a, b, c))
    } else {
        None
    };
    if let Some(i) = single {
        return Ok((vec![i], true));
    }
    let indices = if treat_sequence_as_tuple(index)? {
        let items: Vec<Bound<'_, PyAny>> = if let Ok(t) = index.cast::<PyTuple>() {
            t.iter().collect()
        } else if let Ok(l) = index.cast::<PyList>() {
            l.iter().collect()
        } else {
            index.try_iter()?.collect::<PyResult<_>>()?
        };
        items.iter().map(index_of).collect::<PyResult<_>>()?
    } else {
        vec![index_of(index)?]
    };
    Ok((indices, false))
}

/// The value of `t[index] = value` as a tensor: a tensor as is, a Python number as a 0-dim
/// tensor of `t`'s dtype and device (`valueToTensor`).
pub fn value_of(t: &Tensor, value: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let py = value.py();
    if let Ok(v) = value.cast::<PyTensor>() {
        return Ok(v.get().t.clone());
    }
    let scalar = if let Ok(b) = value.cast::<PyBool>() {
        Scalar::Bool(b.is_true())
    } else if value.is_instance_of::<PyInt>() {
        Scalar::Int(
            value
                .extract::<i64>()
                .map_err(|_| PyValueError::new_err("Overflow when unpacking long long"))?,
        )
    } else if let Ok(f) = value.cast::<pyo3::types::PyFloat>() {
        Scalar::Float(f.value())
    } else {
        return Err(PyTypeError::new_err(format!(
            "can't assign a {} to a {}",
            type_name(value),
            switchyard_autograd::legacy_type_name(t.dtype(), t.device())
        )));
    };
    op::full::call(&[], scalar, Some(t.dtype()), None, Some(t.device()), None).or_raise(py)
}
